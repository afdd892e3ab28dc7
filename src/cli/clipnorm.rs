//! `dpsgd-lab clipnorm --config simulations/clipnorm_digits.toml [--quick] [--resume]`: the
//! clip-norm study of Section 5.2 (Figure 1, Tables 3-7) on one data set, with the methods
//! comparison of issue 16; `dpsgd-lab clipnorm recommend --csv FILE --label COL --epsilon E`:
//! the recommended clip norm in one line.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};

use dpsgd_lab::clipnorm::recommend::{AdviceRequest, ClipNormAdvice, NormsSource, recommend};
use dpsgd_lab::clipnorm::{RunOptions, StudyConfig, run_study};
use dpsgd_lab::config::load_toml;

/// Which clip norm to use: accuracy against tau, with the recommendation per epsilon; or
/// `clipnorm recommend` for one data set's recommended clip norm.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ClipnormArgs {
    #[command(subcommand)]
    pub command: Option<ClipnormCommand>,
    /// Study config (TOML): name, seed, [data], [model], [train], [clip], [rnmm], [theory],
    /// [methods].
    #[arg(long)]
    pub config: Option<PathBuf>,
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

#[derive(Debug, Subcommand)]
pub enum ClipnormCommand {
    /// The recommended clip norm for a CSV data set: tau = G_1 (Remark 5.6) selected privately
    /// by RNMM with a share of epsilon, the epsilon left for DP-SGD and its calibrated noise
    /// multiplier.
    Recommend(RecommendArgs),
}

/// `clipnorm recommend`: Remark 5.6's tau = G_1 = min_i G_i, selected with pure DP by Report
/// Noisy Max over log-spaced candidates (RNMM, as in the paper's Table 3 and the clip-norm
/// study), then DP-SGD calibrated to the rest of the budget (basic composition).
#[derive(Debug, Args)]
pub struct RecommendArgs {
    /// CSV file with a header row (e.g. data/wine.csv).
    #[arg(long)]
    pub csv: PathBuf,
    /// Name of the label column (class indices 0..m-1).
    #[arg(long)]
    pub label: String,
    /// Total privacy budget epsilon (RNMM + DP-SGD).
    #[arg(long)]
    pub epsilon: f64,
    /// delta of DP-SGD's (epsilon, delta) guarantee (RNMM is pure DP).
    #[arg(long, default_value_t = 1e-5)]
    pub delta: f64,
    /// Loss whose per-sample Lipschitz constants G(x, y) = sqrt(2 (||x||^2 + 1)) are used
    /// (Appendix D); logistic and softmax name the same multinomial logistic loss.
    #[arg(long, default_value = "logistic")]
    pub loss: String,
    /// Fraction of epsilon spent on RNMM, in (0, 1). Default: eps_RNMM = 0.3, as in the paper's
    /// Table 3 and the study (share = 0.3 / epsilon).
    #[arg(long)]
    pub share: Option<f64>,
    /// DP-SGD steps T. Default: 30 epochs of round(n / B) steps, as in the study.
    #[arg(long)]
    pub steps: Option<usize>,
    /// Expected batch size B (q = B / n). Default: min(500, n / 10), as in the study.
    #[arg(long)]
    pub batch_size: Option<f64>,
    /// Read per-sample norms from this CSV column instead of computing G_i (needs --lo, --hi).
    #[arg(long, conflicts_with = "norms")]
    pub norms_column: Option<String>,
    /// Read per-sample norms from this file, one value per CSV row (needs --lo, --hi).
    #[arg(long)]
    pub norms: Option<PathBuf>,
    /// Standardize the features (mean 0, variance 1) before computing G_i, as the study does;
    /// the default candidate range assumes standardized features.
    #[arg(long)]
    pub standardize: bool,
    /// Public lower end of the candidates. Default for the loss's G_i: G at x = 0 = sqrt 2.
    #[arg(long)]
    pub lo: Option<f64>,
    /// Public upper end. Default for the loss's G_i: 3 G at ||x||^2 = d = 3 sqrt(2 (d + 1)).
    #[arg(long)]
    pub hi: Option<f64>,
    /// Number of log-spaced candidates on [lo, hi].
    #[arg(long, default_value_t = 200)]
    pub grid_size: usize,
    /// Accountant calibrating DP-SGD's noise multiplier: rdp or pld.
    #[arg(long, default_value = "rdp")]
    pub accountant: String,
    /// Seed of the selection's randomness (the same seed gives the same recommendation).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print the recommendation as one JSON object on the last line.
    #[arg(long)]
    pub json: bool,
}

fn run_recommend(a: &RecommendArgs) -> Result<()> {
    let norms = match (&a.norms_column, &a.norms) {
        (Some(c), _) => NormsSource::Column(c.clone()),
        (None, Some(p)) => NormsSource::File(p.clone()),
        (None, None) => NormsSource::Lipschitz,
    };
    let advice = recommend(&AdviceRequest {
        csv: a.csv.clone(),
        label: a.label.clone(),
        loss: a.loss.clone(),
        standardize: a.standardize,
        epsilon: a.epsilon,
        delta: a.delta,
        share: a.share,
        steps: a.steps,
        batch_size: a.batch_size,
        norms,
        lo: a.lo,
        hi: a.hi,
        grid_size: a.grid_size,
        accountant: a.accountant.clone(),
        seed: a.seed,
    })?;
    print_advice(&advice);
    if a.json {
        println!("{}", super::json::to_string(&advice)?);
    }
    Ok(())
}

fn print_advice(v: &ClipNormAdvice) {
    let src = if v.norms_source == "lipschitz" {
        format!("G_i = G(x_i, y_i) of the {} loss", v.loss)
    } else {
        format!("per-sample norms from {}", v.norms_source)
    };
    println!("clip-norm recommendation (Remark 5.6: tau = G_1, selected privately by RNMM)");
    println!(
        "  data: {} (label '{}'), n = {}, d = {}; {src}",
        v.csv, v.label, v.n, v.d
    );
    println!(
        "  RNMM: eps = {:.4} ({:.1}% of eps = {}), {} log-spaced candidates on [{:.4}, {:.4}], seed {}",
        v.rnmm_epsilon,
        100.0 * v.share,
        v.epsilon,
        v.grid_size,
        v.candidates_lo,
        v.candidates_hi,
        v.seed
    );
    println!("  recommended clip norm: tau = {:.4}", v.clip_norm);
    println!(
        "  epsilon left for DP-SGD: {:.4} (delta = {:e})",
        v.dpsgd_epsilon, v.delta
    );
    println!(
        "  noise multiplier: z = {:.4} for T = {} steps at batch size B = {} (q = {:.4}), {} accountant",
        v.noise_multiplier, v.steps, v.batch_size, v.q, v.accountant
    );
    if v.at_range_end {
        println!(
            "  note: the largest candidate was selected; the range may be too narrow for these \
             data (standardize the features, or raise --hi)"
        );
    }
}

pub fn run(args: &ClipnormArgs) -> Result<()> {
    if let Some(ClipnormCommand::Recommend(a)) = &args.command {
        return run_recommend(a);
    }
    let Some(config) = &args.config else {
        bail!("clipnorm needs --config FILE (the study), or the subcommand `recommend`");
    };
    let cfg: StudyConfig = load_toml(config)?;
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
        println!("{}", super::json::to_string(&outcome)?);
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
