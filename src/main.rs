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
    ///
    /// Example: dpsgd-lab audit --q 1 --steps 100 --epsilon 2 --delta 1e-5 --trials 100000
    Audit(cli::audit::AuditArgs),
    /// Clip-norm study (Section 5.2, Figure 1, Tables 3-7): accuracy against tau.
    Clipnorm(Box<cli::clipnorm::ClipnormArgs>),
    /// Run one experiment spec (Monte Carlo rate check): results, report and plots.
    Run(cli::run::RunArgs),
    /// Run every experiment spec in simulations/ and print the verification table.
    Verify(cli::verify::VerifyArgs),
    /// Merge the shards of a sharded run into exactly what an unsharded run writes.
    Merge(cli::merge::MergeArgs),
}

/// Negative numbers are values everywhere (`--z -1`), so that the error names the flag.
fn negatives(cmd: clap::Command) -> clap::Command {
    cmd.allow_negative_numbers(true).mut_subcommands(negatives)
}

fn parse() -> Result<Cli, clap::Error> {
    let matches = negatives(Cli::command()).try_get_matches()?;
    Cli::from_arg_matches(&matches)
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
        Command::Clipnorm(a) => cli::clipnorm::run(a),
        Command::Run(a) => cli::run::run(a),
        Command::Verify(a) => cli::verify::run(a),
        Command::Merge(a) => cli::merge::run(a),
    };
    if let Err(e) = result {
        // One line, no backtrace: the error chain joined by ": ".
        let msg = format!("{e:#}").replace('\n', " ");
        eprintln!("error: {}", dpsgd_lab::error::readable_numbers(&msg));
        std::process::exit(2);
    }
}
