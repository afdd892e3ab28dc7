//! Huber linear regression: l(w, x, y) = h_c(<w, x> - y) with h_c(r) = r^2/2 for |r| <= c and
//! c(|r| - c/2) beyond. Convex; |h_c'| <= c gives G(x, y) = c ||x||; h_c'' <= 1 gives
//! L(x, y) = ||x||^2; it has a finite minimizer without interpolation.

use super::LipschitzForm;
use super::glm::{Glm, Link};
use crate::error::{Result, check_positive};

/// The Huber function h_c with threshold c > 0.
#[derive(Debug, Clone)]
pub struct Huber {
    c: f64,
}

/// Huber regression on w in R^d (append a constant feature for an intercept).
pub type HuberLoss = Glm<Huber>;

impl HuberLoss {
    /// d features, threshold c > 0.
    pub fn new(d: usize, c: f64) -> Result<Self> {
        check_positive("huber threshold c", c)?;
        Ok(Glm {
            d,
            link: Huber { c },
        })
    }
}

/// G(x, y) = c ||x||, attained when |<w, x> - y| >= c.
pub fn lipschitz_form(c: f64) -> LipschitzForm {
    LipschitzForm::Linear { a: c, b: 1.0 }
}

impl Link for Huber {
    const NAME: &'static str = "huber";
    fn phi(&self, r: f64) -> f64 {
        if r.abs() <= self.c {
            0.5 * r * r
        } else {
            self.c * (r.abs() - 0.5 * self.c)
        }
    }
    #[inline]
    fn dphi(&self, r: f64) -> f64 {
        r.clamp(-self.c, self.c)
    }
    fn lipschitz_form(&self) -> LipschitzForm {
        lipschitz_form(self.c)
    }
}
