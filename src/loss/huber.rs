//! Huber linear regression: l(w, x, y) = h_c(<w, x> - y) with h_c(r) = r^2/2 for |r| <= c and
//! c(|r| - c/2) beyond. Convex; |h_c'| <= c gives G(x, y) = c ||x||; it has a finite minimizer
//! without interpolation.

use super::check_dim;
use super::glm::linear_clipped_sum;
use super::{ClipStats, LipschitzForm, Loss, Scratch, dot};
use crate::dataset::Dataset;
use crate::error::{Result, check_positive};

/// Huber regression on w in R^d (append a constant feature for an intercept).
#[derive(Debug, Clone)]
pub struct HuberLoss {
    d: usize,
    c: f64,
}

impl HuberLoss {
    /// d features, threshold c > 0.
    pub fn new(d: usize, c: f64) -> Result<Self> {
        check_positive("huber threshold c", c)?;
        Ok(HuberLoss { d, c })
    }
    #[inline]
    fn dh(&self, r: f64) -> f64 {
        r.clamp(-self.c, self.c)
    }
}

/// G(x, y) = c ||x||, attained when |<w, x> - y| >= c.
pub fn lipschitz_form(c: f64) -> LipschitzForm {
    LipschitzForm::Linear { a: c, b: 1.0 }
}

impl Loss for HuberLoss {
    fn name(&self) -> &'static str {
        "huber"
    }
    fn param_dim(&self) -> usize {
        self.d
    }
    fn check_data(&self, data: &Dataset) -> Result<()> {
        check_dim(self.d, data)
    }
    fn value(&self, w: &[f64], x: &[f64], y: f64) -> f64 {
        let r = dot(w, x) - y;
        if r.abs() <= self.c {
            0.5 * r * r
        } else {
            self.c * (r.abs() - 0.5 * self.c)
        }
    }
    fn grad(&self, w: &[f64], x: &[f64], y: f64, out: &mut [f64]) {
        let s = self.dh(dot(w, x) - y);
        for (o, xk) in out.iter_mut().zip(x) {
            *o = s * xk;
        }
    }
    fn lipschitz_form(&self) -> Option<LipschitzForm> {
        Some(lipschitz_form(self.c))
    }
    /// h_c'' <= 1 gives L(x, y) = ||x||^2.
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
        linear_clipped_sum(w, data, batch, tau, out, &scratch.rows, |z, y| {
            self.dh(z - y)
        })
    }
}
