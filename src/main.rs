//! The `dpsgd-lab` command line. Thin: parsing and printing only; the work is in the library.
// Every unsafe block states why it is sound (code-review.md section 4).
#![deny(clippy::undocumented_unsafe_blocks)]

mod cli;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// dpsgd-lab: the theory of DP-SGD under generalized Lipschitzness, made executable.
#[derive(Debug, Parser)]
#[command(name = "dpsgd-lab", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run DP-SGD (Algorithm 1) once on a generated or CSV data set.
    Train(cli::train::TrainArgs),
    /// Describe a data set's per-sample Lipschitz constants, or generate synthetic data.
    Data(cli::data::DataArgs),
    /// The Appendix L hard instance Q_v (Thms 6.6 / L.1, I.3): p, n p, |V|, G, w*, f*, Eq. 107.
    LowerBound(cli::lower_bound::LowerBoundArgs),
    /// Theorems as code: phi (Eq. 1), schedules, explicit bounds and exponents.
    Theory(cli::theory::TheoryArgs),
    /// Privacy accounting: epsilon of a run, noise calibration, zCDP conversion.
    ///
    /// Conventions, so that numbers from other libraries compare like with like:
    ///
    /// q and T from epochs: here q = B/N and T = ceil(E N/B). Opacus's make_private with Poisson
    /// sampling takes q = 1/len(loader) and T = E len(loader), len(loader) = ceil(N/B). At
    /// N = 60000, B = 256, E = 30, z = 1.1, delta = 1e-5 the two give epsilon 1.793473 (q =
    /// 0.004267, T = 7032) and 1.790664 (q = 1/235, T = 7050) by RDP.
    ///
    /// RDP at fractional orders: dp_accounting and Opacus sum the absolute values of the
    /// fractional-order series (an upper bound); this accountant sums it exactly, so with the
    /// same orders its epsilon is at most theirs (17.3263 against 17.3902 at q 0.02, z 0.7,
    /// T 2000, delta 1e-7); at integer orders the two agree to 1e-12.
    ///
    /// PLD: the upper value is the guarantee; the certified lower bound is printed only where it
    /// is informative (it lies about T h / 2 below the true epsilon). A delta >= 1/n (with --n)
    /// draws a warning.
    Privacy(cli::privacy::PrivacyArgs),
    /// Empirical privacy audit: a lower bound on epsilon for Algorithm 1 as implemented.
    ///
    /// Runs DP-SGD (the shipped sampler, clipping, noise and step function) R times on a data
    /// set D and R times on D' = D + one canary, and turns how well an adversary tells them apart
    /// into a lower bound on epsilon, set against the RDP and PLD accountants' claim.
    ///
    /// The canary is a "Dirac" gradient canary: its gradient has norm 10 tau along a coordinate
    /// no other sample's gradient touches (add/remove adjacency, Poisson subsampling at rate q).
    /// Threat models: every iterate visible (likelihood-ratio statistic of the per-step updates
    /// projected on that coordinate) and final iterate only.
    /// Two routes: Clopper-Pearson (half of the trials choose a threshold, the other half
    /// certify it; the (epsilon, delta) inequality on the rates, valid for any mechanism) and
    /// Gaussian DP (a one-sided lower confidence bound on mu from the mean shift of the
    /// likelihood-ratio statistic over all trials, converted at delta; exact at q = 1, a CLT
    /// approximation with subsampling).
    Audit(cli::audit::AuditArgs),
    /// Audit a `train` config in one training run with many canaries (one-run audit).
    ///
    /// Adds m Dirac gradient canaries (and, for the logistic loss, m input-space canaries) as
    /// rows of the config's data, each included with probability 1/2 from a public stream, runs
    /// the config once (its q, T, clip norm and noise), guesses the inclusion of the k' highest
    /// and k' lowest scoring canaries (k' fixed in advance) and turns the correct guesses into
    /// lower bounds on epsilon at the stated confidence: the (epsilon, delta) tail bound of
    /// Steinke, Nasr and Jagielski 2023 and the f-DP analysis of Mahloujifar, Melis and
    /// Chaudhuri 2025 against Gaussian DP. Threat models: every iterate visible; the released
    /// model only.
    AuditRun(cli::audit_run::AuditRunArgs),
    /// Clip-norm study (Section 5.2, Figure 1, Tables 3-7): accuracy against tau.
    Clipnorm(Box<cli::clipnorm::ClipnormArgs>),
    /// Run one experiment spec (Monte Carlo rate check): results, report and plots.
    Run(cli::run::RunArgs),
    /// Run every experiment spec in simulations/ and print the verification table.
    Verify(cli::verify::VerifyArgs),
    /// Clip-norm law: sweep constant clip norms at every phi, fit how the best clip norm and
    /// the best risk scale with phi and k, and what tau = max G_i (uniform Lipschitz) costs.
    ///
    /// Runs every spec with a [clip_sweep] table in simulations/cliplaw/ (quick scale: minutes;
    /// --full: the committed results of paper_refs/cliplaw.md). Each spec is also a `run` /
    /// `merge` spec (shards, --resume).
    Cliplaw(cli::cliplaw::CliplawArgs),
    /// Worst case: search each upper bound's instance class for the data that make DP-SGD with
    /// the theorem's schedule do worst against its explicit bound; every reported number is a
    /// fresh re-estimate (exit 1 on a violation that survives a large re-check).
    ///
    /// Runs every spec with a [search] table in simulations/worstcase/ (quick scale: under a
    /// minute; --full --report paper_refs/worstcase.md: the committed report).
    Worstcase(cli::worstcase::WorstcaseArgs),
    /// Merge the shards of a sharded run into exactly what an unsharded run writes.
    Merge(cli::merge::MergeArgs),
}

