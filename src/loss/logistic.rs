//! Multinomial logistic regression (softmax cross-entropy) with a 1 appended to x for the bias.
//! Appendix D: ||grad l|| = sqrt(sum_{j != y} p_j^2 + (1 - p_y)^2) ||x~|| <= sqrt(2) ||x~||.

use super::kernel::{check_dim, gather_with_bias, sized};
use super::softmax::{check_class_labels, softmax_in_place, softmax_residual_in_place};
use super::{ClipStats, LipschitzForm, Loss, PerSampleBound, Rows, Scratch};
use super::{softmax_onepass, softmax_small};
use crate::dataset::Dataset;
use crate::error::Result;
use crate::linalg::{Mat, dot, gemm};

/// Softmax cross-entropy, Eq. (7), with parameters W in R^{m x (d+1)} stored row-major:
/// w_j = W[j, ..] is class j's weight vector, its last entry the bias.
#[derive(Debug, Clone)]
pub struct SoftmaxLoss {
    d: usize,
    m: usize,
    kernel: SoftmaxKernel,
}

/// Which kernel computes the clipped sum for m > 4 classes (m <= 4 always takes the direct
/// kernel). All compute the same sum (Eq. 2 with Eq. 8's ghost norms); they differ in speed and
/// in floating-point summation order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SoftmaxKernel {
    /// By shape: [`SoftmaxKernel::OnePass`] when [`onepass_wins`] says so and the machine has
    /// AVX2 and FMA, else [`SoftmaxKernel::Gemm`].
    #[default]
    Auto,
    /// Gather the batch, then two matrix products.
    Gemm,
    /// One pass over each sampled row (falls back to `Gemm` without AVX2/FMA or for m > 16).
    OnePass,
}

/// The shape rule of [`SoftmaxKernel::Auto`]: the one-pass kernel for 5 <= m <= 16 classes and
/// d >= [`ONEPASS_MIN_D`] features, the two-GEMM path otherwise.
///
/// Why: per feature and row the one-pass kernel does ceil(m/4) 4-lane FMAs twice (logits and
/// update) with the model held in L1/L2, while the GEMM path pays a copy of the row and two
/// thin products whose packing overhead grows as m shrinks. For m = 10 (the speed benchmark's
/// size c, d = 784) the one-pass kernel is faster; for m = 100 (size b) the GEMM path runs near
/// the machine's peak and wins. Below d = 256 (e.g. the digits clip-norm study, d = 64) the gain
/// is small and the GEMM path is kept, so its committed results do not change. The crossover
/// is measured by `cargo bench --bench dpsgd_step` (group `softmax_kernel_crossover`).
pub fn onepass_wins(d: usize, m: usize) -> bool {
    (5..=softmax_onepass::MAX_CLASSES).contains(&m) && d >= ONEPASS_MIN_D
}

/// See [`onepass_wins`].
pub const ONEPASS_MIN_D: usize = 256;

impl SoftmaxLoss {
    /// d features, m classes.
    pub fn new(d: usize, m: usize) -> Self {
        SoftmaxLoss {
            d,
            m,
            kernel: SoftmaxKernel::Auto,
        }
    }

    /// The same loss with the clipped-sum kernel forced (tests and benches compare them).
    pub fn with_kernel(mut self, kernel: SoftmaxKernel) -> Self {
        self.kernel = kernel;
        self
    }

    /// True when the clipped sum takes the one-pass kernel (m > 4 classes, chosen by
    /// [`SoftmaxKernel`] and available on this machine).
    pub fn uses_onepass(&self) -> bool {
        self.m > 4 && self.use_onepass()
    }

    fn use_onepass(&self) -> bool {
        let shape_ok = (5..=softmax_onepass::MAX_CLASSES).contains(&self.m);
        let wanted = match self.kernel {
            SoftmaxKernel::Auto => onepass_wins(self.d, self.m),
            SoftmaxKernel::OnePass => shape_ok,
            SoftmaxKernel::Gemm => false,
        };
        wanted && softmax_onepass::available()
    }
    fn logits(&self, w: &[f64], x: &[f64], z: &mut [f64]) {
        let dd = self.d + 1;
        for (j, zj) in z.iter_mut().enumerate() {
            let wj = &w[j * dd..(j + 1) * dd];
            *zj = dot(&wj[..self.d], x) + wj[self.d];
        }
    }
}

