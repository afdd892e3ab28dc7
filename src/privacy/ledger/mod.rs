//! The privacy ledger: one file per data set that records every release computed from it, so
//! that one budget (epsilon, delta) holds across commands, processes and reruns, refused runs
//! included.
//!
//! Why: a budget printed by one command says nothing about the next. `clipnorm recommend` run
//! again spends again; `train` run again spends again; a run that refuses after a mechanism ran
//! has spent too. The ledger is the one place that counts them, in the style of OpenDP's
//! odometers: a total fixed when the ledger is made, bound to the rows it protects, and one entry
//! point, [`Ledger::invoke`], through which every release goes: under an exclusive lock it
//! re-reads the file, checks the whole request against the budget, appends one complete line and
//! syncs it ([`file`]); only then, with the lock released, does the mechanism run. A crash can
//! only over-count.
//!
//! Format: JSON lines. The first line is the budget, `{"kind":"budget","epsilon":E,"delta":D,
//! "data":"...","fingerprint":"rows-fnv1a64:...","unix_time":S}`; every further line is one
//! spend, `{"kind":"spend","command":"...","mechanism":"...","epsilon":e,"delta":d,
//! "guarantee":{...},"unix_time":S}` with the release's privacy curve ([`Guarantee`]). Spends
//! compose in RDP, or by basic composition where that is smaller ([`compose`]). A line that is
//! not of this form, a negative, NaN or infinite number, or a total above the budget makes the
//! ledger unreadable, and every command refuses it.
//!
//! Binding: the budget line holds a fingerprint of the rows ([`DataId`]); a spend from rows with
//! another fingerprint (another data set, or this file edited) is refused. A ledger is a record
//! the data holder keeps: deleting it, or starting a second one for the same rows, makes this
//! tool stop counting but does not restore any privacy, and a new ledger is announced in one line
//! that says so ([`Ledger::notes`]).

mod file;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use super::guarantee::{Composed, Guarantee, Release, compose};
use crate::dataset::Dataset;
use crate::error::{Error, Result, fmt_num};
pub use file::{FAULT_VAR, MAX_LEDGER_BYTES};

/// Relative slack allowed when a spend exactly fills the budget (float summation only: 1e-12,
/// far below any epsilon a user states).
const SUM_SLACK: f64 = 1e-12;

/// One line of the ledger file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LedgerLine {
    /// The total budget of the data set (the first line, once).
    Budget {
        /// Total epsilon.
        epsilon: f64,
        /// Total delta.
        delta: f64,
        /// The data set the budget protects (its path or name, as the creating command had it).
        data: String,
        /// The fingerprint of its rows ([`DataId::fingerprint`]).
        #[serde(default)]
        fingerprint: Option<String>,
        /// When the ledger was made (seconds since the Unix epoch).
        unix_time: u64,
    },
    /// One release.
    Spend(Spend),
}

/// One release computed from the data set, and what it cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spend {
    /// The command that ran it (e.g. "clipnorm recommend").
    pub command: String,
    /// The mechanism (e.g. "RNMM (Report Noisy Max, pure DP)").
    pub mechanism: String,
    /// Its epsilon at `delta`, for the release alone (>= 0, finite).
    pub epsilon: f64,
    /// Its delta (in [0, 1)).
    pub delta: f64,
    /// Its privacy curve (None in a line written before curves were recorded: composed as
    /// (epsilon, delta) by basic composition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guarantee: Option<Guarantee>,
    /// When it was recorded (seconds since the Unix epoch).
    #[serde(default)]
    pub unix_time: u64,
}

impl Spend {
    /// A spend known only by (epsilon, delta), recorded now.
    pub fn new(command: &str, mechanism: &str, epsilon: f64, delta: f64) -> Self {
        Spend {
            command: command.to_string(),
            mechanism: mechanism.to_string(),
            epsilon,
            delta,
            guarantee: None,
            unix_time: now(),
        }
    }

    /// A spend with its privacy curve.
    pub fn with_curve(
        command: &str,
        mechanism: &str,
        (epsilon, delta): (f64, f64),
        guarantee: Guarantee,
    ) -> Self {
        Spend {
            guarantee: Some(guarantee),
            ..Spend::new(command, mechanism, epsilon, delta)
        }
    }

