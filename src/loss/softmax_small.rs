//! The ghost-clipping kernel of the softmax loss for few classes, m <= 4 (Appendix D, Eq. 8):
//! no matrix products, W transposed once per step, and for each sample one pass over its
//! features for all m logits and ||x||^2, then a second pass adding c_i e_ij x_i into the
//! (transposed) gradient. M is m as a constant, so the class loops unroll.
//!
//! The samples go through in blocks of [`BLOCK`]: each sample's logits, softmax and clip factor
//! are computed exactly as for one sample alone (same operations in the same order), but the
//! block's samples are independent chains that run side by side, where one sample at a time
//! waits on each dot product, exp, sqrt and division in turn. The update adds the block's
//! samples to every output entry in batch order, so each entry receives the same additions in
//! the same order as sample by sample: the sum is bit-identical to the one-at-a-time kernel
//! (tested below), and no committed result changes.
//!
//! For m = 2 on x86-64 with AVX2 a block's logits run with the four samples in the four lanes
//! of a vector, and the update with (feature, class) pairs in the lanes; multiplications and
//! additions stay separate (no fused multiply-add), so the values are the same.
// The lane loops index several fixed-width arrays in step; iterators would hide that.
#![allow(clippy::needless_range_loop)]

use super::kernel::sized;
use super::softmax::softmax_in_place;
use super::{ClipStats, PerSampleBound, Scratch, clip_factor};
use crate::dataset::Dataset;

/// Samples per block (4 independent chains hide one sample's latencies; 2 and 8 measured
/// slower with `cargo bench -p dpsgd-lab-bench --bench dpsgd_step`, size a).
const BLOCK: usize = 4;

/// out (m x (d + 1), row-major, bias last) = sum_{i in batch} bound(grad f_i(w)) for M = m
/// classes, the ghost norm of Eq. (8) deciding each factor.
pub(crate) fn clipped_sum<const M: usize>(
    w: &[f64],
    data: &Dataset,
    batch: &[usize],
    bound: PerSampleBound,
    out: &mut [f64],
    scratch: &mut Scratch,
) -> ClipStats {
    clipped_sum_with::<M>(w, data, batch, bound, out, scratch, M == 2 && avx2())
}

/// [`clipped_sum`], with `vector` choosing the m = 2 AVX2 blocks (the caller has checked that
/// AVX2 is there) or the portable ones.
fn clipped_sum_with<const M: usize>(
    w: &[f64],
    data: &Dataset,
    batch: &[usize],
    bound: PerSampleBound,
    out: &mut [f64],
    scratch: &mut Scratch,
    vector: bool,
) -> ClipStats {
    let dd = data.d + 1;
    // wt[k*M + j] = W[j, k]
    let wt = sized(&mut scratch.weights_t, dd * M);
    for j in 0..M {
        for k in 0..dd {
            wt[k * M + j] = w[j * dd + k];
        }
    }
    let gt = sized(&mut scratch.partial_out, dd * M);
    gt.fill(0.0);
    let mut stats = ClipStats::new(batch.len());
    let whole = batch.len() / BLOCK * BLOCK;
    let (blocks, rest) = batch.split_at(whole);
    if vector {
        assert!(M == 2 && avx2());
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX2 was detected at run time; M = 2, so wt and gt hold 2 (d + 1) entries.
        unsafe {
            avx::blocks2(wt, data, blocks, bound, gt, &mut stats)
        };
    } else {
        for blk in blocks.chunks_exact(BLOCK) {
            block::<M, BLOCK>(wt, data, blk, bound, gt, &mut stats);
        }
    }
    for i in rest {
        block::<M, 1>(wt, data, std::slice::from_ref(i), bound, gt, &mut stats);
    }
    for j in 0..M {
        for k in 0..dd {
            out[j * dd + k] = gt[k * M + j];
        }
    }
    stats
}

