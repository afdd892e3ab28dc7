//! Thm H.1 (main text: Thm 5.4 = H.1 at T = 1/(3 phi^2)): convex DP-SGD under Assumption 5.1
//! (finite per-sample Lipschitz constants G_1 <= ... <= G_n), any clip norm tau in (0, G_n].
//!
//! - T = 1/(3 phi^2) (Thm 5.4), so psi = 4 phi^2; H.1 holds for every T.
//! - tau: free in (0, G_n]; Remark 5.6 recommends tau <= G_1.
//! - eta = C / (T tau) psi^(-1/2) (the choice before Eq. 42).
//! - Clipping-weighted risk <= (D0^2/(2C) + C) tau sqrt(psi) (Eq. 43).
//! - OR(T) <= (1/alpha(tau)) (D0^2/(2C) + C) G_n sqrt(psi) + (G_n/(tau alpha(tau)) - 1) Delta(w*)
//!   (Eq. 48; at T = 1/(3 phi^2) this is Eq. (5) of Thm 5.4), with alpha(tau) of Definition 5.3
//!   and Delta(w*) of Definition 5.2.
//! - Holds in expectation over Algorithm 1 (probability 1 over the data set); exponent of phi: 1.

use super::{Schedule, TheoremId, TheoryParams, c_of, check_nonneg, need, opt, s_c};
use crate::error::{Error, Result, check_positive};
use crate::theory::bounds::{self, Term};
use crate::theory::phi::psi;

/// Thm H.1 (and 5.4).
#[derive(Debug, Clone)]
pub struct ThmH1 {
    id: TheoremId,
    c: f64,
    tau: f64,
    dist0: Option<f64>,
    g_n: Option<f64>,
    alpha: Option<f64>,
    delta_star: Option<f64>,
}

impl ThmH1 {
    /// Validates the inputs of Thm `id` (H.1 or 5.4); absent problem constants go to `missing`.
    pub(super) fn new(id: TheoremId, p: &TheoryParams, missing: &mut Vec<String>) -> Result<Self> {
        let tau = check_positive("tau", need("tau", p.tau, id)?)?;
        let g_n = opt("G_n", p.g_n, check_positive, missing)?;
        if let Some(gn) = g_n
            && tau > gn
        {
            return Err(Error::param(format!(
                "Thm {id} needs tau in (0, G_n] = (0, {gn}], but tau is {tau}"
            )));
        }
        let alpha = p.alpha;
        if let Some(a) = alpha
            && !(a >= 1.0 && a.is_finite())
        {
            return Err(Error::param(format!(
                "alpha(tau) is >= 1 by Definition 5.3 (i), but alpha is {a}"
            )));
        }
        Ok(ThmH1 {
            id,
            c: c_of(p, id)?,
            tau,
            dist0: opt("dist0", p.dist0, check_nonneg, missing)?,
            g_n,
            alpha,
            delta_star: opt("Delta", p.delta_star, check_nonneg, missing)?,
        })
    }
}

impl Schedule for ThmH1 {
    fn theorem(&self) -> TheoremId {
        self.id
    }
    /// Thm 5.4: T = 1/(3 phi^2).
    fn steps(&self, phi: f64) -> f64 {
        bounds::thm54_steps(phi)
    }
    /// Thm H.1 holds for any tau in (0, G_n]; Remark 5.6 recommends tau <= G_1.
    fn clip_norm(&self, _psi: f64) -> f64 {
        self.tau
    }
    /// eta = C / (T tau) psi^(-1/2) (before Eq. 42).
    fn step_size(&self, steps: f64, psi: f64, tau: f64) -> f64 {
        bounds::eta_convex(self.c, steps, tau, psi)
    }
    /// Eq. (48): terms (A) and (B).
    fn bound_terms(&self, steps: f64, phi: f64) -> std::result::Result<Vec<Term>, Vec<String>> {
        let ps = psi(steps, phi);
        let mut missing = Vec::new();
        for (n, v) in [
            ("dist0", self.dist0),
            ("G_n", self.g_n),
            ("alpha", self.alpha),
            ("Delta", self.delta_star),
        ] {
            if v.is_none() {
                missing.push(n.to_string());
            }
        }
        if !missing.is_empty() {
            return Err(missing);
        }
        Ok(bounds::h1_risk_bound(
            self.dist0.expect("checked for None above"),
            self.c,
            self.g_n.expect("checked for None above"),
            ps,
            self.alpha.expect("checked for None above"),
            self.tau,
            self.delta_star.expect("checked for None above"),
        ))
    }
    /// In expectation over Algorithm 1; no event over the data set.
    fn probability(&self) -> f64 {
        1.0
    }
    fn phi_exponent(&self) -> f64 {
        1.0
    }
}

