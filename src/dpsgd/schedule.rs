//! Per-step values of the learning rate eta_t and the clip norm tau_t.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A per-step schedule: a constant (as in the theorems), an explicit list, or a power decay.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum StepSchedule {
    /// The same value every step.
    Constant(f64),
    /// One value per step (the list must cover all T steps).
    Values {
        /// v_0, ..., v_{T-1}.
        values: Vec<f64>,
    },
    /// v_t = initial / (t + 1)^power.
    Power {
        /// v_0.
        initial: f64,
        /// Decay exponent, >= 0.
        power: f64,
    },
}

/// The accepted forms, for messages.
const FORMS: &str =
    "expected a number (e.g. 0.5), { values = [...] } or { initial = .., power = .. }";

/// The wire forms of [`StepSchedule`], plus text, so that a wrong type gets a message that says
/// which forms are accepted instead of serde's "did not match any variant".
#[derive(Deserialize)]
#[serde(untagged)]
enum RawSchedule {
    Constant(f64),
    Values { values: Vec<f64> },
    Power { initial: f64, power: f64 },
    Text(String),
}

impl<'de> Deserialize<'de> for StepSchedule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        match RawSchedule::deserialize(d) {
            Ok(RawSchedule::Constant(v)) => Ok(StepSchedule::Constant(v)),
            Ok(RawSchedule::Values { values }) => Ok(StepSchedule::Values { values }),
            Ok(RawSchedule::Power { initial, power }) => Ok(StepSchedule::Power { initial, power }),
            Ok(RawSchedule::Text(t)) => Err(D::Error::custom(format!(
                "\"{t}\" is not a schedule: {FORMS}"
            ))),
            // A missing key is reported as missing (serde names it), not as a wrong form.
            Err(e) if e.to_string().starts_with("missing field") => Err(e),
            Err(_) => Err(D::Error::custom(format!("not a schedule: {FORMS}"))),
        }
    }
}

impl StepSchedule {
    /// The value at step t.
    #[inline]
    pub fn at(&self, t: usize) -> f64 {
        match self {
            StepSchedule::Constant(v) => *v,
            StepSchedule::Values { values } => values[t],
            StepSchedule::Power { initial, power } => initial / ((t + 1) as f64).powf(*power),
        }
    }

    /// Checks that every value for t < steps is positive and finite.
    pub fn validate(&self, name: &str, steps: usize) -> Result<()> {
        let bad = |v: f64| !(v.is_finite() && v > 0.0);
        match self {
            StepSchedule::Constant(v) if bad(*v) => Err(Error::param(format!(
                "{name} must be positive and finite, but is {v}"
            ))),
            StepSchedule::Values { values } => {
                if values.len() < steps {
                    return Err(Error::param(format!(
                        "{name} schedule lists {} values, but the run has {steps} steps",
                        values.len()
                    )));
                }
                match values.iter().take(steps).position(|v| bad(*v)) {
                    Some(t) => Err(Error::param(format!(
                        "{name} at step {t} must be positive and finite, but is {}",
                        values[t]
                    ))),
                    None => Ok(()),
                }
            }
            StepSchedule::Power { initial, power } => {
                if bad(*initial) || !(power.is_finite() && *power >= 0.0) {
                    Err(Error::param(format!(
                        "{name} power schedule needs initial > 0 and power >= 0, but has initial = {initial}, power = {power}"
                    )))
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }

    /// The largest value over the first `steps` steps.
    pub fn max_over(&self, steps: usize) -> f64 {
        (0..steps.max(1)).map(|t| self.at(t)).fold(0.0, f64::max)
    }

    /// The schedule with every value multiplied by `f` (the one-run audit's planted faults).
    pub fn scaled(&self, f: f64) -> StepSchedule {
        match self {
            StepSchedule::Constant(v) => StepSchedule::Constant(v * f),
            StepSchedule::Values { values } => StepSchedule::Values {
                values: values.iter().map(|v| v * f).collect(),
            },
            StepSchedule::Power { initial, power } => StepSchedule::Power {
                initial: initial * f,
                power: *power,
            },
        }
    }
}
