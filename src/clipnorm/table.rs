//! Aggregation into Tables 3-7, the recommendation lines, and their Markdown.

use crate::format::signed;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::grid::{Group, TauPoint, fmt_tau};
use super::record::RunRecord;

/// One table cell: the best eta's mean +- sd over runs of the last-epochs test accuracy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Mean accuracy in [0, 1].
    pub mean: f64,
    /// Sample standard deviation over runs (0 for one run).
    pub sd: f64,
    /// The constant learning rate eta of the grid with the best mean accuracy (ties: the
    /// smaller eta).
    pub eta: f64,
    /// Runs averaged at the selected eta (the config's `runs` once the cell is complete).
    pub runs: usize,
    /// Runs at the selected eta that diverged.
    pub diverged: usize,
}

/// Table 3's "w/ RNMM" cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RnmmEntry {
    /// Accuracy of DP-SGD run with tau set to the privately estimated G_1, best eta over the grid.
    pub entry: Entry,
    /// Epsilon left for DP-SGD: the column's epsilon minus eps_RNMM (basic composition).
    pub dpsgd_epsilon: f64,
    /// Noise multiplier z calibrated for `dpsgd_epsilon` at the table's delta.
    pub z: f64,
    /// The clip norm of each run: its private estimate of G_1 selected by RNMM, in run order.
    pub tau_values: Vec<f64>,
}

/// One privacy level's column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpsColumn {
    /// Total privacy budget epsilon of the column (at the table's delta); with RNMM it covers
    /// both the G_1 estimate and DP-SGD.
    pub epsilon: f64,
    /// Noise multiplier z at this epsilon.
    pub z: f64,
    /// One entry per tau of the grid (None while cells are missing).
    pub entries: Vec<Option<Entry>>,
    /// Table 3's "w/ RNMM" cell at this epsilon (None when RNMM is not run or its cells are
    /// missing).
    pub rnmm: Option<RnmmEntry>,
}

/// The Theorem 5.4 quantities at (an approximation of) w*.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TheoryReport {
    /// Delta(w*) = mean train loss at the GD iterate (f_i^* = 0): an upper estimate.
    pub delta_star: f64,
    /// Full-batch gradient-descent iterations run to approximate the minimizer w*.
    pub gd_iters: usize,
    /// ||grad f|| at that iterate: how far it is from a stationary point.
    pub grad_norm: f64,
    /// Train accuracy at that iterate (1 when the set is separable).
    pub train_accuracy: f64,
    /// Upper estimate of alpha(G_1) (Definition 5.3); alpha(G_1) lies in [1, G_n / G_1].
    pub alpha_g1: f64,
    /// G_n / G_1, the largest value alpha(G_1) can take.
    pub gn_over_g1: f64,
    /// Term (B) of Eq. (5) at tau = G_1: (G_n / (G_1 alpha(G_1)) - 1) Delta(w*), the price of
    /// clipping at G_1 that interpolation (Delta ~ 0) removes.
    pub term_b_g1: f64,
}

