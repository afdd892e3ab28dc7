//! `dpsgd-lab train --config FILE.toml`: one DP-SGD run, summarized.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::Args;

use dpsgd_lab::config::{DataSpec, TrainConfig};
use dpsgd_lab::dpsgd::{AccountantKind, NoiseSpec};
use dpsgd_lab::error::fmt_num;
use dpsgd_lab::train::{ReportOptions, train_config};

/// Run DP-SGD (Algorithm 1) once and print a summary.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Experiment config (TOML): seed, [data], [loss], [dpsgd], and optionally [privacy] (a
    /// budget of which earlier steps spent a part, as `clipnorm recommend --write-config`
    /// writes it).
    #[arg(long)]
    pub config: PathBuf,
    /// Override the config's seed. On a CSV the seed keys only public choices (the hash
    /// split); DP-SGD's batches and noise come from the operating system's random source
    /// (with --reproducible, or generated data, the seed sets them too).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Research mode (the config's `reproducible = true`): DP-SGD on a CSV draws its batches and
    /// noise from the seeded streams, so the same seed gives the same run. Anyone who knows the
    /// seed can then replay the noise: NOT a private release (the output and the ledger line say
    /// so).
    #[arg(long)]
    pub reproducible: bool,
    /// Print the summary as one JSON object on the last line.
    #[arg(long)]
    pub json: bool,
    /// Accountant that reports the epsilon spent: rdp or pld (default: the config's target
    /// accountant, else rdp).
    #[arg(long)]
    pub accountant: Option<String>,
    /// delta at which to report the epsilon spent when the config states none (noise multiplier).
    #[arg(long, default_value_t = 1e-5)]
    pub delta: f64,
    /// Run even when the estimated work is above about an hour of one core (10^13 gradient
    /// coordinates: steps x batch size x parameters); without it such a run is refused.
    #[arg(long)]
    pub force: bool,
    /// No progress bar (it is drawn on stderr only, and only when stderr is a terminal).
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(args: &TrainArgs) -> Result<()> {
    let accountant = args
        .accountant
        .as_deref()
        .map(AccountantKind::parse)
        .transpose()?;
    let mut cfg = TrainConfig::load(&args.config)?;
    if let Some(s) = args.seed {
        cfg.seed = s;
    }
    cfg.reproducible |= args.reproducible;
    let standardized = matches!(&cfg.data, DataSpec::Csv(c) if c.standardize);
    let split = match &cfg.data {
        DataSpec::Csv(c) => c.split.clone(),
        _ => None,
    };
    let run = train_config(
        &cfg,
        &ReportOptions {
            accountant,
            delta: args.delta,
            force: args.force,
        },
        !args.quiet,
        Instant::now(),
    )?;
    if args.json {
        if standardized {
            eprintln!("note: {STANDARDIZE_NOTE}");
        }
        println!("{}", super::json::to_string(&run)?);
    } else {
        print_run(&run, &cfg, split.as_ref(), standardized);
    }
    Ok(())
}

