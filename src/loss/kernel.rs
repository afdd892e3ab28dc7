//! The plumbing of the batched kernels: reusable buffers ([`Scratch`]), per-run tables of the
//! data set ([`RowNorms`], [`LabelClip`]), compile-time dimensions ([`by_dim`]) and the
//! materialized fallback that every loss can use.

use super::Loss;
use super::clip::{ClipStats, PerSampleBound, scaled_weight};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::linalg::{axpy, dot, norm2};

/// Reusable buffers, grown on demand and never shrunk, so that the step loop does not allocate
/// once they have reached their working size.
#[derive(Debug, Default, Clone)]
///
/// Each buffer has one role; a kernel uses those it needs, sized with [`sized`].
pub struct Scratch {
    /// The batch's rows gathered contiguously, x~_i = (x_i, 1) per row (softmax GEMM path,
    /// tanh network).
    pub(crate) batch_rows: Vec<f64>,
    /// ||x~_i||^2 per batch row (softmax GEMM path).
    pub(crate) row_sq: Vec<f64>,
    /// Output-layer residuals e_i = p_i - e_{y_i} per batch row (softmax GEMM path, tanh network).
    pub(crate) residuals: Vec<f64>,
    /// Hidden-layer activations per batch row (tanh network).
    pub(crate) hidden: Vec<f64>,
    /// Hidden-layer residuals per batch row (tanh network).
    pub(crate) hidden_residuals: Vec<f64>,
    /// The weights transposed, W^T (softmax one-pass and small-m kernels).
    pub(crate) weights_t: Vec<f64>,
    /// A kernel's output before it is transposed or summed into `out` (softmax kernels, one per
    /// half of a split batch).
    pub(crate) partial_out: Vec<f64>,
    /// One materialized per-sample gradient ([`materialized_bounded_sum`]).
    pub(crate) grad: Vec<f64>,
    /// Scratch for the parts of a batch processed in parallel.
    pub(crate) parts: Vec<Scratch>,
    /// ||x_i||^2 and ||x_i|| of every row of the run's data set, when the caller filled them.
    pub(crate) rows: RowNorms,
    /// The clip factors of a loss whose G_i is the label, at the last repeated tau.
    pub(crate) label_clip: LabelClip,
}

/// For a loss with G_i = y_i ([`LipschitzForm::Label`]: the weighted sharp loss), the clip factor
/// c_i = clip_factor(y_i, tau) does not depend on w, so at a fixed tau the products c_i y_i and
/// whether c_i < 1 are per-row constants. They are filled (O(n)) the second time in a row that a
/// step uses the same tau, so a constant clip norm costs one division per sample instead of two,
/// and a schedule that changes tau every step never pays the O(n). Values are computed exactly as
/// the kernel computes them, so results are bit-identical with or without the table. Like
/// [`RowNorms`], they are used only for the data set the row norms were filled from (which the
/// [`crate::dpsgd::Stepper`] keeps borrowed and unchanged).
#[derive(Debug, Default, Clone)]
pub struct LabelClip {
    /// (data set key, tau's bits) the table holds.
    key: Option<((usize, usize, usize), u64)>,
    /// tau of the previous call, when the table was not used.
    last_tau: Option<u64>,
    /// c_i y_i, then whether c_i < 1, per row.
    scaled: Vec<(f64, bool)>,
}

impl LabelClip {
    /// The table for `data` at `tau`, filling it on the second consecutive call with the same tau;
    /// `None` on the first such call or when `rows` was not filled from `data`.
    #[inline]
    pub(crate) fn at(
        &mut self,
        rows: &RowNorms,
        data: &Dataset,
        tau: f64,
    ) -> Option<&[(f64, bool)]> {
        let key = rows.of(data)?.key.map(|k| (k, tau.to_bits()));
        if self.key != key {
            if self.last_tau != Some(tau.to_bits()) {
                self.last_tau = Some(tau.to_bits());
                return None;
            }
            self.scaled.clear();
            self.scaled
                .extend(data.y.iter().map(|&y| scaled_weight(y, tau)));
            self.key = key;
        }
        Some(&self.scaled)
    }
}

