//! Shared fast path for linear models l(w, x, y) = phi(<w, x>, y), whose gradient is
//! phi'(<w, x>, y) x, so ||grad|| = |phi'| ||x|| factors ("ghost norms").

use super::{ClipStats, RowNorms, accumulate, axpy, by_dim, clip_factor, dot, fixed};
use crate::dataset::Dataset;

/// out = sum_{i in batch} clip(phi'(<w, x_i>, y_i) x_i, tau), with `dphi(z, y)` = phi'.
/// ||x_i|| comes from `rows` when they were filled from `data`.
pub(crate) fn linear_clipped_sum(
    w: &[f64],
    data: &Dataset,
    batch: &[usize],
    tau: f64,
    out: &mut [f64],
    rows: &RowNorms,
    dphi: impl Fn(f64, f64) -> f64,
) -> ClipStats {
    match rows.of(data) {
        Some(r) => {
            let nx = |i: usize, _: &[f64]| r.norm[i];
            by_dim!(data.d, sum_d(w, data, batch, tau, out, &dphi, &nx))
        }
        None => {
            let nx = |_: usize, x: &[f64]| dot(x, x).sqrt();
            by_dim!(data.d, sum_d(w, data, batch, tau, out, &dphi, &nx))
        }
    }
}

/// [`linear_clipped_sum`] with d = D known at compile time (D = 0: read at run time); `nx(i, x_i)`
/// is ||x_i|| (from [`RowNorms`] or computed).
#[inline]
fn sum_d<const D: usize>(
    w: &[f64],
    data: &Dataset,
    batch: &[usize],
    tau: f64,
    out: &mut [f64],
    dphi: &impl Fn(f64, f64) -> f64,
    nx: &impl Fn(usize, &[f64]) -> f64,
) -> ClipStats {
    let w = fixed::<D>(w);
    accumulate::<D, _>(out, |out| {
        let mut stats = ClipStats {
            clipped: 0,
            count: batch.len(),
        };
        for &i in batch {
            let x = fixed::<D>(data.row(i));
            let s = dphi(dot(w, x), data.y[i]);
            let c = clip_factor(s.abs() * nx(i, x), tau);
            if c < 1.0 {
                stats.clipped += 1;
            }
            axpy(c * s, x, out);
        }
        stats
    })
}
