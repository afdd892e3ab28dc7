//! The summary of a finished worst-case run (only fresh re-estimates, never the search's own
//! values), and its markdown report.
//!
//! Intervals: 95% percentile bootstrap over the fresh replicates; one set of resampled replicate
//! indices serves every phi of a series (replicate r runs the same fresh streams at every phi),
//! so the slope's interval is paired like `verify`'s.

use std::collections::BTreeMap;

use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::WorstCell;
use super::search::Measured;
use crate::experiment::fit::{interval, mean, ols};
use crate::experiment::spec::Spec;
use crate::format::{fixed, num};
use crate::rng::{Purpose, stream};
use crate::theory::TheoremId;

/// Bootstrap resamples of a re-check.
const RECHECK_RESAMPLES: usize = 2000;

/// A value with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Est {
    /// Point estimate.
    pub value: f64,
    /// 2.5% quantile.
    pub lo: f64,
    /// 97.5% quantile.
    pub hi: f64,
}

impl Est {
    fn text(&self) -> String {
        format!("{} [{}, {}]", num(self.value), num(self.lo), num(self.hi))
    }
}

/// One (k, phi): the worst instance found, re-estimated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorstRow {
    /// phi.
    pub phi: f64,
    /// n.
    pub n: usize,
    /// OR / bound on fresh replicates (None: no bound for this instance).
    pub ratio: Option<Est>,
    /// OR / (G D0) on fresh replicates.
    pub or_gd0: Est,
    /// The re-check's OR / bound (when the re-estimate was above 1).
    pub recheck: Option<Est>,
    /// True when the re-check's interval lies above 1.
    pub violation: bool,
    /// Mean clipped fraction.
    pub clipped: f64,
    /// OR / risk0 (risk0 = f(w0) - f*, the do-nothing risk).
    pub or_risk0: f64,
    /// OR(heavy) - OR(control: every G_i = G), same fresh streams, over (G D0).
    pub minus_control: Est,
    /// The schedule's clip norm tau, over G.
    pub tau_over_g: f64,
    /// max_i G_i / G.
    pub max_gi_over_g: f64,
    /// Share of the rows in the component with the largest G_i.
    pub tail_share: f64,
    /// The largest G_i that any data set of the class with n rows can hold, over G: one row
    /// carrying the whole moment, G_emp n^(1/k) (G_emp at k = inf). A clip norm at or above it
    /// clips no instance of the class.
    pub class_max_gi_over_g: f64,
    /// The search's best value on its own streams (biased upwards; shown for the record).
    pub search_value: f64,
    /// Evaluations the search spent.
    pub evaluations: usize,
}

/// A fitted slope with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Slope {
    /// OLS slope of log OR on log phi.
    pub value: f64,
    /// 2.5% quantile.
    pub lo: f64,
    /// 97.5% quantile.
    pub hi: f64,
}

/// One series (one k).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorstGroup {
    /// Label.
    pub label: String,
    /// k.
    #[serde(with = "crate::k_serde")]
    pub k: f64,
    /// Rows, phi_max first.
    pub rows: Vec<WorstRow>,
    /// Slope of the worst-case risk on phi.
    pub slope: Option<Slope>,
    /// The theorem's exponent of phi.
    pub predicted: f64,
    /// 1 - 1/k (the lower bound's exponent, Thm 6.6), for J.1's open question.
    pub lower: f64,
}

/// The summary of one spec's worst-case run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorstSummary {
    /// Spec name.
    pub spec: String,
    /// Title.
    pub title: String,
    /// Theorem label.
    pub theorem: String,
    /// quick or full.
    pub scale: String,
    /// Fresh replicates per re-estimate.
    pub replicates: usize,
    /// One per series.
    pub groups: Vec<WorstGroup>,
}

impl WorstSummary {
    /// Cells whose OR / bound stays above 1 on the re-check.
    pub fn violations(&self) -> usize {
        self.groups
            .iter()
            .flat_map(|g| &g.rows)
            .filter(|r| r.violation)
            .count()
    }
}

