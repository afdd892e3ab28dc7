//! Issue users-2: a clip-norm recommendation that cannot silently fail, and one budget for
//! "pick a clip norm, then train". Raw features (every G_i >= 346.8 on breast_cancer.csv against
//! candidates [1.41, 23.6]) are refused in one line that names the fix, after a private range
//! check whose epsilon is in the total; `recommend --write-config` then `train` on that config
//! spends at most the epsilon given once, and train scores the held-out test part.

use dpsgd_lab::data::Dataset;
use dpsgd_lab::loss::LossSpec;
use dpsgd_lab::train::{accuracy, predict};

use crate::common::{self, CliOutput, assert_one_line_error, cli};

fn recommend(args: &[&str]) -> CliOutput {
    cli([
        "clipnorm",
        "recommend",
        "--csv",
        "data/breast_cancer.csv",
        "--label",
        "target",
    ]
    .iter()
    .chain(args))
}

/// The number after `key` in `line` (up to the next space, comma or parenthesis).
fn number_after(line: &str, key: &str) -> f64 {
    let rest = &line[line
        .find(key)
        .unwrap_or_else(|| panic!("no {key:?} in {line}"))
        + key.len()..];
    let end = rest.find([' ', ',', '(', ')']).unwrap_or(rest.len());
    rest[..end]
        .parse()
        .unwrap_or_else(|e| panic!("{key:?} in {line}: {e}"))
}

/// Raw features with the default range: refused in one line that says what to do (seed 0; the
/// noisy count is about 569 against the threshold n / 2 = 284.5, the Laplace noise's scale is
/// 1 / 0.05 = 20). The default private standardization no longer refuses: a feature whose
/// released variance is mostly noise falls back to its bound's scale, and the output says which.
/// A refusal names only options the user has not given (planted: suggesting --feature-bounds
/// to a user who passed it).
#[test]
fn raw_features_are_refused_in_one_line_and_standardized_are_not() {
    let raw = recommend(&["--epsilon", "2", "--no-standardize", "--seed", "0"]);
    assert_one_line_error(&raw, "misses the data");
    assert!(
        raw.stderr.contains("[1.4142, 23.6220]") && raw.stderr.contains("drop --no-standardize"),
        "{raw:?}"
    );
    let ok = recommend(&["--epsilon", "2", "--seed", "0", "--json"]);
    assert!(ok.success(), "{ok:?}");
    assert!(
        ok.stdout.contains("use their bound's scale instead"),
        "{}",
        ok.stdout
    );
    let v = ok.last_json();
    // The stages and DP-SGD composed meet the total (bisection on z: 1e-5 relative), never more.
    let total = v["total_epsilon"].as_f64().unwrap();
    assert!(total <= 2.0 && total > 2.0 * (1.0 - 1e-5), "{total}");
    // A range that misses, with public bounds given: the fix must not ask for them again.
    let dir = common::tmpdir("recommend-hint");
    let bounds = dir.join("bounds.txt");
    std::fs::write(&bounds, "1e-4\n".repeat(30)).unwrap();
    let b = bounds.display().to_string();
    let refused = recommend(&[
        "--epsilon",
        "2",
        "--feature-bounds",
        &b,
        "--lo",
        "50",
        "--hi",
        "60",
    ]);
    assert_one_line_error(&refused, "misses the data");
    assert!(
        !refused.stderr.contains("give --feature-bounds"),
        "{}",
        refused.stderr
    );
}

/// Significant digits of a decimal number as written ("0.0735" 3, "1.4925e-3" 5, "45" 2).
fn significant_digits(token: &str) -> usize {
    let mantissa = token.split(['e', 'E']).next().unwrap_or("");
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    digits.trim_start_matches('0').trim_end_matches('0').len()
}

