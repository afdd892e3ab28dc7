//! How much noise Algorithm 1 adds: Theorem 3.4's formula, a noise multiplier, or a target
//! (epsilon, delta) resolved by a privacy accountant through the [`Calibrator`] seam.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, check_open, check_positive};

/// Resolves a target (epsilon, delta) into a noise multiplier z for the Poisson-subsampled
/// Gaussian mechanism run `steps` times at sampling rate `q`. Implemented by the accountants of
/// the `privacy` module.
pub trait Calibrator {
    /// The smallest noise multiplier z such that `steps` compositions at rate `q` are
    /// (epsilon, delta)-DP.
    fn noise_multiplier(&self, q: f64, steps: usize, epsilon: f64, delta: f64) -> Result<f64>;
    /// A short name for summaries.
    fn name(&self) -> &'static str;
}

/// The noise setting of a run, as read from a config file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum NoiseSpec {
    /// Theorem 3.4: sigma_n^2 = nu T log(1/delta) tau^2 / (n^2 epsilon^2).
    Theorem34 { nu: f64, epsilon: f64, delta: f64 },
    /// The sum of clipped gradients gets N(0, z^2 tau^2 I): sigma_n = z tau / b.
    Multiplier { z: f64 },
    /// A target (epsilon, delta) met by calibrating z with a privacy accountant.
    Target {
        epsilon: f64,
        delta: f64,
        /// Accountant name, e.g. "rdp" or "pld".
        accountant: String,
    },
    /// No noise (non-private baseline).
    None,
}

/// The noise, resolved: sigma_n(tau_t) = scale * tau_t, so that a clip-norm schedule rescales
/// the noise step by step exactly as Algorithm 1 with that tau_t would.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ResolvedNoise {
    /// sigma_n / tau.
    pub sigma_per_tau: f64,
    /// The noise multiplier z = b sigma_n / tau on the sum of clipped gradients.
    pub multiplier: f64,
}

impl NoiseSpec {
    /// The delta of the (epsilon, delta) guarantee this setting states, if it states one.
    pub fn delta(&self) -> Option<f64> {
        match self {
            NoiseSpec::Theorem34 { delta, .. } | NoiseSpec::Target { delta, .. } => Some(*delta),
            NoiseSpec::Multiplier { .. } | NoiseSpec::None => None,
        }
    }

    /// Checks the parameters' domains.
    pub fn validate(&self) -> Result<()> {
        match self {
            NoiseSpec::Theorem34 { nu, epsilon, delta } => {
                check_positive("nu", *nu)?;
                check_positive("epsilon", *epsilon)?;
                check_open("delta", *delta, 0.0, 1.0)?;
            }
            NoiseSpec::Multiplier { z } => {
                if !(z.is_finite() && *z >= 0.0) {
                    return Err(Error::param(format!(
                        "noise multiplier z must be >= 0 and finite, but is {z}"
                    )));
                }
            }
            NoiseSpec::Target { epsilon, delta, .. } => {
                check_positive("epsilon", *epsilon)?;
                check_open("delta", *delta, 0.0, 1.0)?;
            }
            NoiseSpec::None => {}
        }
        Ok(())
    }

    /// Resolves the noise for a run of `steps` steps with expected batch `b` out of `n`.
    /// `calibrator` is consulted only for [`NoiseSpec::Target`].
    pub fn resolve(
        &self,
        n: usize,
        b: f64,
        steps: usize,
        calibrator: Option<&dyn Calibrator>,
    ) -> Result<ResolvedNoise> {
        self.validate()?;
        let from_z = |z: f64| ResolvedNoise {
            sigma_per_tau: z / b,
            multiplier: z,
        };
        Ok(match self {
            NoiseSpec::Theorem34 { nu, epsilon, delta } => {
                let s = theorem_3_4_sigma(*nu, steps, *delta, 1.0, n, *epsilon);
                ResolvedNoise {
                    sigma_per_tau: s,
                    multiplier: s * b,
                }
            }
            NoiseSpec::Multiplier { z } => from_z(*z),
            NoiseSpec::Target {
                epsilon,
                delta,
                accountant,
            } => {
                let cal = calibrator.ok_or_else(|| {
                    Error::param(format!(
                        "noise kind 'target' needs a privacy accountant, but none named '{accountant}' is available"
                    ))
                })?;
                from_z(cal.noise_multiplier(b / n as f64, steps, *epsilon, *delta)?)
            }
            NoiseSpec::None => from_z(0.0),
        })
    }
}

/// Theorem 3.4: sigma_n = sqrt(nu T log(1/delta)) tau / (n epsilon).
pub fn theorem_3_4_sigma(
    nu: f64,
    steps: usize,
    delta: f64,
    tau: f64,
    n: usize,
    epsilon: f64,
) -> f64 {
    (nu * steps as f64 * (1.0 / delta).ln()).sqrt() * tau / (n as f64 * epsilon)
}
