//! An empirical lower bound on the epsilon of Algorithm 1 as [`crate::dpsgd`] runs it, by a
//! distinguishing game with a canary (Nasr et al. 2021 "Adversary instantiation", Nasr et al.
//! 2023 "Tight auditing of differentially private machine learning").
//!
//! The game: D holds n samples drawn by the usual generator (Gaussian features, Huber
//! regression labels) in d - 1 features plus a coordinate that no sample uses; D' = D plus one
//! "Dirac" canary whose gradient is `CANARY_NORM` tau along that unused coordinate e (a white-box
//! gradient canary: the other samples' gradients never touch e). Every trial is a full run of
//! [`DpSgd::run_with`] (the real sampler, clipping, noise and step function) with streams
//! derived from (seed, 2 i + side), so results are identical for any thread count. Removing the
//! canary is run as replacing it by a point whose gradient is identically 0 (features 0): the
//! sum of clipped gradients, the Poisson draws of the other samples and the public divisor
//! b = q (n + 1) are then those of D, i.e. add/remove adjacency with the data set size public
//! (as the accountants and Opacus treat it).
//!
//! Per step the update projected on e, in units of tau / b, is x_t = c_t + z N(0, 1) with
//! c_t ~ Bernoulli(q) the canary's inclusion under D' (0 under D). Two threat models:
//! - every iterate visible: the likelihood-ratio statistic sum_t log(1 - q + q e^{(2 x_t - 1)/(2 z^2)})
//!   (Neyman-Pearson optimal for this pair; = (sum_t x_t - T/2) / z^2 at q = 1);
//! - final iterate only: the final iterate's e-coordinate, -w_T\[e\] b / (eta tau) = sum_t x_t.
//!
//! Two routes to a lower bound, both at the stated confidence:
//! - threshold (Clopper-Pearson): half of the trials (even indices) choose a threshold, the other
//!   half certify it with Clopper-Pearson bounds on both error rates, turned into epsilon by the
//!   (epsilon, delta) inequality (see [`stats::certify`]); valid for any mechanism;
//! - Gaussian DP: nothing is selected (the statistic is fixed in advance), so all R trials per
//!   side certify: mu is bounded below from the mean shift of the statistic between the sides
//!   over its pooled standard deviation, with the exact noncentral-t interval of
//!   [`stats::gdp_mu_lower`], and converted to epsilon at delta by the mu-GDP delta(eps) formula
//!   (Dong, Roth and Su 2022, Cor. 2.13). At q = 1 both statistics are exactly Gaussian with
//!   equal variances (each x_t is), so the interval's level is exact; with subsampling the
//!   statistic is only approximately Gaussian (a CLT approximation, Dong et al. Thm. 3.5) and the
//!   route is reported as an approximation, not a certificate.

pub mod one_run;
pub mod stats;

use std::ops::ControlFlow;
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use crate::data::Dataset;
use crate::data::generator::{Direction, GeneratorSpec, LabelModel};
use crate::dpsgd::{DpSgd, DpSgdConfig, NoiseSpec, OutputRule, StepSchedule};
use crate::error::fmt_num;
use crate::error::{Error, Result, check_open};
use crate::limits;
use crate::loss::{HuberLoss, Loss};
use crate::privacy::gaussian::full_batch_epsilon;
use crate::privacy::{PldAccountant, RdpAccountant, subsampled_gaussian_loss};
use crate::rng::{Purpose, stream};
use stats::{Certified, Route, certify, gdp_mu_lower};

/// The canary's gradient norm in units of tau: >= 1, so clipping binds on it.
pub const CANARY_NORM: f64 = 10.0;
/// Clip norm tau and learning rate eta of the audited runs (the statistic is scale-free).
const TAU: f64 = 1.0;
const ETA: f64 = 1.0;
/// Huber threshold of the loss; the canary's label keeps its residual far above it.
const HUBER_C: f64 = 1.0;
const CANARY_LABEL: f64 = -1e12;

