//! Verdicts, tables and report.md, from the finished cells (the figure: [`super::figure`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::fit::{self, Fit};
use super::results::CellResult;
use super::runner::{gradient_risk, schedule_theorem};
use super::spec::{ClipRule, Spec, fmt_k, k_serde};
use crate::rng::{Purpose, derive_seed};
use crate::theory::TheoremId;

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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// Where lambda_min S is below [`RELAXED`] at the smallest phi: the phi at which it would
    /// reach it, extrapolated along the sweep's power law of lambda_min S in phi.
    #[serde(default)]
    pub relax_phi: Option<f64>,
    /// The probability statement over the data set, at the smallest phi.
    #[serde(default)]
    pub probability: Option<Probability>,
    /// The verdict.
    pub verdict: String,
}

/// lambda_min S at which a quadratic model of the run has relaxed from w0 (e^-3 = 5% of the
/// initial distance left): below it the iterate has barely moved and no rate can show.
pub const RELAXED: f64 = 3.0;

/// A theorem's probability statement over the data set, checked at one cell: the fraction of
/// data sets on which the risk (the mean over the algorithm runs on that data set) is under
/// the bound, with a 95% Clopper-Pearson interval, beside the theorem's probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probability {
    /// phi of the cell.
    pub phi: f64,
    /// Data sets with risk <= bound.
    pub under: usize,
    /// Data sets.
    pub total: usize,
    /// Algorithm runs per data set.
    pub runs: usize,
    /// 95% Clopper-Pearson interval of the fraction.
    pub ci: (f64, f64),
    /// The theorem's probability: 1 - gamma (I.1, J.1, N.1; 1 at k = inf), 3/4 (K.1), 1 (H.1,
    /// which holds for every data set).
    pub claimed: f64,
}

/// The probability with which `id`'s bound holds over the data set.
pub fn claimed_probability(id: TheoremId, gamma: Option<f64>, k: f64) -> Option<f64> {
    match id.full_version() {
        TheoremId::H1 => Some(1.0),
        TheoremId::K1 => Some(if k.is_infinite() { 1.0 } else { 0.75 }),
        TheoremId::I1 | TheoremId::J1 | TheoremId::N1 => {
            if k.is_infinite() {
                Some(1.0)
            } else {
                gamma.map(|g| 1.0 - g)
            }
        }
        _ => None,
    }
}

fn probability_check(spec: &Spec, s: usize, cs: &[&CellResult]) -> Option<Probability> {
    let raw = &spec.raw;
    if !raw.fresh_data {
        return None;
    }
    let claimed = claimed_probability(raw.theorem, raw.constants.gamma, raw.series[s].k)?;
    let c = cs.iter().min_by(|a, b| a.phi.total_cmp(&b.phi))?;
    let b: Option<Vec<f64>> = c.replicates.iter().map(|r| r.bound).collect();
    let b = b?;
    let under = c
        .replicates
        .iter()
        .zip(&b)
        .filter(|(r, b)| r.risk <= **b)
        .count();
    let total = b.len();
    Some(Probability {
        phi: c.phi,
        under,
        total,
        runs: raw.runs_per_data,
        ci: fit::clopper_pearson(under, total, 0.05),
        claimed,
    })
}

