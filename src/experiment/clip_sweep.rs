//! The `[clip_sweep]` table of a spec and the arms it expands each declared series into (a log
//! grid of constant clip norms, the uniform-Lipschitz clip, the theorem's tau(phi)); the
//! `cliplaw` experiment reads them back from the finished cells.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::dpsgd::AccountantKind;
use crate::error::{Error, Result, check_positive};

/// The fewest clip norms a sweep's grid may have.
pub const MIN_POINTS: usize = 12;
/// The most clip norms a sweep's grid may have: each is a series of the spec (its own cells,
/// results and analysis), and the committed sweeps use 49. `points = 1e8` aborted on a 9 GB
/// allocation before this bound.
pub const MAX_POINTS: usize = 1000;

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
        if !(MIN_POINTS..=MAX_POINTS).contains(&self.points) {
            return Err(Error::Config(format!(
                "clip_sweep.points must be in {MIN_POINTS}..={MAX_POINTS}, but is {}",
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