/// A deliberately broken mechanism, for tests of the audit itself. `audit` always runs
/// [`Fault::None`]; `audit-run` takes one through a hidden flag, `--plant-fault`, so that tests
/// can see its exit status on a caught bug.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// The mechanism as shipped.
    #[default]
    None,
    /// Noise multiplied by 0.5.
    HalfNoise,
    /// Clipping disabled (the noise still scaled to tau).
    NoClipping,
    /// Sampling at rate 2q while the claim accounts for q.
    DoubleRate,
}

/// What to audit: the DP-SGD setting (q, T, z) whose claimed epsilon is tested, and the size,
/// seed and confidence of the distinguishing game.
#[derive(Debug, Clone)]
pub struct AuditConfig {
    /// Poisson sampling rate q in (0, 1].
    pub q: f64,
    /// DP-SGD iterations T of every trial (Algorithm 1).
    pub steps: usize,
    /// Noise multiplier z > 0: the noise sd is z tau per coordinate of the summed clipped
    /// gradient.
    pub z: f64,
    /// delta of the claim and of the lower bounds.
    pub delta: f64,
    /// Trials per side (with and without the canary); half choose thresholds, half certify.
    pub trials: usize,
    /// Base seed; trial i on side s uses streams derived from (seed, 2 i + s).
    pub seed: u64,
    /// Samples in D besides the canary.
    pub n: usize,
    /// Features, including the canary's coordinate (>= 2).
    pub d: usize,
    /// Confidence level of the lower bounds, e.g. 0.95.
    pub confidence: f64,
    /// Run even when the work estimate exceeds [`limits::WORK_LIMIT`].
    pub force: bool,
    #[doc(hidden)]
    pub fault: Fault,
}

/// The lower bounds for one threat model.
#[derive(Debug, Clone, Serialize)]
pub struct ThreatResult {
    /// Clopper-Pearson threshold route: epsilon_lb at delta with the stated confidence.
    pub epsilon_lb: f64,
    /// Gaussian-DP route: epsilon at delta of the mu lower bound (all trials, no selection).
    pub epsilon_lb_gdp: f64,
    /// Lower confidence bound on the Gaussian-DP parameter mu (noncentral-t interval at the
    /// stated confidence, all trials).
    pub mu_lb: f64,
    /// Point estimate of mu: the statistic's mean shift between the sides over its pooled
    /// standard deviation.
    pub mu_hat: f64,
    /// epsilon_lb / epsilon_claimed: the fraction of the claimed epsilon the threshold route
    /// certifies (above 1: the lower bound exceeds the claim, at the stated confidence).
    pub ratio: f64,
    /// epsilon_lb_gdp / epsilon_claimed, the same fraction for the Gaussian-DP route.
    pub ratio_gdp: f64,
    /// The threshold route's threshold on the statistic (chosen on the selection half); a score
    /// >= it is called "canary present".
    pub threshold: f64,
    /// Empirical false-positive rate on the held-out half: runs on D scoring >= threshold.
    pub fpr: f64,
    /// Empirical false-negative rate on the held-out half: runs on D' scoring < threshold.
    pub fnr: f64,
    /// Clopper-Pearson upper bound on the false-positive rate, at level (1 - confidence) / 2.
    pub fpr_upper: f64,
    /// Clopper-Pearson upper bound on the false-negative rate, at level (1 - confidence) / 2.
    pub fnr_upper: f64,
}

