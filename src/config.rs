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
