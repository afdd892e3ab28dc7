//! The bound axis: which bound a series checks, and each cell's mean OR against its mean
//! explicit bound.

use serde::{Deserialize, Serialize};

use super::super::fit;
use super::super::results::CellResult;
use super::super::spec::{ClipRule, Spec};
use super::cells::reps_of;

/// What a series checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// An upper-bound theorem's schedule and bound.
    Upper,
    /// The lower-bound instance (the slope should equal the exponent).
    Lower,
    /// A clip norm outside the theorem (no bound applies).
    Ablation,
}

/// What series `s` checks: the lower bound, an ablation (a clip norm outside the theorem), or the
/// theorem's upper bound.
pub(super) fn series_role(spec: &Spec, s: usize) -> Role {
    let raw = &spec.raw;
    if raw.theorem.is_lower_bound() {
        Role::Lower
    } else if matches!(spec.series[s].clip, ClipRule::Fixed(_))
        || (matches!(spec.series[s].clip, ClipRule::Quantile(_))
            && raw.theorem.full_version() != crate::theory::TheoremId::H1)
    {
        Role::Ablation
    } else {
        Role::Upper
    }
}

/// The cells' mean OR against their mean explicit bound.
pub(super) struct BoundCheck {
    /// Upper-bound cells with OR > bound, named.
    pub(super) violations: Vec<String>,
    /// max over cells of OR / bound.
    pub(super) max_ratio: Option<f64>,
    /// min over cells of OR / bound.
    pub(super) min_ratio: Option<f64>,
    /// Cells with a bound.
    pub(super) with_bound: usize,
}

pub(super) fn bound_check(spec: &Spec, s: usize, role: Role, cs: &[&CellResult]) -> BoundCheck {
    let mut check = BoundCheck {
        violations: Vec::new(),
        max_ratio: None,
        min_ratio: None,
        with_bound: 0,
    };
    for c in cs {
        let b: Option<Vec<f64>> = c.replicates.iter().map(|r| r.bound).collect();
        let Some(b) = b else { continue };
        check.with_bound += 1;
        let (or, bd) = (fit::mean(&reps_of(c)), fit::mean(&b));
        let ratio = or / bd;
        check.max_ratio = Some(check.max_ratio.map_or(ratio, |m: f64| m.max(ratio)));
        check.min_ratio = Some(check.min_ratio.map_or(ratio, |m: f64| m.min(ratio)));
        if role == Role::Upper && or > bd {
            check.violations.push(format!(
                "cell {} ({}, phi = {:.3e}): OR = {:.3e} > bound {:.3e}",
                c.cell,
                spec.label(s),
                c.phi,
                or,
                bd
            ));
        }
    }
    check
}
