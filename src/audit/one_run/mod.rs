//! Auditing a user's own `train` config in one training run (Steinke, Nasr and Jagielski 2023,
//! "Privacy Auditing with One (1) Training Run"; the f-DP analysis of Mahloujifar, Melis and
//! Chaudhuri 2025, "Auditing f-Differential Privacy in One Run").
//!
//! m Dirac gradient canaries and (for the multinomial logistic loss) m input-space canaries are
//! added as rows of the config's training data ([`canary`]); each is included with probability
//! 1/2, drawn from a public stream of its own (an excluded canary's row has gradient 0, so the
//! row count is public). One run of Algorithm 1 follows, with the config's sampling rate q
//! (the expected batch is scaled to the added rows: b' = q N), clip norm, learning rate and
//! noise multiplier. Each canary gets a score, the adversary guesses "included" for the k'
//! highest and "excluded" for the k' lowest scores and abstains on the rest, with k' fixed in
//! advance by [`bounds::choose_k`]; the count of correct guesses gives epsilon_lb at confidence
//! 1 - beta by both analyses of [`bounds`].
//!
//! Threat models and scores (higher = more likely included):
//! - every iterate, Dirac canaries: the per-step update along canary j's parameter in units of
//!   tau_t / b' is x_t = c_t + z N(0, 1) with c_t ~ Bernoulli(q) when it is included (0 when not);
//!   the score is the log-likelihood ratio sum_t log(1 - q + q e^{(2 x_t - 1) / (2 z^2)}), the
//!   statistic of the multi-run audit ([`super`]);
//! - released model, Dirac canaries: -(w_priv - w_0) along canary j's parameter;
//! - released model, input-space canaries: minus the canary's loss at w_priv.
//!
//! On generated data everything is a pure function of (config, seed): the data come from the
//! config (its seed), the inclusion bits, the canaries and the run's streams from the audit seed.
//! On a CSV the run is the mechanism users run, so its batches and noise come from the OS-keyed
//! CSPRNG as `train`'s do ([`crate::train::releases_user_data`]; the config's
//! `reproducible = true` or `--reproducible` makes them seeded, not a private release); the
//! inclusion bits and canaries stay seeded (the auditor's secret, not the data's).

pub mod bounds;
pub mod canary;

use std::ops::ControlFlow;
use std::time::Instant;

use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};
use serde::Serialize;

use super::Fault;
use crate::config::TrainConfig;
use crate::dpsgd::{Calibrator, DpSgd, DpSgdConfig, NoiseSpec, StepSchedule};
use crate::error::{Error, Result, check_open, fmt_num};
use crate::limits;
use crate::loss::{Loss, LossSpec};
use crate::privacy::{PldAccountant, RdpAccountant, subsampled_gaussian_loss};
use crate::rng::{Purpose, stream};
use bounds::{Analysis, choose_k, fdp_mu_lb, gdp_epsilon, gdp_mu_of_epsilon, guess};
use canary::{CanaryLoss, with_canaries};

/// A Dirac canary's gradient norm in units of the largest clip norm of the run: > 1, so it is
/// clipped to exactly tau_t at every step.
pub const DIRAC_NORM: f64 = 10.0;
/// Stream tags of the canaries' inclusion bits and of the input-space canaries' design.
const INCLUSION: u64 = 0x696e_636c;
const DESIGN: u64 = 0x6465_7369;

/// What to audit: a `train` config, the number of canaries, the seed and the confidence.
#[derive(Debug, Clone)]
pub struct OneRunConfig {
    /// The run as `dpsgd-lab train --config` reads it.
    pub train: TrainConfig,
    /// Canaries m of each kind.
    pub canaries: usize,
    /// Seed of the inclusion bits, the canaries and the run's streams.
    pub seed: u64,
    /// delta of the claim and the bounds (default: the config's, else 1e-5).
    pub delta: Option<f64>,
    /// 1 - beta.
    pub confidence: f64,
    /// Run even when the work estimate exceeds [`limits::WORK_LIMIT`].
    pub force: bool,
    #[doc(hidden)]
    pub fault: Fault,
}

