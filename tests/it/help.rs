//! Issue users-2: the `--help` of every command, found by walking the `Commands:` lists from the
//! top, ends with an `Examples:` section of `dpsgd-lab ...` lines, and every example that runs in
//! seconds runs as printed from the repository root (the long runs, `run`, `verify`, `merge` and
//! the clip-norm study, are left to their own tests).

use std::path::Path;

use crate::common::cli;

/// The subcommand names listed under `Commands:` in a help text (without `help`).
fn commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_string)
        .collect()
}

/// Every command path (the top is the empty path) with its help text.
fn all_helps() -> Vec<(Vec<String>, String)> {
    let mut todo = vec![Vec::<String>::new()];
    let mut done = Vec::new();
    while let Some(path) = todo.pop() {
        let mut args = path.clone();
        args.push("--help".into());
        let out = cli(&args);
        assert!(out.success(), "{args:?}: {out:?}");
        for c in commands(&out.stdout) {
            let mut sub = path.clone();
            sub.push(c);
            todo.push(sub);
        }
        done.push((path, out.stdout));
    }
    done
}

/// The example lines that end a help text; an error if there is no `Examples:` section, if it
/// is not last, or if a line is not a `dpsgd-lab` command.
fn examples(help: &str) -> Result<Vec<String>, String> {
    let (_, tail) = help
        .split_once("\nExamples:\n")
        .ok_or("no Examples: section")?;
    let lines: Vec<String> = tail
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string())
        .collect();
    if lines.is_empty() {
        return Err("an empty Examples: section".into());
    }
    match lines.iter().find(|l| !l.starts_with("dpsgd-lab ")) {
        Some(l) => Err(format!(
            "{l:?} is not a dpsgd-lab command (or not the last section)"
        )),
        None => Ok(lines),
    }
}

/// Examples that run for minutes or need another run first: checked by their own tests.
fn long_running(example: &str) -> bool {
    let words: Vec<&str> = example.split_whitespace().collect();
    matches!(words.get(1), Some(&("run" | "verify" | "merge")))
        || words.get(1..3) == Some(&["clipnorm", "--config"])
        || example.contains("--trials 100000")
}

/// The arguments of `example` (after `dpsgd-lab`), with a batch command's results sent to `dir`:
/// `cliplaw` and `worstcase` refuse to overwrite the finished cells of an earlier run, so a
/// second `cargo test` would otherwise fail on the results the first one left.
fn with_fresh_out(example: &str, dir: &Path) -> Vec<String> {
    let mut args: Vec<String> = example
        .split_whitespace()
        .skip(1)
        .map(String::from)
        .collect();
    if matches!(
        args.first().map(String::as_str),
        Some("cliplaw" | "worstcase")
    ) {
        match args.iter().position(|a| a == "--out") {
            Some(i) if i + 1 < args.len() => args[i + 1] = dir.display().to_string(),
            _ => args.extend(["--out".to_string(), dir.display().to_string()]),
        }
    }
    args
}

#[test]
fn every_help_ends_with_examples_that_run_as_printed() {
    let helps = all_helps();
    assert!(helps.len() >= 20, "only {} commands found", helps.len());
    let mut failures = Vec::new();
    let mut to_run = Vec::new();
    for (path, help) in &helps {
        match examples(help) {
            Ok(lines) => to_run.extend(lines),
            Err(e) => failures.push(format!("dpsgd-lab {} --help: {e}", path.join(" "))),
        }
    }
    to_run.sort();
    to_run.dedup();
    let tmp = crate::common::tmpdir("help-examples");
    for (i, ex) in to_run.iter().filter(|e| !long_running(e)).enumerate() {
        let out = cli(with_fresh_out(ex, &tmp.join(i.to_string())));
        if !out.success() {
            failures.push(format!("{ex}: exit {:?}, {}", out.code, out.stderr));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
