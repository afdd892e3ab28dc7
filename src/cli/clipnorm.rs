//! `dpsgd-lab clipnorm --config simulations/clipnorm_digits.toml [--quick] [--resume]`: the
//! clip-norm study of Section 5.2 (Figure 1, Tables 3-7) on one data set.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use dpsgd_lab::clipnorm::{RunOptions, StudyConfig, run_study};
use dpsgd_lab::config::load_toml;

/// Which clip norm to use: accuracy against tau, with the recommendation per epsilon.
#[derive(Debug, Args)]
pub struct ClipnormArgs {
    /// Study config (TOML): name, seed, [data], [model], [train], [clip], [rnmm], [theory].
    #[arg(long)]
    pub config: PathBuf,
    /// Quick mode: the config's [quick] overrides (fewer epochs, runs and learning rates).
    #[arg(long)]
    pub quick: bool,
    /// Skip cells already in the results file of --out.
    #[arg(long)]
    pub resume: bool,
    /// Output directory (default: out/clipnorm/NAME).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Do not draw the figure.
    #[arg(long)]
    pub no_figure: bool,
    /// Print the summary as one JSON object on the last line.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &ClipnormArgs) -> Result<()> {
    let cfg: StudyConfig = load_toml(&args.config)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out/clipnorm").join(&cfg.name));
    let study = cfg.into_study(args.quick)?;
    let outcome = run_study(
        &study,
        &RunOptions {
            out,
            resume: args.resume,
            figure: !args.no_figure,
        },
    )?;
    if args.json {
        println!("{}", serde_json::to_string(&outcome)?);
    } else {
        let t = &outcome.table;
        println!(
            "clipnorm study '{}': {} cells trained, {} reused, {:.1} s",
            t.name, outcome.executed, outcome.reused, outcome.wall_time_s
        );
        if let (Some(g1), Some(gn)) = (t.g1, t.gn) {
            println!("  G_1 = {g1:.4}, G_n = {gn:.4}");
        }
        for r in &outcome.recommendations {
            println!("  {}", r.line);
        }
        for f in &outcome.files {
            println!("  wrote {f}");
        }
    }
    Ok(())
}