/// One analysis' guesses and bound.
#[derive(Debug, Clone, Serialize)]
pub struct Bound {
    /// k': guesses on each side (the k' highest "included", the k' lowest "excluded").
    pub k: usize,
    /// Guesses r = 2 k'.
    pub guesses: usize,
    /// Correct guesses v.
    pub correct: usize,
    /// The largest Gaussian-DP mu rejected (f-DP analysis at q = 1 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mu_lb: Option<f64>,
    /// The smallest noise multiplier z' whose PLD curve is rejected (f-DP analysis at q < 1 only;
    /// +inf, printed as null, when none is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_lb: Option<f64>,
    /// epsilon_lb at delta, confidence 1 - beta.
    pub epsilon_lb: f64,
    /// epsilon_lb / epsilon_claimed.
    pub ratio: f64,
}

/// The bounds of one threat model.
#[derive(Debug, Clone, Serialize)]
pub struct ThreatBound {
    /// What the adversary sees.
    pub threat: String,
    /// The canaries scored.
    pub canary: String,
    /// Canaries m of this kind.
    pub canaries: usize,
    /// How many of them the inclusion bits included.
    pub included: usize,
    /// Steinke et al.'s (epsilon, delta) tail bound.
    pub eps_delta: Bound,
    /// Mahloujifar et al.'s f-DP analysis against the accountant's curve: Gaussian DP at q = 1
    /// (exact), the PLD trade-off curves of DP-SGD at (q, T, z') with subsampling.
    pub fdp: Bound,
}

/// The audit's result.
#[derive(Debug, Clone, Serialize)]
pub struct OneRunReport {
    /// Rows of the user's training data.
    pub n: usize,
    /// Rows of the audited run: n plus the canary rows.
    pub rows: usize,
    /// Parameters of the config's loss (the run has one more per Dirac canary).
    pub params: usize,
    /// Poisson sampling rate q = b / n of the config (kept: b' = q rows).
    pub sample_rate: f64,
    /// Steps T.
    pub steps: usize,
    /// Noise multiplier z of the config.
    pub noise_multiplier: f64,
    /// delta of the claim and of the bounds.
    pub delta: f64,
    /// Claimed epsilon by the RDP accountant.
    pub epsilon_rdp: f64,
    /// Claimed epsilon by the PLD accountant (upper bound).
    pub epsilon_pld: f64,
    /// min(RDP, PLD); ratios are against it.
    pub epsilon_claimed: f64,
    /// The Gaussian-DP mu of the f-DP hypothesis family at the claim: sqrt(T) / z at q = 1
    /// (the accountant's exact curve), else the mu whose epsilon at delta is the claim.
    pub mu_claimed: f64,
    /// Whether the f-DP analysis uses the Gaussian-DP family, DP-SGD's exact trade-off curve at
    /// q = 1; with subsampling it uses the PLD accountant's curves (a valid, conservative f-DP
    /// guarantee: a certificate too), and `mu_claimed` only guides the choice of k'.
    pub fdp_exact: bool,
    /// 1 - beta.
    pub confidence: f64,
    /// Canaries m of each kind.
    pub canaries: usize,
    /// The audit seed.
    pub seed: u64,
    /// One entry per threat model.
    pub threats: Vec<ThreatBound>,
    /// Why there is no input-space canary row, where there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub black_box_note: Option<String>,
    /// Wall time in seconds (not reproducible; everything else is).
    pub wall_time_s: f64,
    /// The planted fault ([`Fault::None`] outside tests; omitted from JSON then).
    #[serde(skip_serializing_if = "is_none")]
    pub fault: Fault,
}

impl OneRunReport {
    /// The first lower bound above the claim, as (threat model / canary, analysis, epsilon_lb):
    /// a caught bug (the run is less private than claimed, at confidence 1 - beta per bound).
    pub fn caught(&self) -> Option<(String, &'static str, f64)> {
        self.threats.iter().find_map(|t| {
            let name = format!("{} / {} canaries", t.threat, t.canary);
            if t.eps_delta.epsilon_lb > self.epsilon_claimed {
                Some((name, "(epsilon, delta)", t.eps_delta.epsilon_lb))
            } else if t.fdp.epsilon_lb > self.epsilon_claimed {
                Some((name, "f-DP", t.fdp.epsilon_lb))
            } else {
                None
            }
        })
    }
}

fn is_none(f: &Fault) -> bool {
    *f == Fault::None
}

