//! The results file of a Monte Carlo run ([`crate::results_file`] with a spec's header and one
//! [`CellResult`] per line), its record types, and the merge of shard files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::spec::{Spec, k_serde};
use crate::error::{Error, Result};
use crate::fingerprint::fingerprint;
use crate::results_file::{self, FileHeader, Record};

pub use crate::results_file::{ResultsLock, lock, lock_text, start_time, write_atomic};

/// The first line of a results file: what produced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Spec name.
    pub spec: String,
    /// "quick" or "full".
    pub scale: String,
    /// FNV-1a hash of the spec and scale: resume and merge refuse a different spec.
    pub fingerprint: String,
    /// Number of cells of the whole sweep.
    pub cells: usize,
}

impl FileHeader for Header {
    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
    fn name(&self) -> &str {
        &self.spec
    }
    fn mismatch(&self, path: &Path, h: &Self) -> String {
        format!(
            "{} was written by spec {} ({}, fingerprint {}), not by this spec {} ({}, fingerprint {}); pass --fresh to start over, or use another --out",
            path.display(),
            h.spec,
            h.scale,
            h.fingerprint,
            self.spec,
            self.scale,
            self.fingerprint
        )
    }
}

/// One replicate's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplicateResult {
    /// The risk estimate: mean over K stratified iterates (one uniform step in each K-th of
    /// 0..T) of f(w_t) - f* (convex) or ||grad f(w_t)||^2 (nonconvex).
    pub risk: f64,
    /// The explicit bound with this replicate's constants (None: no theorem bound applies).
    pub bound: Option<f64>,
    /// C used.
    pub c: f64,
    /// tau used.
    pub tau: f64,
    /// eta used.
    pub eta: f64,
    /// f* (or the reference value for nonconvex losses).
    pub f_star: f64,
    /// G of Assumption 6.1 used.
    pub g: f64,
    /// The do-nothing risk: the same risk at w0 (f(w0) - f*, or ||grad f(w0)||^2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk0: Option<f64>,
    /// lambda_min(Hessian of f at w*) times the step budget S = T eta: the number of relaxation
    /// times the run covers (None where f has no Hessian at w*).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda_s: Option<f64>,
    /// Fraction of the sampled per-sample gradients that were clipped, over the steps run
    /// (mean over the runs on this data set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clipped: Option<f64>,
    /// The noise multiplier z calibrated by an accountant (clip-norm sweeps; None: Thm 3.4's
    /// noise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_multiplier: Option<f64>,
    /// The run's time-averaged risk (1/T) sum_{t<T} risk(w_t), the theorem's OR given the data
    /// set, estimated on strata that resolve the start-up ([`super::time_average`]), mean over
    /// the runs on this data set; only in the cell a probability statement reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk_avg: Option<f64>,
    /// The clipped gradient mass over the steps run: sum over the sampled per-sample gradients
    /// of (||g_i|| - tau_t)_+ over sum of ||g_i|| (Eq. (2)'s removed mass; mean over the runs on
    /// this data set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clipped_mass: Option<f64>,
    /// The risk split's bias-only risk: the same run (same sampling stream, same clip norms
    /// tau_t, same K iterates) with sigma = 0, at the K iterates (mean over the runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk_bias: Option<f64>,
    /// The risk split's noise-only risk: the same run without clipping (tau = inf in Eq. (2))
    /// at the same noise sigma_n(tau_t) from the same noise stream, at the K iterates (mean over
    /// the runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk_noise: Option<f64>,
}

/// A finished cell: one line of the results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    /// Cell index (series * points + phi index).
    pub cell: usize,
    /// Series index.
    pub series: usize,
    /// k.
    #[serde(with = "k_serde")]
    pub k: f64,
    /// Index into the phi grid.
    pub phi_index: usize,
    /// phi actually run (Eq. 1 at the integer n when n varies).
    pub phi: f64,
    /// n.
    pub n: usize,
    /// epsilon.
    pub epsilon: f64,
    /// T.
    pub steps: u64,
    /// Replicates, in replicate order.
    pub replicates: Vec<ReplicateResult>,
}

impl Record for CellResult {
    type Key = usize;
    const NOUN: &'static str = "cell";
    fn key(&self) -> usize {
        self.cell
    }
}