/// The audit's result: the claimed epsilons, and the certified lower bounds for both threat
/// models.
#[derive(Debug, Clone, Serialize)]
pub struct AuditReport {
    /// Poisson sampling rate q of the audited runs.
    pub sample_rate: f64,
    /// DP-SGD iterations T of each audited run.
    pub steps: usize,
    /// Noise multiplier z: the noise sd is z tau per coordinate of the summed clipped gradient.
    pub noise_multiplier: f64,
    /// The delta at which the claims and the lower bounds are stated.
    pub delta: f64,
    /// Claimed epsilon by the RDP accountant.
    pub epsilon_rdp: f64,
    /// Claimed epsilon by the PLD accountant (its upper bound, discretization h = 1e-4).
    pub epsilon_pld: f64,
    /// min(RDP, PLD): the tightest claim; ratios are against it.
    pub epsilon_claimed: f64,
    /// Confidence level of every lower bound.
    pub confidence: f64,
    /// Trials per side, and how many of them certify in the threshold route (the other half
    /// choose thresholds); the Gaussian-DP route certifies with all of them.
    pub trials: usize,
    /// Trials per side that certify in the threshold route (half of `trials`).
    pub certifying_trials: usize,
    /// Whether the GDP route is exact (q = 1) or an approximation.
    pub gdp_exact: bool,
    /// Bounds when the adversary sees every iterate (likelihood-ratio statistic over all steps).
    pub every_iterate: ThreatResult,
    /// Bounds when the adversary sees only the final iterate w_T (its canary coordinate).
    pub final_iterate: ThreatResult,
    /// Samples in D besides the canary.
    pub n: usize,
    /// Features, including the canary's coordinate.
    pub d: usize,
    /// Base seed; trial i on side s uses streams derived from (seed, 2 i + s).
    pub seed: u64,
    /// Wall-clock time of the whole audit in seconds (not reproducible; everything else is).
    pub wall_time_s: f64,
    /// The planted fault the runs used ([`Fault::None`] outside the audit's own tests; omitted
    /// from JSON then).
    #[serde(skip_serializing_if = "is_none")]
    pub fault: Fault,
}

fn is_none(f: &Fault) -> bool {
    *f == Fault::None
}

impl AuditConfig {
    fn validate(&self) -> Result<()> {
        if !(self.q.is_finite() && self.q > 0.0 && self.q <= 1.0) {
            return Err(Error::param(format!(
                "sampling rate q must lie in (0, 1], but is {}",
                self.q
            )));
        }
        if self.steps == 0 {
            return Err(Error::param("steps must be >= 1, but is 0"));
        }
        if !(self.z.is_finite() && self.z > 0.0) {
            return Err(Error::param(format!(
                "noise multiplier z must be positive and finite, but is {}",
                self.z
            )));
        }
        check_open("delta", self.delta, 0.0, 1.0)?;
        check_open("confidence", self.confidence, 0.0, 1.0)?;
        if self.trials < 20 {
            return Err(Error::param(format!(
                "trials must be >= 20 per side, but is {}",
                self.trials
            )));
        }
        if self.n == 0 || self.d < 2 {
            return Err(Error::param(format!(
                "the audit needs n >= 1 other samples and d >= 2 features, but n = {} and d = {}",
                self.n, self.d
            )));
        }
        if self.fault == Fault::DoubleRate && self.q > 0.5 {
            return Err(Error::param("the doubled-rate fault needs q <= 1/2"));
        }
        // The statistic divides by z^2 and multiplies by b = q (n + 1): both must be normal
        // floats, or every score is 0, inf or NaN.
        let b = self.q * (self.n as f64 + 1.0);
        let z2 = self.z * self.z;
        if !(z2.is_normal() && (1.0 / z2).is_normal() && b.is_normal()) {
            return Err(Error::param(format!(
                "the audit's statistic needs z^2, 1/z^2 and q (n + 1) to be normal floats, but \
                 z = {} and q (n + 1) = {}",
                fmt_num(self.z),
                fmt_num(b)
            )));
        }
        // Work: every trial is T steps of about (b + 1) d-vector operations, on both sides
        // (as `train` counts it); memory: the scores (2 per trial) and the sorted copies the
        // routes make, about 64 bytes per trial and side.
        let trials = self.trials as f64;
        limits::check_memory(
            &format!("--trials {}", self.trials),
            64.0 * 2.0 * trials + 16.0 * (self.n as f64 + 1.0) * self.d as f64,
        )?;
        limits::check_work(
            &format!(
                "audit with --trials {} (per side), --steps {}, b = q (n + 1) = {}, d = {}",
                self.trials,
                self.steps,
                fmt_num(b),
                self.d
            ),
            2.0 * trials * self.steps as f64 * (b + 1.0) * self.d as f64,
            self.force,
        )?;
        Ok(())
    }

