//! `dpsgd-lab clipnorm --config simulations/clipnorm_digits.toml [--quick] [--resume]`: the
//! clip-norm study of Section 5.2 (Figure 1, Tables 3-7) on one data set, with the methods
//! comparison with adaptive and automatic clipping; `dpsgd-lab clipnorm recommend --csv FILE --label COL --epsilon E`:
//! the recommended clip norm in one line.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};

use dpsgd_lab::clipnorm::recommend::{
    AdviceData, AdviceRequest, ClipNormAdvice, NormsSource, PublicValues, recommend,
};
use dpsgd_lab::clipnorm::train_config::train_config;
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
    #[arg(long, conflicts_with = "fresh")]
    pub resume: bool,
    /// Discard the finished cells of an existing results file of --out and start over.
    #[arg(long)]
    pub fresh: bool,
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
/// study), then DP-SGD calibrated to the rest of the budget (basic composition). By default the
/// means and scales are released privately first (or given as public), and a private range check
/// refuses a candidate range that misses the data, so the printed (epsilon, delta) covers every
/// step: standardization + range check + RNMM + DP-SGD. The train config it prints carries that
/// budget into `train`.
#[derive(Debug, Args)]
pub struct RecommendArgs {
    /// CSV file with a header row (e.g. data/wine.csv).
    #[arg(long)]
    pub csv: PathBuf,
    /// Name of the label column (class indices 0..m-1).
    #[arg(long)]
    pub label: String,
    /// Total privacy budget epsilon (RNMM + DP-SGD).
    #[arg(long, visible_alias = "eps")]
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
    #[arg(long, conflicts_with = "epochs", visible_alias = "T")]
    pub steps: Option<usize>,
    /// DP-SGD epochs E instead of --steps: T = ceil(E n / B), n the training rows.
    #[arg(long)]
    pub epochs: Option<f64>,
    /// Hold out this fraction of the rows as a test set: every private statistic uses the
    /// training part only, and the train config carries the split (default: no split).
    #[arg(long)]
    pub test_fraction: Option<f64>,
    /// Seed of the train/test split (default: --seed).
    #[arg(long, requires = "test_fraction")]
    pub split_seed: Option<u64>,
    /// Expected batch size B (q = B / n). Default: min(500, n / 10), as in the study.
    #[arg(long)]
    pub batch_size: Option<f64>,
    /// Read per-sample norms from this CSV column instead of computing G_i (needs --lo, --hi).
    #[arg(long, conflicts_with = "norms")]
    pub norms_column: Option<String>,
    /// Read per-sample norms from this file, one value per CSV row (needs --lo, --hi).
    #[arg(long)]
    pub norms: Option<PathBuf>,
    /// Standardize the features before computing G_i (the default for the loss's own G_i; with
    /// --norms or --norms-column, only when given). The default candidate range assumes
    /// standardized features. The means and scales are a DP estimate (per-feature bounds chosen
    /// by an exponential mechanism on a public grid, then Gaussian noisy sums) costing
    /// --std-share of epsilon and of delta, or public values from --public-scales (no cost).
    /// Unlike the clip-norm study (the paper's protocol, whose standardization is NOT private),
    /// the guarantee printed here covers standardization, RNMM and DP-SGD together.
    #[arg(long, conflicts_with = "no_standardize")]
    pub standardize: bool,
    /// Use the raw features (no standardization, no cost). The default candidate range then
    /// rarely fits: the range check refuses when most G_i lie outside it.
    #[arg(long)]
    pub no_standardize: bool,
    /// Fraction of epsilon and of delta spent on the private standardization, in (0, 1).
    #[arg(long, conflicts_with = "no_standardize")]
    pub std_share: Option<f64>,
    /// File of public bounds C_j on |x_j|, one per feature in column order (data independent,
    /// e.g. from the data set's documentation): the private standardization then skips its
    /// private bounds.
    #[arg(long, conflicts_with_all = ["no_standardize", "public_scales"])]
    pub feature_bounds: Option<PathBuf>,
    /// File of public per-feature "mean,scale" lines in column order (data independent):
    /// standardization at no privacy cost.
    #[arg(long, conflicts_with_all = ["no_standardize", "std_share"])]
    pub public_scales: Option<PathBuf>,
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
    /// epsilon of the private range check (a Laplace count of the G_i outside [lo, hi], spent
    /// from the budget); the command refuses when the noisy count exceeds n / 2. 0 skips it.
    #[arg(long, default_value_t = dpsgd_lab::clipnorm::recommend::DEFAULT_CHECK_EPSILON)]
    pub check_epsilon: f64,
    /// Step size eta written into the train config (a public choice: tuning it on the data
    /// would cost budget).
    #[arg(long, default_value_t = dpsgd_lab::clipnorm::train_config::DEFAULT_LEARNING_RATE)]
    pub learning_rate: f64,
    /// Write the train config (the TOML printed below the recommendation) to FILE.
    #[arg(long)]
    pub write_config: Option<PathBuf>,
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
        data: AdviceData::Csv {
            path: a.csv.clone(),
            label: a.label.clone(),
        },
        loss: a.loss.clone(),
        // Standardized by default for the loss's G_i; user-supplied norms do not depend on the
        // features' scale, so they are standardized only when asked.
        // (the standardization options imply it).
        standardize: a.standardize
            || a.std_share.is_some()
            || a.feature_bounds.is_some()
            || a.public_scales.is_some()
            || (!a.no_standardize && norms == NormsSource::Lipschitz),
        std_share: a.std_share,
        feature_bounds: a.feature_bounds.clone().map(PublicValues::File),
        public_scales: a.public_scales.clone().map(PublicValues::File),
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
        check_epsilon: Some(a.check_epsilon),
        test_fraction: a.test_fraction,
        split_seed: a.split_seed.unwrap_or(a.seed),
        epochs: a.epochs,
    })?;
    print_advice(&advice);
    let mut toml = train_config(&advice, a.learning_rate)?;
    if let Some(p) = &a.write_config {
        // The data path as the written file reads it: relative to that file's folder.
        toml = dpsgd_lab::config::rebase_data_path(&toml, p);
    }
    println!("train config (paste into a file for `dpsgd-lab train --config FILE`):");
    print!("{toml}");
    if let Some(p) = &a.write_config {
        std::fs::write(p, &toml)
            .map_err(|e| dpsgd_lab::error::Error::io(p.display().to_string(), e))?;
        println!("wrote {}", p.display());
    }
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
    match &v.standardization {
        None => println!("  standardization: none (raw features)"),
        Some(s) if s.method == "public" => println!(
            "  standardization: public means and scales given by the user (eps = 0, delta = 0)"
        ),
        Some(s) => println!(
            "  standardization: DP estimate ({}), eps = {:.4}, delta = {:.3e} (rho = {:.3e}, \
             noise sd {:.3} on each sum)",
            s.method, s.epsilon, s.delta, s.rho, s.sigma
        ),
    }
    if let Some(sp) = &v.split {
        println!(
            "  split: test fraction {}, split seed {}: n_train = {} (every private statistic), \
             n_test = {} (held out)",
            sp.test_fraction, sp.seed, v.n, v.n_test
        );
    }
    match &v.range_check {
        Some(c) => println!(
            "  range check: eps = {:.4}, noisy count of values outside [{:.4}, {:.4}]: {:.0} of {}",
            c.epsilon, v.candidates_lo, v.candidates_hi, c.noisy_outside, c.n
        ),
        None => println!("  range check: skipped (--check-epsilon 0)"),
    }
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
    if let Some(s) = &v.standardization
        && s.relative_noise() > dpsgd_lab::privacy::standardize::NOISY_WARNING
    {
        println!(
            "  note: the private means and scales are mostly noise here (noise sd / noisy count = \
             {:.2} of each feature's bound); give public values with --public-scales or \
             --feature-bounds, or raise --std-share",
            s.relative_noise()
        );
    }
    println!("  recommended clip norm: tau = {:.4}", v.clip_norm);
    println!(
        "  epsilon left for DP-SGD: {:.4} (delta = {:.3e})",
        v.dpsgd_epsilon, v.dpsgd_delta
    );
    let std_eps = v.standardization.as_ref().map_or(0.0, |s| s.epsilon);
    let check_eps = v.range_check.as_ref().map_or(0.0, |c| c.epsilon);
    println!(
        "  budget split (basic composition): standardization {:.4} + range check {:.4} + RNMM \
         {:.4} + DP-SGD {:.4} = {:.4} (of eps = {}), delta {:e} in total",
        std_eps,
        check_eps,
        v.rnmm_epsilon,
        v.dpsgd_epsilon,
        v.total_epsilon,
        v.epsilon,
        v.total_delta
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
    let mut cfg: StudyConfig = load_toml(config)?;
    cfg.data.resolve_against(config)?;
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
            fresh: args.fresh,
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
        println!(
            "  note: the real data sets are standardized with their own means and scales (the \
             paper's protocol), which is NOT private: the (epsilon, delta) of these results \
             covers DP-SGD and RNMM, not standardization"
        );
        for r in &outcome.recommendations {
            println!("  {}", r.line);
        }
        for f in &outcome.files {
            println!("  wrote {f}");
        }
    }
    Ok(())
}
