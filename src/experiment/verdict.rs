//! The verdict of each series of a finished spec: slope fits, the bound checks (violations,
//! vacuity, the probability statement), and the stated notes. Rendering is in `report.rs`.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize, Serializer};

use super::fit::{self, Difference, Fit, JointBootstrap, Sample};
use super::notes::{self, RELAXED};
use super::probability::{Probability, probability_check};
use super::results::{CellResult, ReplicateResult};
use super::spec::{ClipRule, Spec, k_serde};
use super::theorem::{gradient_risk, schedule_theorem};
use crate::rng::{Purpose, derive_seed};

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
    /// The verdict.
    pub verdict: Verdict,
}

/// A heavy-tailed series against its bounded-data control over the smallest decade.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ControlComparison {
    /// The control's smallest-decade fit.
    pub fit: Option<Fit>,
    /// slope(series) - slope(control) with its paired interval.
    pub difference: Option<Difference>,
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

/// Whether an upper bound says anything in the smallest decade of phi.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Informative {
    /// bound / risk0 < 1 in every cell of the smallest decade (the largest ratio).
    Yes(f64),
    /// bound / risk0 >= 1 in some cell of the smallest decade (the largest ratio): not moving
    /// at all meets the bound there, so the bound supports no rate statement.
    Vacuous(f64),
    /// Some cell of the smallest decade has no bound (cells with one, cells).
    NoBound(usize, usize),
}

/// The rate read from the smallest decade's 95% interval against the predicted exponent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate {
    /// The interval contains the exponent.
    Attains,
    /// The interval lies above it.
    Faster,
    /// The interval lies below it.
    Slower,
}

impl Rate {
    /// The class of `f`'s interval against `predicted`.
    pub fn classify(f: &Fit, predicted: f64) -> Rate {
        if f.lo > predicted {
            Rate::Faster
        } else if f.hi < predicted {
            Rate::Slower
        } else {
            Rate::Attains
        }
    }
}

/// The lower bound's three-way tightness ([`lower_verdict`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tightness {
    /// The interval lies within `BAND` of 1 - 1/k.
    Tight,
    /// It contains 1 - 1/k (or misses it by less than `BAND`) but is wider than +-`BAND`.
    Consistent,
    /// It excludes 1 - 1/k by more than `BAND`.
    NotTight,
}

/// An ablation's outcome.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ablation {
    /// The smallest decade's slope interval lies below 0.25 (a bias floor).
    Floor,
    /// The risk still falls with phi (the smallest decade's slope).
    Falling(f64),
    /// No fit.
    NoFit,
}

/// The verdict on one series. `Display` gives the text of the table's "verdict" column (and of the
/// summary JSON); `verify` exits non-zero on [`Verdict::Violation`].
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Some cell's mean OR is above its mean explicit bound (the cells, named).
    Violation(Vec<String>),
    /// Upper bound: no fit, because some mean risk is not positive.
    NoFit,
    /// Upper bound, the bound holding in every cell: whether it is informative, and the rate
    /// only where it is.
    Upper {
        /// The bound against the do-nothing risk in the smallest decade.
        informative: Informative,
        /// The rate (None unless the bound is informative).
        rate: Option<Rate>,
        /// The do-nothing risk's own interval gives the same rate: not moving earns it too.
        do_nothing: bool,
    },
    /// Lower bound: tightness against 1 - 1/k and the constant c_hat with
    /// OR >= c_hat G phi^(1-1/k) in every cell.
    Lower {
        /// Tightness of the smallest decade's interval.
        tightness: Tightness,
        /// 1 - 1/k.
        predicted: f64,
        /// min over cells of OR / (G phi^(1-1/k)).
        c_hat: f64,
        /// The do-nothing risk's interval is as tight: not moving earns it too.
        do_nothing: bool,
    },
    /// Lower bound: no fit.
    LowerNoFit,
    /// Ablation (a clip norm outside the theorem).
    Ablation(Ablation),
}

impl Verdict {
    /// True for [`Verdict::Violation`].
    pub fn is_violation(&self) -> bool {
        matches!(self, Verdict::Violation(_))
    }
}

