//! The one-pass ghost-clipping kernel of the softmax loss (Appendix D, Eq. 8), for a moderate
//! number of classes m <= 16 and many features d.
//!
//! The two-GEMM path copies the batch into a contiguous X~ (|S| x (d + 1)), forms Z = X~ W^T,
//! and reads X~ again for (C E)^T X~. When m is small both products are thin, so that path is
//! bound by copying and re-reading the batch, not by flops. This kernel reads each sampled row
//! straight from the data set, a block of R rows at a time, and while the block is hot in L1
//! computes its logits, softmax, the per-sample norm ||e_i|| ||x~_i|| and clip factor c_i, and
//! adds the rank-R update sum_r c_r e_r x~_r^T into the gradient. W and the gradient are kept
//! transposed ((d + 1) x m_pad, class index fastest, padded with zeros to whole 4-lane vectors),
//! so every feature k costs one broadcast of x_rk and m_pad / 4 fused multiply-adds per row.
//!
//! The floating-point order is fixed by (batch, shape) alone: the same result for any thread
//! count. It differs from the GEMM path's order (and uses FMA), so the two agree to rounding
//! (about 1e-15 relative), not bit for bit.
// The lane loops index several fixed-width arrays in step; iterators would hide that.
#![allow(clippy::needless_range_loop)]

use super::softmax::softmax_residual_in_place;
use super::{ClipStats, clip_factor};
use crate::dataset::Dataset;
use crate::linalg::dot;

/// The largest number of classes the kernel handles (4 vectors of 4 lanes).
pub(crate) const MAX_CLASSES: usize = 16;

/// m rounded up to whole 4-lane vectors.
#[inline]
pub(crate) fn padded(m: usize) -> usize {
    m.div_ceil(4) * 4
}

/// True when this machine can run the kernel (x86-64 with AVX2 and FMA, detected at run time).
pub(crate) fn available() -> bool {
    super::kernel::x86_has_avx2(true)
}

/// wt (row-major (d + 1) x mp) = W^T of the row-major m x (d + 1) matrix `w`, padded with zeros.
pub(crate) fn transpose_padded(w: &[f64], m: usize, dd: usize, wt: &mut [f64]) {
    let mp = padded(m);
    for k in 0..dd {
        let row = &mut wt[k * mp..(k + 1) * mp];
        for (j, v) in row.iter_mut().enumerate() {
            *v = if j < m { w[j * dd + k] } else { 0.0 };
        }
    }
}

/// out (m x (d + 1), row-major) = the transpose of the first m columns of `gt` ((d + 1) x mp),
/// plus those of `gt2` when given (the two halves of a split batch, added in a fixed order).
pub(crate) fn untranspose(gt: &[f64], gt2: Option<&[f64]>, m: usize, dd: usize, out: &mut [f64]) {
    let mp = padded(m);
    for j in 0..m {
        for k in 0..dd {
            out[j * dd + k] = match gt2 {
                Some(g2) => gt[k * mp + j] + g2[k * mp + j],
                None => gt[k * mp + j],
            };
        }
    }
}