/// Everything the tables, figure and recommendations need.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyTable {
    /// The study's short name from its config, used in headings and file names.
    pub name: String,
    /// The trained model as shown in the heading ("softmax regression" or "tanh network, hidden
    /// H").
    pub model: String,
    /// Training samples n (the set DP-SGD runs on and the G_i are taken over).
    pub n_train: usize,
    /// Held-out samples the test accuracy is measured on.
    pub n_test: usize,
    /// Feature dimension of each sample (before the model adds its bias).
    pub d: usize,
    /// Number of classes m.
    pub classes: usize,
    /// Expected batch size b (each sample joins a batch with probability b / n).
    pub batch: f64,
    /// DP-SGD steps per epoch, round(n / b).
    pub steps_per_epoch: usize,
    /// Training epochs of every run.
    pub epochs: usize,
    /// Independent runs per (epsilon, tau, eta) cell.
    pub runs: usize,
    /// The delta of every (epsilon, delta)-DP guarantee in the table.
    pub delta: f64,
    /// Accountant that calibrated the noise multipliers z: "rdp" or "pld".
    pub accountant: String,
    /// The eta grid each cell is tuned over (Section 5.2's 16 values by default).
    pub learning_rates: Vec<f64>,
    /// Percentiles (0, 10, 20, 40, 80, 100) of the training G_i, when finite.
    pub g_percentiles: Option<Vec<(f64, f64)>>,
    /// G_1, the smallest per-sample Lipschitz constant of the training set (Assumption 5.1);
    /// None when the G_i are not finite (the tanh network).
    pub g1: Option<f64>,
    /// G_n, the largest per-sample Lipschitz constant (Assumption 5.1); None as for `g1`.
    pub gn: Option<f64>,
    /// The clip-norm grid: the rows of Tables 4-7.
    pub taus: Vec<TauPoint>,
    /// One column per total privacy budget epsilon.
    pub columns: Vec<EpsColumn>,
    /// Non-private SGD (no clipping, no noise, same sampling), the tables' "Non-private
    /// baseline" row; None when not run.
    pub baseline: Option<Entry>,
    /// Delta(w*) and alpha(G_1) of Theorem 5.4; None when not computed.
    pub theory: Option<TheoryReport>,
}

/// The best eta by mean accuracy over runs (ties: the smaller eta), from one cell's records.
pub fn best_entry<'a>(records: impl Iterator<Item = &'a RunRecord>) -> Option<Entry> {
    let mut by_eta: BTreeMap<usize, Vec<&RunRecord>> = BTreeMap::new();
    for r in records {
        by_eta.entry(r.eta_idx).or_default().push(r);
    }
    let mut best: Option<Entry> = None;
    for rs in by_eta.values() {
        let k = rs.len();
        let mean = rs.iter().map(|r| r.acc_last).sum::<f64>() / k as f64;
        let sd = if k > 1 {
            (rs.iter().map(|r| (r.acc_last - mean).powi(2)).sum::<f64>() / (k - 1) as f64).sqrt()
        } else {
            0.0
        };
        if best.as_ref().is_none_or(|b| mean > b.mean) {
            best = Some(Entry {
                mean,
                sd,
                eta: rs[0].eta,
                runs: k,
                diverged: rs.iter().filter(|r| r.diverged).count(),
            });
        }
    }
    best
}

/// Fills the entries of `table` (whose columns carry epsilon and z) from the records.
pub fn fill(table: &mut StudyTable, records: &BTreeMap<String, RunRecord>, rnmm_eps: Option<f64>) {
    let n_tau = table.taus.len();
    for (e, col) in table.columns.iter_mut().enumerate() {
        col.entries = (0..n_tau)
            .map(|t| {
                best_entry(records.values().filter(|r| {
                    r.group == Group::Private && r.eps_idx == Some(e) && r.tau_idx == Some(t)
                }))
            })
            .collect();
        col.rnmm = rnmm_eps.and_then(|re| {
            let rs: Vec<&RunRecord> = records
                .values()
                .filter(|r| r.group == Group::Rnmm && r.eps_idx == Some(e))
                .collect();
            let entry = best_entry(rs.iter().copied())?;
            let mut taus: BTreeMap<usize, f64> = BTreeMap::new();
            for r in &rs {
                taus.insert(r.run, r.tau);
            }
            Some(RnmmEntry {
                entry,
                dpsgd_epsilon: col.epsilon - re,
                z: rs[0].z,
                tau_values: taus.into_values().collect(),
            })
        });
    }
    table.baseline = best_entry(records.values().filter(|r| r.group == Group::Baseline));
}