/// ||x_i||^2 = `dot(x_i, x_i)`, ||x_i|| and whether x_i = 0, for every row of one data set,
/// computed once per run ([`crate::dpsgd::Stepper::new`] fills them) so that the per-sample
/// kernels of the linear losses and of Appendix L read one number instead of the row. The values
/// are those the kernels would compute ([`crate::linalg::dot`], then `sqrt`), so the results are bit-identical
/// with or without them. They belong to the data set they were filled from (matched by buffer
/// address and shape); for any other data set [`RowNorms::of`] gives `None` and the kernels
/// compute the norms.
#[derive(Debug, Default, Clone)]
pub struct RowNorms {
    key: Option<(usize, usize, usize)>,
    /// ||x_i||^2 as [`crate::linalg::dot`] computes it.
    pub(crate) sq: Vec<f64>,
    /// ||x_i||.
    pub(crate) norm: Vec<f64>,
    /// x_i = 0 exactly (not only ||x_i||^2 = 0, which a tiny row reaches by underflow).
    pub(crate) zero: Vec<bool>,
}

impl RowNorms {
    fn key(data: &Dataset) -> (usize, usize, usize) {
        (data.x.as_ptr() as usize, data.x.len(), data.d)
    }

    /// Computes the norms of `data`'s rows (O(n d), allocates). Crate-private: the caller must keep
    /// `data` alive and unchanged while the norms are used (the [`crate::dpsgd::Stepper`] borrows it).
    pub(crate) fn fill(&mut self, data: &Dataset) {
        self.sq.clear();
        self.norm.clear();
        self.zero.clear();
        for r in data.x.chunks_exact(data.d) {
            let sq = dot(r, r);
            self.sq.push(sq);
            self.norm.push(sq.sqrt());
            self.zero.push(r.iter().all(|&v| v == 0.0));
        }
        self.key = Some(Self::key(data));
    }

    /// The norms, if they were filled from `data`.
    #[inline]
    pub(crate) fn of(&self, data: &Dataset) -> Option<&Self> {
        (self.key == Some(Self::key(data))).then_some(self)
    }
}

/// The first `len` entries of `buf`, growing it (never shrinking) when it is shorter: the
/// step loop stops allocating once every buffer has reached its working size.
#[inline]
pub(crate) fn sized(buf: &mut Vec<f64>, len: usize) -> &mut [f64] {
    if buf.len() < len {
        buf.resize(len, 0.0);
    }
    &mut buf[..len]
}

/// Copies the batch's rows into `xb` (row-major, |batch| x (d + 1)) with a 1 appended for the
/// bias, and returns ||x~_i||^2 per row in `sq` when given.
pub(crate) fn gather_with_bias(
    data: &Dataset,
    batch: &[usize],
    xb: &mut [f64],
    mut sq: Option<&mut [f64]>,
) {
    let (d, dd) = (data.d, data.d + 1);
    for (r, &i) in batch.iter().enumerate() {
        let row = &mut xb[r * dd..(r + 1) * dd];
        row[..d].copy_from_slice(data.row(i));
        row[d] = 1.0;
        if let Some(sq) = sq.as_deref_mut() {
            sq[r] = dot(row, row);
        }
    }
}

/// Calls the kernel `f::<D>(args)` with the data dimension `d` as the compile-time constant D
/// for the small dimensions the Monte Carlo experiments use (d = 1..=8, 16, 32), and D = 0 (the
/// length read at run time) otherwise. With D known, the per-sample dot products and axpys of a
/// d = 5 problem unroll completely; the arithmetic, and so every result, is the same either way.
macro_rules! by_dim {
    ($d:expr, $($f:ident)::+ ($($arg:expr),* $(,)?)) => {
        match $d {
            1 => $($f)::+::<1>($($arg),*),
            2 => $($f)::+::<2>($($arg),*),
            3 => $($f)::+::<3>($($arg),*),
            4 => $($f)::+::<4>($($arg),*),
            5 => $($f)::+::<5>($($arg),*),
            6 => $($f)::+::<6>($($arg),*),
            7 => $($f)::+::<7>($($arg),*),
            8 => $($f)::+::<8>($($arg),*),
            16 => $($f)::+::<16>($($arg),*),
            32 => $($f)::+::<32>($($arg),*),
            _ => $($f)::+::<0>($($arg),*),
        }
    };
}
pub(crate) use by_dim;

