//! The privacy ledger: one file per data set that records every release computed from it, so
//! that one budget (epsilon, delta) holds across commands and reruns, refused runs included.
//!
//! Why: a budget printed by one command says nothing about the next. `clipnorm recommend` run
//! again (another seed) spends again; `train` run again (another seed) spends again; a run that
//! refuses after a mechanism ran has spent too. The ledger is the one place that counts them, in
//! the style of OpenDP's sequential compositor: a total fixed when the ledger is made, and each
//! spend checked against what is left before its mechanism runs.
//!
//! Format: JSON lines. The first line is the budget, `{"kind":"budget","epsilon":E,"delta":D,
//! "data":"...","unix_time":S}`; every further line is one spend, `{"kind":"spend","command":
//! "...","mechanism":"...","epsilon":e,"delta":d,"unix_time":S}`, appended (and synced) BEFORE
//! the mechanism runs, so a crash can only over-count. Spends compose by basic composition
//! (Dwork & Roth 2014, Theorem 3.16, adaptive by their Theorem 3.20's setting): the epsilons add,
//! the deltas add. A line that is not of this form, a negative, NaN or infinite number, or a
//! total above the budget makes the ledger unreadable, and every command refuses it.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, fmt_num};

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
        /// The data set the budget protects (its path, as the creating command was given it).
        data: String,
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
    /// The command that ran it (e.g. "clipnorm recommend --seed 0").
    pub command: String,
    /// The mechanism (e.g. "RNMM (Report Noisy Max, pure DP)").
    pub mechanism: String,
    /// Its epsilon (>= 0, finite).
    pub epsilon: f64,
    /// Its delta (in [0, 1)).
    pub delta: f64,
    /// When it was recorded (seconds since the Unix epoch).
    #[serde(default)]
    pub unix_time: u64,
}

