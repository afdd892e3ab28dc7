//! One DP-SGD run as `dpsgd-lab train` does it (Algorithm 1 on a built data set, then the privacy
//! the run actually has by a real accountant). Shared by the CLI and the Python module, so both
//! give the same numbers bit for bit.

use std::time::Instant;

mod budget;
mod predict;

pub use budget::ledger_rows;
use budget::{check_budget, ledger_command};
use predict::classification_accuracy;
pub use predict::{accuracy, predict};

use serde::{Deserialize, Serialize};

use crate::config::{BudgetSpec, DataSpec, TrainConfig};
use crate::data::Dataset;
use crate::dpsgd::{AccountantKind, Calibrator, DpSgd, DpSgdConfig, NoiseSpec, RunOutput};
use crate::error::{Error, Result, fmt_num};
use crate::limits;
use crate::linalg::dot;
use crate::loss::{Loss, LossSpec, mean_grad, mean_value};
use crate::privacy;
use crate::privacy::running::RunningEpsilon;
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
    /// The output rule that chose w_priv ("random_iterate", "last_iterate", "average_iterate").
    pub output_rule: String,
    /// The index t_hat of the random iterate (used by the random-iterate rule only).
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
            output_rule: serde_json::to_value(alg.config().output)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
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

/// Classification accuracy of the released iterate w_priv (post-processing: no privacy cost).
#[derive(Debug, Clone, Serialize)]
pub struct Accuracy {
    /// Fraction of the training rows classified correctly.
    pub train: f64,
    /// Fraction of the held-out test rows classified correctly (absent without a test split).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<f64>,
    /// Training rows.
    pub n_train: usize,
    /// Test rows (0 without a split).
    pub n_test: usize,
}

