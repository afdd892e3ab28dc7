//! The methods of [`super::methods`] compared at each epsilon: one row per method (its best eta's
//! test accuracy and how its noise was set), the best deployable method per epsilon with its
//! margins, and the table and figure of the comparison.

use crate::format::signed;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::figure::{accuracy_label, baseline_series, empty_columns, epsilon_series};
use super::grid::{Group, fmt_tau};
use super::methods::{Method, MethodPlan, adaptive_count_share, fmt_share};
use super::record::RunRecord;
use super::table::{Entry, EpsColumn, StudyTable, best_entry, cell};
use crate::plot::{CategoryFigure, Corner, Palette, Series, Style};

/// One method at one epsilon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MethodCell {
    /// The best eta's accuracy (mean +- sd over runs); None when the method did not run or
    /// its cells are missing.
    pub entry: Option<Entry>,
    /// How the budget is spent, or why the method did not run.
    pub note: String,
}

/// One method's row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MethodRow {
    /// The method of this row.
    pub method: Method,
    /// One cell per total privacy budget epsilon, in the order of `MethodComparison::epsilons`.
    pub cells: Vec<MethodCell>,
}

/// The winner at one epsilon among the deployable methods (every row but the oracle).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Winner {
    /// Total privacy budget epsilon of the column compared.
    pub epsilon: f64,
    /// Row index of the winner.
    pub row: usize,
    /// Row index of the runner-up, if any.
    pub runner_up: Option<usize>,
    /// Accuracy points winner - runner-up.
    pub margin_points: Option<f64>,
    /// The margin is smaller than the larger of the two standard deviations.
    pub within_sd: Option<bool>,
    /// Accuracy points oracle - winner.
    pub oracle_gap_points: Option<f64>,
    /// The human-readable line for the Markdown output, summarizing the fields above.
    pub line: String,
}

/// The comparison table of one data set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MethodComparison {
    /// The study's short name.
    pub name: String,
    /// The trained model as shown in the heading ("softmax regression", ...).
    pub model: String,
    /// The total privacy budgets epsilon, one per column; every method spends exactly this.
    pub epsilons: Vec<f64>,
    /// The delta of every (epsilon, delta) guarantee compared.
    pub delta: f64,
    /// One row per method: paper, adaptive quantiles, automatic, default tau, oracle.
    pub rows: Vec<MethodRow>,
    /// The best deployable method per epsilon (columns with no entries are skipped).
    pub winners: Vec<Winner>,
}

