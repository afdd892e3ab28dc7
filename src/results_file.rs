//! A results file of keyed records, shared by the Monte Carlo runner and the clip-norm study: a
//! header line saying what produced the file, then one JSON line per finished record. Each record
//! line carries the header's fingerprint and a hash of the record, so that an edited, foreign or
//! corrupted line is refused on resume instead of silently read; only a torn *last* line (an
//! interrupted append) is dropped. Every rewrite is atomic (temporary file + rename), and a lock
//! file keeps two processes from writing one file.
//!
//! The life of a file ([`ResultsFile::open`]): claim the lock; keep the finished records of a
//! file written under the same fingerprint (a rerun reruns only what is missing), start over
//! where the config changed, refuse only what can be neither kept nor discarded (another
//! experiment's file, a corrupted line) unless `fresh`; rewrite the file canonically (header,
//! then records by key); append each record as it finishes; rewrite canonically at the end
//! ([`ResultsFile::finish`]).

use std::collections::BTreeMap;
use std::fmt::Display;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fingerprint::fingerprint;

/// The first line of a results file: what produced it. Resume refuses a file whose header is
/// not equal to the expected one.
pub trait FileHeader: Serialize + DeserializeOwned + PartialEq {
    /// The fingerprint of the producing configuration; every record line carries it.
    fn fingerprint(&self) -> &str;
    /// The name of the experiment (spec or study) the file belongs to: a file of the same name
    /// under another fingerprint is this experiment with a changed config.
    fn name(&self) -> &str;
    /// Why a file at `path` whose header is `found` cannot be resumed under `self` (one line).
    fn mismatch(&self, path: &Path, found: &Self) -> String;
}

/// One record of a results file, identified by its key (one key per line).
pub trait Record: Serialize + DeserializeOwned {
    /// The key the records are ordered and deduplicated by.
    type Key: Ord + Clone + Display;
    /// What one record is called in messages ("cell", "run").
    const NOUN: &'static str;
    /// This record's key.
    fn key(&self) -> Self::Key;
}

/// One record line: the record, the header's fingerprint and the hash of both.
#[derive(Serialize, Deserialize)]
struct Line<R> {
    #[serde(flatten)]
    record: R,
    spec: String,
    hash: String,
}

/// The hash of `record` under the header fingerprint `fp`: FNV-1a of "FP|JSON".
fn record_hash<R: Serialize>(fp: &str, record: &R) -> String {
    let json = serde_json::to_string(record).expect("record serializes");
    fingerprint(format!("{fp}|{json}").as_bytes())
}

/// The line (with its newline) that records `record` under `head`.
pub fn record_line<H: FileHeader, R: Record + Clone>(head: &H, record: &R) -> String {
    let line = Line {
        record: record.clone(),
        spec: head.fingerprint().to_string(),
        hash: record_hash(head.fingerprint(), record),
    };
    serde_json::to_string(&line).expect("record serializes") + "\n"
}

/// The header of a results file (None: an empty file).
pub fn read_header<H: DeserializeOwned>(path: &Path) -> Result<Option<H>> {
    let io = |e| Error::io(path.display().to_string(), e);
    let f = File::open(path).map_err(io)?;
    match BufReader::new(f).lines().next() {
        None => Ok(None),
        Some(l) => serde_json::from_str(&l.map_err(io)?)
            .map(Some)
            .map_err(|e| Error::Results(format!("{}: bad header: {e}", path.display()))),
    }
}

/// Reads a results file: its header and the record lines. A torn last line (an interrupted
/// write) is dropped with a warning; any other line that does not parse, carries another
/// fingerprint, does not match its hash, fails `check` (which says why) or repeats a key is an
/// error naming the file and line. Errors if the header is not `expect`.
pub fn read_records<H: FileHeader, R: Record>(
    path: &Path,
    expect: &H,
    check: impl Fn(&R) -> Option<String>,
) -> Result<BTreeMap<R::Key, R>> {
    let io = |e| Error::io(path.display().to_string(), e);
    let f = File::open(path).map_err(io)?;
    let mut records = BTreeMap::new();
    let lines: Vec<String> = BufReader::new(f)
        .lines()
        .collect::<std::result::Result<_, _>>()
        .map_err(io)?;
    let Some(head) = lines.first() else {
        return Ok(records);
    };
    let h: H = serde_json::from_str(head)
        .map_err(|e| Error::Results(format!("{}: bad header: {e}", path.display())))?;
    if h != *expect {
        return Err(Error::Results(expect.mismatch(path, &h)));
    }
    let fp = expect.fingerprint();
    let noun = R::NOUN;
    let last = lines.len() - 1;
    for (i, text) in lines.iter().enumerate().skip(1) {
        if text.trim().is_empty() {
            continue;
        }
        let bad = |why: &str| {
            Error::Results(format!(
                "{}:{}: {why}; delete the line to rerun its {noun}, or pass --fresh",
                path.display(),
                i + 1
            ))
        };
        let line: Line<R> = match serde_json::from_str(text) {
            Ok(l) => l,
            Err(e) if i == last => {
                eprintln!(
                    "warning: {}:{}: dropped a torn last line (an interrupted write: {e}); its {noun} runs again",
                    path.display(),
                    i + 1
                );
                break;
            }
            Err(e) => return Err(bad(&format!("not a {noun} line ({e})"))),
        };
        if line.spec != fp {
            return Err(bad(&format!(
                "the line was written by spec fingerprint {}, not {fp}",
                line.spec
            )));
        }
        let key = line.record.key();
        if line.hash != record_hash(fp, &line.record) {
            return Err(bad(&format!(
                "{noun} {key} does not match its hash (the line was edited or corrupted)"
            )));
        }
        if let Some(why) = check(&line.record) {
            return Err(bad(&why));
        }
        if records.insert(key, line.record).is_some() {
            return Err(Error::Results(format!(
                "{}: a {noun} appears twice",
                path.display()
            )));
        }
    }
    Ok(records)
}