impl Spend {
    /// A spend recorded now.
    pub fn new(command: &str, mechanism: &str, epsilon: f64, delta: f64) -> Self {
        Spend {
            command: command.to_string(),
            mechanism: mechanism.to_string(),
            epsilon,
            delta,
            unix_time: now(),
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
    spends: Vec<Spend>,
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Ledger {
    /// Reads the ledger at `path`, checking every line.
    pub fn open(path: &Path) -> Result<Ledger> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(&name, e))?;
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let bad = |i: usize, why: &str| {
            Error::data(format!("privacy ledger {name}, line {}: {why}", i + 1))
        };
        let (epsilon, delta, data) = match lines.next() {
            Some((i, l)) => match serde_json::from_str::<LedgerLine>(l) {
                Ok(LedgerLine::Budget {
                    epsilon,
                    delta,
                    data,
                    ..
                }) => {
                    if !(epsilon.is_finite() && epsilon > 0.0) {
                        return Err(bad(i, &format!("budget epsilon {epsilon} must be > 0")));
                    }
                    if !(delta.is_finite() && (0.0..1.0).contains(&delta)) {
                        return Err(bad(i, &format!("budget delta {delta} must be in [0, 1)")));
                    }
                    (epsilon, delta, data)
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
                    if !(s.epsilon.is_finite() && s.epsilon >= 0.0) {
                        return Err(bad(
                            i,
                            &format!("spent epsilon {} must be finite and >= 0", s.epsilon),
                        ));
                    }
                    if !(s.delta.is_finite() && (0.0..1.0).contains(&s.delta)) {
                        return Err(bad(
                            i,
                            &format!("spent delta {} must be in [0, 1)", s.delta),
                        ));
                    }
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
            spends,
        };
        let (e, d) = ledger.spent();
        if e > epsilon * (1.0 + SUM_SLACK) || d > delta * (1.0 + SUM_SLACK) {
            return Err(Error::data(format!(
                "privacy ledger {name} records spends of epsilon {} and delta {} above its budget \
                 ({}, {})",
                fmt_num(e),
                fmt_num(d),
                fmt_num(epsilon),
                fmt_num(delta)
            )));
        }
        Ok(ledger)
    }

    /// The ledger at `path`, made with budget (epsilon, delta) for `data` when no file is there.
    /// An existing ledger keeps its own budget (the caller checks its request against
    /// [`Ledger::remaining`]).
    pub fn open_or_create(path: &Path, data: &str, epsilon: f64, delta: f64) -> Result<Ledger> {
        if path.exists() {
            return Ledger::open(path);
        }
        crate::error::check_positive("ledger epsilon", epsilon)?;
        crate::error::check_open("ledger delta", delta, 0.0, 1.0)?;
        let line = LedgerLine::Budget {
            epsilon,
            delta,
            data: data.to_string(),
            unix_time: now(),
        };
        append_line(path, &line, true)?;
        Ledger::open(path)
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

    /// What has been spent, by basic composition: (sum of epsilons, sum of deltas).
    pub fn spent(&self) -> (f64, f64) {
        self.spends
            .iter()
            .fold((0.0, 0.0), |(e, d), s| (e + s.epsilon, d + s.delta))
    }

    /// What is left: (epsilon, delta) of the budget minus what has been spent (never < 0).
    pub fn remaining(&self) -> (f64, f64) {
        let (e, d) = self.spent();
        ((self.epsilon - e).max(0.0), (self.delta - d).max(0.0))
    }

    /// Refuses a spend of (epsilon, delta) that the budget cannot hold, naming `what`.
    pub fn check(&self, epsilon: f64, delta: f64, what: &str) -> Result<()> {
        if !(epsilon.is_finite() && epsilon >= 0.0 && delta.is_finite() && delta >= 0.0) {
            return Err(Error::param(format!(
                "{what} would spend epsilon {epsilon}, delta {delta}: spends must be finite and >= 0"
            )));
        }
        let (e, d) = self.spent();
        let (re, rd) = self.remaining();
        if e + epsilon > self.epsilon * (1.0 + SUM_SLACK)
            || d + delta > self.delta * (1.0 + SUM_SLACK)
        {
            return Err(Error::param(format!(
                "{what} needs epsilon {}, delta {}, but the privacy ledger {} has only epsilon {} \
                 and delta {} left of its budget ({}, {}); a new budget needs new data (or a \
                 ledger you are entitled to start)",
                fmt_num(epsilon),
                fmt_num(delta),
                self.path.display(),
                fmt_num(re),
                fmt_num(rd),
                fmt_num(self.epsilon),
                fmt_num(self.delta)
            )));
        }
        Ok(())
    }

    /// Checks `spend` against what is left, then appends it to the file (synced) before the
    /// caller runs the mechanism.
    pub fn record(&mut self, spend: Spend) -> Result<()> {
        self.check(spend.epsilon, spend.delta, &spend.mechanism)?;
        append_line(&self.path, &LedgerLine::Spend(spend.clone()), false)?;
        self.spends.push(spend);
        Ok(())
    }

    /// One line for the output: "epsilon 1.35 + ... spent of 2 (0.65 left), delta ...".
    pub fn summary(&self) -> String {
        let (e, d) = self.spent();
        let (re, rd) = self.remaining();
        format!(
            "privacy ledger {}: {} spends, epsilon {} of {} spent ({} left), delta {:.3e} of {:.3e} \
             ({:.3e} left)",
            self.path.display(),
            self.spends.len(),
            fmt_num(e),
            fmt_num(self.epsilon),
            fmt_num(re),
            d,
            self.delta,
            rd
        )
    }
}

/// Appends one JSON line to `path` (made new when `create`, which refuses an existing file) and
/// syncs it to disk.
fn append_line(path: &Path, line: &LedgerLine, create: bool) -> Result<()> {
    let name = path.display().to_string();
    let text = serde_json::to_string(line)
        .map_err(|e| Error::data(format!("privacy ledger {name}: cannot write a line: {e}")))?;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create_new(create)
        .open(path)
        .map_err(|e| Error::io(&name, e))?;
    writeln!(f, "{text}").map_err(|e| Error::io(&name, e))?;
    f.sync_all().map_err(|e| Error::io(&name, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let p =
            std::env::temp_dir().join(format!("dpsgd-ledger-{}-{name}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&p);
        p
    }

    #[test]
    fn spends_add_up_and_an_overspend_is_refused_and_not_recorded() {
        let p = tmp("add");
        let mut l = Ledger::open_or_create(&p, "d.csv", 2.0, 1e-5).unwrap();
        l.record(Spend::new("a", "m1", 1.5, 5e-6)).unwrap();
        assert!(l.record(Spend::new("a", "m2", 0.6, 0.0)).is_err());
        l.record(Spend::new("a", "m3", 0.5, 5e-6)).unwrap();
        let again = Ledger::open(&p).unwrap();
        assert_eq!(again.spends().len(), 2);
        assert_eq!(again.remaining(), (0.0, 0.0));
        assert!(again.check(1e-3, 0.0, "x").is_err());
        let _ = std::fs::remove_file(&p);
    }

    /// A ledger edited by hand to hide a spend (negative), or broken (NaN: not JSON), or over
    /// its budget, is refused as a whole.
    #[test]
    fn negative_nan_and_over_budget_lines_are_refused() {
        for (name, line) in [
            (
                "neg",
                r#"{"kind":"spend","command":"x","mechanism":"m","epsilon":-5,"delta":0}"#,
            ),
            (
                "nan",
                r#"{"kind":"spend","command":"x","mechanism":"m","epsilon":NaN,"delta":0}"#,
            ),
            (
                "negd",
                r#"{"kind":"spend","command":"x","mechanism":"m","epsilon":0.1,"delta":-1}"#,
            ),
            (
                "over",
                r#"{"kind":"spend","command":"x","mechanism":"m","epsilon":2.5,"delta":0}"#,
            ),
        ] {
            let p = tmp(name);
            Ledger::open_or_create(&p, "d.csv", 2.0, 1e-5).unwrap();
            let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
            writeln!(f, "{line}").unwrap();
            assert!(Ledger::open(&p).is_err(), "{name} accepted");
            let _ = std::fs::remove_file(&p);
        }
    }
}