/// One recommendation line's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// Total privacy budget epsilon of the column this line is about.
    pub epsilon: f64,
    /// Index of the best tau in the grid.
    pub best: usize,
    /// The best clip norm tau itself (`taus[best].tau`).
    pub best_tau: f64,
    /// Mean test accuracy in [0, 1] at the best tau (best eta).
    pub best_mean: f64,
    /// Index of the best tau among tau <= G_1 (None when G_1 is unknown or no tau is <= G_1).
    pub best_le_g1: Option<usize>,
    /// Index of the best tau among tau > G_1 (None when G_1 is unknown or no tau exceeds it).
    pub best_gt_g1: Option<usize>,
    /// The paper's claim: the best tau <= G_1 is at least as good as every tau > G_1.
    pub claim_holds: Option<bool>,
    /// Accuracy points: best(tau <= G_1) - best(tau > G_1).
    pub gap_points: Option<f64>,
    /// The gap is smaller than the larger of the two standard deviations.
    pub within_noise: Option<bool>,
    /// Accuracy points: acc(tau = G_1) - acc(tau = G_n) (the 0th and 100th percentiles).
    pub g1_minus_gn_points: Option<f64>,
    /// Accuracy points: acc(smallest tau) - acc(largest tau).
    pub smallest_minus_largest_points: f64,
    /// The human-readable line for the Markdown output, summarizing the fields above.
    pub line: String,
}

/// The recommendation per epsilon (columns with missing entries are skipped).
pub fn recommend(table: &StudyTable) -> Vec<Recommendation> {
    let mut out = Vec::new();
    for col in &table.columns {
        let Some(entries) = col.entries.iter().cloned().collect::<Option<Vec<Entry>>>() else {
            continue;
        };
        if entries.is_empty() {
            continue;
        }
        let argmax = |idx: &mut dyn Iterator<Item = usize>| -> Option<usize> {
            let mut best: Option<usize> = None;
            for i in idx {
                if best.is_none_or(|b| entries[i].mean > entries[b].mean) {
                    best = Some(i);
                }
            }
            best
        };
        let best = argmax(&mut (0..entries.len())).expect("non-empty");
        let le = argmax(&mut (0..entries.len()).filter(|&i| table.taus[i].le_g1 == Some(true)));
        let gt = argmax(&mut (0..entries.len()).filter(|&i| table.taus[i].le_g1 == Some(false)));
        let pts = |a: usize, b: usize| 100.0 * (entries[a].mean - entries[b].mean);
        let (claim, gap, noise) = match (le, gt) {
            (Some(a), Some(b)) => (
                Some(entries[a].mean >= entries[b].mean),
                Some(pts(a, b)),
                Some((entries[a].mean - entries[b].mean).abs() < entries[a].sd.max(entries[b].sd)),
            ),
            _ => (None, None, None),
        };
        let pos = |p: f64| table.taus.iter().position(|t| t.pct == Some(p));
        let g1_gn = match (pos(0.0), pos(100.0)) {
            (Some(a), Some(b)) => Some(pts(a, b)),
            _ => None,
        };
        let last = entries.len() - 1;
        let sl = pts(0, last);
        let tp = &table.taus;
        let mut line = format!(
            "eps = {}: best tau = {} ({:.2} ± {:.2} %, eta = {})",
            col.epsilon,
            tp[best].label(),
            100.0 * entries[best].mean,
            100.0 * entries[best].sd,
            entries[best].eta
        );
        match (le, gt, claim, gap) {
            (Some(a), Some(b), Some(c), Some(g)) => {
                let _ = write!(
                    line,
                    "; best tau <= G_1 ({}) {:.2} % vs best tau > G_1 ({}) {:.2} %: claim {} by {} points{}",
                    tp[a].label(),
                    100.0 * entries[a].mean,
                    tp[b].label(),
                    100.0 * entries[b].mean,
                    if c { "HOLDS" } else { "FAILS" },
                    signed(g, 2),
                    if noise == Some(true) {
                        " (within one standard deviation)"
                    } else {
                        ""
                    }
                );
            }
            _ => {
                let _ = write!(
                    line,
                    "; smallest tau ({}) vs largest tau ({}): {} points",
                    tp[0].label(),
                    tp[last].label(),
                    signed(sl, 2)
                );
            }
        }
        if let Some(g) = g1_gn {
            let _ = write!(line, "; tau = G_1 vs tau = G_n: {} points", signed(g, 2));
        }
        out.push(Recommendation {
            epsilon: col.epsilon,
            best,
            best_tau: tp[best].tau,
            best_mean: entries[best].mean,
            best_le_g1: le,
            best_gt_g1: gt,
            claim_holds: claim,
            gap_points: gap,
            within_noise: noise,
            g1_minus_gn_points: g1_gn,
            smallest_minus_largest_points: sl,
            line,
        });
    }
    out
}