/// No number in a written config carries float noise (0.07350000000000001, 10.564499999999999:
/// 16-17 significant digits, where the value has at most 12 that mean anything): every value
/// outside comments and strings has at most 12 significant digits.
fn assert_no_float_noise(config: &str) {
    for line in config.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let Some((_, value)) = line.split_once(" = ") else {
            continue;
        };
        for token in value.split([',', '[', ']', '{', '}', ' ', '=']) {
            if token.parse::<f64>().is_ok() && token.chars().any(|c| c.is_ascii_digit()) {
                assert!(
                    significant_digits(token) <= 12,
                    "float noise {token:?} in the written config line {line:?}"
                );
            }
        }
    }
}

/// Epsilon 2 given once, with the data set's ledger: recommend (RNMM 0.3 with public ranges: no
/// range check is needed) writes a config, train calibrates DP-SGD to the 1.7 left, records it
/// and prints the ledger's total, at most 2 (delta at most 1e-5). The test part (hash split,
/// seed 0) is used by neither mechanism and is scored. A second train, a second recommend and
/// a config asking DP-SGD for more than is left are all refused, and spend nothing.
#[test]
fn recommend_then_train_never_exceeds_the_budget_given_once() {
    let dir = common::tmpdir("recommend-budget");
    let cfg = dir.join("train.toml").display().to_string();
    let ledger = dir.join("ledger.jsonl").display().to_string();
    let args = [
        "--epsilon",
        "2",
        "--feature-ranges",
        "data/breast_cancer.ranges.csv",
        "--test-fraction",
        "0.2",
        "--epochs",
        "30",
        "--seed",
        "0",
        "--ledger",
        &ledger,
        "--write-config",
        &cfg,
    ];
    let out = recommend(&args);
    assert!(out.success(), "{out:?}");
    assert!(
        out.stdout.contains("range check: not run"),
        "{}",
        out.stdout
    );
    let written = std::fs::read_to_string(&cfg).unwrap();
    assert!(
        out.stdout.contains(&written),
        "the printed config is the written one"
    );
    assert_no_float_noise(&written);
    assert!(written.contains("\nbatch_size = 45\n"), "{written}");
    // RNMM's exponential mechanism (0.3) and DP-SGD composed in RDP leave DP-SGD the noise of
    // more than the 1.7 basic composition would (dp_accounting: 1.885 at this total).
    let target = number_after(
        written.lines().find(|l| l.starts_with("noise = ")).unwrap(),
        "epsilon = ",
    );
    assert!(target > 1.85 && target < 2.0, "{written}");
    let n_test = out
        .stdout
        .lines()
        .find(|l| l.contains("n_test = "))
        .map(|l| number_after(l, "n_test = "))
        .unwrap();
    let over = written.replace(
        written.lines().find(|l| l.starts_with("noise = ")).unwrap(),
        r#"noise = { kind = "target", epsilon = 1.95, delta = 1e-5, accountant = "rdp" }"#,
    );
    let over_path = dir.join("over.toml");
    std::fs::write(&over_path, over).unwrap();
    let refused = cli(["train", "--config", over_path.to_str().unwrap()]);
    assert_one_line_error(&refused, "has only epsilon 1.7 and delta");
    let run = cli(["train", "--config", &cfg, "--json"]);
    assert!(run.success(), "{run:?}");
    let json = run.last_json();
    let b = &json["budget"];
    let eps = b["total_epsilon"].as_f64().unwrap();
    assert!(eps <= 2.0 * (1.0 + 1e-12) && eps > 1.99, "{b}");
    assert!(
        b["total_delta"].as_f64().unwrap() <= 1e-5 * (1.0 + 1e-12),
        "{b}"
    );
    assert_eq!(b["spent_before_epsilon"].as_f64(), Some(0.3), "{b}");
    assert_eq!(json["output_rule"], "average_iterate");
    assert_eq!(json["accuracy"]["n_test"].as_f64(), Some(n_test));
    // Reruns spend again, so the ledger refuses them: train with another seed, and recommend.
    let again = cli(["train", "--config", &cfg, "--seed", "1"]);
    assert_one_line_error(&again, "privacy ledger");
    let again = recommend(&args);
    assert_one_line_error(&again, "has only epsilon");
    let l = dpsgd_lab::privacy::ledger::Ledger::open(std::path::Path::new(&ledger)).unwrap();
    assert_eq!(l.spends().len(), 2, "{:?}", l.spends());
    assert!(l.spent().0 <= 2.0 * (1.0 + 1e-12));
}