/// The claim: (epsilon_rdp, epsilon_pld, claimed) at (q, T, z, delta).
fn claim(q: f64, steps: usize, z: f64, delta: f64) -> Result<(f64, f64, f64)> {
    let rdp = RdpAccountant::default()
        .epsilon(q, steps, z, delta)?
        .epsilon;
    let pld = PldAccountant::default().epsilon_upper(q, steps, z, delta)?;
    let claimed = rdp.min(pld);
    if !(claimed.is_finite() && claimed > 0.0) {
        return Err(Error::param(format!(
            "the claimed epsilon at q = {}, T = {steps}, z = {}, delta = {} is {}: the audit \
             needs a positive, finite claim (a run with noise)",
            fmt_num(q),
            fmt_num(z),
            fmt_num(delta),
            fmt_num(claimed)
        )));
    }
    Ok((rdp, pld, claimed))
}

/// Input-space canaries for the multinomial logistic loss: x = sqrt(d) u with u uniform on the
/// sphere, the label uniform over the classes, from the design stream (data-independent).
fn input_space_canaries(
    spec: &LossSpec,
    inner: &dyn Loss,
    d: usize,
    m: usize,
    seed: u64,
) -> (Vec<(Vec<f64>, f64)>, Option<String>) {
    if !matches!(spec, LossSpec::Logistic { .. }) {
        return (
            Vec::new(),
            Some(
                "input-space canaries are built for the logistic loss only; the final-model \
                 threat model is scored with the Dirac canaries"
                    .to_string(),
            ),
        );
    }
    let classes = inner.param_dim() / (d + 1);
    let mut rng = stream(seed, 0, Purpose::Other(DESIGN));
    let out = (0..m)
        .map(|_| {
            let mut u: Vec<f64> = (0..d).map(|_| StandardNormal.sample(&mut rng)).collect();
            let s = (d as f64).sqrt() / u.iter().map(|v| v * v).sum::<f64>().sqrt();
            u.iter_mut().for_each(|v| *v *= s);
            (u, rng.random_range(0..classes) as f64)
        })
        .collect();
    (out, None)
}

/// The run's DP-SGD config: the user's, with b' = q rows, the noise fixed at the resolved z,
/// and the planted fault, if any.
fn run_config(user: &DpSgdConfig, q: f64, rows: usize, z: f64, fault: Fault) -> DpSgdConfig {
    let mut c = user.clone();
    c.batch_size = q * rows as f64;
    c.noise = NoiseSpec::Multiplier { z };
    match fault {
        Fault::None => {}
        Fault::HalfNoise => c.noise = NoiseSpec::Multiplier { z: 0.5 * z },
        Fault::NoClipping => {
            // A clip norm nothing reaches, with the noise sd kept at z tau_t.
            c.clip_norm = c.clip_norm.scaled(1e9);
            c.noise = NoiseSpec::Multiplier { z: z * 1e-9 };
        }
        Fault::DoubleRate => {
            // Sampling at 2q with the update scaled back to the claimed mechanism's (divisor
            // b', noise z tau / b'), as the multi-run audit does.
            c.batch_size *= 2.0;
            c.learning_rate = c.learning_rate.scaled(2.0);
        }
    }
    c
}

/// Runs the one-run audit in four stages: [`Setup::new`] (the config's data, noise and claim),
/// [`insert_canaries`], [`train_and_score`] (the one run of Algorithm 1) and [`Rule::bound`].
pub fn run_one_run(cfg: &OneRunConfig) -> Result<OneRunReport> {
    let start = Instant::now();
    let (setup, inner) = Setup::new(cfg)?;
    let canaries = insert_canaries(cfg, &setup, inner)?;
    let scored = train_and_score(cfg, &setup, &canaries)?;
    let rule = Rule::new(cfg.canaries, &setup, 1.0 - cfg.confidence);
    let threats = rule.bound(&canaries, &scored)?;
    let Setup {
        data,
        p,
        q,
        z,
        steps,
        delta,
        claim,
        mu_claimed,
        fdp_exact,
        ..
    } = setup;
    Ok(OneRunReport {
        n: data.n,
        rows: canaries.rows.n,
        params: p,
        sample_rate: q,
        steps,
        noise_multiplier: z,
        delta,
        epsilon_rdp: claim.0,
        epsilon_pld: claim.1,
        epsilon_claimed: claim.2,
        mu_claimed,
        fdp_exact,
        confidence: cfg.confidence,
        canaries: cfg.canaries,
        seed: cfg.seed,
        threats,
        black_box_note: canaries.black_box_note,
        wall_time_s: start.elapsed().as_secs_f64(),
        fault: cfg.fault,
    })
}

