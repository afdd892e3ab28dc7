//! The `dpsgd-lab` binary: the shipped example runs and prints its JSON summary, and each bad
//! input gives one clear error line naming the bad value and exit code 2, never a panic.

use std::path::{Path, PathBuf};

use crate::common::{CliOutput, assert_one_line_error, cli};

fn tmpdir(name: &str) -> PathBuf {
    crate::common::tmpdir(&format!("cli-{name}"))
}

/// A small CSV with a header, features f0, f1 and a 0/1 label.
fn write_csv(dir: &Path, body: Option<&str>) -> PathBuf {
    let path = dir.join("data.csv");
    let default: String = (0..40)
        .map(|i| {
            format!(
                "{},{},{}\n",
                (i as f64 * 0.37).sin(),
                (i as f64 * 0.11).cos(),
                i % 2
            )
        })
        .collect();
    std::fs::write(&path, format!("f0,f1,label\n{}", body.unwrap_or(&default))).unwrap();
    path
}

const DPSGD_OK: &str = r#"
[loss]
family = "logistic"

[dpsgd]
steps = 20
batch_size = 10
learning_rate = 0.5
clip_norm = 1.0
noise = { kind = "theorem34", nu = 1.0, epsilon = 2.0, delta = 1e-5 }
"#;

fn config(dir: &Path, csv: &Path, rest: &str) -> PathBuf {
    let path = dir.join("run.toml");
    let text = format!(
        "seed = 1\n[data]\nsource = \"csv\"\npath = \"{}\"\nlabel = \"label\"\n{rest}",
        csv.display()
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `train --config CFG --json`.
fn train(cfg: &Path) -> CliOutput {
    cli(["train", "--config", cfg.to_str().unwrap(), "--json"])
}

fn expect_error(name: &str, rest: &str, csv_body: Option<&str>, needles: &[&str]) {
    let dir = tmpdir(name);
    let csv = write_csv(&dir, csv_body);
    let cfg = config(&dir, &csv, rest);
    let out = train(&cfg);
    for n in needles {
        if let Err(e) = crate::common::one_line_error(&out, n) {
            panic!("{name}: {e}");
        }
    }
}

#[test]
fn example_config_prints_a_json_summary() {
    let out = train(&PathBuf::from("simulations/example.toml"));
    assert!(out.success(), "{out:?}");
    let v = out.last_json();
    let last = out.stdout.trim_end().lines().last().unwrap();
    for key in [
        "f_w_priv",
        "f_w_last",
        "steps",
        "mean_batch",
        "sigma_n",
        "clipped_fraction",
        "wall_time_s",
    ] {
        assert!(v.get(key).is_some(), "summary lacks {key}: {last}");
    }
    assert!(v["f_w_priv"].as_f64().unwrap() < v["f_w0"].as_f64().unwrap());
}

#[test]
fn a_valid_csv_run_succeeds() {
    let dir = tmpdir("ok");
    let csv = write_csv(&dir, None);
    let out = train(&config(&dir, &csv, DPSGD_OK));
    assert!(out.success(), "{out:?}");
    assert!(out.stdout.contains("\"steps\":20"));
}

#[test]
fn epsilon_not_positive() {
    expect_error(
        "eps",
        &DPSGD_OK.replace("epsilon = 2.0", "epsilon = -1.0"),
        None,
        &["epsilon", "-1"],
    );
}

#[test]
fn delta_outside_unit_interval() {
    expect_error(
        "delta",
        &DPSGD_OK.replace("delta = 1e-5", "delta = 1.0"),
        None,
        &["delta must lie in (0, 1), but is 1"],
    );
}

#[test]
fn tau_not_positive() {
    expect_error(
        "tau",
        &DPSGD_OK.replace("clip_norm = 1.0", "clip_norm = 0.0"),
        None,
        &["clip_norm tau must be positive and finite, but is 0"],
    );
}

#[test]
fn batch_larger_than_n() {
    expect_error(
        "b",
        &DPSGD_OK.replace("batch_size = 10", "batch_size = 41"),
        None,
        &["batch_size b = 41", "n = 40"],
    );
}

#[test]
fn nu_not_positive() {
    expect_error(
        "nu",
        &DPSGD_OK.replace("nu = 1.0", "nu = 0.0"),
        None,
        &["nu", "0"],
    );
}

#[test]
fn unknown_toml_key() {
    expect_error(
        "unknown",
        &DPSGD_OK.replace("steps = 20", "steps = 20\nstpes = 3"),
        None,
        &["unknown field", "stpes", "run.toml:"],
    );
}

#[test]
fn missing_toml_key() {
    expect_error(
        "missing",
        &DPSGD_OK.replace("steps = 20\n", ""),
        None,
        &["missing field", "steps"],
    );
}

#[test]
fn nan_in_data() {
    expect_error(
        "nan",
        DPSGD_OK,
        Some("0.1,0.2,0\nNaN,0.3,1\n"),
        &["data.csv:3", "f0", "NaN"],
    );
}

#[test]
fn ragged_row() {
    expect_error(
        "ragged",
        DPSGD_OK,
        Some("0.1,0.2,0\n0.3,1\n"),
        &["data.csv:3", "ragged"],
    );
}

#[test]
fn dimension_mismatch_of_the_initial_point() {
    let rest = format!("{DPSGD_OK}init = {{ kind = \"point\", w = [0.0, 1.0] }}\n");
    expect_error(
        "dim",
        &rest,
        None,
        &["dimension mismatch", "2 coordinates", "6 parameters"],
    );
}

#[test]
fn labels_outside_the_classes() {
    let rest = DPSGD_OK.replace(
        "family = \"logistic\"",
        "family = \"logistic\"\nclasses = 2",
    );
    expect_error(
        "labels",
        &rest,
        Some("0.1,0.2,0\n0.3,0.5,2\n"),
        &["label of sample 1", "0..2"],
    );
}

#[test]
fn missing_config_file() {
    let out = cli(["train", "--config", "/nonexistent/run.toml"]);
    assert_one_line_error(&out, "/nonexistent/run.toml");
}

/// Noise calibrated to a target (epsilon, delta) by the RDP accountant: the run reports the
/// epsilon it spent (at most the target; calibration stops within 1e-6 relative of the smallest
/// z, so it sits just below), its noise multiplier and nu_eff.
#[test]
fn target_epsilon_run_reports_privacy_spent() {
    let dir = tmpdir("target");
    let csv = write_csv(&dir, None);
    let rest = DPSGD_OK.replace(
        "noise = { kind = \"theorem34\", nu = 1.0, epsilon = 2.0, delta = 1e-5 }",
        "noise = { kind = \"target\", epsilon = 1.5, delta = 1e-5, accountant = \"rdp\" }",
    );
    let out = train(&config(&dir, &csv, &rest));
    assert!(out.success(), "{out:?}");
    let v = out.last_json();
    let p = &v["privacy"];
    let eps = p["epsilon_spent"].as_f64().unwrap();
    assert!(
        eps <= 1.5 && eps > 1.5 * (1.0 - 1e-3),
        "epsilon spent {eps}"
    );
    assert_eq!(p["accountant"], "rdp");
    assert!(p["noise_multiplier"].as_f64().unwrap() > 0.0);
    // nu_eff = (z eps / (q sqrt(T log(1/delta))))^2 with q = 10/40, T = 20
    let z = p["noise_multiplier"].as_f64().unwrap();
    let want = (z * eps / (0.25 * (20.0 * (1e5f64).ln()).sqrt())).powi(2);
    assert!((p["nu_eff"].as_f64().unwrap() - want).abs() < 1e-9 * want);
}

#[test]
fn unknown_accountant_is_named() {
    let rest = DPSGD_OK.replace(
        "noise = { kind = \"theorem34\", nu = 1.0, epsilon = 2.0, delta = 1e-5 }",
        "noise = { kind = \"target\", epsilon = 1.5, delta = 1e-5, accountant = \"moments\" }",
    );
    expect_error("accountant", &rest, None, &["moments"]);
}
