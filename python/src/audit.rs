//! `audit_run`: the one-run audit of a train config, as `dpsgd-lab audit-run --json`.

use pyo3::prelude::*;

use dpsgd::audit::Fault;
use dpsgd::audit::one_run::{OneRunConfig, run_one_run};
use dpsgd::config::TrainConfig;

use crate::config::ConfigSource;
use crate::{err, to_py};

/// audit_run(*, config, canaries=1000, seed=None, reproducible=False, delta=None,
///           confidence=0.95, force=False)
///
/// The one-run audit exactly as `dpsgd-lab audit-run --config FILE --json`: m Dirac gradient
/// canaries (and, for the logistic loss, m input-space canaries) added to the config's data,
/// each included with probability 1/2, one training run, and the epsilon lower bounds of
/// Steinke, Nasr and Jagielski 2023 and of Mahloujifar, Melis and Chaudhuri 2025 for each threat
/// model. config is a dict with the TOML's keys or a TOML path; `seed` defaults to the config's.
/// On a CSV the run's batches and noise come from the operating system's random source, as
/// `train`'s do; reproducible=True (the CLI's `--reproducible`, the config's
/// `reproducible = true`) draws them from the seeded streams: NOT a private release (a warning
/// says so).
/// `force` runs even when the estimated work exceeds the limit (the CLI's `--force`). Returns the
/// CLI's JSON object as a dict, every field of it (with subsampling the f-DP bound carries
/// `noise_lb`, the smallest noise multiplier whose PLD curve is rejected, inf when none is, where
/// the CLI's JSON writes "inf").
#[pyfunction]
#[pyo3(signature = (*, config, canaries = 1000, seed = None, reproducible = false, delta = None,
    confidence = 0.95, force = false))]
pub fn audit_run<'py>(
    py: Python<'py>,
    config: &Bound<'py, PyAny>,
    canaries: usize,
    seed: Option<u64>,
    reproducible: bool,
    delta: Option<f64>,
    confidence: f64,
    force: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let src = ConfigSource::new(config)?;
    let mut train: TrainConfig = src.parse(None)?;
    train.reproducible |= reproducible;
    if reproducible {
        py.import("warnings")?.call_method1(
            "warn",
            (format!(
                "reproducible=True: the audited run's noise follows the seed: {}",
                dpsgd::rng::NOT_PRIVATE
            ),),
        )?;
    }
    let cfg = OneRunConfig {
        seed: seed.unwrap_or(train.seed),
        train,
        canaries,
        delta,
        confidence,
        force,
        fault: Fault::None,
    };
    let report = py.detach(|| run_one_run(&cfg)).map_err(err)?;
    let out = to_py(py, &report)?;
    // JSON has no infinity: `to_py` reads a non-finite float back as None, where the CLI's
    // --json writes the string "inf". The report's non-finite value, the f-DP bound's noise_lb
    // when no PLD curve is rejected, is float('inf') here.
    let threats = out.get_item("threats")?;
    for (i, t) in report.threats.iter().enumerate() {
        if let Some(z) = t.fdp.noise_lb.filter(|z| !z.is_finite()) {
            threats
                .get_item(i)?
                .get_item("fdp")?
                .set_item("noise_lb", z)?;
        }
    }
    Ok(out)
}
