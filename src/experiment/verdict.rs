//! The verdict of each series of a finished spec: slope fits, the bound checks (violations,
//! vacuity, the probability statement), and the stated notes. Rendering is in `report.rs`.

use std::collections::BTreeMap;
use std::fmt;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize, Serializer};

use super::fit::{self, Fit};
use super::notes::{self, RELAXED};
use super::probability::{Probability, probability_check};
use super::replicate::{gradient_risk, schedule_theorem};
use super::results::CellResult;
use super::spec::{ClipRule, Spec, k_serde};
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
    /// Fit over the smallest decade of phi.
    pub decade: Option<Fit>,
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
    /// Smallest ratio, over the smallest decade's cells with a bound, of the mean bound to the
    /// mean do-nothing risk (risk at w0): above 1 the bound is vacuous there.
    #[serde(default)]
    pub vacuity: Option<f64>,
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

/// The verdict on one series. `Display` gives the text of the table's "verdict" column (and of the
/// summary JSON); `verify` exits non-zero on [`Verdict::Violation`].
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Some cell's mean OR is above its mean explicit bound (the cells, named).
    Violation(Vec<String>),
    /// Upper bound: no fit, because some mean risk is not positive.
    NoFit,
    /// Upper bound: the smallest-decade slope is at least the predicted exponent minus the
    /// spec's slope tolerance.
    RateConsistent {
        /// False when no cell had a bound to check.
        bound_applies: bool,
    },
    /// Upper bound: slope below prediction, but the bound exceeds the risk at w0 in every cell of
    /// the smallest decade, so the scale cannot test the rate.
    Untestable {
        /// "bound / risk at w0 = ..." (the vacuity).
        vacuity: String,
        /// Range of lambda_min S over the cells, where a Hessian exists.
        lambda_s_range: Option<(f64, f64)>,
        /// The phi at which lambda_min S would reach `RELAXED`.
        relax_phi: Option<f64>,
    },
    /// Upper bound: slope below prediction at a scale where the bound is not vacuous.
    PreAsymptotic {
        /// The vacuity text; None when no cell had a bound.
        vacuity: Option<String>,
    },
    /// Lower bound: the three-way tightness ([`lower_verdict`]) and the constant c_hat with
    /// OR >= c_hat G phi^(1-1/k) in every cell.
    Lower {
        /// "tight", "consistent: ..." or "not tight: ...".
        tightness: String,
        /// min over cells of OR / (G phi^(1-1/k)).
        c_hat: f64,
    },
    /// Lower bound: no fit.
    LowerNoFit,
    /// Ablation: the smallest decade's slope interval lies below 0.25 (a bias floor).
    AblationFloor,
    /// Ablation: the risk still falls with phi.
    AblationFalling {
        /// The smallest decade's slope.
        slope: f64,
    },
    /// Ablation: no fit.
    AblationNoFit,
}

