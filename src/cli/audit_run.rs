//! `dpsgd-lab audit-run`: audit a `train` config in one training run with many canaries.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use dpsgd_lab::audit::Fault;
use dpsgd_lab::audit::one_run::{Bound, OneRunConfig, OneRunReport, run_one_run};
use dpsgd_lab::config::TrainConfig;

/// Arguments of `audit-run` (its help text is the subcommand's doc comment in main.rs).
#[derive(Debug, Args)]
pub struct AuditRunArgs {
    /// The `train` config to audit (the same file `dpsgd-lab train --config` reads).
    #[arg(long)]
    pub config: PathBuf,
    /// Canaries m of each kind, each included with probability 1/2.
    #[arg(long, default_value_t = 1000)]
    pub canaries: usize,
    /// Seed of the inclusion bits and the canaries (the auditor's secret; default: the config's
    /// seed), and of the run on generated data. On a CSV the run's batches and noise come from
    /// the operating system's random source, as `train`'s do (unless --reproducible).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Research mode (the config's `reproducible = true`): the run on a CSV draws its batches
    /// and noise from the seeded streams, so the same seed gives the same audit: NOT a private
    /// release (the output and the ledger line say so).
    #[arg(long)]
    pub reproducible: bool,
    /// delta of the claim and the bounds (default: the config's, else 1e-5).
    #[arg(long)]
    pub delta: Option<f64>,
    /// Confidence 1 - beta of the lower bounds.
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,
    /// Print one JSON object as the last line.
    #[arg(long)]
    pub json: bool,
    /// Run even when the estimated work exceeds the limit.
    #[arg(long)]
    pub force: bool,
    /// A planted bug, for tests of the audit's exit status only: half-noise, no-clipping or
    /// double-rate (hidden from the help).
    #[arg(long, hide = true, value_parser = parse_fault)]
    pub plant_fault: Option<Fault>,
}

/// The hidden `--plant-fault` value.
fn parse_fault(s: &str) -> std::result::Result<Fault, String> {
    match s {
        "half-noise" => Ok(Fault::HalfNoise),
        "no-clipping" => Ok(Fault::NoClipping),
        "double-rate" => Ok(Fault::DoubleRate),
        _ => Err(format!(
            "{s:?} is not a fault: half-noise, no-clipping or double-rate"
        )),
    }
}

/// Runs `audit-run`: exit 0 when no lower bound exceeds the claim, 1 (a failed check) when one
/// does, 2 on bad input. The config's data paths are read relative to its folder, as `train`
/// reads them.
pub fn run(a: &AuditRunArgs) -> Result<()> {
    let mut train = TrainConfig::load(&a.config)?;
    train.reproducible |= a.reproducible;
    let secure = dpsgd_lab::train::releases_user_data(&train);
    let cfg = OneRunConfig {
        seed: a.seed.unwrap_or(train.seed),
        train,
        canaries: a.canaries,
        delta: a.delta,
        confidence: a.confidence,
        force: a.force,
        fault: a.plant_fault.unwrap_or(Fault::None),
    };
    let r = run_one_run(&cfg)?;
    print_report(&r);
    if secure {
        println!(
            "randomness: the run's batches and noise from the operating system's random source; \
             the canaries' inclusion bits from seed {}",
            r.seed
        );
    } else {
        println!(
            "randomness: seeded streams of seed {} (a measurement, {})",
            r.seed,
            dpsgd_lab::rng::NOT_PRIVATE
        );
    }
    if a.json {
        println!("{}", super::json::to_string(&r)?);
    }
    if let Some((threat, analysis, eps)) = r.caught() {
        return super::check_failed(format!(
            "the run is less private than claimed: {threat} epsilon_lb {eps:.4} by the {analysis} \
             analysis exceeds the claimed epsilon {:.4} ({}% confidence)",
            r.epsilon_claimed,
            100.0 * r.confidence
        ));
    }
    Ok(())
}

fn print_report(r: &OneRunReport) {
    println!(
        "one-run audit: q = {}, T = {}, z = {:.6}, delta = {:e}; n = {} rows + canaries = {} rows; \
         m = {} canaries of each kind, seed {}, {:.1} s",
        r.sample_rate,
        r.steps,
        r.noise_multiplier,
        r.delta,
        r.n,
        r.rows,
        r.canaries,
        r.seed,
        r.wall_time_s
    );
    println!(
        "claimed epsilon: RDP {:.4}, PLD {:.4} (ratios below are against {:.4}); Gaussian-DP mu of \
         the claim {:.4} ({})",
        r.epsilon_rdp,
        r.epsilon_pld,
        r.epsilon_claimed,
        r.mu_claimed,
        if r.fdp_exact {
            "exact: q = 1"
        } else {
            "guides k' only: with subsampling the f-DP analysis tests the PLD accountant's \
             curves"
        }
    );
    let conf = 100.0 * r.confidence;
    println!(
        "each epsilon_lb holds with {conf}% confidence: the run's epsilon at delta is at least it \
         unless an event of probability <= {:.2} occurred",
        1.0 - r.confidence
    );
    let b = |name: &str, x: &Bound| {
        let mu = match (x.mu_lb, x.noise_lb) {
            (Some(m), _) => format!(", mu >= {m:.4}"),
            (None, Some(z)) if z.is_finite() => format!(", rejects the PLD curve at z' >= {z:.4}"),
            _ => String::new(),
        };
        format!(
            "{name} epsilon_lb {:.4} (ratio {:.3}; k' = {}, {} guesses, {} correct{mu})",
            x.epsilon_lb, x.ratio, x.k, x.guesses, x.correct
        )
    };
    for t in &r.threats {
        println!(
            "{} / {} canaries ({} of {} included):",
            t.threat, t.canary, t.included, t.canaries
        );
        println!("  {}", b("(eps, delta) [Steinke et al.]:", &t.eps_delta));
        println!("  {}", b("f-DP [Mahloujifar et al.]:   ", &t.fdp));
    }
    if let Some(note) = &r.black_box_note {
        println!("note: {note}");
    }
}
