//! Issue 56 (privacy-4), "Resources": inputs that hung, aborted or ran on noise are refused up
//! front, in one line with exit 2, and before anything is spent or written. Each child runs
//! under `ulimit -v` (4 GB), so a missing estimate shows up as an abort, not a swapping machine.

use std::path::Path;

use crate::common::{ROOT, assert_one_line_error, cli_capped, tmpdir};

/// The shipped worst-case specs copied into `dir`/specs, `worstcase_h1_sharp`'s quick budget
/// line with `from` replaced by `to`.
fn worstcase_specs(dir: &Path, from: &str, to: &str) -> String {
    let specs = dir.join("specs");
    std::fs::create_dir_all(&specs).unwrap();
    let src = Path::new(ROOT).join("simulations/worstcase");
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let mut text = std::fs::read_to_string(&p).unwrap();
        if p.file_stem().is_some_and(|s| s == "worstcase_h1_sharp") {
            assert!(text.contains(from), "worstcase_h1_sharp has no {from:?}");
            text = text.replacen(from, to, 1);
        }
        std::fs::write(specs.join(p.file_name().unwrap()), text).unwrap();
    }
    specs.display().to_string()
}

/// A search budget beyond the work limit ran for ever (iterations) or would abort on its
/// replicates' memory: refused before the first spec runs, naming the budget.
#[test]
fn worstcase_refuses_a_search_budget_beyond_the_limits() {
    // (row, the quick budget's entry, its replacement, what the refusal is about)
    let rows = [
        (
            "iterations",
            "iterations = 15,",
            "iterations = 1000000000000,",
            "exceeds the limit",
        ),
        (
            "restarts",
            "{ restarts = 1,",
            "{ restarts = 30000000,",
            "exceeds the limit",
        ),
        (
            "recheck",
            "recheck_replicates = 32 }",
            "recheck_replicates = 1000000000000 }",
            "of memory",
        ),
    ];
    for (name, from, to, why) in rows {
        let dir = tmpdir(&format!("limits-worstcase-{name}"));
        let specs = worstcase_specs(&dir, from, to);
        let out = dir.join("out");
        let o = cli_capped([
            "worstcase",
            "--specs",
            &specs,
            "--only",
            "h1_sharp",
            "--out",
            &out.display().to_string(),
            "--quiet",
        ]);
        assert_one_line_error(&o, to.trim_start_matches("{ "));
        assert!(o.stderr.contains(why), "{name}: {}", o.stderr);
        assert!(
            !out.exists(),
            "{name}: a refused search wrote {}",
            out.display()
        );
    }
}

/// `--only` with no match ran nothing and exited 0 with an empty report: exit 2, naming the
/// specs there are, for the three batch commands; nothing is written.
#[test]
fn only_without_a_match_is_refused_naming_the_specs() {
    let dir = tmpdir("limits-only");
    for (cmd, one) in [
        ("worstcase", "worstcase_h1_sharp"),
        ("verify", "thm62_j1_huber"),
        ("cliplaw", "cliplaw_breast_cancer"),
    ] {
        let out = dir.join(cmd);
        let o = cli_capped([
            cmd,
            "--only",
            "nonexistent",
            "--out",
            &out.display().to_string(),
            "--quiet",
        ]);
        assert_one_line_error(&o, "--only nonexistent matches none of the");
        assert!(o.stderr.contains(one), "{cmd}: {}", o.stderr);
        assert!(!out.exists(), "{cmd} wrote {}", out.display());
    }
}

/// `audit-run --canaries 1e12` aborted on a failed allocation: refused on its memory estimate
/// before the canaries are drawn and before the config's ledger pays for the run.
#[test]
fn audit_run_refuses_canaries_beyond_memory_before_the_ledger_pays() {
    let dir = tmpdir("limits-canaries");
    let cfg = dir.join("rec.toml");
    let ledger = dir.join("ledger.jsonl");
    let wine = format!("{ROOT}/data/wine.csv");
    let made = cli_capped([
        "clipnorm",
        "recommend",
        "--csv",
        &wine,
        "--label",
        "target",
        "--epsilon",
        "4",
        "--feature-ranges",
        &format!("{ROOT}/data/wine.ranges.csv"),
        "--write-config",
        &cfg.display().to_string(),
        "--ledger",
        &ledger.display().to_string(),
    ]);
    assert!(made.success(), "{}", made.stderr);
    let before = std::fs::read_to_string(&ledger).unwrap();
    let o = cli_capped([
        "audit-run",
        "--config",
        &cfg.display().to_string(),
        "--canaries",
        "1000000000000",
    ]);
    assert_one_line_error(&o, "--canaries 1000000000000: needs about");
    assert_eq!(
        std::fs::read_to_string(&ledger).unwrap(),
        before,
        "the refused audit changed the ledger"
    );
}

/// `recommend --share 1e-300` ran RNMM at epsilon 2e-300, and `--std-share 1e-300` the
/// standardization at as little: each refused by its stage's rule (src/clipnorm/recommend/
/// small.rs) before any stage runs, so no ledger is made.
#[test]
fn recommend_refuses_a_stage_share_whose_output_is_noise() {
    let dir = tmpdir("limits-share");
    let wine = format!("{ROOT}/data/wine.csv");
    for (flag, needle) in [
        (
            "--share",
            "RNMM's epsilon 2.000000e-300 is too small for n = 178",
        ),
        (
            "--std-share",
            "the private standardization's epsilon 2.000000e-300 is too small for n = 178",
        ),
    ] {
        let ledger = dir.join(format!("{}.jsonl", flag.trim_start_matches('-')));
        let o = cli_capped([
            "clipnorm",
            "recommend",
            "--csv",
            &wine,
            "--label",
            "target",
            "--epsilon",
            "2",
            flag,
            "1e-300",
            "--ledger",
            &ledger.display().to_string(),
        ]);
        assert_one_line_error(&o, needle);
        assert!(
            !ledger.exists(),
            "{flag}: a refused request made its ledger"
        );
    }
}
