//! `dpsgd-lab clipnorm recommend` (issue 16): works on the shipped CSVs and on a CSV given by
//! path, prints one JSON object as the last stdout line with --json, spends exactly epsilon
//! (RNMM's share plus DP-SGD's by the accountant), is reproducible by seed, and refuses bad
//! input with one `error:` line and exit code 2 (table-driven, as tests/bad_input.rs).

use std::path::Path;

use dpsgd_lab::clipnorm::recommend::logistic_lipschitz;
use dpsgd_lab::data::Dataset;
use dpsgd_lab::data::csv::CsvSpec;
use dpsgd_lab::data::split::Standardizer;
use dpsgd_lab::privacy::AccountantKind;
use dpsgd_lab::privacy::min_lipschitz::exact_probabilities;
use dpsgd_lab::privacy::standardize::epsilon_of_rho;
use dpsgd_lab::privacy::{RnmmConfig, private_min_lipschitz};
use dpsgd_lab::rng::{Purpose, ReleaseRng, stream};

use crate::common::{self, CliOutput, ROOT, assert_one_line_error, cli, one_line_error};

/// Runs `clipnorm recommend ARGS` from the repository root.
fn recommend(args: &[&str]) -> CliOutput {
    cli(["clipnorm", "recommend"].iter().chain(args))
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn shipped_csvs_get_a_recommendation_that_spends_exactly_epsilon() {
    for (csv, eps) in [
        // wine at epsilon 2 is refused by the range check: its private standardization (n = 178)
        // is mostly noise there (tests/it/recommend_budget.rs).
        ("data/wine.csv", 6.0),
        ("data/breast_cancer.csv", 4.0),
        ("data/digits.csv", 6.0),
    ] {
        let e = eps.to_string();
        let out = recommend(&[
            "--csv",
            csv,
            "--label",
            "target",
            "--epsilon",
            &e,
            "--standardize",
            "--json",
        ]);
        assert!(out.success(), "{csv}: {out:?}");
        assert!(
            out.stdout.contains("recommended clip norm: tau ="),
            "{}",
            out.stdout
        );
        let v = out.last_json();
        let tau = v["clip_norm"].as_f64().unwrap();
        let (lo, hi) = (
            v["candidates_lo"].as_f64().unwrap(),
            v["candidates_hi"].as_f64().unwrap(),
        );
        // The study's defaults: eps_RNMM = 0.3, candidates on [sqrt 2, 3 sqrt(2 (d + 1))].
        let d = v["d"].as_f64().unwrap();
        assert!((lo - 2f64.sqrt()).abs() < 1e-12);
        assert!((hi - 3.0 * (2.0 * (d + 1.0)).sqrt()).abs() < 1e-9);
        assert!(tau >= lo && tau <= hi);
        assert!((v["rnmm_epsilon"].as_f64().unwrap() - 0.3).abs() < 1e-12);
        // Default protocol: B = min(500, n/10), T = 30 round(n / B).
        let n = v["n"].as_f64().unwrap();
        let b = v["batch_size"].as_f64().unwrap();
        assert_eq!(b, (n as usize / 10).min(500) as f64);
        let steps = v["steps"].as_u64().unwrap() as usize;
        assert_eq!(steps, 30 * (n / b).round() as usize);
        // Standardization's (eps, delta) + RNMM's pure epsilon + DP-SGD's epsilon by the
        // accountant at the delta left = the budget (1e-6 rel.), and the printed total is it.
        let st = &v["standardization"];
        let (std_eps, std_delta) = (
            st["epsilon"].as_f64().unwrap(),
            st["delta"].as_f64().unwrap(),
        );
        // The default share: 10% of epsilon and of delta, and rho converts back to it.
        assert!(
            (std_eps - 0.1 * eps).abs() <= 1e-12 * eps,
            "{csv}: {std_eps}"
        );
        assert!((std_delta - 1e-6).abs() <= 1e-18, "{csv}: {std_delta}");
        let rho = st["rho"].as_f64().unwrap();
        assert!((epsilon_of_rho(rho, std_delta) / std_eps - 1.0).abs() <= 1e-9);
        let dpsgd_delta = v["dpsgd_delta"].as_f64().unwrap();
        assert!((std_delta + dpsgd_delta - 1e-5).abs() <= 1e-18);
        let z = v["noise_multiplier"].as_f64().unwrap();
        let spent = AccountantKind::Rdp
            .epsilon(b / n, steps, z, dpsgd_delta)
            .unwrap();
        let check = v["range_check"]["epsilon"].as_f64().unwrap();
        assert_eq!(check, 0.05, "{csv}: the default range check");
        // The stages' curves (rho-zCDP, the check's pure epsilon, RNMM's exponential mechanism)
        // and DP-SGD's composed in RDP meet the budget (bisection on z: 1e-5 rel.), never more;
        // their basic sum exceeds it (what the composition gained).
        use dpsgd_lab::privacy::ledger::{Guarantee, Release, compose};
        let rnmm = v["rnmm_epsilon"].as_f64().unwrap();
        let rel = |guarantee, epsilon, delta| Release {
            guarantee,
            epsilon,
            delta,
        };
        let c = compose(
            &[
                rel(Guarantee::Zcdp { rho }, f64::INFINITY, 0.0),
                rel(Guarantee::Pure { epsilon: check }, f64::INFINITY, 0.0),
                rel(
                    Guarantee::ExponentialMechanism { epsilon: rnmm },
                    f64::INFINITY,
                    0.0,
                ),
                rel(
                    Guarantee::SubsampledGaussian { q: b / n, z, steps },
                    f64::INFINITY,
                    0.0,
                ),
            ],
            1e-5,
        )
        .unwrap();
        assert!(
            c.rdp_epsilon <= eps * (1.0 + 1e-12) && c.rdp_epsilon > eps * (1.0 - 1e-5),
            "{csv}: {c:?} vs {eps}"
        );
        assert!(
            std_eps + check + rnmm + spent > eps,
            "{csv}: no gain over basic"
        );
        let total = v["total_epsilon"].as_f64().unwrap();
        assert!(
            (total - c.rdp_epsilon).abs() <= 1e-9 * eps,
            "{csv}: {total}"
        );
        assert!((v["total_delta"].as_f64().unwrap() - 1e-5).abs() <= 1e-18);
        assert!(
            out.stdout.contains("budget split: preprocessing"),
            "{}",
            out.stdout
        );
    }
}

#[test]
fn a_csv_by_path_with_norms_share_steps_and_batch_is_reproducible() {
    let dir = common::tmpdir("recommend-norms");
    // 100 rows: two features, a label and a column of per-sample norms 1..100 (fewer than 93
    // would be too small for the range check's eps 0.05).
    let mut text = String::from("a,b,target,gnorm\n");
    for i in 0..100 {
        text.push_str(&format!("{},{},{},{}\n", i % 7, i % 5, i % 2, i + 1));
    }
    let csv = write(&dir, "mine.csv", &text);
    let base = [
        "--csv",
        &csv,
        "--label",
        "target",
        "--epsilon",
        "3",
        "--share",
        "0.1",
        "--steps",
        "50",
        "--batch-size",
        "8",
        "--norms-column",
        "gnorm",
        "--lo",
        "0.5",
        "--hi",
        "100",
        "--seed",
        "7",
        // same seed, same answer: the research mode (the default draws from the OS)
        "--reproducible",
        "--json",
    ];
    let out = recommend(&base);
    assert!(out.success(), "{out:?}");
    let v = out.last_json();
    assert_eq!(v["norms_source"], "column gnorm");
    assert!((v["rnmm_epsilon"].as_f64().unwrap() - 0.3).abs() < 1e-12);
    // User norms are not standardized unless asked; the range check takes its 0.05.
    assert!(v["standardization"].is_null());
    assert!((v["basic_dpsgd_epsilon"].as_f64().unwrap() - 2.65).abs() < 1e-12);
    assert!(
        v["dpsgd_epsilon"].as_f64().unwrap() > 2.65,
        "composed in RDP: more than basic"
    );
    assert!((v["q"].as_f64().unwrap() - 0.08).abs() < 1e-15);
    let z = v["noise_multiplier"].as_f64().unwrap();
    let spent = AccountantKind::Rdp.epsilon(0.08, 50, z, 1e-5).unwrap();
    assert!(
        0.3 + 0.05 + spent > 3.0,
        "the composition leaves DP-SGD more than basic"
    );
    let total = v["total_epsilon"].as_f64().unwrap();
    assert!(total <= 3.0 && total > 3.0 * (1.0 - 1e-5), "{total}");
    // Same seed, same answer; the same norms from a file give the same answer.
    let again = recommend(&base);
    let no_ledger = |mut j: serde_json::Value| {
        j["ledger"] = serde_json::Value::Null;
        j["ledger_notes"] = serde_json::Value::Null;
        j
    };
    assert_eq!(no_ledger(again.last_json()), no_ledger(v.clone()));
    let norms: String = (1..=100).map(|i| format!("{i}\n")).collect();
    let file = write(&dir, "norms.txt", &format!("norm\n{norms}"));
    let mut args: Vec<&str> = base.to_vec();
    let k = args.iter().position(|a| *a == "--norms-column").unwrap();
    args[k] = "--norms";
    args[k + 1] = &file;
    let out = recommend(&args);
    assert!(out.success(), "{out:?}");
    let w = out.last_json();
    assert_eq!(w["clip_norm"], v["clip_norm"]);
    // With the norms 1..100, the minimum is 1: a generous budget selects near it.
    let out = recommend(&[
        "--csv",
        &csv,
        "--label",
        "target",
        "--epsilon",
        "200",
        "--share",
        "0.5",
        "--norms-column",
        "gnorm",
        "--lo",
        "0.5",
        "--hi",
        "100",
        "--json",
    ]);
    let tau = out.last_json()["clip_norm"].as_f64().unwrap();
    assert!((1.0..2.0).contains(&tau), "{tau}");
}

#[test]
fn bad_input_gets_one_error_line_and_exit_code_2() {
    let dir = common::tmpdir("recommend-rows");
    let csv = write(
        &dir,
        "ok.csv",
        "a,b,target,gnorm\n1,2,0,1\n2,1,1,2\n1,1,0,3\n",
    );
    let frac = write(&dir, "frac.csv", "a,b,target\n1,2,0.5\n2,1,1\n1,1,0\n");
    let short = write(&dir, "short.txt", "1\n2\n");
    let neg = write(&dir, "neg.txt", "1\n-2\n3\n");
    let word = write(&dir, "word.txt", "1\n2\nthree\n");
    let wine = "data/wine.csv";
    let with = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["--csv", &csv, "--label", "target"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let rows: Vec<(&str, Vec<String>, &str)> = vec![
        (
            "missing CSV",
            vec![
                "--csv".into(),
                "no/such.csv".into(),
                "--label".into(),
                "target".into(),
                "--epsilon".into(),
                "2".into(),
            ],
            "no/such.csv",
        ),
        (
            "unknown label",
            vec![
                "--csv".into(),
                wine.into(),
                "--label".into(),
                "klass".into(),
                "--epsilon".into(),
                "2".into(),
            ],
            "klass",
        ),
        ("epsilon 0", with(&["--epsilon", "0"]), "--epsilon"),
        ("epsilon NaN", with(&["--epsilon", "NaN"]), "--epsilon"),
        (
            "delta 1",
            with(&["--epsilon", "2", "--delta", "1"]),
            "--delta",
        ),
        (
            "share 1.5",
            with(&["--epsilon", "2", "--share", "1.5"]),
            "--share",
        ),
        (
            "budget below the default RNMM share",
            with(&["--epsilon", "0.2"]),
            "--share",
        ),
        (
            "loss huber",
            with(&["--epsilon", "2", "--loss", "huber"]),
            "--loss",
        ),
        (
            "batch above n",
            with(&["--epsilon", "2", "--batch-size", "10"]),
            "--batch-size",
        ),
        (
            "zero steps",
            with(&["--epsilon", "2", "--steps", "0", "--batch-size", "1"]),
            "--steps",
        ),
        (
            "grid of one",
            with(&["--epsilon", "2", "--grid-size", "1"]),
            "--grid-size",
        ),
        (
            "lo above hi",
            with(&["--epsilon", "2", "--lo", "5", "--hi", "2"]),
            "hi",
        ),
        (
            "unknown accountant",
            with(&["--epsilon", "2", "--accountant", "moments"]),
            "moments",
        ),
        (
            "labels not classes",
            vec![
                "--csv".into(),
                frac.clone(),
                "--label".into(),
                "target".into(),
                "--epsilon".into(),
                "2".into(),
            ],
            "label",
        ),
        (
            "norms column is the label",
            with(&[
                "--epsilon",
                "2",
                "--norms-column",
                "target",
                "--lo",
                "1",
                "--hi",
                "9",
            ]),
            "label column",
        ),
        (
            "norms column missing",
            with(&[
                "--epsilon",
                "2",
                "--norms-column",
                "gnrom",
                "--lo",
                "1",
                "--hi",
                "9",
            ]),
            "gnrom",
        ),
        (
            "norms without a range",
            with(&["--epsilon", "2", "--norms-column", "gnorm"]),
            "--lo and --hi",
        ),
        (
            "norms file too short",
            with(&[
                "--epsilon",
                "2",
                "--norms",
                &short,
                "--lo",
                "1",
                "--hi",
                "9",
            ]),
            "2 values",
        ),
        (
            "negative norm",
            with(&["--epsilon", "2", "--norms", &neg, "--lo", "1", "--hi", "9"]),
            ">= 0",
        ),
        (
            "non-numeric norm",
            with(&["--epsilon", "2", "--norms", &word, "--lo", "1", "--hi", "9"]),
            "not a number",
        ),
        (
            "both norm sources",
            with(&[
                "--epsilon",
                "2",
                "--norms",
                &short,
                "--norms-column",
                "gnorm",
            ]),
            "--norms",
        ),
    ];
    let mut failures = Vec::new();
    for (name, args, needle) in &rows {
        let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        if let Err(e) = one_line_error(&recommend(&a), needle) {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// data/wine.csv and wine.csv plus one row: `kind` "outlier" (every feature 1e4 times its largest
/// |value|, issue 33's neighbour) or a row at `center` (standardized to 0, G = sqrt 2 = lo).
fn wine_plus(kind: &str, center: &[f64]) -> (Dataset, Dataset) {
    let wine = CsvSpec::new(format!("{ROOT}/data/wine.csv"), "target")
        .load()
        .unwrap();
    let mut x = wine.x.clone();
    let mut y = wine.y.clone();
    for (j, &c) in center.iter().enumerate().take(wine.d) {
        let m = (0..wine.n)
            .map(|i| wine.row(i)[j].abs())
            .fold(0.0, f64::max);
        x.push(if kind == "outlier" {
            1e4 * m.max(1.0)
        } else {
            c
        });
    }
    y.push(0.0);
    let plus = Dataset::new(x, y, wine.d).unwrap();
    (wine, plus)
}

/// G_i of `data` standardized by `st`.
fn g_of(data: &Dataset, st: &Standardizer) -> Vec<f64> {
    let mut d = data.clone();
    st.apply(&mut d).unwrap();
    logistic_lipschitz(&d).unwrap()
}

fn g_pre(data: &Dataset, p: &dpsgd_lab::data::preprocess::Preprocess) -> Vec<f64> {
    let mut d = data.clone();
    p.apply(&mut d).unwrap();
    logistic_lipschitz(&d).unwrap()
}

/// max_j |ln P(j | D) - ln P(j | D')| of RNMM's exact selection probabilities
/// (`min_lipschitz::exact_probabilities`, P(j) ∝ exp(eps u_j / 2)).
fn max_log_ratio(g: &[f64], g2: &[f64], cfg: &RnmmConfig) -> f64 {
    let p = exact_probabilities(g, cfg).unwrap();
    let q = exact_probabilities(g2, cfg).unwrap();
    p.iter()
        .zip(&q)
        .map(|(a, b)| (a.ln() - b.ln()).abs())
        .fold(0.0, f64::max)
}

/// Issue 33's exact neighbouring-files test. `recommend --standardize` on wine.csv releases
/// (mean, scale); held fixed (post-processing: the same released theta for both files), RNMM's
/// exact selection probabilities on wine.csv and on wine.csv plus one row differ by at most the
/// printed eps_RNMM in log-ratio, for the outlier row and for a row at the center (where
/// the bound is nearly attained). The recommendation's own selection is reproduced from the
/// released theta (so recommend does run RNMM on data transformed by it, not by the data's own
/// statistics). The old per-dataset non-private standardization exceeds the budget (issue: 3.08
/// against 0.3); that is asserted too, documenting the leak this guards against.
#[test]
fn exact_rnmm_probabilities_on_neighbouring_files_respect_the_printed_epsilon() {
    let run = |seed: u64| {
        let sd = seed.to_string();
        let out = recommend(&[
            "--csv",
            "data/wine.csv",
            "--label",
            "target",
            "--epsilon",
            "2",
            "--standardize",
            "--seed",
            &sd,
            // This test is about RNMM's ratio under the released theta, which is mostly noise
            // at this budget: the range check would refuse it.
            "--check-epsilon",
            "0",
            // the selection is reproduced from the seed below: the research mode
            "--reproducible",
            "--json",
        ]);
        assert!(out.success(), "{out:?}");
        let v = out.last_json();
        // The released transform every later stage used (clamp, centre, scale, with the
        // fallback of noisy features to their bound's scale).
        let theta: dpsgd_lab::data::preprocess::Preprocess =
            serde_json::from_value(v["preprocess"].clone()).unwrap();
        let cfg = RnmmConfig {
            epsilon: v["rnmm_epsilon"].as_f64().unwrap(),
            lo: v["candidates_lo"].as_f64().unwrap(),
            hi: v["candidates_hi"].as_f64().unwrap(),
            grid_size: v["grid_size"].as_u64().unwrap() as usize,
            target_count: 1,
        };
        (theta, cfg, v["candidate_index"].as_u64().unwrap())
    };
    // The recommendation is RNMM on G_i under the released theta, each seed's stream (seeds
    // 0-4: on wine the non-private path picks a different candidate at seeds 1, 3, 4).
    for seed in 0..5 {
        let (theta, cfg, index) = run(seed);
        let (wine, _) = wine_plus("outlier", &theta.center);
        let g = g_pre(&wine, &theta);
        let sel = private_min_lipschitz(
            &g,
            &cfg,
            &mut ReleaseRng::Seeded(stream(seed, 0, Purpose::Mechanism)),
        )
        .unwrap();
        assert_eq!(sel.index as u64, index, "seed {seed}");
    }
    let (theta, cfg, _) = run(0);
    let eps = cfg.epsilon;
    for kind in ["outlier", "center"] {
        let (wine, plus) = wine_plus(kind, &theta.center);
        let r = max_log_ratio(&g_pre(&wine, &theta), &g_pre(&plus, &theta), &cfg);
        eprintln!("released theta, {kind} row: max |log-ratio| = {r:.4} (eps_RNMM {eps})");
        assert!(
            r <= eps * (1.0 + 1e-12),
            "{kind}: log-ratio {r} > eps_RNMM {eps}"
        );
    }
    // Any fixed theta gives the bound (the released one above is noisy at this budget, so most
    // G_i sit above the range): with wine's own statistics held fixed for both files, the
    // center row moves the low counts and the ratio comes close to eps_RNMM.
    let fixed = Standardizer::fit(&wine_plus("outlier", &theta.center).0);
    for kind in ["outlier", "center"] {
        let (wine, plus) = wine_plus(kind, &fixed.mean);
        let r = max_log_ratio(&g_of(&wine, &fixed), &g_of(&plus, &fixed), &cfg);
        eprintln!("fixed theta = wine's statistics, {kind} row: max |log-ratio| = {r:.4}");
        assert!(
            r <= eps * (1.0 + 1e-12),
            "{kind}: log-ratio {r} > eps_RNMM {eps}"
        );
        if kind == "center" {
            assert!(
                r >= 0.5 * eps,
                "the center row should nearly attain the bound: {r}"
            );
        }
    }
    // The old path: each file standardized with its own non-private statistics.
    let (wine, plus) = wine_plus("outlier", &theta.center);
    let old = max_log_ratio(
        &g_of(&wine, &Standardizer::fit(&wine)),
        &g_of(&plus, &Standardizer::fit(&plus)),
        &cfg,
    );
    eprintln!("old non-private standardization, outlier row: max |log-ratio| = {old:.4}");
    assert!(
        old > eps,
        "the old path's log-ratio {old} should exceed {eps}"
    );
}

/// --public-scales costs nothing (the whole budget goes to RNMM and DP-SGD) and the file is
/// checked; --std-share moves the split.
#[test]
fn public_scales_cost_nothing_and_std_share_moves_the_split() {
    let dir = common::tmpdir("recommend-scales");
    let mut text = String::from("mean,scale\n");
    for _ in 0..13 {
        text.push_str("0,1\n");
    }
    let f = write(&dir, "scales.csv", &text);
    let base = [
        "--csv",
        "data/wine.csv",
        "--label",
        "target",
        "--epsilon",
        "2",
        "--standardize",
        // Scales (0, 1) leave the features raw, which the range check refuses; the budget split
        // is this test's subject.
        "--check-epsilon",
        "0",
        "--json",
    ];
    let out = recommend(&[&base[..], &["--public-scales", &f]].concat());
    assert!(out.success(), "{out:?}");
    let v = out.last_json();
    assert_eq!(v["standardization"]["epsilon"].as_f64(), Some(0.0));
    assert!((v["basic_dpsgd_epsilon"].as_f64().unwrap() - 1.7).abs() < 1e-12);
    assert!(
        v["dpsgd_epsilon"].as_f64().unwrap() > 1.7,
        "composed in RDP: more than basic"
    );
    let out = recommend(&[&base[..], &["--std-share", "0.25"]].concat());
    assert!(out.success(), "{out:?}");
    let v = out.last_json();
    assert!((v["standardization"]["epsilon"].as_f64().unwrap() - 0.5).abs() < 1e-12);
    assert!((v["basic_dpsgd_epsilon"].as_f64().unwrap() - 1.2).abs() < 1e-12);
    let total = v["total_epsilon"].as_f64().unwrap();
    assert!(total <= 2.0 && total > 2.0 * (1.0 - 1e-5), "{total}");
    let bad = write(&dir, "bad.csv", "0,1\n0,1\n");
    let out = recommend(&[&base[..], &["--public-scales", &bad]].concat());
    assert_one_line_error(&out, "has 2 'mean,scale' lines but the data have d = 13");
}
