//! The analytic Gaussian mechanism (Balle and Wang 2018, Thm 8): the exact privacy profile of
//! N(0, sigma^2) vs N(Delta, sigma^2). With q = 1, T steps of Algorithm 1 at noise multiplier z are
//! exactly one Gaussian mechanism with sigma / Delta = z / sqrt(T).

use super::math::norm_sf;
use super::validate::check_steps;
use crate::error::{Error, Result};

/// delta(eps) = Phi(1/(2s) - eps s) - e^eps Phi(-1/(2s) - eps s), s = sigma / Delta.
pub fn gaussian_delta(s: f64, eps: f64) -> Result<f64> {
    if !(s.is_finite() && s > 0.0) {
        return Err(Error::param(format!(
            "Gaussian noise-to-sensitivity ratio must be positive and finite, but is {s}"
        )));
    }
    let a = norm_sf(-(0.5 / s - eps * s));
    let b = norm_sf(0.5 / s + eps * s);
    Ok((a - eps.exp() * b).max(0.0))
}

/// Exact delta(eps) of T full-batch (q = 1) steps at noise multiplier z.
pub fn full_batch_delta(steps: usize, z: f64, eps: f64) -> Result<f64> {
    check_steps(steps)?;
    gaussian_delta(z / (steps as f64).sqrt(), eps)
}

/// Exact epsilon of T full-batch steps at noise multiplier z for target delta (bisection on the
/// decreasing delta(eps)).
pub fn full_batch_epsilon(steps: usize, z: f64, delta: f64) -> Result<f64> {
    let f = |e: f64| full_batch_delta(steps, z, e);
    if f(0.0)? <= delta {
        return Ok(0.0);
    }
    let mut hi = 1.0;
    while f(hi)? > delta {
        hi *= 2.0;
        if hi > 1e6 {
            return Ok(f64::INFINITY);
        }
    }
    let mut lo = 0.0;
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if f(mid)? <= delta {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}