/// A cell "93.39 ± 0.71 % (η=6)"; a dagger marks an eta at either end of the grid (the optimum
/// may lie outside it).
pub fn cell(e: &Option<Entry>, grid: &[f64]) -> String {
    match e {
        Some(e) => {
            let div = if e.diverged > 0 {
                format!(", {} diverged", e.diverged)
            } else {
                String::new()
            };
            let lo = grid.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = grid.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let edge = if grid.len() > 1 && (e.eta == lo || e.eta == hi) {
                "†"
            } else {
                ""
            };
            format!(
                "{:.2} ± {:.2} % (η={}{edge}{div})",
                100.0 * e.mean,
                100.0 * e.sd,
                e.eta
            )
        }
        None => "—".into(),
    }
}

/// Tables 4-7 (and 3, when RNMM ran) with the recommendation lines, as Markdown.
pub fn markdown(t: &StudyTable, recs: &[Recommendation], figure: Option<&str>) -> String {
    let mut s = String::new();
    write_header(&mut s, t);
    write_grid(&mut s, t);
    if t.columns.iter().any(|c| c.rnmm.is_some()) {
        write_rnmm(&mut s, t, recs);
    }
    if let Some(th) = &t.theory {
        let _ = writeln!(
            s,
            "Theorem 5.4 quantities: Delta(w*) ≈ {:.4} (mean train loss after {} full-batch GD \
             steps, ||grad f|| = {:.2e}, train accuracy {:.2} %; an upper estimate); alpha(G_1) ≈ \
             {:.3} (upper estimate of the infimum; alpha(G_1) lies in [1, G_n/G_1 = {:.2}]); \
             term (B) of Eq. (5) at tau = G_1: (G_n/(G_1 alpha) - 1) Delta(w*) ≈ {:.4}.\n",
            th.delta_star,
            th.gd_iters,
            th.grad_norm,
            100.0 * th.train_accuracy,
            th.alpha_g1,
            th.gn_over_g1,
            th.term_b_g1
        );
    }
    if let Some(f) = figure {
        let _ = writeln!(s, "![{}]({f})\n", t.name);
    }
    let _ = writeln!(s, "Recommendations:\n");
    for r in recs {
        let _ = writeln!(s, "- {}", r.line);
    }
    s
}

/// The study's heading, its setting and the G_i percentiles.
fn write_header(s: &mut String, t: &StudyTable) {
    let _ = writeln!(s, "### {} ({})\n", t.name, t.model);
    let _ = writeln!(
        s,
        "n_train = {}, n_test = {}, d = {}, classes = {}; batch b = {}, {} steps/epoch, {} epochs, \
         {} runs; delta = {:e}, accountant = {}; eta tuned over {:?}; accuracy = test accuracy \
         averaged over the last epochs, mean ± sd over runs at the best eta.\n",
        t.n_train,
        t.n_test,
        t.d,
        t.classes,
        t.batch,
        t.steps_per_epoch,
        t.epochs,
        t.runs,
        t.delta,
        t.accountant,
        t.learning_rates
    );
    if let Some(p) = &t.g_percentiles {
        let parts: Vec<String> = p.iter().map(|(q, v)| format!("{q}th: {v:.3}")).collect();
        let _ = writeln!(s, "G_i percentiles (train): {}.\n", parts.join(", "));
    }
}

