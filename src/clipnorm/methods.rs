//! The paper's clip-norm advice head to head with what practitioners use instead:
//! adaptive quantile clipping (Andrew et al. 2021), automatic clipping (Bu et al. 2023), the
//! common default tau = 1, and the best fixed tau in hindsight (the oracle). Every method spends
//! the same total (epsilon, delta):
//!
//! - fixed tau (default, oracle) and automatic clipping: T Poisson-subsampled Gaussian steps
//!   with noise multiplier z calibrated to (epsilon, delta) (automatic clipping's sensitivity
//!   is 1, so its noise sd on the sum is z);
//! - paper: RNMM's pure eps_RNMM, then DP-SGD calibrated to (epsilon - eps_RNMM, delta) (basic
//!   composition);
//! - adaptive: each step releases the clipped sum with noise sd sigma_grad C_t and the centred
//!   unclipped count with noise sd sigma_b; Andrew et al.'s Theorem 1 makes this one Gaussian
//!   mechanism with noise multiplier z, z^-2 = sigma_grad^-2 + (2 sigma_b)^-2, so z is
//!   calibrated to (epsilon, delta) and sigma_grad = (z^-2 - (2 sigma_b)^-2)^(-1/2)
//!   ([`adaptive_noise_split`]). The count takes the share z^2 / (2 sigma_b)^2 of the step's
//!   privacy ([`adaptive_count_share`]); a second arm fixes that share instead of sigma_b
//!   ([`count_noise_for_share`]).
//!
//! eta is tuned over the same grid for every method, with the same runs and common random
//! numbers (batches and gradient noise of run r are shared by all methods).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::config::MethodsSpec;
use super::figure::{accuracy_label, baseline_series, empty_columns, epsilon_series};
use super::grid::{Cell, CellKind, Group, TauPoint, fmt_tau};
use super::record::RunRecord;
use super::table::{Entry, StudyTable, best_entry, cell};
use super::train::{Adaptive, Rule};
use crate::error::{Error, Result};
use crate::plot::{CategoryFigure, Corner, Palette, Series, Style};

/// Andrew et al. (2021), Theorem 1, solved for the gradient noise: the noise multiplier
/// sigma_grad of the clipped sum such that, with count noise sigma_b, one step is a Gaussian
/// mechanism with noise multiplier z: sigma_grad = (z^-2 - (2 sigma_b)^-2)^(-1/2). Exists only
/// when 2 sigma_b > z (the count alone must not already spend the step's budget).
pub fn adaptive_noise_split(z: f64, sigma_b: f64) -> Result<f64> {
    if !(z > 0.0 && z.is_finite() && sigma_b > 0.0 && sigma_b.is_finite()) {
        return Err(Error::param(format!(
            "adaptive clipping needs a finite noise multiplier z > 0 and count noise sigma_b > 0, \
             but z = {z}, sigma_b = {sigma_b}"
        )));
    }
    let r = z.powi(-2) - (2.0 * sigma_b).powi(-2);
    if r <= 0.0 {
        return Err(Error::param(format!(
            "adaptive clipping: count noise sigma_b = {sigma_b:.4} is too small for noise \
             multiplier z = {z:.4}; the split sigma_grad = (z^-2 - (2 sigma_b)^-2)^(-1/2) needs \
             2 sigma_b > z (use a larger batch or count noise)"
        )));
    }
    Ok(r.powf(-0.5))
}

/// The share of one adaptive step's privacy that the released count takes (Andrew et al. 2021,
/// Theorem 1): the step is one Gaussian mechanism with z^-2 = sigma_grad^-2 + (2 sigma_b)^-2,
/// i.e. the two releases' squared Gaussian-DP parameters mu^2 = z^-2 add, and the count's part
/// is (2 sigma_b)^-2 / z^-2 = z^2 / (2 sigma_b)^2. A value >= 1 means the count alone spends
/// the step's budget and [`adaptive_noise_split`] has no solution.
pub fn adaptive_count_share(z: f64, sigma_b: f64) -> f64 {
    (z / (2.0 * sigma_b)).powi(2)
}

