//! Smooth nonconvex robust regression (for Theorem 6.8 / N.1):
//! f_i(w) = log(1 + (<w, x_i> - y_i)^2 / 2).
//!
//! With r = <w, x> - y: phi'(r) = r / (1 + r^2/2), whose maximum |phi'| is 1/sqrt(2) at
//! r = sqrt(2), so G(x, y) = ||x|| / sqrt(2); phi''(r) = (1 - r^2/2) / (1 + r^2/2)^2 lies in
//! [-1/8, 1], so f_i is ||x_i||^2-smooth.

use super::check_dim;
use super::glm::linear_clipped_sum;
use super::{ClipStats, LipschitzForm, Loss, Scratch, dot};
use crate::dataset::Dataset;
use crate::error::Result;

/// Cauchy-type robust regression loss on w in R^d.
#[derive(Debug, Clone)]
pub struct RobustLoss {
    d: usize,
}

impl RobustLoss {
    /// d features.
    pub fn new(d: usize) -> Self {
        RobustLoss { d }
    }
}

#[inline]
fn dphi(r: f64) -> f64 {
    r / (1.0 + 0.5 * r * r)
}

/// G(x, y) = ||x|| / sqrt(2).
pub fn lipschitz_form() -> LipschitzForm {
    LipschitzForm::Linear {
        a: 1.0,
        b: std::f64::consts::SQRT_2,
    }
}

impl Loss for RobustLoss {
    fn name(&self) -> &'static str {
        "robust"
    }
    fn param_dim(&self) -> usize {
        self.d
    }
    fn check_data(&self, data: &Dataset) -> Result<()> {
        check_dim(self.d, data)
    }
    fn value(&self, w: &[f64], x: &[f64], y: f64) -> f64 {
        let r = dot(w, x) - y;
        (0.5 * r * r).ln_1p()
    }
    fn grad(&self, w: &[f64], x: &[f64], y: f64, out: &mut [f64]) {
        let s = dphi(dot(w, x) - y);
        for (o, xk) in out.iter_mut().zip(x) {
            *o = s * xk;
        }
    }
    fn lipschitz_form(&self) -> Option<LipschitzForm> {
        Some(lipschitz_form())
    }
    /// L(x, y) = ||x||^2 (max |phi''| = 1 at r = 0).
    fn smoothness(&self, x: &[f64], _y: f64) -> Option<f64> {
        Some(dot(x, x))
    }
    fn clipped_grad_sum(
        &self,
        w: &[f64],
        data: &Dataset,
        batch: &[usize],
        tau: f64,
        out: &mut [f64],
        scratch: &mut Scratch,
    ) -> ClipStats {
        linear_clipped_sum(w, data, batch, tau, out, &scratch.rows, |z, y| dphi(z - y))
    }
}