impl SoftmaxLoss {
    /// The matrix-product path: gather X~ for the batch, Z = X~ W^T, E = softmax(Z) - onehot,
    /// per-sample clip factors from ||e_i|| ||x~_i||, then (C E)^T X~.
    fn clipped_sum_gemm(
        &self,
        w: &[f64],
        data: &Dataset,
        batch: &[usize],
        bound: PerSampleBound,
        out: &mut [f64],
        scratch: &mut Scratch,
    ) -> ClipStats {
        let (d, m, bsz) = (self.d, self.m, batch.len());
        let dd = d + 1;
        let xb = sized(&mut scratch.batch_rows, bsz * dd);
        let xsq = sized(&mut scratch.row_sq, bsz);
        gather_with_bias(data, batch, xb, Some(&mut *xsq));
        let e = sized(&mut scratch.residuals, bsz * m);
        // Z = X~ W^T (B x m)
        gemm(1.0, Mat::rm(xb, bsz, dd), Mat::rm_t(w, m, dd), 0.0, e, m);
        let mut stats = ClipStats::new(bsz);
        for (r, &i) in batch.iter().enumerate() {
            let er = &mut e[r * m..(r + 1) * m];
            softmax_residual_in_place(er, data.y[i] as usize);
            let norm = (dot(er, er) * xsq[r]).sqrt();
            let c = bound.factor(norm);
            stats.record(norm, c);
            if c != 1.0 {
                er.iter_mut().for_each(|v| *v *= c);
            }
        }
        // out = (C E)^T X~ (m x (d+1))
        gemm(
            1.0,
            Mat::rm_t(e, bsz, m),
            Mat::rm(xb, bsz, dd),
            0.0,
            out,
            dd,
        );
        stats
    }
}

/// From this many parameters m (d + 1) on, the matrix-product path splits each batch in two
/// halves processed in parallel (sizes b and c of the speed benchmark are above it).
const PAR_MIN_PARAMS: usize = 4096;

/// Appendix D, Eq. (8): G(x, y) = sqrt(2) ||x~|| = sqrt(2 (||x||^2 + 1)).
pub fn lipschitz_form() -> LipschitzForm {
    LipschitzForm::BiasAugmented { a: 1.0, b: 0.0 }
}