/// The count noise that gives the count the share `share` in (0, 1) of the step's privacy
/// ([`adaptive_count_share`] solved for sigma_b): (2 sigma_b)^-2 = share z^-2, so
/// sigma_b = z / (2 sqrt(share)); the gradient then gets sigma_grad = z / sqrt(1 - share)
/// from [`adaptive_noise_split`].
pub fn count_noise_for_share(z: f64, share: f64) -> Result<f64> {
    if !(z > 0.0 && z.is_finite() && share > 0.0 && share < 1.0) {
        return Err(Error::param(format!(
            "adaptive clipping's count share needs z > 0 finite and a share in (0, 1), but \
             z = {z}, share = {share}"
        )));
    }
    Ok(z / (2.0 * share.sqrt()))
}

/// A share in (0, 1) as a percentage: one decimal from 1 %, two below ("73.0 %", "0.22 %").
pub fn fmt_share(share: f64) -> String {
    let p = 100.0 * share;
    if p >= 1.0 {
        format!("{p:.1} %")
    } else {
        format!("{p:.2} %")
    }
}

/// The inverse of [`adaptive_noise_split`]: the single noise multiplier z with
/// z^-2 = sigma_grad^-2 + (2 sigma_b)^-2 that one adaptive step is equivalent to.
pub fn adaptive_effective_z(sigma_grad: f64, sigma_b: f64) -> f64 {
    (sigma_grad.powi(-2) + (2.0 * sigma_b).powi(-2)).powf(-0.5)
}

/// A compared method.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Method {
    /// tau = private G_1 by RNMM (Remark 5.6, Table 3).
    Paper,
    /// Adaptive quantile clipping at target quantile gamma.
    Adaptive {
        /// Target fraction gamma in (0, 1) of per-sample gradients left unclipped.
        quantile: f64,
    },
    /// Adaptive quantile clipping whose count noise takes the share `share` of each step's
    /// privacy ([`count_noise_for_share`]).
    AdaptiveShare {
        /// Target fraction gamma in (0, 1) of per-sample gradients left unclipped.
        quantile: f64,
        /// The count's share in (0, 1) of each step's privacy.
        share: f64,
    },
    /// Automatic clipping g / (||g|| + gamma).
    Automatic {
        /// Stability constant gamma > 0 in g / (||g|| + gamma).
        gamma: f64,
    },
    /// A fixed default tau.
    DefaultTau {
        /// The fixed clip norm tau (1 in Opacus's tutorials).
        tau: f64,
    },
    /// The best fixed tau of the grid in hindsight.
    Oracle,
}

impl Method {
    /// The table's row label.
    pub fn label(&self) -> String {
        match self {
            Method::Paper => "paper: τ = private G_1 (RNMM)".into(),
            Method::Adaptive { quantile } => format!("adaptive quantile, γ = {quantile}"),
            Method::AdaptiveShare { quantile, share } => format!(
                "adaptive quantile, γ = {quantile}, count {}",
                fmt_share(*share)
            ),
            Method::Automatic { gamma } => format!("automatic, g/(‖g‖+{gamma})"),
            Method::DefaultTau { tau } => format!("default τ = {}", fmt_tau(*tau)),
            Method::Oracle => "oracle: best fixed τ (hindsight)".into(),
        }
    }
    /// A short label for the figure's axis.
    pub fn short_label(&self) -> String {
        match self {
            Method::Paper => "paper (RNMM G_1)".into(),
            Method::Adaptive { quantile } => format!("adaptive γ={quantile}"),
            Method::AdaptiveShare { quantile, share } => {
                format!("adaptive γ={quantile}, {} %", (1e6 * share).round() / 1e4)
            }
            Method::Automatic { .. } => "automatic".into(),
            Method::DefaultTau { tau } => format!("τ = {}", fmt_tau(*tau)),
            Method::Oracle => "oracle τ".into(),
        }
    }
}