/// gt ((d + 1) x mp, overwritten) = sum_{i in batch} clip(grad f_i, tau), transposed, from the
/// transposed padded weights `wt`. The caller checks [`available`] and 1 <= m <= [`MAX_CLASSES`].
pub(crate) fn clipped_sum(
    wt: &[f64],
    m: usize,
    data: &Dataset,
    batch: &[usize],
    tau: f64,
    gt: &mut [f64],
) -> ClipStats {
    let dd = data.d + 1;
    let mp = padded(m);
    assert!(
        (1..=MAX_CLASSES).contains(&m) && wt.len() >= dd * mp && gt.len() >= dd * mp,
        "one-pass kernel: shapes"
    );
    assert!(available(), "one-pass kernel: needs AVX2 and FMA");
    gt[..dd * mp].fill(0.0);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: AVX2 and FMA were detected above; the shapes were checked above and every row
    // index comes from data.row (bounds-checked).
    unsafe {
        match mp / 4 {
            1 => avx::run::<1, 8>(wt, m, data, batch, tau, gt),
            2 => avx::run::<2, 6>(wt, m, data, batch, tau, gt),
            3 => avx::run::<3, 4>(wt, m, data, batch, tau, gt),
            _ => avx::run::<4, 3>(wt, m, data, batch, tau, gt),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("one-pass kernel without AVX2")
}

/// Softmax, e = p - onehot(y) and the clip factor of one row's logits (in place on z[..m], the
/// padding lanes set to 0); returns c_i and counts a clip.
#[inline]
fn clip_row(z: &mut [f64], m: usize, y: usize, xx: f64, tau: f64, stats: &mut ClipStats) -> f64 {
    let zm = &mut z[..m];
    softmax_residual_in_place(zm, y);
    let ee = dot(zm, zm);
    // Eq. (8): ||grad f_i|| = ||e_i|| ||x~_i||, ||x~_i||^2 = ||x_i||^2 + 1.
    let norm = (ee * (xx + 1.0)).sqrt();
    let c = clip_factor(norm, tau);
    stats.record(norm, c);
    zm.iter_mut().for_each(|v| *v *= c);
    z[m..].fill(0.0);
    c
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::*;

    use super::{ClipStats, Dataset, clip_row};

    /// MV vectors of 4 classes, R rows per block (R * MV <= 12 accumulators, so that the
    /// accumulators, one broadcast and the streamed operand fit in the 16 AVX registers).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn run<const MV: usize, const R: usize>(
        wt: &[f64],
        m: usize,
        data: &Dataset,
        batch: &[usize],
        tau: f64,
        gt: &mut [f64],
    ) -> ClipStats {
        let mut stats = ClipStats::new(batch.len());
        let mut blocks = batch.chunks_exact(R);
        for blk in blocks.by_ref() {
            // SAFETY: the caller's target features hold here too.
            unsafe { block::<MV, R>(wt, m, data, blk, tau, gt, &mut stats) };
        }
        for &i in blocks.remainder() {
            // SAFETY: as above.
            unsafe { block::<MV, 1>(wt, m, data, &[i], tau, gt, &mut stats) };
        }
        stats
    }

    /// ||x||^2 with 4-lane FMA (two accumulators).
    #[target_feature(enable = "avx2,fma")]
    unsafe fn sq_norm(x: &[f64]) -> f64 {
        let n4 = x.len() / 4 * 4;
        let p = x.as_ptr();
        let mut a0 = _mm256_setzero_pd();
        let mut a1 = _mm256_setzero_pd();
        let mut k = 0;
        // SAFETY: k + 8 <= n4 <= x.len() (and k + 4 below).
        unsafe {
            while k + 8 <= n4 {
                let v0 = _mm256_loadu_pd(p.add(k));
                let v1 = _mm256_loadu_pd(p.add(k + 4));
                a0 = _mm256_fmadd_pd(v0, v0, a0);
                a1 = _mm256_fmadd_pd(v1, v1, a1);
                k += 8;
            }
            if k + 4 <= n4 {
                let v0 = _mm256_loadu_pd(p.add(k));
                a0 = _mm256_fmadd_pd(v0, v0, a0);
            }
        }
        let mut lanes = [0.0f64; 4];
        // SAFETY: lanes holds 4 f64.
        unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), _mm256_add_pd(a0, a1)) };
        let mut s = (lanes[0] + lanes[2]) + (lanes[1] + lanes[3]);
        for v in &x[n4..] {
            s += v * v;
        }
        s
    }

    /// One block of R sampled rows: logits (bias row first, then features k = 0..d in order),
    /// clip factors, then the rank-R update of gt, feature by feature.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn block<const MV: usize, const R: usize>(
        wt: &[f64],
        m: usize,
        data: &Dataset,
        blk: &[usize],
        tau: f64,
        gt: &mut [f64],
        stats: &mut ClipStats,
    ) {
        let d = data.d;
        let mp = MV * 4;
        let rows: [&[f64]; R] = std::array::from_fn(|r| data.row(blk[r]));
        let wp = wt.as_ptr();
        let gp = gt.as_mut_ptr();
        // SAFETY: wt and gt hold (d + 1) x mp entries (checked by the caller); each row holds d.
        unsafe {
            // Z = W x~ for the R rows, starting from the bias row d of wt.
            let mut acc = [[_mm256_setzero_pd(); MV]; R];
            for a in acc.iter_mut() {
                for (v, av) in a.iter_mut().enumerate() {
                    *av = _mm256_loadu_pd(wp.add(d * mp + 4 * v));
                }
            }
            for k in 0..d {
                let wk = wp.add(k * mp);
                for r in 0..R {
                    let xb = _mm256_set1_pd(*rows[r].get_unchecked(k));
                    for v in 0..MV {
                        acc[r][v] = _mm256_fmadd_pd(xb, _mm256_loadu_pd(wk.add(4 * v)), acc[r][v]);
                    }
                }
            }
            // Softmax, e = p - onehot(y), clip factor: scalar, m values per row.
            let mut e = [[0.0f64; 16]; R];
            for r in 0..R {
                for v in 0..MV {
                    _mm256_storeu_pd(e[r].as_mut_ptr().add(4 * v), acc[r][v]);
                }
                let xx = sq_norm(rows[r]);
                let y = data.y[blk[r]] as usize;
                clip_row(&mut e[r][..mp], m, y, xx, tau, stats);
            }
            let ev: [[__m256d; MV]; R] = std::array::from_fn(|r| {
                std::array::from_fn(|v| _mm256_loadu_pd(e[r].as_ptr().add(4 * v)))
            });
            // gt[k, :] += sum_r c_r e_r x~_rk, bias row (x~_rd = 1) included.
            for k in 0..d {
                let gk = gp.add(k * mp);
                let mut g: [__m256d; MV] = std::array::from_fn(|v| _mm256_loadu_pd(gk.add(4 * v)));
                for r in 0..R {
                    let xb = _mm256_set1_pd(*rows[r].get_unchecked(k));
                    for v in 0..MV {
                        g[v] = _mm256_fmadd_pd(xb, ev[r][v], g[v]);
                    }
                }
                for v in 0..MV {
                    _mm256_storeu_pd(gk.add(4 * v), g[v]);
                }
            }
            let gk = gp.add(d * mp);
            for v in 0..MV {
                let mut g = _mm256_loadu_pd(gk.add(4 * v));
                for evr in ev.iter() {
                    g = _mm256_add_pd(g, evr[v]);
                }
                _mm256_storeu_pd(gk.add(4 * v), g);
            }
        }
    }
}
