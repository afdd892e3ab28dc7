//! Per-sample losses f_i(w) = l(w, x_i, y_i) with their gradients and per-sample Lipschitz
//! constants G(x, y) (Assumption 4.1), and a batched fast path for the sum of clipped
//! per-sample gradients.

pub mod appendix_l;
mod glm;
pub mod huber;
pub mod logistic;
pub mod robust;
pub mod sharp;
mod softmax_onepass;
mod softmax_small;
pub mod tanh_net;

use serde::{Deserialize, Serialize};

use crate::dataset::Dataset;
use crate::error::{Error, Result};

pub use appendix_l::AppendixLLoss;
pub use huber::HuberLoss;
pub use logistic::{SoftmaxKernel, SoftmaxLoss};
pub use robust::RobustLoss;
pub use sharp::SharpLoss;
#[doc(hidden)]
pub use softmax_small::bench_clipped_sum2;
pub use tanh_net::TanhNet;

/// Counts from one clipped-sum call.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ClipStats {
    /// Samples whose gradient norm exceeded tau (and were scaled down).
    pub clipped: usize,
    /// Samples processed.
    pub count: usize,
}

/// Reusable buffers, grown on demand and never shrunk, so that the step loop does not allocate
/// once they have reached their working size.
#[derive(Debug, Default, Clone)]
pub struct Scratch {
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    pub c: Vec<f64>,
    pub e: Vec<f64>,
    pub f: Vec<f64>,
    /// Scratch for the parts of a batch processed in parallel.
    pub parts: Vec<Scratch>,
    /// ||x_i||^2 and ||x_i|| of every row of the run's data set, when the caller filled them.
    pub rows: RowNorms,
    /// The clip factors of a loss whose G_i is the label, at the last repeated tau.
    pub label_clip: LabelClip,
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
                .extend(data.y.iter().map(|&y| sharp::scaled_weight(y, tau)));
            self.key = key;
        }
        Some(&self.scaled)
    }
}

