//! End-to-end checks of `dpsgd-lab theory`: the CLI reproduces the library's prescriptions,
//! prints one JSON object on the last line with --json, and exits 2 on bad parameters.

use dpsgd_lab::theory::phi::{PhiInputs, phi};
use dpsgd_lab::theory::schedules::{TheoremId, TheoryParams, prescribe};

use crate::common::{CliOutput, assert_one_line_error, cli};

/// Runs `dpsgd-lab theory ARGS`.
fn run(args: &[&str]) -> CliOutput {
    cli(std::iter::once("theory").chain(args.iter().copied()))
}

#[test]
fn cli_schedule_j1_matches_library() {
    let out = run(&[
        "schedule",
        "--theorem",
        "J.1",
        "--k",
        "3",
        "--G",
        "1",
        "--phi",
        "0.01",
        "--gamma",
        "0.5",
        "--C",
        "1",
        "--dist0",
        "1",
        "--json",
    ]);
    assert!(out.success(), "{out:?}");
    let v = out.last_json();
    let p = prescribe(
        TheoremId::J1,
        0.01,
        &TheoryParams {
            k: Some(3.0),
            g: Some(1.0),
            gamma: Some(0.5),
            c: Some(1.0),
            dist0: Some(1.0),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(v["steps"], 10_000);
    assert_eq!(v["tau"].as_f64().unwrap(), p.tau.unwrap());
    assert_eq!(v["eta"].as_f64().unwrap(), p.eta.unwrap());
    assert_eq!(v["bound"].as_f64().unwrap(), p.bound.unwrap());
    assert_eq!(v["phi_exponent"].as_f64().unwrap(), 0.5);
    assert_eq!(v["probability"].as_f64().unwrap(), 0.5);
}

#[test]
fn cli_schedule_from_privacy_parameters_and_k_infinity() {
    let out = run(&[
        "schedule",
        "--theorem",
        "6.2",
        "--k",
        "inf",
        "--G",
        "2",
        "--gamma",
        "0.1",
        "--C",
        "1",
        "--dist0",
        "0",
        "--n",
        "50000",
        "--d",
        "20",
        "--eps",
        "1",
        "--delta",
        "1e-6",
        "--nu",
        "1",
        "--json",
    ]);
    assert!(out.success(), "{out:?}");
    let v = out.last_json();
    let want = phi(&PhiInputs {
        n: 50000.0,
        d: 20.0,
        epsilon: 1.0,
        delta: 1e-6,
        nu: 1.0,
    })
    .unwrap();
    assert_eq!(v["phi"].as_f64().unwrap(), want);
    assert_eq!(v["k"], "inf");
    assert_eq!(v["phi_exponent"].as_f64().unwrap(), 1.0);
    // Corollary 6.7: tau = G at k = inf.
    assert_eq!(v["tau"].as_f64().unwrap(), 2.0);
}

/// Every missing input of a theorem in one error line, by flag (the library names them as the
/// paper does; the CLI turns the names into flags).
#[test]
fn cli_names_every_missing_input_by_its_flag_at_once() {
    let out = run(&["schedule", "--theorem", "J.1", "--phi", "0.01"]);
    assert_one_line_error(&out, "Thm J.1 needs --");
    let flags: Vec<&str> = out
        .stderr
        .split(" needs ")
        .nth(1)
        .and_then(|s| s.split(", which").next())
        .unwrap_or_default()
        .split(' ')
        .collect();
    for f in ["--k", "--G", "--gamma", "--C"] {
        assert!(flags.contains(&f), "{f} missing from {}", out.stderr);
    }
    let one = run(&[
        "schedule",
        "--theorem",
        "I.1",
        "--k",
        "3",
        "--G",
        "1",
        "--gamma",
        "0.5",
        "--phi",
        "0.01",
    ]);
    assert_one_line_error(&one, "Thm I.1 needs --D-W, which was not given");
}

#[test]
fn cli_errors_are_one_line_and_exit_2() {
    for args in [
        &[
            "schedule",
            "--theorem",
            "J.1",
            "--k",
            "1",
            "--G",
            "1",
            "--phi",
            "0.01",
            "--gamma",
            "0.5",
            "--C",
            "1",
        ][..],
        &[
            "schedule",
            "--theorem",
            "J.1",
            "--k",
            "3",
            "--G",
            "1",
            "--phi",
            "1.5",
            "--gamma",
            "0.5",
            "--C",
            "1",
        ][..],
        &["schedule", "--theorem", "Z.9", "--phi", "0.1"][..],
        &[
            "schedule",
            "--theorem",
            "I.1",
            "--k",
            "3",
            "--G",
            "1",
            "--phi",
            "0.01",
            "--gamma",
            "2",
            "--D-W",
            "1",
        ][..],
    ] {
        assert_one_line_error(&run(args), "");
    }
}

#[test]
fn cli_phi_inverse() {
    let out = run(&[
        "phi", "--phi", "0.001", "--n", "10000", "--d", "10", "--delta", "1e-5", "--nu", "1",
        "--json",
    ]);
    assert!(out.success(), "{out:?}");
    let v = out.last_json();
    let eps = v["epsilon"].as_f64().unwrap();
    let back = phi(&PhiInputs {
        n: 10000.0,
        d: 10.0,
        epsilon: eps,
        delta: 1e-5,
        nu: 1.0,
    })
    .unwrap();
    assert!((back - 0.001).abs() < 1e-15);
}

#[test]
fn cli_alpha_upper_estimates_respect_definition_5_3() {
    let path = crate::common::tmpdir("alpha").join("alpha.toml");
    std::fs::write(
        &path,
        r#"seed = 7
[data]
source = "generated"
n = 60
d = 4
labels = { kind = "multinomial", classes = 3, separable = true }
[loss]
family = "logistic"
[dpsgd]
steps = 10
batch_size = 10
learning_rate = 0.5
clip_norm = 1.0
noise = { kind = "theorem34", nu = 1.0, epsilon = 2.0, delta = 1e-5 }
output = "random_iterate"
"#,
    )
    .unwrap();
    let out = run(&[
        "alpha",
        "--config",
        path.to_str().unwrap(),
        "--tau",
        "0.5",
        "1.0",
        "--starts",
        "3",
        "--iters",
        "20",
        "--json",
    ]);
    std::fs::remove_file(&path).ok();
    assert!(out.success(), "{out:?}");
    let v = out.last_json();
    let est = v["estimates"].as_array().unwrap();
    assert_eq!(est.len(), 2);
    for e in est {
        assert!(e["kind"].as_str().unwrap().starts_with("upper estimate"));
        // Definition 5.3 (i): every ratio is >= 1, so the estimate is too.
        assert!(e["value"].as_f64().unwrap() >= 1.0 - 1e-12);
    }
    // Shared points make the estimates non-increasing in tau, as alpha is (Definition 5.3
    // (ii)): est(tau2) <= R_tau2(w1) <= R_tau1(w1) = est(tau1), w1 the point of est(tau1).
    assert!(est[1]["value"].as_f64().unwrap() <= est[0]["value"].as_f64().unwrap() + 1e-12);
}

#[test]
fn cli_dpsgd_toml_round_trips_into_a_config() {
    let out = run(&[
        "schedule",
        "--theorem",
        "J.1",
        "--k",
        "3",
        "--G",
        "1",
        "--gamma",
        "0.5",
        "--C",
        "1",
        "--n",
        "20000",
        "--d",
        "5",
        "--eps",
        "2",
        "--delta",
        "1e-5",
        "--nu",
        "1",
        "--dpsgd-toml",
        "64",
    ]);
    assert!(out.success(), "{out:?}");
    let toml_text: String = out
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("[dpsgd]"))
        .collect::<Vec<_>>()
        .join("\n");
    #[derive(serde::Deserialize)]
    struct Wrap {
        dpsgd: dpsgd_lab::dpsgd::DpSgdConfig,
    }
    let w: Wrap = toml::from_str(&toml_text).expect("emitted table parses");
    let p = prescribe(
        TheoremId::J1,
        phi(&PhiInputs {
            n: 20000.0,
            d: 5.0,
            epsilon: 2.0,
            delta: 1e-5,
            nu: 1.0,
        })
        .unwrap(),
        &TheoryParams {
            k: Some(3.0),
            g: Some(1.0),
            gamma: Some(0.5),
            c: Some(1.0),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(w.dpsgd.steps as u64, p.steps.unwrap());
    assert_eq!(
        w.dpsgd.clip_norm,
        dpsgd_lab::dpsgd::StepSchedule::Constant(p.tau.unwrap())
    );
}
