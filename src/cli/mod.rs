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
