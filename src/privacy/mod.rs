//! Privacy accounting for the Poisson-subsampled Gaussian mechanism of Algorithm 1.

use crate::dpsgd::Calibrator;
use crate::error::{Error, Result};

/// The accountant called `name` (as written in a config's `noise.accountant`), as a calibrator.
pub fn calibrator(name: &str) -> Result<Box<dyn Calibrator>> {
    Err(Error::param(format!(
        "unknown accountant '{name}' (no accountant is implemented yet)"
    )))
}