/// What the methods other than the grid and RNMM train, per epsilon.
#[derive(Debug, Clone)]
pub struct MethodPlan {
    /// The `[methods]` settings of the study's config.
    pub spec: MethodsSpec,
    /// Count noise sigma_b = adaptive_count_noise x b.
    pub sigma_b: f64,
    /// Per epsilon: the adaptive gradient noise multiplier sigma_grad, or why the split does
    /// not exist.
    pub adaptive_sigma: Vec<std::result::Result<f64, String>>,
    /// Per epsilon, the count-share arm's (sigma_b, sigma_grad) = (z / (2 sqrt(s)),
    /// z / sqrt(1 - s)); empty without `adaptive_count_share`.
    pub share_split: Vec<(f64, f64)>,
    /// The grid index of the default tau, when the grid holds it (its cells are reused).
    pub default_in_grid: Option<usize>,
}

impl MethodPlan {
    /// The plan for expected batch `batch`, noise multipliers `zs` (one per epsilon) and the
    /// clip-norm grid.
    pub fn new(spec: &MethodsSpec, batch: f64, zs: &[f64], taus: &[TauPoint]) -> Self {
        let sigma_b = spec.adaptive_count_noise * batch;
        MethodPlan {
            spec: spec.clone(),
            sigma_b,
            adaptive_sigma: zs
                .iter()
                .map(|&z| adaptive_noise_split(z, sigma_b).map_err(|e| e.to_string()))
                .collect(),
            share_split: spec.adaptive_count_share.map_or_else(Vec::new, |share| {
                zs.iter()
                    .map(|&z| {
                        let sb = count_noise_for_share(z, share).expect("share checked in (0, 1)");
                        (
                            sb,
                            adaptive_noise_split(z, sb).expect("share < 1 leaves a split"),
                        )
                    })
                    .collect()
            }),
            default_in_grid: taus.iter().position(|t| t.tau == spec.default_tau),
        }
    }

    /// The cells to train, in a fixed order.
    pub fn cells(&self, n_eta: usize, runs: usize) -> Vec<Cell> {
        let mut out = Vec::new();
        let mut push = |kind: CellKind| {
            for eta_idx in 0..n_eta {
                for run in 0..runs {
                    out.push(Cell { kind, eta_idx, run });
                }
            }
        };
        for (eps, sg) in self.adaptive_sigma.iter().enumerate() {
            if self.default_in_grid.is_none() {
                push(CellKind::DefaultTau { eps });
            }
            if sg.is_ok() {
                for quantile in 0..self.spec.adaptive_quantiles.len() {
                    push(CellKind::Adaptive { eps, quantile });
                }
            }
            if !self.share_split.is_empty() {
                for quantile in 0..self.spec.adaptive_quantiles.len() {
                    push(CellKind::AdaptiveShare { eps, quantile });
                }
            }
            if self.spec.automatic {
                push(CellKind::Automatic { eps });
            }
        }
        out
    }