fn est(value: f64, draws: impl Iterator<Item = f64>) -> Est {
    let (lo, hi) = interval(draws).unwrap_or((f64::NAN, f64::NAN));
    Est { value, lo, hi }
}

fn at(v: &[f64], ix: &[usize]) -> f64 {
    ix.iter().map(|&i| v[i]).sum::<f64>() / ix.len() as f64
}

/// The re-check's OR / bound with its 95% interval (its own resamples of its replicates).
fn recheck_est(w: &WorstCell) -> Option<Est> {
    let (rc, b) = (w.recheck.as_ref()?, w.reestimate.bound?);
    let n = rc.risk.len();
    let mut rng = stream(w.cell as u64, 0, Purpose::Other(0x2ec4_b007));
    let draws: Vec<f64> = (0..RECHECK_RESAMPLES)
        .map(|_| {
            let ix: Vec<usize> = (0..n).map(|_| rng.random_range(0..n)).collect();
            at(&rc.risk, &ix) / b
        })
        .collect();
    Some(est(mean(&rc.risk) / b, draws.into_iter()))
}

/// True when the re-check's 95% interval of OR / bound lies above 1 (a violation).
pub fn is_violation(w: &WorstCell) -> bool {
    recheck_est(w).is_some_and(|r| r.lo > 1.0)
}

fn row(w: &WorstCell, resamples: &[Vec<usize>]) -> WorstRow {
    let m: &Measured = &w.reestimate;
    let risk = mean(&m.risk);
    let ratio = m
        .bound
        .filter(|b| *b > 0.0)
        .map(|b| est(risk / b, resamples.iter().map(|ix| at(&m.risk, ix) / b)));
    let recheck = recheck_est(w);
    let diff: Vec<f64> = m
        .risk
        .iter()
        .zip(&w.control.risk)
        .map(|(a, c)| (a - c) / w.gd0)
        .collect();
    let top = w
        .instance
        .weight
        .iter()
        .enumerate()
        .filter(|(j, _)| w.instance.rows[*j] > 0)
        .fold((0, 0.0), |b, (j, &a)| if a > b.1 { (j, a) } else { b });
    WorstRow {
        phi: w.phi,
        n: w.n,
        ratio,
        or_gd0: est(
            risk / w.gd0,
            resamples.iter().map(|ix| at(&m.risk, ix) / w.gd0),
        ),
        violation: recheck.is_some_and(|r| r.lo > 1.0),
        recheck,
        clipped: m.clipped,
        or_risk0: risk / m.risk0,
        minus_control: est(mean(&diff), resamples.iter().map(|ix| at(&diff, ix))),
        tau_over_g: m.tau / w.g,
        max_gi_over_g: top.1 / w.g,
        tail_share: tail_rows(&w.instance.weight, &w.instance.rows, top.1) as f64 / w.n as f64,
        class_max_gi_over_g: w.g_emp * (w.n as f64).powf(1.0 / w.k) / w.g,
        search_value: w.found.search_value,
        evaluations: w.found.evaluations,
    }
}

/// The rows whose G_i equals the largest, `top`: every piece that carries it counts (a logistic
/// mixture splits one feature vector into a piece per label, both with the same G_i = ||x||).
fn tail_rows(weight: &[f64], rows: &[usize], top: f64) -> usize {
    weight
        .iter()
        .zip(rows)
        .filter(|(a, _)| **a == top)
        .map(|(_, r)| r)
        .sum()
}

/// Where clipping stands in one cell, from the schedule's tau against the G_i (for the sharp
/// loss ||grad f_i|| = G_i away from the kink, so this is exact; for a linear-model loss
/// ||grad f_i|| <= G_i, so "cannot" and "does not" stay true and "can" is an upper statement).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClipStatus {
    /// tau >= the largest G_i any instance of the class can hold: no instance is clipped.
    CannotBindInClass,
    /// tau >= max G_i of the worst instance, below the class's largest: the worst instance is
    /// not clipped, another instance of the class could be.
    NotAtWorst,
    /// tau < max G_i of the worst instance: its heaviest rows can be clipped.
    CanBindAtWorst,
}

