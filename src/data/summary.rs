//! The spread of the per-sample Lipschitz constants G_i of a data set for a given loss.
//!
//! Section 5's sweep uses the percentiles 0, 10, 20, 40, 80 and 100 of the G_i as clip norms
//! (Tables 4 to 7; G_1 and G_n are the 0th and 100th); Section 6 needs the k-th moment
//! G_Z^k = (1/n) sum_i G_i^k (Assumption 6.1 on the empirical distribution) and the tail index,
//! estimated here with Hill's estimator.

use serde::Serialize;

use super::Dataset;
use crate::error::{Error, Result};
use crate::stats::quantile_sorted;

/// The percentiles of Tables 4 to 7.
pub const TABLE_PERCENTILES: [f64; 6] = [0.0, 10.0, 20.0, 40.0, 80.0, 100.0];

/// One percentile of the G_i.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentile {
    /// The percentile p, in [0, 100] (0 is G_1, 100 is G_n).
    pub pct: f64,
    /// The G_i value there (linear interpolation between order statistics).
    pub value: f64,
}

/// Hill's estimate of the tail index from the top `top` order statistics.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HillEstimate {
    /// The estimated tail index alpha_hat: P(G > t) ~ t^(-alpha), so moments of order below
    /// alpha are finite.
    pub alpha: f64,
    /// Number of upper order statistics used.
    pub top: usize,
}

/// The summary printed by `dpsgd-lab data describe`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LipschitzSummary {
    /// The loss whose G(x, y) is summarized.
    pub loss: String,
    /// Number of samples n.
    pub n: usize,
    /// Feature dimension d.
    pub d: usize,
    /// Number of classes, when the labels are class indices.
    pub classes: Option<usize>,
    /// Samples per class, when the labels are class indices.
    pub class_counts: Option<Vec<usize>>,
    /// min_i G_i (= the 0th percentile, G_1 in the paper).
    pub min: f64,
    /// The Table 4-7 percentiles.
    pub percentiles: Vec<Percentile>,
    /// max_i G_i (= the 100th percentile, G_n in the paper).
    pub max: f64,
    /// Mean of the G_i: (1/n) sum_i G_i.
    pub mean: f64,
    /// The moment order k of Assumption 6.1 that `mean_g_pow_k` and `g_z` use.
    pub k: f64,
    /// G_Z^k = (1/n) sum_i G_i^k.
    pub mean_g_pow_k: f64,
    /// G_Z = (G_Z^k)^(1/k), the G of Assumption 6.1 for the empirical distribution.
    pub g_z: f64,
    /// Hill's tail-index estimate (None when n is too small or the top values are all equal).
    pub hill: Option<HillEstimate>,
}

/// The default number of upper order statistics for Hill's estimator: max(10, n / 100),
/// capped at n - 1. For an exact Pareto tail the estimator's relative standard error is
/// 1 / sqrt(top), so 3.2% at n = 10^5; for tails that are only asymptotically Pareto (Lomax,
/// Student-t norms) a smaller fraction keeps the second-order bias down.
pub fn default_hill_top(n: usize) -> usize {
    (n / 100).max(10).min(n.saturating_sub(1))
}

/// Hill's estimator alpha_hat = [ (1/m) sum_{i<m} ln(X_(n-i) / X_(n-m)) ]^(-1) on the top m
/// order statistics of positive values. `None` when m < 2, m >= n, a value is not positive, or
/// the top values are all equal (no tail to estimate).
pub fn hill(values: &[f64], top: usize) -> Option<HillEstimate> {
    let n = values.len();
    if top < 2 || top >= n || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let mut v = values.to_vec();
    // Partial selection: the (n - top - 1)th smallest in place, then the top above it.
    let (_, threshold, upper) = v.select_nth_unstable_by(n - top - 1, |a, b| a.total_cmp(b));
    let ln_t = threshold.ln();
    let mean_excess = upper.iter().map(|x| x.ln() - ln_t).sum::<f64>() / top as f64;
    (mean_excess > 0.0).then(|| HillEstimate {
        alpha: 1.0 / mean_excess,
        top,
    })
}

impl LipschitzSummary {
    /// Summarizes given G_i values.
    pub fn from_values(loss: &str, data: &Dataset, g: &[f64], k: f64) -> Result<Self> {
        if k.is_nan() || k <= 0.0 || k.is_infinite() {
            return Err(Error::param(format!(
                "summary moment order k must be positive and finite, but is {k}"
            )));
        }
        if let Some(i) = g.iter().position(|v| !v.is_finite()) {
            return Err(Error::Numerical(format!(
                "G_{i} = {} for the {loss} loss (the feature norm overflows)",
                g[i]
            )));
        }
        let mut sorted = g.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let max = sorted[n - 1];
        // G_Z^k computed as max^k mean((G_i / max)^k) so that it overflows only when the result
        // itself does.
        let mean_ratio = if max > 0.0 {
            sorted.iter().map(|v| (v / max).powf(k)).sum::<f64>() / n as f64
        } else {
            0.0
        };
        let g_z = max * mean_ratio.powf(1.0 / k);
        let mean_g_pow_k = max.powf(k) * mean_ratio;
        if !mean_g_pow_k.is_finite() {
            return Err(Error::Numerical(format!(
                "G_Z^k = mean G_i^k overflows an f64 at k = {k} (G_Z = {g_z:.6e})"
            )));
        }
        // Integer labels with more distinct values than samples are responses, not classes.
        let classes = data.num_classes().filter(|&m| m <= data.n);
        let class_counts = classes.map(|m| {
            let mut c = vec![0usize; m];
            data.y.iter().for_each(|&v| c[v as usize] += 1);
            c
        });
        Ok(LipschitzSummary {
            loss: loss.to_string(),
            n: data.n,
            d: data.d,
            classes,
            class_counts,
            min: sorted[0],
            percentiles: TABLE_PERCENTILES
                .iter()
                .map(|&pct| Percentile {
                    pct,
                    value: quantile_sorted(&sorted, pct / 100.0),
                })
                .collect(),
            max,
            mean: sorted.iter().sum::<f64>() / n as f64,
            k,
            mean_g_pow_k,
            g_z,
            hill: hill(&sorted, default_hill_top(n)),
        })
    }
}