    /// D' (canary last, row n) and D (the canary's features zeroed: gradient identically 0).
    fn datasets(&self) -> Result<(Dataset, Dataset)> {
        let spec = GeneratorSpec {
            n: self.n,
            d: self.d - 1,
            radial: None,
            direction: Direction::Sphere,
            labels: LabelModel::Regression {
                noise_std: 0.5,
                noise_dof: None,
            },
        };
        let base = spec.generate(&mut stream(self.seed, 0, Purpose::Data))?;
        let d = self.d;
        let mut x = Vec::with_capacity((self.n + 1) * d);
        for i in 0..self.n {
            x.extend_from_slice(base.row(i));
            x.push(0.0);
        }
        let mut y = base.y.clone();
        let mut canary = vec![0.0; d];
        canary[d - 1] = CANARY_NORM * TAU / HUBER_C;
        x.extend_from_slice(&canary);
        y.push(CANARY_LABEL);
        let with = Dataset::new(x.clone(), y.clone(), d)?;
        let n = x.len();
        x[n - 1] = 0.0;
        let without = Dataset::new(x, y, d)?;
        Ok((with, without))
    }

    /// The DP-SGD configuration the trials run (with the fault, if any).
    fn dpsgd(&self) -> Result<DpSgd> {
        let rows = self.n + 1;
        let b = self.q * rows as f64;
        let (mut batch, mut z, mut tau) = (b, self.z, TAU);
        match self.fault {
            Fault::None => {}
            Fault::HalfNoise => z *= 0.5,
            Fault::NoClipping => {
                // A clip norm no gradient reaches, with the noise kept at z TAU.
                tau = 1e9 * CANARY_NORM * TAU;
                z *= TAU / tau;
            }
            Fault::DoubleRate => batch = 2.0 * b,
        }
        // The run divides by its batch size 2b and scales the noise z tau by 1/(2b); the
        // learning rate is doubled so that the update is that of the claimed mechanism
        // (divisor b, noise z tau / b) except for the doubled sampling rate.
        let cfg = DpSgdConfig::new(
            self.steps,
            batch,
            StepSchedule::Constant(ETA * batch / b),
            StepSchedule::Constant(tau),
            NoiseSpec::Multiplier { z },
        )
        .with_output(OutputRule::LastIterate);
        DpSgd::new(cfg, rows, None)
    }
}

/// Scores of one trial: (likelihood-ratio statistic over every iterate, final-iterate statistic).
fn trial(
    alg: &DpSgd,
    loss: &dyn Loss,
    data: &Dataset,
    cfg: &AuditConfig,
    replicate: u64,
) -> Result<(f64, f64)> {
    let e = cfg.d - 1;
    let b = cfg.q * (cfg.n + 1) as f64;
    let unit = b / (ETA * TAU);
    let (q, z) = (cfg.q, cfg.z);
    let inv = 0.5 / (z * z);
    let mut prev = 0.0;
    let mut lr = 0.0;
    let out = alg
        .run_with(loss, data, cfg.seed, replicate, |t, w| {
            if t > 0 {
                let x = -(w[e] - prev) * unit;
                let u = (2.0 * x - 1.0) * inv;
                lr += subsampled_gaussian_loss(q, u);
            }
            prev = w[e];
            ControlFlow::Continue(())
        })?
        .into_output()?;
    Ok((lr, -out.w_last[e] * unit))
}