/// Mean of the final adaptive clip norms over the runs of the selected eta.
fn mean_final_clip<'a>(rs: impl Iterator<Item = &'a RunRecord>, eta: f64) -> Option<f64> {
    let v: Vec<f64> = rs
        .filter(|r| r.eta == eta)
        .filter_map(|r| r.final_clip)
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Builds the comparison from the study's table (grid, RNMM) and the records.
pub fn compare(
    table: &StudyTable,
    plan: &MethodPlan,
    rnmm_eps: Option<f64>,
    records: &BTreeMap<String, RunRecord>,
) -> MethodComparison {
    let cx = Rows {
        table,
        plan,
        records,
    };
    let mut rows = vec![paper_row(table, rnmm_eps)];
    rows.extend(cx.adaptive_rows());
    rows.extend(cx.share_rows());
    if plan.spec.automatic {
        rows.push(cx.automatic_row());
    }
    rows.push(cx.default_row());
    rows.push(oracle_row(table));
    let cols = &table.columns;
    let winners = winners(&rows, &cols.iter().map(|c| c.epsilon).collect::<Vec<_>>());
    MethodComparison {
        name: table.name.clone(),
        model: table.model.clone(),
        epsilons: cols.iter().map(|c| c.epsilon).collect(),
        delta: table.delta,
        rows,
        winners,
    }
}

/// The paper's advice (RNMM's private G_1 as tau), one cell per epsilon.
fn paper_row(table: &StudyTable, rnmm_eps: Option<f64>) -> MethodRow {
    MethodRow {
        method: Method::Paper,
        cells: table
            .columns
            .iter()
            .map(|c| match (&c.rnmm, rnmm_eps) {
                (Some(r), Some(re)) => MethodCell {
                    entry: Some(r.entry.clone()),
                    note: format!(
                        "RNMM ε = {re} + DP-SGD ε = {:.1} (z = {:.3}); private G_1 = [{}]",
                        r.dpsgd_epsilon,
                        r.z,
                        r.tau_values
                            .iter()
                            .map(|v| fmt_tau(*v))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                },
                _ => MethodCell {
                    entry: None,
                    note: if table.g1.is_none() {
                        "n/a: the model has no finite per-sample Lipschitz constants G_i".into()
                    } else {
                        "n/a: [rnmm] not configured".into()
                    },
                },
            })
            .collect(),
    }
}

/// The oracle: the best grid tau per epsilon, chosen on the test accuracy (not deployable).
fn oracle_row(table: &StudyTable) -> MethodRow {
    MethodRow {
        method: Method::Oracle,
        cells: table
            .columns
            .iter()
            .map(|c| {
                let best = c
                    .entries
                    .iter()
                    .enumerate()
                    .filter_map(|(i, e)| e.as_ref().map(|e| (i, e)))
                    .fold(None::<(usize, &Entry)>, |b, (i, e)| match b {
                        Some((_, be)) if be.mean >= e.mean => b,
                        _ => Some((i, e)),
                    });
                MethodCell {
                    entry: best.map(|(_, e)| e.clone()),
                    note: best.map_or("—".into(), |(i, _)| {
                        format!("τ = {}, z = {:.3}", table.taus[i].label(), c.z)
                    }),
                }
            })
            .collect(),
    }
}

/// What the method rows that ran their own DP-SGD runs read: the study table, the plan and the
/// finished runs.
struct Rows<'a> {
    table: &'a StudyTable,
    plan: &'a MethodPlan,
    records: &'a BTreeMap<String, RunRecord>,
}

impl Rows<'_> {
    /// The runs of group `g` at epsilon `e` and grid slot `t`.
    fn of(&self, g: Group, e: usize, t: Option<usize>) -> impl Iterator<Item = &RunRecord> {
        self.records
            .values()
            .filter(move |r| r.group == g && r.eps_idx == Some(e) && r.tau_idx == t)
    }

    /// An adaptive-clipping cell: its best entry and the noise split (sigma_b, sigma_grad).
    fn adaptive_cell(
        &self,
        e: usize,
        qi: usize,
        g: Group,
        split: (f64, f64),
        share: String,
    ) -> MethodCell {
        let entry = best_entry(self.of(g, e, Some(qi)));
        let fc = entry
            .as_ref()
            .and_then(|en| mean_final_clip(self.of(g, e, Some(qi)), en.eta));
        let spec = &self.plan.spec;
        MethodCell {
            note: format!(
                "σ_grad = {:.3}, σ_b = {:.2} (z = {:.3}); {share}; C_0 = {}, η_C = {}{}",
                split.1,
                split.0,
                self.table.columns[e].z,
                spec.adaptive_initial,
                spec.adaptive_lr,
                fc.map_or(String::new(), |v| format!(", final C ≈ {}", fmt_tau(v)))
            ),
            entry,
        }
    }

    /// Andrew et al.'s adaptive quantile clipping with the paper's sigma_b, one row per quantile.
    fn adaptive_rows(&self) -> Vec<MethodRow> {
        let plan = self.plan;
        let row = |qi: usize, q: f64| MethodRow {
            method: Method::Adaptive { quantile: q },
            cells: self
                .table
                .columns
                .iter()
                .enumerate()
                .map(|(e, c)| {
                    let share = adaptive_count_share(c.z, plan.sigma_b);
                    match &plan.adaptive_sigma[e] {
                        Ok(sg) => self.adaptive_cell(
                            e,
                            qi,
                            Group::Adaptive,
                            (plan.sigma_b, *sg),
                            format!(
                                "the count takes z²/(2σ_b)² = {} of each step's privacy",
                                fmt_share(share)
                            ),
                        ),
                        Err(why) => MethodCell {
                            entry: None,
                            note: format!(
                                "n/a: {}; the count alone would take z²/(2σ_b)² = {:.0} % of \
                                 the step's privacy",
                                why.trim_start_matches("invalid parameter: "),
                                100.0 * share
                            ),
                        },
                    }
                })
                .collect(),
        };
        let quantiles = &plan.spec.adaptive_quantiles;
        quantiles
            .iter()
            .enumerate()
            .map(|(qi, &q)| row(qi, q))
            .collect()
    }

    /// Adaptive clipping with a fixed share of each step's privacy for the count, one row per
    /// quantile (none unless configured).
    fn share_rows(&self) -> Vec<MethodRow> {
        let Some(share) = self.plan.spec.adaptive_count_share else {
            return Vec::new();
        };
        let quantiles = &self.plan.spec.adaptive_quantiles;
        quantiles
            .iter()
            .enumerate()
            .map(|(qi, &q)| MethodRow {
                method: Method::AdaptiveShare { quantile: q, share },
                cells: (0..self.table.columns.len())
                    .map(|e| {
                        let txt = format!(
                            "the count takes {} of each step's privacy (σ_b = z/(2√{share}))",
                            fmt_share(share)
                        );
                        let split = self.plan.share_split[e];
                        self.adaptive_cell(e, qi, Group::AdaptiveShare, split, txt)
                    })
                    .collect(),
            })
            .collect()
    }

    /// The row of `method`, its cell at each epsilon column (index, column) from `cell`.
    fn row(&self, method: Method, cell: impl Fn(usize, &EpsColumn) -> MethodCell) -> MethodRow {
        let columns = self.table.columns.iter().enumerate();
        MethodRow {
            method,
            cells: columns.map(|(e, c)| cell(e, c)).collect(),
        }
    }

    /// Automatic clipping (normalized per-sample gradients, sensitivity 1).
    fn automatic_row(&self) -> MethodRow {
        let gamma = self.plan.spec.automatic_gamma;
        self.row(Method::Automatic { gamma }, |e, c| MethodCell {
            entry: best_entry(self.of(Group::Automatic, e, None)),
            note: format!("sensitivity 1, z = {:.3}", c.z),
        })
    }

    /// The default clip norm (the grid's entry when it is on the grid, else its own runs).
    fn default_row(&self) -> MethodRow {
        let tau = self.plan.spec.default_tau;
        self.row(Method::DefaultTau { tau }, |e, c| MethodCell {
            entry: match self.plan.default_in_grid {
                Some(t) => c.entries[t].clone(),
                None => best_entry(self.of(Group::DefaultTau, e, None)),
            },
            note: format!("z = {:.3}", c.z),
        })
    }
}