/// The audited config before the canaries: its data, resolved noise and claim.
struct Setup {
    data: crate::data::Dataset,
    /// Parameters of the config's loss.
    p: usize,
    /// Sampling rate q = b / n, noise multiplier z, steps T and delta of the claim.
    q: f64,
    z: f64,
    steps: usize,
    delta: f64,
    /// (epsilon_rdp, epsilon_pld, claimed).
    claim: (f64, f64, f64),
    mu_claimed: f64,
    fdp_exact: bool,
}

impl Setup {
    /// Validates the audit's inputs, reads the config's data, resolves its noise multiplier,
    /// computes the claim and records the audit's spend in the config's ledger, if it has one.
    /// Returns the config's loss beside.
    fn new(cfg: &OneRunConfig) -> Result<(Self, Box<dyn Loss>)> {
        check_open("confidence", cfg.confidence, 0.0, 1.0)?;
        let m = cfg.canaries;
        if m < 2 {
            return Err(Error::param(format!(
                "the one-run audit needs at least 2 canaries, but --canaries is {m}"
            )));
        }
        let train = &cfg.train;
        let (data, _) = crate::train::config_data(train)?;
        let inner = train.loss.build(&data)?;
        let p = inner.param_dim();
        let user = &train.dpsgd;
        let cal = match &user.noise {
            NoiseSpec::Target { accountant, .. } => Some(accountant as &dyn Calibrator),
            _ => None,
        };
        let z = DpSgd::new(user.clone(), data.n, cal)?.noise().multiplier;
        let q = user.batch_size / data.n as f64;
        let delta = cfg.delta.or(user.noise.delta()).unwrap_or(1e-5);
        check_open("delta", delta, 0.0, 1.0)?;
        if cfg.fault == Fault::DoubleRate && q > 0.5 {
            return Err(Error::param("the doubled-rate fault needs q <= 1/2"));
        }
        // The run's size, before the canaries are drawn and before the ledger pays for it.
        let black = if matches!(train.loss, LossSpec::Logistic { .. }) {
            m
        } else {
            0
        };
        let rows = data.n + m + black;
        check_size(
            (m, black),
            (rows, data.d),
            p,
            user.steps,
            run_config(user, q, rows, z, cfg.fault).batch_size,
            cfg.force,
        )?;
        let claim = claim(q, user.steps, z, delta)?;
        // The audit trains on the user's rows: its outputs are a DP-SGD release of those rows,
        // so a config with a privacy ledger pays for it there (RDP's claim, recorded before the
        // run).
        if let Some(b) = &train.privacy {
            let rows = crate::train::ledger_rows(train)?;
            crate::privacy::ledger::Ledger::open_for(std::path::Path::new(&b.ledger), &rows, None)?
                .invoke(
                    &rows,
                    crate::privacy::ledger::Spend::with_curve(
                        &if crate::train::releases_user_data(train) {
                            "audit-run".to_string()
                        } else {
                            format!(
                                "audit-run --seed {} --reproducible ({})",
                                cfg.seed,
                                crate::rng::NOT_PRIVATE
                            )
                        },
                        "DP-SGD with canaries (one-run audit)",
                        (claim.0, delta),
                        crate::privacy::ledger::Guarantee::SubsampledGaussian {
                            q,
                            z,
                            steps: user.steps,
                        },
                    ),
                    || Ok(()),
                )?;
        }
        let fdp_exact = q == 1.0;
        let mu_claimed = if fdp_exact {
            (user.steps as f64).sqrt() / z
        } else {
            gdp_mu_of_epsilon(claim.2, delta)?
        };
        let setup = Setup {
            data,
            p,
            q,
            z,
            steps: user.steps,
            delta,
            claim,
            mu_claimed,
            fdp_exact,
        };
        Ok((setup, inner))
    }
}

/// The run's rows and loss with the canaries in them, and which canaries are included.
struct Canaries {
    /// The input-space canaries (empty when the loss has none).
    black: Vec<(Vec<f64>, f64)>,
    black_box_note: Option<String>,
    /// Inclusion bits: the m Dirac canaries, then the input-space ones.
    present: Vec<bool>,
    /// The user's rows followed by the canary rows.
    rows: crate::data::Dataset,
    loss: CanaryLoss,
}

