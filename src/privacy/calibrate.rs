//! Noise calibration: the smallest noise multiplier z meeting a target (eps, delta), and the
//! effective nu of Theorem 3.4 for a calibrated run.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use super::pld::PldAccountant;
use super::rdp::RdpAccountant;
use super::validate::{check_delta, check_epsilon, check_q, check_steps, check_z};
use crate::error::{Error, Result};

/// Largest noise multiplier calibration searches; a target needing more is reported as
/// unreachable.
pub const Z_MAX: f64 = 1e4;
/// Relative width of the final bisection bracket on z.
const Z_REL_TOL: f64 = 1e-6;

pub use crate::dpsgd::AccountantKind;

/// The accounting of each accountant kind (the kind itself is a config type of
/// [`crate::dpsgd`], which must not import this module).
impl AccountantKind {
    /// Epsilon (an upper bound) of `steps` steps at rate q and noise multiplier z.
    pub fn epsilon(&self, q: f64, steps: usize, z: f64, delta: f64) -> Result<f64> {
        Ok(self.accounted(q, steps, z, delta)?.epsilon)
    }

    /// Epsilon (an upper bound) with the accountant that produced it: the PLD reports the RDP
    /// epsilon where it cannot meet its tail budget ([`PldAccountant::upper_bound`]).
    pub fn accounted(&self, q: f64, steps: usize, z: f64, delta: f64) -> Result<Accounted> {
        match self {
            Self::Rdp => Ok(Accounted {
                epsilon: RdpAccountant::default()
                    .epsilon(q, steps, z, delta)?
                    .epsilon,
                requested: *self,
                by: Self::Rdp,
                note: None,
            }),
            Self::Pld => {
                let u = PldAccountant::default().upper_bound(q, steps, z, delta)?;
                Ok(Accounted {
                    epsilon: u.epsilon,
                    requested: *self,
                    by: if u.rdp_fallback { Self::Rdp } else { Self::Pld },
                    note: u.note,
                })
            }
        }
    }
}

/// The smallest calibrated noise multiplier a command may use or print: below it the calibration
/// has hit its search floor (`calibrate_noise` stops at z = 1e-6), so the budget is met by no
/// noise worth the name (it would print as z = 0.0000).
pub const MIN_NOISE_MULTIPLIER: f64 = 1e-4;

/// An epsilon and the accountant that actually produced it.
#[derive(Debug, Clone, PartialEq)]
pub struct Accounted {
    /// Upper bound on epsilon.
    pub epsilon: f64,
    /// The accountant asked for.
    pub requested: AccountantKind,
    /// The accountant whose number `epsilon` is: `requested`, or RDP where the PLD fell back.
    pub by: AccountantKind,
    /// Why it fell back, where it did.
    pub note: Option<String>,
}

impl Accounted {
    /// "pld", "rdp", or "rdp (fallback of pld)": the name to print beside the number.
    pub fn label(&self) -> String {
        if self.by == self.requested {
            self.by.as_str().to_string()
        } else {
            format!(
                "{} (fallback of {})",
                self.by.as_str(),
                self.requested.as_str()
            )
        }
    }
}

/// A calibrated noise multiplier, the epsilon it reaches and the accountant that produced that
/// epsilon (the PLD may fall back to RDP at the final z; see [`Accounted`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// The smallest z found with epsilon(z) <= the target.
    pub z: f64,
    /// epsilon(z) and who computed it.
    pub achieved: Accounted,
}

/// [`calibrate_noise`] with the epsilon it reaches and the accountant that produced it.
pub fn calibrate(
    kind: AccountantKind,
    q: f64,
    steps: usize,
    epsilon: f64,
    delta: f64,
) -> Result<Calibration> {
    let z = calibrate_noise(kind, q, steps, epsilon, delta)?;
    Ok(Calibration {
        z,
        achieved: kind.accounted(q, steps, z, delta)?,
    })
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
    // g(z) = log eps(z) - log target, decreasing in z; g <= 0 means the target is met.
    let g = |z: f64| -> Result<f64> {
        let e = kind.epsilon(q, steps, z, delta)?;
        Ok(if e <= 0.0 {
            -700.0
        } else if !e.is_finite() {
            700.0
        } else {
            (e / epsilon).ln()
        })
    };
    // Bracket [lo, hi] with g(lo) > 0 >= g(hi). The tight accountant needs no more noise than
    // RDP, so RDP's answer (cheap) is a good upper end for it.
    let mut hi = match kind {
        AccountantKind::Pld => calibrate_noise(AccountantKind::Rdp, q, steps, epsilon, delta)?,
        AccountantKind::Rdp => 1.0,
    };
    let mut g_hi = g(hi)?;
    while g_hi > 0.0 {
        hi *= 2.0;
        if hi > Z_MAX {
            return Err(Error::param(format!(
                "target epsilon {epsilon} (delta = {delta}, q = {q}, steps = {steps}) is not reached by any noise multiplier z <= {Z_MAX}"
            )));
        }
        g_hi = g(hi)?;
    }
    let mut lo = hi * 0.7;
    let mut g_lo = g(lo)?;
    while g_lo <= 0.0 {
        (hi, g_hi) = (lo, g_lo);
        lo *= 0.5;
        if lo < 1e-6 {
            return Ok(hi);
        }
        g_lo = g(lo)?;
    }
    // Illinois (modified regula falsi) on (log z, g), with a bisection fallback; the bracket
    // always keeps g(lo) > 0 >= g(hi), and hi is returned.
    let (mut side, mut it) = (0i8, 0);
    while hi - lo > Z_REL_TOL * hi {
        it += 1;
        let (a, b) = (lo.ln(), hi.ln());
        let mut x = if it > 60 {
            0.5 * (a + b)
        } else {
            (a * g_hi - b * g_lo) / (g_hi - g_lo)
        };
        if !(x > a && x < b) {
            x = 0.5 * (a + b);
        }
        let mid = x.exp();
        let gm = g(mid)?;
        if gm <= 0.0 {
            (hi, g_hi) = (mid, gm);
            if side == 1 {
                g_lo *= 0.5;
            }
            side = 1;
        } else {
            (lo, g_lo) = (mid, gm);
            if side == -1 {
                g_hi *= 0.5;
            }
            side = -1;
        }
        if it > 200 {
            return Err(Error::Numerical(format!(
                "noise calibration did not converge (bracket [{lo}, {hi}])"
            )));
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

/// The noise multiplier z with epsilon(q, T, z, delta) <= epsilon, calibrated once per
/// (accountant, q, T, epsilon, delta) in this process and shared by every arm and replicate
/// (the calibration is deterministic, so the cache changes no result).
pub fn calibrated_z(
    kind: AccountantKind,
    q: f64,
    steps: usize,
    epsilon: f64,
    delta: f64,
) -> Result<f64> {
    type Key = (AccountantKind, u64, usize, u64, u64);
    static CACHE: OnceLock<Mutex<HashMap<Key, f64>>> = OnceLock::new();
    let key = (kind, q.to_bits(), steps, epsilon.to_bits(), delta.to_bits());
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(z) = cache.lock().map_err(|_| poisoned())?.get(&key) {
        return Ok(*z);
    }
    let z = calibrate_noise(kind, q, steps, epsilon, delta)?;
    cache.lock().map_err(|_| poisoned())?.insert(key, z);
    Ok(z)
}

fn poisoned() -> Error {
    Error::Numerical("the noise-calibration cache was poisoned by a failed thread".into())
}
