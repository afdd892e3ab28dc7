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

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use super::results::CellResult;
use super::spec::{ClipRule, ExperimentSpec, Spec};
use crate::dpsgd::AccountantKind;
use crate::error::{Error, Result, check_positive};

pub use analysis::{CliplawSummary, analyze};

/// The fewest clip norms a sweep's grid may have (at least 12, so a local minimum is resolved).
pub const MIN_POINTS: usize = 12;

/// The `[clip_sweep]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClipSweepSpec {
    /// Smallest clip norm of the grid (below the smallest nonzero G_i of every data set).
    pub tau_min: f64,
    /// Largest clip norm (above the largest G_i).
    pub tau_max: f64,
    /// Number of clip norms, geometric from tau_min to tau_max (at least 12).
    pub points: usize,
    /// The accountant that calibrates the noise multiplier to (epsilon, delta) ("rdp" or
    /// "pld"; default rdp).
    #[serde(default)]
    pub accountant: AccountantKind,
}

impl ClipSweepSpec {
    /// Checks the grid.
    pub fn check(&self) -> Result<()> {
        check_positive("clip_sweep.tau_min", self.tau_min)?;
        check_positive("clip_sweep.tau_max", self.tau_max)?;
        if self.tau_max <= self.tau_min {
            return Err(Error::Config(format!(
                "clip_sweep.tau_max = {} must exceed tau_min = {}",
                self.tau_max, self.tau_min
            )));
        }
        if self.points < MIN_POINTS {
            return Err(Error::Config(format!(
                "clip_sweep.points must be >= {MIN_POINTS}, but is {}",
                self.points
            )));
        }
        Ok(())
    }

    /// The grid, geometric, smallest first.
    pub fn grid(&self) -> Vec<f64> {
        (0..self.points)
            .map(|j| {
                let t = j as f64 / (self.points - 1) as f64;
                (self.tau_min.ln() + t * (self.tau_max.ln() - self.tau_min.ln())).exp()
            })
            .collect()
    }
}

/// Which clip norm an arm of a sweep runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arm {
    /// The j-th constant clip norm of the grid.
    Grid(usize),
    /// tau = max_i G_i of the data set: the clip norm uniform Lipschitzness would use (no
    /// sample is clipped).
    Uniform,
    /// The theorem's tau(phi).
    Schedule,
}

impl fmt::Display for Arm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arm::Grid(j) => write!(f, "grid tau #{j}"),
            Arm::Uniform => f.write_str("tau = max G_i"),
            Arm::Schedule => f.write_str("theorem's tau(phi)"),
        }
    }
}

/// Where an expanded series sits: its declared series (`group`) and its arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepSlot {
    /// Index of the declared series.
    pub group: usize,
    /// The arm.
    pub arm: Arm,
}

/// Replaces the declared series by their arms: for each, the grid's clip norms, then the
/// uniform-Lipschitz clip, then the theorem's schedule.
pub fn expand(raw: &mut ExperimentSpec, cs: &ClipSweepSpec) {
    let grid = cs.grid();
    let declared = std::mem::take(&mut raw.series);
    for (g, ser) in declared.into_iter().enumerate() {
        let arm = |arm: Arm, clip: ClipRule| {
            let mut s = ser.clone();
            s.clip = clip;
            s.sweep = Some(SweepSlot { group: g, arm });
            s
        };
        for (j, &t) in grid.iter().enumerate() {
            raw.series.push(arm(Arm::Grid(j), ClipRule::Fixed(t)));
        }
        raw.series.push(arm(Arm::Uniform, ClipRule::Quantile(1.0)));
        raw.series.push(arm(Arm::Schedule, ClipRule::Theorem));
    }
}

/// The noise multiplier z with epsilon(q, T, z, delta) <= epsilon, calibrated once per
/// (accountant, q, T, epsilon, delta) in this process and shared by every arm and replicate
/// (the calibration is deterministic, so the cache changes no result).
pub fn calibrated_z(
    kind: AccountantKind,
    q: f64,
    steps: usize,
    epsilon: f64,
    delta: f64,
) -> Result<f64> {
    type Key = (AccountantKind, u64, usize, u64, u64);
    static CACHE: OnceLock<Mutex<HashMap<Key, f64>>> = OnceLock::new();
    let key = (kind, q.to_bits(), steps, epsilon.to_bits(), delta.to_bits());
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(z) = cache.lock().map_err(|_| poisoned())?.get(&key) {
        return Ok(*z);
    }
    let z = crate::privacy::calibrate::calibrate_noise(kind, q, steps, epsilon, delta)?;
    cache.lock().map_err(|_| poisoned())?.insert(key, z);
    Ok(z)
}

fn poisoned() -> Error {
    Error::Numerical("the noise-calibration cache was poisoned by a failed thread".into())
}

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
