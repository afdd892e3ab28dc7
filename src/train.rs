//! One DP-SGD run as `dpsgd-lab train` does it (Algorithm 1 on a built data set, then the privacy
//! the run actually has by a real accountant). Shared by the CLI and the Python module, so both
//! give the same numbers bit for bit.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::data::Dataset;
use crate::dpsgd::{AccountantKind, Calibrator, DpSgd, DpSgdConfig, NoiseSpec, RunOutput};
use crate::error::{Error, Result, fmt_num};
use crate::limits;
use crate::linalg::dot;
use crate::loss::{Loss, LossSpec, mean_grad, mean_value};
use crate::privacy;
use crate::rng::{Purpose, stream};

/// The JSON summary of one run (`dpsgd-lab train`): the run's shape and the loss F(w) = (1/n)
/// sum_i f(w; x_i, y_i) at the iterates Algorithm 1 produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSummary {
    /// The loss family's name.
    pub loss: String,
    /// Number of samples n.
    pub n: usize,
    /// Feature dimension d.
    pub d: usize,
    /// Number of parameters p of the loss.
    pub params: usize,
    /// Number of iterations T.
    pub steps: usize,
    /// Expected batch size b.
    pub batch_size: f64,
    /// Mean realized batch size |S_t| over the run.
    pub mean_batch: f64,
    /// sigma_n at step 0.
    pub sigma_n: f64,
    /// The noise multiplier z on the sum of clipped gradients.
    pub noise_multiplier: f64,
    /// Fraction of sampled per-sample gradients that were clipped.
    pub clipped_fraction: f64,
    /// The index that of the random iterate.
    pub t_hat: usize,
    /// F(w_0).
    pub f_w0: f64,
    /// F(w_priv), at the returned iterate.
    pub f_w_priv: f64,
    /// F(w_T).
    pub f_w_last: f64,
    /// F at the average iterate.
    pub f_w_avg: f64,
    /// ||grad F(w_priv)||^2.
    pub grad_norm_sq_w_priv: f64,
    /// Wall time of the run in seconds, building the data included.
    pub wall_time_s: f64,
}

impl RunSummary {
    /// Evaluates a run's output on the data set.
    pub fn new(
        loss: &dyn Loss,
        data: &Dataset,
        alg: &DpSgd,
        w0: &[f64],
        out: &RunOutput,
        wall_time_s: f64,
    ) -> Self {
        let mut g = vec![0.0; out.w_priv.len()];
        mean_grad(loss, &out.w_priv, data, &mut g);
        RunSummary {
            loss: loss.name().to_string(),
            n: data.n,
            d: data.d,
            params: loss.param_dim(),
            steps: out.steps,
            batch_size: alg.config().batch_size,
            mean_batch: out.mean_batch,
            sigma_n: out.sigma_n,
            noise_multiplier: out.noise_multiplier,
            clipped_fraction: out.clipped_fraction,
            t_hat: out.t_hat,
            f_w0: mean_value(loss, w0, data),
            f_w_priv: mean_value(loss, &out.w_priv, data),
            f_w_last: mean_value(loss, &out.w_last, data),
            f_w_avg: mean_value(loss, &out.w_avg, data),
            grad_norm_sq_w_priv: dot(&g, &g),
            wall_time_s,
        }
    }
}

/// How to report the privacy a run spent.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOptions {
    /// Accountant that reports the epsilon spent (default: the config's target accountant,
    /// else rdp).
    pub accountant: Option<AccountantKind>,
    /// delta at which to report the epsilon spent when the config states none.
    pub delta: f64,
    /// Run even when the estimated work exceeds [`limits::WORK_LIMIT`].
    pub force: bool,
}

