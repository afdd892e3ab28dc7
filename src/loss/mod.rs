//! Per-sample losses f_i(w) = l(w, x_i, y_i) with their gradients and per-sample Lipschitz
//! constants G(x, y) (Assumption 4.1), and a batched fast path for the sum of clipped
//! per-sample gradients.

pub mod appendix_l;
pub mod binary_logistic;
pub mod clip;
pub mod glm;
pub mod huber;
pub(crate) mod kernel;
pub mod logistic;
pub mod robust;
pub mod sharp;
mod softmax;
mod softmax_onepass;
mod softmax_small;
pub mod spec;
pub mod tanh_net;

use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::linalg::{axpy, dot};

pub use appendix_l::AppendixLLoss;
pub use binary_logistic::BinaryLogisticLoss;
pub use huber::HuberLoss;
pub use logistic::{SoftmaxKernel, SoftmaxLoss};
pub use robust::RobustLoss;
pub use sharp::SharpLoss;
#[doc(hidden)]
pub use softmax_small::bench_clipped_sum2;
pub use tanh_net::TanhNet;

pub use clip::{ClipStats, PerSampleBound, clip_factor};
pub use kernel::{Rows, RunTables, Scratch, materialized_bounded_sum};
pub use spec::LossSpec;

/// A per-sample loss l(w, x, y) on parameters w in R^p.
///
/// Implementors give the value, a (sub)gradient, and G(x, y) of Assumption 4.1. The batched
/// sum of bounded per-sample gradients has one overridable kernel, [`Loss::bounded_grad_sum`]
/// (its default materializes one per-sample gradient at a time); a loss whose gradient norm
/// factors overrides it with a fast path. [`Loss::clipped_grad_sum`] is a provided wrapper.
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

    /// Adds sum_{i in batch} bound(grad f_i(w)) into `out` (length p, overwritten): clipping at
    /// tau (Eq. (2)) or automatic clipping's normalization ([`PerSampleBound`]). The one batched
    /// kernel a loss may override.
    ///
    /// The default materializes one per-sample gradient at a time
    /// ([`materialized_bounded_sum`]); an override must count clipped samples with
    /// [`ClipStats::record`].
    /// `data` is the data set with the run's tables ([`RunTables::rows`]) or without them
    /// (`(&dataset).into()`); the sum is the same, bit for bit.
    fn bounded_grad_sum(
        &self,
        w: &[f64],
        data: Rows<'_>,
        batch: &[usize],
        bound: PerSampleBound,
        out: &mut [f64],
        scratch: &mut Scratch,
    ) -> ClipStats {
        materialized_bounded_sum(self, w, &data, batch, bound, out, scratch)
    }

    /// Adds sum_{i in batch} clip(grad f_i(w), tau) into `out` (length p, overwritten), Eq. (2):
    /// [`Loss::bounded_grad_sum`] at [`PerSampleBound::Clip`]. Not meant to be overridden.
    fn clipped_grad_sum(
        &self,
        w: &[f64],
        data: &Dataset,
        batch: &[usize],
        tau: f64,
        out: &mut [f64],
        scratch: &mut Scratch,
    ) -> ClipStats {
        self.bounded_grad_sum(
            w,
            data.into(),
            batch,
            PerSampleBound::Clip(tau),
            out,
            scratch,
        )
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
    /// G = (a / b) ||x||: Huber (c / 1), binary logistic (1 / 1), Appendix L (3 / 1, Eq. (100)), robust regression
    /// (1 / sqrt 2). Kept as a ratio so that ||x|| / sqrt 2 is computed as written.
    Linear {
        /// Numerator a of the ratio.
        a: f64,
        /// Denominator b of the ratio.
        b: f64,
    },
    /// G = sqrt(2 (b + a (||x||^2 + 1))), for a model on x~ = (x, 1): softmax (a = 1, b = 0,
    /// Appendix D) and the tanh network on the ball of radius R (a = R^2, b = h + 1,
    /// Appendix C).
    BiasAugmented {
        /// The factor a of ||x||^2 + 1.
        a: f64,
        /// The offset b.
        b: f64,
    },
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