/// Bench hook, not API: the m = 2 clipped sum (tau = `tau`) with the AVX2 blocks when `vector`
/// and the machine has AVX2, else the portable blocks, so `benches/dpsgd_step.rs` can time the
/// two on the same data. Returns the number of clipped samples.
#[doc(hidden)]
pub fn bench_clipped_sum2(
    w: &[f64],
    data: &Dataset,
    batch: &[usize],
    tau: f64,
    out: &mut [f64],
    scratch: &mut Scratch,
    vector: bool,
) -> usize {
    let bound = PerSampleBound::Clip(tau);
    clipped_sum_with::<2>(w, data, batch, bound, out, scratch, vector && avx2()).clipped
}

/// True when the m = 2 vector block can run (x86-64 with AVX2, detected at run time).
fn avx2() -> bool {
    super::kernel::x86_has_avx2(false)
}

/// R samples `blk`: gt ((d + 1) x M, transposed, bias row last) += sum_r c_r e_r x~_r^T from the
/// transposed weights `wt`, each sample's arithmetic exactly as in a one-sample pass.
#[inline(always)]
fn block<const M: usize, const R: usize>(
    wt: &[f64],
    data: &Dataset,
    blk: &[usize],
    bound: PerSampleBound,
    gt: &mut [f64],
    stats: &mut ClipStats,
) {
    let d = data.d;
    let (wt_x, wt_b) = wt.split_at(d * M);
    let (gt_x, gt_b) = gt.split_at_mut(d * M);
    let rows: [&[f64]; R] = std::array::from_fn(|r| &data.row(blk[r])[..d]);
    // Z = W x~ and ||x||^2, from the bias on feature by feature, for R rows side by side.
    let mut z = [[0.0f64; M]; R];
    let mut xx = [0.0f64; R];
    for zr in z.iter_mut() {
        zr.copy_from_slice(&wt_b[..M]);
    }
    for (k, wk) in wt_x.chunks_exact(M).enumerate() {
        for r in 0..R {
            let xk = rows[r][k];
            xx[r] += xk * xk;
            for j in 0..M {
                z[r][j] += wk[j] * xk;
            }
        }
    }
    clip_rows(&mut z, &xx, data, blk, bound, stats);
    // gt[k, :] += c_r e_r x_rk, rows in batch order for every entry, then the bias row.
    for (k, gk) in gt_x.chunks_exact_mut(M).enumerate() {
        for r in 0..R {
            let xk = rows[r][k];
            for j in 0..M {
                gk[j] += z[r][j] * xk;
            }
        }
    }
    for zr in &z {
        for j in 0..M {
            gt_b[j] += zr[j];
        }
    }
}

/// From the logits z_r and ||x_r||^2 of R rows: z_r <- c_r (softmax(z_r) - e_{y_r}), with c_r the
/// factor of Eq. (8)'s ghost norm ||e_r|| ||x~_r||, ||x~_r||^2 = ||x_r||^2 + 1; counts the clips.
#[inline(always)]
fn clip_rows<const M: usize, const R: usize>(
    z: &mut [[f64; M]; R],
    xx: &[f64; R],
    data: &Dataset,
    blk: &[usize],
    bound: PerSampleBound,
    stats: &mut ClipStats,
) {
    if M == 2 {
        let mut z0: [f64; R] = std::array::from_fn(|r| z[r][0]);
        let mut z1: [f64; R] = std::array::from_fn(|r| z[r][M - 1]);
        clip_rows2(&mut z0, &mut z1, xx, data, blk, bound, stats);
        for r in 0..R {
            z[r][0] = z0[r];
            z[r][M - 1] = z1[r];
        }
        return;
    }
    let mut norm = [0.0f64; R];
    for r in 0..R {
        let zr = &mut z[r];
        softmax_in_place(zr);
        let y = data.y[blk[r]];
        for (j, v) in zr.iter_mut().enumerate() {
            *v -= one_hot(j, y);
        }
        let ee: f64 = zr.iter().map(|v| v * v).sum();
        norm[r] = (ee * (xx[r] + 1.0)).sqrt();
    }
    let c = factors(&norm, bound, stats);
    for r in 0..R {
        for v in z[r].iter_mut() {
            *v *= c[r];
        }
    }
}