/// Runs the audit.
pub fn run_audit(cfg: &AuditConfig) -> Result<AuditReport> {
    cfg.validate()?;
    let start = Instant::now();
    let epsilon_rdp = RdpAccountant::default()
        .epsilon(cfg.q, cfg.steps, cfg.z, cfg.delta)?
        .epsilon;
    let epsilon_pld = PldAccountant::default().epsilon_upper(cfg.q, cfg.steps, cfg.z, cfg.delta)?;
    let claimed = epsilon_rdp.min(epsilon_pld);
    // A ratio to a claim of 0 or inf means nothing (and would print NaN or 0).
    if !(claimed.is_finite() && claimed > 0.0) {
        return Err(Error::param(format!(
            "the claimed epsilon at q = {}, T = {}, z = {}, delta = {} is {} (RDP {}, PLD {}): \
             the audit needs a positive, finite claim",
            fmt_num(cfg.q),
            cfg.steps,
            fmt_num(cfg.z),
            fmt_num(cfg.delta),
            fmt_num(claimed),
            fmt_num(epsilon_rdp),
            fmt_num(epsilon_pld)
        )));
    }
    let (with, without) = cfg.datasets()?;
    let loss = HuberLoss::new(cfg.d, HUBER_C)?;
    let alg = cfg.dpsgd()?;
    let r = cfg.trials as u64;
    // Side 0 (D) and side 1 (D'), trial i: replicate 2 i + side.
    let scores: Vec<(f64, f64)> = (0..2 * r)
        .into_par_iter()
        .map(|k| {
            let data = if k % 2 == 1 { &with } else { &without };
            trial(&alg, &loss, data, cfg, k)
        })
        .collect::<Result<_>>()?;
    // Even trial index selects, odd certifies.
    let pick = |side: u64, parity: u64, which: usize| -> Vec<f64> {
        (0..r)
            .filter(|i| i % 2 == parity)
            .map(|i| {
                let s = scores[(2 * i + side) as usize];
                if which == 0 { s.0 } else { s.1 }
            })
            .collect()
    };
    let alpha = 1.0 - cfg.confidence;
    let delta = cfg.delta;
    // epsilon of mu-GDP at delta: the eps solving delta = Phi(-eps/mu + mu/2) -
    // e^eps Phi(-eps/mu - mu/2) (Dong, Roth and Su 2022, Cor. 2.13), which is the Gaussian
    // mechanism's profile at noise-to-sensitivity ratio 1/mu (Balle and Wang 2018, Thm 8).
    let eps_of_mu = |mu: f64| {
        if mu <= 0.0 {
            0.0
        } else {
            full_batch_epsilon(1, 1.0 / mu, delta).unwrap_or(f64::INFINITY)
        }
    };
    let threat = |which: usize| -> ThreatResult {
        let sel = (pick(0, 0, which), pick(1, 0, which));
        let hold = (pick(0, 1, which), pick(1, 1, which));
        let run = |route| -> Certified {
            certify(
                (&sel.0, &sel.1),
                (&hold.0, &hold.1),
                delta,
                alpha,
                route,
                &eps_of_mu,
            )
        };
        let t = run(Route::Threshold);
        // The GDP route selects nothing: every trial of both sides certifies.
        let all0: Vec<f64> = sel.0.iter().chain(&hold.0).copied().collect();
        let all1: Vec<f64> = sel.1.iter().chain(&hold.1).copied().collect();
        let (mu_lb, mu_hat) = gdp_mu_lower(&all0, &all1, alpha);
        let epsilon_lb_gdp = eps_of_mu(mu_lb);
        ThreatResult {
            epsilon_lb: t.epsilon_lb,
            epsilon_lb_gdp,
            mu_lb,
            mu_hat,
            ratio: t.epsilon_lb / claimed,
            ratio_gdp: epsilon_lb_gdp / claimed,
            threshold: t.threshold,
            fpr: t.fpr,
            fnr: t.fnr,
            fpr_upper: t.fpr_upper,
            fnr_upper: t.fnr_upper,
        }
    };
    Ok(AuditReport {
        sample_rate: cfg.q,
        steps: cfg.steps,
        noise_multiplier: cfg.z,
        delta,
        epsilon_rdp,
        epsilon_pld,
        epsilon_claimed: claimed,
        confidence: cfg.confidence,
        trials: cfg.trials,
        certifying_trials: cfg.trials / 2,
        gdp_exact: cfg.q == 1.0,
        every_iterate: threat(0),
        final_iterate: threat(1),
        n: cfg.n,
        d: cfg.d,
        seed: cfg.seed,
        wall_time_s: start.elapsed().as_secs_f64(),
        fault: cfg.fault,
    })
}
