//! A spec's summary: every series' fits, axes and verdict.

use std::collections::BTreeMap;

use serde::Serialize;

use super::super::fit::{self, Fit};
use super::super::notes;
use super::super::probability::{Probability, probability_check};
use super::super::results::CellResult;
use super::super::spec::{Spec, k_serde};
use super::super::theorem::{gradient_risk, schedule_theorem};
use super::bound::{bound_check, series_role};
use super::cells::{SeriesCells, cell_mean, range, reps_of};
use super::controls::{ControlComparison, DecadeFits, decade_fits};
use super::drivers::{lambda_s_by_phi, relax_phi};
use super::informative::{Informative, informative};
use super::outcome::{Verdict, ablation_verdict, lower_series_verdict, upper_verdict};
use super::spent::{Spent, spent};
use super::split::{BiasShare, Mechanism, TailTest, bias_share};
use crate::experiment::fit::Difference;
use crate::experiment::spec::TailMotion;
use crate::rng::{Purpose, derive_seed};

pub use super::bound::Role;

/// One series' outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesSummary {
    /// Legend label.
    pub label: String,
    /// k.
    #[serde(with = "k_serde")]
    pub k: f64,
    /// Role.
    pub role: Role,
    /// Predicted exponent of phi.
    pub predicted: f64,
    /// Fit over the whole sweep.
    pub sweep: Option<Fit>,
    /// Fit over the smallest decade of phi (paired bootstrap interval).
    pub decade: Option<Fit>,
    /// The same fit of the do-nothing risk (the risk at w0), resampled jointly with `decade`.
    #[serde(default)]
    pub do_nothing_fit: Option<Fit>,
    /// The bounded-data control of this series, when it has one.
    #[serde(default)]
    pub control: Option<ControlComparison>,
    /// True on a control series itself.
    #[serde(default)]
    pub is_control: bool,
    /// max over cells of mean OR / mean bound, and the number of cells with a bound.
    pub max_ratio: Option<f64>,
    /// min over cells of mean OR / mean bound (the lower bound's check: >= 1).
    pub min_ratio: Option<f64>,
    /// Cells with a bound / cells.
    pub bound_cells: (usize, usize),
    /// Cells where OR > bound, named.
    pub violations: Vec<String>,
    /// Range of C used.
    pub c_range: (f64, f64),
    /// Range of tau used.
    pub tau_range: (f64, f64),
    /// Largest ratio, over the smallest decade's cells, of the mean bound to the mean do-nothing
    /// risk (risk at w0): below 1 in every cell the bound is informative there.
    #[serde(default)]
    pub vacuity: Option<f64>,
    /// Range over the smallest decade's cells of mean OR / mean do-nothing risk.
    #[serde(default)]
    pub do_nothing_ratio: Option<(f64, f64)>,
    /// Range over the smallest decade's cells of the mean clipped fraction.
    #[serde(default)]
    pub clipped: Option<(f64, f64)>,
    /// Range over the smallest decade's cells of the mean clipped gradient mass
    /// (sum (||g_i|| - tau)_+ / sum ||g_i|| over the sampled per-sample gradients).
    #[serde(default)]
    pub clipped_mass: Option<(f64, f64)>,
    /// The bias share over the smallest decade ([`BiasShare`]: (risk - noise-only risk) / risk,
    /// the mean over the decade's cells, paired bootstrap interval).
    #[serde(default)]
    pub bias_share: Option<BiasShare>,
    /// slope(series) - slope(do-nothing risk) over the smallest decade, paired interval.
    #[serde(default)]
    pub do_nothing_difference: Option<Difference>,
    /// Range of lambda_min(Hessian at w*) S over the cells (S = T eta), where a Hessian exists.
    #[serde(default)]
    pub lambda_s_range: Option<(f64, f64)>,
    /// Where lambda_min S is below `RELAXED` at the smallest phi: the phi at which it would
    /// reach it, extrapolated along the sweep's power law of lambda_min S in phi.
    #[serde(default)]
    pub relax_phi: Option<f64>,
    /// The probability statement over the data set, at the smallest phi.
    #[serde(default)]
    pub probability: Option<Probability>,
    /// Lower bounds run with Thm 3.4's noise: the epsilon an accountant says the cells spend,
    /// against the nominal epsilon that Thm 6.6's (epsilon, delta) premise assumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epsilon_spent: Option<Spent>,
    /// The verdict.
    pub verdict: Verdict,
}

/// One spec's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpecSummary {
    /// Spec name.
    pub spec: String,
    /// Title.
    pub title: String,
    /// Theorem label.
    pub theorem: String,
    /// Theorem whose schedule ran.
    pub schedule: String,
    /// "quick" or "full".
    pub scale: String,
    /// What the risk is.
    pub risk: String,
    /// Series.
    pub series: Vec<SeriesSummary>,
    /// Constants and conventions, stated.
    pub notes: Vec<String>,
}

/// "spec label" of every series whose verdict is a VIOLATION (OR above the explicit bound);
/// `verify` exits non-zero when this is not empty, so scripts and CI can rely on its status.
pub fn violations(summaries: &[SpecSummary]) -> Vec<String> {
    summaries
        .iter()
        .flat_map(|s| {
            s.series
                .iter()
                .filter(|x| x.verdict.is_violation())
                .map(move |x| format!("{} {}", s.spec, x.label))
        })
        .collect()
}