/// 1 for class j = the label y, else 0, as a select: v - 0 = v exactly (also for -0 and NaN), so
/// subtracting it from every class is e_y's subtraction without a store to z[y] that the next
/// loads of z would wait on. The label is compared as a number (labels are integers in 0..m,
/// checked by check_data), without a float-to-integer conversion per row.
#[inline(always)]
fn one_hot(j: usize, y: f64) -> f64 {
    std::hint::select_unpredictable(y == j as f64, 1.0, 0.0)
}

/// The R clip factors from the ghost norms, side by side (sqrt, division and the select are
/// correctly rounded lane by lane: the same values as one at a time); counts the clips.
#[inline(always)]
fn factors<const R: usize>(
    norm: &[f64; R],
    bound: PerSampleBound,
    stats: &mut ClipStats,
) -> [f64; R] {
    // The match outside the lanes (not bound.factor per lane), so that the clipping case is
    // one branch-free vector division and select over the R lanes.
    let c: [f64; R] = match bound {
        PerSampleBound::Clip(tau) => std::array::from_fn(|r| clip_factor(norm[r], tau)),
        _ => std::array::from_fn(|r| bound.factor(norm[r])),
    };
    for (cr, nr) in c.iter().zip(norm) {
        stats.record(*nr, *cr);
    }
    c
}

