//! Every command in the README's code blocks runs as printed (issue users-2): each line that
//! starts with `cargo run --release -- ` or `dpsgd-lab ` is parsed against the binary's own
//! `--help` (the subcommand exists, every `--flag` it uses is one of that subcommand's flags or
//! aliases), and the fast ones (`privacy ...`) are run and must exit 0. clap has no dry run,
//! so the help text is the contract checked.

use std::collections::BTreeMap;

use crate::common::{ROOT, cli};

/// Flags the README documents ahead of a merge from another branch (issue users-2), as
/// (subcommand path, flag). Until the flag exists the `--help` check skips it and the command
/// is not run; once it exists, the test fails until the entry is removed here, so the check
/// cannot be left off by mistake.
const PENDING: &[(&str, &str)] = &[];

/// Subcommands whose README commands are not run yet because they rely on a default that
/// another branch brings (`--delta` defaulting to 1e-5 everywhere). Once such a command runs,
/// the test fails until the entry is removed.
const PENDING_RUN: &[&str] = &[];

/// Subcommands fast enough to run as printed in every `cargo test`.
const RUN: &[&str] = &["privacy epsilon", "privacy calibrate", "privacy zcdp"];

/// The commands of the README's fenced code blocks, as argument lists (without the
/// `cargo run --release --` or `dpsgd-lab` prefix), with a trailing `# comment` removed.
pub fn readme_commands(readme: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in readme.lines() {
        let t = line.trim();
        if t.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            continue;
        }
        let rest = t
            .strip_prefix("cargo run --release -- ")
            .or_else(|| t.strip_prefix("dpsgd-lab "));
        if let Some(rest) = rest {
            let rest = rest.split(" #").next().unwrap_or(rest);
            out.push(rest.split_whitespace().map(str::to_string).collect());
        }
    }
    out
}

/// The subcommand names listed under "Commands:" in a help text.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Whether `flag` (e.g. `--steps`) is one of the flags or aliases a help text lists.
fn help_has_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(i, _)| {
        let before = help[..i].chars().last();
        let after = help[i + flag.len()..].chars().next();
        matches!(before, Some(' ' | '\n' | ','))
            && matches!(after, None | Some(' ' | '\n' | ',' | ']' | '='))
    })
}

/// Checks one command against the help texts: the subcommand path exists and every flag is
/// known (or pending). Returns the subcommand path, or the problems found.
fn check(args: &[String], helps: &mut BTreeMap<String, String>) -> Result<String, Vec<String>> {
    let mut path: Vec<String> = Vec::new();
    let mut problems = Vec::new();
    let help_of = |path: &[String], helps: &mut BTreeMap<String, String>| -> String {
        let key = path.join(" ");
        helps
            .entry(key)
            .or_insert_with(|| {
                let mut a: Vec<String> = path.to_vec();
                a.push("--help".into());
                let out = cli(&a);
                assert!(out.success(), "{a:?} --help failed: {out:?}");
                out.stdout
            })
            .clone()
    };
    let mut help = help_of(&path, helps);
    for a in args.iter().take_while(|a| !a.starts_with('-')) {
        if subcommands(&help).iter().any(|s| s == a) {
            path.push(a.clone());
            help = help_of(&path, helps);
        } else {
            break;
        }
    }
    let sub = path.join(" ");
    if path.is_empty() {
        problems.push(format!("`{}`: no such subcommand", args.join(" ")));
    }
    for a in args.iter().filter(|a| a.starts_with("--")) {
        let flag = a.split('=').next().unwrap_or(a);
        let pending = PENDING.iter().any(|&(s, f)| s == sub && f == flag);
        match (help_has_flag(&help, flag), pending) {
            (true, false) | (false, true) => {}
            (false, false) => problems.push(format!(
                "`{}`: `{sub} --help` lists no flag {flag}",
                args.join(" ")
            )),
            (true, true) => problems.push(format!(
                "`{sub}` has {flag} now: remove (\"{sub}\", \"{flag}\") from PENDING in tests/it/readme.rs"
            )),
        }
    }
    if problems.is_empty() {
        Ok(sub)
    } else {
        Err(problems)
    }
}