impl ClipStatus {
    /// The status of a row.
    pub fn of(r: &WorstRow) -> ClipStatus {
        if r.tau_over_g >= r.class_max_gi_over_g {
            ClipStatus::CannotBindInClass
        } else if r.tau_over_g >= r.max_gi_over_g {
            ClipStatus::NotAtWorst
        } else {
            ClipStatus::CanBindAtWorst
        }
    }
    fn text(self) -> &'static str {
        match self {
            ClipStatus::CannotBindInClass => "cannot bind in the class",
            ClipStatus::NotAtWorst => "not at the worst instance",
            ClipStatus::CanBindAtWorst => "can bind at the worst instance",
        }
    }
}

/// Summarizes the complete cells of `spec`.
pub fn summarize(spec: &Spec, cells: &BTreeMap<usize, WorstCell>) -> WorstSummary {
    let reps = cells.values().next().map_or(0, |w| w.reestimate.risk.len());
    let mut rng = stream(spec.raw.seed, 0, Purpose::Other(0xb007));
    let resamples: Vec<Vec<usize>> = (0..spec.bootstrap)
        .map(|_| (0..reps).map(|_| rng.random_range(0..reps)).collect())
        .collect();
    let sched = crate::experiment::theorem::schedule_theorem(spec.raw.theorem);
    let groups = (0..spec.series.len())
        .map(|s| {
            let ws: Vec<&WorstCell> = cells.values().filter(|w| w.series == s).collect();
            let k = spec.series[s].k;
            let lphi: Vec<f64> = ws.iter().map(|w| w.phi.ln()).collect();
            let fit = |pick: &dyn Fn(&WorstCell) -> f64| {
                ols(&lphi, &ws.iter().map(|w| pick(w).ln()).collect::<Vec<_>>()).map(|l| l.0)
            };
            let slope = (ws.len() >= 2)
                .then(|| fit(&|w| mean(&w.reestimate.risk)))
                .flatten()
                .map(|value| {
                    let draws = resamples
                        .iter()
                        .filter_map(|ix| fit(&|w| at(&w.reestimate.risk, ix)));
                    let (lo, hi) = interval(draws).unwrap_or((f64::NAN, f64::NAN));
                    Slope { value, lo, hi }
                });
            WorstGroup {
                label: spec.label(s),
                k,
                rows: ws.iter().map(|w| row(w, &resamples)).collect(),
                slope,
                predicted: sched.phi_exponent(k),
                lower: TheoremId::L1.phi_exponent(k),
            }
        })
        .collect();
    WorstSummary {
        spec: spec.raw.name.clone(),
        title: spec.raw.title.clone().unwrap_or(spec.raw.name.clone()),
        theorem: spec.raw.theorem.label().to_string(),
        scale: format!("{:?}", spec.scale).to_lowercase(),
        replicates: reps,
        groups,
    }
}

/// How to read the tables (once per report).
pub fn legend() -> String {
    "How to read the tables. Every number is a fresh re-estimate: the found instance rerun on \
replicates whose random streams no search evaluation used, so the search's selection does not \
inflate it (no winner's curse); intervals are 95% percentile bootstrap intervals over those \
replicates.\n\n\
- **OR / bound**: mean risk over the theorem's explicit bound at the worst instance found; above 1 it is \
re-checked on a second fresh set of more replicates, and a VIOLATION if that interval lies above 1.\n\
- **OR / (G D0)**: the same risk in units of G D0 (D0 = ||w0 - w*||, fixed for every instance); for \
Thm 6.8 / N.1, whose risk is E ||grad f||^2, in units of G^2 (and likewise heavy - control).\n\
- **clipped**: fraction of sampled per-sample gradients that were clipped; 0 means clipping never binds at \
the worst instance.\n\
- **OR / risk0**: risk over the do-nothing risk f(w0) - f* (near 1: the run barely moved).\n\
- **heavy - control**: OR at the worst instance minus OR at its bounded control (the same centres and \
shares with every G_i = G, on the same fresh streams), over G D0.\n\
- **tau / G**, **max G_i / G**, **tail share**: the schedule's clip norm, the largest per-sample \
Lipschitz constant of the worst instance, and the share of rows that carry it.\n\
- **class max G_i / G**: the largest G_i any data set of the class with n rows can hold (one row \
carrying the whole moment: G_emp n^(1/k), G_emp at k = inf). **clipping**: \"cannot bind in the \
class\" when tau is at or above it, \"not at the worst instance\" when tau is at or above the worst \
instance's max G_i only, else \"can bind at the worst instance\" (for the sharp loss ||grad f_i|| = \
G_i, so this is exact; for robust regression ||grad f_i|| <= G_i).\n\
- **search**: the search's own best value (biased upwards, for the record only) and its evaluations.\n"
        .to_string()
}

