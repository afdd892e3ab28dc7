//! How much noise Algorithm 1 adds: Theorem 3.4's formula, a noise multiplier, or a target
//! (epsilon, delta) resolved by a privacy accountant through the [`Calibrator`] seam.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result, check_open, check_positive};

/// Which privacy accountant calibrates or reports the noise. The accountants themselves live in
/// the `privacy` module ([`crate::privacy::calibrate()`] implements the accounting on this kind and
/// [`Calibrator`] for it); the kind lives here so that a config names it as a type, parsed once
/// when the config is read.
///
/// In a config it is a string, case-insensitive: "rdp", or "pld" / "prv" (alias) for the tight
/// accountant; any other name fails the parse with [`AccountantKind::parse`]'s message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AccountantKind {
    /// [`crate::privacy::RdpAccountant`] with the default orders and the improved conversion
    /// (the default, as in every command).
    #[default]
    Rdp,
    /// [`crate::privacy::PldAccountant`] with the default discretization.
    Pld,
}

impl AccountantKind {
    /// "rdp", or "pld" / "prv" (alias) for the tight accountant, in any case.
    pub fn parse(name: &str) -> Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "rdp" => Ok(Self::Rdp),
            "pld" | "prv" => Ok(Self::Pld),
            _ => Err(Error::param(format!(
                "unknown accountant '{name}'; valid names are: rdp, pld (alias prv)"
            ))),
        }
    }

    /// Name for summaries ("rdp" or "pld"); also its serialized form.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Rdp => "rdp",
            Self::Pld => "pld",
        }
    }
}

impl FromStr for AccountantKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

impl fmt::Display for AccountantKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for AccountantKind {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for AccountantKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Self::parse(&name).map_err(serde::de::Error::custom)
    }
}

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
    Theorem34 {
        /// The constant nu of Theorem 3.4.
        nu: f64,
        /// The privacy parameter epsilon.
        epsilon: f64,
        /// The privacy parameter delta.
        delta: f64,
    },
    /// The sum of clipped gradients gets N(0, z^2 tau^2 I): sigma_n = z tau / b.
    Multiplier {
        /// The noise multiplier z.
        z: f64,
    },
    /// A target (epsilon, delta) met by calibrating z with a privacy accountant.
    Target {
        /// The epsilon to meet.
        epsilon: f64,
        /// The delta to meet.
        delta: f64,
        /// The accountant that calibrates z ("rdp" or "pld" in a config; default rdp).
        #[serde(default)]
        accountant: AccountantKind,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn target(name: &str) -> std::result::Result<NoiseSpec, toml::de::Error> {
        let text =
            format!("kind = \"target\"\nepsilon = 1.5\ndelta = 1e-5\naccountant = \"{name}\"\n");
        toml::from_str(&text)
    }

    /// A config names the accountant as the string parser did: "rdp", "pld", the alias "prv",
    /// in any case; it serializes back to the canonical name.
    #[test]
    fn accountant_names_deserialize_as_the_parser_reads_them() {
        use AccountantKind::{Pld, Rdp};
        for (name, kind) in [
            ("rdp", Rdp),
            ("RDP", Rdp),
            ("pld", Pld),
            ("prv", Pld),
            ("Prv", Pld),
        ] {
            let spec = target(name).unwrap();
            let NoiseSpec::Target { accountant, .. } = spec else {
                panic!("{name}: not a target")
            };
            assert_eq!(accountant, kind, "{name}");
            assert_eq!(AccountantKind::parse(name).unwrap(), kind);
            let back = toml::to_string(&spec).unwrap();
            assert!(
                back.contains(&format!("accountant = \"{}\"", kind.as_str())),
                "{back}"
            );
        }
    }

    /// An unknown name fails the parse itself, with the parser's message.
    #[test]
    fn an_unknown_accountant_fails_the_parse() {
        let e = target("moments").unwrap_err();
        assert_eq!(
            e.message().trim(),
            "unknown accountant 'moments'; valid names are: rdp, pld (alias prv)"
        );
    }
}
