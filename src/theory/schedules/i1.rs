//! Thm I.1: constrained convex DP-SGD over a set W of diameter D_W (projection onto W after
//! every step), under Assumption 6.1.
//!
//! - T = phi^-2 (Thm I.1, "if we set T = 1/phi^2"); the bound holds for every T.
//! - tau = G gamma^(-1/k) psi^(-1/(2k)) (the choice before Eq. 59).
//! - eta = D_W / (T tau) psi^(-1/2) (before Eq. 58).
//! - OR(T) <= 5 D_W G / (2 gamma^(1/k)) psi^((1 - 1/k)/2) (Eq. 60).
//! - With probability >= 1 - gamma over the data set (Markov on G_Z^k, before Eq. 60); 1 at
//!   k = inf. Exponent of phi: 1 - 1/k.

use super::{Schedule, TheoremId, TheoryParams, g_of, gamma_of, k_of, markov_probability, need};
use crate::error::{Result, check_positive};
use crate::theory::bounds::{self, Term};
use crate::theory::phi::psi;

/// Thm I.1.
#[derive(Debug, Clone)]
pub struct ThmI1 {
    k: f64,
    g: f64,
    gamma: f64,
    d_w: f64,
}

impl ThmI1 {
    /// Validates the inputs of Thm I.1.
    pub(super) fn new(id: TheoremId, p: &TheoryParams) -> Result<Self> {
        Ok(ThmI1 {
            k: k_of(p, id)?,
            g: g_of(p, id)?,
            gamma: gamma_of(p, id)?,
            d_w: check_positive("D_W", need("D_W", p.d_w, id)?)?,
        })
    }
}

impl Schedule for ThmI1 {
    fn theorem(&self) -> TheoremId {
        TheoremId::I1
    }
    /// Thm I.1, "if we set T = 1/phi^2".
    fn steps(&self, phi: f64) -> f64 {
        bounds::main_text_steps(phi)
    }
    /// tau = G gamma^(-1/k) psi^(-1/(2k)) (before Eq. 59).
    fn clip_norm(&self, psi: f64) -> f64 {
        bounds::i1_tau(self.g, self.gamma, self.k, psi)
    }
    /// Thm I.1: eta = D_W / (T tau) psi^(-1/2).
    fn step_size(&self, steps: f64, psi: f64, tau: f64) -> f64 {
        bounds::eta_convex(self.d_w, steps, tau, psi)
    }
    /// Eq. (60).
    fn bound_terms(&self, steps: f64, phi: f64) -> std::result::Result<Vec<Term>, Vec<String>> {
        Ok(bounds::i1_risk_bound(
            self.d_w,
            self.g,
            self.gamma,
            self.k,
            psi(steps, phi),
        ))
    }
    /// 1 - gamma (Markov on G_Z^k, before Eq. 60); 1 at k = inf, where G_Z <= G surely.
    fn probability(&self) -> f64 {
        markov_probability(self.k, 1.0 - self.gamma)
    }
    fn phi_exponent(&self) -> f64 {
        TheoremId::I1.phi_exponent(self.k)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{TheoremId, TheoryParams, prescribe, tests::rel};

    #[test]
    fn i1_hand_computed() {
        // k = 2, G = 1, gamma = 0.1, D_W = 2, phi = 0.01, T = 1e4, psi = 2e-4.
        // tau = 0.1^(-1/2) (2e-4)^(-1/4) = 3.16227766 * 8.40896415 = 26.5914795
        // bound = 5 * 2 / (2 * 0.1^(1/2)) * (2e-4)^(1/4) = 15.8113883 * 0.1189207 = 1.8803015,
        // equal to Thm I.1's T = 1/phi^2 form 5 D_W G / (2^((1+1/k)/2) gamma^(1/k)) phi^(1-1/k).
        let p = TheoryParams {
            k: Some(2.0),
            g: Some(1.0),
            gamma: Some(0.1),
            d_w: Some(2.0),
            ..Default::default()
        };
        let r = prescribe(TheoremId::I1, 0.01, &p).unwrap();
        assert!(rel(r.tau.unwrap(), 26.59147948472494) < 1e-12);
        assert!(rel(r.eta.unwrap(), 5.318295896944989e-4) < 1e-12);
        assert!(rel(r.bound.unwrap(), 1.880301546543197) < 1e-12);
        assert!(rel(r.bound.unwrap(), 1.8803015465431967) < 1e-12);
        assert!((r.probability - 0.9).abs() < 1e-15);
        assert_eq!(r.phi_exponent, 0.5);
    }
}