/// The examples that end each command's `--help`, by command path; each runs as printed from
/// the repository root (tests/it/help.rs runs the quick ones).
const EXAMPLES: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "dpsgd-lab verify",
            "dpsgd-lab privacy epsilon --epochs 30 --batch-size 256 --n 60000 --z 1.1",
        ],
    ),
    (
        "train",
        &[
            "dpsgd-lab train --config simulations/example.toml",
            "dpsgd-lab train --config simulations/example.toml --accountant pld --json",
        ],
    ),
    (
        "data",
        &["dpsgd-lab data describe --csv data/wine.csv --label target"],
    ),
    (
        "data describe",
        &[
            "dpsgd-lab data describe --csv data/wine.csv --label target --standardize",
            "dpsgd-lab data describe --generator simulations/generator_pareto.toml --loss huber",
        ],
    ),
    (
        "data generate",
        &[
            "dpsgd-lab data generate --generator simulations/generator_pareto.toml --out /tmp/pareto.csv",
        ],
    ),
    (
        "lower-bound",
        &["dpsgd-lab lower-bound --n 1000 10000 --d 8 --k 2 --epsilon 1 --delta 1e-5"],
    ),
    (
        "theory",
        &["dpsgd-lab theory phi --n 10000 --d 20 --epsilon 1 --delta 1e-5 --nu 1"],
    ),
    (
        "theory schedule",
        &[
            "dpsgd-lab theory schedule --theorem J.1 --phi 0.01 --k 3 --G 1 --gamma 0.5 --C 1 --dist0 1",
            "dpsgd-lab theory schedule --theorem 6.5 --n 10000 --d 20 --epsilon 1 --delta 1e-5 --nu 1 --k 3 --G 1 --D 1 --dist0 1 --C 1",
        ],
    ),
    (
        "theory phi",
        &[
            "dpsgd-lab theory phi --n 10000 --d 20 --epsilon 1 --delta 1e-5 --nu 1",
            "dpsgd-lab theory phi --d 20 --epsilon 1 --delta 1e-5 --nu 1 --phi 0.01",
        ],
    ),
    (
        "theory alpha",
        &["dpsgd-lab theory alpha --config simulations/example.toml --tau 1 --starts 4 --iters 50"],
    ),
    (
        "privacy",
        &["dpsgd-lab privacy epsilon --q 0.01 --steps 10000 --z 1 --accountant pld"],
    ),
    (
        "privacy epsilon",
        &[
            "dpsgd-lab privacy epsilon --epochs 30 --batch-size 256 --n 60000 --z 1.1",
            "dpsgd-lab privacy epsilon --phase q=0.01,z=1.0,steps=1000 --phase q=0.02,z=0.8,steps=500",
        ],
    ),
    (
        "privacy calibrate",
        &[
            "dpsgd-lab privacy calibrate --epsilon 2 --epochs 30 --batch-size 256 --n 60000",
            "dpsgd-lab privacy calibrate --epsilon 2 --q 0.01 --steps 1000 --accountant pld",
        ],
    ),
    (
        "privacy zcdp",
        &["dpsgd-lab privacy zcdp --epsilon 1 --delta 1e-5"],
    ),
    (
        "audit",
        &[
            "dpsgd-lab audit --q 1 --steps 10 --z 1 --trials 1000",
            "dpsgd-lab audit --q 1 --steps 100 --epsilon 2 --trials 100000",
        ],
    ),
    (
        "audit-run",
        &["dpsgd-lab audit-run --config simulations/audit/one_run_q1.toml --canaries 1000"],
    ),
    (
        "clipnorm",
        &[
            "dpsgd-lab clipnorm recommend --csv data/breast_cancer.csv --label target --epsilon 2 --feature-ranges data/breast_cancer.ranges.csv",
            "dpsgd-lab clipnorm --config simulations/clipnorm_wine.toml --quick",
        ],
    ),
    (
        "clipnorm pipeline",
        &["dpsgd-lab clipnorm pipeline --seeds 1"],
    ),
    (
        "clipnorm recommend",
        &[
            "dpsgd-lab clipnorm recommend --csv data/breast_cancer.csv --label target --epsilon 2 --feature-ranges data/breast_cancer.ranges.csv",
        ],
    ),
    (
        "run",
        &[
            "dpsgd-lab run simulations/thm62_j1_huber.toml",
            "dpsgd-lab run simulations/thm62_j1_huber.toml --shard 1/2",
        ],
    ),
    (
        "verify",
        &["dpsgd-lab verify", "dpsgd-lab verify --only huber"],
    ),
    (
        "cliplaw",
        &[
            "dpsgd-lab cliplaw --only appendix_l",
            "dpsgd-lab run simulations/cliplaw/cliplaw_appendix_l.toml --shard 1/2",
        ],
    ),
    (
        "worstcase",
        &[
            "dpsgd-lab worstcase --only j1",
            "dpsgd-lab worstcase --only k1 --out results/worstcase-k1 --json",
        ],
    ),
    (
        "merge",
        &[
            "dpsgd-lab run simulations/thm62_j1_huber.toml --shard 1/2",
            "dpsgd-lab run simulations/thm62_j1_huber.toml --shard 2/2",
            "dpsgd-lab merge simulations/thm62_j1_huber.toml",
        ],
    ),
];

