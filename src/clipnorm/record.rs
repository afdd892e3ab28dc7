//! The clip-norm study's results file: [`crate::results_file`] with the study's header and one
//! [`RunRecord`] per finished training run, keyed by cell id. The runner's semantics hold: a rerun
//! reuses the finished runs of the same fingerprint and starts over where the study's config
//! changed (`--fresh` always starts over), a torn last line is dropped, any other bad line is an error naming file and line, rewrites are atomic, and a lock
//! refuses a concurrent writer.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::grid::Group;
use crate::results_file::{FileHeader, Record};

/// Version of the line format: 2 adds the fingerprint and hash to every record line.
const FORMAT: u32 = 2;

/// One finished training run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Cell id ([`super::Cell::key`]): the record's key.
    pub key: String,
    /// The cell's group.
    pub group: Group,
    /// Index into the epsilon grid (None: no privacy).
    pub eps_idx: Option<usize>,
    /// Index into the tau grid (None: the group sets its own clip norm).
    pub tau_idx: Option<usize>,
    /// Index into the learning rates.
    pub eta_idx: usize,
    /// Run (seed) index.
    pub run: usize,
    /// The clip norm used (the RNMM output for the Rnmm group; f64::MAX for the baseline).
    pub tau: f64,
    /// Learning rate used.
    pub eta: f64,
    /// Noise multiplier z.
    pub z: f64,
    /// Test accuracy after each epoch.
    pub acc: Vec<f64>,
    /// Mean test accuracy over the last epochs.
    pub acc_last: f64,
    /// The iterate became non-finite (its accuracy counts as 0 from then on).
    pub diverged: bool,
    /// Fraction of sampled per-sample gradients that were clipped.
    pub clipped_fraction: f64,
    /// Adaptive clipping: the tracked clip norm C_T at the end of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_clip: Option<f64>,
}

impl Record for RunRecord {
    type Key = String;
    const NOUN: &'static str = "run";
    fn key(&self) -> String {
        self.key.clone()
    }
}

/// The first line of a study's results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Study name.
    pub study: String,
    /// FNV-1a hash of everything a record depends on (config, grids, data sizes).
    pub fingerprint: String,
    /// Line format version.
    pub format: u32,
}

impl Header {
    /// The header of study `study` with fingerprint `fingerprint`, in the current line format.
    pub fn new(study: &str, fingerprint: &str) -> Self {
        Header {
            study: study.into(),
            fingerprint: fingerprint.into(),
            format: FORMAT,
        }
    }
}

impl FileHeader for Header {
    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
    fn name(&self) -> &str {
        &self.study
    }
    fn mismatch(&self, path: &Path, h: &Self) -> String {
        format!(
            "{} holds results of a different study configuration (study {}, fingerprint {}, format {}; this study: {}, {}, format {}); pass --fresh to start over, or choose another --out",
            path.display(),
            h.study,
            h.fingerprint,
            h.format,
            self.study,
            self.fingerprint,
            self.format
        )
    }
}

/// The study's results file, open for appending.
pub type ResultsFile = crate::results_file::ResultsFile<Header>;