/// The whole budget of a pipeline (`[privacy]`, e.g. written by `clipnorm recommend`) and what
/// it spent: the earlier steps' (pure-DP or (epsilon, delta)) spending plus DP-SGD's accounted
/// (epsilon, delta), composed by basic composition (Dwork & Roth 2014, Theorem 3.16).
#[derive(Debug, Clone, Serialize)]
pub struct BudgetReport {
    /// The budget's epsilon.
    pub epsilon: f64,
    /// The budget's delta.
    pub delta: f64,
    /// epsilon spent before this run.
    pub spent_before_epsilon: f64,
    /// delta spent before this run.
    pub spent_before_delta: f64,
    /// DP-SGD's epsilon, by the accountant.
    pub dpsgd_epsilon: f64,
    /// DP-SGD's delta.
    pub dpsgd_delta: f64,
    /// Everything the ledger records after this run, composed (<= epsilon).
    pub total_epsilon: f64,
    /// spent_before_delta + dpsgd_delta <= delta.
    pub total_delta: f64,
    /// The ledger's announcements (a ledger made, a torn line repaired).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One run: the summary `train --json` prints, and the iterates.
#[derive(Debug, Clone, Serialize)]
pub struct TrainRun {
    /// The evaluation of the released iterate (`train --json`).
    #[serde(flatten)]
    pub summary: RunSummary,
    /// Absent for a noiseless run (epsilon is infinite).
    pub privacy: Option<PrivacyReport>,
    /// Accuracy of w_priv for a classification loss (logistic, tanh_net); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<Accuracy>,
    /// The pipeline's budget, when the config has a `[privacy]` table (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetReport>,
    /// The iterates w_priv, w_T, w_avg (not part of the printed summary).
    #[serde(skip)]
    pub output: RunOutput,
    /// The work estimate checked before the run: T (b + 1) p gradient coordinates.
    #[serde(skip)]
    pub work_estimate: f64,
    /// Where the batches and the noise came from: "os" (the operating system's CSPRNG, a
    /// private release) or "seeded" (a function of the seed: a simulation, or the reproducible
    /// mode of a release, which is not private).
    pub randomness: &'static str,
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

/// The accountant that reports a run's epsilon: `--accountant`, else the config's target
/// accountant, else RDP.
fn report_accountant(opts: &ReportOptions, noise: &NoiseSpec) -> AccountantKind {
    match (opts.accountant, noise) {
        (Some(a), _) => a,
        (None, NoiseSpec::Target { accountant, .. }) => *accountant,
        _ => AccountantKind::Rdp,
    }
}

/// The epsilon spent so far at the end of each epoch (n / b steps; see
/// [`RunningEpsilon::checkpoints`]), by the accountant and at the delta of the run's privacy
/// report, so that the last value is the reported epsilon. Empty without noise.
fn running_epsilon(
    opts: &ReportOptions,
    noise: &NoiseSpec,
    privacy: Option<&PrivacyReport>,
    p: &PrivacyInputs,
) -> Result<Option<(RunningEpsilon, Vec<usize>)>> {
    let Some(report) = privacy else {
        return Ok(None);
    };
    let q = p.batch_size / p.n as f64;
    let running = RunningEpsilon::new(
        report_accountant(opts, noise),
        q,
        report.noise_multiplier,
        report.delta,
    )?;
    let per_epoch = (p.n as f64 / p.batch_size).round() as usize;
    let marks = running.checkpoints(p.steps, per_epoch);
    Ok(Some((running, marks)))
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
    let accountant = report_accountant(opts, noise);
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
/// (with the training accuracy of a classification loss) and reports the privacy spent. `start`
/// is when the caller started the clock (the wall time reported includes building the data).
pub fn train(
    seed: u64,
    replicate: u64,
    loss: &LossSpec,
    dpsgd: &DpSgdConfig,
    data: &Dataset,
    opts: &ReportOptions,
    start: Instant,
) -> Result<TrainRun> {
    train_budgeted(
        (seed, replicate),
        loss,
        dpsgd,
        data,
        opts,
        None,
        false,
        start,
    )
}

/// [`train`] with a `[privacy]` budget: DP-SGD's spend is checked against the ledger before
/// any work and recorded in it, as `train --config` does (the Python `train` on arrays).
/// `secure`: the batches and noise come from the OS-keyed CSPRNG (a private release of `data`,
/// [`crate::dpsgd::DpSgd::with_secure_randomness`]); else from the streams of (seed, replicate).
#[allow(clippy::too_many_arguments)]
pub fn train_budgeted(
    (seed, replicate): (u64, u64),
    loss: &LossSpec,
    dpsgd: &DpSgdConfig,
    data: &Dataset,
    opts: &ReportOptions,
    budget: Option<&BudgetSpec>,
    secure: bool,
    start: Instant,
) -> Result<TrainRun> {
    let inputs = RunInputs {
        seed,
        replicate,
        loss,
        dpsgd,
        data,
        secure,
    };
    // The rows are hashed only when a ledger will check them.
    let budget = budget.map(|b| (b, crate::privacy::ledger::DataId::of("arrays", data)));
    let mut run = train_inner(inputs, opts, budget, false, start)?;
    run.accuracy = classification_accuracy(loss, &run.output.w_priv, data, None)?;
    Ok(run)
}

/// A train config run as `dpsgd-lab train --config FILE` does it: the data with its test split
/// (and the `[privacy]` table's released standardization applied to both parts), the budget
/// checked before any work, Algorithm 1 with a progress bar on stderr when `progress` (hidden
/// when stderr is not a terminal), and the train and test accuracy of w_priv.
pub fn train_config(
    cfg: &TrainConfig,
    opts: &ReportOptions,
    progress: bool,
    start: Instant,
) -> Result<TrainRun> {
    let (data, test) = config_data(cfg)?;
    let budget = match cfg.privacy.as_ref() {
        Some(b) => Some((b, ledger_rows(cfg)?)),
        None => None,
    };
    let inputs = RunInputs {
        seed: cfg.seed,
        replicate: cfg.replicate,
        loss: &cfg.loss,
        dpsgd: &cfg.dpsgd,
        data: &data,
        secure: releases_user_data(cfg),
    };
    let mut run = train_inner(inputs, opts, budget, progress, start)?;
    run.accuracy = classification_accuracy(&cfg.loss, &run.output.w_priv, &data, test.as_ref())?;
    Ok(run)
}

/// Whether `cfg`'s run is a private release of a user's data, drawn from the OS-keyed CSPRNG:
/// a CSV with noise, unless `reproducible = true` (the research mode, not a private release).
/// Generated data are a simulation: always seeded.
pub fn releases_user_data(cfg: &TrainConfig) -> bool {
    matches!(cfg.data, DataSpec::Csv(_)) && cfg.dpsgd.noise != NoiseSpec::None && !cfg.reproducible
}

/// (train, test) of a config: a CSV's split is kept (its test part is scored, not dropped), and
/// the `[preprocess]` transform is applied to both parts. With a `[privacy]` ledger the data
/// must be handled as the ledger's guarantee assumes: no statistics of the data's own (the
/// non-private `standardize`), and a split that keeps add/remove neighbours neighbours (hash).
pub fn config_data(cfg: &TrainConfig) -> Result<(Dataset, Option<Dataset>)> {
    let (mut data, mut test) = match &cfg.data {
        DataSpec::Csv(c) => {
            if cfg.privacy.is_some() && c.standardize {
                return Err(Error::param(
                    "[data] standardize = true uses the data's own means and scales, which no \
                     mechanism protects, so the [privacy] ledger's budget cannot cover it: set it \
                     to false (a [preprocess] table from clipnorm recommend carries a public or \
                     privately released transform)",
                ));
            }
            if cfg.privacy.is_some()
                && let Some(sp) = &c.split
                && sp.method != crate::data::split::SplitMethod::Hash
            {
                return Err(Error::param(
                    "[data] split with method = \"shuffle\" reshuffles every row when one row is \
                     added, which the [privacy] ledger's add/remove guarantee does not survive: \
                     use method = \"hash\"",
                ));
            }
            c.load_split()?
        }
        other => (
            other.build(&mut stream(cfg.seed, cfg.replicate, Purpose::Data))?,
            None,
        ),
    };
    if let Some(p) = &cfg.preprocess {
        p.apply(&mut data)?;
        if let Some(t) = test.as_mut() {
            p.apply(t)?;
        }
    }
    Ok((data, test))
}

/// What one run trains: the streams' (seed, replicate), the loss, Algorithm 1's settings and
/// the training data.
struct RunInputs<'a> {
    seed: u64,
    replicate: u64,
    loss: &'a LossSpec,
    dpsgd: &'a DpSgdConfig,
    data: &'a Dataset,
    /// Batches and noise from the OS-keyed CSPRNG (a private release).
    secure: bool,
}

/// Algorithm 1 once, with the budget check before any work and an optional progress bar.
fn train_inner(
    inputs: RunInputs<'_>,
    opts: &ReportOptions,
    budget: Option<(&BudgetSpec, crate::privacy::ledger::DataId)>,
    progress: bool,
    start: Instant,
) -> Result<TrainRun> {
    let RunInputs {
        seed,
        replicate,
        loss,
        dpsgd,
        data,
        secure,
    } = inputs;
    let loss = loss.build(data)?;
    let cal = match &dpsgd.noise {
        NoiseSpec::Target { accountant, .. } => Some(accountant as &dyn Calibrator),
        _ => None,
    };
    let alg = DpSgd::new(dpsgd.clone(), data.n, cal)?.with_secure_randomness(secure);
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
    // The ledger is read once; with no delta in the noise spec, DP-SGD is reported at the delta
    // it has left.
    let ledger = budget
        .as_ref()
        .map(|(b, rows)| {
            crate::privacy::ledger::Ledger::open_for(std::path::Path::new(&b.ledger), rows, None)
        })
        .transpose()?;
    let opts = match &ledger {
        Some(l) if dpsgd.noise.delta().is_none() => ReportOptions {
            delta: l.remaining().1,
            ..opts.clone()
        },
        _ => opts.clone(),
    };
    let privacy = privacy_report(&opts, &dpsgd.noise, &inputs)?;
    let q = dpsgd.batch_size / data.n as f64;
    let budget = match (ledger, &budget) {
        (Some(l), Some((_, rows))) => Some(check_budget(
            l,
            rows,
            privacy.as_ref(),
            (q, alg.noise().multiplier, dpsgd.steps),
            &ledger_command(secure, seed),
        )?),
        _ => None,
    };
    let w0 = alg.initial_point(
        loss.param_dim(),
        &mut stream(seed, replicate, Purpose::Init),
    )?;
    let bar = progress_bar(progress, dpsgd.steps);
    // Only a visible bar shows the running epsilon (a PLD update costs a composition).
    let mut running = if bar.is_hidden() {
        None
    } else {
        running_epsilon(&opts, &dpsgd.noise, privacy.as_ref(), &inputs)?
    };
    // The same loop and streams as `DpSgd::run`; the observer only moves the bar.
    let output = alg
        .run_with(loss.as_ref(), data, seed, replicate, |t, _| {
            if t % 256 == 0 {
                bar.set_position(t as u64);
            }
            if let Some((r, marks)) = running.as_mut()
                && marks.first() == Some(&t)
            {
                marks.remove(0);
                if let Ok(e) = r.at(t) {
                    bar.set_message(format!("epsilon {e:.3} spent"));
                }
            }
            std::ops::ControlFlow::Continue(())
        })?
        .into_output()?;
    bar.finish_and_clear();
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
        accuracy: None,
        budget,
        output,
        work_estimate: work,
        randomness: if secure { "os" } else { "seeded" },
    })
}