/// `v` as a slice of the compile-time length D (D = 0: its own length), for [`by_dim`] kernels.
#[inline(always)]
pub(crate) fn dim_view<const D: usize>(v: &[f64]) -> &[f64] {
    if D == 0 { v } else { &v[..D] }
}

/// Runs the [`by_dim`] kernel `f` on a zeroed accumulator for `out` and leaves the sum in `out`.
/// With D > 0 the accumulator is a local array that the compiler keeps in registers, so a
/// per-sample `out += s x_i` does not wait on a store and reload of `out` (D = 0: `out` itself).
/// Same additions in the same order either way, so the results are bit-identical.
#[inline(always)]
pub(crate) fn accumulate<const D: usize, R>(out: &mut [f64], f: impl FnOnce(&mut [f64]) -> R) -> R {
    if D == 0 {
        out.fill(0.0);
        f(out)
    } else {
        let mut acc = [0.0; D];
        let r = f(&mut acc);
        out[..D].copy_from_slice(&acc);
        r
    }
}

/// Whether this is x86-64 with AVX2 (and FMA, when `fma`), detected at run time: the vector
/// kernels' gate (false on every other architecture).
#[inline]
pub(crate) fn x86_has_avx2(fma: bool) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
            && (!fma || std::arch::is_x86_feature_detected!("fma"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = fma;
        false
    }
}

/// Checks that the data has the `expected` number of features.
pub(crate) fn check_dim(expected: usize, data: &Dataset) -> Result<()> {
    if data.d != expected {
        return Err(Error::data(format!(
            "dimension mismatch: the loss expects d = {expected} features, the data has {}",
            data.d
        )));
    }
    Ok(())
}

