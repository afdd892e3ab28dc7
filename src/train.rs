//! One DP-SGD run as `dpsgd-lab train` does it (Algorithm 1 on a built data set, then the privacy
//! the run actually has by a real accountant). Shared by the CLI and the Python module, so both
//! give the same numbers bit for bit.

use std::time::Instant;

use serde::Serialize;

use crate::data::Dataset;
use crate::dpsgd::{DpSgd, DpSgdConfig, NoiseSpec, RunOutput, RunSummary};
use crate::error::Result;
use crate::loss::LossSpec;
use crate::privacy;
use crate::rng::{Purpose, stream};

/// How to report the privacy a run spent.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOptions {
    /// Accountant that reports the epsilon spent (default: the config's target accountant,
    /// else rdp).
    pub accountant: Option<String>,
    /// delta at which to report the epsilon spent when the config states none.
    pub delta: f64,
}

/// The privacy a run actually has, by a real accountant, and the effective nu that connects it
/// to Theorem 3.4 and phi (Eq. 1).
#[derive(Debug, Clone, Serialize)]
pub struct PrivacyReport {
    pub accountant: String,
    pub delta: f64,
    /// epsilon spent by T compositions of the Poisson-subsampled Gaussian at (q, z).
    pub epsilon_spent: f64,
    /// z: the sum of clipped gradients gets N(0, z^2 tau^2 I).
    pub noise_multiplier: f64,
    /// nu_eff = (z eps / (q sqrt(T log(1/delta))))^2: Theorem 3.4's nu for this run.
    pub nu_eff: f64,
    /// phi = sqrt(nu_eff p log(1/delta)) / (n eps), Eq. (1), with p the number of parameters.
    pub phi: f64,
}

/// One run: the summary `train --json` prints, and the iterates.
#[derive(Debug, Clone, Serialize)]
pub struct TrainRun {
    #[serde(flatten)]
    pub summary: RunSummary,
    /// Absent for a noiseless run (epsilon is infinite).
    pub privacy: Option<PrivacyReport>,
    /// The iterates w_priv, w_T, w_avg (not part of the printed summary).
    #[serde(skip)]
    pub output: RunOutput,
}

fn privacy_report(
    opts: &ReportOptions,
    noise: &NoiseSpec,
    s: &RunSummary,
) -> Result<Option<PrivacyReport>> {
    let z = s.noise_multiplier;
    if z <= 0.0 {
        return Ok(None);
    }
    let accountant = match (&opts.accountant, noise) {
        (Some(a), _) => a.clone(),
        (None, NoiseSpec::Target { accountant, .. }) => accountant.clone(),
        _ => "rdp".to_string(),
    };
    let delta = noise.delta().unwrap_or(opts.delta);
    let q = s.batch_size / s.n as f64;
    let eps = privacy::epsilon_spent(&accountant, q, s.steps, z, delta)?;
    let nu_eff = privacy::nu_eff(z, q, s.steps, eps, delta)?;
    let phi = (nu_eff * s.params as f64 * (1.0 / delta).ln()).sqrt() / (s.n as f64 * eps);
    Ok(Some(PrivacyReport {
        accountant,
        delta,
        epsilon_spent: eps,
        noise_multiplier: z,
        nu_eff,
        phi,
    }))
}

/// Runs Algorithm 1 once on `data` with the streams of (seed, replicate), evaluates the output
/// and reports the privacy spent. `start` is when the caller started the clock (the wall time
/// reported includes building the data).
pub fn train(
    seed: u64,
    replicate: u64,
    loss: &LossSpec,
    dpsgd: &DpSgdConfig,
    data: &Dataset,
    opts: &ReportOptions,
    start: Instant,
) -> Result<TrainRun> {
    let loss = loss.build(data)?;
    let cal = match &dpsgd.noise {
        NoiseSpec::Target { accountant, .. } => Some(privacy::calibrator(accountant)?),
        _ => None,
    };
    let alg = DpSgd::new(dpsgd.clone(), data.n, cal.as_deref())?;
    let w0 = alg.initial_point(
        loss.param_dim(),
        &mut stream(seed, replicate, Purpose::Init),
    )?;
    let output = alg.run(loss.as_ref(), data, seed, replicate)?;
    let summary = RunSummary::new(
        loss.as_ref(),
        data,
        &alg,
        &w0,
        &output,
        start.elapsed().as_secs_f64(),
    );
    let privacy = privacy_report(opts, &dpsgd.noise, &summary)?;
    Ok(TrainRun {
        summary,
        privacy,
        output,
    })
}