    /// The spend as the composition sees it.
    pub fn release(&self) -> Release {
        Release {
            guarantee: self.guarantee.unwrap_or(Guarantee::Approx {
                epsilon: self.epsilon,
                delta: self.delta,
            }),
            epsilon: self.epsilon,
            delta: self.delta,
        }
    }

    fn check(&self) -> std::result::Result<(), String> {
        if !(self.epsilon.is_finite() && self.epsilon >= 0.0) {
            return Err(format!(
                "spent epsilon {} must be finite and >= 0",
                self.epsilon
            ));
        }
        if !(self.delta.is_finite() && (0.0..1.0).contains(&self.delta)) {
            return Err(format!("spent delta {} must be in [0, 1)", self.delta));
        }
        if let Some(g) = &self.guarantee {
            g.check().map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// The rows a ledger protects: a name for messages and a fingerprint of the rows themselves, so
/// that a copy under another name is the same data and an edited file is not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataId {
    /// The path or name, as the command was given it.
    pub name: String,
    /// "rows-fnv1a64:HEX:n=N:d=D" of every row (features and label, before any split).
    pub fingerprint: String,
}

impl DataId {
    /// The id of `data` (all of its rows, as read, before any split or transform).
    pub fn of(name: &str, data: &Dataset) -> DataId {
        // In place: no buffer of the rows' bytes (a data set may be most of the memory).
        let mut h = crate::fingerprint::Fnv1a64::new();
        h.write(&(data.n as u64).to_le_bytes());
        h.write(&(data.d as u64).to_le_bytes());
        for v in data.x.iter().chain(&data.y) {
            h.write(&v.to_bits().to_le_bytes());
        }
        DataId {
            name: name.to_string(),
            fingerprint: format!("rows-fnv1a64:{:016x}:n={}:d={}", h.finish(), data.n, data.d),
        }
    }
}

/// A data set's ledger: its budget and every spend so far.
#[derive(Debug, Clone)]
pub struct Ledger {
    path: PathBuf,
    epsilon: f64,
    delta: f64,
    data: String,
    fingerprint: Option<String>,
    spends: Vec<Spend>,
    notes: Vec<String>,
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Whether `line` is a whole ledger line (for the torn-line repair).
fn parses(line: &str) -> bool {
    serde_json::from_str::<LedgerLine>(line).is_ok()
}

impl Ledger {
    /// Reads the ledger at `path`, checking every line (under the lock, which also repairs a torn
    /// last line).
    pub fn open(path: &Path) -> Result<Ledger> {
        let mut f = file::Locked::open(path, false)?;
        let (text, note) = f.read(parses)?;
        let mut l = Ledger::parse(path, &text)?;
        l.notes.extend(note);
        Ok(l)
    }

    /// The ledger at `path` for the rows `data`: made with budget (epsilon, delta) when no file
    /// is there (announced in [`Ledger::notes`]), refused when it belongs to other rows. An
    /// existing ledger keeps its own budget (the caller checks its request against it).
    pub fn open_for(path: &Path, data: &DataId, budget: Option<(f64, f64)>) -> Result<Ledger> {
        if let Some((e, d)) = budget {
            crate::error::check_positive("ledger epsilon", e)?;
            crate::error::check_open("ledger delta", d, 0.0, 1.0)?;
        }
        let mut f = file::Locked::open(path, budget.is_some())?;
        let (text, note) = f.read(parses)?;
        let mut created = None;
        let text = match budget {
            Some((epsilon, delta)) if text.trim().is_empty() => {
                let line = LedgerLine::Budget {
                    epsilon,
                    delta,
                    data: data.name.clone(),
                    fingerprint: Some(data.fingerprint.clone()),
                    unix_time: now(),
                };
                let line = to_line(path, &line)?;
                f.append(&line)?;
                created = Some(format!(
                    "privacy ledger {} made: budget epsilon {}, delta {} for {} ({}); every \
                     release from these rows is recorded there. Keep it: deleting it or starting \
                     another ledger for the same rows restores no privacy, it only stops the \
                     counting",
                    path.display(),
                    fmt_num(epsilon),
                    fmt_num(delta),
                    data.name,
                    data.fingerprint
                ));
                format!("{line}\n")
            }
            _ => text,
        };
        drop(f);
        let mut l = Ledger::parse(path, &text)?;
        l.notes.extend(note);
        l.notes.extend(created);
        l.check_data(data)?;
        Ok(l)
    }

    fn parse(path: &Path, text: &str) -> Result<Ledger> {
        let name = path.display().to_string();
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let bad = |i: usize, why: &str| {
            Error::data(format!("privacy ledger {name}, line {}: {why}", i + 1))
        };
        let (epsilon, delta, data, fingerprint) = match lines.next() {
            Some((i, l)) => match serde_json::from_str::<LedgerLine>(l) {
                Ok(LedgerLine::Budget {
                    epsilon,
                    delta,
                    data,
                    fingerprint,
                    ..
                }) => {
                    if !(epsilon.is_finite() && epsilon > 0.0) {
                        return Err(bad(i, &format!("budget epsilon {epsilon} must be > 0")));
                    }
                    if !(delta.is_finite() && (0.0..1.0).contains(&delta)) {
                        return Err(bad(i, &format!("budget delta {delta} must be in [0, 1)")));
                    }
                    (epsilon, delta, data, fingerprint)
                }
                Ok(_) => return Err(bad(i, "the first line must be the budget")),
                Err(e) => return Err(bad(i, &format!("not a ledger line ({e})"))),
            },
            None => return Err(Error::data(format!("privacy ledger {name} is empty"))),
        };
        let mut spends = Vec::new();
        for (i, l) in lines {
            match serde_json::from_str::<LedgerLine>(l) {
                Ok(LedgerLine::Spend(s)) => {
                    s.check().map_err(|why| bad(i, &why))?;
                    spends.push(s);
                }
                Ok(_) => return Err(bad(i, "a second budget line")),
                Err(e) => return Err(bad(i, &format!("not a ledger line ({e})"))),
            }
        }
        let ledger = Ledger {
            path: path.to_path_buf(),
            epsilon,
            delta,
            data,
            fingerprint,
            spends,
            notes: Vec::new(),
        };
        let c = ledger.compose_with(&[])?;
        if !ledger.fits(&c) {
            return Err(Error::data(format!(
                "privacy ledger {name} records spends of epsilon {} (delta {}) above its budget \
                 ({}, {})",
                fmt_num(c.epsilon),
                fmt_num(c.delta),
                fmt_num(epsilon),
                fmt_num(delta)
            )));
        }
        Ok(ledger)
    }

    /// Refuses rows whose fingerprint is not the ledger's.
    pub fn check_data(&self, data: &DataId) -> Result<()> {
        match &self.fingerprint {
            Some(f) if *f == data.fingerprint => Ok(()),
            Some(f) => Err(Error::param(format!(
                "privacy ledger {} guards other rows than {} (the ledger's fingerprint is {f}, \
                 these rows' is {}: another data set, or the file changed since the ledger was \
                 made); give the ledger of these rows, or a new ledger path for new data",
                self.path.display(),
                data.name,
                data.fingerprint
            ))),
            None => Err(Error::param(format!(
                "privacy ledger {} names no fingerprint of its rows (it was made by an earlier \
                 version), so it cannot be checked against {}; start a new ledger for these rows \
                 with a budget that leaves out what the old one recorded",
                self.path.display(),
                data.name
            ))),
        }
    }

    /// Where the ledger lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The data set it protects, as recorded.
    pub fn data(&self) -> &str {
        &self.data
    }

    /// The total budget (epsilon, delta).
    pub fn budget(&self) -> (f64, f64) {
        (self.epsilon, self.delta)
    }

    /// Every spend so far, in order.
    pub fn spends(&self) -> &[Spend] {
        &self.spends
    }

    /// One-line announcements of this opening (a ledger made, a torn line repaired) for the
    /// command to print.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The composition of every spend with `more` at the budget's delta.
    pub fn compose_with(&self, more: &[Spend]) -> Result<Composed> {
        let releases: Vec<Release> = self.spends.iter().chain(more).map(Spend::release).collect();
        compose(&releases, self.delta)
    }

    fn fits(&self, c: &Composed) -> bool {
        c.epsilon <= self.epsilon * (1.0 + SUM_SLACK)
    }

    /// What has been spent: (composed epsilon, sum of the stated deltas).
    pub fn spent(&self) -> (f64, f64) {
        self.compose_with(&[])
            .map_or((f64::INFINITY, f64::INFINITY), |c| {
                (c.epsilon, c.basic_delta)
            })
    }

    /// What is left: the budget's epsilon less the composed epsilon, and its delta less the
    /// stated deltas (the delta a further release may state for itself); never < 0.
    pub fn remaining(&self) -> (f64, f64) {
        let (e, d) = self.spent();
        ((self.epsilon - e).max(0.0), (self.delta - d).max(0.0))
    }

    /// Refuses spends `more` that the budget cannot hold with what is recorded, naming `what`;
    /// returns the composition with them.
    pub fn check(&self, more: &[Spend], what: &str) -> Result<Composed> {
        for s in more {
            s.check()
                .map_err(|why| Error::param(format!("{what}: {why}")))?;
        }
        let c = self.compose_with(more)?;
        if !self.fits(&c) {
            let (re, rd) = self.remaining();
            let need = compose(
                &more.iter().map(Spend::release).collect::<Vec<_>>(),
                self.delta,
            )?;
            return Err(Error::param(format!(
                "{what} needs epsilon {} (delta {}), but the privacy ledger {} has only epsilon \
                 {} and delta {} left of its budget ({}, {}); a new budget needs new data (or a \
                 ledger you are entitled to start)",
                fmt_num(need.epsilon),
                fmt_num(need.basic_delta),
                self.path.display(),
                fmt_num(re),
                fmt_num(rd),
                fmt_num(self.epsilon),
                fmt_num(self.delta)
            )));
        }
        Ok(c)
    }

    /// The one way a release is made (module doc): under the ledger's exclusive lock, re-reads
    /// the file, refuses rows that are not the ledger's and a spend the budget cannot hold,
    /// appends the spend as one synced line; then, with the lock released, runs `mechanism`.
    pub fn invoke<T>(
        &mut self,
        data: &DataId,
        spend: Spend,
        mechanism: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        {
            let mut f = file::Locked::open(&self.path, false)?;
            let (text, note) = f.read(parses)?;
            let fresh = Ledger::parse(&self.path, &text)?;
            if (fresh.epsilon, fresh.delta, &fresh.fingerprint)
                != (self.epsilon, self.delta, &self.fingerprint)
            {
                return Err(Error::data(format!(
                    "privacy ledger {}: its budget line changed while this command ran",
                    self.path.display()
                )));
            }
            fresh.check_data(data)?;
            fresh.check(std::slice::from_ref(&spend), &spend.mechanism)?;
            f.append(&to_line(&self.path, &LedgerLine::Spend(spend.clone()))?)?;
            self.spends = fresh.spends;
            self.spends.push(spend);
            self.notes.extend(note);
        }
        mechanism()
    }

    /// One line for the output: spends, the composed epsilon of the budget, the delta.
    pub fn summary(&self) -> String {
        let c = self.compose_with(&[]).ok();
        let (re, rd) = self.remaining();
        let how = match c {
            Some(c) if c.rdp_epsilon < c.basic_epsilon => format!(
                " by RDP composition; basic composition: {}",
                fmt_num(c.basic_epsilon)
            ),
            _ => String::new(),
        };
        format!(
            "privacy ledger {}: {} spends, epsilon {} of {} spent{how} ({} left), delta {:.3e} of \
             {:.3e} ({:.3e} left)",
            self.path.display(),
            self.spends.len(),
            fmt_num(self.spent().0),
            fmt_num(self.epsilon),
            fmt_num(re),
            self.spent().1,
            self.delta,
            rd
        )
    }
}

fn to_line(path: &Path, line: &LedgerLine) -> Result<String> {
    serde_json::to_string(line).map_err(|e| {
        Error::data(format!(
            "privacy ledger {}: cannot write a line: {e}",
            path.display()
        ))
    })
}

#[cfg(test)]
mod tests;
