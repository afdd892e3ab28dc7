//! Noise calibration: the smallest noise multiplier z meeting a target (eps, delta), and the
//! effective nu of Theorem 3.4 for a calibrated run.

use super::pld::PldAccountant;
use super::rdp::RdpAccountant;
use super::validate::{check_delta, check_epsilon, check_q, check_steps, check_z};
use crate::error::{Error, Result};

/// Largest noise multiplier calibration searches; a target needing more is reported as
/// unreachable.
pub const Z_MAX: f64 = 1e4;
/// Relative width of the final bisection bracket on z.
const Z_REL_TOL: f64 = 1e-6;

/// Which accountant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountantKind {
    /// [`RdpAccountant`] with the default orders and the improved conversion.
    Rdp,
    /// [`PldAccountant`] with the default discretization.
    Pld,
}

impl AccountantKind {
    /// "rdp", or "pld" / "prv" (alias) for the tight accountant.
    pub fn parse(name: &str) -> Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "rdp" => Ok(Self::Rdp),
            "pld" | "prv" => Ok(Self::Pld),
            _ => Err(Error::param(format!(
                "unknown accountant '{name}'; valid names are: rdp, pld (alias prv)"
            ))),
        }
    }
    /// Name for summaries.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Rdp => "rdp",
            Self::Pld => "pld",
        }
    }
    /// Epsilon (an upper bound) of `steps` steps at rate q and noise multiplier z.
    pub fn epsilon(&self, q: f64, steps: usize, z: f64, delta: f64) -> Result<f64> {
        match self {
            Self::Rdp => Ok(RdpAccountant::default().epsilon(q, steps, z, delta)?.epsilon),
            Self::Pld => PldAccountant::default().epsilon_upper(q, steps, z, delta),
        }
    }
}

/// Epsilon spent by a run of `steps` steps at rate q with noise multiplier z (for the `train`
/// summary). `accountant` is "rdp" or "pld".
pub fn epsilon_spent(accountant: &str, q: f64, steps: usize, z: f64, delta: f64) -> Result<f64> {
    AccountantKind::parse(accountant)?.epsilon(q, steps, z, delta)
}

/// The smallest z (to relative 1e-6, rounded up) with epsilon(q, steps, z, delta) <= epsilon,
/// by bisection; epsilon is decreasing in z.
pub fn calibrate_noise(
    kind: AccountantKind,
    q: f64,
    steps: usize,
    epsilon: f64,
    delta: f64,
) -> Result<f64> {
    check_q(q)?;
    check_steps(steps)?;
    check_epsilon(epsilon)?;
    check_delta(delta)?;
    let ok = |z: f64| -> Result<bool> { Ok(kind.epsilon(q, steps, z, delta)? <= epsilon) };
    let mut hi = 1.0;
    while !ok(hi)? {
        hi *= 2.0;
        if hi > Z_MAX {
            return Err(Error::param(format!(
                "target epsilon {epsilon} (delta = {delta}, q = {q}, steps = {steps}) is not reached by any noise multiplier z <= {Z_MAX}"
            )));
        }
    }
    let mut lo = hi / 2.0;
    while ok(lo)? {
        hi = lo;
        lo /= 2.0;
        if lo < 1e-6 {
            return Ok(hi);
        }
    }
    while (hi - lo) > Z_REL_TOL * hi {
        let mid = 0.5 * (lo + hi);
        if ok(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// Theorem 3.4 solved for nu: nu_eff = (z eps / (q sqrt(T log(1/delta))))^2, so that
/// sigma_n = z tau / b equals Theorem 3.4's sqrt(nu T log(1/delta)) tau / (n eps) with b = q n.
pub fn nu_eff(z: f64, q: f64, steps: usize, epsilon: f64, delta: f64) -> Result<f64> {
    check_z(z)?;
    check_q(q)?;
    check_steps(steps)?;
    check_epsilon(epsilon)?;
    check_delta(delta)?;
    let r = z * epsilon / (q * (steps as f64 * (1.0 / delta).ln()).sqrt());
    Ok(r * r)
}
