//! The `dpsgd-lab` command line. Thin: parsing and printing only; the work is in the library.

mod cli;

use clap::{Parser, Subcommand};

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
    /// Privacy accounting: epsilon of a run, noise calibration, zCDP conversion.
    Privacy(cli::privacy::PrivacyArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Train(a) => cli::train::run(a),
        Command::Privacy(a) => cli::privacy::run(a),
    };
    if let Err(e) = result {
        // One line, no backtrace: the error chain joined by ": ".
        eprintln!("error: {}", format!("{e:#}").replace('\n', " "));
        std::process::exit(2);
    }
}