/// One spec's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
                .filter(|x| x.verdict.starts_with("VIOLATION"))
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
    let mut series = Vec::new();
    for (s, ser) in raw.series.iter().enumerate() {
        let cs: Vec<&CellResult> = cells.values().filter(|c| c.series == s).collect();
        let role = if raw.theorem.is_lower_bound() {
            Role::Lower
        } else if matches!(ser.clip, ClipRule::Fixed(_))
            || (matches!(ser.clip, ClipRule::Quantile(_))
                && raw.theorem.full_version() != crate::theory::TheoremId::H1)
        {
            Role::Ablation
        } else {
            Role::Upper
        };
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
        let mut violations = Vec::new();
        let mut max_ratio: Option<f64> = None;
        let mut min_ratio: Option<f64> = None;
        let mut with_bound = 0;
        for c in &cs {
            let b: Option<Vec<f64>> = c.replicates.iter().map(|r| r.bound).collect();
            let Some(b) = b else { continue };
            with_bound += 1;
            let (or, bd) = (fit::mean(&reps_of(c)), fit::mean(&b));
            let ratio = or / bd;
            max_ratio = Some(max_ratio.map_or(ratio, |m: f64| m.max(ratio)));
            min_ratio = Some(min_ratio.map_or(ratio, |m: f64| m.min(ratio)));
            if role == Role::Upper && or > bd {
                violations.push(format!(
                    "cell {} ({}, phi = {:.3e}): OR = {:.3e} > bound {:.3e}",
                    c.cell,
                    spec.label(s),
                    c.phi,
                    or,
                    bd
                ));
            }
        }
        let tol = raw.slope_tolerance;
        let vacuity = dec
            .iter()
            .filter_map(|&i| {
                let c = cs[i];
                let b: Option<Vec<f64>> = c.replicates.iter().map(|r| r.bound).collect();
                let r0: Option<Vec<f64>> = c.replicates.iter().map(|r| r.risk0).collect();
                Some(fit::mean(&b?) / fit::mean(&r0?))
            })
            .reduce(f64::min);
        let ls: Vec<(f64, f64)> = cs
            .iter()
            .filter_map(|c| {
                let v: Option<Vec<f64>> = c.replicates.iter().map(|r| r.lambda_s).collect();
                Some((c.phi, fit::mean(&v?)))
            })
            .collect();
        let lambda_s_range =
            (ls.len() == cs.len() && !ls.is_empty()).then(|| range(ls.iter().map(|p| p.1)));
        let relax_phi = relax_phi(&ls);
        let probability = if role == Role::Upper {
            probability_check(spec, s, &cs)
        } else {
            None
        };
        let vac = vacuity.map_or(String::new(), |v| {
            format!("bound / risk at w0 = {}", sig(v))
        });
        let verdict = match role {
            _ if !violations.is_empty() => format!("VIOLATION: {}", violations.join("; ")),
            Role::Upper => match &decade {
                None => "no fit (risk not positive)".to_string(),
                Some(f) if f.slope >= predicted - tol => {
                    if with_bound == 0 {
                        "rate consistent (no bound applies)".to_string()
                    } else {
                        "rate consistent".to_string()
                    }
                }
                Some(_) if vacuity.is_some_and(|v| v > 1.0) => {
                    let mut v = format!("untestable at this scale: bound vacuous ({vac})");
                    if let Some((a, b)) = lambda_s_range {
                        let _ = write!(v, "; lambda_min S = {}..{}", sig(a), sig(b));
                    }
                    if let Some(p) = relax_phi {
                        let _ = write!(v, ", lambda_min S reaches {RELAXED} near phi = {p:.1e}");
                    }
                    v
                }
                Some(_) => {
                    if with_bound == 0 {
                        "pre-asymptotic (no bound applies)".to_string()
                    } else {
                        format!("pre-asymptotic ({vac})")
                    }
                }
            },
            Role::Lower => {
                // The reported constant: OR >= c_hat G phi^(1-1/k) in every cell.
                let c_hat = cs
                    .iter()
                    .map(|c| {
                        let g = c.replicates.first().map_or(f64::NAN, |r| r.g);
                        fit::mean(&reps_of(c)) / (g * c.phi.powf(1.0 - 1.0 / ser.k))
                    })
                    .fold(f64::INFINITY, f64::min);
                match &decade {
                    Some(f) => format!(
                        "{} (OR >= {c_hat:.3e} G phi^(1-1/k))",
                        lower_verdict(f, predicted)
                    ),
                    None => "no fit".to_string(),
                }
            }
            Role::Ablation => match &decade {
                Some(f) if f.hi < 0.25 => "ablation: bias floor".to_string(),
                Some(f) => format!("ablation: still falling (slope {:.2})", f.slope),
                None => "ablation: no fit".to_string(),
            },
        };
        series.push(SeriesSummary {
            label: spec.label(s),
            k: ser.k,
            role,
            predicted,
            sweep,
            decade,
            max_ratio,
            min_ratio,
            bound_cells: (with_bound, cs.len()),
            violations,
            c_range: range(cs.iter().flat_map(|c| c.replicates.iter().map(|r| r.c))),
            tau_range: range(cs.iter().flat_map(|c| c.replicates.iter().map(|r| r.tau))),
            vacuity,
            lambda_s_range,
            relax_phi,
            probability,
            verdict,
        });
    }
    let mut notes = vec![
        if raw.constants.w0 == Some(super::spec::StartSpec::Zero) {
            "w0 = 0, so ||w0 - w*|| = ||w*|| of each data set (used in the schedule and the bound); w* from the exact non-private solver".to_string()
        } else {
            format!(
                "w0 = w* + {} (1, ..., 1)/sqrt(p), so ||w0 - w*|| = {} exactly; w* from the exact non-private solver of each data set",
                crate::error::fmt_num(raw.constants.dist0),
                crate::error::fmt_num(raw.constants.dist0)
            )
        },
        format!(
            "verdicts (upper bounds): 'rate consistent' when the smallest-decade slope >= predicted - {tol}; otherwise 'untestable at this scale' when the bound exceeds the do-nothing risk (the risk at w0) in every cell of the smallest decade (the bound then says nothing the starting point does not, and lambda_min S < {RELAXED} means the iterate has barely left w0), else 'pre-asymptotic'",
            tol = raw.slope_tolerance
        ),
        match raw.constants.c {
            _ if schedule_theorem(raw.theorem).full_version() == crate::theory::TheoremId::I1 => {
                "Thm I.1 has no free C: eta = D_W/(T tau) psi^(-1/2), so the C column shows D_W".to_string()
            }
            super::spec::FreeConstant::Value(c) => format!("C = {c} (given)"),
            _ => "C chosen per replicate to minimize the theorem's explicit bound (golden section on log C); the range used is in the table below".to_string(),
        },
        format!(
            "risk estimated at K = {} iterates drawn uniformly from 0..T per run (unbiased for the random iterate of Algorithm 1), averaged over {} run(s) of Algorithm 1 per data set, R = {} replicates per cell, {} data per replicate",
            spec.iterates,
            raw.runs_per_data,
            spec.replicates,
            if raw.fresh_data { "fresh" } else { "one fixed data set, the same" }
        ),
        format!(
            "fit: OLS of log(mean risk) on log phi; 95% percentile bootstrap over replicates ({} resamples); 'rate consistent' when the smallest-decade slope >= predicted - {}",
            spec.bootstrap, raw.slope_tolerance
        ),
        format!(
            "privacy: Thm 3.4 noise, nu = {}, delta = {}; phi swept by {}",
            raw.privacy.nu,
            raw.privacy.delta,
            match raw.sweep.vary {
                super::spec::Vary::Epsilon => "epsilon at fixed n",
                super::spec::Vary::N => "n at fixed epsilon",
            }
        ),
    ];
    if let Some(g) = raw.constants.gamma {
        notes.push(format!(
            "gamma = {g}: the bound holds with probability >= 1 - gamma over the data set (1 at k = inf); the check compares the means over replicates"
        ));
    }
    match raw.theorem.full_version() {
        crate::theory::TheoremId::H1 => notes.push(
            "Thm H.1: alpha(tau) is the upper estimate of theory::estimate_alpha (8 starts), so the bound used is at most the theorem's: a pass is rigorous; Delta(w*) from the per-sample minima".into(),
        ),
        crate::theory::TheoremId::K1 => notes.push(
            "Thm K.1 needs Assumption 6.4: for the weighted sharp loss D = 2 f* / (a_bar - 16 phi^(1-1/k) G) (from f(w) - f* >= a_bar ||w - w*|| - 2 f*); when 16 phi^(1-1/k) G >= a_bar no D exists and the bound does not apply (counted in 'bound cells'); the bound holds with probability 3/4".into(),
        ),
        crate::theory::TheoremId::N1 => notes.push(
            "Thm N.1: L = (1/n) sum of per-sample smoothness constants (an upper bound on f's); f(w0) - f* with f* = the Newton reference (a local minimum: f(w0) - f* is then a lower estimate, so a pass is rigorous)".into(),
        ),
        _ => {}
    }
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
        notes,
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

