//! Linear models l(w, x, y) = phi(<w, x> - y) (Huber and robust regression): one loss shell
//! ([`Glm`]) around a scalar link ([`Link`]), and their shared fast path. The gradient is
//! phi'(r) x, so ||grad|| = |phi'(r)| ||x|| factors ("ghost norms") and no per-sample gradient
//! is formed.

use super::kernel::{
    RowNorms, Rows, accumulate, by_dim, check_dim, dim_view, materialized_bounded_sum,
};
use super::{ClipStats, LipschitzForm, Loss, PerSampleBound, Scratch, clip_factor};
use crate::dataset::Dataset;
use crate::error::Result;
use crate::linalg::{axpy, dot};

/// The scalar function phi of a linear model l(w, x, y) = phi(<w, x> - y).
pub trait Link: Send + Sync {
    /// The loss's short name.
    const NAME: &'static str;
    /// phi(r).
    fn phi(&self, r: f64) -> f64;
    /// phi'(r).
    fn dphi(&self, r: f64) -> f64;
    /// G(x, y) = sup |phi'| ||x|| in closed form.
    fn lipschitz_form(&self) -> LipschitzForm;
}

/// A linear model l(w, x, y) = phi(<w, x> - y) on w in R^d (append a constant feature for an
/// intercept), with sup |phi''| <= 1, so f_i is ||x_i||^2-smooth.
#[derive(Debug, Clone)]
pub struct Glm<K> {
    pub(crate) d: usize,
    pub(crate) link: K,
}

impl<K: Link> Loss for Glm<K> {
    fn name(&self) -> &'static str {
        K::NAME
    }
    fn param_dim(&self) -> usize {
        self.d
    }
    fn check_data(&self, data: &Dataset) -> Result<()> {
        check_dim(self.d, data)
    }
    fn value(&self, w: &[f64], x: &[f64], y: f64) -> f64 {
        self.link.phi(dot(w, x) - y)
    }
    fn grad(&self, w: &[f64], x: &[f64], y: f64, out: &mut [f64]) {
        let s = self.link.dphi(dot(w, x) - y);
        for (o, xk) in out.iter_mut().zip(x) {
            *o = s * xk;
        }
    }
    fn lipschitz_form(&self) -> Option<LipschitzForm> {
        Some(self.link.lipschitz_form())
    }
    /// L(x, y) = ||x||^2 (sup |phi''| = 1 for both links).
    fn smoothness(&self, x: &[f64], _y: f64) -> Option<f64> {
        Some(dot(x, x))
    }
    /// Clipping takes the ghost-norm path; the normalization of automatic clipping materializes
    /// per-sample gradients.
    fn bounded_grad_sum(
        &self,
        w: &[f64],
        data: Rows<'_>,
        batch: &[usize],
        bound: PerSampleBound,
        out: &mut [f64],
        scratch: &mut Scratch,
    ) -> ClipStats {
        match bound {
            PerSampleBound::Clip(tau) => {
                let dphi = |z: f64, y: f64| self.link.dphi(z - y);
                linear_clipped_sum(w, &data, batch, tau, out, data.norms(), dphi)
            }
            PerSampleBound::Normalize(_) => {
                materialized_bounded_sum(self, w, &data, batch, bound, out, scratch)
            }
        }
    }
}

/// out = sum_{i in batch} clip(phi'(<w, x_i>, y_i) x_i, tau), with `dphi(z, y)` = phi'.
/// ||x_i|| comes from `rows`, the run's table of `data`'s row norms, when the caller has it.
fn linear_clipped_sum(
    w: &[f64],
    data: &Dataset,
    batch: &[usize],
    tau: f64,
    out: &mut [f64],
    rows: Option<&RowNorms>,
    dphi: impl Fn(f64, f64) -> f64,
) -> ClipStats {
    match rows {
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
    let w = dim_view::<D>(w);
    accumulate::<D, _>(out, |out| {
        let mut stats = ClipStats::new(batch.len());
        for &i in batch {
            let x = dim_view::<D>(data.row(i));
            let s = dphi(dot(w, x), data.y[i]);
            let norm = s.abs() * nx(i, x);
            let c = clip_factor(norm, tau);
            stats.record(norm, c);
            axpy(c * s, x, out);
        }
        stats
    })
}
