//! The clip-norm grid of Section 5.2 and the cells of a study.

use serde::{Deserialize, Serialize};

use super::config::{BelowMode, ClipSpec};
use crate::stats::quantile_sorted;

/// One clip norm of the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TauPoint {
    /// The value.
    pub tau: f64,
    /// The percentile of the G_i it is, if it is one.
    pub pct: Option<f64>,
    /// tau <= G_1 (None when the G_i are unknown).
    pub le_g1: Option<bool>,
}

impl TauPoint {
    /// The row label of Tables 4-7: "0.1", "7.12 (0th pctl.)".
    pub fn label(&self) -> String {
        let v = fmt_tau(self.tau);
        match self.pct {
            Some(p) => format!("{v} ({}{} pctl.)", fmt_num(p), ordinal_suffix(p)),
            None => v,
        }
    }
    /// A short axis label: "0.1", "6.61 (0%)", "66.0 (100%)".
    pub fn short_label(&self) -> String {
        match self.pct {
            Some(p) => format!("{} ({}%)", fmt_tau(self.tau), fmt_num(p)),
            None => fmt_tau(self.tau),
        }
    }
}

fn ordinal_suffix(p: f64) -> &'static str {
    let n = p.round() as i64;
    if p.fract() != 0.0 {
        return "th";
    }
    match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// Clip norms print with 3 significant digits (the tables' "17.7", "0.1").
pub fn fmt_tau(t: f64) -> String {
    if t >= 100.0 || t.fract() == 0.0 {
        format!("{t:.0}")
    } else if t >= 10.0 {
        format!("{t:.1}")
    } else if t >= 1.0 {
        format!("{t:.2}")
    } else if t >= 0.1 {
        let s = format!("{t:.3}");
        s.trim_end_matches('0').to_string()
    } else {
        // Three significant digits below 0.1 (0.00612, 0.0006): no ".00" stripping here.
        let prec = (2.0 - t.log10().floor()).clamp(3.0, 17.0) as usize;
        let s = format!("{t:.prec$}");
        return s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    .replace(".00", "")
}

/// The grid: fixed `values` if given (Appendix C), else the `below_g1` values that lie below
/// G_1 and the percentiles of the sorted G_i; ascending in tau.
pub fn tau_grid(g_sorted: Option<&[f64]>, clip: &ClipSpec) -> Vec<TauPoint> {
    let g1 = g_sorted.map(|g| g[0]);
    let le = |t: f64| g1.map(|g| t <= g);
    let mut pts: Vec<TauPoint> = if let Some(v) = &clip.values {
        v.iter()
            .map(|&t| TauPoint {
                tau: t,
                pct: None,
                le_g1: le(t),
            })
            .collect()
    } else if let Some(g) = g_sorted {
        let g1 = g[0];
        let below = clip.below_g1.iter().filter_map(|&v| {
            let t = match clip.below_mode {
                BelowMode::Absolute => v,
                BelowMode::Offset => g1 - v,
            };
            (t > 0.0 && t < g1).then_some(TauPoint {
                tau: t,
                pct: None,
                le_g1: Some(true),
            })
        });
        let pct = clip.percentiles.iter().map(|&p| {
            let t = quantile_sorted(g, p / 100.0);
            TauPoint {
                tau: t,
                pct: Some(p),
                le_g1: Some(t <= g1),
            }
        });
        below.chain(pct).collect()
    } else {
        Vec::new()
    };
    pts.sort_by(|a, b| a.tau.total_cmp(&b.tau));
    pts
}

/// What a cell trains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    /// DP-SGD at a clip norm of the grid (Figure 1, Tables 4-7).
    Private,
    /// Non-private SGD: no clipping, no noise.
    Baseline,
    /// DP-SGD with tau from RNMM (Table 3).
    Rnmm,
    /// DP-SGD at the common default clip norm (issue 16), when the grid does not hold it.
    Default,
    /// Adaptive quantile clipping (Andrew et al. 2021); `tau_idx` indexes the target quantiles.
    Adaptive,
    /// Automatic clipping (Bu et al. 2023).
    Automatic,
}

/// One training run of the study: (group, epsilon, tau, eta, run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub group: Group,
    /// Index into the study's epsilons (None for the baseline).
    pub eps_idx: Option<usize>,
    /// Index into the tau grid (Private only).
    pub tau_idx: Option<usize>,
    /// Index into the eta grid.
    pub eta_idx: usize,
    /// Run index (the replicate of every random stream).
    pub run: usize,
}

impl Cell {
    /// The cell id of the results file.
    pub fn key(&self) -> String {
        let g = match self.group {
            Group::Private => "private",
            Group::Baseline => "baseline",
            Group::Rnmm => "rnmm",
            Group::Default => "default",
            Group::Adaptive => "adaptive",
            Group::Automatic => "automatic",
        };
        let opt = |o: Option<usize>| o.map_or("-".to_string(), |v| v.to_string());
        format!(
            "{g}/eps{}/tau{}/eta{}/run{}",
            opt(self.eps_idx),
            opt(self.tau_idx),
            self.eta_idx,
            self.run
        )
    }
}

/// Every cell, in a fixed order.
pub fn cells(
    n_eps: usize,
    n_tau: usize,
    n_eta: usize,
    runs: usize,
    baseline: bool,
    rnmm: bool,
) -> Vec<Cell> {
    let mut out = Vec::new();
    for e in 0..n_eps {
        for t in 0..n_tau {
            for k in 0..n_eta {
                for r in 0..runs {
                    out.push(Cell {
                        group: Group::Private,
                        eps_idx: Some(e),
                        tau_idx: Some(t),
                        eta_idx: k,
                        run: r,
                    });
                }
            }
        }
        if rnmm {
            for k in 0..n_eta {
                for r in 0..runs {
                    out.push(Cell {
                        group: Group::Rnmm,
                        eps_idx: Some(e),
                        tau_idx: None,
                        eta_idx: k,
                        run: r,
                    });
                }
            }
        }
    }
    if baseline {
        for k in 0..n_eta {
            for r in 0..runs {
                out.push(Cell {
                    group: Group::Baseline,
                    eps_idx: None,
                    tau_idx: None,
                    eta_idx: k,
                    run: r,
                });
            }
        }
    }
    out
}