/// The notes only Thm H.1 carries: k plays no role, alpha is estimated from above, and the
/// clipping-weighted risk bound of Eq. (43) at this schedule's tau and psi.
pub(super) fn notes(p: &TheoryParams, tau: f64, ps: f64) -> Vec<String> {
    vec![
        "Thm H.1 assumes Assumption 5.1 (finite G_1 < ... < G_n), so k plays no role (shown as inf)"
            .to_string(),
        "alpha(tau) from theory::estimate_alpha is an upper estimate of the infimum; a \
         bound evaluated with it can be smaller than the true bound"
            .to_string(),
        format!(
            "Thm H.1 (Eq. 43) also bounds the clipping-weighted risk by (D0^2/(2C) + C) tau \
             sqrt(psi){}",
            p.dist0
                .map(|d0| format!(
                    " = {:.6e}",
                    bounds::h1_weighted_risk_bound(d0, s_c(p), tau, ps)
                ))
                .unwrap_or_default()
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::{TheoremId, TheoryParams, prescribe, tests::rel};
    use crate::theory::bounds;
    use crate::theory::phi::psi;

    #[test]
    fn h1_and_thm54_hand_computed() {
        // phi = 0.01: T = 1/(3 phi^2) = 3333.33 -> 3334; psi = 1/3334 + 1e-4 = 3.99940012e-4.
        // tau = 0.5, C = 1, D0 = 2, G_n = 2, alpha = 1.5, Delta = 0.1.
        // (A) = (4/2 + 1) * 2 * sqrt(psi) / 1.5 = 4 * 0.0199985 = 0.0799940
        // (B) = (2/(0.5*1.5) - 1) * 0.1 = (8/3 - 1) * 0.1 = 0.1666667
        // eta = 1 / (3334 * 0.5 * sqrt(psi)) = 0.0299963 (Thm 5.4's 3 C phi / (2 tau) = 0.03 at
        // the unrounded T).
        let p = TheoryParams {
            c: Some(1.0),
            tau: Some(0.5),
            dist0: Some(2.0),
            g_n: Some(2.0),
            alpha: Some(1.5),
            delta_star: Some(0.1),
            ..Default::default()
        };
        let r = prescribe(TheoremId::T5_4, 0.01, &p).unwrap();
        assert_eq!(r.steps, Some(3334));
        assert!(rel(r.steps_formula.unwrap(), 3333.333333333333) < 1e-12);
        assert!(rel(r.terms[0].value, 0.07999400097483315) < 1e-12);
        assert!(rel(r.terms[1].value, 1.0 / 6.0) < 1e-12);
        assert!(rel(r.eta.unwrap(), 0.02999625055303478) < 1e-12);
        assert_eq!(r.phi_exponent, 1.0);
        // At the unrounded T the bound is Eq. (5): (D0^2/C + 2C) G_n phi / alpha + (B).
        let ps = psi(bounds::thm54_steps(0.01), 0.01);
        let eq5 = bounds::total(&bounds::h1_risk_bound(2.0, 1.0, 2.0, ps, 1.5, 0.5, 0.1));
        assert!(rel(eq5, (4.0 + 2.0) * 2.0 * 0.01 / 1.5 + 1.0 / 6.0) < 1e-12);
        assert!(
            rel(
                bounds::eta_convex(1.0, bounds::thm54_steps(0.01), 0.5, ps),
                0.03
            ) < 1e-12
        );
    }
}