/// ||x_i||^2 = `dot(x_i, x_i)`, ||x_i|| and whether x_i = 0, for every row of one data set,
/// computed once per run ([`crate::dpsgd::Stepper::new`] fills them) so that the per-sample
/// kernels of the linear losses and of Appendix L read one number instead of the row. The values
/// are those the kernels would compute ([`dot`], then `sqrt`), so the results are bit-identical
/// with or without them. They belong to the data set they were filled from (matched by buffer
/// address and shape); for any other data set [`RowNorms::of`] gives `None` and the kernels
/// compute the norms.
#[derive(Debug, Default, Clone)]
pub struct RowNorms {
    key: Option<(usize, usize, usize)>,
    /// ||x_i||^2 as [`dot`] computes it.
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

/// Resizes `buf` to `len` (growing capacity only when needed) and returns it.
#[inline]
pub fn buf(buf: &mut Vec<f64>, len: usize) -> &mut [f64] {
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
pub(crate) fn fixed<const D: usize>(v: &[f64]) -> &[f64] {
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

/// clip(z, c) factor of Eq. (2): min(1, c / ||z||), with the convention 1 at z = 0.
///
/// A select, not a branch: whether a sample is clipped is data-dependent, and where a fair share
/// of samples is clipped a branch on it is mispredicted often (`benches/verify_step.rs`, which
/// clips such a share: 8-20% of a step; where clipping is rare the branch was predicted anyway).
#[inline]
pub fn clip_factor(norm: f64, tau: f64) -> f64 {
    std::hint::select_unpredictable(norm > tau, tau / norm, 1.0)
}

/// How each per-sample gradient is bounded before the sum: clipping at tau (Eq. (2)) or the
/// normalization of automatic clipping, g / (||g|| + gamma) (Bu et al. 2023, "Automatic
/// clipping"). Either way one sample's contribution has norm at most [`PerSampleBound::sensitivity`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PerSampleBound {
    /// clip(g, tau) = min(1, tau / ||g||) g, Eq. (2).
    Clip(f64),
    /// g / (||g|| + gamma), gamma > 0 (Bu et al. use gamma = 0.01).
    Normalize(f64),
}

impl PerSampleBound {
    /// The factor c with bounded(g) = c g, from ||g||.
    #[inline]
    pub fn factor(&self, norm: f64) -> f64 {
        match *self {
            PerSampleBound::Clip(tau) => clip_factor(norm, tau),
            PerSampleBound::Normalize(gamma) => 1.0 / (norm + gamma),
        }
    }

    /// The L2 sensitivity of one sample's bounded gradient: tau, or 1 for the normalization
    /// (||g|| / (||g|| + gamma) < 1).
    pub fn sensitivity(&self) -> f64 {
        match *self {
            PerSampleBound::Clip(tau) => tau,
            PerSampleBound::Normalize(_) => 1.0,
        }
    }
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
    let g = buf(&mut scratch.a, p);
    let mut stats = ClipStats {
        clipped: 0,
        count: batch.len(),
    };
    for &i in batch {
        loss.grad(w, data.row(i), data.y[i], g);
        let c = bound.factor(norm2(g));
        if c < 1.0 {
            stats.clipped += 1;
        }
        axpy(c, g, out);
    }
    stats
}

/// A per-sample loss l(w, x, y) on parameters w in R^p.
///
/// Implementors give the value, a (sub)gradient, and G(x, y) of Assumption 4.1; they may
/// override [`Loss::clipped_grad_sum`] with a fast path that never materializes per-sample
/// gradients.
pub trait Loss: Send + Sync {
    /// Short name, used in summaries.
    fn name(&self) -> &'static str;

    /// Number of parameters p.
    fn param_dim(&self) -> usize;

    /// Checks that the data fits this loss (feature dimension, labels).
    fn check_data(&self, data: &Dataset) -> Result<()>;

    /// l(w, x, y).
    fn value(&self, w: &[f64], x: &[f64], y: f64) -> f64;

    /// Writes a (sub)gradient of l(., x, y) at w into `out` (length p).
    fn grad(&self, w: &[f64], x: &[f64], y: f64, out: &mut [f64]);

    /// The closed form of G(x, y) (Assumption 4.1), stated once per loss, or `None` when the
    /// loss has no finite per-sample Lipschitz constant on its parameter domain.
    fn lipschitz_form(&self) -> Option<LipschitzForm>;

    /// G(x, y): sup over the parameter domain of ||grad l(w, x, y)|| (Assumption 4.1), evaluated
    /// from [`Loss::lipschitz_form`].
    fn lipschitz(&self, x: &[f64], y: f64) -> Option<f64> {
        self.lipschitz_form().map(|f| f.eval(x, y))
    }

    /// Per-sample smoothness constant L_i (Definition 3.2), where the loss is smooth.
    fn smoothness(&self, _x: &[f64], _y: f64) -> Option<f64> {
        None
    }

    /// sum_i f_i(w) over the data set, added in index order. A loss may override it to hoist
    /// work that depends only on w out of the loop; the result must equal this default bit for
    /// bit (the risk at the K iterates of every experiment goes through it).
    fn sum_values(&self, w: &[f64], data: &Dataset) -> f64 {
        (0..data.n)
            .map(|i| self.value(w, data.row(i), data.y[i]))
            .sum::<f64>()
    }

    /// Adds sum_{i in batch} clip(grad f_i(w), tau) into `out` (length p, overwritten), Eq. (2).
    ///
    /// The default materializes one per-sample gradient at a time; losses whose gradient
    /// factors override it.
    fn clipped_grad_sum(
        &self,
        w: &[f64],
        data: &Dataset,
        batch: &[usize],
        tau: f64,
        out: &mut [f64],
        scratch: &mut Scratch,
    ) -> ClipStats {
        materialized_bounded_sum(
            self,
            w,
            data,
            batch,
            PerSampleBound::Clip(tau),
            out,
            scratch,
        )
    }

    /// Adds sum_{i in batch} bound(grad f_i(w)) into `out` (length p, overwritten): clipping
    /// goes to [`Loss::clipped_grad_sum`] (and its fast path); the normalization of automatic
    /// clipping materializes per-sample gradients unless the loss overrides this.
    fn bounded_grad_sum(
        &self,
        w: &[f64],
        data: &Dataset,
        batch: &[usize],
        bound: PerSampleBound,
        out: &mut [f64],
        scratch: &mut Scratch,
    ) -> ClipStats {
        match bound {
            PerSampleBound::Clip(tau) => self.clipped_grad_sum(w, data, batch, tau, out, scratch),
            PerSampleBound::Normalize(_) => {
                materialized_bounded_sum(self, w, data, batch, bound, out, scratch)
            }
        }
    }
}

/// f(w) = (1/n) sum_i f_i(w), Eq. (3).
pub fn mean_value(loss: &dyn Loss, w: &[f64], data: &Dataset) -> f64 {
    loss.sum_values(w, data) / data.n as f64
}

/// grad f(w) = (1/n) sum_i grad f_i(w), written into `out`.
pub fn mean_grad(loss: &dyn Loss, w: &[f64], data: &Dataset, out: &mut [f64]) {
    out.fill(0.0);
    let mut g = vec![0.0; out.len()];
    for i in 0..data.n {
        loss.grad(w, data.row(i), data.y[i], &mut g);
        axpy(1.0, &g, out);
    }
    let s = 1.0 / data.n as f64;
    out.iter_mut().for_each(|v| *v *= s);
}

/// The per-sample Lipschitz constants G_i = G(x_i, y_i) of a data set (Assumption 5.1).
pub fn per_sample_lipschitz(loss: &dyn Loss, data: &Dataset) -> Option<Vec<f64>> {
    (0..data.n)
        .map(|i| loss.lipschitz(data.row(i), data.y[i]))
        .collect()
}

/// [`per_sample_lipschitz`], or an error naming the loss when it has no finite G(x, y) (an
/// unconstrained tanh network).
pub fn lipschitz_constants(loss: &dyn Loss, data: &Dataset) -> Result<Vec<f64>> {
    per_sample_lipschitz(loss, data).ok_or_else(|| {
        Error::param(format!(
            "the {} loss has no finite per-sample Lipschitz constant G(x, y) here (for \
             tanh_net, set a radius)",
            loss.name()
        ))
    })
}

/// How a loss's per-sample Lipschitz constant G(x, y) depends on the sample, in closed form.
///
/// Each loss states its form once; [`Loss::lipschitz`] evaluates it, and a generator that
/// controls the law of ||x|| (or of the label) turns it into the exact k-th moment of G
/// ([`LipschitzForm::k_norm`], Assumption 6.1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LipschitzForm {
    /// G = (a / b) ||x||: Huber (c / 1), Appendix L (3 / 1, Eq. (100)), robust regression
    /// (1 / sqrt 2). Kept as a ratio so that ||x|| / sqrt 2 is computed as written.
    Linear { a: f64, b: f64 },
    /// G = sqrt(2 (b + a (||x||^2 + 1))), for a model on x~ = (x, 1): softmax (a = 1, b = 0,
    /// Appendix D) and the tanh network on the ball of radius R (a = R^2, b = h + 1,
    /// Appendix C).
    BiasAugmented { a: f64, b: f64 },
    /// G = y: the weight a_i of the weighted sharp loss (Appendix E).
    Label,
}

impl LipschitzForm {
    /// G(x, y).
    #[inline]
    pub fn eval(&self, x: &[f64], y: f64) -> f64 {
        match *self {
            LipschitzForm::Linear { a, b } => a * dot(x, x).sqrt() / b,
            LipschitzForm::BiasAugmented { a, b } => (2.0 * (b + a * (dot(x, x) + 1.0))).sqrt(),
            LipschitzForm::Label => y,
        }
    }