/// Draws the inclusion bits and the input-space canaries from their public streams and adds
/// the canary rows to the user's data ([`canary`]).
fn insert_canaries(cfg: &OneRunConfig, s: &Setup, inner: Box<dyn Loss>) -> Result<Canaries> {
    let m = cfg.canaries;
    let (black, black_box_note) =
        input_space_canaries(&cfg.train.loss, inner.as_ref(), s.data.d, m, cfg.seed);
    let slots = m + black.len();
    let mut bits = stream(cfg.seed, 0, Purpose::Other(INCLUSION));
    let present: Vec<bool> = (0..slots).map(|_| bits.random::<bool>()).collect();
    let rows = with_canaries(&s.data, m, &black)?;
    let user = &cfg.train.dpsgd;
    let tau_max = user.clip_norm.max_over(user.steps);
    let loss = CanaryLoss::new(inner, s.data.d, m, present.clone(), DIRAC_NORM * tau_max);
    Ok(Canaries {
        black,
        black_box_note,
        present,
        rows,
        loss,
    })
}

/// The scores of one run: the Dirac canaries' every-iterate and released-model scores and,
/// where there are input-space canaries, minus their losses at w_priv.
struct Scored {
    every_iterate: Vec<f64>,
    released: Vec<f64>,
    input_space: Vec<f64>,
}

/// The one training run (the config's sampler, clip norm and noise, b' = q rows, the planted
/// fault if any) and the canaries' scores.
fn train_and_score(cfg: &OneRunConfig, s: &Setup, c: &Canaries) -> Result<Scored> {
    let user = &cfg.train.dpsgd;
    let rows = c.rows.n;
    let run_cfg = run_config(user, s.q, rows, s.z, cfg.fault);
    // the mechanism users run: on a CSV, `train`'s secure batches and noise (the canaries'
    // inclusion bits stay seeded: they are the auditor's secret, not the data's)
    let alg = DpSgd::new(run_cfg, rows, None)?
        .with_secure_randomness(crate::train::releases_user_data(&cfg.train));
    let claimed_run = ClaimedRun {
        q: s.q,
        z: s.z,
        b: s.q * rows as f64,
        eta: &user.learning_rate,
        tau: &user.clip_norm,
    };
    let (every_iterate, released, w_priv) = scores(
        &alg,
        &c.loss,
        &c.rows,
        (cfg.seed, cfg.train.replicate),
        s.p,
        &claimed_run,
    )?;
    let inner = c.loss.inner();
    let input_space = c
        .black
        .iter()
        .map(|(x, y)| -inner.value(&w_priv[..s.p], x, *y))
        .collect();
    Ok(Scored {
        every_iterate,
        released,
        input_space,
    })
}

/// The mechanism as the claim states it, which the every-iterate statistic assumes: sampling
/// rate q, noise multiplier z, the run's expected batch b' and the schedules of eta_t and tau_t.
struct ClaimedRun<'a> {
    q: f64,
    z: f64,
    b: f64,
    eta: &'a StepSchedule,
    tau: &'a StepSchedule,
}

/// One run of Algorithm 1 with the canaries, and the Dirac canaries' scores: the every-iterate
/// log-likelihood ratio (per step, the update along canary j's parameter in units of
/// tau_t / b' is x_t; the statistic sums log(1 - q + q e^{(2 x_t - 1) / (2 z^2)})), the released
/// model's -(w_priv - w_0) along it, and w_priv.
fn scores(
    alg: &DpSgd,
    loss: &CanaryLoss,
    data: &crate::data::Dataset,
    (seed, replicate): (u64, u64),
    p: usize,
    c: &ClaimedRun<'_>,
) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    let m = loss.param_dim() - p;
    let mut prev = vec![0.0; m];
    let mut w0 = vec![0.0; m];
    let mut lr = vec![0.0; m];
    let inv = 0.5 / (c.z * c.z);
    let out = alg
        .run_with(loss, data, seed, replicate, |t, w| {
            let fresh = &w[p..];
            if t == 0 {
                w0.copy_from_slice(fresh);
            } else {
                let unit = c.b / (c.eta.at(t - 1) * c.tau.at(t - 1));
                for ((s, pv), wv) in lr.iter_mut().zip(&prev).zip(fresh) {
                    let x = -(wv - pv) * unit;
                    *s += subsampled_gaussian_loss(c.q, (2.0 * x - 1.0) * inv);
                }
            }
            prev.copy_from_slice(fresh);
            ControlFlow::Continue(())
        })?
        .into_output()?;
    let released = out.w_priv[p..]
        .iter()
        .zip(&w0)
        .map(|(w, w0)| -(w - w0))
        .collect();
    Ok((lr, released, out.w_priv))
}

