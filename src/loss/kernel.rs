//! The plumbing of the batched kernels: reusable buffers ([`Scratch`]), per-run tables of the
//! data set ([`RunTables`], handed to the kernels as [`Rows`]), compile-time dimensions ([`by_dim`]) and the
//! materialized fallback that every loss can use.

use super::Loss;
use super::clip::{ClipStats, PerSampleBound, scaled_weight};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::linalg::{axpy, dot, norm2};

/// Reusable buffers, grown on demand and never shrunk, so that the step loop does not allocate
/// once they have reached their working size. Each buffer has one role; a kernel uses those it
/// needs, sized with `sized`. Nothing in it depends on the data set (its per-run tables are
/// [`RunTables`], passed to the kernels with the data as [`Rows`]).
#[derive(Debug, Default, Clone)]
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
}

/// The data set a batched kernel reads, with the per-run tables computed from it when the caller
/// has them ([`RunTables::rows`]), or without ([`Rows::from`] a `&Dataset`: the kernels then
/// compute what the tables would hold). Dereferences to the data set.
#[derive(Debug, Clone, Copy)]
pub struct Rows<'a> {
    data: &'a Dataset,
    tables: Option<&'a RunTables<'a>>,
}

impl<'a> From<&'a Dataset> for Rows<'a> {
    fn from(data: &'a Dataset) -> Self {
        Rows { data, tables: None }
    }
}

impl std::ops::Deref for Rows<'_> {
    type Target = Dataset;
    fn deref(&self) -> &Dataset {
        self.data
    }
}

impl<'a> Rows<'a> {
    /// The data set.
    pub fn data(&self) -> &'a Dataset {
        self.data
    }

    /// The row norms of this data set, when the caller computed them.
    #[inline]
    pub(crate) fn norms(&self) -> Option<&'a RowNorms> {
        self.tables.map(|t| &t.norms)
    }

    /// The weighted sharp loss's table of (c_i a_i, c_i < 1) at clip norm `tau`, when the caller
    /// computed it for this tau ([`RunTables::new`] with a constant clip norm).
    #[inline]
    pub(crate) fn label_clip(&self, tau: f64) -> Option<&'a [(f64, bool)]> {
        let t = self.tables?.label_clip.as_ref()?;
        (t.tau_bits == tau.to_bits()).then_some(&t.scaled[..])
    }
}

/// The per-run tables of one data set: computed once from it (O(n d)), borrowed with it, and
/// handed to the kernels together with it ([`RunTables::rows`]), so a table can never be read
/// for another data set. The values are exactly those the kernels would compute, so results are
/// bit-identical with or without the tables.
#[derive(Debug, Clone)]
pub struct RunTables<'a> {
    data: &'a Dataset,
    norms: RowNorms,
    label_clip: Option<LabelClip>,
}

impl<'a> RunTables<'a> {
    /// The tables of `data`: its row norms, and, when the run clips at one constant tau, the
    /// clip factors of a loss whose G_i is the label (`LabelClip`).
    pub fn new(data: &'a Dataset, constant_tau: Option<f64>) -> Self {
        RunTables {
            data,
            norms: RowNorms::of(data),
            label_clip: constant_tau.map(|tau| LabelClip {
                tau_bits: tau.to_bits(),
                scaled: data.y.iter().map(|&y| scaled_weight(y, tau)).collect(),
            }),
        }
    }

    /// The data set with these tables, for a kernel.
    pub fn rows(&self) -> Rows<'_> {
        Rows {
            data: self.data,
            tables: Some(self),
        }
    }
}

/// For a loss with G_i = y_i ([`super::LipschitzForm::Label`]: the weighted sharp loss), the clip
/// factor c_i = clip_factor(y_i, tau) does not depend on w, so at a constant tau the products
/// c_i y_i and whether c_i < 1 are per-row constants: one division per sample instead of two.
#[derive(Debug, Clone)]
struct LabelClip {
    /// The tau (its bits) the table was computed at.
    tau_bits: u64,
    /// c_i y_i, then whether c_i < 1, per row.
    scaled: Vec<(f64, bool)>,
}

