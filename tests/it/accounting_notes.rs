//! The accounting conventions are said where users look: `privacy --help` states the Opacus
//! q/T convention and the fractional-order difference; a delta >= 1/n draws a warning; a PLD
//! lower bound of 0 is not printed as if it bracketed epsilon.

use crate::common::cli;

#[test]
fn privacy_help_states_the_conventions() {
    let out = cli(["privacy", "--help"]);
    assert!(out.success(), "{out:?}");
    for needle in [
        "Opacus",
        "1/len(loader)",
        "fractional orders",
        "1.790664",
        "1.793473",
    ] {
        assert!(out.stdout.contains(needle), "{needle}: {}", out.stdout);
    }
}

#[test]
fn a_delta_of_one_over_n_or_more_draws_a_warning() {
    let run = |delta: &str| {
        cli([
            "privacy",
            "epsilon",
            "--epochs",
            "1",
            "--batch-size",
            "10",
            "--n",
            "100",
            "--noise-multiplier",
            "1",
            "--delta",
            delta,
        ])
    };
    let big = run("0.01");
    assert!(big.success(), "{big:?}");
    assert!(
        big.stderr.contains("warning: delta = 0.01 >= 1/n = 0.01"),
        "{big:?}"
    );
    let small = run("1e-4");
    assert!(
        small.success() && !small.stderr.contains("warning"),
        "{small:?}"
    );
}

/// q 0.001, T 1e6 (the PLD's certified lower bound is 0 there: T h / 2 = 50 > epsilon 6.03).
#[test]
fn a_vacuous_pld_lower_bound_is_explained_not_printed() {
    let out = cli([
        "privacy",
        "epsilon",
        "--sample-rate",
        "0.001",
        "--steps",
        "1000000",
        "--noise-multiplier",
        "1",
        "--accountant",
        "pld",
    ]);
    assert!(out.success(), "{out:?}");
    assert!(!out.stdout.contains("certified lower 0"), "{}", out.stdout);
    assert!(
        out.stdout.contains("no informative lower bound"),
        "{}",
        out.stdout
    );
    let tight = cli([
        "privacy",
        "epsilon",
        "--sample-rate",
        "0.01",
        "--steps",
        "10000",
        "--noise-multiplier",
        "1",
        "--accountant",
        "pld",
    ]);
    assert!(
        tight.stdout.contains("certified lower 5.687724"),
        "{}",
        tight.stdout
    );
}