/// The header of `spec`'s results.
pub fn header(spec: &Spec) -> Header {
    // A spec whose replicates measure the risk split (issue 57) has cells the earlier runs did
    // not write: its fingerprint says so, so their results start over instead of being reused
    // without the split.
    let split = if spec.measures_split() { "|split" } else { "" };
    let text = format!(
        "{}|{:?}{split}",
        serde_json::to_string(&spec.raw).unwrap_or_default(),
        spec.scale
    );
    Header {
        spec: spec.raw.name.clone(),
        scale: format!("{:?}", spec.scale).to_lowercase(),
        fingerprint: fingerprint(text.as_bytes()),
        cells: spec.cells(),
    }
}

/// The results file of a run: `results.jsonl`, or `shard-I-of-N.jsonl`.
pub fn results_path(out: &Path, shard: Option<(usize, usize)>) -> PathBuf {
    match shard {
        None => out.join("results.jsonl"),
        Some((i, n)) => out.join(format!("shard-{i}-of-{n}.jsonl")),
    }
}

/// The line (with its newline) that records `cell` under `head`.
pub fn cell_line(head: &Header, cell: &CellResult) -> String {
    results_file::record_line(head, cell)
}

/// The header of a results file (None: an empty file).
pub fn read_header(path: &Path) -> Result<Option<Header>> {
    results_file::read_header(path)
}

/// A cell index outside the spec's cells: why the line is refused.
fn outside(expect: &Header) -> impl Fn(&CellResult) -> Option<String> + '_ {
    move |c| {
        (c.cell >= expect.cells).then(|| {
            format!(
                "cell {} is outside the spec's {} cells",
                c.cell, expect.cells
            )
        })
    }
}

/// Reads a results file: its header and the cell lines. A torn last line (an interrupted
/// write) is dropped; any other line that does not parse, belongs to another spec, does not
/// match its hash or names a cell outside the spec is an error naming the line. Errors if the
/// header is not `expect`'s.
pub fn read_results(path: &Path, expect: &Header) -> Result<BTreeMap<usize, CellResult>> {
    results_file::read_records(path, expect, outside(expect))
}

/// The results file of a run, open for appending (see [`results_file::ResultsFile::open`]).
pub type ResultsFile = results_file::ResultsFile<Header>;

/// Opens `path` for a run of the spec with header `head`: keeps the finished cells of a file of
/// the same fingerprint, starts over where the spec changed (see
/// [`results_file::ResultsFile::open`]; `resume` refuses a changed spec, `fresh` discards).
pub fn open(
    path: &Path,
    head: &Header,
    resume: bool,
    fresh: bool,
) -> Result<(ResultsFile, BTreeMap<usize, CellResult>)> {
    ResultsFile::open(path, head.clone(), resume, fresh, outside(head))
}

/// Writes a results file canonically: header, then cells by index. Atomic (a temporary file in
/// the same folder, then rename), so a reader never sees a half-written file.
pub fn write_results(
    path: &Path,
    head: &Header,
    cells: &BTreeMap<usize, CellResult>,
) -> Result<()> {
    results_file::write_records(path, head, cells)
}