/// The suffix of a verdict that the do-nothing risk would earn too.
pub const DO_NOTHING: &str = "; a do-nothing algorithm earns the same";

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Violation(v) => write!(f, "VIOLATION: {}", v.join("; ")),
            Verdict::NoFit => f.write_str("no fit (risk not positive)"),
            Verdict::Upper {
                informative,
                rate,
                do_nothing,
            } => {
                match (informative, rate) {
                    (Informative::Yes(v), Some(r)) => {
                        let r = match r {
                            Rate::Attains => "attains the bound's rate",
                            Rate::Faster => "faster than the bound",
                            Rate::Slower => "slower than the bound (pre-asymptotic)",
                        };
                        write!(f, "{r}; bound informative (bound / risk0 <= {})", sig(*v))?;
                    }
                    (Informative::Yes(v), None) => {
                        write!(f, "bound informative (bound / risk0 <= {})", sig(*v))?;
                    }
                    (Informative::Vacuous(v), _) => write!(
                        f,
                        "no rate claim: bound vacuous (bound / risk0 up to {})",
                        sig(*v)
                    )?,
                    (Informative::NoBound(0, _), _) => {
                        f.write_str("no rate claim: no bound applies")?
                    }
                    (Informative::NoBound(a, b), _) => write!(
                        f,
                        "no rate claim: bound in {a} of {b} smallest-decade cells"
                    )?,
                }
                if *do_nothing {
                    f.write_str(DO_NOTHING)?;
                }
                Ok(())
            }
            Verdict::Lower {
                tightness,
                predicted,
                c_hat,
                do_nothing,
            } => {
                match tightness {
                    Tightness::Tight => f.write_str("tight")?,
                    Tightness::Consistent => write!(
                        f,
                        "consistent: CI contains {predicted:.3} (within {BAND}) but is wider than +-{BAND}"
                    )?,
                    Tightness::NotTight => write!(
                        f,
                        "not tight: CI excludes {predicted:.3} by more than {BAND}"
                    )?,
                }
                write!(f, " (OR >= {c_hat:.3e} G phi^(1-1/k))")?;
                if *do_nothing {
                    f.write_str(DO_NOTHING)?;
                }
                Ok(())
            }
            Verdict::LowerNoFit => f.write_str("no fit"),
            Verdict::Ablation(Ablation::Floor) => f.write_str("ablation: bias floor"),
            Verdict::Ablation(Ablation::Falling(slope)) => {
                write!(f, "ablation: still falling (slope {slope:.2})")
            }
            Verdict::Ablation(Ablation::NoFit) => f.write_str("ablation: no fit"),
        }
    }
}

impl Serialize for Verdict {
    /// As its text (the summary JSON's format).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
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

fn range(v: impl Iterator<Item = f64>) -> (f64, f64) {
    v.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    })
}