/// Analyzes the finished cells of `spec` (all cells must be present).
pub fn summarize(spec: &Spec, cells: &BTreeMap<usize, CellResult>) -> SpecSummary {
    let raw = &spec.raw;
    let series = (0..spec.series.len())
        .map(|s| summarize_series(spec, s, cells))
        .collect();
    SpecSummary {
        spec: raw.name.clone(),
        title: raw
            .title
            .clone()
            .unwrap_or_else(|| format!("Thm {}", raw.theorem)),
        theorem: raw.theorem.label().to_string(),
        schedule: schedule_theorem(raw.theorem).label().to_string(),
        scale: format!("{:?}", spec.scale).to_lowercase(),
        risk: if gradient_risk(raw.theorem) {
            "E||grad f(w_priv)||^2".into()
        } else {
            "E f(w_priv) - f*".into()
        },
        series,
        notes: notes::notes(spec),
    }
}

/// Fits, bound checks and verdict of series `s`.
fn summarize_series(spec: &Spec, s: usize, cells: &BTreeMap<usize, CellResult>) -> SeriesSummary {
    let raw = &spec.raw;
    let ser = &spec.series[s];
    let sc = SeriesCells::new(cells, s);
    let cs = &sc.cs;
    let role = series_role(spec, s);
    let predicted = raw.theorem.phi_exponent(ser.k);
    let seed = derive_seed(raw.seed, s as u64, Purpose::Other(0xf17));
    let sweep = fit::fit(&sc.phis, &sc.reps, spec.bootstrap, seed);
    let dec = fit::smallest_decade(&sc.phis);
    let DecadeFits {
        decade,
        do_nothing: do_nothing_fit,
        do_nothing_diff,
        control,
    } = decade_fits(spec, s, cells, &sc, &dec, seed ^ 1);
    let dec_cells: Vec<&CellResult> = dec.iter().map(|&i| cs[i]).collect();
    let share = bias_share(&dec_cells, spec.bootstrap, seed ^ 2);
    let check = bound_check(spec, s, role, cs);
    let informative = informative(cs, &dec);
    let decade_range = |f: &dyn Fn(&CellResult) -> Option<f64>| {
        let v: Option<Vec<f64>> = dec.iter().map(|&i| f(cs[i])).collect();
        v.map(|v| range(v.into_iter()))
    };
    let do_nothing_ratio =
        decade_range(&|c| Some(fit::mean(&reps_of(c)) / cell_mean(c, |r| r.risk0)?));
    let clipped = decade_range(&|c| cell_mean(c, |r| r.clipped));
    let clipped_mass = decade_range(&|c| cell_mean(c, |r| r.clipped_mass));
    let ls = lambda_s_by_phi(cs);
    let lambda_s_range =
        (ls.len() == cs.len() && !ls.is_empty()).then(|| range(ls.iter().map(|p| p.1)));
    let relax_phi = relax_phi(&ls);
    let probability = if role == Role::Upper {
        probability_check(spec, s, cs)
    } else {
        None
    };
    // No accountant calibrated Thm 3.4's noise: say what it spends where a premise needs it.
    let epsilon_spent = if role == Role::Lower && raw.clip_sweep.is_none() {
        spent(cs, raw.batch_size, raw.privacy.nu, raw.privacy.delta)
            .ok()
            .flatten()
    } else {
        None
    };
    let verdict = match role {
        _ if !check.violations.is_empty() => Verdict::Violation(check.violations.clone()),
        Role::Upper => upper_verdict(
            &decade,
            predicted,
            informative,
            do_nothing_diff,
            Some(Mechanism {
                candidate: tail_test(spec, s),
                share,
            }),
        ),
        Role::Lower => lower_series_verdict(&decade, predicted, ser.k, cs, do_nothing_diff),
        Role::Ablation => ablation_verdict(&decade),
    };
    SeriesSummary {
        label: spec.label(s),
        k: ser.k,
        role,
        predicted,
        sweep,
        decade,
        do_nothing_fit,
        control,
        is_control: ser.control_of.is_some(),
        max_ratio: check.max_ratio,
        min_ratio: check.min_ratio,
        bound_cells: (check.with_bound, cs.len()),
        violations: check.violations,
        c_range: range(cs.iter().flat_map(|c| c.replicates.iter().map(|r| r.c))),
        tau_range: range(cs.iter().flat_map(|c| c.replicates.iter().map(|r| r.tau))),
        vacuity: match informative {
            Informative::Yes(v) | Informative::Vacuous(v) => Some(v),
            Informative::NoBound(..) => None,
        },
        do_nothing_ratio,
        clipped,
        clipped_mass,
        bias_share: share,
        do_nothing_difference: do_nothing_diff,
        lambda_s_range,
        relax_phi,
        probability,
        epsilon_spent,
        verdict,
    }
}

/// Whether series `s` can test the heavy-tail mechanism: k < inf, not a control, on a family
/// whose heavy part moves with phi ([`Spec::tail_motion`]).
pub(super) fn tail_test(spec: &Spec, s: usize) -> TailTest {
    let ser = &spec.series[s];
    if ser.k.is_infinite() || ser.control_of.is_some() {
        TailTest::NoTail
    } else if spec.tail_motion(s) == TailMotion::Fixed {
        TailTest::FixedTail
    } else {
        TailTest::Candidate
    }
}