/// The report section of one spec (`figures`: relative paths of its PNGs).
pub fn markdown(s: &WorstSummary, figures: &[String], shipped: Option<(f64, String)>) -> String {
    let mut md = format!(
        "## {} (Thm {}, {} scale, {} fresh replicates)\n\n",
        s.title, s.theorem, s.scale, s.replicates
    );
    let worst = s
        .groups
        .iter()
        .flat_map(|g| &g.rows)
        .filter_map(|r| r.ratio)
        .max_by(|a, b| a.value.total_cmp(&b.value));
    md.push_str(&format!(
        "Worst OR / bound found (fresh re-estimate): {}; the best shipped instance of Thm {} in `verify`'s table: {}.\n\n",
        worst.map_or("no instance with a bound".into(), |e| e.text()),
        s.theorem,
        shipped.map_or("not available (paper_refs/verification.md not found)".into(), |(v, at)| format!("{} ({at})", num(v)))
    ));
    md.push_str("| series | phi | n | OR / bound [95%] | OR / (G D0) [95%] | clipped | OR / risk0 | heavy - control [95%] | tau / G | max G_i / G | class max G_i / G | clipping | tail share | search (evals) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for g in &s.groups {
        for r in &g.rows {
            let ratio = match (&r.ratio, &r.recheck) {
                (Some(e), Some(rc)) => format!(
                    "{} (re-check {}{})",
                    e.text(),
                    rc.text(),
                    if r.violation { ": VIOLATION" } else { "" }
                ),
                (Some(e), None) => e.text(),
                (None, _) => "no bound".into(),
            };
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} ({}) |\n",
                g.label,
                num(r.phi),
                r.n,
                ratio,
                r.or_gd0.text(),
                num(r.clipped),
                num(r.or_risk0),
                r.minus_control.text(),
                num(r.tau_over_g),
                num(r.max_gi_over_g),
                num(r.class_max_gi_over_g),
                ClipStatus::of(r).text(),
                num(r.tail_share),
                num(r.search_value),
                r.evaluations
            ));
        }
    }
    md.push_str("\nSlope of the worst-case risk on phi (log-log OLS over the phis, paired bootstrap 95% interval):\n\n| series | slope [95%] | theorem's exponent | in interval | 1 - 1/k | in interval |\n|---|---|---|---|---|---|\n");
    for g in &s.groups {
        let inside = |e: f64| match g.slope {
            Some(sl) if sl.lo <= e && e <= sl.hi => "yes",
            Some(_) => "no",
            None => "-",
        };
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            g.label,
            g.slope.map_or("-".into(), |sl| format!(
                "{} [{}, {}]",
                fixed(sl.value, 3),
                fixed(sl.lo, 3),
                fixed(sl.hi, 3)
            )),
            fixed(g.predicted, 3),
            inside(g.predicted),
            fixed(g.lower, 3),
            inside(g.lower)
        ));
    }
    for f in figures {
        md.push_str(&format!("\n![{}]({f})\n", s.spec));
    }
    md.push('\n');
    md
}

