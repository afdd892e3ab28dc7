//! The ledger file under an exclusive lock: every spend is read, checked and appended while the
//! lock is held, so two processes cannot both spend what only one may (the check and the append
//! are one step), and a line is written whole in one `write` and synced before the lock is
//! released and before its mechanism runs.
//!
//! The lock is `flock(2)` (std's [`File::lock`]) on the ledger file itself: the kernel releases it
//! when the holder dies, so a killed process leaves no stale lock.
//!
//! A torn last line (no newline: the writer died inside its `write`) is repaired under the lock
//! by one rule: a line that parses is complete but for its newline, so it is kept and the newline
//! added (it may have been recorded just before the kill, and an over-count is safe); a line that
//! does not parse is a write that never finished, whose mechanism never ran (mechanisms run only
//! after the synced write returns), so it is cut off. Either repair is reported.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::{Error, Result};

/// The largest ledger file read (64 MiB, about 300,000 spends): a larger file, or one that is not
/// a regular file (a FIFO, a device such as /dev/full), is refused before it is read.
pub const MAX_LEDGER_BYTES: u64 = 64 << 20;

/// Where a test asks the process to die (environment variable [`FAULT_VAR`]); `Mid` writes half
/// the line first. For the fault-injection tests only; unset, nothing happens.
pub const FAULT_VAR: &str = "DPSGD_LAB_LEDGER_FAULT";

/// The ledger file, open and locked exclusively until dropped.
pub struct Locked {
    file: File,
    name: String,
}

/// Refuses a path that is not a regular file of at most [`MAX_LEDGER_BYTES`] (without opening it:
/// opening a FIFO would block). A missing file is Ok(false).
pub fn check_regular(path: &Path) -> Result<bool> {
    let name = path.display().to_string();
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => Err(Error::data(format!(
            "privacy ledger {name} is not a regular file; give the path of a ledger file"
        ))),
        Ok(m) if m.len() > MAX_LEDGER_BYTES => Err(Error::data(format!(
            "privacy ledger {name} has {} bytes, more than a ledger holds ({MAX_LEDGER_BYTES}); \
             it is not a ledger",
            m.len()
        ))),
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(&name, e)),
    }
}

impl Locked {
    /// Opens (or, with `create`, makes) the ledger file and waits for its exclusive lock.
    pub fn open(path: &Path, create: bool) -> Result<Locked> {
        let name = path.display().to_string();
        if !check_regular(path)? && !create {
            return Err(Error::io(
                &name,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such privacy ledger"),
            ));
        }
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(create)
            .open(path)
            .map_err(|e| Error::io(&name, e))?;
        file.lock().map_err(|e| Error::io(&name, e))?;
        fault("after-lock");
        Ok(Locked { file, name })
    }

    /// The file's text, with a torn last line repaired (module doc); the repair's description
    /// beside it. `parses` says whether a line is a whole ledger line.
    pub fn read(&mut self, parses: impl Fn(&str) -> bool) -> Result<(String, Option<String>)> {
        let len = self
            .file
            .metadata()
            .map_err(|e| Error::io(&self.name, e))?
            .len();
        if len > MAX_LEDGER_BYTES {
            return Err(Error::data(format!(
                "privacy ledger {} has {len} bytes, more than a ledger holds",
                self.name
            )));
        }
        let mut text = String::new();
        self.file
            .seek(SeekFrom::Start(0))
            .and_then(|_| {
                (&self.file)
                    .take(MAX_LEDGER_BYTES)
                    .read_to_string(&mut text)
            })
            .map_err(|e| Error::io(&self.name, e))?;
        if text.is_empty() || text.ends_with('\n') {
            return Ok((text, None));
        }
        let cut = text.rfind('\n').map_or(0, |i| i + 1);
        let last = text[cut..].to_string();
        if parses(last.trim()) {
            self.append_raw(b"\n")?;
            text.push('\n');
            Ok((
                text,
                Some(format!(
                    "privacy ledger {}: its last line had no newline (a writer was stopped); the \
                     line is whole and is counted",
                    self.name
                )),
            ))
        } else {
            self.file
                .set_len(cut as u64)
                .and_then(|_| self.file.sync_all())
                .map_err(|e| Error::io(&self.name, e))?;
            text.truncate(cut);
            Ok((
                text,
                Some(format!(
                    "privacy ledger {}: a line cut short by a stopped writer ({} bytes) was removed; \
                     its mechanism never ran",
                    self.name,
                    last.len()
                )),
            ))
        }
    }

    /// Appends `line` and its newline in one write, then syncs the file to disk.
    pub fn append(&mut self, line: &str) -> Result<()> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        if fault_is("mid-write") {
            let _ = self.file.write_all(&bytes[..bytes.len() / 2]);
            let _ = self.file.sync_all();
            die();
        }
        self.append_raw(&bytes)?;
        fault("after-write");
        self.file.sync_all().map_err(|e| Error::io(&self.name, e))?;
        fault("after-sync");
        Ok(())
    }

    fn append_raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all(bytes)
            .map_err(|e| Error::io(&self.name, e))
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

fn fault_is(at: &str) -> bool {
    std::env::var(FAULT_VAR).is_ok_and(|v| v == at)
}

/// Dies at `at` when [`FAULT_VAR`] names it.
fn fault(at: &str) {
    if fault_is(at) {
        die();
    }
}

/// Ends the process at once, as SIGKILL would: no destructor, no flush, no unlock but the
/// kernel's.
fn die() -> ! {
    #[cfg(unix)]
    // SAFETY: kill(2) with our own pid and SIGKILL has no memory effects in this process; it
    // does not return.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    std::process::abort()
}
