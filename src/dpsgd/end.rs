//! How a run of [`super::DpSgd::run_with`] ends: completed with its output, or stopped by its observer.

use super::{RunOutput, Stepper};
use crate::error::{Error, Result};

/// How a run of [`super::DpSgd::run_with`] ended.
#[derive(Debug, Clone)]
pub enum RunEnd {
    /// All T steps ran; the output rule was applied.
    Completed(RunOutput),
    /// The observer stopped the run.
    Stopped(Stopped),
}

impl RunEnd {
    /// The output of a completed run; an error for a stopped one.
    pub fn into_output(self) -> Result<RunOutput> {
        match self {
            RunEnd::Completed(out) => Ok(out),
            RunEnd::Stopped(s) => Err(Error::param(format!(
                "the run was stopped by its observer at step {} of {}, so it has no output",
                s.t, s.steps
            ))),
        }
    }
}

/// A run its observer stopped before step `t` (the output rule is not applied).
#[derive(Debug, Clone)]
pub struct Stopped {
    /// The step before which the run stopped: steps 0..t ran.
    pub t: usize,
    /// The configured number of steps T.
    pub steps: usize,
    /// w_t, the iterate the observer saw last.
    pub w: Vec<f64>,
    /// Fraction of the per-sample gradients sampled in steps 0..t that were clipped.
    pub clipped_fraction: f64,
}

impl Stopped {
    pub(super) fn new(t: usize, steps: usize, w: Vec<f64>, stepper: &Stepper<'_>) -> Self {
        Stopped {
            t,
            steps,
            w,
            clipped_fraction: clipped_fraction(stepper),
        }
    }
}

/// Fraction of the per-sample gradients sampled so far that were clipped (0 when none were).
pub(super) fn clipped_fraction(stepper: &Stepper<'_>) -> f64 {
    if stepper.sampled == 0 {
        0.0
    } else {
        stepper.clipped as f64 / stepper.sampled as f64
    }
}