/// The largest "max OR/bound" of `verify`'s table (paper_refs/verification.md) over the rows of
/// Thm `theorem`, with its spec and series: the best shipped instance's value.
pub fn shipped_max(verification_md: &str, theorem: &str) -> Option<(f64, String)> {
    verification_md
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| spec"))
        .filter_map(|l| {
            let cols: Vec<&str> = l.split('|').map(str::trim).collect();
            // cols[0] is empty: | spec | theorem | series | predicted | slope | minus control |
            // max OR/bound | ...
            if cols.get(2) != Some(&theorem) {
                return None;
            }
            let v: f64 = cols.get(7)?.split_whitespace().next()?.parse().ok()?;
            Some((v, format!("{} {}", cols[1], cols[3])))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// What the search cannot show (once per report); "Searched" names the specs of this run.
pub fn limits(summaries: &[WorstSummary]) -> String {
    let searched: Vec<String> = summaries
        .iter()
        .map(|s| format!("{} (`{}`)", s.title, s.spec))
        .collect();
    format!(
        "## What this search can and cannot show\n\n\
- A worst case found is a lower estimate of the supremum of OR / bound over the family: a \
derivative-free search with a finite budget can miss a worse instance, so \"the bound is loose by \
at least 1 / (worst OR / bound)\" is not shown; only \"no instance found is worse than this\".\n\
- The family is not the whole class. Searched in this run: {}. Every family is made of \
point-mass mixtures (m components, each a share of the rows at one point with one G_i): of the \
weighted sharp loss (d = 2), of robust regression (d = 2), of Huber regression (c = 1, d = 8) and \
of binary logistic regression (d = 2, both labels at every feature vector so that f* is \
attained), with Assumption 6.1 met with equality at the level the theorem's proof needs of the \
data set (I.1, J.1, N.1: mean G_i^k <= G^k / gamma; K.1: mean G_i^k <= 4 G^k; H.1, which has no \
moment assumption: G_n = max G_i = G), D0 fixed, w0 = w* + D0 (1, ..., 1) / sqrt(d) (on I.1's \
boundary, where that leaves W: w0 = w* (1 - D0 / R)), for I.1 either centres inside the ball of \
radius R - D0 (w* interior) or centres beyond the ball along one axis (w* = argmin_W f on the \
boundary), and for K.1 only instances where Assumption 6.4's radius D exists (computed per \
instance). Not searched: spread components, other directions of w0, moments below the level, \
Huber and logistic losses under theorems other than J.1, d above 2 except for Huber.\n\
- Every reported number is a fresh re-estimate (streams the search never used), so the search's \
selection does not inflate it; the search's own value is shown beside it only for the record.\n\
- A slope over a few phis of worst instances that differ from phi to phi is the slope of the \
envelope the search found, not of one instance.\n\
- For Thm 6.8 / N.1 no lower bound is known: the worst rate found is a rate DP-SGD reaches on one \
family, so a slope at the upper exponent does not show the upper bound tight over the class.\n",
        searched.join("; ")
    )
}

/// The summaries as plain text (one line per cell).
pub fn text(summaries: &[WorstSummary]) -> String {
    let mut s = String::new();
    for sum in summaries {
        for g in &sum.groups {
            for r in &g.rows {
                s.push_str(&format!(
                    "{} {} phi = {}: OR/bound {} | OR/(G D0) {} | clipped {} | max G_i/G {} | tail share {}{}\n",
                    sum.spec,
                    g.label,
                    num(r.phi),
                    r.ratio.map_or("no bound".into(), |e| e.text()),
                    r.or_gd0.text(),
                    num(r.clipped),
                    num(r.max_gi_over_g),
                    num(r.tail_share),
                    if r.violation { " VIOLATION" } else { "" }
                ));
            }
        }
    }
    s
}

/// The report's answers, computed from the summaries: how tight each bound is, whether clipping
/// binds at the worst instances, which exponent J.1's worst case follows, and what is not
/// searched.
pub fn answers(summaries: &[WorstSummary], shipped: &dyn Fn(&str) -> Option<f64>) -> String {
    let mut md = String::from("## Answers (from the tables below)\n\n");
    for s in summaries {
        let rows: Vec<&WorstRow> = s.groups.iter().flat_map(|g| &g.rows).collect();
        let worst = rows
            .iter()
            .filter_map(|r| r.ratio)
            .max_by(|a, b| a.value.total_cmp(&b.value));
        md.push_str(&format!(
            "- **How tight is Thm {}'s explicit bound?** The worst OR / bound found is {} (fresh re-estimate, 95%), against {} for the best shipped instance in `verify`'s table; the bound is not violated by any instance found{}.\n",
            who(s),
            worst.map_or("- (no instance with a bound)".into(), |e| e.text()),
            shipped(&s.theorem).map_or("-".into(), num),
            if s.violations() > 0 {
                format!(" except {} VIOLATION(s)", s.violations())
            } else {
                String::new()
            }
        ));
        md.push_str(&clipping_answer(s, &rows));
        let full = s
            .theorem
            .parse::<TheoremId>()
            .map(|t| t.full_version())
            .ok();
        for g in &s.groups {
            let Some(sl) = g.slope else { continue };
            let shares: Vec<String> = g.rows.iter().map(|r| num(r.tail_share)).collect();
            let span = g
                .rows
                .first()
                .zip(g.rows.last())
                .map_or(1.0, |(a, b)| a.phi / b.phi);
            md.push_str(&format!(
                "- Thm {} at {}: the share of rows with the largest G_i at the worst instance, phi_max to phi_min: {} (a tail that scales with phi, as Appendix L's, would shrink {}-fold over this range).\n",
                who(s),
                g.label,
                shares.join(", "),
                num(span)
            ));
            md.push_str(&slope_answer(s, g, sl, full));
        }
    }
    if !summaries.iter().any(|s| {
        s.theorem
            .parse::<TheoremId>()
            .ok()
            .map(|t| t.full_version())
            == Some(TheoremId::N1)
    }) {
        md.push_str("- **Thm 6.8 / N.1 (nonconvex)**: not searched in this run, so no worst rate is reported for it.\n");
    }
    md.push('\n');
    md
}

/// "Thm 6.2 (`worstcase_j1_huber`)": the theorem and the spec (several specs search one theorem).
fn who(s: &WorstSummary) -> String {
    format!("{} (`{}`)", s.theorem, s.spec)
}

/// The slope sentence of one series: against the theorem's exponent, and for J.1 also against
/// the lower bound's 1 - 1/k (the open question); for N.1 the worst rate found.
fn slope_answer(s: &WorstSummary, g: &WorstGroup, sl: Slope, full: Option<TheoremId>) -> String {
    let inside = |e: f64| sl.lo <= e && e <= sl.hi;
    let interval = format!(
        "{} [{}, {}]",
        fixed(sl.value, 3),
        fixed(sl.lo, 3),
        fixed(sl.hi, 3)
    );
    let word = |e: f64| if inside(e) { "contains" } else { "excludes" };
    match full {
        Some(TheoremId::J1) => {
            let follows = match (inside(g.predicted), inside(g.lower)) {
                (true, true) => "contains both, so it cannot tell them apart",
                (true, false) => "contains the upper bound's exponent only",
                (false, true) => "contains the lower bound's exponent 1 - 1/k only",
                (false, false) => "contains neither",
            };
            format!(
                "- Thm {} at {}: the worst-case risk's slope on phi is {interval}; against {} (the theorem's) and {} (1 - 1/k) the interval {follows}.\n",
                who(s),
                g.label,
                fixed(g.predicted, 3),
                fixed(g.lower, 3),
            )
        }
        Some(TheoremId::N1) => format!(
            "- **Worst Thm 6.8 / N.1 rate found** at {}: the worst-case risk E ||grad f||^2 falls as phi^{interval} (slope, 95%); the interval {} the upper bound's exponent 1 - 1/(2k - 1) = {}. No lower bound is known, so this is a rate that DP-SGD with N.1's schedule does reach on this family, not a proof that no instance is slower.\n",
            g.label,
            word(g.predicted),
            fixed(g.predicted, 3),
        ),
        _ => format!(
            "- Thm {} at {}: the worst-case risk's slope on phi is {interval}; the interval {} the theorem's exponent {}.\n",
            who(s),
            g.label,
            word(g.predicted),
            fixed(g.predicted, 3),
        ),
    }
}

/// Whether clipping binds at the worst instances, cell by cell: the schedule's tau against the
/// worst instance's largest G_i and against the largest G_i the class allows at n rows.
fn clipping_answer(s: &WorstSummary, rows: &[&WorstRow]) -> String {
    let binds = rows.iter().filter(|r| r.clipped > 0.0).count();
    let max_clip = rows.iter().map(|r| r.clipped).fold(0.0, f64::max);
    let count = |st: ClipStatus| rows.iter().filter(|r| ClipStatus::of(r) == st).count();
    let mut md = format!(
        "- **Does clipping bind at Thm {}'s worst instances?** Clipped in {} of {} cells (largest clipped fraction {}). The schedule's tau is at or above the class's largest possible G_i (G_emp n^(1/k)) in {} cells, so no instance of the class is clipped there; above the worst instance's largest G_i only in {} more; below it in {}.",
        who(s),
        binds,
        rows.len(),
        num(max_clip),
        count(ClipStatus::CannotBindInClass),
        count(ClipStatus::NotAtWorst),
        count(ClipStatus::CanBindAtWorst),
    );
    for g in &s.groups {
        let cells: Vec<String> = g
            .rows
            .iter()
            .map(|r| {
                format!(
                    "phi {}: tau / max G_i {}, tau / class max {}",
                    num(r.phi),
                    num(r.tau_over_g / r.max_gi_over_g),
                    num(r.tau_over_g / r.class_max_gi_over_g)
                )
            })
            .collect();
        md.push_str(&format!(" {}: {}.", g.label, cells.join("; ")));
    }
    md.push('\n');
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(tau: f64, max_gi: f64, class: f64) -> WorstRow {
        let e = Est {
            value: 0.0,
            lo: 0.0,
            hi: 0.0,
        };
        WorstRow {
            phi: 0.1,
            n: 400,
            ratio: None,
            or_gd0: e,
            recheck: None,
            violation: false,
            clipped: 0.0,
            or_risk0: 0.0,
            minus_control: e,
            tau_over_g: tau,
            max_gi_over_g: max_gi,
            tail_share: 0.5,
            class_max_gi_over_g: class,
            search_value: 0.0,
            evaluations: 0,
        }
    }

    /// The clipping status compares tau first with the class's largest G_i, then with the
    /// worst instance's; equality clips nothing (clip(g, tau) = g when ||g|| <= tau).
    #[test]
    fn clip_status_orders_the_two_thresholds() {
        assert_eq!(
            ClipStatus::of(&row(6.0, 1.5, 5.3)),
            ClipStatus::CannotBindInClass
        );
        assert_eq!(
            ClipStatus::of(&row(5.3, 1.5, 5.3)),
            ClipStatus::CannotBindInClass
        );
        assert_eq!(ClipStatus::of(&row(3.0, 1.5, 5.3)), ClipStatus::NotAtWorst);
        assert_eq!(ClipStatus::of(&row(1.5, 1.5, 5.3)), ClipStatus::NotAtWorst);
        assert_eq!(
            ClipStatus::of(&row(1.0, 1.5, 5.3)),
            ClipStatus::CanBindAtWorst
        );
    }

    /// A logistic mixture carries one feature vector as two pieces (one per label) with the same
    /// G_i: the tail share counts both, and no piece with a smaller G_i.
    #[test]
    fn the_tail_counts_every_piece_with_the_largest_g() {
        assert_eq!(tail_rows(&[2.0, 2.0, 1.0], &[3, 5, 92], 2.0), 8);
        assert_eq!(tail_rows(&[2.0, 1.0], &[3, 97], 2.0), 3);
    }
}
