//! Shared fast path for linear models l(w, x, y) = phi(<w, x>, y), whose gradient is
//! phi'(<w, x>, y) x, so ||grad|| = |phi'| ||x|| factors ("ghost norms").

use super::{ClipStats, axpy, clip_factor, dot};
use crate::dataset::Dataset;

/// out = sum_{i in batch} clip(phi'(<w, x_i>, y_i) x_i, tau), with `dphi(z, y)` = phi'.
pub(crate) fn linear_clipped_sum(
    w: &[f64],
    data: &Dataset,
    batch: &[usize],
    tau: f64,
    out: &mut [f64],
    dphi: impl Fn(f64, f64) -> f64,
) -> ClipStats {
    out.fill(0.0);
    let mut stats = ClipStats {
        clipped: 0,
        count: batch.len(),
    };
    for &i in batch {
        let x = data.row(i);
        let s = dphi(dot(w, x), data.y[i]);
        let c = clip_factor(s.abs() * dot(x, x).sqrt(), tau);
        if c < 1.0 {
            stats.clipped += 1;
        }
        axpy(c * s, x, out);
    }
    stats
}