/// The human-readable report of one run (`train` without `--json`).
fn print_run(
    run: &dpsgd_lab::train::TrainRun,
    cfg: &TrainConfig,
    split: Option<&dpsgd_lab::data::split::SplitSpec>,
    standardized: bool,
) {
    let s = &run.summary;
    println!(
        "DP-SGD run: {} loss, n = {}, d = {}, {} parameters",
        s.loss, s.n, s.d, s.params
    );
    println!(
        "  steps T = {}, expected batch b = {}, mean realized batch = {:.2}",
        s.steps, s.batch_size, s.mean_batch
    );
    println!(
        "  sigma_n = {:.6e} (noise multiplier z = {:.4}), clipped fraction = {:.4}",
        s.sigma_n, s.noise_multiplier, s.clipped_fraction
    );
    println!(
        "  training-set statistics below (f, gradient, train accuracy, clipped fraction, \
         realized batch) are NOT private: for your eyes, not for release"
    );
    println!(
        "  f(w_0)    = {:.6}   (the initial point: doing nothing)",
        s.f_w0
    );
    let rule = match s.output_rule.as_str() {
        "random_iterate" => format!("random iterate t_hat = {}", s.t_hat),
        "last_iterate" => "last iterate w_T".to_string(),
        "average_iterate" => "average iterate".to_string(),
        other => other.to_string(),
    };
    println!("  f(w_priv) = {:.6}   (output rule: {rule})", s.f_w_priv);
    println!("  f(w_T)    = {:.6}", s.f_w_last);
    println!("  f(w_avg)  = {:.6}", s.f_w_avg);
    println!("  ||grad f(w_priv)||^2 = {:.6e}", s.grad_norm_sq_w_priv);
    if s.f_w_priv.is_nan() || s.f_w_priv >= s.f_w0 {
        println!(
            "  warning: the private model is no better than doing nothing (f(w_priv) = {:.4} \
             >= f(w_0) = {:.4}); lower the learning rate or raise the budget",
            s.f_w_priv, s.f_w0
        );
    }
    if let Some(a) = &run.accuracy {
        match (a.test, &split) {
            (Some(t), Some(sp)) => println!(
                "  accuracy of w_priv: train {:.4} (n = {}), test {:.4} (n = {}; split \
                 test_fraction = {}, seed = {})",
                a.train, a.n_train, t, a.n_test, sp.test_fraction, sp.seed
            ),
            _ => println!(
                "  accuracy of w_priv: train {:.4} (n = {}), no test split",
                a.train, a.n_train
            ),
        }
    }
    println!(
        "  wall time = {:.3} s (work estimate {} gradient coordinates)",
        s.wall_time_s,
        fmt_num(run.work_estimate)
    );
    match &run.privacy {
        Some(p) => println!(
            "  privacy ({}): ({:.4}, {:.0e})-DP spent; nu_eff = {:.4}, phi = {:.4e}",
            p.accountant, p.epsilon_spent, p.delta, p.nu_eff, p.phi
        ),
        None => println!("  privacy: none (no noise)"),
    }
    print_budget(run);
    println!("  {}", randomness_line(run, cfg));
    if let Some(note) = run
        .privacy
        .as_ref()
        .and_then(|p| p.accountant_note.as_ref())
    {
        println!("  note: {note}");
    }
    if standardized {
        println!("  note: {STANDARDIZE_NOTE}");
    }
    if let (Some(p), NoiseSpec::Theorem34 { nu, epsilon, .. }) = (&run.privacy, &cfg.dpsgd.noise) {
        // Thm 3.4's nu is the unstated constant in sigma_n = sqrt(nu T log(1/delta)) tau /
        // (n eps): the theorem guarantees (eps, delta)-DP only for nu large enough, so the
        // noise it sets is not by itself an (eps, delta) guarantee; the accountant's number
        // above is the run's real epsilon.
        println!(
            "  Thm 3.4 with nu = {} promises epsilon = {}; the accountant finds {} spent. \
             nu is the theorem's unstated constant, not an (epsilon, delta) guarantee by \
             itself: nu = {} makes them agree (or use noise kind = \"target\").",
            fmt_num(*nu),
            fmt_num(*epsilon),
            fmt_num(p.epsilon_spent),
            fmt_num(p.nu_eff)
        );
    }
}

/// Where the run's batches and noise came from, and what that makes the output.
fn randomness_line(run: &dpsgd_lab::train::TrainRun, cfg: &TrainConfig) -> String {
    match (run.randomness, &cfg.data) {
        ("os", _) => "randomness: batches and noise from the operating system's random source                       (the seed does not replay them)"
            .to_string(),
        (_, DataSpec::Csv(_)) if cfg.dpsgd.noise != NoiseSpec::None => format!(
            "reproducible mode: batches and noise from seed {}: {}",
            cfg.seed,
            dpsgd_lab::rng::NOT_PRIVATE
        ),
        _ => format!(
            "randomness: seeded streams of seed {} (a measurement, {})",
            cfg.seed,
            dpsgd_lab::rng::NOT_PRIVATE
        ),
    }
}

/// Said with every `train` run whose CSV is standardized: `[data] standardize = true` uses the
/// data's own means and scales (as the paper's protocol and the clip-norm study do), which no
/// mechanism protects.
const STANDARDIZE_NOTE: &str = "the features were standardized with the data's own means and \
     scales ([data] standardize = true), which is NOT private: the (epsilon, delta) above covers \
     DP-SGD only, not standardization (clipnorm recommend --standardize releases them privately)";

/// The ledger's line (every recorded spend composed), or DP-SGD's alone without a ledger.
fn print_budget(run: &dpsgd_lab::train::TrainRun) {
    match (&run.budget, &run.privacy) {
        (Some(b), _) => {
            for n in &b.notes {
                eprintln!("{n}");
            }
            println!(
                "  privacy ledger (every recorded spend composed, this run included): epsilon = \
                 {:.4} of {} ({:.4} before; DP-SGD alone {:.4}), delta = {:.3e} ({:.3e} + {:.3e}) \
                 of {:e}",
                b.total_epsilon,
                fmt_num(b.epsilon),
                b.spent_before_epsilon,
                b.dpsgd_epsilon,
                b.total_delta,
                b.spent_before_delta,
                b.dpsgd_delta,
                b.delta
            )
        }
        (None, Some(p)) => println!(
            "  total privacy spent: epsilon = {:.4}, delta = {:.3e} (DP-SGD only; no \
             [privacy] budget in the config)",
            p.epsilon_spent, p.delta
        ),
        (None, None) => {}
    }
}
