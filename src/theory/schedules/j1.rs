//! Thm J.1 (main text: Thm 6.2 = J.1 at T = phi^-2): unconstrained convex DP-SGD under
//! Assumption 6.1 (E[G_Z^k] <= G^k).
//!
//! - T = phi^-2 (Thm 6.2); J.1 holds for every T.
//! - tau = G gamma^(-1/k) psi^(-1/(k+1)) (the choice before Eq. 69).
//! - eta = C / (T tau) psi^(-1/2) (before Eq. 69).
//! - OR(T) <= G/gamma^(1/k) { (1/2)(D0^2/C + 4C) psi^((1 - 2/(k+1))/2)
//!   + (D0 + C) psi^(1 - 2/(k+1)) } (Eq. 70).
//! - With probability >= 1 - gamma over the data set (Markov on G_Z^k, before Eq. 70); 1 at
//!   k = inf. Exponent of phi: 1 - 2/(k+1).

use super::{
    Schedule, TheoremId, TheoryParams, c_of, check_nonneg, g_of, gamma_of, k_of,
    markov_probability, opt,
};
use crate::error::Result;
use crate::theory::bounds::{self, Term};
use crate::theory::phi::psi;

/// Thm J.1 (and 6.2).
#[derive(Debug, Clone)]
pub struct ThmJ1 {
    id: TheoremId,
    k: f64,
    g: f64,
    gamma: f64,
    c: f64,
    dist0: Option<f64>,
}

impl ThmJ1 {
    /// Validates the inputs of Thm `id` (J.1 or 6.2); an absent D0 goes to `missing`.
    pub(super) fn new(id: TheoremId, p: &TheoryParams, missing: &mut Vec<String>) -> Result<Self> {
        Ok(ThmJ1 {
            id,
            k: k_of(p, id)?,
            g: g_of(p, id)?,
            gamma: gamma_of(p, id)?,
            c: c_of(p, id)?,
            dist0: opt("dist0", p.dist0, check_nonneg, missing)?,
        })
    }
}

impl Schedule for ThmJ1 {
    fn theorem(&self) -> TheoremId {
        self.id
    }
    /// Thm 6.2: T = phi^-2.
    fn steps(&self, phi: f64) -> f64 {
        bounds::main_text_steps(phi)
    }
    /// tau = G gamma^(-1/k) psi^(-1/(k+1)) (before Eq. 69).
    fn clip_norm(&self, psi: f64) -> f64 {
        bounds::j1_tau(self.g, self.gamma, self.k, psi)
    }
    /// eta = C / (T tau) psi^(-1/2) (before Eq. 69).
    fn step_size(&self, steps: f64, psi: f64, tau: f64) -> f64 {
        bounds::eta_convex(self.c, steps, tau, psi)
    }
    /// Eq. (70), two terms.
    fn bound_terms(&self, steps: f64, phi: f64) -> std::result::Result<Vec<Term>, Vec<String>> {
        match self.dist0 {
            Some(d0) => Ok(bounds::j1_risk_bound(
                self.g,
                self.gamma,
                self.k,
                d0,
                self.c,
                psi(steps, phi),
            )),
            None => Err(vec!["dist0".into()]),
        }
    }
    /// 1 - gamma (Markov, before Eq. 70); 1 at k = inf.
    fn probability(&self) -> f64 {
        markov_probability(self.k, 1.0 - self.gamma)
    }
    fn phi_exponent(&self) -> f64 {
        TheoremId::J1.phi_exponent(self.k)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{TheoremId, prescribe, tests::base, tests::rel};

    #[test]
    fn j1_hand_computed() {
        // phi = 0.01, T = phi^-2 = 10000, psi = 1e-4 + 1e-4 = 2e-4.
        // tau = G gamma^(-1/3) psi^(-1/4) = 1.259921050 * 8.408964153 = 10.59463094.
        // eta = C / (T tau sqrt(psi)) = 1 / (1e4 * 10.59463094 * 0.0141421356) = 6.674199e-4.
        // bound: G/gamma^(1/3) = 1.259921; e = 1 - 2/4 = 1/2;
        //   term1 = 1.259921 * 0.5 * (1 + 4) * (2e-4)^(1/4) = 1.259921 * 2.5 * 0.1189207 = 0.3745768
        //   term2 = 1.259921 * (1 + 1) * (2e-4)^(1/2) = 1.259921 * 2 * 0.01414214 = 0.0356359
        //   total = 0.4102127; the T = 1/phi^2 form of Thm J.1 gives the same number.
        let p = prescribe(TheoremId::J1, 0.01, &base()).unwrap();
        assert_eq!(p.steps, Some(10_000));
        assert!(rel(p.psi.unwrap(), 2e-4) < 1e-12);
        assert!(rel(p.tau.unwrap(), 10.594630943592952) < 1e-12);
        assert!(rel(p.eta.unwrap(), 6.674199270850172e-4) < 1e-12);
        assert!(rel(p.terms[0].value, 0.3745767692191703) < 1e-12);
        assert!(rel(p.terms[1].value, 0.03563594872561357) < 1e-12);
        assert!(rel(p.bound.unwrap(), 0.41021271794478387) < 1e-12);
        assert_eq!(p.probability, 0.5);
        assert!(rel(p.phi_exponent, 0.5) < 1e-15);
        // Thm 6.2 is J.1 at T = phi^-2; the main-text form 2^(-1/2-1/(k+1)) ... agrees.
        let k = 3.0f64;
        let e = 1.0 - 2.0 / (k + 1.0);
        let s = 0.5f64.powf(-1.0 / k);
        let main = s
            * ((1.0 + 4.0) / 2f64.powf(0.5 + 1.0 / (k + 1.0)) * 0.01f64.powf(e)
                + 2f64.powf(e) * 2.0 * 0.01f64.powf(2.0 * e));
        let p62 = prescribe(TheoremId::T6_2, 0.01, &base()).unwrap();
        assert!(rel(p62.bound.unwrap(), main) < 1e-12);
    }

    #[test]
    fn j1_without_dist0_has_a_schedule_but_no_bound() {
        let mut p = base();
        p.dist0 = None;
        let r = prescribe(TheoremId::J1, 0.01, &p).unwrap();
        assert!(r.bound.is_none() && r.tau.is_some());
        assert_eq!(r.missing, vec!["dist0".to_string()]);
    }
}
