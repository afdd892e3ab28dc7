//! `train`: Algorithm 1 once, as `dpsgd-lab train --json`, on a config's [data] or on arrays.

use std::time::Instant;

use numpy::IntoPyArray;
use numpy::ndarray::Array2;
use pyo3::prelude::*;
use serde::Deserialize;

use dpsgd::config::{BudgetSpec, TrainConfig};
use dpsgd::dpsgd::DpSgdConfig;
use dpsgd::loss::LossSpec;
use dpsgd::privacy::AccountantKind;
use dpsgd::train::{ReportOptions, config_data, train_budgeted, train_config};

use crate::config::ConfigSource;
use crate::model::model_shape;
use crate::{dataset, err, to_py, value_error};

/// A train config without [data] (the data come as X, y).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TrainNoData {
    seed: u64,
    #[serde(default)]
    replicate: u64,
    /// The reproducible research mode (not a private release).
    #[serde(default)]
    reproducible: bool,
    loss: LossSpec,
    dpsgd: DpSgdConfig,
    /// The budget `clipnorm recommend` writes: DP-SGD's spend is checked and recorded in it.
    #[serde(default)]
    privacy: Option<BudgetSpec>,
}

/// train(X=None, y=None, *, config, seed=None, accountant=None, delta=1e-5, reproducible=False)
///
/// Algorithm 1 once, exactly as `dpsgd-lab train --config FILE --json`: config is a dict with
/// the TOML's keys (seed, [loss], [dpsgd], and [data] unless X and y are given) or a TOML
/// path (its relative paths read from its folder); `seed` overrides the config's seed as
/// `--seed` does (and the config then needs none). A `privacy` table (`{"ledger": PATH}`, as
/// `clipnorm recommend` writes it) is the CLI's budget: DP-SGD's spend is checked against the
/// ledger before any work and recorded in it, with X, y as with [data].
/// Returns the CLI's summary (f(w_priv), f(w_T), sigma_n, clipped fraction, ...) with
/// "privacy" (the epsilon actually spent by a real accountant, nu_eff and phi of Eq. (1)), and
/// the iterates w_priv, w_last, w_avg as float64 arrays shaped as the model ([`model_shape`]):
/// (m, d + 1) for the logistic loss (row j is class j's weights, the bias last), flat
/// otherwise. On X, y or a CSV, DP-SGD's batches and noise come from the operating system's
/// random source ("randomness": "os"), so the seed does not replay them; reproducible=True (or
/// the config's `reproducible = true`) is the research mode ("seeded"): the same seed gives the
/// same run, NOT a private release. Generated data (a simulation) are always seeded.
#[pyfunction]
#[pyo3(name = "train", signature = (x = None, y = None, *, config, seed = None, accountant = None,
    delta = 1e-5, reproducible = false))]
pub fn train_py<'py>(
    py: Python<'py>,
    x: Option<&Bound<'py, PyAny>>,
    y: Option<&Bound<'py, PyAny>>,
    config: &Bound<'py, PyAny>,
    seed: Option<u64>,
    accountant: Option<String>,
    delta: f64,
    reproducible: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let start = Instant::now();
    let src = ConfigSource::new(config)?;
    if seed.is_none() && !src.table.contains_key("seed") {
        return Err(value_error(format!(
            "{}: seed is missing: add `seed = <integer>` to the config, or pass seed=",
            src.name()
        )));
    }
    let accountant = accountant
        .as_deref()
        .map(AccountantKind::parse)
        .transpose()
        .map_err(err)?;
    let opts = ReportOptions {
        accountant,
        delta,
        force: false,
    };
    let (run, loss, d) = match (x, y) {
        (Some(x), Some(y)) => {
            if src.table.contains_key("data") {
                return Err(value_error(
                    "give the data either as X, y or as the config's [data] table, not both",
                ));
            }
            let cfg: TrainNoData = src.parse(seed)?;
            let data = dataset(py, x, y)?;
            let s = seed.unwrap_or(cfg.seed);
            let budget = cfg.privacy.as_ref();
            let run = py
                .detach(|| {
                    let run = (s, cfg.replicate);
                    // arrays are a user's data: a private release unless reproducible
                    let secure = !(reproducible || cfg.reproducible);
                    let (loss, dpsgd) = (&cfg.loss, &cfg.dpsgd);
                    train_budgeted(run, loss, dpsgd, &data, &opts, budget, secure, start)
                })
                .map_err(err)?;
            (run, cfg.loss, data.d)
        }
        (None, None) => {
            let mut cfg: TrainConfig = src.parse(seed)?;
            if let Some(s) = seed {
                cfg.seed = s;
            }
            cfg.reproducible |= reproducible;
            if let Some(path) = src.path() {
                // As `train --config FILE`: relative paths are read from the file's folder.
                cfg.resolve_against(path).map_err(err)?;
            }
            // As `train --config`: the CSV's split (its test part scored), [preprocess], and
            // the [privacy] budget checked and recorded before any work.
            let (run, d) = py
                .detach(|| -> dpsgd::Result<_> {
                    let d = config_data(&cfg)?.0.d;
                    Ok((train_config(&cfg, &opts, false, start)?, d))
                })
                .map_err(err)?;
            (run, cfg.loss, d)
        }
        _ => return Err(value_error("give both X and y, or neither")),
    };
    let out = to_py(py, &run)?;
    let o = &run.output;
    for (key, w) in [
        ("w_priv", &o.w_priv),
        ("w_last", &o.w_last),
        ("w_avg", &o.w_avg),
    ] {
        match model_shape(&loss, d, w.len()) {
            Some(shape) => {
                let a = Array2::from_shape_vec(shape, w.clone()).map_err(err)?;
                out.set_item(key, a.into_pyarray(py))?
            }
            None => out.set_item(key, w.clone().into_pyarray(py))?,
        }
    }
    Ok(out)
}
