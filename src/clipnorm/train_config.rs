//! The train config `clipnorm recommend` prints and writes (`--write-config FILE`): the data
//! (with the split it used), the recommended clip norm, DP-SGD's steps and batch size, the noise
//! calibrated to what is left of the budget, and a `[privacy]` table carrying the whole budget,
//! what the recommendation already spent, and the privately released standardization, so that
//! `dpsgd-lab train --config FILE` applies the same transform and reports one total
//! ([`crate::config::BudgetSpec`]).

use std::fmt::Write;

use super::recommend::ClipNormAdvice;
use crate::error::{Error, Result, check_positive};

/// The step size eta written into the config when none is given: the middle of the clip-norm
/// study's learning-rate grid {0.03, 0.3, 3} (a public choice; tuning it on the data would
/// spend budget).
pub const DEFAULT_LEARNING_RATE: f64 = 0.3;

/// A TOML array of floats (Debug keeps a decimal point or exponent, so every entry is a float).
fn toml_floats(v: &[f64]) -> String {
    let items: Vec<String> = v.iter().map(|x| format!("{x:?}")).collect();
    format!("[{}]", items.join(", "))
}

/// A TOML basic string (quotes and backslashes escaped).
fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The train config for `advice` with step size `learning_rate`, as TOML text that
/// [`crate::config::TrainConfig`] reads as is.
pub fn train_config(advice: &ClipNormAdvice, learning_rate: f64) -> Result<String> {
    let v = advice;
    check_positive("--learning-rate", learning_rate)?;
    let accountant = if v.accountant.contains("pld") {
        "pld"
    } else {
        "rdp"
    };
    let std_eps = v.standardization.as_ref().map_or(0.0, |s| s.epsilon);
    let std_delta = v.standardization.as_ref().map_or(0.0, |s| s.delta);
    let check_eps = v.range_check.as_ref().map_or(0.0, |c| c.epsilon);
    let spent_epsilon = std_eps + check_eps + v.rnmm_epsilon;
    let mut t = String::new();
    let w = &mut t;
    let e = |_| Error::param("cannot format the train config");
    writeln!(
        w,
        "# dpsgd-lab train config written by `clipnorm recommend` (seed {}).",
        v.seed
    )
    .map_err(e)?;
    if let Some(c) = v.norms_source.strip_prefix("column ") {
        writeln!(
            w,
            "# note: every column but the label is a feature here, the norms column '{c}' too: \
             drop it from the CSV before training"
        )
        .map_err(e)?;
    }
    writeln!(w, "seed = {}", v.seed).map_err(e)?;
    writeln!(w, "\n[data]\nsource = \"csv\"").map_err(e)?;
    writeln!(w, "path = {}", toml_string(&v.csv)).map_err(e)?;
    writeln!(w, "label = {}", toml_string(&v.label)).map_err(e)?;
    if let Some(sp) = &v.split {
        writeln!(
            w,
            "split = {{ test_fraction = {:?}, seed = {} }}",
            sp.test_fraction, sp.seed
        )
        .map_err(e)?;
    }
    writeln!(
        w,
        "# the non-private standardization stays off: [privacy] carries the released one\n\
         standardize = false"
    )
    .map_err(e)?;
    writeln!(w, "\n[loss]\nfamily = \"logistic\"").map_err(e)?;
    writeln!(w, "\n[dpsgd]\nsteps = {}", v.steps).map_err(e)?;
    writeln!(w, "batch_size = {:?}", v.batch_size).map_err(e)?;
    writeln!(w, "learning_rate = {learning_rate:?}").map_err(e)?;
    writeln!(w, "clip_norm = {:?}", v.clip_norm).map_err(e)?;
    writeln!(
        w,
        "# z is calibrated by `train` to what the recommendation left (z = {:.4} here)\n\
         noise = {{ kind = \"target\", epsilon = {:?}, delta = {:?}, accountant = \"{accountant}\" }}",
        v.noise_multiplier, v.dpsgd_epsilon, v.dpsgd_delta
    )
    .map_err(e)?;
    writeln!(w, "output = \"last_iterate\"").map_err(e)?;
    writeln!(
        w,
        "\n# One budget (basic composition): `train` refuses to spend more than epsilon, delta.\n\
         [privacy]\nepsilon = {:?}\ndelta = {:?}",
        v.epsilon, v.delta
    )
    .map_err(e)?;
    writeln!(
        w,
        "# spent by clipnorm recommend: standardization {std_eps:.4} + range check \
         {check_eps:.4} + RNMM {:.4}\nspent_epsilon = {spent_epsilon:?}\nspent_delta = {std_delta:?}",
        v.rnmm_epsilon
    )
    .map_err(e)?;
    if let Some(s) = &v.standardization {
        writeln!(
            w,
            "# the standardization recommend released ({}): x -> (x - mean) / scale\n\
             standardize_mean = {}\nstandardize_scale = {}",
            s.method,
            toml_floats(&s.mean),
            toml_floats(&s.scale)
        )
        .map_err(e)?;
    }
    Ok(t)
}
