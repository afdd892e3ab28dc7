//! The verdict of each series of a finished spec: slope fits, the bound checks (violations,
//! vacuity, the probability statement), and the stated notes. Rendering is in `report.rs`.
//!
//! One file per axis of the verdict: [`bound`] (OR against the explicit bound, cell by cell),
//! [`informative`] (the bound against the do-nothing risk), [`rate`] (the slope's interval
//! against the exponent), [`drivers`] (what moves the risk: lambda_min S, clipping), [`controls`]
//! (the joint fits of a series, its do-nothing risk and its bounded-data control); [`outcome`]
//! combines them into a [`Verdict`] and [`summary`] walks a spec's series; [`spent`] says what
//! epsilon a lower-bound series' Thm 3.4 noise actually spends; [`split`] reads the risk split
//! (the bias share) and whether a series tests the heavy-tail mechanism.

mod bound;
mod cells;
mod controls;
mod drivers;
mod informative;
mod outcome;
mod rate;
pub mod spent;
pub mod split;
mod summary;
#[cfg(test)]
pub(crate) mod tests;

pub(crate) use cells::{cell_mean, reps_of};
pub use controls::ControlComparison;
pub use drivers::relax_phi;
pub use informative::Informative;
pub(crate) use outcome::sig;
pub use outcome::{Ablation, DO_NOTHING, DoNothing, Verdict, upper_verdict};
pub use rate::{LowerRate, MAX_HALF_WIDTH, Rate, lower_verdict};
pub use spent::Spent;
pub use split::{BIAS_SHARE_THRESHOLD, BiasShare, Mechanism, TailTest};
pub use summary::{Role, SeriesSummary, SpecSummary, summarize, violations};