/// P1: a --check-epsilon above the total is refused before any mechanism runs (nothing is
/// recorded in the ledger, nothing is printed but the error); so is one that leaves DP-SGD
/// nothing.
#[test]
fn an_over_budget_check_epsilon_is_refused_before_any_mechanism() {
    for (check, std_share) in [("50", "0.1"), ("1e308", "0.1"), ("1.5", "0.2")] {
        let dir = common::tmpdir(&format!("check-eps-{check}"));
        let ledger = dir.join("l.jsonl");
        let out = recommend(&[
            "--epsilon",
            "2",
            "--check-epsilon",
            check,
            "--std-share",
            std_share,
            "--ledger",
            ledger.to_str().unwrap(),
        ]);
        assert_one_line_error(&out, "leaves");
        assert!(out.stdout.is_empty(), "{}", out.stdout);
        assert!(!ledger.exists(), "nothing may be recorded: {check}");
    }
}

/// P4: a refused recommendation has spent what ran before the refusal, and the ledger says so.
#[test]
fn a_refused_recommendation_is_recorded() {
    let dir = common::tmpdir("refused-recorded");
    let ledger = dir.join("l.jsonl");
    let out = recommend(&[
        "--epsilon",
        "2",
        "--no-standardize",
        "--ledger",
        ledger.to_str().unwrap(),
    ]);
    assert_one_line_error(&out, "misses the data");
    let l = dpsgd_lab::privacy::ledger::Ledger::open(&ledger).unwrap();
    assert_eq!(l.spends().len(), 1);
    assert_eq!(l.spent().0, 0.05);
}

/// The example asks for epsilon 2 and spends it (target noise, RDP), not 6.17 (Thm 3.4, nu = 1).
#[test]
fn the_example_config_spends_the_epsilon_it_asks_for() {
    let out = cli(["train", "--config", "simulations/example.toml", "--json"]);
    assert!(out.success(), "{out:?}");
    let v = out.last_json();
    let eps = v["privacy"]["epsilon_spent"].as_f64().unwrap();
    assert!(eps <= 2.0 && eps > 2.0 * (1.0 - 1e-3), "{eps}");
    assert_eq!(v["privacy"]["accountant"], "rdp");
    assert!(v["accuracy"]["train"].as_f64().is_some(), "{v}");
}

/// predict reads the documented layouts: softmax W in R^{m x (d+1)} row-major (bias last), and
/// tanh_net W1 (h x (d+1)) then W2 (m x (h+1)); accuracy counts the matches; a length that fits
/// no layout and a loss that does not classify are errors.
#[test]
fn predict_and_accuracy_read_the_documented_weight_layout() {
    let logistic = LossSpec::Logistic { classes: None };
    // d = 2, m = 3: class 0 scores x0, class 1 scores x1, class 2 scores the bias 0.5.
    let w = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.5];
    let x = [2.0, 0.0, 0.0, 2.0, 0.1, 0.1];
    assert_eq!(predict(&logistic, &w, &x, 2).unwrap(), vec![0, 1, 2]);
    let data = Dataset::new(x.to_vec(), vec![0.0, 1.0, 1.0], 2).unwrap();
    assert!((accuracy(&logistic, &w, &data).unwrap() - 2.0 / 3.0).abs() < 1e-15);
    let e = predict(&logistic, &w[..8], &x, 2).unwrap_err().to_string();
    assert!(e.contains("w has 8 entries"), "{e}");
    // tanh_net, d = 1, h = 1, m = 2: hidden a = tanh(x); class 1 scores a, class 0 scores 0.
    let net = LossSpec::TanhNet {
        hidden: 1,
        classes: None,
        radius: None,
    };
    let w = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0];
    assert_eq!(predict(&net, &w, &[1.0, -1.0], 1).unwrap(), vec![1, 0]);
    let e = predict(&LossSpec::Robust, &[0.0; 3], &[1.0, 2.0], 2)
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not classify"), "{e}");
}

