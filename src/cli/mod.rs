//! Subcommands. Convention: human-readable output by default; with `--json` the last line of
//! stdout is one JSON object.

pub mod audit;
pub mod audit_run;
pub mod batch;
pub mod cliplaw;
pub mod clipnorm;
pub mod data;
pub mod json;
pub mod lower_bound;
pub mod merge;
pub mod privacy;
pub mod run;
pub mod theory;
pub mod train;
pub mod verify;
pub mod worstcase;

/// A check that ran to its end and failed: a bound VIOLATED, a lower bound beaten, an audit's
/// lower bound above the claim. `main` exits 1 on it, so that a script can tell a failed check
/// from bad input or a failed run (exit 2), as `diff` and `grep` do. Outputs are written first.
#[derive(Debug)]
pub struct CheckFailed(pub String);

impl std::fmt::Display for CheckFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CheckFailed {}

/// `Err(CheckFailed)` with `msg`: the exit-1 outcome of a check command.
pub fn check_failed<T>(msg: String) -> anyhow::Result<T> {
    Err(CheckFailed(msg).into())
}