/// The best deployable method per epsilon (ties: the earlier row), its margin over the
/// runner-up and the oracle's margin over it.
pub fn winners(rows: &[MethodRow], epsilons: &[f64]) -> Vec<Winner> {
    let mut out = Vec::new();
    for (e, &epsilon) in epsilons.iter().enumerate() {
        let mut ranked: Vec<(usize, &Entry)> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.method != Method::Oracle)
            .filter_map(|(i, r)| r.cells[e].entry.as_ref().map(|en| (i, en)))
            .collect();
        // Stable sort: ties keep the row order.
        ranked.sort_by(|a, b| b.1.mean.total_cmp(&a.1.mean));
        let Some(&(w, we)) = ranked.first() else {
            continue;
        };
        let second = ranked.get(1).copied();
        let margin = second.map(|(_, se)| 100.0 * (we.mean - se.mean));
        let within = second.map(|(_, se)| (we.mean - se.mean) < we.sd.max(se.sd));
        let oracle = rows
            .iter()
            .find(|r| r.method == Method::Oracle)
            .and_then(|r| r.cells[e].entry.as_ref())
            .map(|o| 100.0 * (o.mean - we.mean));
        let mut line = format!(
            "ε = {epsilon}: winner {} ({:.2} ± {:.2} %)",
            rows[w].method.label(),
            100.0 * we.mean,
            100.0 * we.sd
        );
        if let (Some((s, se)), Some(m), Some(wsd)) = (second, margin, within) {
            let _ = write!(
                line,
                ", ahead of {} ({:.2} %) by {} points{}",
                rows[s].method.label(),
                100.0 * se.mean,
                signed(m, 2),
                if wsd {
                    " (within one standard deviation)"
                } else {
                    ""
                }
            );
        }
        if let Some(o) = oracle {
            let _ = write!(line, "; the oracle τ is {} points from it", signed(o, 2));
        }
        out.push(Winner {
            epsilon,
            row: w,
            runner_up: second.map(|(s, _)| s),
            margin_points: margin,
            within_sd: within,
            oracle_gap_points: oracle,
            line,
        });
    }
    out
}