/// The phi at which lambda_min S would reach [`RELAXED`], extrapolating the OLS power law of
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
fn sig(v: f64) -> String {
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

fn fmt_fit(f: &Option<Fit>) -> String {
    match f {
        Some(f) => format!("{:.2} [{:.2}, {:.2}]", f.slope, f.lo, f.hi),
        None => "-".into(),
    }
}

/// Columns of the table.
pub const COLS: usize = 10;

/// The table's header.
pub const TABLE_HEADER: [&str; COLS] = [
    "spec",
    "theorem",
    "series",
    "predicted",
    "slope sweep [95% CI]",
    "slope smallest decade [95% CI]",
    "max OR/bound",
    "bound / risk at w0",
    "P(OR <= bound) [95% CP] vs theorem",
    "verdict",
];

fn fmt_probability(p: &Option<Probability>) -> String {
    match p {
        Some(p) => format!(
            "{}/{} [{:.2}, {:.2}] vs >= {:.2}",
            p.under, p.total, p.ci.0, p.ci.1, p.claimed
        ),
        None => "-".into(),
    }
}

/// The table rows of a summary.
pub fn table_rows(s: &SpecSummary) -> Vec<[String; COLS]> {
    s.series
        .iter()
        .map(|x| {
            [
                s.spec.clone(),
                s.theorem.clone(),
                x.label.clone(),
                format!("{:.3}", x.predicted),
                fmt_fit(&x.sweep),
                fmt_fit(&x.decade),
                match (x.role, x.max_ratio, x.min_ratio) {
                    (Role::Lower, _, Some(r)) => format!(
                        "min {r:.3} vs lower bound ({}/{} cells)",
                        x.bound_cells.0, x.bound_cells.1
                    ),
                    (_, Some(r), _) => {
                        format!("{r:.3} ({}/{} cells)", x.bound_cells.0, x.bound_cells.1)
                    }
                    _ => "n/a".into(),
                },
                x.vacuity.map_or("-".into(), sig),
                fmt_probability(&x.probability),
                x.verdict.clone(),
            ]
        })
        .collect()
}

/// Plain-text table with aligned columns.
pub fn text_table(rows: &[[String; COLS]]) -> String {
    let mut w = TABLE_HEADER.map(|h| h.len());
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i < COLS - 1 {
                w[i] = w[i].max(c.chars().count());
            }
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        for (i, c) in cells.iter().enumerate() {
            if i < COLS - 1 {
                let _ = write!(out, "{:<width$}  ", c, width = w[i]);
            } else {
                let _ = write!(out, "{c}");
            }
        }
        out.push('\n');
    };
    line(TABLE_HEADER.to_vec(), &mut out);
    for r in rows {
        line(r.iter().map(|s| s.as_str()).collect(), &mut out);
    }
    out
}