    /// The exact (E[G^k])^(1/k) when the law of r has (E r^k)^(1/k) = `g`, where r = ||x||, or
    /// r = y when `r_is_label`; `None` where there is no closed form. A linear G keeps every
    /// moment's scale; the bias-augmented G has one for k = 2 (E G^2 = 2 (b + a (E r^2 + 1)))
    /// and k = inf (G is increasing in r).
    pub fn k_norm(&self, k: f64, g: f64, r_is_label: bool) -> Option<f64> {
        match (*self, r_is_label) {
            (LipschitzForm::Label, true) => Some(g),
            (_, true) | (LipschitzForm::Label, false) => None,
            (LipschitzForm::Linear { a, b }, false) => Some(a * g / b),
            (LipschitzForm::BiasAugmented { a, b }, false) if k == 2.0 || k.is_infinite() => {
                Some((2.0 * (b + a * (g * g + 1.0))).sqrt())
            }
            _ => None,
        }
    }
}

/// ||v||_2.
#[inline]
pub fn norm2(v: &[f64]) -> f64 {
    dot(v, v).sqrt()
}

/// <a, b>, with four independent accumulators so the compiler can keep several lanes busy (a
/// strict left-to-right sum would serialize on one register). Deterministic for a given length.
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f64; 4];
    let ca = a.chunks_exact(4);
    let cb = b.chunks_exact(4);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        acc[0] += x[0] * y[0];
        acc[1] += x[1] * y[1];
        acc[2] += x[2] * y[2];
        acc[3] += x[3] * y[3];
    }
    let mut s = (acc[0] + acc[2]) + (acc[1] + acc[3]);
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// y += a x.
#[inline]
pub fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

