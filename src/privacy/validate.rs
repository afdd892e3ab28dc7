//! Domain checks shared by the accountants; messages name the bad value and the valid range.

use crate::error::{Error, Result, check_open, check_positive};

/// Sampling rate q in (0, 1].
pub fn check_q(q: f64) -> Result<f64> {
    if q.is_finite() && q > 0.0 && q <= 1.0 {
        Ok(q)
    } else {
        Err(Error::param(format!(
            "sampling rate q must lie in (0, 1], but is {q}"
        )))
    }
}

/// Noise multiplier z >= 0 (z = 0 is allowed and gives infinite epsilon).
pub fn check_z(z: f64) -> Result<f64> {
    if z.is_finite() && z > 0.0 {
        Ok(z)
    } else if z == 0.0 {
        Err(Error::param(
            "noise multiplier z must be > 0, but is 0 (no noise: epsilon is infinite)",
        ))
    } else {
        Err(Error::param(format!(
            "noise multiplier z must be positive and finite, but is {z}"
        )))
    }
}

/// delta in (0, 1).
pub fn check_delta(delta: f64) -> Result<f64> {
    check_open("delta", delta, 0.0, 1.0)
}

/// epsilon > 0.
pub fn check_epsilon(eps: f64) -> Result<f64> {
    check_positive("epsilon", eps)
}

/// steps >= 1.
pub fn check_steps(steps: usize) -> Result<usize> {
    if steps == 0 {
        Err(Error::param("steps must be >= 1, but is 0"))
    } else {
        Ok(steps)
    }
}
