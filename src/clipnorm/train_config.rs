//! The train config `clipnorm recommend` prints and writes (`--write-config FILE`): the data
//! (with the hash split it used), the recommended clip norm, DP-SGD's steps, batch size and step
//! size, the noise calibrated to what is left of the budget, the `[preprocess]` transform every
//! later stage used, and a `[privacy]` table naming the data set's ledger, so that `dpsgd-lab
//! train --config FILE` applies the same transform and spends only what the ledger has left
//! ([`crate::config::BudgetSpec`]).

use std::fmt::Write;

use super::recommend::ClipNormAdvice;
use crate::error::{Error, Result, check_positive};

/// A TOML array of floats, each as [`short`] writes it (Debug keeps a decimal point or
/// exponent, so every entry is a float; no float noise such as 0.07350000000000001).
fn toml_floats(v: &[f64]) -> String {
    let items: Vec<String> = v.iter().map(|&x| short(x)).collect();
    format!("[{}]", items.join(", "))
}

/// A TOML basic string (quotes and backslashes escaped).
fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The train config for `advice`, as TOML text that [`crate::config::TrainConfig`] reads as is.
/// DP-SGD's noise targets the share the plan left; the average iterate is the output (the best
/// of the three rules on the shipped data: `paper_refs/pipeline.md`); `[privacy]` names the
/// ledger that `train` checks and records its spend in.
pub fn train_config(advice: &ClipNormAdvice) -> Result<String> {
    let v = advice;
    check_positive("learning rate", v.learning_rate)?;
    let accountant = v.accountant_kind.as_str();
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
    if v.reproducible {
        writeln!(
            w,
            "# --reproducible: DP-SGD's batches and noise follow the seed: {}\nreproducible = true",
            crate::rng::NOT_PRIVATE
        )
        .map_err(e)?;
    }
    writeln!(w, "\n[data]\nsource = \"csv\"").map_err(e)?;
    writeln!(w, "path = {}", toml_string(&v.csv)).map_err(e)?;
    writeln!(w, "label = {}", toml_string(&v.label)).map_err(e)?;
    if let Some(sp) = &v.split {
        writeln!(
            w,
            "# each row's side is a hash of that row and the seed: adding or removing a row moves \
             no other row\nsplit = {{ test_fraction = {}, seed = {}, method = \"hash\" }}",
            crate::error::fmt_num(sp.test_fraction),
            sp.seed
        )
        .map_err(e)?;
    }
    writeln!(w, "standardize = false").map_err(e)?;
    writeln!(w, "\n[loss]\nfamily = \"logistic\"").map_err(e)?;
    writeln!(w, "\n[dpsgd]\nsteps = {}", v.steps).map_err(e)?;
    writeln!(w, "batch_size = {}", crate::error::fmt_num(v.batch_size)).map_err(e)?;
    writeln!(
        w,
        "# {}\nlearning_rate = {}",
        v.learning_rate_rule,
        short(v.learning_rate)
    )
    .map_err(e)?;
    writeln!(w, "clip_norm = {}", short(v.clip_norm)).map_err(e)?;
    // The target is rounded down to 6 significant digits, never up: the ledger must hold it.
    writeln!(
        w,
        "# z is calibrated by `train` to what the recommendation left (z = {:.4} here)\n\
         noise = {{ kind = \"target\", epsilon = {}, delta = {}, accountant = \"{accountant}\" }}",
        v.noise_multiplier,
        round_down(v.dpsgd_epsilon),
        round_down(v.dpsgd_delta)
    )
    .map_err(e)?;
    writeln!(w, "output = \"average_iterate\"").map_err(e)?;
    if let Some(p) = &v.preprocess {
        writeln!(
            w,
            "\n# {}: x -> (clamp(x, clamp_min, clamp_max) - center) / scale, the same for every row\n\
             [preprocess]\nsource = {}\ncenter = {}\nscale = {}",
            p.source,
            toml_string(&p.source),
            toml_floats(&p.center),
            toml_floats(&p.scale)
        )
        .map_err(e)?;
        if let (Some(lo), Some(hi)) = (&p.clamp_min, &p.clamp_max) {
            writeln!(
                w,
                "clamp_min = {}\nclamp_max = {}",
                toml_floats(lo),
                toml_floats(hi)
            )
            .map_err(e)?;
        }
    }
    if let Some(l) = &v.ledger {
        writeln!(
            w,
            "\n# One budget for the data: `train` checks DP-SGD's spend against the ledger and records it.\n\
             [privacy]\nledger = {}",
            toml_string(l)
        )
        .map_err(e)?;
    }
    Ok(t)
}

/// The shortest decimal that rounds to `x` at 12 significant digits (no float noise such as
/// 0.6499999999999999 in a file people read).
fn short(x: f64) -> String {
    let s = format!("{x:.11e}");
    let v: f64 = s.parse().unwrap_or(x);
    format!("{v:?}")
}

/// `x` rounded DOWN to 6 significant digits (a budget target must not grow by rounding): the
/// nearest 6-digit decimal where it does not exceed `x` (1.7 stays 1.7), else the one below.
fn round_down(x: f64) -> String {
    if !(x.is_finite() && x > 0.0) {
        return format!("{x:?}");
    }
    if let Ok(p) = format!("{x:.5e}").parse::<f64>()
        && p <= x
    {
        return format!("{p:?}");
    }
    let e = x.log10().floor() as i32 - 5;
    let scale = 10f64.powi(e);
    let mut v = (x / scale).floor() * scale;
    // (x / scale).floor() * scale can round up by an ulp: step down until it does not exceed x.
    while v > x {
        v = f64::from_bits(v.to_bits() - 1);
    }
    match format!("{v:.5e}").parse::<f64>() {
        Ok(p) if p <= x => format!("{p:?}"),
        _ => format!("{v:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::round_down;

    /// A budget target written into a config never exceeds the share it stands for.
    #[test]
    fn targets_round_down() {
        for x in [
            0.6499999999999999,
            1.65,
            3.65,
            0.123456789,
            5e-6,
            4.9999999e-6,
        ] {
            let v: f64 = round_down(x).parse().unwrap();
            assert!(v <= x && v >= x * (1.0 - 1e-5), "{x} -> {v}");
        }
    }
}