/// ||x_i||^2 = `dot(x_i, x_i)`, ||x_i|| and whether x_i = 0, for every row of one data set, so
/// that the per-sample kernels of the linear losses and of Appendix L read one number instead of
/// the row. The values are those the kernels would compute ([`crate::linalg::dot`], then `sqrt`).
#[derive(Debug, Default, Clone)]
pub(crate) struct RowNorms {
    /// ||x_i||^2 as [`crate::linalg::dot`] computes it.
    pub(crate) sq: Vec<f64>,
    /// ||x_i||.
    pub(crate) norm: Vec<f64>,
    /// x_i = 0 exactly (not only ||x_i||^2 = 0, which a tiny row reaches by underflow).
    pub(crate) zero: Vec<bool>,
}

impl RowNorms {
    /// The norms of `data`'s rows (O(n d)).
    fn of(data: &Dataset) -> Self {
        let mut t = RowNorms::default();
        for r in data.x.chunks_exact(data.d) {
            let sq = dot(r, r);
            t.sq.push(sq);
            t.norm.push(sq.sqrt());
            t.zero.push(r.iter().all(|&v| v == 0.0));
        }
        t
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
        let gn = norm2(g);
        let c = bound.factor(gn);
        stats.record(gn, c);
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
            let tables = RunTables::new(&data, None);
            assert!(tables.rows().norms().is_some());
            for (loss, batch) in losses.iter().flat_map(|l| [(l, &full), (l, &small)]) {
                for scale in [0.0, 0.1, 3.0] {
                    let w: Vec<f64> = (0..d).map(|k| scale * ((k % 5) as f64 - 1.5)).collect();
                    for tau in [1e-3, 1.0, 1e3] {
                        let (mut a, mut b) = (vec![1.0; d], vec![2.0; d]);
                        let mut cached = Scratch::default();
                        let clip = PerSampleBound::Clip(tau);
                        let sa = loss.bounded_grad_sum(
                            &w,
                            tables.rows(),
                            batch,
                            clip,
                            &mut a,
                            &mut cached,
                        );
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
    /// The sharp loss's table of c_i a_i (`LabelClip`, computed at the run's constant tau = 1)
    /// gives the sum bit for bit as computed without it; at any other tau it is not used (a
    /// table read at the wrong tau would change the sum); with weights 0, weights equal to tau,
    /// and centers equal to w (r = 0, skipped, so not counted as clipped).
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
            let tables = RunTables::new(&data, Some(1.0));
            let taus = [1.0, 1.0, 1.0, 2.5, 2.5, 0.3, 1.0, 1.0, 2.5, 2.5, 2.5];
            let mut used = 0;
            for (t, &tau) in taus.iter().enumerate() {
                let (mut a, mut b) = (vec![1.0; d], vec![2.0; d]);
                let clip = PerSampleBound::Clip(tau);
                let mut cached = Scratch::default();
                let sa =
                    loss.bounded_grad_sum(&w, tables.rows(), &batch, clip, &mut a, &mut cached);
                used += usize::from(tables.rows().label_clip(tau).is_some());
                let sb =
                    loss.clipped_grad_sum(&w, &data, &batch, tau, &mut b, &mut Scratch::default());
                assert_eq!(sa, sb, "d {d} step {t} tau {tau}");
                assert!(
                    sa.clipped > 0 && sa.clipped < batch.len(),
                    "tau {tau} clips some"
                );
                assert_eq!(bits(&a), bits(&b), "d {d} step {t} tau {tau}");
            }
            // the table served the steps at tau = 1 (0, 1, 2, 6, 7), so it was tested
            assert_eq!(used, 5, "d {d}");
        }
    }
}
