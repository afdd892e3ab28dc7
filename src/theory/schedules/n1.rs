//! Thm N.1 (main text: Thm 6.8 = N.1 at T = phi^-2): unconstrained L-smooth nonconvex DP-SGD
//! under Assumption 6.1; the risk is E||grad f(w_priv)||^2 (Definition 3.5 (ii)).
//!
//! With a = 1/(2k - 1):
//! - T = phi^-2 (Thm 6.8); N.1 holds for every T.
//! - tau = G (G/(gamma^2 C sqrt(L)))^a psi^(-a/2) (the choice before Eq. 145).
//! - eta = C / (T tau sqrt(L)) psi^(-1/2) (the choice before Eq. 144).
//! - E||grad f(w_priv)||^2 <= sqrt(L)^(1-a) G^(1+a) / (gamma^(2a) C^a) (3C + 2 (f(w0) - f*)/C)
//!   psi^((1-a)/2) (Eq. 146).
//! - With probability >= 1 - gamma over the data set (Markov, before Eq. 146); 1 at k = inf.
//!   Exponent of phi: 1 - a.

use super::{
    Schedule, TheoremId, TheoryParams, c_of, check_nonneg, g_of, gamma_of, k_of,
    markov_probability, need, opt,
};
use crate::error::{Result, check_positive};
use crate::theory::bounds::{self, Term};
use crate::theory::phi::psi;

/// Thm N.1 (and 6.8).
#[derive(Debug, Clone)]
pub struct ThmN1 {
    id: TheoremId,
    k: f64,
    g: f64,
    gamma: f64,
    c: f64,
    l: f64,
    f_gap: Option<f64>,
}

impl ThmN1 {
    /// Validates the inputs of Thm `id` (N.1 or 6.8); an absent f(w0) - f* goes to `missing`.
    pub(super) fn new(id: TheoremId, p: &TheoryParams, missing: &mut Vec<String>) -> Result<Self> {
        Ok(ThmN1 {
            id,
            k: k_of(p, id)?,
            g: g_of(p, id)?,
            gamma: gamma_of(p, id)?,
            c: c_of(p, id)?,
            l: check_positive("L", need("L", p.l, id)?)?,
            f_gap: opt("f_gap", p.f_gap, check_nonneg, missing)?,
        })
    }
}

impl Schedule for ThmN1 {
    fn theorem(&self) -> TheoremId {
        self.id
    }
    /// Thm 6.8: T = phi^-2.
    fn steps(&self, phi: f64) -> f64 {
        bounds::main_text_steps(phi)
    }
    /// tau = G (G/(gamma^2 C sqrt(L)))^a psi^(-a/2) (before Eq. 145).
    fn clip_norm(&self, psi: f64) -> f64 {
        bounds::n1_tau(self.g, self.gamma, self.c, self.l, self.k, psi)
    }
    /// eta = C / (T tau sqrt(L)) psi^(-1/2) (before Eq. 144).
    fn step_size(&self, steps: f64, psi: f64, tau: f64) -> f64 {
        bounds::n1_eta(self.c, steps, tau, self.l, psi)
    }
    /// Eq. (146).
    fn bound_terms(&self, steps: f64, phi: f64) -> std::result::Result<Vec<Term>, Vec<String>> {
        match self.f_gap {
            Some(fg) => Ok(bounds::n1_risk_bound(
                self.g,
                self.gamma,
                self.c,
                self.l,
                self.k,
                fg,
                psi(steps, phi),
            )),
            None => Err(vec!["f_gap".into()]),
        }
    }
    /// 1 - gamma (Markov, before Eq. 146); 1 at k = inf.
    fn probability(&self) -> f64 {
        markov_probability(self.k, 1.0 - self.gamma)
    }
    fn phi_exponent(&self) -> f64 {
        TheoremId::N1.phi_exponent(self.k)
    }
}

/// The risk Thm N.1 bounds.
pub(super) const RISK: &str = "E||grad f(w_priv)||^2 (Definition 3.5 (ii))";

#[cfg(test)]
mod tests {
    use super::super::{TheoremId, TheoryParams, prescribe, tests::rel};

    #[test]
    fn n1_hand_computed() {
        // k = 2 (a = 1/3), G = 1, gamma = 0.5, C = 1, L = 4, f(w0) - f* = 3, psi = 2e-4.
        // tau = (1/(0.25*1*2))^(1/3) (2e-4)^(-1/6) = 1.2599210 * 4.1352 = 5.2100073
        // eta = 1/(1e4 * 5.2100073 * 2 * 0.01414214) = 6.786044e-4
        // bound = 2^(2/3) * 1 / (0.5^(2/3)) * (3 + 6) * (2e-4)^(1/3) = 1.3262513
        let p = TheoryParams {
            k: Some(2.0),
            g: Some(1.0),
            gamma: Some(0.5),
            c: Some(1.0),
            l: Some(4.0),
            f_gap: Some(3.0),
            ..Default::default()
        };
        let r = prescribe(TheoremId::N1, 0.01, &p).unwrap();
        assert!(rel(r.tau.unwrap(), 5.210007309586913) < 1e-12);
        assert!(rel(r.eta.unwrap(), 6.786044041487266e-4) < 1e-12);
        assert!(rel(r.bound.unwrap(), 1.3262513395105386) < 1e-12);
        assert!(rel(r.phi_exponent, 2.0 / 3.0) < 1e-15);
    }
}
