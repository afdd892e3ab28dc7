//! Smooth nonconvex robust regression (for Theorem 6.8 / N.1):
//! f_i(w) = log(1 + (<w, x_i> - y_i)^2 / 2).
//!
//! With r = <w, x> - y: phi'(r) = r / (1 + r^2/2), whose maximum |phi'| is 1/sqrt(2) at
//! r = sqrt(2), so G(x, y) = ||x|| / sqrt(2); phi''(r) = (1 - r^2/2) / (1 + r^2/2)^2 lies in
//! [-1/8, 1], so f_i is ||x_i||^2-smooth.

use super::LipschitzForm;
use super::glm::{Glm, Link};

/// The Cauchy-type link phi(r) = log(1 + r^2 / 2).
#[derive(Debug, Clone)]
pub struct Cauchy;

/// Cauchy-type robust regression loss on w in R^d.
pub type RobustLoss = Glm<Cauchy>;

impl RobustLoss {
    /// d features.
    pub fn new(d: usize) -> Self {
        Glm { d, link: Cauchy }
    }
}

/// G(x, y) = ||x|| / sqrt(2).
pub fn lipschitz_form() -> LipschitzForm {
    LipschitzForm::Linear {
        a: 1.0,
        b: std::f64::consts::SQRT_2,
    }
}

impl Link for Cauchy {
    const NAME: &'static str = "robust";
    fn phi(&self, r: f64) -> f64 {
        (0.5 * r * r).ln_1p()
    }
    #[inline]
    fn dphi(&self, r: f64) -> f64 {
        r / (1.0 + 0.5 * r * r)
    }
    fn lipschitz_form(&self) -> LipschitzForm {
        lipschitz_form()
    }
}
