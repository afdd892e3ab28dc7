//! Issue users-2: the privacy commands from a user's inputs (epochs, batch size and n; phases;
//! the default delta; the PLD's certified lower bound beside its upper bound), a target noise
//! without an accountant, and the examples that end every subcommand's `--help`.

use crate::bad_input::wine_config;
use crate::common::{self, cli};

/// `privacy epsilon --json` with `args`, as its JSON object.
fn epsilon_json(args: &[&str]) -> serde_json::Value {
    let mut v = vec!["privacy", "epsilon", "--json"];
    v.extend(args);
    let out = cli(&v);
    assert!(out.success(), "{out:?}");
    out.last_json()
}

/// Opacus' example run: 30 epochs of batch 256 over 60000 samples.
const EPOCHS: [&str; 6] = ["--epochs", "30", "--batch-size", "256", "--n", "60000"];

/// --epochs 30 --batch-size 256 --n 60000 is q = 256/60000 and T = ceil(7031.25) = 7032: the same
/// epsilon as --sample-rate/--steps at those values, and the text says which q and T were used.
/// --delta defaults to 1e-5.
#[test]
fn epochs_batch_size_and_n_give_q_and_t() {
    let by_epochs = epsilon_json(&[&EPOCHS[..], &["--z", "1.1"]].concat());
    assert_eq!(by_epochs["steps"], 7032);
    assert_eq!(by_epochs["sample_rate"].as_f64().unwrap(), 256.0 / 60000.0);
    assert_eq!(by_epochs["delta"].as_f64().unwrap(), 1e-5);
    let q = format!("{}", 256.0 / 60000.0);
    let by_q = epsilon_json(&["--q", &q, "--steps", "7032", "--z", "1.1"]);
    assert_eq!(by_epochs["epsilon"], by_q["epsilon"]);
    let text = cli([&["privacy", "calibrate", "--epsilon", "2"][..], &EPOCHS].concat()).stdout;
    assert!(
        text.contains("q = B / N = 0.004267, T = ceil(E N / B) = 7032"),
        "{text}"
    );
}

/// Two phases of T/2 steps each are one phase of T steps (RDP: equal up to rounding), and two
/// different phases compose to more than either alone.
#[test]
fn phases_compose_in_one_account() {
    let one = epsilon_json(&["--q", "0.01", "--steps", "10000", "--z", "1"]);
    let halves = epsilon_json(&[
        "--phase",
        "q=0.01,z=1,steps=5000",
        "--phase",
        "q=0.01,z=1,steps=5000",
    ]);
    let (a, b) = (
        one["epsilon"].as_f64().unwrap(),
        halves["epsilon"].as_f64().unwrap(),
    );
    assert!((a - b).abs() <= 1e-12 * a, "{a} vs {b}");
    assert_eq!(halves["steps"], 10000);
    let p1 = ["--q", "0.01", "--steps", "1000", "--z", "1"];
    let p2 = ["--q", "0.02", "--steps", "500", "--z", "0.8"];
    let both = epsilon_json(&[
        "--phase",
        "q=0.01,z=1.0,steps=1000",
        "--phase",
        "q=0.02,z=0.8,steps=500",
    ])["epsilon"]
        .as_f64()
        .unwrap();
    for p in [p1, p2] {
        let alone = epsilon_json(&p)["epsilon"].as_f64().unwrap();
        assert!(both > alone, "{both} <= {alone}");
    }
}

/// The PLD's certified lower bound is printed beside its upper bound, in the text and in --json,
/// and lies below it.
#[test]
fn pld_prints_its_certified_lower_bound() {
    let args = [
        "--q",
        "0.01",
        "--steps",
        "1000",
        "--z",
        "1",
        "--accountant",
        "pld",
    ];
    let v = epsilon_json(&args);
    let (up, lo) = (
        v["epsilon"].as_f64().unwrap(),
        v["epsilon_lower"].as_f64().unwrap(),
    );
    assert!(lo > 0.0 && lo <= up, "{v}");
    assert_eq!(v["epsilon_upper"].as_f64(), Some(up));
    let mut text_args = vec!["privacy", "epsilon"];
    text_args.extend(args);
    let text = cli(&text_args).stdout;
    let want = format!(
        "({} upper; certified lower {})",
        "PLD",
        dpsgd_lab::error::fmt_num(lo)
    );
    assert!(text.contains(&want), "{text} lacks {want}");
}

/// `noise = { kind = "target", epsilon, delta }` without `accountant` calibrates with rdp, the
/// default of every command.
#[test]
fn target_noise_defaults_to_rdp() {
    let dir = common::tmpdir("target-default");
    let cfg = wine_config(
        &dir,
        "target",
        "",
        r#"{ kind = "target", epsilon = 1.5, delta = 1e-5 }"#,
    );
    let out = cli(["train", "--config", &cfg, "--json"]);
    assert!(out.success(), "{out:?}");
    assert_eq!(out.last_json()["privacy"]["accountant"], "rdp");
    std::fs::remove_dir_all(&dir).ok();
}

/// The PLD composes phases as dp_accounting's `ComposedDpEvent`: two halves of T steps are one
/// run of T within the stated error estimate, and (q 0.01, z 1, T 1000) then (q 0.02, z 0.8,
/// T 500) at delta 1e-5 matches dp_accounting 0.6's PLD (value_discretization_interval 1e-4):
/// 5.014670311671473, within our error estimate plus 2e-6 relative; the certified lower bound
/// lies below it.
#[test]
fn pld_phases_match_one_run_and_dp_accounting() {
    let pld = ["--accountant", "pld"];
    let one = epsilon_json(&[&["--q", "0.01", "--steps", "2000", "--z", "1"][..], &pld].concat());
    let halves = epsilon_json(
        &[
            &[
                "--phase",
                "q=0.01,z=1,steps=1000",
                "--phase",
                "q=0.01,z=1,steps=1000",
            ][..],
            &pld,
        ]
        .concat(),
    );
    let (a, b, err) = (
        one["epsilon"].as_f64().unwrap(),
        halves["epsilon"].as_f64().unwrap(),
        one["error"].as_f64().unwrap(),
    );
    assert!((a - b).abs() <= err, "{a} vs {b} (error {err})");
    let two = epsilon_json(
        &[
            &[
                "--phase",
                "q=0.01,z=1.0,steps=1000",
                "--phase",
                "q=0.02,z=0.8,steps=500",
            ][..],
            &pld,
        ]
        .concat(),
    );
    let theirs = 5.014670311671473;
    let (eps, err) = (
        two["epsilon"].as_f64().unwrap(),
        two["error"].as_f64().unwrap(),
    );
    assert!(
        (eps - theirs).abs() <= err + 2e-6 * theirs,
        "{eps} vs {theirs} (error {err})"
    );
    assert!(two["epsilon_lower"].as_f64().unwrap() <= theirs, "{two}");
    assert_eq!(two["phases"].as_array().map(Vec::len), Some(2));
}