/// Analyzes the finished cells of `spec` (all cells must be present).
pub fn summarize(spec: &Spec, cells: &BTreeMap<usize, CellResult>) -> SpecSummary {
    let raw = &spec.raw;
    let series = (0..raw.series.len())
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

/// What series `s` checks: the lower bound, an ablation (a clip norm outside the theorem), or the
/// theorem's upper bound.
fn series_role(spec: &Spec, s: usize) -> Role {
    let raw = &spec.raw;
    if raw.theorem.is_lower_bound() {
        Role::Lower
    } else if matches!(raw.series[s].clip, ClipRule::Fixed(_))
        || (matches!(raw.series[s].clip, ClipRule::Quantile(_))
            && raw.theorem.full_version() != crate::theory::TheoremId::H1)
    {
        Role::Ablation
    } else {
        Role::Upper
    }
}

/// The cells' mean OR against their mean explicit bound.
struct BoundCheck {
    /// Upper-bound cells with OR > bound, named.
    violations: Vec<String>,
    /// max over cells of OR / bound.
    max_ratio: Option<f64>,
    /// min over cells of OR / bound.
    min_ratio: Option<f64>,
    /// Cells with a bound.
    with_bound: usize,
}

fn bound_check(spec: &Spec, s: usize, role: Role, cs: &[&CellResult]) -> BoundCheck {
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

/// Mean over replicates of an optional per-replicate value; None if any replicate lacks it.
pub(crate) fn cell_mean(
    c: &CellResult,
    f: impl Fn(&ReplicateResult) -> Option<f64>,
) -> Option<f64> {
    let v: Option<Vec<f64>> = c.replicates.iter().map(f).collect();
    v.filter(|v| !v.is_empty()).map(|v| fit::mean(&v))
}

/// Whether the bound is informative over the smallest decade's cells `dec`: the largest mean
/// bound / mean do-nothing risk, when every one of them has a bound.
fn informative(cs: &[&CellResult], dec: &[usize]) -> Informative {
    let ratios: Vec<f64> = dec
        .iter()
        .filter_map(|&i| Some(cell_mean(cs[i], |r| r.bound)? / cell_mean(cs[i], |r| r.risk0)?))
        .collect();
    if ratios.len() < dec.len() {
        return Informative::NoBound(ratios.len(), dec.len());
    }
    let worst = ratios.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if worst < 1.0 {
        Informative::Yes(worst)
    } else {
        Informative::Vacuous(worst)
    }
}

/// (phi, mean lambda_min S) of the cells where a Hessian exists.
fn lambda_s_by_phi(cs: &[&CellResult]) -> Vec<(f64, f64)> {
    cs.iter()
        .filter_map(|c| Some((c.phi, cell_mean(c, |r| r.lambda_s)?)))
        .collect()
}

/// The upper-bound verdict: informative or not over the smallest decade, and only where it is,
/// the rate from the decade's interval (no tolerance). `do_nothing` is the same fit of the
/// do-nothing risk: when its interval gives the same rate, the verdict says so.
pub fn upper_verdict(
    decade: &Option<Fit>,
    predicted: f64,
    informative: Informative,
    do_nothing: &Option<Fit>,
) -> Verdict {
    let Some(f) = decade else {
        return Verdict::NoFit;
    };
    let rate = matches!(informative, Informative::Yes(_)).then(|| Rate::classify(f, predicted));
    let do_nothing = rate.is_some()
        && do_nothing
            .as_ref()
            .is_some_and(|d| Some(Rate::classify(d, predicted)) == rate);
    Verdict::Upper {
        informative,
        rate,
        do_nothing,
    }
}

/// The lower-bound verdict: tightness of the smallest decade's fit, and the reported constant
/// c_hat with OR >= c_hat G phi^(1-1/k) in every cell.
fn lower_series_verdict(
    decade: &Option<Fit>,
    predicted: f64,
    k: f64,
    cs: &[&CellResult],
    do_nothing: &Option<Fit>,
) -> Verdict {
    let c_hat = cs
        .iter()
        .map(|c| {
            let g = c.replicates.first().map_or(f64::NAN, |r| r.g);
            fit::mean(&reps_of(c)) / (g * c.phi.powf(1.0 - 1.0 / k))
        })
        .fold(f64::INFINITY, f64::min);
    match decade {
        Some(f) => {
            let tightness = lower_verdict(f, predicted);
            Verdict::Lower {
                tightness,
                predicted,
                c_hat,
                do_nothing: do_nothing
                    .as_ref()
                    .is_some_and(|d| lower_verdict(d, predicted) == tightness),
            }
        }
        None => Verdict::LowerNoFit,
    }
}

/// The ablation verdict: a bias floor, or still falling.
fn ablation_verdict(decade: &Option<Fit>) -> Verdict {
    Verdict::Ablation(match decade {
        Some(f) if f.hi < 0.25 => Ablation::Floor,
        Some(f) => Ablation::Falling(f.slope),
        None => Ablation::NoFit,
    })
}

/// The cells of series `s`, in phi order of the grid, with their replicate risks and
/// do-nothing risks.
struct SeriesCells<'a> {
    cs: Vec<&'a CellResult>,
    phis: Vec<f64>,
    reps: Vec<Vec<f64>>,
    risk0: Vec<Vec<f64>>,
}

impl<'a> SeriesCells<'a> {
    fn new(cells: &'a BTreeMap<usize, CellResult>, s: usize) -> Self {
        let cs: Vec<&CellResult> = cells.values().filter(|c| c.series == s).collect();
        SeriesCells {
            phis: cs.iter().map(|c| c.phi).collect(),
            reps: cs.iter().map(|c| reps_of(c)).collect(),
            risk0: cs
                .iter()
                .map(|c| c.replicates.iter().filter_map(|r| r.risk0).collect())
                .collect(),
            cs,
        }
    }

    /// The smallest decade's cells of risks (or of do-nothing risks).
    fn decade(&self, dec: &[usize], risk0: bool) -> (Vec<f64>, Vec<Vec<f64>>) {
        let src = if risk0 { &self.risk0 } else { &self.reps };
        (
            dec.iter().map(|&i| self.phis[i]).collect(),
            dec.iter().map(|&i| src[i].clone()).collect(),
        )
    }
}

/// Fits, bound checks and verdict of series `s`.
fn summarize_series(spec: &Spec, s: usize, cells: &BTreeMap<usize, CellResult>) -> SeriesSummary {
    let raw = &spec.raw;
    let ser = &raw.series[s];
    let sc = SeriesCells::new(cells, s);
    let cs = &sc.cs;
    let role = series_role(spec, s);
    let predicted = raw.theorem.phi_exponent(ser.k);
    let seed = derive_seed(raw.seed, s as u64, Purpose::Other(0xf17));
    let sweep = fit::fit(&sc.phis, &sc.reps, spec.bootstrap, seed);
    let dec = fit::smallest_decade(&sc.phis);
    // The decade's fits of this series, its do-nothing risk and its control, on one set of
    // resampled replicate indices (replicate r is one data set and one set of common random
    // numbers in all three).
    let (dphi, dreps) = sc.decade(&dec, false);
    let (_, d0) = sc.decade(&dec, true);
    let control = spec.control(s).map(|c| SeriesCells::new(cells, c));
    let cdec = control
        .as_ref()
        .map(|c| c.decade(&fit::smallest_decade(&c.phis), false));
    let mut samples = vec![
        Sample {
            phis: &dphi,
            reps: &dreps,
        },
        Sample {
            phis: &dphi,
            reps: &d0,
        },
    ];
    if let Some((p, r)) = &cdec {
        samples.push(Sample { phis: p, reps: r });
    }
    let joint = JointBootstrap::new(&samples, spec.bootstrap, seed ^ 1);
    let decade = joint.fits[0].clone();
    let do_nothing_fit = joint.fits[1].clone();
    let control = cdec.map(|_| ControlComparison {
        fit: joint.fits[2].clone(),
        difference: joint.difference(0, 2),
    });
    let check = bound_check(spec, s, role, cs);
    let informative = informative(cs, &dec);
    let decade_range = |f: &dyn Fn(&CellResult) -> Option<f64>| {
        let v: Option<Vec<f64>> = dec.iter().map(|&i| f(cs[i])).collect();
        v.map(|v| range(v.into_iter()))
    };
    let do_nothing_ratio =
        decade_range(&|c| Some(fit::mean(&reps_of(c)) / cell_mean(c, |r| r.risk0)?));
    let clipped = decade_range(&|c| cell_mean(c, |r| r.clipped));
    let ls = lambda_s_by_phi(cs);
    let lambda_s_range =
        (ls.len() == cs.len() && !ls.is_empty()).then(|| range(ls.iter().map(|p| p.1)));
    let relax_phi = relax_phi(&ls);
    let probability = if role == Role::Upper {
        probability_check(spec, s, cs)
    } else {
        None
    };
    let verdict = match role {
        _ if !check.violations.is_empty() => Verdict::Violation(check.violations.clone()),
        Role::Upper => upper_verdict(&decade, predicted, informative, &do_nothing_fit),
        Role::Lower => lower_series_verdict(&decade, predicted, ser.k, cs, &do_nothing_fit),
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
        lambda_s_range,
        relax_phi,
        probability,
        verdict,
    }
}

/// Half-width of the lower bound's tightness band.
pub const BAND: f64 = 0.05;

/// The lower-bound verdict, three-way on the smallest decade's 95% interval against 1 - 1/k:
/// tight (within `BAND` of it), not tight (excludes it by more than `BAND`), consistent
/// (otherwise: contains it, or misses it by less than `BAND`, but is wider than +-`BAND`).
pub fn lower_verdict(f: &Fit, predicted: f64) -> Tightness {
    if f.lo >= predicted - BAND && f.hi <= predicted + BAND {
        Tightness::Tight
    } else if f.hi < predicted - BAND || f.lo > predicted + BAND {
        Tightness::NotTight
    } else {
        Tightness::Consistent
    }
}

/// The phi at which lambda_min S would reach `RELAXED`, extrapolating the OLS power law of
/// lambda_min S in phi over `(phi, mean lambda_min S)`; None when it is reached already at the
/// smallest phi, or lambda_min S does not grow as phi shrinks.
pub fn relax_phi(ls: &[(f64, f64)]) -> Option<f64> {
    let pos: Vec<&(f64, f64)> = ls.iter().filter(|p| p.1 > 0.0).collect();
    let smallest = pos.iter().min_by(|a, b| a.0.total_cmp(&b.0))?;
    if smallest.1 >= RELAXED {
        return None;
    }
    let x: Vec<f64> = pos.iter().map(|p| p.0.ln()).collect();
    let y: Vec<f64> = pos.iter().map(|p| p.1.ln()).collect();
    let (b, a) = fit::ols(&x, &y)?;
    (b < 0.0).then(|| ((RELAXED.ln() - a) / b).exp())
}

/// Three significant digits: fixed between 0.01 and 1000, else scientific.
pub(crate) fn sig(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    if (0.01..1000.0).contains(&a) {
        let dec = (2 - a.log10().floor() as i32).max(0) as usize;
        format!("{v:.dec$}")
    } else {
        format!("{v:.2e}")
    }
}

pub(crate) fn reps_of(c: &CellResult) -> Vec<f64> {
    c.replicates.iter().map(|r| r.risk).collect()
}
#[cfg(test)]
mod tests {
    use super::*;

    fn summary_with(verdicts: &[Verdict]) -> SpecSummary {
        let series = verdicts
            .iter()
            .enumerate()
            .map(|(i, v)| SeriesSummary {
                label: format!("k = {i}"),
                k: 2.0,
                role: Role::Upper,
                predicted: 0.5,
                sweep: None,
                decade: None,
                do_nothing_fit: None,
                control: None,
                is_control: false,
                max_ratio: None,
                min_ratio: None,
                bound_cells: (0, 0),
                violations: Vec::new(),
                c_range: (1.0, 1.0),
                tau_range: (1.0, 1.0),
                vacuity: None,
                do_nothing_ratio: None,
                clipped: None,
                lambda_s_range: None,
                relax_phi: None,
                probability: None,
                verdict: v.clone(),
            })
            .collect();
        SpecSummary {
            spec: "s".into(),
            title: String::new(),
            theorem: "6.2".into(),
            schedule: "J.1".into(),
            scale: "quick".into(),
            risk: String::new(),
            series,
            notes: Vec::new(),
        }
    }

    fn f(lo: f64, hi: f64) -> Fit {
        Fit {
            slope: 0.5 * (lo + hi),
            intercept: 0.0,
            lo,
            hi,
            cells: 5,
            phi_range: (1e-3, 1e-2),
        }
    }

    #[test]
    fn violations_name_exactly_the_violating_series() {
        let fine = upper_verdict(&Some(f(0.4, 0.6)), 0.5, Informative::Yes(0.3), &None);
        let vac = upper_verdict(&Some(f(0.1, 0.2)), 0.5, Informative::Vacuous(3.0), &None);
        assert!(violations(&[summary_with(&[fine.clone(), vac])]).is_empty());
        let bad = violations(&[summary_with(&[
            fine,
            Verdict::Violation(vec!["cell 3".into()]),
        ])]);
        assert_eq!(bad, vec!["s k = 1".to_string()]);
    }

    /// The review's asymmetry: a steep slope under a vacuous bound was "rate consistent"
    /// (vacuity demoted only flat slopes). Ablation (b) was 0.50 [0.44, 0.55] against 0.5 with
    /// bound / risk0 = 44.8: no rate may be stated.
    #[test]
    fn a_steep_slope_under_a_vacuous_bound_states_no_rate() {
        let steep = Some(f(0.44, 0.55));
        for inf in [Informative::Vacuous(44.8), Informative::NoBound(2, 5)] {
            let v = upper_verdict(&steep, 0.5, inf, &None);
            let Verdict::Upper { rate, .. } = &v else {
                panic!("{v}")
            };
            assert_eq!(*rate, None, "{v}");
            assert!(v.to_string().starts_with("no rate claim"), "{v}");
        }
        // The same interval under an informative bound attains the rate.
        let v = upper_verdict(&steep, 0.5, Informative::Yes(0.4), &None);
        assert!(v.to_string().starts_with("attains the bound's rate"), "{v}");
    }

    /// Rates come from the interval, not a tolerance: J.1 sharp k = 1.5 was 0.11 [0.09, 0.13]
    /// against 0.2 and passed the old 0.1 tolerance.
    #[test]
    fn the_rate_is_read_from_the_interval() {
        let inf = Informative::Yes(0.5);
        let r = |lo, hi| match upper_verdict(&Some(f(lo, hi)), 0.2, inf, &None) {
            Verdict::Upper { rate, .. } => rate.unwrap(),
            v => panic!("{v}"),
        };
        assert_eq!(r(0.09, 0.13), Rate::Slower);
        assert_eq!(r(0.15, 0.25), Rate::Attains);
        assert_eq!(r(0.21, 0.3), Rate::Faster);
        assert_eq!(upper_verdict(&None, 0.2, inf, &None), Verdict::NoFit);
    }

    /// I.3's inheritance: when the risk of not moving has the same interval class, say so.
    #[test]
    fn a_verdict_the_do_nothing_risk_earns_says_so() {
        let inf = Informative::Yes(0.5);
        let v = upper_verdict(&Some(f(0.45, 0.55)), 0.5, inf, &Some(f(0.4, 0.6)));
        assert!(v.to_string().ends_with(DO_NOTHING), "{v}");
        let v = upper_verdict(&Some(f(0.45, 0.55)), 0.5, inf, &Some(f(0.0, 0.1)));
        assert!(!v.to_string().contains("do-nothing"), "{v}");
        let v = Verdict::Lower {
            tightness: Tightness::Tight,
            predicted: 0.5,
            c_hat: 0.3,
            do_nothing: true,
        };
        assert!(v.to_string().ends_with(DO_NOTHING), "{v}");
    }

    #[test]
    fn informative_needs_every_decade_cell_below_one() {
        let cell = |bound: Option<f64>, risk0: f64| CellResult {
            cell: 0,
            series: 0,
            k: 2.0,
            phi_index: 0,
            phi: 0.1,
            n: 10,
            epsilon: 1.0,
            steps: 10,
            replicates: vec![ReplicateResult {
                risk: 0.1,
                bound,
                c: 1.0,
                tau: 1.0,
                eta: 1.0,
                f_star: 0.0,
                g: 1.0,
                risk0: Some(risk0),
                lambda_s: None,
                clipped: None,
                noise_multiplier: None,
            }],
        };
        let (a, b, c) = (cell(Some(0.5), 1.0), cell(Some(2.0), 1.0), cell(None, 1.0));
        assert_eq!(informative(&[&a, &a], &[0, 1]), Informative::Yes(0.5));
        assert_eq!(informative(&[&a, &b], &[0, 1]), Informative::Vacuous(2.0));
        assert_eq!(informative(&[&a, &c], &[0, 1]), Informative::NoBound(1, 2));
    }

    #[test]
    fn lower_verdict_is_three_way() {
        // Issue 14: 1.00 [0.96, 1.05] against 1 was printed "not tight".
        assert_eq!(lower_verdict(&f(0.96, 1.05), 1.0), Tightness::Tight);
        assert_eq!(lower_verdict(&f(0.70, 0.745), 0.75), Tightness::Tight);
        assert_eq!(lower_verdict(&f(0.5, 0.9), 0.75), Tightness::Consistent);
        assert_eq!(lower_verdict(&f(0.5, 0.72), 0.75), Tightness::Consistent);
        assert_eq!(lower_verdict(&f(0.5, 0.69), 0.75), Tightness::NotTight);
        assert_eq!(lower_verdict(&f(0.81, 0.9), 0.75), Tightness::NotTight);
    }

    #[test]
    fn relax_phi_extrapolates_the_power_law() {
        // lambda S = 0.01 phi^-1: reaches 3 at phi = 1/300.
        let ls: Vec<(f64, f64)> = [0.1, 0.03, 0.01].iter().map(|&p| (p, 0.01 / p)).collect();
        let p = relax_phi(&ls).unwrap();
        assert!((p - 1.0 / 300.0).abs() < 1e-12);
        // Already relaxed at the smallest phi: nothing to extrapolate.
        let ls: Vec<(f64, f64)> = [0.1, 0.01].iter().map(|&p| (p, 0.1 / p)).collect();
        assert_eq!(relax_phi(&ls), None);
    }
}
