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

/// Output blocks whose commands take too long for every `cargo test`, by their first line;
/// each is compared by hand when its command changes (the verify block: `verify` takes a
/// minute at quick scale).
const SLOW_BLOCKS: &[&str] = &["wrote results/verify-quick/report.md"];

/// Every ```text block of the README is the output of the ```sh block before it, run as printed
/// (commands separated by a blank line in the block); "..." in a block stands for any text
/// (a time, say). Blocks of slow commands are listed in `SLOW_BLOCKS`.
#[test]
fn every_readme_output_block_is_the_commands_output() {
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