/// The progress bar of one run on stderr (indicatif, as `run`'s): T steps, the epsilon spent so
/// far (set at each epoch's end), the elapsed time and ETA; hidden unless `on` and stderr is a terminal, so logs and pipes stay clean.
fn progress_bar(on: bool, steps: usize) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !(on && std::io::stderr().is_terminal()) {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(steps as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "DP-SGD [{bar:30}] {percent:>3}%  step {pos}/{len}  {msg}  {elapsed_precise}  ETA {eta}",
        )
        .expect("static template")
        .progress_chars("#>-"),
    );
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The progress bar's running epsilon ends at the epsilon the run reports, for the config's
    /// accountant and for one named by `--accountant` (breast_cancer's recommended run: n = 450,
    /// b = 45, T = 300, z = 4.4711; an epoch is 10 steps).
    #[test]
    fn the_running_epsilon_ends_at_the_reported_one() {
        let inputs = PrivacyInputs {
            z: 4.4711,
            n: 450,
            batch_size: 45.0,
            steps: 300,
            params: 62,
        };
        for (config, flag) in [
            (AccountantKind::Rdp, None),
            (AccountantKind::Pld, None),
            (AccountantKind::Rdp, Some(AccountantKind::Pld)),
        ] {
            let noise = NoiseSpec::Target {
                epsilon: 1.7,
                delta: 1e-5,
                accountant: config,
            };
            let opts = ReportOptions {
                accountant: flag,
                delta: 1e-6,
                force: false,
            };
            let report = privacy_report(&opts, &noise, &inputs).unwrap().unwrap();
            let (r, marks) = running_epsilon(&opts, &noise, Some(&report), &inputs)
                .unwrap()
                .unwrap();
            // RDP at every epoch's end; PLD at every other (30 epochs, at most 16 updates).
            let every = if flag.unwrap_or(config) == AccountantKind::Rdp {
                1
            } else {
                2
            };
            assert_eq!(marks.len(), 30 / every, "{marks:?}");
            assert_eq!(marks.last(), Some(&300));
            let last = r.at(300).unwrap();
            assert_eq!(last, report.epsilon_spent, "{config} {flag:?}");
            assert!(r.at(marks[0]).unwrap() < last);
        }
    }
}
