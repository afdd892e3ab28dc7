//! `dpsgd-lab train --config FILE.toml`: one DP-SGD run, summarized.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::Args;
use serde::Serialize;

use dpsgd_lab::config::{TrainConfig, load_toml};
use dpsgd_lab::dpsgd::{DpSgd, NoiseSpec, RunSummary};
use dpsgd_lab::limits;
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
    /// Accountant that reports the epsilon spent: rdp or pld (default: the config's target
    /// accountant, else rdp).
    #[arg(long)]
    pub accountant: Option<String>,
    /// delta at which to report the epsilon spent when the config states none (noise multiplier).
    #[arg(long, default_value_t = 1e-5)]
    pub delta: f64,
    /// Run even when the estimated work exceeds the limit (see `limits::WORK_LIMIT`).
    #[arg(long)]
    pub force: bool,
}

/// The privacy a run actually has, by a real accountant, and the effective nu that connects it
/// to Theorem 3.4 and phi (Eq. 1).
#[derive(Debug, Serialize)]
struct PrivacyReport {
    accountant: String,
    delta: f64,
    /// epsilon spent by T compositions of the Poisson-subsampled Gaussian at (q, z).
    epsilon_spent: f64,
    /// z: the sum of clipped gradients gets N(0, z^2 tau^2 I).
    noise_multiplier: f64,
    /// nu_eff = (z eps / (q sqrt(T log(1/delta))))^2: Theorem 3.4's nu for this run.
    nu_eff: f64,
    /// phi = sqrt(nu_eff p log(1/delta)) / (n eps), Eq. (1), with p the number of parameters.
    phi: f64,
}

#[derive(Debug, Serialize)]
struct TrainReport {
    #[serde(flatten)]
    summary: RunSummary,
    /// Absent for a noiseless run (epsilon is infinite).
    privacy: Option<PrivacyReport>,
}

/// What the privacy of a run depends on, known before training.
struct PrivacyInputs {
    z: f64,
    n: usize,
    batch_size: f64,
    steps: usize,
    params: usize,
}

/// Names the input at fault when the privacy of a run cannot be accounted.
fn culprit(cfg: &TrainConfig, p: &PrivacyInputs, q: f64, why: &str) -> String {
    let source = match &cfg.dpsgd.noise {
        NoiseSpec::Theorem34 { nu, epsilon, delta } => format!(
            " (from [dpsgd] noise nu = {}, epsilon = {}, delta = {}, batch_size = {})",
            limits::fmt_num(*nu),
            limits::fmt_num(*epsilon),
            limits::fmt_num(*delta),
            limits::fmt_num(p.batch_size)
        ),
        NoiseSpec::Multiplier { .. } => " (from [dpsgd] noise z)".to_string(),
        _ => String::new(),
    };
    let fault = if q < 1e-12 {
        format!(
            "[dpsgd] batch_size = {} gives the sampling rate q = b/n = {}, too small to account",
            limits::fmt_num(p.batch_size),
            limits::fmt_num(q)
        )
    } else if p.z > 1e6 {
        format!(
            "the noise multiplier z = {}{source} is so large that the run could learn nothing",
            limits::fmt_num(p.z)
        )
    } else if p.z < 1e-3 {
        format!(
            "the noise multiplier z = {}{source} is too small to give any privacy that can be accounted",
            limits::fmt_num(p.z)
        )
    } else {
        format!(
            "the privacy of z = {}{source}, q = {}, T = {} cannot be accounted",
            limits::fmt_num(p.z),
            limits::fmt_num(q),
            p.steps
        )
    };
    format!("{fault} ({why})")
}

fn privacy_report(
    args: &TrainArgs,
    cfg: &TrainConfig,
    p: &PrivacyInputs,
) -> Result<Option<PrivacyReport>> {
    let z = p.z;
    if z <= 0.0 {
        return Ok(None);
    }
    let accountant = match (&args.accountant, &cfg.dpsgd.noise) {
        (Some(a), _) => a.clone(),
        (None, NoiseSpec::Target { accountant, .. }) => accountant.clone(),
        _ => "rdp".to_string(),
    };
    let delta = cfg.dpsgd.noise.delta().unwrap_or(args.delta);
    let q = p.batch_size / p.n as f64;
    let fail = |e: dpsgd_lab::Error| anyhow::anyhow!(culprit(cfg, p, q, &e.to_string()));
    if z > 1e6 || q < 1e-12 || z < 1e-3 {
        return Err(anyhow::anyhow!(culprit(
            cfg,
            p,
            q,
            "its epsilon is 0, infinite or below the accountant's precision"
        )));
    }
    let eps = privacy::epsilon_spent(&accountant, q, p.steps, z, delta).map_err(fail)?;
    let nu_eff = privacy::nu_eff(z, q, p.steps, eps, delta).map_err(fail)?;
    let phi = (nu_eff * p.params as f64 * (1.0 / delta).ln()).sqrt() / (p.n as f64 * eps);
    Ok(Some(PrivacyReport {
        accountant,
        delta,
        epsilon_spent: eps,
        noise_multiplier: z,
        nu_eff,
        phi,
    }))
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
    let d = &cfg.dpsgd;
    // Each step costs about (b + 1) parameter-sized vector operations.
    let work = d.steps as f64 * (d.batch_size + 1.0) * loss.param_dim() as f64;
    limits::check_work(
        &format!(
            "[dpsgd] steps = {}, batch_size = {} with {} parameters",
            d.steps,
            limits::fmt_num(d.batch_size),
            loss.param_dim()
        ),
        work,
        args.force,
    )?;
    // Account the privacy before training, so that a run whose privacy cannot be stated is
    // refused before any work is done, naming the input at fault.
    let inputs = PrivacyInputs {
        z: alg.noise().multiplier,
        n: data.n,
        batch_size: d.batch_size,
        steps: d.steps,
        params: loss.param_dim(),
    };
    let privacy = privacy_report(args, &cfg, &inputs)?;

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
        let report = TrainReport { summary, privacy };
        println!("{}", serde_json::to_string(&report)?);
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
        println!(
            "  wall time = {:.3} s (work estimate {} gradient coordinates)",
            s.wall_time_s,
            limits::fmt_num(work)
        );
        match &privacy {
            Some(p) => println!(
                "  privacy ({}): ({:.4}, {:.0e})-DP spent; nu_eff = {:.4}, phi = {:.4e}",
                p.accountant, p.epsilon_spent, p.delta, p.nu_eff, p.phi
            ),
            None => println!("  privacy: none (no noise)"),
        }
        if let (Some(p), NoiseSpec::Theorem34 { nu, epsilon, .. }) = (&privacy, &cfg.dpsgd.noise) {
            println!(
                "  Thm 3.4 with nu = {} promises epsilon = {}; the accountant finds {} spent. \
                 The paper leaves nu an unstated constant: nu = {} makes them agree.",
                limits::fmt_num(*nu),
                limits::fmt_num(*epsilon),
                limits::fmt_num(p.epsilon_spent),
                limits::fmt_num(p.nu_eff)
            );
        }
    }
    Ok(())
}