/// Which loss a run uses, as read from a config file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "family", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossSpec {
    /// Multinomial logistic regression (softmax cross-entropy, bias appended), Appendix D.
    Logistic {
        /// Number of classes m (default: from the labels).
        classes: Option<usize>,
    },
    /// Huber linear regression with threshold c.
    Huber { c: f64 },
    /// Weighted sharp loss a_i ||w - w_i*|| (Appendix E with weights).
    Sharp,
    /// The Appendix L loss of Eq. (97).
    AppendixL,
    /// Smooth nonconvex robust regression log(1 + r^2 / 2).
    Robust,
    /// Two-layer tanh network with `hidden` units (Appendix C).
    TanhNet {
        hidden: usize,
        /// Number of classes m (default: from the labels).
        classes: Option<usize>,
        /// Radius R of the parameter ball, when constrained; gives G(x, y).
        radius: Option<f64>,
    },
}

impl LossSpec {
    /// The loss's G(x, y) in closed form, without building it (the same form the built loss
    /// evaluates).
    pub fn lipschitz_form(&self) -> Option<LipschitzForm> {
        match self {
            LossSpec::Logistic { .. } => Some(logistic::lipschitz_form()),
            LossSpec::Huber { c } => Some(huber::lipschitz_form(*c)),
            LossSpec::Sharp => Some(sharp::lipschitz_form()),
            LossSpec::AppendixL => Some(appendix_l::lipschitz_form()),
            LossSpec::Robust => Some(robust::lipschitz_form()),
            LossSpec::TanhNet { hidden, radius, .. } => {
                radius.map(|r| tanh_net::lipschitz_form(*hidden, r))
            }
        }
    }

    /// Builds the loss for data with `d` features, checking it against the data.
    pub fn build(&self, data: &Dataset) -> Result<Box<dyn Loss>> {
        let d = data.d;
        let classes = |c: &Option<usize>| -> Result<usize> {
            let m = match c {
                Some(m) => *m,
                None => data.num_classes().ok_or_else(|| {
                    Error::data("labels are not class indices 0..m-1 (non-integer or negative)")
                })?,
            };
            if m < 2 {
                return Err(Error::param(format!(
                    "a multinomial loss needs at least 2 classes, but classes = {m}"
                )));
            }
            Ok(m)
        };
        // About ten parameter-sized vectors live at once (iterates, gradients, averages): refuse
        // a parameter count that does not fit before allocating any of them.
        let params = |m: usize| -> f64 {
            let (d, m) = (d as f64, m as f64);
            match self {
                LossSpec::TanhNet { hidden, .. } => {
                    *hidden as f64 * (d + 1.0) + m * (*hidden as f64 + 1.0)
                }
                _ => m * (d + 1.0),
            }
        };
        let fits = |m: usize| -> Result<usize> {
            let what = match self {
                LossSpec::TanhNet { hidden, .. } => {
                    format!("[loss] hidden = {hidden} with {m} classes and d = {d}")
                }
                _ => format!("[loss] {m} classes (largest label + 1) and d = {d}"),
            };
            crate::limits::check_memory(&what, 80.0 * params(m))?;
            Ok(m)
        };
        let classes = |c: &Option<usize>| -> Result<usize> { fits(classes(c)?) };
        let loss: Box<dyn Loss> = match self {
            LossSpec::Logistic { classes: c } => Box::new(SoftmaxLoss::new(d, classes(c)?)),
            LossSpec::Huber { c } => Box::new(HuberLoss::new(d, *c)?),
            LossSpec::Sharp => Box::new(SharpLoss::new(d)),
            LossSpec::AppendixL => Box::new(AppendixLLoss::new(d)),
            LossSpec::Robust => Box::new(RobustLoss::new(d)),
            LossSpec::TanhNet {
                hidden,
                classes: c,
                radius,
            } => Box::new(TanhNet::new(d, *hidden, classes(c)?, *radius)?),
        };
        loss.check_data(data)?;
        Ok(loss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|t| t.to_bits()).collect()
    }

    /// The clip factor equals the definition of Eq. (2) with the z = 0 convention, bit for bit,
    /// at zero (both signs), subnormal, tied, huge, infinite and NaN norms and clip norms
    /// (`(tau / norm).min(1.0)`, also branch-free, fails at norm = -0.0).
    #[test]
    fn clip_factor_equals_the_definition_bit_for_bit() {
        let defined = |norm: f64, tau: f64| if norm > tau { tau / norm } else { 1.0 };
        let vals = [
            0.0,
            -0.0,
            f64::MIN_POSITIVE / 4.0,
            1e-300,
            0.5,
            1.0,
            1.0 + f64::EPSILON,
            3.0,
            1e300,
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
        ];
        for &norm in &vals {
            for &tau in &vals {
                let (a, b) = (clip_factor(norm, tau), defined(norm, tau));
                assert_eq!(a.to_bits(), b.to_bits(), "norm {norm}, tau {tau}");
            }
        }
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