impl Loss for SoftmaxLoss {
    fn name(&self) -> &'static str {
        "logistic"
    }

    fn param_dim(&self) -> usize {
        self.m * (self.d + 1)
    }

    fn check_data(&self, data: &Dataset) -> Result<()> {
        check_dim(self.d, data)?;
        check_class_labels(data, self.m)
    }

    /// Eq. (7): -log p_y = logsumexp(z) - z_y.
    fn value(&self, w: &[f64], x: &[f64], y: f64) -> f64 {
        let mut z = vec![0.0; self.m];
        self.logits(w, x, &mut z);
        let zy = z[y as usize];
        softmax_in_place(&mut z) - zy
    }

    /// grad_W l = (p - e_y) x~^T.
    fn grad(&self, w: &[f64], x: &[f64], y: f64, out: &mut [f64]) {
        let dd = self.d + 1;
        let mut z = vec![0.0; self.m];
        self.logits(w, x, &mut z);
        softmax_residual_in_place(&mut z, y as usize);
        for j in 0..self.m {
            let row = &mut out[j * dd..(j + 1) * dd];
            for (r, xk) in row.iter_mut().zip(x) {
                *r = z[j] * xk;
            }
            row[self.d] = z[j];
        }
    }

    fn lipschitz_form(&self) -> Option<LipschitzForm> {
        Some(lipschitz_form())
    }

    /// Ghost norms: ||grad_i|| = ||e_i|| ||x~_i|| with e_i = p_i - e_{y_i} (Eq. 8), so
    /// sum_i c_i e_i x~_i^T = (C E)^T X~ is one matrix product; no per-sample gradient is formed.
    /// The same paths serve clipping and automatic clipping's normalization (the one-pass kernel
    /// clips only).
    fn bounded_grad_sum(
        &self,
        w: &[f64],
        data: Rows<'_>,
        batch: &[usize],
        bound: PerSampleBound,
        out: &mut [f64],
        scratch: &mut Scratch,
    ) -> ClipStats {
        let data = data.data();
        let (d, m, bsz) = (self.d, self.m, batch.len());
        let dd = d + 1;
        match m {
            1 => return softmax_small::clipped_sum::<1>(w, data, batch, bound, out, scratch),
            2 => return softmax_small::clipped_sum::<2>(w, data, batch, bound, out, scratch),
            3 => return softmax_small::clipped_sum::<3>(w, data, batch, bound, out, scratch),
            4 => return softmax_small::clipped_sum::<4>(w, data, batch, bound, out, scratch),
            _ => {}
        }
        // The one-pass kernel clips at tau; automatic clipping's normalization takes the GEMM path.
        let clip_tau = match bound {
            PerSampleBound::Clip(t) if self.use_onepass() => Some(t),
            _ => None,
        };
        let onepass = clip_tau.is_some();
        let split = dd * m >= PAR_MIN_PARAMS && bsz >= 2;
        if !onepass && !split {
            return self.clipped_sum_gemm(w, data, batch, bound, out, scratch);
        }
        let mp = softmax_onepass::padded(m);
        // W^T once per step, shared by both halves (taken out of the scratch while in use).
        let mut wt_buf = std::mem::take(&mut scratch.weights_t);
        let wt: &[f64] = if onepass {
            let wt = sized(&mut wt_buf, dd * mp);
            softmax_onepass::transpose_padded(w, m, dd, wt);
            wt
        } else {
            &[]
        };
        // One half (or all) of the batch into `o`: gemm writes m x (d + 1), one-pass (d + 1) x mp.
        let part = |rows: &[usize], o: &mut [f64], s: &mut Scratch| {
            if onepass {
                softmax_onepass::clipped_sum(wt, m, data, rows, clip_tau.unwrap_or(0.0), o)
            } else {
                self.clipped_sum_gemm(w, data, rows, bound, o, s)
            }
        };
        let p = out.len();
        let len = if onepass { dd * mp } else { p };
        if !split {
            let mut gt = std::mem::take(&mut scratch.partial_out);
            let st = part(batch, sized(&mut gt, len), scratch);
            softmax_onepass::untranspose(&gt, None, m, dd, out);
            scratch.partial_out = gt;
            scratch.weights_t = wt_buf;
            return st;
        }
        // Two fixed halves of the batch on two tasks, summed in a fixed order: the split depends
        // only on the batch, never on the thread count, so results are bit-identical for any
        // RAYON_NUM_THREADS (one thread runs both halves in turn).
        if scratch.parts.len() < 2 {
            scratch.parts.resize_with(2, Scratch::default);
        }
        let (left, right) = batch.split_at(bsz / 2);
        let (p0, p1) = scratch.parts.split_at_mut(1);
        let (s0, s1) = (&mut p0[0], &mut p1[0]);
        let (st0, st1) = rayon::join(
            || {
                let mut o = std::mem::take(&mut s0.partial_out);
                let st = part(left, sized(&mut o, len), s0);
                s0.partial_out = o;
                st
            },
            || {
                let mut o = std::mem::take(&mut s1.partial_out);
                let st = part(right, sized(&mut o, len), s1);
                s1.partial_out = o;
                st
            },
        );
        if onepass {
            softmax_onepass::untranspose(&s0.partial_out, Some(&s1.partial_out), m, dd, out);
        } else {
            for ((o, a), b) in out
                .iter_mut()
                .zip(&s0.partial_out[..p])
                .zip(&s1.partial_out[..p])
            {
                *o = a + b;
            }
        }
        scratch.weights_t = wt_buf;
        st0.merged(st1)
    }
}