/// The comparison as Markdown: one table (method x epsilon, the winner in bold), the privacy
/// split of every cell, and the winner lines.
pub fn markdown(m: &MethodComparison, lrs: &[f64], figure: Option<&str>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "### {}: clip-norm methods head to head ({})\n",
        m.name, m.model
    );
    let _ = writeln!(
        s,
        "Every method spends the same total (ε, δ = {:e}); η tuned over the same grid for each; \
         mean ± sd over runs at the best η. **Bold**: the best method other than the oracle \
         (the oracle is the best fixed τ chosen in hindsight, not a deployable method).\n",
        m.delta
    );
    let _ = write!(s, "| method |");
    for e in &m.epsilons {
        let _ = write!(s, " ε = {e} |");
    }
    let _ = writeln!(s, "\n|---|{}", "---|".repeat(m.epsilons.len()));
    for (i, r) in m.rows.iter().enumerate() {
        let _ = write!(s, "| {} |", r.method.label());
        for (e, c) in r.cells.iter().enumerate() {
            let text = match &c.entry {
                Some(_) => cell(&c.entry, lrs),
                None => "n/a".into(),
            };
            if m.winners
                .iter()
                .any(|w| w.row == i && m.epsilons[e] == w.epsilon)
            {
                let _ = write!(s, " **{text}** |");
            } else {
                let _ = write!(s, " {text} |");
            }
        }
        s.push('\n');
    }
    s.push('\n');
    let _ = writeln!(s, "How each cell spends the budget:\n");
    for r in &m.rows {
        let notes: Vec<String> = m
            .epsilons
            .iter()
            .zip(&r.cells)
            .map(|(e, c)| format!("ε = {e}: {}", c.note))
            .collect();
        let _ = writeln!(s, "- {}: {}", r.method.label(), notes.join("; "));
    }
    s.push('\n');
    if let Some(f) = figure {
        let _ = writeln!(s, "![{} methods]({f})\n", m.name);
    }
    let _ = writeln!(s, "Winners:\n");
    for w in &m.winners {
        let _ = writeln!(s, "- {}", w.line);
    }
    s
}

/// The comparison as a figure: one category per method, mean ± sd per epsilon.
pub fn figure(m: &MethodComparison, baseline: Option<f64>) -> CategoryFigure {
    let k = m.rows.len();
    let mut series: Vec<Series> = m
        .epsilons
        .iter()
        .enumerate()
        .map(|(ei, &eps)| {
            let entries = m.rows.iter().map(|r| r.cells[ei].entry.as_ref());
            epsilon_series(ei, m.epsilons.len(), eps, entries, Style::Points)
        })
        .collect();
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for &(l, h) in series.iter().flat_map(|s| &s.errors) {
        lo = lo.min(l);
        hi = hi.max(h);
    }
    if let Some(b) = baseline {
        let line = baseline_series(b, k);
        let y = line.points[0].1;
        lo = lo.min(y);
        hi = hi.max(y);
        series.push(line);
    }
    if !lo.is_finite() {
        (lo, hi) = (0.0, 100.0);
    }
    // 8% of the span each side (kept above 100 %, so the frame does not cut bars or markers
    // at 100 %); the legend finds a free corner or goes below the plot.
    let span = (hi - lo).max(1.0);
    let runs = m
        .rows
        .iter()
        .flat_map(|r| &r.cells)
        .find_map(|c| c.entry.as_ref().map(|e| e.runs))
        .unwrap_or(0);
    // One column of entries per epsilon over the categories (methods), for the "n/a" notes.
    let per_eps: Vec<Vec<Option<Entry>>> = (0..m.epsilons.len())
        .map(|ei| m.rows.iter().map(|r| r.cells[ei].entry.clone()).collect())
        .collect();
    CategoryFigure {
        title: format!(
            "{} ({}): clip-norm methods at equal (ε, δ)",
            m.name, m.model
        ),
        x_label: "method".into(),
        y_label: accuracy_label(runs),
        // A method that could not run at any epsilon (e.g. adaptive clipping where 2 sigma_b <= z)
        // says so under its empty column.
        categories: m
            .rows
            .iter()
            .map(|r| {
                if r.cells.iter().all(|c| c.entry.is_none()) {
                    format!("{} (n/a)", r.method.short_label())
                } else {
                    r.method.short_label()
                }
            })
            .collect(),
        y_range: ((lo - 0.08 * span).max(0.0), hi + 0.08 * span),
        guides: vec![(k as f64 - 1.5, "private | oracle (not private)".to_string())],
        series,
        palette: Palette::Tableau,
        legend: Corner::LowerLeft,
        notes: empty_columns(k, per_eps.iter().map(Vec::as_slice)),
        y_label_max: Some(100.0),
        // 160 px per method once the 6 default methods no longer fit in 900 px.
        size: ((160 * k as u32).max(900), 560),
    }
}
