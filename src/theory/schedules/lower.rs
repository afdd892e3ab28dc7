//! The lower bounds: Thm L.1 (main text: Thm 6.6), unconstrained convex under Assumption 6.4,
//! and Thm I.3, its constrained version on the unit ball (Appendix M).
//!
//! - For every (epsilon, delta)-DP algorithm A, on the hard instance of Appendix L (Eq. 97:
//!   x = p^(-1/k) v with probability p, G = 3 sqrt(d/2), Eq. 100):
//!   E[f(w_A)] - f(w*) >= c_L G phi^(1 - 1/k) (Eq. 130), needing delta < exp(-epsilon^2) and
//!   phi = o(1).
//! - The paper states the bound as Omega(.): c_L (`c_lower`) is that unstated absolute constant
//!   and is an input, never invented.
//! - No schedule (no T, tau, eta); the bound holds over the data set and the algorithm
//!   (probability 1). Exponent of phi: 1 - 1/k.

use super::{BoundKind, Prescription, TheoremId, TheoryParams, check_k, need, opt};
use crate::error::{Result, check_positive};
use crate::theory::bounds;

/// The prescription of lower-bound theorem `id` (6.6, L.1 or I.3) at `phi`: the bound of
/// Eq. (130) when G and c_lower are given, otherwise their names in `missing`.
pub(super) fn prescribe_lower(id: TheoremId, phi: f64, p: &TheoryParams) -> Result<Prescription> {
    let k = check_k(need("k", p.k, id)?)?;
    let mut missing = Vec::new();
    let g = opt("G", p.g, check_positive, &mut missing)?;
    let c_lower = opt("c_lower", p.c_lower, check_positive, &mut missing)?;
    let (bound, terms) = match (g, c_lower) {
        (Some(g), Some(c)) => {
            let t = bounds::lower_bound(c, g, k, phi);
            (Some(bounds::total(&t)), t)
        }
        _ => (None, Vec::new()),
    };
    let mut notes = vec![
        "lower bound for every (epsilon, delta)-DP algorithm on the hard instance of Appendix L \
         (Eq. 97; x = p^(-1/k) v with probability p, G = 3 sqrt(d/2)); needs delta < \
         exp(-epsilon^2) and phi = o(1)"
            .to_string(),
        "the paper states it as Omega(.): c_lower is that unstated absolute constant".to_string(),
    ];
    if id == TheoremId::I3 {
        notes.push(
            "Thm I.3: the same instance restricted to the unit ball ||w|| <= 1 (Appendix M)".into(),
        );
    }
    Ok(Prescription {
        theorem: id,
        full_version: id.full_version(),
        kind: BoundKind::Lower,
        risk: "E[f(w_A)] - f(w*) over the data set and the algorithm".to_string(),
        phi,
        k,
        steps_formula: None,
        steps: None,
        psi: None,
        tau: None,
        eta: None,
        bound,
        terms,
        missing,
        probability: 1.0,
        phi_exponent: id.phi_exponent(k),
        notes,
    })
}

/// Warnings for a lower bound whose hypotheses fail at these (n, d, epsilon, delta): Thm L.1
/// needs delta < exp(-epsilon^2) and the hard instance needs p = 2 sqrt(d log(1/delta))/(n eps)
/// < 1/2 (Eq. 96). Empty for upper bounds.
pub fn hypothesis_warnings(id: TheoremId, inp: &crate::theory::phi::PhiInputs) -> Vec<String> {
    let mut notes = Vec::new();
    if !id.is_lower_bound() {
        return notes;
    }
    if inp.delta >= (-inp.epsilon * inp.epsilon).exp() {
        notes.push(format!(
            "WARNING: delta = {} >= exp(-eps^2) = {}: the lower bound's hypothesis fails",
            inp.delta,
            (-inp.epsilon * inp.epsilon).exp()
        ));
    }
    let pp = 2.0 * (inp.d * (1.0 / inp.delta).ln()).sqrt() / (inp.n * inp.epsilon);
    if pp >= 0.5 {
        notes.push(format!(
            "WARNING: the hard instance needs p = 2 sqrt(d log(1/delta))/(n eps) < 1/2, but p = {pp}"
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::super::{BoundKind, TheoremId, TheoryParams, prescribe, tests::base, tests::rel};

    #[test]
    fn lower_bound_hand_computed() {
        // k = 3, G = 2, c_lower = 0.1, phi = 0.01: c_L G phi^(1 - 1/3) = 0.2 * 0.01^(2/3)
        // = 0.2 * 10^(-4/3) = 0.2 * 0.0464158883 = 9.28317767e-3 (Eq. 130). I.3 and 6.6 give
        // the same number.
        let p = TheoryParams {
            k: Some(3.0),
            g: Some(2.0),
            c_lower: Some(0.1),
            ..Default::default()
        };
        for id in [TheoremId::L1, TheoremId::T6_6, TheoremId::I3] {
            let r = prescribe(id, 0.01, &p).unwrap();
            assert_eq!(r.kind, BoundKind::Lower);
            assert!(rel(r.bound.unwrap(), 9.28317766722556e-3) < 1e-12, "{id}");
            assert_eq!(r.terms.len(), 1);
            assert!(r.steps.is_none() && r.tau.is_none() && r.eta.is_none());
            assert_eq!(r.probability, 1.0);
            assert!(rel(r.phi_exponent, 2.0 / 3.0) < 1e-15);
            assert_eq!(
                r.notes.iter().any(|n| n.contains("Appendix M")),
                id == TheoremId::I3
            );
        }
        // No k: the lower bound needs it (Assumption 6.1).
        let mut q = p.clone();
        q.k = None;
        assert!(prescribe(TheoremId::L1, 0.01, &q).is_err());
    }

    #[test]
    fn missing_problem_constants_leave_the_bound_absent() {
        let l = prescribe(TheoremId::L1, 0.01, &base()).unwrap();
        assert!(l.bound.is_none() && l.missing.contains(&"c_lower".to_string()));
    }
}