/// Merges every `shard-I-of-N.jsonl` in `out` into `results.jsonl` (exactly what an unsharded
/// run writes). Refuses, naming the file: a shard of another spec, of the other scale (`--full`)
/// or of another version of the spec; shards of two different splits N; a missing shard; a
/// shard missing some of its cells (an interrupted task: `run --shard I/N --resume`).
pub fn merge(spec: &Spec, out: &Path) -> Result<BTreeMap<usize, CellResult>> {
    let head = header(spec);
    let rd = std::fs::read_dir(out).map_err(|e| Error::io(out.display().to_string(), e))?;
    let mut shards: Vec<(usize, usize, PathBuf)> = Vec::new();
    for path in rd.filter_map(|e| e.ok().map(|e| e.path())) {
        let Some(name) = path.file_name().and_then(|f| f.to_str()) else {
            continue;
        };
        if !(name.starts_with("shard-") && name.ends_with(".jsonl")) {
            continue;
        }
        let (i, n) = parse_shard_name(name).ok_or_else(|| {
            Error::Config(format!(
                "{} is not a shard file name (shard-I-of-N.jsonl)",
                path.display()
            ))
        })?;
        shards.push((i, n, path));
    }
    shards.sort();
    let Some(&(_, n, _)) = shards.first() else {
        return Err(Error::Config(format!(
            "{} holds no shard-I-of-N.jsonl files",
            out.display()
        )));
    };
    if let Some((_, _, other)) = shards.iter().find(|s| s.1 != n) {
        return Err(Error::Config(format!(
            "{} holds shards of two splits ({} and {}): keep the shards of one --shard I/N split",
            out.display(),
            shards[0].2.display(),
            other.display()
        )));
    }
    // N comes from a file name: never enumerate more shards than the spec has cells.
    if n > spec.cells() {
        return Err(Error::Config(format!(
            "{} is a shard of {n}, but the spec has only {} cells: it was not written by this spec's `run --shard`; remove it",
            shards[0].2.display(),
            spec.cells()
        )));
    }
    // Every present shard first: a shard of the wrong spec or scale is the more basic mistake.
    for (_, _, path) in &shards {
        match read_header(path)? {
            Some(h) if h == head => {}
            Some(h) => return Err(shard_mismatch(path, &h, &head)),
            None => {
                return Err(Error::Config(format!(
                    "{} is empty: rerun that shard",
                    path.display()
                )));
            }
        }
    }
    let absent: Vec<usize> = (1..=n)
        .filter(|i| !shards.iter().any(|s| s.0 == *i))
        .collect();
    if !absent.is_empty() {
        let names: Vec<String> = absent
            .iter()
            .map(|i| format!("shard-{i}-of-{n}.jsonl"))
            .collect();
        let list: Vec<String> = absent.iter().map(|i| i.to_string()).collect();
        let runs: Vec<String> = absent.iter().map(|i| format!("--shard {i}/{n}")).collect();
        return Err(Error::Config(format!(
            "{} {} of {n} {} missing: no {} in {}; run {} ({}), then merge again",
            if absent.len() == 1 { "shard" } else { "shards" },
            list.join(", "),
            if absent.len() == 1 { "is" } else { "are" },
            names.join(", "),
            out.display(),
            if absent.len() == 1 { "it" } else { "them" },
            runs.join(", "),
        )));
    }
    let mut all = BTreeMap::new();
    for (i, _, path) in &shards {
        let cells = read_results(path, &head)?;
        if let Some(c) = cells.keys().find(|c| *c % n != i - 1) {
            return Err(Error::Config(format!(
                "{} holds cell {c}, which belongs to shard {} of {n}",
                path.display(),
                c % n + 1
            )));
        }
        let want: Vec<usize> = (0..spec.cells())
            .filter(|c| c % n == i - 1 && !cells.contains_key(c))
            .collect();
        if !want.is_empty() {
            return Err(Error::Config(format!(
                "shard {i} of {n} is incomplete: {} holds {} of {} cells (missing cells {want:?}); finish it with `run --shard {i}/{n} --resume`, then merge again",
                path.display(),
                cells.len(),
                cells.len() + want.len()
            )));
        }
        all.extend(cells);
    }
    // A run or another merge writing the same results.jsonl holds its lock: never write under it.
    let target = results_path(out, None);
    let _lock = lock(&target)?;
    write_results(&target, &head, &all)?;
    Ok(all)
}

/// (I, N) of `shard-I-of-N.jsonl`.
fn parse_shard_name(name: &str) -> Option<(usize, usize)> {
    let (i, n) = name
        .strip_prefix("shard-")?
        .strip_suffix(".jsonl")?
        .split_once("-of-")?;
    let (i, n) = (i.parse().ok()?, n.parse().ok()?);
    (1..=n).contains(&i).then_some((i, n))
}

/// Why the shard at `path` (header `found`) cannot be merged into a run of `expect`.
fn shard_mismatch(path: &Path, found: &Header, expect: &Header) -> Error {
    let flag = |scale: &str| {
        if scale == "full" {
            "with --full"
        } else {
            "without --full"
        }
    };
    Error::Config(if found.spec != expect.spec {
        format!(
            "{} is a shard of spec {}, not of {}: merge it with its own spec, or use another --out",
            path.display(),
            found.spec,
            expect.spec
        )
    } else if found.scale != expect.scale {
        format!(
            "{} ran at the {} scale (run {}), but this merge is at the {} scale: merge {}",
            path.display(),
            found.scale,
            flag(&found.scale),
            expect.scale,
            flag(&found.scale)
        )
    } else {
        format!(
            "{} ran another version of spec {} (fingerprint {}, this spec's is {}): the spec changed since the shard ran; rerun it or merge with the spec it ran",
            path.display(),
            found.spec,
            found.fingerprint,
            expect.fingerprint
        )
    })
}
