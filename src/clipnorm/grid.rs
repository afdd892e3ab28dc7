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

/// What a cell trains, as its results record names it (the serialized names are the results
/// file's and stay as they are).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    /// DP-SGD at a clip norm of the grid (Figure 1, Tables 4-7).
    Private,
    /// Non-private SGD: no clipping, no noise.
    Baseline,
    /// DP-SGD with tau from RNMM (Table 3).
    Rnmm,
    /// DP-SGD at the common default clip norm (tau = 1, Opacus's tutorials), when the
    /// grid does not hold it. Written "default" in the results file.
    #[serde(rename = "default")]
    DefaultTau,
    /// Adaptive quantile clipping (Andrew et al. 2021); `tau_idx` indexes the target quantiles.
    Adaptive,
    /// Adaptive quantile clipping whose count noise takes a fixed share of each step's privacy;
    /// `tau_idx` indexes the target quantiles.
    AdaptiveShare,
    /// Automatic clipping (Bu et al. 2023).
    Automatic,
}

impl Group {
    /// The group's name in cell keys and in the results file.
    pub fn as_str(&self) -> &'static str {
        match self {
            Group::Private => "private",
            Group::Baseline => "baseline",
            Group::Rnmm => "rnmm",
            Group::DefaultTau => "default",
            Group::Adaptive => "adaptive",
            Group::AdaptiveShare => "adaptive_share",
            Group::Automatic => "automatic",
        }
    }
}

/// What one cell trains, with exactly the indices its group has: an index into the study's
/// epsilons (`eps`) for every private group, and an index into the tau grid or the adaptive
/// target quantiles where the group has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellKind {
    /// DP-SGD at `epsilons[eps]` and the clip norm `taus[tau]` of the grid.
    Private {
        /// Index into the study's epsilons.
        eps: usize,
        /// Index into the tau grid.
        tau: usize,
    },
    /// Non-private SGD.
    Baseline,
    /// DP-SGD at `epsilons[eps]` with RNMM's tau.
    Rnmm {
        /// Index into the study's epsilons.
        eps: usize,
    },
    /// DP-SGD at `epsilons[eps]` and the common default clip norm.
    DefaultTau {
        /// Index into the study's epsilons.
        eps: usize,
    },
    /// Adaptive quantile clipping at `epsilons[eps]` with target quantile `quantile`.
    Adaptive {
        /// Index into the study's epsilons.
        eps: usize,
        /// Index into the adaptive target quantiles.
        quantile: usize,
    },
    /// Adaptive quantile clipping at `epsilons[eps]` with target quantile `quantile`, its count
    /// noise set by the configured count share.
    AdaptiveShare {
        /// Index into the study's epsilons.
        eps: usize,
        /// Index into the adaptive target quantiles.
        quantile: usize,
    },
    /// Automatic clipping at `epsilons[eps]`.
    Automatic {
        /// Index into the study's epsilons.
        eps: usize,
    },
}

impl CellKind {
    /// The group, as the results record names it.
    pub fn group(&self) -> Group {
        match self {
            CellKind::Private { .. } => Group::Private,
            CellKind::Baseline => Group::Baseline,
            CellKind::Rnmm { .. } => Group::Rnmm,
            CellKind::DefaultTau { .. } => Group::DefaultTau,
            CellKind::Adaptive { .. } => Group::Adaptive,
            CellKind::AdaptiveShare { .. } => Group::AdaptiveShare,
            CellKind::Automatic { .. } => Group::Automatic,
        }
    }

    /// The epsilon index (None for the baseline).
    pub fn eps_idx(&self) -> Option<usize> {
        match *self {
            CellKind::Baseline => None,
            CellKind::Private { eps, .. }
            | CellKind::Rnmm { eps }
            | CellKind::DefaultTau { eps }
            | CellKind::Adaptive { eps, .. }
            | CellKind::AdaptiveShare { eps, .. }
            | CellKind::Automatic { eps } => Some(eps),
        }
    }

    /// The tau-grid index (private cells) or the target-quantile index (adaptive cells), as
    /// the results record's `tau_idx`.
    pub fn tau_idx(&self) -> Option<usize> {
        match *self {
            CellKind::Private { tau, .. } => Some(tau),
            CellKind::Adaptive { quantile, .. } | CellKind::AdaptiveShare { quantile, .. } => {
                Some(quantile)
            }
            _ => None,
        }
    }
}

/// One training run of the study: (what, eta, run).
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// The group and its epsilon and tau indices.
    pub kind: CellKind,
    /// Index into the eta grid.
    pub eta_idx: usize,
    /// Run index (the replicate of every random stream).
    pub run: usize,
}

impl Cell {
    /// The cell id of the results file.
    pub fn key(&self) -> String {
        let opt = |o: Option<usize>| o.map_or("-".to_string(), |v| v.to_string());
        format!(
            "{}/eps{}/tau{}/eta{}/run{}",
            self.kind.group().as_str(),
            opt(self.kind.eps_idx()),
            opt(self.kind.tau_idx()),
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
    let mut push = |kind: CellKind| {
        for eta_idx in 0..n_eta {
            for run in 0..runs {
                out.push(Cell { kind, eta_idx, run });
            }
        }
    };
    for eps in 0..n_eps {
        for tau in 0..n_tau {
            push(CellKind::Private { eps, tau });
        }
        if rnmm {
            push(CellKind::Rnmm { eps });
        }
    }
    if baseline {
        push(CellKind::Baseline);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cell keys and the record's (group, eps_idx, tau_idx) keep the results file's format
    /// (pinned from the Option-field cells of commit 7fd9707), and the tau = 1 group is still
    /// written "default".
    #[test]
    fn cell_keys_and_group_names_keep_the_results_format() {
        let keys: Vec<String> = cells(2, 2, 1, 1, true, true)
            .iter()
            .map(Cell::key)
            .collect();
        assert_eq!(
            keys,
            [
                "private/eps0/tau0/eta0/run0",
                "private/eps0/tau1/eta0/run0",
                "rnmm/eps0/tau-/eta0/run0",
                "private/eps1/tau0/eta0/run0",
                "private/eps1/tau1/eta0/run0",
                "rnmm/eps1/tau-/eta0/run0",
                "baseline/eps-/tau-/eta0/run0",
            ]
        );
        let c = |kind| Cell {
            kind,
            eta_idx: 3,
            run: 2,
        };
        assert_eq!(
            c(CellKind::Adaptive {
                eps: 1,
                quantile: 4
            })
            .key(),
            "adaptive/eps1/tau4/eta3/run2"
        );
        assert_eq!(
            c(CellKind::AdaptiveShare {
                eps: 0,
                quantile: 1
            })
            .key(),
            "adaptive_share/eps0/tau1/eta3/run2"
        );
        assert_eq!(
            c(CellKind::DefaultTau { eps: 0 }).key(),
            "default/eps0/tau-/eta3/run2"
        );
        assert_eq!(
            c(CellKind::Automatic { eps: 5 }).key(),
            "automatic/eps5/tau-/eta3/run2"
        );
        for g in [
            Group::Private,
            Group::Baseline,
            Group::Rnmm,
            Group::DefaultTau,
            Group::Adaptive,
            Group::AdaptiveShare,
            Group::Automatic,
        ] {
            let json = serde_json::to_string(&g).unwrap();
            assert_eq!(json, format!("\"{}\"", g.as_str()));
            assert_eq!(serde_json::from_str::<Group>(&json).unwrap(), g);
        }
    }
}
