//! The privacy-utility scale phi of Eq. (1) and its inverses.
//!
//! Every bound in the paper is a power of phi (or of psi = 1/T + phi^2, the quantity the full
//! Appendix versions are written in), so phi is the one number that turns (n, d, epsilon, delta,
//! nu) into a prediction.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, check_open, check_positive};

/// The inputs of Eq. (1). `nu` is the absolute constant of the moments accountant
/// (Thm 3.4); the paper gives no value for it, so it is always an explicit input.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhiInputs {
    /// Number of samples n (>= 1).
    pub n: f64,
    /// Parameter dimension d (>= 1).
    pub d: f64,
    /// Privacy parameter epsilon > 0.
    pub epsilon: f64,
    /// Privacy parameter delta in (0, 1).
    pub delta: f64,
    /// The absolute constant nu of Thm 3.4 (> 0).
    pub nu: f64,
}

fn check_at_least_one(name: &str, x: f64) -> Result<f64> {
    if x.is_finite() && x >= 1.0 {
        Ok(x)
    } else {
        Err(Error::param(format!(
            "{name} must be a finite number >= 1, but is {x}"
        )))
    }
}

/// nu d log(1/delta), the numerator of Eq. (1) squared, after validating its inputs.
fn numerator_sq(d: f64, delta: f64, nu: f64) -> Result<f64> {
    check_at_least_one("d", d)?;
    check_open("delta", delta, 0.0, 1.0)?;
    check_positive("nu", nu)?;
    Ok(nu * d * (1.0 / delta).ln())
}

/// Eq. (1): phi = sqrt(nu d log(1/delta)) / (n epsilon).
///
/// Returns any positive value; whether phi < 1 (which every theorem assumes) is checked by
/// the theorem that consumes it.
pub fn phi(p: &PhiInputs) -> Result<f64> {
    let num = numerator_sq(p.d, p.delta, p.nu)?;
    check_at_least_one("n", p.n)?;
    check_positive("epsilon", p.epsilon)?;
    Ok(num.sqrt() / (p.n * p.epsilon))
}

/// Eq. (1) solved for n: the (real) number of samples that gives `target` phi,
/// n = sqrt(nu d log(1/delta)) / (phi epsilon). Round up to get an integer n with phi <= target.
pub fn n_for_phi(target: f64, d: f64, epsilon: f64, delta: f64, nu: f64) -> Result<f64> {
    let num = numerator_sq(d, delta, nu)?;
    check_positive("target phi", target)?;
    check_positive("epsilon", epsilon)?;
    Ok(num.sqrt() / (target * epsilon))
}

/// Eq. (1) solved for epsilon: epsilon = sqrt(nu d log(1/delta)) / (n phi).
pub fn epsilon_for_phi(target: f64, n: f64, d: f64, delta: f64, nu: f64) -> Result<f64> {
    let num = numerator_sq(d, delta, nu)?;
    check_positive("target phi", target)?;
    check_at_least_one("n", n)?;
    Ok(num.sqrt() / (n * target))
}

/// psi = 1/T + phi^2: the full Appendix versions (H.1, I.1, J.1, K.1, N.1) state their
/// schedules and bounds in it. It is the bracket of Eq. (40) divided by T, i.e. the per-step
/// second moment of the noisy gradient over 2 tau^2 T, which is why it, not phi, sets tau.
pub fn psi(steps: f64, phi: f64) -> f64 {
    1.0 / steps + phi * phi
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> PhiInputs {
        PhiInputs {
            n: 10_000.0,
            d: 10.0,
            epsilon: 2.0,
            delta: 1e-5,
            nu: 1.0,
        }
    }

    #[test]
    fn eq1_hand_value() {
        // nu d log(1/delta) = 10 * ln(1e5) = 10 * 11.512925464970229 = 115.12925464970229
        // sqrt = 10.729830131446736, / (n eps = 20000) = 5.364915065723368e-4
        let v = phi(&inputs()).unwrap();
        assert!((v - 5.364_915_065_723_368e-4).abs() < 1e-15, "{v}");
    }

    #[test]
    fn inverses_round_trip() {
        let p = inputs();
        let v = phi(&p).unwrap();
        let n = n_for_phi(v, p.d, p.epsilon, p.delta, p.nu).unwrap();
        assert!((n - p.n).abs() <= 1e-9 * p.n);
        let e = epsilon_for_phi(v, p.n, p.d, p.delta, p.nu).unwrap();
        assert!((e - p.epsilon).abs() <= 1e-12 * p.epsilon);
    }

    #[test]
    fn bad_inputs_are_errors_naming_the_value() {
        let mut p = inputs();
        p.delta = 1.5;
        let e = phi(&p).unwrap_err().to_string();
        assert!(e.contains("delta") && e.contains("1.5"), "{e}");
        p = inputs();
        p.epsilon = 0.0;
        assert!(phi(&p).unwrap_err().to_string().contains("epsilon"));
        p = inputs();
        p.n = 0.5;
        assert!(phi(&p).unwrap_err().to_string().contains("n must"));
    }
}
