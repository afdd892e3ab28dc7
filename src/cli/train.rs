//! `dpsgd-lab train --config FILE.toml`: one DP-SGD run, summarized.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::Args;

use dpsgd_lab::config::{TrainConfig, load_toml};
use dpsgd_lab::dpsgd::{DpSgd, NoiseSpec, RunSummary};
use dpsgd_lab::privacy;
use dpsgd_lab::rng::{Purpose, stream};

/// Run DP-SGD (Algorithm 1) once and print a summary.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Experiment config (TOML): seed, [data], [loss], [dpsgd].
    #[arg(long)]
    pub config: PathBuf,
    /// Override the config's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print the summary as one JSON object on the last line.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &TrainArgs) -> Result<()> {
    let mut cfg: TrainConfig = load_toml(&args.config)?;
    if let Some(s) = args.seed {
        cfg.seed = s;
    }
    let start = Instant::now();
    let data = cfg
        .data
        .build(&mut stream(cfg.seed, cfg.replicate, Purpose::Data))?;
    let loss = cfg.loss.build(&data)?;
    let cal = match &cfg.dpsgd.noise {
        NoiseSpec::Target { accountant, .. } => Some(privacy::calibrator(accountant)?),
        _ => None,
    };
    let alg = DpSgd::new(cfg.dpsgd.clone(), data.n, cal.as_deref())?;
    let w0 = alg.initial_point(
        loss.param_dim(),
        &mut stream(cfg.seed, cfg.replicate, Purpose::Init),
    )?;
    let out = alg.run(loss.as_ref(), &data, cfg.seed, cfg.replicate)?;
    let summary = RunSummary::new(
        loss.as_ref(),
        &data,
        &alg,
        &w0,
        &out,
        start.elapsed().as_secs_f64(),
    );
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        let s = &summary;
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
        println!("  f(w_0)    = {:.6}", s.f_w0);
        println!(
            "  f(w_priv) = {:.6}   (random iterate t_hat = {})",
            s.f_w_priv, s.t_hat
        );
        println!("  f(w_T)    = {:.6}", s.f_w_last);
        println!("  f(w_avg)  = {:.6}", s.f_w_avg);
        println!("  ||grad f(w_priv)||^2 = {:.6e}", s.grad_norm_sq_w_priv);
        println!("  wall time = {:.3} s", s.wall_time_s);
    }
    Ok(())
}