/// [`clip_rows`] for two classes, the logits of row r in (z0[r], z1[r]): the softmax of
/// [`softmax_in_place`] without branches, bit for bit the same. One of the two logits is the
/// largest (exp(0) = 1 is not computed), the other's exp is taken, and which is which is a
/// select (a branch on it would be mispredicted for about half of all samples). The R calls to
/// exp come one after another, so the rest runs lane by lane on whole arrays.
#[inline(always)]
fn clip_rows2<const R: usize>(
    z0: &mut [f64; R],
    z1: &mut [f64; R],
    xx: &[f64; R],
    data: &Dataset,
    blk: &[usize],
    bound: PerSampleBound,
    stats: &mut ClipStats,
) {
    let mx: [f64; R] = std::array::from_fn(|r| f64::NEG_INFINITY.max(z0[r]).max(z1[r]));
    // exp of the logit that is not (taken as) the largest; unused where both are
    let arg: [f64; R] = std::array::from_fn(|r| {
        std::hint::select_unpredictable(z0[r] == mx[r], z1[r], z0[r]) - mx[r]
    });
    let e: [f64; R] = std::array::from_fn(|r| arg[r].exp());
    let y: [f64; R] = std::array::from_fn(|r| data.y[blk[r]]);
    let mut norm = [0.0f64; R];
    for r in 0..R {
        let v0 = std::hint::select_unpredictable(z0[r] == mx[r], 1.0, e[r]);
        let v1 = std::hint::select_unpredictable(z1[r] == mx[r], 1.0, e[r]);
        let inv = 1.0 / ((0.0 + v0) + v1);
        z0[r] = v0 * inv - one_hot(0, y[r]);
        z1[r] = v1 * inv - one_hot(1, y[r]);
        // the sum of squares from 0: (0 + a) + b = a + b for a >= 0 or NaN
        let ee = z0[r] * z0[r] + z1[r] * z1[r];
        norm[r] = (ee * (xx[r] + 1.0)).sqrt();
    }
    let c = factors(&norm, bound, stats);
    for r in 0..R {
        z0[r] *= c[r];
        z1[r] *= c[r];
    }
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::*;

    use super::{BLOCK, ClipStats, Dataset, PerSampleBound, clip_rows2};

    /// [`super::block`] for m = 2 over whole blocks of four samples, the same values: the logits
    /// with sample r in lane r (a 4 x 4 transpose of the rows' features, then per feature one
    /// multiply and one add per class), and the update of gt with lanes (k, 0), (k, 1),
    /// (k + 1, 0), (k + 1, 1). Software-pipelined: the next block's logits are computed before
    /// this block's softmax, clip factors and update, so their chains of additions overlap.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn blocks2<'a>(
        wt: &[f64],
        data: &Dataset,
        blocks: &'a [usize],
        bound: PerSampleBound,
        gt: &mut [f64],
        stats: &mut ClipStats,
    ) {
        let d = data.d;
        let (wt_x, wt_b) = wt.split_at(d * 2);
        let (gt_x, gt_b) = gt.split_at_mut(d * 2);
        assert!(wt_b.len() >= 2 && gt_b.len() >= 2 && wt_x.len() == 2 * d && gt_x.len() == 2 * d);
        assert_eq!(blocks.len() % BLOCK, 0);
        let rows = |blk: &[usize]| {
            let row = |r: usize| data.row(blk[r])[..d].as_ptr();
            [row(0), row(1), row(2), row(3)]
        };
        // a block, its rows and their logits
        let start = |blk: &'a [usize]| {
            let p = rows(blk);
            // SAFETY: every row pointer comes from `rows` (d features each); wt_x holds 2 d.
            (blk, p, unsafe { logits(wt_x.as_ptr(), wt_b, &p, d) })
        };
        let mut it = blocks.chunks_exact(BLOCK);
        let mut cur = it.next().map(start);
        while let Some((blk, p, ([mut z0, mut z1], xx))) = cur {
            cur = it.next().map(start);
            clip_rows2(&mut z0, &mut z1, &xx, data, blk, bound, stats);
            // SAFETY: gt_x holds 2 d entries; the rows d features each.
            unsafe { update(gt_x.as_mut_ptr(), &p, &z0, &z1, d) };
            for r in 0..BLOCK {
                gt_b[0] += z0[r];
                gt_b[1] += z1[r];
            }
        }
    }

    /// The logits (z_0, z_1) and ||x||^2 of four rows (pointers to d features each), lane r for
    /// row r, from the transposed weights (2 d, class fastest) and the biases.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn logits(
        wp: *const f64,
        wt_b: &[f64],
        p: &[*const f64; BLOCK],
        d: usize,
    ) -> ([[f64; BLOCK]; 2], [f64; BLOCK]) {
        let mut zl = [[0.0f64; BLOCK]; 2];
        let mut xxl = [0.0f64; BLOCK];
        // SAFETY: the caller's pointers hold d features and 2 d weights; k + 4 <= d for the
        // vector loads, k < d for the scalar ones.
        unsafe {
            let mut z0 = _mm256_set1_pd(wt_b[0]);
            let mut z1 = _mm256_set1_pd(wt_b[1]);
            let mut xx = _mm256_setzero_pd();
            // One feature column c = (x_0k, .., x_3k): z_j += w_jk x_k and xx += x_k x_k, unfused.
            macro_rules! feature {
                ($k:expr, $c:expr) => {{
                    let (k, c) = ($k, $c);
                    let w0 = _mm256_set1_pd(*wp.add(2 * k));
                    let w1 = _mm256_set1_pd(*wp.add(2 * k + 1));
                    xx = _mm256_add_pd(xx, _mm256_mul_pd(c, c));
                    z0 = _mm256_add_pd(z0, _mm256_mul_pd(w0, c));
                    z1 = _mm256_add_pd(z1, _mm256_mul_pd(w1, c));
                }};
            }
            let mut k = 0;
            while k + 4 <= d {
                let r0 = _mm256_loadu_pd(p[0].add(k));
                let r1 = _mm256_loadu_pd(p[1].add(k));
                let r2 = _mm256_loadu_pd(p[2].add(k));
                let r3 = _mm256_loadu_pd(p[3].add(k));
                let t0 = _mm256_unpacklo_pd(r0, r1);
                let t1 = _mm256_unpackhi_pd(r0, r1);
                let t2 = _mm256_unpacklo_pd(r2, r3);
                let t3 = _mm256_unpackhi_pd(r2, r3);
                feature!(k, _mm256_permute2f128_pd(t0, t2, 0x20));
                feature!(k + 1, _mm256_permute2f128_pd(t1, t3, 0x20));
                feature!(k + 2, _mm256_permute2f128_pd(t0, t2, 0x31));
                feature!(k + 3, _mm256_permute2f128_pd(t1, t3, 0x31));
                k += 4;
            }
            while k < d {
                let c = _mm256_setr_pd(*p[0].add(k), *p[1].add(k), *p[2].add(k), *p[3].add(k));
                feature!(k, c);
                k += 1;
            }
            _mm256_storeu_pd(zl[0].as_mut_ptr(), z0);
            _mm256_storeu_pd(zl[1].as_mut_ptr(), z1);
            _mm256_storeu_pd(xxl.as_mut_ptr(), xx);
        }
        (zl, xxl)
    }

    /// gt[k, j] += c_r e_rj x_rk for the four rows in order, entry by entry (gt: d x 2).
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn update(
        gp: *mut f64,
        p: &[*const f64; BLOCK],
        z0: &[f64; BLOCK],
        z1: &[f64; BLOCK],
        d: usize,
    ) {
        // SAFETY: gt holds 2 d entries: 4 from 2 k with k + 2 <= d, 2 from 2 k with k < d; the
        // rows hold d features.
        unsafe {
            // (c_r e_r0, c_r e_r1) in both halves of a vector
            let e: [__m256d; BLOCK] =
                std::array::from_fn(|r| _mm256_setr_pd(z0[r], z1[r], z0[r], z1[r]));
            let mut k = 0;
            while k + 2 <= d {
                let mut g = _mm256_loadu_pd(gp.add(2 * k));
                for r in 0..BLOCK {
                    // (x_rk, x_rk, x_r(k+1), x_r(k+1))
                    let x = _mm256_castpd128_pd256(_mm_loadu_pd(p[r].add(k)));
                    let x = _mm256_permute4x64_pd(x, 0b01_01_00_00);
                    g = _mm256_add_pd(g, _mm256_mul_pd(e[r], x));
                }
                _mm256_storeu_pd(gp.add(2 * k), g);
                k += 2;
            }
            if k < d {
                let mut g = _mm_loadu_pd(gp.add(2 * k));
                for r in 0..BLOCK {
                    let x = _mm_set1_pd(*p[r].add(k));
                    g = _mm_add_pd(g, _mm_mul_pd(_mm256_castpd256_pd128(e[r]), x));
                }
                _mm_storeu_pd(gp.add(2 * k), g);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loss::Loss;
    use crate::loss::logistic::SoftmaxLoss;
    use crate::rng::{Purpose, stream};
    use rand::RngExt;

    /// The kernel as it was written before blocking: one sample at a time, the softmax with its
    /// branch, the store to z[y]. The blocked kernels must equal it bit for bit.
    fn one_at_a_time<const M: usize>(
        w: &[f64],
        data: &Dataset,
        batch: &[usize],
        bound: PerSampleBound,
    ) -> (Vec<f64>, usize) {
        let (d, dd) = (data.d, data.d + 1);
        let mut wt = vec![0.0; dd * M];
        for j in 0..M {
            for k in 0..dd {
                wt[k * M + j] = w[j * dd + k];
            }
        }
        let mut gt = vec![0.0; dd * M];
        let (wt_x, wt_b) = wt.split_at(d * M);
        let (gt_x, gt_b) = gt.split_at_mut(d * M);
        let mut clipped = 0;
        for &i in batch {
            let x = data.row(i);
            let mut z = [0.0f64; M];
            z.copy_from_slice(&wt_b[..M]);
            let mut xx = 0.0;
            for (xk, wk) in x.iter().zip(wt_x.chunks_exact(M)) {
                xx += xk * xk;
                for j in 0..M {
                    z[j] += wk[j] * xk;
                }
            }
            softmax_in_place(&mut z);
            z[data.y[i] as usize] -= 1.0;
            let ee: f64 = z.iter().map(|v| v * v).sum();
            let c = bound.factor((ee * (xx + 1.0)).sqrt());
            clipped += usize::from(c < 1.0);
            for v in z.iter_mut() {
                *v *= c;
            }
            for (xk, gk) in x.iter().zip(gt_x.chunks_exact_mut(M)) {
                for j in 0..M {
                    gk[j] += z[j] * xk;
                }
            }
            for j in 0..M {
                gt_b[j] += z[j];
            }
        }
        let mut out = vec![0.0; M * dd];
        for j in 0..M {
            for k in 0..dd {
                out[j * dd + k] = gt[k * M + j];
            }
        }
        (out, clipped)
    }

    /// Every bit, but any NaN equals any NaN (a payload is not a result).
    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter()
            .map(|a| if a.is_nan() { u64::MAX } else { a.to_bits() })
            .collect()
    }

    fn case<const M: usize>(seed: u64, d: usize, scale: f64) {
        let mut rng = stream(seed, M as u64, Purpose::Data);
        let n = 37;
        let mut x: Vec<f64> = (0..n * d).map(|_| rng.random_range(-1.0..1.0)).collect();
        // Rows whose logits tie exactly (x = 0 gives z = the bias, and equal biases below),
        // and huge rows, whose logits overflow to +-inf when the weights are huge too.
        x[..d].fill(0.0);
        x[d..2 * d].fill(1e150);
        x[2 * d..3 * d].fill(-1e150);
        let y: Vec<f64> = (0..n).map(|i| (i % M) as f64).collect();
        let data = Dataset::new(x, y, d).unwrap();
        let loss = SoftmaxLoss::new(d, M);
        let mut w: Vec<f64> = (0..M * (d + 1))
            .map(|_| scale * rng.random_range(-1.0..1.0))
            .collect();
        for j in 0..M {
            w[j * (d + 1) + d] = 0.25; // equal biases: tied logits at x = 0
        }
        // batch sizes around the block size, with repeats, in the order a sampler gives
        for len in [0, 1, 3, 4, 5, 8, 11, n] {
            let batch: Vec<usize> = (0..len).map(|r| (r * 7) % n).collect();
            for bound in [
                PerSampleBound::Clip(0.3),
                PerSampleBound::Clip(1e9),
                PerSampleBound::Normalize(0.01),
            ] {
                let (want, want_clipped) = one_at_a_time::<M>(&w, &data, &batch, bound);
                let mut got = vec![f64::NAN; M * (d + 1)];
                let mut scratch = Scratch::default();
                let st = loss.bounded_grad_sum(
                    &w,
                    (&data).into(),
                    &batch,
                    bound,
                    &mut got,
                    &mut scratch,
                );
                assert_eq!(bits(&got), bits(&want), "m {M} d {d} |S| {len} {bound:?}");
                assert_eq!((st.clipped, st.count), (want_clipped, len));
                // the portable blocks too, where the vector blocks ran above
                let mut portable = vec![f64::NAN; M * (d + 1)];
                clipped_sum_with::<M>(&w, &data, &batch, bound, &mut portable, &mut scratch, false);
                assert_eq!(bits(&portable), bits(&want), "portable, m {M} d {d}");
            }
        }
    }

    /// The blocked kernel (every m it serves, the m = 2 vector block where the machine has
    /// AVX2) gives the one-sample-at-a-time sums bit for bit, so results committed before
    /// blocking do not change: d around the vector widths, tied, huge and infinite logits, both
    /// per-sample bounds.
    #[test]
    fn blocked_kernel_is_bit_identical_to_one_sample_at_a_time() {
        // scale 1e200: the huge rows' logits overflow to +-inf (softmax of inf - inf is NaN)
        for (seed, d, scale) in [
            (1, 1, 1.0),
            (2, 5, 3.0),
            (3, 10, 0.5),
            (4, 13, 1e200),
            (5, 8, 2.0),
            (6, 2, 1.0),
        ] {
            case::<1>(seed, d, scale);
            case::<2>(seed, d, scale);
            case::<3>(seed, d, scale);
            case::<4>(seed, d, scale);
        }
    }
}