/// The guess rule's k' for each analysis and what the bounds are stated at.
struct Rule {
    k_ed: usize,
    k_f: usize,
    delta: f64,
    beta: f64,
    claimed: f64,
    /// (q, T, z) of the claim where the f-DP analysis uses the PLD curves (q < 1).
    pld: Option<(f64, usize, f64)>,
}

impl Rule {
    /// k' of each analysis ([`choose_k`]), fixed by (m, the claim, delta, beta) alone.
    fn new(m: usize, s: &Setup, beta: f64) -> Self {
        Rule {
            k_ed: choose_k(m, s.mu_claimed, s.delta, beta, Analysis::EpsDelta),
            k_f: choose_k(m, s.mu_claimed, s.delta, beta, Analysis::Fdp),
            delta: s.delta,
            beta,
            claimed: s.claim.2,
            pld: (!s.fdp_exact).then_some((s.q, s.steps, s.z)),
        }
    }

    /// Both analyses of every threat model: every iterate and the released model with the
    /// Dirac canaries, and the released model with the input-space canaries where there are.
    fn bound(&self, c: &Canaries, s: &Scored) -> Result<Vec<ThreatBound>> {
        let m = s.every_iterate.len();
        let white = &c.present[..m];
        let mut threats = vec![
            self.analyse("every iterate", "Dirac gradient", &s.every_iterate, white)?,
            self.analyse("released model", "Dirac gradient", &s.released, white)?,
        ];
        if !c.black.is_empty() {
            threats.push(self.analyse(
                "released model",
                "input space",
                &s.input_space,
                &c.present[m..],
            )?);
        }
        Ok(threats)
    }

    /// Both analyses of one threat model's scores.
    fn analyse(
        &self,
        threat: &str,
        canary: &str,
        scores: &[f64],
        inc: &[bool],
    ) -> Result<ThreatBound> {
        let m = scores.len();
        let (r, v) = guess(scores, inc, self.k_ed);
        let e = bounds::steinke_epsilon_lb(m, r, v, self.delta, self.beta);
        let (rf, vf) = guess(scores, inc, self.k_f);
        let (mu, noise, ef) = match self.pld {
            None => {
                let mu = fdp_mu_lb(m, rf, vf, self.beta);
                (Some(mu), None, gdp_epsilon(mu, self.delta)?)
            }
            Some((q, steps, z)) => {
                let (zl, e) =
                    bounds::fdp_pld_lb((m, rf, vf, self.beta), (q, steps, z, self.delta))?;
                (None, Some(zl), e)
            }
        };
        Ok(ThreatBound {
            threat: threat.to_string(),
            canary: canary.to_string(),
            canaries: m,
            included: inc.iter().filter(|&&b| b).count(),
            eps_delta: Bound {
                k: self.k_ed,
                guesses: r,
                correct: v,
                mu_lb: None,
                noise_lb: None,
                epsilon_lb: e,
                ratio: e / self.claimed,
            },
            fdp: Bound {
                k: self.k_f,
                guesses: rf,
                correct: vf,
                mu_lb: mu,
                noise_lb: noise,
                epsilon_lb: ef,
                ratio: ef / self.claimed,
            },
        })
    }
}

/// Refuses, before anything is drawn or recorded, a run that does not fit: the memory of the
/// m Dirac and `black` input-space canaries (their features and inclusion bits), the `rows`
/// rows (user's and canaries', d + 1 columns with the canary marker, and a label) and about
/// twelve vectors of the p + m parameters; and the work: per step, a gradient of the wrapped
/// loss (p coordinates) per sampled row and the noise and update on all p + m parameters.
fn check_size(
    (m, black): (usize, usize),
    (rows, d): (usize, usize),
    p: usize,
    steps: usize,
    batch: f64,
    force: bool,
) -> Result<()> {
    let params = p as f64 + m as f64;
    let (black, d) = (black as f64, d as f64);
    limits::check_memory(
        &format!("--canaries {m}"),
        8.0 * (rows as f64 * (d + 2.0) + 12.0 * params)
            + black * (8.0 * d + 32.0)
            + (m as f64 + black),
    )?;
    limits::check_work(
        &format!(
            "one-run audit: [dpsgd] steps = {steps}, b' = q N = {} with {} parameters",
            fmt_num(batch),
            p.saturating_add(m)
        ),
        steps as f64 * ((batch + 1.0) * p as f64 + params),
        force,
    )
}