impl Verdict {
    /// True for [`Verdict::Violation`].
    pub fn is_violation(&self) -> bool {
        matches!(self, Verdict::Violation(_))
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Violation(v) => write!(f, "VIOLATION: {}", v.join("; ")),
            Verdict::NoFit => f.write_str("no fit (risk not positive)"),
            Verdict::RateConsistent {
                bound_applies: true,
            } => f.write_str("rate consistent"),
            Verdict::RateConsistent {
                bound_applies: false,
            } => f.write_str("rate consistent (no bound applies)"),
            Verdict::Untestable {
                vacuity,
                lambda_s_range,
                relax_phi,
            } => {
                let mut v = format!("untestable at this scale: bound vacuous ({vacuity})");
                if let Some((a, b)) = lambda_s_range {
                    let _ = write!(v, "; lambda_min S = {}..{}", sig(*a), sig(*b));
                }
                if let Some(p) = relax_phi {
                    let _ = write!(v, ", lambda_min S reaches {RELAXED} near phi = {p:.1e}");
                }
                f.write_str(&v)
            }
            Verdict::PreAsymptotic { vacuity: None } => {
                f.write_str("pre-asymptotic (no bound applies)")
            }
            Verdict::PreAsymptotic { vacuity: Some(vac) } => write!(f, "pre-asymptotic ({vac})"),
            Verdict::Lower { tightness, c_hat } => {
                write!(f, "{tightness} (OR >= {c_hat:.3e} G phi^(1-1/k))")
            }
            Verdict::LowerNoFit => f.write_str("no fit"),
            Verdict::AblationFloor => f.write_str("ablation: bias floor"),
            Verdict::AblationFalling { slope } => {
                write!(f, "ablation: still falling (slope {slope:.2})")
            }
            Verdict::AblationNoFit => f.write_str("ablation: no fit"),
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

/// Smallest ratio, over the smallest decade's cells (`dec`) with a bound, of the mean bound to
/// the mean risk at w0.
fn vacuity(cs: &[&CellResult], dec: &[usize]) -> Option<f64> {
    dec.iter()
        .filter_map(|&i| {
            let c = cs[i];
            let b: Option<Vec<f64>> = c.replicates.iter().map(|r| r.bound).collect();
            let r0: Option<Vec<f64>> = c.replicates.iter().map(|r| r.risk0).collect();
            Some(fit::mean(&b?) / fit::mean(&r0?))
        })
        .reduce(f64::min)
}

/// (phi, mean lambda_min S) of the cells where a Hessian exists.
fn lambda_s_by_phi(cs: &[&CellResult]) -> Vec<(f64, f64)> {
    cs.iter()
        .filter_map(|c| {
            let v: Option<Vec<f64>> = c.replicates.iter().map(|r| r.lambda_s).collect();
            Some((c.phi, fit::mean(&v?)))
        })
        .collect()
}

/// The upper-bound verdict from the smallest decade's fit (see the notes' "verdicts").
fn upper_verdict(
    decade: &Option<Fit>,
    threshold: f64,
    with_bound: usize,
    vacuity: Option<f64>,
    lambda_s_range: Option<(f64, f64)>,
    relax_phi: Option<f64>,
) -> Verdict {
    let vac = vacuity.map_or(String::new(), |v| {
        format!("bound / risk at w0 = {}", sig(v))
    });
    match decade {
        None => Verdict::NoFit,
        Some(f) if f.slope >= threshold => Verdict::RateConsistent {
            bound_applies: with_bound != 0,
        },
        Some(_) if vacuity.is_some_and(|v| v > 1.0) => Verdict::Untestable {
            vacuity: vac,
            lambda_s_range,
            relax_phi,
        },
        Some(_) => Verdict::PreAsymptotic {
            vacuity: (with_bound != 0).then_some(vac),
        },
    }
}

/// The lower-bound verdict: tightness of the smallest decade's fit, and the reported constant
/// c_hat with OR >= c_hat G phi^(1-1/k) in every cell.
fn lower_series_verdict(
    decade: &Option<Fit>,
    predicted: f64,
    k: f64,
    cs: &[&CellResult],
) -> Verdict {
    let c_hat = cs
        .iter()
        .map(|c| {
            let g = c.replicates.first().map_or(f64::NAN, |r| r.g);
            fit::mean(&reps_of(c)) / (g * c.phi.powf(1.0 - 1.0 / k))
        })
        .fold(f64::INFINITY, f64::min);
    match decade {
        Some(f) => Verdict::Lower {
            tightness: lower_verdict(f, predicted),
            c_hat,
        },
        None => Verdict::LowerNoFit,
    }
}

/// The ablation verdict: a bias floor, or still falling.
fn ablation_verdict(decade: &Option<Fit>) -> Verdict {
    match decade {
        Some(f) if f.hi < 0.25 => Verdict::AblationFloor,
        Some(f) => Verdict::AblationFalling { slope: f.slope },
        None => Verdict::AblationNoFit,
    }
}

/// Fits, bound checks and verdict of series `s`.
fn summarize_series(spec: &Spec, s: usize, cells: &BTreeMap<usize, CellResult>) -> SeriesSummary {
    let raw = &spec.raw;
    let ser = &raw.series[s];
    let cs: Vec<&CellResult> = cells.values().filter(|c| c.series == s).collect();
    let role = series_role(spec, s);
    let predicted = raw.theorem.phi_exponent(ser.k);
    let phis: Vec<f64> = cs.iter().map(|c| c.phi).collect();
    let reps: Vec<Vec<f64>> = cs
        .iter()
        .map(|c| c.replicates.iter().map(|r| r.risk).collect())
        .collect();
    let seed = derive_seed(raw.seed, s as u64, Purpose::Other(0xf17));
    let sweep = fit::fit(&phis, &reps, spec.bootstrap, seed);
    let dec = fit::smallest_decade(&phis);
    let decade = fit::fit(
        &dec.iter().map(|&i| phis[i]).collect::<Vec<_>>(),
        &dec.iter().map(|&i| reps[i].clone()).collect::<Vec<_>>(),
        spec.bootstrap,
        seed ^ 1,
    );
    let check = bound_check(spec, s, role, &cs);
    let vacuity = vacuity(&cs, &dec);
    let ls = lambda_s_by_phi(&cs);
    let lambda_s_range =
        (ls.len() == cs.len() && !ls.is_empty()).then(|| range(ls.iter().map(|p| p.1)));
    let relax_phi = relax_phi(&ls);
    let probability = if role == Role::Upper {
        probability_check(spec, s, &cs)
    } else {
        None
    };
    let verdict = match role {
        _ if !check.violations.is_empty() => Verdict::Violation(check.violations.clone()),
        Role::Upper => upper_verdict(
            &decade,
            predicted - raw.slope_tolerance,
            check.with_bound,
            vacuity,
            lambda_s_range,
            relax_phi,
        ),
        Role::Lower => lower_series_verdict(&decade, predicted, ser.k, &cs),
        Role::Ablation => ablation_verdict(&decade),
    };
    SeriesSummary {
        label: spec.label(s),
        k: ser.k,
        role,
        predicted,
        sweep,
        decade,
        max_ratio: check.max_ratio,
        min_ratio: check.min_ratio,
        bound_cells: (check.with_bound, cs.len()),
        violations: check.violations,
        c_range: range(cs.iter().flat_map(|c| c.replicates.iter().map(|r| r.c))),
        tau_range: range(cs.iter().flat_map(|c| c.replicates.iter().map(|r| r.tau))),
        vacuity,
        lambda_s_range,
        relax_phi,
        probability,
        verdict,
    }
}

/// The lower-bound verdict, three-way on the smallest decade's 95% interval against 1 - 1/k:
/// "tight" (within 0.05 of it), "not tight" (excludes it by more than 0.05), "consistent"
/// (otherwise: contains it, or misses it by less than 0.05, but is wider than +-0.05).
pub fn lower_verdict(f: &Fit, predicted: f64) -> String {
    const BAND: f64 = 0.05;
    if f.lo >= predicted - BAND && f.hi <= predicted + BAND {
        "tight".into()
    } else if f.hi < predicted - BAND || f.lo > predicted + BAND {
        format!("not tight: CI excludes {predicted:.3} by more than {BAND}")
    } else {
        format!("consistent: CI contains {predicted:.3} (within {BAND}) but is wider than +-{BAND}")
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
                max_ratio: None,
                min_ratio: None,
                bound_cells: (0, 0),
                violations: Vec::new(),
                c_range: (1.0, 1.0),
                tau_range: (1.0, 1.0),
                vacuity: None,
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

    #[test]
    fn violations_name_exactly_the_violating_series() {
        let fine = Verdict::RateConsistent {
            bound_applies: true,
        };
        let pre = Verdict::PreAsymptotic { vacuity: None };
        assert!(violations(&[summary_with(&[fine.clone(), pre])]).is_empty());
        let bad = violations(&[summary_with(&[
            fine,
            Verdict::Violation(vec!["cell 3".into()]),
        ])]);
        assert_eq!(bad, vec!["s k = 1".to_string()]);
    }

    /// The verdict texts are a persisted format (table, report.md, summary JSON): each variant
    /// prints exactly the text the string verdicts printed.
    #[test]
    fn verdict_texts_are_unchanged() {
        let cases = [
            (
                Verdict::Violation(vec!["a".into(), "b".into()]),
                "VIOLATION: a; b",
            ),
            (Verdict::NoFit, "no fit (risk not positive)"),
            (
                Verdict::RateConsistent {
                    bound_applies: true,
                },
                "rate consistent",
            ),
            (
                Verdict::RateConsistent {
                    bound_applies: false,
                },
                "rate consistent (no bound applies)",
            ),
            (
                Verdict::Untestable {
                    vacuity: "bound / risk at w0 = 2.50".into(),
                    lambda_s_range: Some((0.0123, 4567.0)),
                    relax_phi: Some(3.3e-5),
                },
                "untestable at this scale: bound vacuous (bound / risk at w0 = 2.50); lambda_min S = 0.0123..4.57e3, lambda_min S reaches 3 near phi = 3.3e-5",
            ),
            (
                Verdict::Untestable {
                    vacuity: "v".into(),
                    lambda_s_range: None,
                    relax_phi: None,
                },
                "untestable at this scale: bound vacuous (v)",
            ),
            (
                Verdict::PreAsymptotic { vacuity: None },
                "pre-asymptotic (no bound applies)",
            ),
            (
                Verdict::PreAsymptotic {
                    vacuity: Some(String::new()),
                },
                "pre-asymptotic ()",
            ),
            (
                Verdict::Lower {
                    tightness: "tight".into(),
                    c_hat: 0.01234,
                },
                "tight (OR >= 1.234e-2 G phi^(1-1/k))",
            ),
            (Verdict::LowerNoFit, "no fit"),
            (Verdict::AblationFloor, "ablation: bias floor"),
            (
                Verdict::AblationFalling { slope: 0.456 },
                "ablation: still falling (slope 0.46)",
            ),
            (Verdict::AblationNoFit, "ablation: no fit"),
        ];
        for (v, text) in cases {
            assert_eq!(v.to_string(), text);
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("{text:?}"));
            assert_eq!(v.is_violation(), text.starts_with("VIOLATION"));
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
    fn lower_verdict_is_three_way() {
        // Issue 14: 1.00 [0.96, 1.05] against 1 was printed "not tight".
        assert_eq!(lower_verdict(&f(0.96, 1.05), 1.0), "tight");
        assert_eq!(lower_verdict(&f(0.70, 0.745), 0.75), "tight");
        assert!(lower_verdict(&f(0.5, 0.9), 0.75).starts_with("consistent"));
        assert!(lower_verdict(&f(0.5, 0.72), 0.75).starts_with("consistent"));
        assert!(lower_verdict(&f(0.5, 0.69), 0.75).starts_with("not tight"));
        assert!(lower_verdict(&f(0.81, 0.9), 0.75).starts_with("not tight"));
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