/// The library's recommendation on data in memory (what the Python bindings call) is the CSV's,
/// split and all: the same training rows, random streams, range check and budget split; per-row
/// norms in memory equal the same norms read from a file.
#[test]
fn recommend_on_memory_data_equals_the_csv() {
    use dpsgd_lab::clipnorm::recommend::{AdviceData, AdviceRequest, NormsSource, recommend};
    let path = "data/breast_cancer.csv";
    let all = dpsgd_lab::data::csv::CsvSpec::new(path, "target")
        .read()
        .unwrap();
    let csv = || AdviceData::Csv {
        path: path.into(),
        label: "target".into(),
    };
    let memory = || AdviceData::Memory {
        data: all.clone(),
        name: path.into(),
    };
    let run = |data, norms, lo: Option<f64>| {
        let mut a = recommend(&AdviceRequest {
            data,
            loss: "logistic".into(),
            standardize: norms == NormsSource::Lipschitz,
            std_share: (norms == NormsSource::Lipschitz).then_some(0.5),
            feature_bounds: None,
            public_scales: None,
            epsilon: 2.0,
            delta: 1e-5,
            share: None,
            steps: None,
            batch_size: None,
            norms,
            lo,
            hi: lo.map(|_| 1e5),
            grid_size: 200,
            accountant: dpsgd_lab::privacy::AccountantKind::Rdp,
            seed: 3,
            // the same numbers from the CSV and from memory: the seeded research mode
            reproducible: true,
            check_epsilon: None,
            test_fraction: Some(0.2),
            split_seed: 5,
            epochs: Some(30.0),
            feature_ranges: None,
            ledger: None,
            learning_rate: None,
        })
        .unwrap();
        a.label = "target".into();
        serde_json::to_value(&a).unwrap()
    };
    let want = run(csv(), NormsSource::Lipschitz, None);
    assert!(want["n"].as_u64().unwrap() > 400, "{}", want["n"]);
    assert_eq!(run(memory(), NormsSource::Lipschitz, None), want);
    // Raw G_i of the logistic loss (all in [1, 1e5] on these data) as per-row norms.
    let raw = LossSpec::Logistic { classes: None }.build(&all).unwrap();
    let g = dpsgd_lab::loss::lipschitz_constants(raw.as_ref(), &all).unwrap();
    let dir = common::tmpdir("recommend_memory");
    let file = dir.join("norms.txt");
    let text: String = g.iter().map(|v| format!("{v:?}\n")).collect();
    std::fs::write(&file, text).unwrap();
    let mut from_file = run(csv(), NormsSource::File(file), Some(1.0));
    from_file["norms_source"] = "per_sample_norms".into();
    assert_eq!(run(memory(), NormsSource::Values(g), Some(1.0)), from_file);
}

