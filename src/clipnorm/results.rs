//! An append-only JSONL results file keyed by cell id, so that an interrupted study resumes
//! where it stopped. Line 1 is a header with the study's fingerprint; every further line is one
//! finished [`RunRecord`]. A torn last line (a crash mid-write) is dropped with a warning on
//! resume; a corrupt line anywhere else is an error naming the file and line.
//!
//! Kept local to the study until the Monte Carlo runner's results module lands on main.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::grid::Group;
use crate::error::{Error, Result};

/// One finished training run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub key: String,
    pub group: Group,
    pub eps_idx: Option<usize>,
    pub tau_idx: Option<usize>,
    pub eta_idx: usize,
    pub run: usize,
    /// The clip norm used (the RNMM output for the Rnmm group; f64::MAX for the baseline).
    pub tau: f64,
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

#[derive(Debug, Serialize, Deserialize)]
struct Header {
    study: String,
    fingerprint: String,
    format: u32,
}

/// The open results file.
pub struct ResultsFile {
    path: PathBuf,
    file: Mutex<File>,
}

impl ResultsFile {
    /// Opens `path`. With `resume`, reads the finished records (the header's fingerprint must
    /// match); without, starts a new file.
    pub fn open(
        path: &Path,
        study: &str,
        fp: &str,
        resume: bool,
    ) -> Result<(Self, BTreeMap<String, RunRecord>)> {
        let name = path.display().to_string();
        let io = |e| Error::io(&name, e);
        let mut done = BTreeMap::new();
        let exists = path.exists();
        if resume && exists {
            let rd = BufReader::new(File::open(path).map_err(io)?);
            let mut lines = rd.lines();
            let header: Option<Header> = match lines.next() {
                Some(l) => serde_json::from_str(&l.map_err(io)?).ok(),
                None => None,
            };
            match header {
                Some(h) if h.fingerprint == fp => {}
                Some(h) => {
                    return Err(Error::Config(format!(
                        "{name} holds results of a different study configuration (fingerprint {} \
                         != {fp}); remove it or choose another --out",
                        h.fingerprint
                    )));
                }
                None => {
                    return Err(Error::Config(format!(
                        "{name} has no valid header line; remove it or choose another --out"
                    )));
                }
            }
            // A torn last line (a crash mid-write) is dropped with a warning: its cell simply
            // runs again. Any other line that does not parse is an error naming it: a corrupt
            // middle line is not a crash artefact, and skipping it would hide lost results.
            let rest: Vec<String> = lines.collect::<std::result::Result<_, _>>().map_err(io)?;
            let last = rest.iter().rposition(|l| !l.trim().is_empty());
            for (i, line) in rest.iter().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<RunRecord>(line) {
                    Ok(r) => {
                        done.insert(r.key.clone(), r);
                    }
                    Err(e) if Some(i) == last => {
                        eprintln!(
                            "warning: {name}:{}: dropped a torn last line (an interrupted write: {e}); its run is done again",
                            i + 2
                        );
                    }
                    Err(e) => {
                        return Err(Error::Config(format!(
                            "{name}:{}: not a results line ({e}); delete the line to rerun it, or start without --resume",
                            i + 2
                        )));
                    }
                }
            }
            // Rewrite without torn lines so that appends start on a fresh line.
            let mut f = File::create(path).map_err(io)?;
            let mut text = serde_json::to_string(&Header {
                study: study.into(),
                fingerprint: fp.into(),
                format: 1,
            })
            .map_err(|e| Error::Numerical(e.to_string()))?;
            text.push('\n');
            for r in done.values() {
                text.push_str(
                    &serde_json::to_string(r).map_err(|e| Error::Numerical(e.to_string()))?,
                );
                text.push('\n');
            }
            f.write_all(text.as_bytes()).map_err(io)?;
        } else {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| Error::io(dir.display().to_string(), e))?;
            }
            let mut f = File::create(path).map_err(io)?;
            let h = serde_json::to_string(&Header {
                study: study.into(),
                fingerprint: fp.into(),
                format: 1,
            })
            .map_err(|e| Error::Numerical(e.to_string()))?;
            writeln!(f, "{h}").map_err(io)?;
        }
        let file = OpenOptions::new().append(true).open(path).map_err(io)?;
        Ok((
            ResultsFile {
                path: path.to_path_buf(),
                file: Mutex::new(file),
            },
            done,
        ))
    }

    /// Appends one record as one line (one write call, flushed).
    pub fn append(&self, r: &RunRecord) -> Result<()> {
        let mut line = serde_json::to_string(r).map_err(|e| Error::Numerical(e.to_string()))?;
        line.push('\n');
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        f.write_all(line.as_bytes())
            .map_err(|e| Error::io(self.path.display().to_string(), e))
    }
}