/// Writes a results file canonically: header, then records by key. Atomic (see
/// [`write_atomic`]), so a reader never sees a half-written file and a crash leaves the old one.
pub fn write_records<H: FileHeader, R: Record + Clone>(
    path: &Path,
    head: &H,
    records: &BTreeMap<R::Key, R>,
) -> Result<()> {
    let mut text = serde_json::to_string(head).expect("header serializes");
    text.push('\n');
    for r in records.values() {
        text.push_str(&record_line(head, r));
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

/// An open results file: the lock, the header and the append handle.
pub struct ResultsFile<H> {
    path: PathBuf,
    head: H,
    file: Mutex<File>,
    _lock: ResultsLock,
}

impl<H: FileHeader> ResultsFile<H> {
    /// Claims `path` ([`lock`]) and decides what an existing file's finished records are worth
    /// ([`Keep`]): the records of a file whose header equals `head` (the same fingerprint) are
    /// kept, and said so in one stderr line; a file of the same experiment under another
    /// fingerprint (its config changed, so its records are wrong for this one) is started over,
    /// said so in one line. An error only where keeping and discarding would both be wrong: a
    /// file of another experiment (a mistaken `--out`), a header that does not parse, a corrupted
    /// or edited record line; `fresh` discards anyway. With `resume` a changed fingerprint is an
    /// error too (the user asked to continue that run). Rewrites the file canonically with what
    /// was kept and opens it for appending; returns the kept records.
    pub fn open<R: Record + Clone>(
        path: &Path,
        head: H,
        resume: bool,
        fresh: bool,
        check: impl Fn(&R) -> Option<String>,
    ) -> Result<(Self, BTreeMap<R::Key, R>)> {
        let lock = lock(path)?;
        let done = match keep(path, &head, resume, fresh, R::NOUN)? {
            Keep::Records => {
                let done = read_records(path, &head, check)?;
                if !done.is_empty() {
                    eprintln!(
                        "{}: reusing {} finished {}s (same fingerprint {}); --fresh recomputes them",
                        path.display(),
                        done.len(),
                        R::NOUN,
                        head.fingerprint()
                    );
                }
                done
            }
            Keep::Nothing => BTreeMap::new(),
        };
        // Rewrite canonically (drops a torn line), then append as records finish.
        write_records(path, &head, &done)?;
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io(path.display().to_string(), e))?;
        let me = ResultsFile {
            path: path.to_path_buf(),
            head,
            file: Mutex::new(file),
            _lock: lock,
        };
        Ok((me, done))
    }

    /// Appends one finished record as one line (one write call, flushed).
    pub fn append<R: Record + Clone>(&self, record: &R) -> Result<()> {
        let line = record_line(&self.head, record);
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        f.write_all(line.as_bytes())
            .and_then(|_| f.flush())
            .map_err(|e| Error::io(self.path.display().to_string(), e))
    }

    /// Rewrites the file canonically with `records` (atomic) and releases the lock.
    pub fn finish<R: Record + Clone>(self, records: &BTreeMap<R::Key, R>) -> Result<()> {
        write_records(&self.path, &self.head, records)
    }
}

/// What [`ResultsFile::open`] keeps of an existing results file.
#[derive(Debug, PartialEq)]
enum Keep {
    /// Its finished records (read and checked line by line).
    Records,
    /// Nothing: there is no file, it holds no record, `fresh` was passed, or its config changed.
    Nothing,
}

/// The number of record lines of the results file at `path` (0 if it cannot be read).
fn finished_lines(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .count()
}

/// Decides what to keep of the file at `path` for a run under `head` (see
/// [`ResultsFile::open`]); prints the one line that says a changed config starts over.
fn keep<H: FileHeader>(
    path: &Path,
    head: &H,
    resume: bool,
    fresh: bool,
    noun: &str,
) -> Result<Keep> {
    if fresh || !path.exists() {
        return Ok(Keep::Nothing);
    }
    let finished = finished_lines(path);
    let found: Option<H> = match read_header(path) {
        Ok(h) => h,
        Err(_) if finished == 0 => return Ok(Keep::Nothing),
        Err(e) => {
            return Err(Error::Results(format!(
                "{e} and {finished} {noun} lines follow it: not a file this command can read; pass --fresh to start over, or choose another --out"
            )));
        }
    };
    let Some(found) = found else {
        return Ok(Keep::Nothing);
    };
    if found == *head {
        return Ok(Keep::Records);
    }
    if finished == 0 {
        return Ok(Keep::Nothing);
    }
    if resume || found.name() != head.name() {
        return Err(Error::Results(head.mismatch(path, &found)));
    }
    eprintln!(
        "{}: its {finished} finished {noun}s were made under another configuration of {} (fingerprint {}, now {}): starting over",
        path.display(),
        head.name(),
        found.fingerprint(),
        head.fingerprint()
    );
    Ok(Keep::Nothing)
}

/// Lock files this process holds now (their paths): a lock naming our own pid is live only if
/// it is one of these; otherwise it was left by an earlier process that had the same pid.
static HELD: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

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

/// The pid a lock file's text names, if it can name another live writer: None (stale) for
/// unreadable text, pid 0 (kill would address our process group), pid 1 (init, never a writer),
/// and pids that do not fit `pid_t` (as `pid_t` they would turn negative: -1 addresses every
/// process).
fn lock_pid(text: &str) -> Option<u32> {
    let pid = text.split_whitespace().next()?.parse::<u32>().ok()?;
    (pid > 1 && libc_pid_fits(pid)).then_some(pid)
}

/// Whether `pid` is a positive `pid_t` (i32 on every Unix Rust supports).
fn libc_pid_fits(pid: u32) -> bool {
    i32::try_from(pid).is_ok()
}

/// Whether the lock file at `path` with contents `text` belongs to a running process. Stale:
/// see [`lock_pid`]; our own pid unless this process holds that lock now (a lock left by an
/// earlier process with our pid, or by this process before a panic); a dead pid; a live pid whose
/// start time differs from the one recorded (the pid was recycled by an unrelated process).
fn lock_owner_alive(path: &Path, text: &str) -> Option<u32> {
    let pid = lock_pid(text)?;
    let recorded: Option<u64> = text.split_whitespace().nth(1).and_then(|t| t.parse().ok());
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

/// Claims `results` for this process through `<results>.lock` (created exclusively, holding the
/// pid and its start time). A lock left by a process that no longer runs (see
/// `lock_owner_alive`) is taken over; a live one is an error.
pub fn lock(results: &Path) -> Result<ResultsLock> {
    let mut name = results.as_os_str().to_owned();
    name.push(".lock");
    let path = PathBuf::from(name);
    for _ in 0..2 {
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut f) => {
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
                        return Err(Error::Results(format!(
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
    Err(Error::Results(format!(
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
    // SAFETY: signal 0 only checks that the process exists; nothing is sent. lock_pid keeps
    // p > 1, so this never addresses a process group or every process.
    let r = unsafe { libc::kill(p, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
fn alive(_pid: u32) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        crate::test_dir::tmpdir(&format!("results-file-{name}"))
    }

    #[test]
    fn pids_that_name_no_other_writer_are_stale() {
        // Stale: 0 (our process group), 1 (init), beyond pid_t (would wrap to -1 or another
        // negative pid: every process or a group), garbage.
        for text in [
            "0",
            "1",
            "1 12345",
            "4294967295",
            "2147483648",
            "-1",
            "x",
            "",
        ] {
            assert_eq!(lock_pid(text), None, "{text:?}");
        }
        assert_eq!(lock_pid("2"), Some(2));
        assert_eq!(lock_pid("2147483647 7"), Some(2147483647));
        let dir = tmp("pid");
        let path = dir.join("r.jsonl.lock");
        // Each of them, and our own pid while we do not hold the lock: stale, taken over.
        let own = lock_text(std::process::id());
        for text in ["0", "1", "4294967295", "2147483648", own.as_str()] {
            assert_eq!(lock_owner_alive(&path, text), None, "{text:?}");
            std::fs::write(&path, text).unwrap();
            let l = lock(&dir.join("r.jsonl")).unwrap();
            drop(l);
            assert!(!path.exists());
        }
        // Our own pid while we hold the lock: live (a second writer in this process is refused).
        let held = lock(&dir.join("r.jsonl")).unwrap();
        assert!(lock(&dir.join("r.jsonl")).is_err());
        drop(held);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