/// Ends the `--help` of `cmd` (at command path `path`) and of its subcommands with their
/// [`EXAMPLES`].
fn examples(mut cmd: clap::Command, path: &str) -> clap::Command {
    if let Some((_, lines)) = EXAMPLES.iter().find(|(p, _)| *p == path) {
        let lines: Vec<String> = lines.iter().map(|l| format!("  {l}")).collect();
        cmd = cmd.after_help(format!("Examples:\n{}", lines.join("\n")));
    }
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        let sub = format!("{path} {name}");
        cmd = cmd.mut_subcommand(&name, |s| examples(s, sub.trim_start()));
    }
    cmd
}

/// Negative numbers are values everywhere (`--z -1`), so that the error names the flag.
fn negatives(cmd: clap::Command) -> clap::Command {
    cmd.allow_negative_numbers(true).mut_subcommands(negatives)
}

fn parse() -> Result<Cli, clap::Error> {
    let matches = examples(negatives(Cli::command()), "").try_get_matches()?;
    Cli::from_arg_matches(&matches)
}

/// The commands whose outputs are seeded measurements (simulations, audits on generated data,
/// the clip-norm study, the recipe measured over seeds), never private releases.
fn measurement(c: &Command) -> Option<&'static str> {
    Some(match c {
        Command::Run(_) => "run",
        Command::Verify(_) => "verify",
        Command::Cliplaw(_) => "cliplaw",
        Command::Worstcase(_) => "worstcase",
        Command::Audit(_) => "audit",
        Command::Clipnorm(a) if a.command.is_none() => "clipnorm (the study)",
        Command::Clipnorm(a)
            if matches!(a.command, Some(cli::clipnorm::ClipnormCommand::Pipeline(_))) =>
        {
            "clipnorm pipeline"
        }
        _ => return None,
    })
}

fn main() {
    // Die quietly on a closed pipe (`dpsgd-lab ... | head`), like other Unix tools, instead of
    // panicking inside println!.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread is spawned.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // Usage errors as clap formats them (which argument, the "similar subcommand" tip, the
    // `--help` hint) on stderr with exit code 2; `--help` and `--version` on stdout with 0.
    let cli = parse().unwrap_or_else(|e| e.exit());
    let result = match &cli.command {
        Command::Train(a) => cli::train::run(a),
        Command::Data(a) => cli::data::run(a),
        Command::LowerBound(a) => cli::lower_bound::run(a),
        Command::Theory(a) => cli::theory::run(a),
        Command::Privacy(a) => cli::privacy::run(a),
        Command::Audit(a) => cli::audit::run(a),
        Command::AuditRun(a) => cli::audit_run::run(a),
        Command::Clipnorm(a) => cli::clipnorm::run(a),
        Command::Run(a) => cli::run::run(a),
        Command::Verify(a) => cli::verify::run(a),
        Command::Cliplaw(a) => cli::cliplaw::run(a),
        Command::Worstcase(a) => cli::worstcase::run(a),
        Command::Merge(a) => cli::merge::run(a),
    };
    if let (Ok(()), Some(what)) = (&result, measurement(&cli.command)) {
        // Issue 56: seeded outputs say what they are (after the run, so an error stays one line).
        eprintln!(
            "note: `{what}` is a seeded measurement: the same seed gives the same numbers; {}",
            dpsgd_lab::rng::NOT_PRIVATE
        );
    }
    if let Err(e) = result {
        // Exit codes: 0 done (every check passed), 1 a check failed, 2 bad input or a failed run.
        if let Some(failed) = e.downcast_ref::<cli::CheckFailed>() {
            eprintln!("check failed: {failed}");
            std::process::exit(1);
        }
        // One line, no backtrace: the error chain joined by ": ".
        let msg = format!("{e:#}").replace('\n', " ");
        eprintln!("error: {}", dpsgd_lab::error::readable_numbers(&msg));
        std::process::exit(2);
    }
}
