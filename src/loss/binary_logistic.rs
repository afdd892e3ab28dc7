//! Binary logistic regression without a bias: l(w, x, y) = log(1 + exp(-y <w, x>)), y in
//! {-1, 1}. The two-class special case of Appendix D's cross-entropy with one weight vector:
//! grad l = -y sigma(-y <w, x>) x with 0 < sigma < 1, so Assumption 4.1 holds with
//! G(x, y) = ||x|| (Appendix D's sqrt 2 ||x~|| is for m weight vectors and a bias), on any W.
//! Convex and ||x||^2 / 4-smooth. On linearly separable data f has no minimizer (f* = 0 is not
//! attained); a data set with both labels on every feature direction keeps it attained.

use super::kernel::check_dim;
use super::{LipschitzForm, Loss};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::linalg::dot;

/// Binary logistic regression on w in R^d (append a constant feature for an intercept).
#[derive(Debug, Clone)]
pub struct BinaryLogisticLoss {
    d: usize,
}

impl BinaryLogisticLoss {
    /// d features.
    pub fn new(d: usize) -> Self {
        BinaryLogisticLoss { d }
    }
}

/// G(x, y) = ||x||: |y sigma(-y <w, x>)| < 1 (Appendix D's argument with one weight vector).
pub fn lipschitz_form() -> LipschitzForm {
    LipschitzForm::Linear { a: 1.0, b: 1.0 }
}

/// log(1 + e^t) without overflow.
fn softplus(t: f64) -> f64 {
    t.max(0.0) + (-t.abs()).exp().ln_1p()
}

/// The logistic function 1 / (1 + e^(-t)) without overflow.
fn sigmoid(t: f64) -> f64 {
    if t >= 0.0 {
        1.0 / (1.0 + (-t).exp())
    } else {
        let e = t.exp();
        e / (1.0 + e)
    }
}

impl Loss for BinaryLogisticLoss {
    fn name(&self) -> &'static str {
        "binary_logistic"
    }
    fn param_dim(&self) -> usize {
        self.d
    }
    fn check_data(&self, data: &Dataset) -> Result<()> {
        check_dim(self.d, data)?;
        if let Some(i) = data.y.iter().position(|&y| y != 1.0 && y != -1.0) {
            return Err(Error::data(format!(
                "binary logistic label y_{i} is {}, but labels must be -1 or 1",
                data.y[i]
            )));
        }
        Ok(())
    }
    fn value(&self, w: &[f64], x: &[f64], y: f64) -> f64 {
        softplus(-y * dot(w, x))
    }
    /// -y sigma(-y <w, x>) x.
    fn grad(&self, w: &[f64], x: &[f64], y: f64, out: &mut [f64]) {
        let s = -y * sigmoid(-y * dot(w, x));
        for (o, xk) in out.iter_mut().zip(x) {
            *o = s * xk;
        }
    }
    fn lipschitz_form(&self) -> Option<LipschitzForm> {
        Some(lipschitz_form())
    }
    /// L(x, y) = ||x||^2 / 4 (sigma' <= 1/4).
    fn smoothness(&self, x: &[f64], _y: f64) -> Option<f64> {
        Some(dot(x, x) / 4.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    fn rng() -> rand_pcg::Pcg64 {
        rand_pcg::Pcg64::seed_from_u64(17)
    }

    /// The analytic gradient matches central differences of the value at random points.
    #[test]
    fn gradient_matches_finite_differences() {
        let loss = BinaryLogisticLoss::new(3);
        let mut r = rng();
        for _ in 0..50 {
            let w: Vec<f64> = (0..3).map(|_| 4.0 * r.random::<f64>() - 2.0).collect();
            let x: Vec<f64> = (0..3).map(|_| 6.0 * r.random::<f64>() - 3.0).collect();
            let y = if r.random::<bool>() { 1.0 } else { -1.0 };
            let mut g = vec![0.0; 3];
            loss.grad(&w, &x, y, &mut g);
            for j in 0..3 {
                let h = 1e-6;
                let (mut wp, mut wm) = (w.clone(), w.clone());
                wp[j] += h;
                wm[j] -= h;
                let fd = (loss.value(&wp, &x, y) - loss.value(&wm, &x, y)) / (2.0 * h);
                assert!((fd - g[j]).abs() < 1e-7, "{fd} vs {}", g[j]);
            }
        }
    }

    /// Assumption 4.1 with G(x, y) = ||x||: |f_i(u) - f_i(v)| <= ||x|| ||u - v|| at random points
    /// (and the gradient norm stays below ||x||).
    #[test]
    fn values_are_g_lipschitz() {
        let loss = BinaryLogisticLoss::new(2);
        let mut r = rng();
        for _ in 0..2000 {
            let pt = |r: &mut rand_pcg::Pcg64, s: f64| -> Vec<f64> {
                (0..2)
                    .map(|_| s * (2.0 * r.random::<f64>() - 1.0))
                    .collect()
            };
            let (u, v, x) = (pt(&mut r, 5.0), pt(&mut r, 5.0), pt(&mut r, 3.0));
            let y = if r.random::<bool>() { 1.0 } else { -1.0 };
            let g = loss.lipschitz(&x, y).unwrap();
            let duv = u
                .iter()
                .zip(&v)
                .map(|(a, b)| (a - b).powi(2))
                .sum::<f64>()
                .sqrt();
            let df = (loss.value(&u, &x, y) - loss.value(&v, &x, y)).abs();
            assert!(df <= g * duv * (1.0 + 1e-12) + 1e-15, "{df} > {g} {duv}");
            let mut gr = vec![0.0; 2];
            loss.grad(&u, &x, y, &mut gr);
            assert!(dot(&gr, &gr).sqrt() <= g * (1.0 + 1e-12));
        }
    }

    /// Large margins neither overflow nor lose the value: l(w; x, y) ~ -y <w, x> far on the
    /// wrong side, ~ e^(-y <w, x>) on the right side.
    #[test]
    fn extreme_margins_stay_finite() {
        let loss = BinaryLogisticLoss::new(1);
        assert_eq!(loss.value(&[800.0], &[1.0], -1.0), 800.0);
        let v = loss.value(&[40.0], &[1.0], 1.0);
        assert!((v / (-40f64).exp() - 1.0).abs() < 1e-12);
        let mut g = [0.0];
        loss.grad(&[800.0], &[1.0], -1.0, &mut g);
        assert_eq!(g[0], 1.0);
    }
}
