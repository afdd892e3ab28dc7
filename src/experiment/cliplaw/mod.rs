//! The clip-norm law: how the best constant clip norm tau* moves with phi and
//! the tail index k, and what clipping at the largest G_i (uniform-Lipschitz tuning) costs.
//!
//! A spec with a `[clip_sweep]` table expands each declared series into arms ([`Arm`]): a log
//! grid of constant clip norms, the uniform-Lipschitz clip tau = max_i G_i of the data set, and
//! the theorem's tau(phi). Every arm runs the theorem's step size at its own tau (eta = C / (T
//! tau) psi^(-1/2): before Eq. 69 for J.1, before Eq. 95 for K.1, before Eq. 144 for N.1, with C
//! minimizing the bound; for J.1 and K.1 this eta minimizes the D0^2 / (2 eta T) + eta T tau^2
//! psi part of Eq. 68 at every tau), the noise calibrated to (epsilon, delta) by an accountant,
//! and the same data and random streams as the other arms of its series (common random numbers
//! across tau as well as phi). The runner, results file, resume, shards and merge are
//! `verify`'s; [`analysis`] reads the finished cells, [`report`] and [`figure`] write them out.

pub mod analysis;
pub mod figure;
pub mod report;

use std::collections::BTreeMap;
use std::path::Path;

use super::results::CellResult;
use super::spec::{ExperimentSpec, Spec};
use crate::error::Result;

pub use super::clip_sweep::{Arm, ClipSweepSpec, MIN_POINTS, SweepSlot};
pub use analysis::{CliplawSummary, analyze};

/// Writes summary.json, report.md and the figures of a finished clip-norm sweep; returns the
/// summary.
pub fn finalize(
    spec: &Spec,
    cells: &BTreeMap<usize, CellResult>,
    out: &Path,
    plots: Option<&Path>,
) -> Result<CliplawSummary> {
    super::check_complete(spec, cells, out)?;
    let summary = analyze(spec, cells)?;
    super::write_json(&out.join("summary.json"), &summary)?;
    let stems = figure::save_all(&summary, super::plots_folder(plots, out)?)?;
    let rel: Vec<String> = stems
        .iter()
        .map(|s| super::relative(out, &s.with_extension("png")))
        .collect();
    super::write_text(&out.join("report.md"), &report::markdown(&summary, &rel))?;
    Ok(summary)
}

/// True when `raw` is a clip-norm sweep.
pub fn is_sweep(raw: &ExperimentSpec) -> bool {
    raw.clip_sweep.is_some()
}
