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
            Err(e) if i == last => {
                eprintln!(
                    "warning: {}:{}: dropped a torn last line (an interrupted write: {e}); its cell runs again",
                    path.display(),
                    i + 1
                );
                break;
            }
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

/// Lock files this process holds now (their paths): a lock naming our own pid is live only if
/// it is one of these; otherwise it was left by an earlier process that had the same pid.
static HELD: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// An exclusive claim on one results file, released (the lock file removed) on drop.
#[derive(Debug)]
pub struct ResultsLock {
    path: PathBuf,
}

impl Drop for ResultsLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|p| p != &self.path);
    }
}

/// The start time of process `pid` (field 22 of /proc/PID/stat, clock ticks since boot), which
/// tells a live process from a later one that reuses its pid; None where it cannot be read.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The text of a lock file written by process `pid`: "PID START" (START as in [`start_time`];
/// just "PID" where the start time is unknown).
pub fn lock_text(pid: u32) -> String {
    match start_time(pid) {
        Some(t) => format!("{pid} {t}"),
        None => pid.to_string(),
    }
}

/// Whether the lock file at `path` with contents `text` belongs to a running process. Stale:
/// unreadable contents; pid 0 or negative (no process of its own); our own pid unless this
/// process holds that lock now; a dead pid; a live pid whose start time differs from the one
/// recorded (the pid was recycled by an unrelated process).
fn lock_owner_alive(path: &Path, text: &str) -> Option<u32> {
    let mut it = text.split_whitespace();
    let pid = it.next()?.parse::<u32>().ok().filter(|p| *p > 0)?;
    let recorded: Option<u64> = it.next().and_then(|t| t.parse().ok());
    if pid == std::process::id() {
        let held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        return held.iter().any(|p| p == path).then_some(pid);
    }
    if !alive(pid) {
        return None;
    }
    match (recorded, start_time(pid)) {
        (Some(a), Some(b)) if a != b => None,
        _ => Some(pid),
    }
}

/// Claims `results` for this process through `results.lock` (created exclusively, holding the
/// pid and its start time). A lock left by a process that no longer runs (see
/// [`lock_owner_alive`]) is taken over; a live one is an error.
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
                write!(f, "{}", lock_text(std::process::id()))
                    .map_err(|e| Error::io(path.display().to_string(), e))?;
                HELD.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(path.clone());
                return Ok(ResultsLock { path });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                match lock_owner_alive(&path, &text) {
                    Some(p) => {
                        return Err(Error::Config(format!(
                            "{} is being written by another dpsgd-lab process (pid {p}, lock file {}); wait for it or use another --out",
                            results.display(),
                            path.display()
                        )));
                    }
                    // Stale (or unreadable) lock: its process is gone.
                    None => {
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
    let Ok(p) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists; nothing is sent. p > 0, so this
    // never addresses a process group.
    let r = unsafe { libc::kill(p, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
fn alive(_pid: u32) -> bool {
    true
}
