//! The results file of a run: a header line, then one JSON line per finished cell. Each cell
//! line carries the spec's fingerprint and a hash of the cell, so that an edited, foreign or
//! corrupted line is refused on `--resume` and `merge` instead of silently read; every rewrite is
//! atomic (temporary file + rename); a lock file keeps two processes from writing one file.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::runner::CellResult;
use super::spec::Spec;
use crate::error::{Error, Result};
use crate::fingerprint::fingerprint;

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

/// The header of `spec`'s results.
pub fn header(spec: &Spec) -> Header {
    let text = format!(
        "{}|{:?}",
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

/// One cell line: the cell, the spec's fingerprint and the hash of both.
#[derive(Serialize, Deserialize)]
struct Line {
    #[serde(flatten)]
    cell: CellResult,
    spec: String,
    hash: String,
}

fn cell_hash(spec_fingerprint: &str, cell: &CellResult) -> String {
    let json = serde_json::to_string(cell).expect("cell serializes");
    fingerprint(format!("{spec_fingerprint}|{json}").as_bytes())
}

/// The line (with its newline) that records `cell` under `head`.
pub fn cell_line(head: &Header, cell: &CellResult) -> String {
    let line = Line {
        cell: cell.clone(),
        spec: head.fingerprint.clone(),
        hash: cell_hash(&head.fingerprint, cell),
    };
    serde_json::to_string(&line).expect("cell serializes") + "\n"
}

/// The header of a results file (None: an empty file).
pub fn read_header(path: &Path) -> Result<Option<Header>> {
    let io = |e| Error::io(path.display().to_string(), e);
    let f = std::fs::File::open(path).map_err(io)?;
    match std::io::BufRead::lines(std::io::BufReader::new(f)).next() {
        None => Ok(None),
        Some(l) => serde_json::from_str(&l.map_err(io)?)
            .map(Some)
            .map_err(|e| Error::Config(format!("{}: bad header: {e}", path.display()))),
    }
}

/// Reads a results file: its header and the cell lines. A torn last line (an interrupted
/// write) is dropped; any other line that does not parse, belongs to another spec, or does not
/// match its hash is an error naming the line. Errors if the header is not `expect`'s.
pub fn read_results(path: &Path, expect: &Header) -> Result<BTreeMap<usize, CellResult>> {
    let io = |e| Error::io(path.display().to_string(), e);
    let f = File::open(path).map_err(io)?;
    let mut cells = BTreeMap::new();
    let lines: Vec<String> = BufReader::new(f)
        .lines()
        .collect::<std::result::Result<_, _>>()
        .map_err(io)?;
    let Some(head) = lines.first() else {
        return Ok(cells);
    };
    let h: Header = serde_json::from_str(head)
        .map_err(|e| Error::Config(format!("{}: bad header: {e}", path.display())))?;
    if h != *expect {
        return Err(Error::Config(format!(
            "{} was written by spec {} ({}, fingerprint {}), not by this spec {} ({}, fingerprint {}); use another --out",
            path.display(),
            h.spec,
            h.scale,
            h.fingerprint,
            expect.spec,
            expect.scale,
            expect.fingerprint
        )));
    }
    let last = lines.len() - 1;
    for (i, text) in lines.iter().enumerate().skip(1) {
        if text.trim().is_empty() {
            continue;
        }
        let bad = |why: &str| {
            Error::Config(format!(
                "{}:{}: {why}; delete the line to rerun its cell, or pass --fresh",
                path.display(),
                i + 1
            ))
        };
        let line: Line = match serde_json::from_str(text) {
            Ok(l) => l,
            Err(_) if i == last => break,
            Err(e) => return Err(bad(&format!("not a cell line ({e})"))),
        };
        if line.spec != expect.fingerprint {
            return Err(bad(&format!(
                "the line was written by spec fingerprint {}, not {}",
                line.spec, expect.fingerprint
            )));
        }
        if line.hash != cell_hash(&expect.fingerprint, &line.cell) {
            return Err(bad(&format!(
                "cell {} does not match its hash (the line was edited or corrupted)",
                line.cell.cell
            )));
        }
        if line.cell.cell >= expect.cells {
            return Err(bad(&format!(
                "cell {} is outside the spec's {} cells",
                line.cell.cell, expect.cells
            )));
        }
        if cells.insert(line.cell.cell, line.cell).is_some() {
            return Err(Error::Config(format!(
                "{}: a cell appears twice",
                path.display()
            )));
        }
    }
    Ok(cells)
}

/// Writes a results file canonically: header, then cells by index. Atomic (a temporary file in
/// the same folder, then rename), so a reader never sees a half-written file.
pub fn write_results(
    path: &Path,
    head: &Header,
    cells: &BTreeMap<usize, CellResult>,
) -> Result<()> {
    let mut text = serde_json::to_string(head).expect("header serializes");
    text.push('\n');
    for c in cells.values() {
        text.push_str(&cell_line(head, c));
    }
    write_atomic(path, text.as_bytes())
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| Error::io(tmp.display().to_string(), e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(path.display().to_string(), e)
    })
}

/// An exclusive claim on one results file, released (the lock file removed) on drop.
#[derive(Debug)]
pub struct ResultsLock {
    path: PathBuf,
}

impl Drop for ResultsLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Claims `results` for this process through `results.lock` (created exclusively, holding the
/// pid). A lock left by a process that no longer runs is taken over; a live one is an error.
pub fn lock(results: &Path) -> Result<ResultsLock> {
    let path = results.with_extension("jsonl.lock");
    for _ in 0..2 {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                use std::io::Write;
                write!(f, "{}", std::process::id())
                    .map_err(|e| Error::io(path.display().to_string(), e))?;
                return Ok(ResultsLock { path });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let pid = std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|t| t.trim().parse::<u32>().ok());
                match pid {
                    Some(p) if alive(p) => {
                        return Err(Error::Config(format!(
                            "{} is being written by another dpsgd-lab process (pid {p}, lock file {}); wait for it or use another --out",
                            results.display(),
                            path.display()
                        )));
                    }
                    // Stale (or unreadable) lock: its process is gone.
                    _ => {
                        let _ = std::fs::remove_file(&path);
                    }
                }
            }
            Err(e) => return Err(Error::io(path.display().to_string(), e)),
        }
    }
    Err(Error::Config(format!(
        "cannot claim {}: its lock file {} keeps reappearing",
        results.display(),
        path.display()
    )))
}

#[cfg(unix)]
fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
fn alive(_pid: u32) -> bool {
    true
}
