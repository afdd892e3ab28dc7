//! The lower-bound loss of Appendix L, Eq. (97):
//! l(w, x) = -<w, x> + 2 ||x|| max(||w|| - 1, 0).
//!
//! A subgradient is -x + 2 ||x|| w/||w|| 1{||w|| > 1}, of norm at most 3 ||x|| (Eq. 100).

use super::kernel::{Rows, accumulate, by_dim, check_dim, dim_view, materialized_bounded_sum};
use super::{ClipStats, LipschitzForm, Loss, PerSampleBound, Scratch, clip_factor};
use crate::dataset::Dataset;
use crate::error::Result;
use crate::linalg::{axpy, dot, norm2};

/// Eq. (97) on w in R^d; labels are ignored.
#[derive(Debug, Clone)]
pub struct AppendixLLoss {
    d: usize,
}

impl AppendixLLoss {
    /// d-dimensional features.
    pub fn new(d: usize) -> Self {
        AppendixLLoss { d }
    }
}

/// Eq. (100): G(x) = 3 ||x||.
pub fn lipschitz_form() -> LipschitzForm {
    LipschitzForm::Linear { a: 3.0, b: 1.0 }
}

impl Loss for AppendixLLoss {
    fn name(&self) -> &'static str {
        "appendix_l"
    }
    fn param_dim(&self) -> usize {
        self.d
    }
    fn check_data(&self, data: &Dataset) -> Result<()> {
        check_dim(self.d, data)
    }
    /// Eq. (97).
    fn value(&self, w: &[f64], x: &[f64], _y: f64) -> f64 {
        -dot(w, x) + 2.0 * norm2(x) * (norm2(w) - 1.0).max(0.0)
    }
    /// Eq. (97) summed in index order, with ||w|| computed once instead of once per sample.
    fn sum_values(&self, w: &[f64], data: &Dataset) -> f64 {
        by_dim!(data.d, appendix_l_sum_values(w, data))
    }
    fn grad(&self, w: &[f64], x: &[f64], _y: f64, out: &mut [f64]) {
        let nw = norm2(w);
        let s = if nw > 1.0 { 2.0 * norm2(x) / nw } else { 0.0 };
        for ((o, wk), xk) in out.iter_mut().zip(w).zip(x) {
            *o = s * wk - xk;
        }
    }
    fn lipschitz_form(&self) -> Option<LipschitzForm> {
        Some(lipschitz_form())
    }
    /// With u = w/||w|| and s_i = 2||x_i|| 1{||w|| > 1}:
    /// ||grad_i||^2 = ||x_i||^2 - 2 s_i <x_i, u> + s_i^2, so only dot products are needed; the u
    /// part is summed as a scalar. Clipping only; the normalization of automatic clipping
    /// materializes per-sample gradients.
    fn bounded_grad_sum(
        &self,
        w: &[f64],
        data: Rows<'_>,
        batch: &[usize],
        bound: PerSampleBound,
        out: &mut [f64],
        scratch: &mut Scratch,
    ) -> ClipStats {
        let PerSampleBound::Clip(tau) = bound else {
            return materialized_bounded_sum(self, w, &data, batch, bound, out, scratch);
        };
        let rows = data.norms();
        let data = &data;
        match rows {
            Some(r) => {
                let nx2 = |i: usize| (!r.zero[i]).then(|| r.sq[i]);
                by_dim!(data.d, appendix_l_sum(w, data, batch, tau, out, &nx2))
            }
            None => {
                let nx2 = |i: usize| {
                    let x = data.row(i);
                    x.iter().any(|&v| v != 0.0).then(|| dot(x, x))
                };
                by_dim!(data.d, appendix_l_sum(w, data, batch, tau, out, &nx2))
            }
        }
    }
}

/// The Appendix L clipped sum with d = D known at compile time (D = 0: read at run time); see
/// [`by_dim`]. `nx2(i)` is ||x_i||^2, or `None` when x_i = 0.
///
/// A zero row (Q_v puts mass 1 - p on x = 0) has gradient 0 and clip factor 1: it adds exactly
/// +-0 to `out` and `total`, which leaves them unchanged, so it is skipped before its row is read.
/// With row norms from [`super::RowNorms`] the kernel then touches only the p-fraction of rows
/// that are nonzero.
#[inline]
fn appendix_l_sum<const D: usize>(
    w: &[f64],
    data: &Dataset,
    batch: &[usize],
    tau: f64,
    out: &mut [f64],
    nx2: &impl Fn(usize) -> Option<f64>,
) -> ClipStats {
    let w = dim_view::<D>(w);
    accumulate::<D, _>(out, |out| {
        let nw = norm2(w);
        let outside = nw > 1.0;
        let mut stats = ClipStats::new(batch.len());
        let mut total = 0.0;
        for &i in batch {
            let Some(nx2) = nx2(i) else {
                continue;
            };
            let x = dim_view::<D>(data.row(i));
            let (s, xu) = if outside {
                (2.0 * nx2.sqrt(), dot(x, w) / nw)
            } else {
                (0.0, 0.0)
            };
            let norm = (nx2 - 2.0 * s * xu + s * s).max(0.0).sqrt();
            let c = clip_factor(norm, tau);
            stats.record(norm, c);
            axpy(-c, x, out);
            total += c * s;
        }
        if outside {
            axpy(total / nw, w, out);
        }
        stats
    })
}

/// [`Loss::sum_values`] of the Appendix L loss with d = D known at compile time: the same
/// arithmetic as [`Loss::value`], term by term.
#[inline]
fn appendix_l_sum_values<const D: usize>(w: &[f64], data: &Dataset) -> f64 {
    let w = dim_view::<D>(w);
    let excess = (norm2(w) - 1.0).max(0.0);
    (0..data.n)
        .map(|i| {
            let x = dim_view::<D>(data.row(i));
            -dot(w, x) + 2.0 * norm2(x) * excess
        })
        .sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_values_equals_the_per_sample_loop_bit_for_bit() {
        for d in [3, 32, 33] {
            let n = 50;
            let x: Vec<f64> = (0..n * d)
                .map(|i| ((i * 7919) % 101) as f64 / 50.0 - 1.0)
                .collect();
            let data = Dataset::new(x, vec![0.0; n], d).unwrap();
            let loss = AppendixLLoss::new(d);
            // inside and outside the unit ball (the penalty term on and off)
            for scale in [0.01, 0.3, 2.0] {
                let w: Vec<f64> = (0..d).map(|k| scale * ((k % 5) as f64 - 2.0)).collect();
                let looped: f64 = (0..n).map(|i| loss.value(&w, data.row(i), 0.0)).sum();
                assert_eq!(
                    loss.sum_values(&w, &data).to_bits(),
                    looped.to_bits(),
                    "d {d}"
                );
            }
        }
    }
}
