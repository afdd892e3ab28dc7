//! One flag vocabulary: wherever a command takes a quantity under one of several names
//! (`--epsilon` / `--eps`, `--steps` / `--T`, `--sample-rate` / `--q`, `--noise-multiplier` /
//! `--z`), the canonical name is the flag and the others are visible aliases, in every
//! subcommand; and an alias gives the canonical flag's output.

use crate::common::cli;

/// Every subcommand path (leaves of the command tree).
const SUBCOMMANDS: &[&[&str]] = &[
    &["verify"],
    &["run"],
    &["merge"],
    &["cliplaw"],
    &["theory", "schedule"],
    &["theory", "phi"],
    &["theory", "alpha"],
    &["lower-bound"],
    &["privacy", "epsilon"],
    &["privacy", "calibrate"],
    &["privacy", "zcdp"],
    &["audit"],
    &["clipnorm"],
    &["clipnorm", "recommend"],
    &["train"],
    &["data", "describe"],
    &["data", "generate"],
];

/// (canonical, aliases): one quantity, one canonical flag.
const VOCABULARY: &[(&str, &[&str])] = &[
    ("--epsilon", &["--eps"]),
    ("--steps", &["--T"]),
    ("--sample-rate", &["--q"]),
    ("--noise-multiplier", &["--z"]),
];

/// The options of a help text: (flag, its visible aliases). In the long form (`--help` of a
/// command with long descriptions) the aliases stand on a line below the flag.
fn options(help: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for l in help.lines() {
        let t = l.trim_start();
        let t = t.strip_prefix("-h, ").unwrap_or(t);
        if let Some(rest) = t.strip_prefix("--")
            && l.starts_with("  ")
        {
            let flag = rest.split([' ', '\t']).next().unwrap_or("");
            out.push((format!("--{flag}"), Vec::new()));
        }
        let aliases = l
            .split("[aliases: ")
            .nth(1)
            .or_else(|| l.split("[alias: ").nth(1));
        if let (Some(a), Some(last)) = (aliases, out.last_mut()) {
            let a = a.split(']').next().unwrap_or("");
            last.1.extend(a.split(", ").map(|s| s.trim().to_string()));
        }
    }
    out
}

#[test]
fn every_quantity_has_one_canonical_flag_and_its_aliases_everywhere() {
    let mut problems = Vec::new();
    for path in SUBCOMMANDS {
        let mut args: Vec<&str> = path.to_vec();
        args.push("--help");
        let out = cli(&args);
        assert!(out.success(), "{args:?}: {out:?}");
        let opts = options(&out.stdout);
        for (canon, aliases) in VOCABULARY {
            for a in *aliases {
                if opts.iter().any(|(f, _)| f == a) {
                    problems.push(format!("{path:?}: {a} is a flag; it should alias {canon}"));
                }
            }
            if let Some((_, have)) = opts.iter().find(|(f, _)| f == canon) {
                for a in *aliases {
                    if !have.iter().any(|h| h == a) {
                        problems.push(format!("{path:?}: {canon} lacks the alias {a}"));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The parser of help lines: an option with an alias, one without, and the help flag.
#[test]
fn options_reads_flags_and_aliases() {
    let help = "      --epsilon <EPSILON>  Target [aliases: --eps]\n      --n <N>\n          rows\n          \n          [alias: --m]\n  -h, --help  Print help\n";
    assert_eq!(
        options(help),
        vec![
            ("--epsilon".to_string(), vec!["--eps".to_string()]),
            ("--n".to_string(), vec!["--m".to_string()]),
            ("--help".to_string(), vec![]),
        ]
    );
}

/// The alias and the canonical flag give the same output.
#[test]
fn aliases_give_the_canonical_output() {
    let commands: &[(&[&str], &str, &str)] = &[
        (
            &[
                "theory",
                "phi",
                "--n",
                "1000",
                "--d",
                "10",
                "--epsilon",
                "1",
                "--delta",
                "1e-5",
                "--nu",
                "1",
            ],
            "--epsilon",
            "--eps",
        ),
        (&["privacy", "zcdp", "--epsilon", "1"], "--epsilon", "--eps"),
        (
            &[
                "theory",
                "schedule",
                "--theorem",
                "I.1",
                "--k",
                "inf",
                "--G",
                "1",
                "--D-W",
                "2",
                "--gamma",
                "0.1",
                "--phi",
                "0.01",
                "--steps",
                "500",
            ],
            "--steps",
            "--T",
        ),
    ];
    for (canon, flag, alias) in commands {
        let aliased: Vec<&str> = canon
            .iter()
            .map(|&a| if a == *flag { *alias } else { a })
            .collect();
        let (a, b) = (cli(*canon), cli(&aliased));
        assert!(a.success(), "{canon:?}: {a:?}");
        assert_eq!(a.stdout, b.stdout, "{canon:?} against {aliased:?}: {b:?}");
    }
}
