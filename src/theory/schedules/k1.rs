//! Thm K.1 (main text: Thm 6.5 = K.1 at T = phi^-2): unconstrained convex DP-SGD under
//! Assumptions 6.1 and 6.4 (sharpness outside a ball of radius D around w*, Eq. 6).
//!
//! - T >= phi^-2 (Thm K.1; Thm 6.5 takes T = phi^-2).
//! - tau = G psi^(-1/(2k)) (the choice in Eq. 87).
//! - eta = C / (T tau) psi^(-1/2) (before Eq. 95).
//! - OR(T) <= G { (D0^2/C + 2C) psi^((1 - 1/k)/2) + 16 phi^(1 - 1/k) D } (Eq. 95).
//! - With probability >= 3/4 over the data set (Markov on G_Z^k <= 4 G^k, before Eq. 88); 1 at
//!   k = inf. Exponent of phi: 1 - 1/k.

use super::{
    Schedule, TheoremId, TheoryParams, c_of, check_nonneg, g_of, k_of, markov_probability,
    missing_or, opt,
};
use crate::error::{Error, Result};
use crate::theory::bounds::{self, Term};
use crate::theory::phi::psi;

/// Thm K.1 (and 6.5).
#[derive(Debug, Clone)]
pub struct ThmK1 {
    id: TheoremId,
    k: f64,
    g: f64,
    c: f64,
    dist0: Option<f64>,
    d_sharp: Option<f64>,
}

impl ThmK1 {
    /// Validates the inputs of Thm `id` (K.1 or 6.5); absent D0 and D go to `missing`.
    pub(super) fn new(id: TheoremId, p: &TheoryParams, missing: &mut Vec<String>) -> Result<Self> {
        Ok(ThmK1 {
            id,
            k: k_of(p, id)?,
            g: g_of(p, id)?,
            c: c_of(p, id)?,
            dist0: opt("dist0", p.dist0, check_nonneg, missing)?,
            d_sharp: opt("D", p.d_sharp, check_nonneg, missing)?,
        })
    }
}

/// Thm K.1 needs T >= phi^-2 (up to rounding noise of 1e-12 relative).
pub(super) fn check_steps(steps_formula: f64, phi: f64) -> Result<()> {
    if steps_formula < bounds::main_text_steps(phi) * (1.0 - 1e-12) {
        return Err(Error::param(format!(
            "Thm K.1 needs T >= phi^-2 = {}, but T is {steps_formula}",
            bounds::main_text_steps(phi)
        )));
    }
    Ok(())
}

/// The assumption Thm K.1 adds to 6.1, stated as a note on every prescription.
pub(super) const ASSUMPTION_6_4: &str = "needs Assumption 6.4: f(w) - f(w*) > 16 phi^(1-1/k) G \
                                         ||w - w*|| whenever ||w - w*|| > D (Eq. 6)";

impl Schedule for ThmK1 {
    fn theorem(&self) -> TheoremId {
        self.id
    }
    /// Thm 6.5: T = phi^-2 (K.1 allows any T >= phi^-2).
    fn steps(&self, phi: f64) -> f64 {
        bounds::main_text_steps(phi)
    }
    /// tau = G psi^(-1/(2k)) (Eq. 87).
    fn clip_norm(&self, psi: f64) -> f64 {
        bounds::k1_tau(self.g, self.k, psi)
    }
    /// eta = C / (T tau) psi^(-1/2) (before Eq. 95).
    fn step_size(&self, steps: f64, psi: f64, tau: f64) -> f64 {
        bounds::eta_convex(self.c, steps, tau, psi)
    }
    /// Eq. (95), two terms.
    fn bound_terms(&self, steps: f64, phi: f64) -> std::result::Result<Vec<Term>, Vec<String>> {
        let mut missing = Vec::new();
        if self.dist0.is_none() {
            missing.push("dist0".to_string());
        }
        if self.d_sharp.is_none() {
            missing.push("D".to_string());
        }
        if !missing.is_empty() {
            return Err(missing);
        }
        missing_or(
            bounds::k1_risk_bound(
                self.g,
                self.k,
                self.dist0.expect("checked for None above"),
                self.c,
                self.d_sharp.expect("checked for None above"),
                psi(steps, phi),
                phi,
            ),
            missing,
        )
    }
    /// 3/4 (Markov on G_Z^k <= 4 G^k, before Eq. 88); 1 at k = inf.
    fn probability(&self) -> f64 {
        markov_probability(self.k, 0.75)
    }
    fn phi_exponent(&self) -> f64 {
        TheoremId::K1.phi_exponent(self.k)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{TheoremId, TheoryParams, prescribe, tests::rel};

    #[test]
    fn k1_hand_computed() {
        // k = 4, G = 2, C = 0.5, D0 = 1, D = 3, phi = 0.01, psi = 2e-4.
        // tau = 2 (2e-4)^(-1/8) = 5.7996428; eta = 0.5/(1e4 * 5.7996428 * 0.01414214) = 6.096124e-4
        // term1 = 2 (1/0.5 + 2*0.5) (2e-4)^(3/8) = 2 * 3 * 0.0410097 = 0.2460580;
        // term2 = 16 * 2 * 0.01^(3/4) * 3 = 3.0357866; total 3.2818446 = the T = 1/phi^2 form G{2^((1-1/k)/2)(D0^2/C + 2C) + 16 D} phi^(1-1/k).
        let p = TheoryParams {
            k: Some(4.0),
            g: Some(2.0),
            c: Some(0.5),
            dist0: Some(1.0),
            d_sharp: Some(3.0),
            ..Default::default()
        };
        let r = prescribe(TheoremId::K1, 0.01, &p).unwrap();
        assert!(rel(r.tau.unwrap(), 5.799642800220422) < 1e-12);
        assert!(rel(r.eta.unwrap(), 6.096123550571711e-4) < 1e-12);
        assert!(rel(r.terms[0].value, 0.2460580051497359) < 1e-12);
        assert!(rel(r.terms[1].value, 3.035786553761644) < 1e-12);
        assert!(rel(r.bound.unwrap(), 3.28184455891138) < 1e-12);
        assert_eq!(r.probability, 0.75);
        assert_eq!(r.phi_exponent, 0.75);
        // K.1 needs T >= phi^-2.
        let mut q = p.clone();
        q.steps = Some(100.0);
        assert!(
            prescribe(TheoremId::K1, 0.01, &q)
                .unwrap_err()
                .to_string()
                .contains("T >= phi^-2")
        );
    }
}