/// The whole recipe on two data sets that differ in one row (breast_cancer, and breast_cancer with
/// one more row that lands in the training part), run through the library's own stages: the
/// hash split keeps every other row on its side, the public-range transform is the same for both,
/// the range check's count moves by at most 1 (so its Laplace release has ratio <= e^eps_check),
/// and RNMM's exact selection probabilities differ by at most e^eps_RNMM at every candidate.
/// Planted bug: the seeded shuffle instead of the hash split moves about 150 rows and the
/// training parts then differ in many rows (the first assertion fails).
#[test]
fn the_whole_recipe_is_private_on_neighbouring_csvs() {
    use dpsgd_lab::clipnorm::recommend::plan::AdvicePlan;
    use dpsgd_lab::clipnorm::recommend::stages;
    use dpsgd_lab::clipnorm::recommend::{AdviceData, AdviceRequest, NormsSource, PublicValues};
    use dpsgd_lab::data::split::row_in_test;
    use dpsgd_lab::privacy::min_lipschitz::exact_probabilities;
    let all = dpsgd_lab::data::csv::CsvSpec::new("data/breast_cancer.csv", "target")
        .read()
        .unwrap();
    let seed = 3;
    // A row at the top of every documented range (a far outlier once scaled), label 0, that
    // the hash puts on the training side.
    let ranges = dpsgd_lab::data::preprocess::read_ranges(std::path::Path::new(
        "data/breast_cancer.ranges.csv",
    ))
    .unwrap();
    let row = (1..100)
        .map(|k| {
            ranges
                .iter()
                .map(|r| r.1 * (1.0 + k as f64 * 1e-3))
                .collect::<Vec<f64>>()
        })
        .find(|x| !row_in_test(x, 0.0, seed, 0.2))
        .unwrap();
    let mut x = all.x.clone();
    x.extend_from_slice(&row);
    let mut y = all.y.clone();
    y.push(0.0);
    let plus = Dataset::new(x, y, all.d).unwrap();
    let req = |data: &Dataset| AdviceRequest {
        data: AdviceData::Memory {
            data: data.clone(),
            name: "breast_cancer".into(),
        },
        loss: "logistic".into(),
        standardize: true,
        std_share: None,
        feature_bounds: None,
        public_scales: None,
        epsilon: 2.0,
        delta: 1e-5,
        share: None,
        steps: None,
        batch_size: None,
        norms: NormsSource::Lipschitz,
        lo: None,
        hi: None,
        grid_size: 200,
        accountant: dpsgd_lab::privacy::AccountantKind::Rdp,
        seed,
        reproducible: false,
        check_epsilon: Some(0.05),
        test_fraction: Some(0.2),
        split_seed: seed,
        epochs: Some(30.0),
        feature_ranges: Some(PublicValues::Rows(
            ranges.iter().map(|r| vec![r.0, r.1]).collect(),
        )),
        ledger: None,
        learning_rate: None,
    };
    let run = |data: &Dataset| {
        let plan = AdvicePlan::check(&req(data)).unwrap();
        let mut train = plan.train.clone();
        let pre = stages::preprocess(&plan, &mut train, None).unwrap();
        let g = stages::per_sample_values(&plan, &train).unwrap();
        (plan, pre, g)
    };
    let (pa, pre_a, ga) = run(&all);
    let (pb, pre_b, gb) = run(&plus);
    assert_eq!(&pb.mask[..all.n], &pa.mask[..], "a row changed sides");
    assert_eq!(pb.train.n, pa.train.n + 1);
    assert_eq!(pre_a.preprocess, pre_b.preprocess);
    // The other rows' G_i are the same values, in the same order; the new row adds one.
    assert_eq!(&gb[..ga.len()], &ga[..]);
    let outside = |g: &[f64]| g.iter().filter(|v| **v < pa.lo || **v > pa.hi).count() as i64;
    assert!((outside(&gb) - outside(&ga)).abs() <= 1);
    let cfg = dpsgd_lab::privacy::RnmmConfig {
        epsilon: pa.rnmm_epsilon,
        lo: pa.lo,
        hi: pa.hi,
        grid_size: 200,
        target_count: 1,
    };
    let p = exact_probabilities(&ga, &cfg).unwrap();
    let q = exact_probabilities(&gb, &cfg).unwrap();
    let worst = p
        .iter()
        .zip(&q)
        .map(|(a, b)| (a.ln() - b.ln()).abs())
        .fold(0.0, f64::max);
    assert!(
        worst <= cfg.epsilon * (1.0 + 1e-12),
        "{worst} > {}",
        cfg.epsilon
    );
    // The planted bug: the shuffle split moves rows between the parts.
    let shuffle = |d: &Dataset| {
        dpsgd_lab::data::split::SplitSpec {
            test_fraction: 0.2,
            seed,
            method: dpsgd_lab::data::split::SplitMethod::Shuffle,
        }
        .apply(d)
        .unwrap()
        .0
    };
    assert_ne!(
        shuffle(&all).x[..all.d * 10],
        shuffle(&plus).x[..all.d * 10]
    );
}