    /// The rule of an adaptive or automatic cell at noise multiplier `z` (None for a cell of
    /// another group).
    pub fn rule(&self, c: &Cell, z: f64) -> Option<Rule> {
        let adaptive = |quantile: usize, (sigma_b, sigma_grad): (f64, f64)| {
            Some(Rule::Adaptive(Adaptive {
                quantile: self.spec.adaptive_quantiles[quantile],
                lr: self.spec.adaptive_lr,
                initial: self.spec.adaptive_initial,
                sigma_b,
                sigma_grad,
            }))
        };
        match c.kind {
            CellKind::Adaptive { eps, quantile } => adaptive(
                quantile,
                (
                    self.sigma_b,
                    *self.adaptive_sigma[eps].as_ref().expect("split exists"),
                ),
            ),
            CellKind::AdaptiveShare { eps, quantile } => adaptive(quantile, self.share_split[eps]),
            CellKind::Automatic { .. } => Some(Rule::Automatic {
                gamma: self.spec.automatic_gamma,
                z,
            }),
            _ => None,
        }
    }
}

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
    let cols = &table.columns;
    let of = |g: Group, e: usize, t: Option<usize>| {
        records
            .values()
            .filter(move |r| r.group == g && r.eps_idx == Some(e) && r.tau_idx == t)
    };
    let mut rows = Vec::new();
    rows.push(MethodRow {
        method: Method::Paper,
        cells: cols
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
    });
    let adaptive_note = |e: usize, qi: usize, g: Group, split: (f64, f64), share: String| {
        let entry = best_entry(of(g, e, Some(qi)));
        let fc = entry
            .as_ref()
            .and_then(|en| mean_final_clip(of(g, e, Some(qi)), en.eta));
        MethodCell {
            note: format!(
                "σ_grad = {:.3}, σ_b = {:.2} (z = {:.3}); {share}; C_0 = {}, η_C = {}{}",
                split.1,
                split.0,
                cols[e].z,
                plan.spec.adaptive_initial,
                plan.spec.adaptive_lr,
                fc.map_or(String::new(), |v| format!(", final C ≈ {}", fmt_tau(v)))
            ),
            entry,
        }
    };
    for (qi, &q) in plan.spec.adaptive_quantiles.iter().enumerate() {
        rows.push(MethodRow {
            method: Method::Adaptive { quantile: q },
            cells: cols
                .iter()
                .enumerate()
                .map(|(e, c)| {
                    let share = adaptive_count_share(c.z, plan.sigma_b);
                    match &plan.adaptive_sigma[e] {
                        Ok(sg) => adaptive_note(
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
        });
    }
    if let Some(share) = plan.spec.adaptive_count_share {
        for (qi, &q) in plan.spec.adaptive_quantiles.iter().enumerate() {
            rows.push(MethodRow {
                method: Method::AdaptiveShare { quantile: q, share },
                cells: (0..cols.len())
                    .map(|e| {
                        let txt = format!(
                            "the count takes {} of each step's privacy (σ_b = z/(2√{share}))",
                            fmt_share(share)
                        );
                        adaptive_note(e, qi, Group::AdaptiveShare, plan.share_split[e], txt)
                    })
                    .collect(),
            });
        }
    }
    if plan.spec.automatic {
        rows.push(MethodRow {
            method: Method::Automatic {
                gamma: plan.spec.automatic_gamma,
            },
            cells: cols
                .iter()
                .enumerate()
                .map(|(e, c)| MethodCell {
                    entry: best_entry(of(Group::Automatic, e, None)),
                    note: format!("sensitivity 1, z = {:.3}", c.z),
                })
                .collect(),
        });
    }
    rows.push(MethodRow {
        method: Method::DefaultTau {
            tau: plan.spec.default_tau,
        },
        cells: cols
            .iter()
            .enumerate()
            .map(|(e, c)| MethodCell {
                entry: match plan.default_in_grid {
                    Some(t) => c.entries[t].clone(),
                    None => best_entry(of(Group::DefaultTau, e, None)),
                },
                note: format!("z = {:.3}", c.z),
            })
            .collect(),
    });
    rows.push(MethodRow {
        method: Method::Oracle,
        cells: cols
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
    });
    let winners = winners(
        &rows,
        &table.columns.iter().map(|c| c.epsilon).collect::<Vec<_>>(),
    );
    MethodComparison {
        name: table.name.clone(),
        model: table.model.clone(),
        epsilons: cols.iter().map(|c| c.epsilon).collect(),
        delta: table.delta,
        rows,
        winners,
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
                ", ahead of {} ({:.2} %) by {m:+.2} points{}",
                rows[s].method.label(),
                100.0 * se.mean,
                if wsd {
                    " (within one standard deviation)"
                } else {
                    ""
                }
            );
        }
        if let Some(o) = oracle {
            let _ = write!(line, "; the oracle τ is {o:+.2} points from it");
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
    // Room below the data for the legend (lower left), 8% above (kept above 100 %, so the
    // frame does not cut bars at 100 %).
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
        y_range: ((lo - 0.45 * span).max(0.0), hi + 0.08 * span),
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