/// Tables 4-7: accuracy per (tau, epsilon), the non-private baseline, and the eta-grid note.
fn write_grid(s: &mut String, t: &StudyTable) {
    let _ = write!(s, "| {} | ", t.name);
    let letters = "abcdefghijklmnopqrstuvwxyz";
    let heads: Vec<String> = t
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            format!(
                "({}) ({}, {:e})-DP, z = {:.3}",
                letters.chars().nth(i % 26).unwrap_or('?'),
                c.epsilon,
                t.delta,
                c.z
            )
        })
        .collect();
    let _ = writeln!(s, "{} |", heads.join(" | "));
    let _ = writeln!(s, "|---|{}", "---|".repeat(t.columns.len()));
    for (i, tau) in t.taus.iter().enumerate() {
        let row: Vec<String> = t
            .columns
            .iter()
            .map(|c| cell(&c.entries[i], &t.learning_rates))
            .collect();
        let _ = writeln!(s, "| τ = {} | {} |", tau.label(), row.join(" | "));
    }
    if let Some(b) = &t.baseline {
        let pad = " |".repeat(t.columns.len().saturating_sub(1));
        let _ = writeln!(
            s,
            "| Non-private baseline | {} |{pad}",
            cell(&Some(b.clone()), &t.learning_rates)
        );
    }
    s.push('\n');
    let edge = t
        .columns
        .iter()
        .flat_map(|c| c.entries.iter().flatten())
        .chain(t.baseline.iter())
        .any(|e| {
            t.learning_rates.len() > 1
                && (t.learning_rates.iter().all(|&g| e.eta <= g)
                    || t.learning_rates.iter().all(|&g| e.eta >= g))
        });
    if edge {
        let _ = writeln!(
            s,
            "† the best η is at an end of the η grid; the optimum may lie outside it.\n"
        );
    }
}

/// Table 3's layout (RNMM's private G_1 against the oracle clip norm) and one line per epsilon.
fn write_rnmm(s: &mut String, t: &StudyTable, recs: &[Recommendation]) {
    let _ = writeln!(
        s,
        "Table 3 layout: private G_1 by RNMM vs. the best oracle clip norm (w/o RNMM).\n"
    );
    let mut head = String::from("| Dataset |");
    let mut row = format!("| {} |", t.name);
    for (c, rec) in t.columns.iter().zip(
        t.columns
            .iter()
            .map(|c| recs.iter().find(|r| r.epsilon == c.epsilon)),
    ) {
        let _ = write!(
            head,
            " ε={} w/ RNMM | ε={} w/o RNMM |",
            c.epsilon, c.epsilon
        );
        let with = c
            .rnmm
            .as_ref()
            .map(|r| cell(&Some(r.entry.clone()), &t.learning_rates))
            .unwrap_or_else(|| "—".into());
        let without = rec
            .map(|r| cell(&c.entries[r.best], &t.learning_rates))
            .unwrap_or_else(|| "—".into());
        let _ = write!(row, " {with} | {without} |");
    }
    let _ = writeln!(
        s,
        "{head}\n|---|{}\n{row}\n",
        "---|".repeat(2 * t.columns.len())
    );
    for c in &t.columns {
        if let Some(r) = &c.rnmm {
            let taus: Vec<String> = r.tau_values.iter().map(|v| fmt_tau(*v)).collect();
            let _ = writeln!(
                s,
                "- ε = {}: RNMM (ε = {:.1}) then DP-SGD at ε = {:.1} (z = {:.3}); private G_1 per run = [{}] vs oracle G_1 = {}.",
                c.epsilon,
                c.epsilon - r.dpsgd_epsilon,
                r.dpsgd_epsilon,
                r.z,
                taus.join(", "),
                t.g1.map_or("—".into(), fmt_tau)
            );
        }
    }
    s.push('\n');
}
