//! `dpsgd-lab clipnorm --config simulations/clipnorm_digits.toml [--quick] [--resume]`: the
//! clip-norm study of Section 5.2 (Figure 1, Tables 3-7) on one data set, with the methods
//! comparison with adaptive and automatic clipping; `dpsgd-lab clipnorm recommend --csv FILE --label COL --epsilon E`:
//! the recommended clip norm in one line.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};

use dpsgd_lab::clipnorm::recommend::plan::default_ledger;
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
    /// Keep finished runs only if their fingerprint matches (a changed study config is an error, not a
    /// restart). Without it a rerun reuses matching runs anyway and starts over where the study config
    /// changed.
    #[arg(long, conflicts_with = "fresh")]
    pub resume: bool,
    /// Discard every finished run and start over (also decides the cases a rerun refuses: a
    /// folder of another study, a corrupted line).
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
    Recommend(Box<RecommendArgs>),
    /// The private recipe (`recommend` then `train`) measured end to end on the shipped data
    /// sets and a synthetic one, beside the paper's protocol, a practitioner's baseline and a
    /// non-private run: the table of paper_refs/pipeline.md.
    Pipeline(PipelineArgs),
}

/// `clipnorm pipeline`: the table of paper_refs/pipeline.md.
#[derive(Debug, Args)]
pub struct PipelineArgs {
    /// Seeds per cell (0..seeds).
    #[arg(long, default_value_t = 10)]
    pub seeds: u64,
    /// Also write the table (markdown) and every cell (JSON lines) to this folder.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn run_pipeline(a: &PipelineArgs) -> Result<()> {
    use dpsgd_lab::pipeline;
    if a.seeds == 0 {
        bail!("--seeds must be >= 1");
    }
    let start = std::time::Instant::now();
    let data = pipeline::datasets(".")?;
    let cells = pipeline::cells(&data, a.seeds)?;
    let table = pipeline::markdown(&cells);
    print!("{table}");
    for c in cells.iter().filter(|c| !c.refusals.is_empty()) {
        for r in &c.refusals {
            println!("refused: {} eps {}: {r}", c.data, c.epsilon);
        }
    }
    println!(
        "{} cells, {} seeds each, in {:.0} s",
        cells.len(),
        a.seeds,
        start.elapsed().as_secs_f64()
    );
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir)
            .map_err(|e| dpsgd_lab::error::Error::io(dir.display().to_string(), e))?;
        let md = dir.join("pipeline_table.md");
        std::fs::write(&md, &table)
            .map_err(|e| dpsgd_lab::error::Error::io(md.display().to_string(), e))?;
        let mut lines = String::new();
        for c in &cells {
            lines.push_str(&super::json::to_string(c)?);
            lines.push('\n');
        }
        let js = dir.join("pipeline_cells.jsonl");
        std::fs::write(&js, lines)
            .map_err(|e| dpsgd_lab::error::Error::io(js.display().to_string(), e))?;
        println!("wrote {} and {}", md.display(), js.display());
    }
    Ok(())
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
    /// Total privacy budget epsilon for everything the command and the training run do with the
    /// data: private standardization, the range check, the clip-norm selection and DP-SGD
    /// (split by basic composition; the split is printed).
    #[arg(long, visible_alias = "eps")]
    pub epsilon: f64,
    /// Total delta of the whole recipe: a part goes to private standardization when it runs, the rest
    /// to DP-SGD (the range check and the clip-norm selection are pure DP).
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
    /// Seed of the public choices: the train/test split's hash key (unless --split-seed) and
    /// the written config's seed. The mechanisms' noise comes from the operating system's
    /// random source, so two runs release different noise and the seed does not replay it
    /// (with --reproducible, the seed sets the noise too).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Research mode: the mechanisms draw from seeded streams, so the same seed gives the same
    /// recommendation. Anyone who knows the seed can then replay the noise: NOT a private
    /// release (the output, the written config and the ledger line say so).
    #[arg(long)]
    pub reproducible: bool,
    /// epsilon of the private range check (a Laplace count of the G_i outside [lo, hi], spent
    /// from the budget); the command refuses when the noisy count exceeds n / 2. 0 skips it.
    /// Default 0.05, and 0 with --feature-ranges (the range is then exact).
    #[arg(long)]
    pub check_epsilon: Option<f64>,
    /// File of public per-feature ranges ("feature,min,max" lines in column order, from the
    /// data set's documentation, never from its values; data/*.ranges.csv for the shipped
    /// sets): features are clamped and scaled into [-1, 1] at no privacy cost. The best choice
    /// wherever such ranges are known.
    #[arg(long, conflicts_with_all = ["no_standardize", "public_scales", "feature_bounds", "std_share"])]
    pub feature_ranges: Option<PathBuf>,
    /// The data set's privacy ledger: every spend on the data is recorded there, and a request
    /// above what it has left is refused (default: CSV.ledger.jsonl beside the CSV; made with
    /// budget (--epsilon, --delta) when absent).
    #[arg(long)]
    pub ledger: Option<PathBuf>,
    /// Step size eta written into the train config (a public choice; default: the rule
    /// sqrt(p) / (tau sqrt(1 + p z^2 / B^2) sqrt(T)) from public quantities, no cost).
    #[arg(long)]
    pub learning_rate: Option<f64>,
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
            || a.feature_ranges.is_some()
            || (!a.no_standardize && norms == NormsSource::Lipschitz),
        feature_ranges: a.feature_ranges.clone().map(PublicValues::File),
        ledger: Some(a.ledger.clone().unwrap_or_else(|| default_ledger(&a.csv))),
        learning_rate: a.learning_rate,
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
        accountant: dpsgd_lab::privacy::AccountantKind::parse(&a.accountant)?,
        seed: a.seed,
        reproducible: a.reproducible,
        check_epsilon: a.check_epsilon,
        test_fraction: a.test_fraction,
        split_seed: a.split_seed.unwrap_or(a.seed),
        epochs: a.epochs,
    })?;
    for n in &advice.ledger_notes {
        eprintln!("{n}");
    }
    print_advice(&advice);
    let mut toml = train_config(&advice)?;
    if let Some(p) = &a.write_config {
        // The data and ledger paths as the written file reads them: relative to its folder.
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
    if let Some(sp) = &v.split {
        println!(
            "  split: hash of each row and seed {}, test fraction {}: n_train = {} (every private \
             statistic), n_test = {} (held out); the row counts are treated as public",
            sp.seed, sp.test_fraction, v.n, v.n_test
        );
    }
    match (&v.preprocess, &v.standardization) {
        (None, _) => println!("  preprocessing: none (raw features)"),
        (Some(p), None) => println!("  preprocessing: {} (no privacy cost)", p.source),
        (Some(_), Some(s)) if s.method == "public" => {
            println!("  preprocessing: public means and scales given by the user (no privacy cost)")
        }
        (Some(_), Some(s)) => {
            println!(
                "  preprocessing: private standardization ({}), eps = {:.4}, delta = {:.3e} \
                 (rho = {:.3e}, noise sd {:.3} on each sum)",
                s.method, s.epsilon, s.delta, s.rho, s.sigma
            );
            if !v.noisy_features.is_empty() {
                let list: Vec<String> = v
                    .noisy_features
                    .iter()
                    .map(|j| (j + 1).to_string())
                    .collect();
                println!(
                    "  note: {} of {} features have a released variance that is mostly noise \
                     (noise sd > half of it) and use their bound's scale instead: features {}",
                    v.noisy_features.len(),
                    v.d,
                    list.join(" ")
                );
            }
        }
    }
    match &v.range_check {
        Some(c) => println!(
            "  range check: eps = {:.4}, noisy count of values outside [{:.4}, {:.4}]: {:.0} of {}",
            c.epsilon,
            v.candidates_lo,
            v.candidates_hi,
            c.noisy_outside.clamp(0.0, c.n as f64),
            c.n
        ),
        None => println!(
            "  range check: not run ([{:.4}, {:.4}] holds every G_i by construction, or \
             --check-epsilon 0)",
            v.candidates_lo, v.candidates_hi
        ),
    }
    println!(
        "  RNMM: eps = {:.4} ({:.1}% of eps = {}), {} log-spaced candidates on [{:.4}, {:.4}]",
        v.rnmm_epsilon,
        100.0 * v.share,
        v.epsilon,
        v.grid_size,
        v.candidates_lo,
        v.candidates_hi,
    );
    println!("  recommended clip norm: tau = {:.4}", v.clip_norm);
    if v.reproducible {
        println!(
            "  reproducible mode: every mechanism's noise follows seed {}, so anyone who knows \
             the seed can replay it: {}",
            v.seed,
            dpsgd_lab::rng::NOT_PRIVATE
        );
    } else {
        println!(
            "  randomness: every mechanism's noise from the operating system's random source \
             (the seed keys only the split)"
        );
    }
    let parts: Vec<String> = v
        .stages
        .iter()
        .map(|s| format!("{} {:.4}", s.stage, s.epsilon))
        .collect();
    println!(
        "  budget split: {} composed to {:.4} (of eps = {}), delta {:e} in total; basic \
         composition would leave DP-SGD {:.4} (+{:.4} by composing)",
        parts.join(" + "),
        v.total_epsilon,
        v.epsilon,
        v.total_delta,
        v.basic_dpsgd_epsilon,
        v.dpsgd_epsilon - v.basic_dpsgd_epsilon
    );
    println!(
        "  noise multiplier: z = {:.4} for T = {} steps at batch size B = {} (q = {:.4}), {} accountant",
        v.noise_multiplier, v.steps, v.batch_size, v.q, v.accountant
    );
    println!(
        "  step size: eta = {:.4} ({}); output: the average iterate",
        v.learning_rate, v.learning_rate_rule
    );
    if let (Some(l), Some((e, d))) = (&v.ledger, v.ledger_remaining) {
        println!(
            "  privacy ledger {l}: epsilon {e:.4} and delta {d:.3e} left, for DP-SGD (`train`)"
        );
    }
    if v.at_range_end {
        println!(
            "  note: the largest candidate was selected; the range may be too narrow for these \
             data (scale the features, or raise --hi)"
        );
    }
}

pub fn run(args: &ClipnormArgs) -> Result<()> {
    match &args.command {
        Some(ClipnormCommand::Recommend(a)) => return run_recommend(a),
        Some(ClipnormCommand::Pipeline(a)) => return run_pipeline(a),
        None => {}
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
