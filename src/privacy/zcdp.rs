//! (eps, delta)-DP -> approximate zCDP, as used in the proof of Lemma L.2.

use super::validate::{check_delta, check_epsilon};
use crate::error::{Error, Result};

/// Lemma L.2 via Bun and Steinke (2016), Lemma 22 with xi_hat = 0 and
/// rho_hat = eps^2 / log(1/delta): (eps, delta)-DP implies (xi, rho)-zCDP with
/// xi = 5 rho_hat^(1/4) - rho_hat/4 and rho = rho_hat/4. The lemma needs rho_hat < 1, i.e.
/// delta < exp(-eps^2) (the constraint of Theorem 6.6). Returns (xi, rho).
pub fn approx_dp_to_zcdp(epsilon: f64, delta: f64) -> Result<(f64, f64)> {
    check_epsilon(epsilon)?;
    check_delta(delta)?;
    let rho_hat = epsilon * epsilon / (1.0 / delta).ln();
    if rho_hat >= 1.0 {
        return Err(Error::param(format!(
            "the (eps, delta) -> zCDP conversion needs delta < exp(-eps^2) = {:e}, but delta = {delta} (eps = {epsilon})",
            (-epsilon * epsilon).exp()
        )));
    }
    Ok((5.0 * rho_hat.powf(0.25) - rho_hat / 4.0, rho_hat / 4.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lemma_l2_values() {
        // eps = 1, delta = e^-4: rho_hat = 1/4, xi = 5 (1/4)^(1/4) - 1/16, rho = 1/16.
        let (xi, rho) = approx_dp_to_zcdp(1.0, (-4.0f64).exp()).unwrap();
        assert!((rho - 0.0625).abs() < 1e-15);
        assert!((xi - (5.0 * 0.25f64.powf(0.25) - 0.0625)).abs() < 1e-14);
        assert!(approx_dp_to_zcdp(2.0, 1e-1).is_err()); // delta > e^-4
    }
}