/// Markdown table.
pub fn markdown_table(rows: &[[String; COLS]]) -> String {
    let mut out = format!("| {} |\n", TABLE_HEADER.join(" | "));
    out.push_str(&format!("|{}\n", "---|".repeat(COLS)));
    for r in rows {
        out.push_str(&format!("| {} |\n", r.join(" | ").replace('\n', " ")));
    }
    out
}

/// report.md for one spec (no timings, so merged shards reproduce it byte for byte).
pub fn markdown(s: &SpecSummary, plot_file: &str, cells: &BTreeMap<usize, CellResult>) -> String {
    let mut out = format!("# {}\n\n", s.title);
    let _ = writeln!(
        out,
        "Spec `{}`, Thm {} (schedule of Thm {}), {} scale. Risk: {}.\n",
        s.spec, s.theorem, s.schedule, s.scale, s.risk
    );
    out.push_str(&markdown_table(&table_rows(s)));
    out.push_str("\n| series | C range | tau range |\n|---|---|---|\n");
    for x in &s.series {
        let _ = writeln!(
            out,
            "| {} | {:.4} .. {:.4} | {:.4} .. {:.4} |",
            x.label, x.c_range.0, x.c_range.1, x.tau_range.0, x.tau_range.1
        );
    }
    out.push_str("\nConventions:\n\n");
    for n in &s.notes {
        let _ = writeln!(out, "- {n}");
    }
    let _ = writeln!(out, "\n![{}]({plot_file})\n", s.title);
    out.push_str("Cells (mean over replicates; risk at w0 = the do-nothing risk; lambda_min S = relaxation times covered, S = T eta):\n\n| cell | series | phi | n | epsilon | T | mean OR | mean bound | mean risk at w0 | mean lambda_min S |\n|---|---|---|---|---|---|---|---|---|---|\n");
    let opt_mean =
        |v: Option<Vec<f64>>| v.map_or("n/a".to_string(), |v| format!("{:.4e}", fit::mean(&v)));
    for c in cells.values() {
        let or = fit::mean(&reps_of(c));
        let b: Option<Vec<f64>> = c.replicates.iter().map(|r| r.bound).collect();
        let _ = writeln!(
            out,
            "| {} | {} | {:.4e} | {} | {:.4} | {} | {:.4e} | {} | {} | {} |",
            c.cell,
            s.series[c.series].label,
            c.phi,
            c.n,
            c.epsilon,
            c.steps,
            or,
            b.map(|b| format!("{:.4e}", fit::mean(&b)))
                .unwrap_or("n/a".into()),
            opt_mean(c.replicates.iter().map(|r| r.risk0).collect()),
            opt_mean(c.replicates.iter().map(|r| r.lambda_s).collect()),
        );
    }
    out
}

pub(crate) fn fmt_slope(f: &Option<Fit>) -> String {
    f.as_ref().map_or("-".into(), |f| format!("{:.2}", f.slope))
}

/// "inf" or k.
pub fn k_label(k: f64) -> String {
    fmt_k(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary_with(verdicts: &[&str]) -> SpecSummary {
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
                verdict: v.to_string(),
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
        assert!(violations(&[summary_with(&["rate consistent", "pre-asymptotic"])]).is_empty());
        let bad = violations(&[summary_with(&["rate consistent", "VIOLATION: cell 3"])]);
        assert_eq!(bad, vec!["s k = 1".to_string()]);
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