#[test]
fn readme_starts_with_verify_and_test() {
    let readme = std::fs::read_to_string(format!("{ROOT}/README.md")).unwrap();
    let block: Vec<&str> = readme
        .lines()
        .skip_while(|l| !l.starts_with("```"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .collect();
    let cmd = |l: &str| l.split('#').next().unwrap_or("").trim().to_string();
    assert_eq!(
        block.iter().take(2).map(|l| cmd(l)).collect::<Vec<_>>(),
        ["cargo run --release -- verify", "cargo test"],
        "the README's first code block must start with the two commands"
    );
}

#[test]
fn every_readme_command_parses_and_the_fast_ones_run() {
    let readme = std::fs::read_to_string(format!("{ROOT}/README.md")).unwrap();
    let commands = readme_commands(&readme);
    assert!(
        commands.len() >= 6,
        "too few README commands found: {commands:?}"
    );
    let mut helps = BTreeMap::new();
    let mut problems = Vec::new();
    for args in &commands {
        match check(args, &mut helps) {
            Err(p) => problems.extend(p),
            Ok(sub) => {
                let pending_flag = args.iter().any(|a| {
                    let f = a.split('=').next().unwrap_or(a);
                    PENDING.iter().any(|&(s, pf)| s == sub && pf == f)
                });
                if !RUN.contains(&sub.as_str()) || pending_flag {
                    continue;
                }
                let out = cli(args);
                let pending = PENDING_RUN.contains(&sub.as_str());
                match (out.success(), pending) {
                    (true, false) | (false, true) => {}
                    (false, false) => problems.push(format!(
                        "`{}` failed: {}",
                        args.join(" "),
                        out.stderr.trim()
                    )),
                    (true, true) => problems.push(format!(
                        "`{}` runs now: remove \"{sub}\" from PENDING_RUN in tests/it/readme.rs",
                        args.join(" ")
                    )),
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "README commands:\n{}",
        problems.join("\n")
    );
}

#[test]
fn extraction_and_flag_matching() {
    let md = "text `cargo run --release -- no`\n```sh\ncargo run --release -- a --b 1  # c\n\
              dpsgd-lab x y --z=2\nother\n```\ncargo run --release -- outside\n";
    assert_eq!(
        readme_commands(md),
        vec![vec!["a", "--b", "1"], vec!["x", "y", "--z=2"]]
    );
    let help = "      --sample-rate <Q>  rate [alias: --q]\n      --steps <STEPS>\n";
    assert!(help_has_flag(help, "--sample-rate") && help_has_flag(help, "--q"));
    assert!(help_has_flag(help, "--steps"));
    assert!(!help_has_flag(help, "--step") && !help_has_flag(help, "--sample"));
}

/// Output blocks whose commands take too long for every `cargo test`, by their first line:
/// the verify block (`verify` at quick scale, 110-200 s in the test profile on 2 cores), compared
/// by [`the_readme_verify_block_is_verifys_output`], which `cargo test` skips and `.ci/run`
/// runs (`--ignored`).
const SLOW_BLOCKS: &[&str] = &["wrote results/verify-quick/report.md"];

/// The README's fenced blocks in order, as (tag, lines).
fn readme_blocks() -> Vec<(String, Vec<String>)> {
    let readme = std::fs::read_to_string(format!("{ROOT}/README.md")).unwrap();
    let mut blocks: Vec<(String, Vec<String>)> = Vec::new();
    let mut current: Option<(String, Vec<String>)> = None;
    for line in readme.lines() {
        match (&mut current, line.strip_prefix("```")) {
            (None, Some(tag)) => current = Some((tag.to_string(), Vec::new())),
            (Some(_), Some(_)) => blocks.push(current.take().unwrap()),
            (Some((_, body)), None) => body.push(line.to_string()),
            (None, None) => {}
        }
    }
    blocks
}

/// Every ```text block of the README is the output of the ```sh block before it, run as printed
/// (commands separated by a blank line in the block); "..." in a block stands for any text
/// (a time, say). Blocks of slow commands are listed in `SLOW_BLOCKS`.
#[test]
fn every_readme_output_block_is_the_commands_output() {
    let blocks = readme_blocks();
    let mut compared = 0;
    for (i, (tag, body)) in blocks.iter().enumerate() {
        if tag != "text" {
            continue;
        }
        let first = body.first().map_or("", String::as_str);
        if SLOW_BLOCKS.iter().any(|s| first.starts_with(s)) {
            continue;
        }
        let sh = &blocks[..i].iter().rev().find(|(t, _)| t == "sh").unwrap().1;
        let outputs: Vec<String> = readme_commands(&format!("```sh\n{}\n```\n", sh.join("\n")))
            .iter()
            .map(|args| cli(args).stdout.trim_end().to_string())
            .collect();
        let got = outputs.join("\n\n");
        let want = body.join("\n");
        assert!(
            matches_with_ellipses(&want, &got),
            "README block {first:?} is stale; the commands print:\n{got}"
        );
        compared += 1;
    }
    assert!(compared >= 1, "no README output block compared");
}

/// The README's verify block is the end of what `verify` prints, run as printed at quick scale
/// (its table comes first; the block shows the last lines: where it wrote and the one-line
/// summary). The output folder is a fresh one (`--out`), written back as the default
/// `results/verify-quick` before comparing; the time is the block's "...".
#[test]
#[ignore = "runs `verify` at quick scale: 110-200 s on 2 cores; .ci/run runs it with --ignored"]
fn the_readme_verify_block_is_verifys_output() {
    let blocks = readme_blocks();
    let at = blocks
        .iter()
        .position(|(t, b)| t == "text" && b.first().is_some_and(|l| l.starts_with(SLOW_BLOCKS[0])))
        .expect("the README has no verify output block");
    let sh = &blocks[..at]
        .iter()
        .rev()
        .find(|(t, _)| t == "sh")
        .unwrap()
        .1;
    let commands = readme_commands(&format!("```sh\n{}\n```\n", sh.join("\n")));
    assert_eq!(commands, [["verify"]], "the verify block's command changed");
    let tmp = crate::common::tmpdir("readme-verify");
    let out_dir = tmp.join("verify-quick");
    let out = cli(["verify", "--out", out_dir.to_str().unwrap()]);
    assert!(out.success(), "verify: {}", out.stderr);
    let got = out
        .stdout
        .trim_end()
        .replace(out_dir.to_str().unwrap(), "results/verify-quick");
    // Within 120 columns as printed into the default folder.
    let wide: Vec<&str> = got.lines().filter(|l| l.chars().count() > 120).collect();
    assert!(
        wide.is_empty(),
        "verify's default output has lines over 120 columns: {wide:?}"
    );
    let want = blocks[at].1.join("\n");
    let tail: Vec<&str> = got.lines().collect();
    let tail = tail[tail.len().saturating_sub(blocks[at].1.len())..].join("\n");
    assert!(
        matches_with_ellipses(&want, &tail),
        "README's verify block is stale; `verify` ends with:\n{tail}"
    );
}

/// Whether `got` equals `want` line by line, a "..." in a line of `want` matching any text.
fn matches_with_ellipses(want: &str, got: &str) -> bool {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    w.len() == g.len()
        && w.iter().zip(&g).all(|(w, g)| match w.split_once("...") {
            None => w == g,
            Some((a, b)) => g.starts_with(a) && g[a.len()..].ends_with(b),
        })
}

#[test]
fn ellipses_match_any_text_in_their_line() {
    assert!(matches_with_ellipses("a in ... s\nb", "a in 3.2 s\nb"));
    assert!(!matches_with_ellipses("a in ... s\nb", "a in 3.2 s\nc"));
    assert!(!matches_with_ellipses("a", "a\nb"));
}

/// Numbers the README prints in its prose and in comments of its code blocks, each beside the
/// command that prints it: (the README's text, the command's arguments, its output), with `{0}`,
/// `{1}`, ... where a number stands. Each README number must be what the command prints (to
/// the README's decimals: 17.3263 for 17.326300). `{TMP}` in a command is a fresh folder (the
/// README's `recommend` would write its config and ledger into the repository).
/// Not here, because their commands take minutes: the verify block (`SLOW_BLOCKS`), the full
/// table's reading (`verify --full`), the clip-norm law (`cliplaw --full`, 16 min), the
/// worst cases (`worstcase`) and the pipeline's accuracies (`clipnorm pipeline`, 10 seeds x 3
/// data sets); `verify --full`'s time is a measurement, held to the one constant that states
/// it (`readme_states_the_full_verify_cost_of_the_report`).
const PROSE_OUTPUTS: &[(&str, &str, &str)] = &[
    (
        "z = {0} for the command above (q = {1}, T = {2})",
        "privacy calibrate --epochs 30 --batch-size 256 --n 60000 --epsilon 2",
        "z = {0} reaches epsilon = 2.000000 <= 2 at delta = 1.000000e-5 (rdp, q = {1}, T = {2},",
    ),
    (
        "z = {0} at q 0.01, T 1e4",
        "privacy calibrate --sample-rate 0.01 --steps 10000 --epsilon 2",
        "z = {0} reaches",
    ),
    (
        "q = {0}, T = {1} gives epsilon {2} (RDP)",
        "privacy epsilon --epochs 30 --batch-size 256 --n 60000 --noise-multiplier 1.1",
        "epsilon = {2} (RDP) at delta = 1.000000e-5 for q = {0}, T = {1},",
    ),
    (
        "T = 7050 gives {0} (`privacy epsilon --sample-rate 0.00425532 --steps 7050 --noise-multiplier 1.1`)",
        "privacy epsilon --sample-rate 0.00425532 --steps 7050 --noise-multiplier 1.1",
        "epsilon = {0} (RDP)",
    ),
    (
        "is at most theirs ({0} against 17.3902 at q 0.02, z 0.7, T 2000, delta 1e-7;",
        "privacy epsilon --sample-rate 0.02 --noise-multiplier 0.7 --steps 2000 --delta 1e-7",
        "epsilon = {0} (RDP)",
    ),
    (
        "at q 0.001, T 1e6 it would be {0}, and `privacy epsilon` prints \"no informative lower bound\"",
        "privacy epsilon --sample-rate 0.001 --steps 1000000 --noise-multiplier 1.0 --accountant pld",
        "(PLD upper; no informative lower bound) at delta = 1.000000e-5 for q = 0.001, T = 1000000, z = 1 PLD discretization h = 0.0001, error estimate 1.04e-2; the certified lower bound rounds every step's loss down to the grid, which costs up to T h / 2 = 50 here, more than epsilon itself, so it is {0}",
    ),
    (
        "dl.epsilon(sample_rate=0.01, steps=10000, noise_multiplier=1.0) # {0}..., delta 1e-5",
        "privacy epsilon --sample-rate 0.01 --steps 10000 --noise-multiplier 1.0",
        "epsilon = {0} (RDP) at delta = 1.000000e-5",
    ),
    (
        "dl.calibrate(sample_rate=0.01, steps=10000, epsilon=2.0) # {0}...",
        "privacy calibrate --sample-rate 0.01 --steps 10000 --epsilon 2",
        "z = {0} reaches",
    ),
    (
        "(here RNMM {0} and DP-SGD {1} composed to {2}, where adding epsilons would leave DP-SGD {3})",
        "clipnorm recommend --csv data/breast_cancer.csv --label target --epsilon 2 --feature-ranges data/breast_cancer.ranges.csv --test-fraction 0.2 --epochs 30 --write-config {TMP}/rec.toml --ledger {TMP}/ledger.jsonl",
        "RNMM {0} + DP-SGD (planned) {1} composed to {2} (of eps = 2), delta 1e-5 in total; basic composition would leave DP-SGD {3} (",
    ),
];

/// Runs of whitespace as one space (the README's prose is wrapped, code comments aligned).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The numbers standing at `{0}`, `{1}`, ... of `pattern` in `text` (whitespace as one space),
/// by index; None if `pattern` is not in `text`. A number runs up to the pattern's next literal
/// part (or, last, over the characters a number is written with).
fn numbers_at(pattern: &str, text: &str) -> Option<BTreeMap<usize, String>> {
    let (pattern, text) = (one_line(pattern), one_line(text));
    let mut parts = vec![];
    let mut rest = pattern.as_str();
    let mut slots = vec![];
    while let Some(i) = rest.find('{') {
        let j = rest[i..].find('}')? + i;
        parts.push(&rest[..i]);
        slots.push(rest[i + 1..j].parse::<usize>().ok()?);
        rest = &rest[j + 1..];
    }
    parts.push(rest);
    // Every start of the first literal part, so a repeated prefix does not hide the match.
    'start: for (at, _) in text.match_indices(parts[0]) {
        let mut pos = at + parts[0].len();
        let mut got = BTreeMap::new();
        for (k, slot) in slots.iter().enumerate() {
            let next = parts[k + 1];
            let end = if next.is_empty() {
                pos + text[pos..]
                    .find(|c: char| !(c.is_ascii_digit() || ".eE+-".contains(c)))
                    .unwrap_or(text.len() - pos)
            } else {
                match text[pos..].find(next) {
                    Some(e) => pos + e,
                    None => continue 'start,
                }
            };
            let value = &text[pos..end];
            if value.is_empty() || value.len() > 24 || value.contains(' ') {
                continue 'start;
            }
            got.insert(*slot, value.to_string());
            pos = end + next.len();
        }
        return Some(got);
    }
    None
}

/// Whether the README's number `shown` is the printed `printed` at the README's decimals.
fn same_number(shown: &str, printed: &str) -> bool {
    if shown == printed {
        return true;
    }
    let (Ok(_), Ok(p)) = (shown.parse::<f64>(), printed.parse::<f64>()) else {
        return false;
    };
    let decimals = shown.split_once('.').map_or(0, |(_, d)| d.len());
    format!("{p:.decimals$}") == shown
}

/// Every number the README prints in prose beside a fast command (`PROSE_OUTPUTS`) is what the
/// command prints now.
#[test]
fn every_readme_number_in_prose_is_the_commands_output() {
    let readme = std::fs::read_to_string(format!("{ROOT}/README.md")).unwrap();
    let tmp = crate::common::tmpdir("readme-prose");
    let mut problems = Vec::new();
    for (shown, args, printed) in PROSE_OUTPUTS {
        let Some(want) = numbers_at(shown, &readme) else {
            problems.push(format!("the README no longer says {shown:?}"));
            continue;
        };
        let args: Vec<String> = args
            .split_whitespace()
            .map(|a| a.replace("{TMP}", &tmp.display().to_string()))
            .collect();
        let out = cli(&args);
        assert!(out.success(), "`{}`: {}", args.join(" "), out.stderr);
        let Some(got) = numbers_at(printed, &out.stdout) else {
            problems.push(format!(
                "`{}` no longer prints {printed:?}:\n{}",
                args.join(" "),
                out.stdout
            ));
            continue;
        };
        for (k, w) in &want {
            let g = got.get(k).map_or("(missing)", String::as_str);
            if !same_number(w, g) {
                problems.push(format!(
                    "README {shown:?}: {{{k}}} is {w}, `{}` prints {g}",
                    args.join(" ")
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "stale README numbers:\n{}",
        problems.join("\n")
    );
}

#[test]
fn numbers_are_read_at_their_slots() {
    let got = numbers_at("q = {1}, T = {0} gives", "x q = 0.5,\n  T = 70 gives y").unwrap();
    assert_eq!(got[&0], "70");
    assert_eq!(got[&1], "0.5");
    assert_eq!(numbers_at("so it is {0}", "so it is 0").unwrap()[&0], "0");
    assert!(numbers_at("z = {0} at", "z = 1 2 at").is_none());
    assert!(same_number("17.3263", "17.326300") && same_number("2", "2.0000"));
    assert!(!same_number("17.3264", "17.326300") && !same_number("0.3", "0.4000"));
}

/// The README states `verify --full`'s time as the one constant the full report prints.
#[test]
fn readme_states_the_full_verify_cost_of_the_report() {
    let readme = one_line(&std::fs::read_to_string(format!("{ROOT}/README.md")).unwrap());
    let cost = dpsgd_lab::experiment::report::FULL_SCALE_COST;
    assert!(
        readme.contains(&format!(
            "`verify --full` is the publication scale ({cost};"
        )),
        "the README's verify --full time differs from report::FULL_SCALE_COST ({cost})"
    );
}