/// The privacy a run actually has, by a real accountant, and the effective nu that connects it
/// to Theorem 3.4 and phi (Eq. 1).
#[derive(Debug, Clone, Serialize)]
pub struct PrivacyReport {
    /// The accountant that produced `epsilon_spent`: "rdp", "pld", or "rdp (fallback of pld)".
    pub accountant: String,
    /// Why the requested accountant fell back, where it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accountant_note: Option<String>,
    /// The delta at which epsilon is reported.
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
    /// The evaluation of the released iterate (`train --json`).
    #[serde(flatten)]
    pub summary: RunSummary,
    /// Absent for a noiseless run (epsilon is infinite).
    pub privacy: Option<PrivacyReport>,
    /// The iterates w_priv, w_T, w_avg (not part of the printed summary).
    #[serde(skip)]
    pub output: RunOutput,
    /// The work estimate checked before the run: T (b + 1) p gradient coordinates.
    #[serde(skip)]
    pub work_estimate: f64,
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
fn culprit(noise: &NoiseSpec, p: &PrivacyInputs, q: f64, why: &str) -> String {
    let source = match noise {
        NoiseSpec::Theorem34 { nu, epsilon, delta } => format!(
            " (from [dpsgd] noise nu = {}, epsilon = {}, delta = {}, batch_size = {})",
            fmt_num(*nu),
            fmt_num(*epsilon),
            fmt_num(*delta),
            fmt_num(p.batch_size)
        ),
        NoiseSpec::Multiplier { .. } => " (from [dpsgd] noise z)".to_string(),
        _ => String::new(),
    };
    let fault = if q < 1e-12 {
        format!(
            "[dpsgd] batch_size = {} gives the sampling rate q = b/n = {}, too small to account",
            fmt_num(p.batch_size),
            fmt_num(q)
        )
    } else if p.z > 1e6 {
        format!(
            "the noise multiplier z = {}{source} is so large that the run could learn nothing",
            fmt_num(p.z)
        )
    } else if p.z < 1e-3 {
        format!(
            "the noise multiplier z = {}{source} is too small to give any privacy that can be accounted",
            fmt_num(p.z)
        )
    } else {
        format!(
            "the privacy of z = {}{source}, q = {}, T = {} cannot be accounted",
            fmt_num(p.z),
            fmt_num(q),
            p.steps
        )
    };
    format!("{fault} ({why})")
}

/// The privacy of the run, accounted before training so that a run whose privacy cannot be
/// stated is refused before any work is done, naming the input at fault.
fn privacy_report(
    opts: &ReportOptions,
    noise: &NoiseSpec,
    p: &PrivacyInputs,
) -> Result<Option<PrivacyReport>> {
    let z = p.z;
    if z <= 0.0 {
        return Ok(None);
    }
    let accountant = match (opts.accountant, noise) {
        (Some(a), _) => a,
        (None, NoiseSpec::Target { accountant, .. }) => *accountant,
        _ => AccountantKind::Rdp,
    };
    let delta = noise.delta().unwrap_or(opts.delta);
    let q = p.batch_size / p.n as f64;
    let fail = |e: Error| Error::param(culprit(noise, p, q, &e.to_string()));
    if z > 1e6 || q < 1e-12 || z < 1e-3 {
        return Err(Error::param(culprit(
            noise,
            p,
            q,
            "its epsilon is 0, infinite or below the accountant's precision",
        )));
    }
    let spent = accountant.accounted(q, p.steps, z, delta).map_err(fail)?;
    let eps = spent.epsilon;
    let nu_eff = privacy::nu_eff(z, q, p.steps, eps, delta).map_err(fail)?;
    let phi = (nu_eff * p.params as f64 * (1.0 / delta).ln()).sqrt() / (p.n as f64 * eps);
    Ok(Some(PrivacyReport {
        accountant: spent.label(),
        accountant_note: spent.note,
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
        NoiseSpec::Target { accountant, .. } => Some(accountant as &dyn Calibrator),
        _ => None,
    };
    let alg = DpSgd::new(dpsgd.clone(), data.n, cal)?;
    // Each step costs about (b + 1) parameter-sized vector operations.
    let work = dpsgd.steps as f64 * (dpsgd.batch_size + 1.0) * loss.param_dim() as f64;
    limits::check_work(
        &format!(
            "[dpsgd] steps = {}, batch_size = {} with {} parameters",
            dpsgd.steps,
            fmt_num(dpsgd.batch_size),
            loss.param_dim()
        ),
        work,
        opts.force,
    )?;
    let inputs = PrivacyInputs {
        z: alg.noise().multiplier,
        n: data.n,
        batch_size: dpsgd.batch_size,
        steps: dpsgd.steps,
        params: loss.param_dim(),
    };
    let privacy = privacy_report(opts, &dpsgd.noise, &inputs)?;
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
    Ok(TrainRun {
        summary,
        privacy,
        output,
        work_estimate: work,
    })
}
