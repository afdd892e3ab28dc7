//! Run configurations read from TOML: plain serde structs with unknown keys rejected, validated
//! once, up front.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::data::DataSpec;
use crate::dpsgd::DpSgdConfig;
use crate::error::{Error, Result};
use crate::loss::LossSpec;

/// One DP-SGD run: `dpsgd-lab train --config FILE`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    /// Base seed; every random stream derives from it (see [`crate::rng`]).
    pub seed: u64,
    /// Replicate index (default 0).
    #[serde(default)]
    pub replicate: u64,
    /// The data.
    pub data: DataSpec,
    /// The loss family.
    pub loss: LossSpec,
    /// Algorithm 1's hyperparameters.
    pub dpsgd: DpSgdConfig,
}

/// Parses TOML text into `T`, turning the parser's multi-line report into one line that names
/// the file, the line and the problem.
pub fn from_toml_str<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T> {
    toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| {
                format!(
                    ":{}",
                    text[..s.start.min(text.len())].matches('\n').count() + 1
                )
            })
            .unwrap_or_default();
        let msg = e.message().replace('\n', " ").trim().to_string();
        Error::Config(format!("{origin}{line}: {msg}"))
    })
}

/// Reads and parses a TOML file.
pub fn load_toml<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text =
        std::fs::read_to_string(path).map_err(|e| Error::io(path.display().to_string(), e))?;
    from_toml_str(&text, &path.display().to_string())
}

/// (De)serializes a moment order k as a number or the string "inf" (JSON and TOML specs have no
/// portable infinity): `#[serde(with = "crate::config::k_serde")]`.
pub mod k_serde {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    /// Writes a finite k as a number and k = inf as "inf".
    pub fn serialize<S: Serializer>(k: &f64, s: S) -> Result<S::Ok, S::Error> {
        if k.is_infinite() {
            s.serialize_str("inf")
        } else {
            s.serialize_f64(*k)
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumOrStr {
        Num(f64),
        Str(String),
    }

    /// Reads a number, "inf" or "infinity".
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match NumOrStr::deserialize(d)? {
            NumOrStr::Num(k) => Ok(k),
            NumOrStr::Str(s) if s == "inf" || s == "infinity" => Ok(f64::INFINITY),
            NumOrStr::Str(s) => Err(D::Error::custom(format!(
                "k must be a number or \"inf\", but is \"{s}\""
            ))),
        }
    }
}
