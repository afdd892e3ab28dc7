//! Weighted sharp loss f_i(w) = a_i ||w - w_i*|| (Appendix E with per-sample weights a_i >= 0).
//!
//! The data row holds the center w_i* and the label holds the weight a_i. Every subgradient
//! has norm a_i (or 0 at w = w_i*), so G_i = a_i, and the mean f is sharp far from its minimizer
//! (Assumption 6.4; Appendix E shows f(w) - f(w*) >= ||w - w*|| / 4 beyond D for unit weights).

use super::clip::scaled_weight;
use super::kernel::{Rows, accumulate, by_dim, check_dim, dim_view, materialized_bounded_sum};
use super::{ClipStats, LipschitzForm, Loss, PerSampleBound, Scratch};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::linalg::{axpy, dist};

/// The weighted sharp loss on w in R^d.
#[derive(Debug, Clone)]
pub struct SharpLoss {
    d: usize,
}

impl SharpLoss {
    /// d-dimensional centers.
    pub fn new(d: usize) -> Self {
        SharpLoss { d }
    }
}

/// G(x, a) = a: the gradient a (w - w*) / ||w - w*|| has norm a everywhere but at w*.
pub fn lipschitz_form() -> LipschitzForm {
    LipschitzForm::Label
}

impl Loss for SharpLoss {
    fn name(&self) -> &'static str {
        "sharp"
    }
    fn param_dim(&self) -> usize {
        self.d
    }
    fn check_data(&self, data: &Dataset) -> Result<()> {
        check_dim(self.d, data)?;
        if let Some(i) = data.y.iter().position(|&a| a < 0.0) {
            return Err(Error::data(format!(
                "sharp loss weight a_{i} is {}, but weights must be >= 0",
                data.y[i]
            )));
        }
        Ok(())
    }
    fn value(&self, w: &[f64], x: &[f64], a: f64) -> f64 {
        a * dist(w, x)
    }
    /// a (w - w*) / ||w - w*||, and the subgradient 0 at w = w*.
    fn grad(&self, w: &[f64], x: &[f64], a: f64, out: &mut [f64]) {
        let r = dist(w, x);
        let s = if r > 0.0 { a / r } else { 0.0 };
        for ((o, wk), ck) in out.iter_mut().zip(w).zip(x) {
            *o = s * (wk - ck);
        }
    }
    /// G_i = a_i.
    fn lipschitz_form(&self) -> Option<LipschitzForm> {
        Some(lipschitz_form())
    }
    /// The gradient norm is a_i without computing the gradient; the direction needs ||w - w_i*||.
    /// Clipping only; the normalization of automatic clipping materializes per-sample gradients.
    fn bounded_grad_sum(
        &self,
        w: &[f64],
        data: Rows<'_>,
        batch: &[usize],
        bound: PerSampleBound,
        out: &mut [f64],
        scratch: &mut Scratch,
    ) -> ClipStats {
        let PerSampleBound::Clip(tau) = bound else {
            return materialized_bounded_sum(self, w, &data, batch, bound, out, scratch);
        };
        let data = &data;
        match data.label_clip(tau) {
            Some(table) => by_dim!(data.d, sharp_sum(w, data, batch, out, |i| table[i])),
            None => {
                let scaled = |i: usize| scaled_weight(data.y[i], tau);
                by_dim!(data.d, sharp_sum(w, data, batch, out, scaled))
            }
        }
    }
}

/// The weighted sharp loss's clipped sum with d = D known at compile time (D = 0: read at run
/// time); see [`by_dim`]. `scaled(i)` is (c_i a_i, c_i < 1) for the clip factor c_i =
/// clip_factor(a_i, tau), computed or read from the run's table ([`super::RunTables`]).
#[inline]
fn sharp_sum<const D: usize>(
    w: &[f64],
    data: &Dataset,
    batch: &[usize],
    out: &mut [f64],
    scaled: impl Fn(usize) -> (f64, bool),
) -> ClipStats {
    let w = dim_view::<D>(w);
    accumulate::<D, _>(out, |out| {
        let mut stats = ClipStats::new(batch.len());
        let mut total = 0.0;
        for &i in batch {
            let c_i = dim_view::<D>(data.row(i));
            let r = dist(w, c_i);
            if r == 0.0 {
                continue;
            }
            let (ca, clipped) = scaled(i);
            // ||grad f_i|| = a_i where w != w_i*
            stats.record_binding(data.y[i], ca, clipped);
            // accumulate -(c a / r) w*_i; the w part is summed as a scalar
            let s = ca / r;
            axpy(-s, c_i, out);
            total += s;
        }
        axpy(total, w, out);
        stats
    })
}