/// sum_{i in batch} bound(grad f_i(w)) into `out`, one materialized per-sample gradient at a time
/// (the fallback of losses whose gradient does not factor). `clipped` counts factors below 1.
pub fn materialized_bounded_sum(
    loss: &(impl Loss + ?Sized),
    w: &[f64],
    data: &Dataset,
    batch: &[usize],
    bound: PerSampleBound,
    out: &mut [f64],
    scratch: &mut Scratch,
) -> ClipStats {
    let p = out.len();
    out.fill(0.0);
    let g = sized(&mut scratch.grad, p);
    let mut stats = ClipStats::new(batch.len());
    for &i in batch {
        loss.grad(w, data.row(i), data.y[i], g);
        let c = bound.factor(norm2(g));
        stats.record(c);
        axpy(c, g, out);
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loss::{AppendixLLoss, HuberLoss, RobustLoss, SharpLoss};

    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|t| t.to_bits()).collect()
    }

    /// The cached row norms give the same clipped sums, bit for bit, as computing them: for the
    /// linear losses and Appendix L, at compile-time and run-time d, with exactly-zero rows
    /// (skipped by Appendix L) and tiny rows whose ||x||^2 underflows to 0 (must not be skipped).
    #[test]
    fn row_norm_cache_is_bit_identical_to_computing_the_norms() {
        for d in [2, 5, 33] {
            let n = 40;
            let x: Vec<f64> = (0..n * d)
                .map(|j| match (j / d) % 4 {
                    0 => 0.0,
                    1 => 1e-200 * (1 + j % 3) as f64,
                    _ => ((j * 7919) % 101) as f64 / 20.0 - 2.5,
                })
                .collect();
            let y: Vec<f64> = (0..n).map(|i| (i % 7) as f64 - 3.0).collect();
            let data = Dataset::new(x, y, d).unwrap();
            let losses: Vec<Box<dyn Loss>> = vec![
                Box::new(HuberLoss::new(d, 1.0).unwrap()),
                Box::new(RobustLoss::new(d)),
                Box::new(AppendixLLoss::new(d)),
            ];
            // all rows, with repeats; and only the zero and tiny rows, where skipping a tiny row
            // would change the sum (next to O(1) rows its contribution rounds away)
            let full: Vec<usize> = (0..n).chain([3, 1, 0]).collect();
            let small: Vec<usize> = (0..n).filter(|i| i % 4 < 2).collect();
            let mut cached = Scratch::default();
            cached.rows.fill(&data);
            assert!(cached.rows.of(&data).is_some());
            for (loss, batch) in losses.iter().flat_map(|l| [(l, &full), (l, &small)]) {
                for scale in [0.0, 0.1, 3.0] {
                    let w: Vec<f64> = (0..d).map(|k| scale * ((k % 5) as f64 - 1.5)).collect();
                    for tau in [1e-3, 1.0, 1e3] {
                        let (mut a, mut b) = (vec![1.0; d], vec![2.0; d]);
                        let sa = loss.clipped_grad_sum(&w, &data, batch, tau, &mut a, &mut cached);
                        let mut plain = Scratch::default();
                        let sb = loss.clipped_grad_sum(&w, &data, batch, tau, &mut b, &mut plain);
                        assert_eq!(sa, sb, "{} d {d}", loss.name());
                        assert_eq!(
                            bits(&a),
                            bits(&b),
                            "{} d {d} scale {scale} tau {tau}",
                            loss.name()
                        );
                    }
                }
            }
        }
    }
    /// The sharp loss's table of c_i a_i ([`LabelClip`]) gives the sum bit for bit as computed
    /// without it, through a sequence of clip norms that fills the table, changes tau (the table
    /// must not be reused at another tau) and returns to an earlier one; with weights 0, weights
    /// equal to tau, and centers equal to w (r = 0, skipped, so not counted as clipped).
    #[test]
    fn sharp_label_table_is_bit_identical() {
        for d in [2, 5, 33] {
            let n = 60;
            let x: Vec<f64> = (0..n * d)
                .map(|j| ((j * 7919) % 103) as f64 / 17.0 - 3.0)
                .collect();
            let y: Vec<f64> = (0..n)
                .map(|i| match i % 5 {
                    0 => 0.0,
                    1 => 1.0,
                    _ => ((i * 37) % 23) as f64 / 7.0 + 0.01,
                })
                .collect();
            let data = Dataset::new(x, y, d).unwrap();
            let loss = SharpLoss::new(d);
            let batch: Vec<usize> = (0..n).chain([7, 2, 0]).collect();
            // w equal to row 3's center: that sample has r = 0
            let w = data.row(3).to_vec();
            let mut cached = Scratch::default();
            cached.rows.fill(&data);
            let taus = [1.0, 1.0, 1.0, 2.5, 2.5, 0.3, 1.0, 1.0, 2.5, 2.5, 2.5];
            let mut used = 0;
            for (t, &tau) in taus.iter().enumerate() {
                let (mut a, mut b) = (vec![1.0; d], vec![2.0; d]);
                let sa = loss.clipped_grad_sum(&w, &data, &batch, tau, &mut a, &mut cached);
                used += usize::from(cached.label_clip.key.is_some_and(|k| k.1 == tau.to_bits()));
                let sb =
                    loss.clipped_grad_sum(&w, &data, &batch, tau, &mut b, &mut Scratch::default());
                assert_eq!(sa, sb, "d {d} step {t} tau {tau}");
                assert!(
                    sa.clipped > 0 && sa.clipped < batch.len(),
                    "tau {tau} clips some"
                );
                assert_eq!(bits(&a), bits(&b), "d {d} step {t} tau {tau}");
            }
            // the table served the repeated taus (steps 1, 2, 4, 7, 9, 10), so it was tested
            assert_eq!(used, 6, "d {d}");
        }
    }
}
