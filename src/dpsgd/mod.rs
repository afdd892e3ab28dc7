//! DP-SGD exactly as Algorithm 1: Poisson subsampling, per-sample clipping (Eq. 2), Gaussian
//! noise, projection onto W, and a random iterate as output.
//!
//! [`Stepper`] is the step function; [`DpSgd::run`] owns the loop and what gets recorded.

mod end;
pub mod noise;
pub mod sampler;
pub mod schedule;

use std::ops::ControlFlow;

use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::linalg::norm2;
use crate::loss::{ClipStats, Loss, PerSampleBound, RunTables, Scratch};
use crate::rng::{Purpose, ReleaseRng, SimRng, stream};

use end::clipped_fraction;
pub use end::{RunEnd, Stopped};
pub use noise::{AccountantKind, Calibrator, NoiseSpec, ResolvedNoise, theorem_3_4_sigma};
pub use sampler::PoissonSampler;
pub use schedule::StepSchedule;

/// The parameter domain W (Algorithm 1, line 5).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Projection {
    /// W = R^d: no projection.
    #[default]
    None,
    /// W = {w : ||w|| <= radius}.
    L2Ball {
        /// The ball's radius R.
        radius: f64,
    },
}

impl Projection {
    /// Pi_W(w), in place.
    #[inline]
    pub fn apply(&self, w: &mut [f64]) {
        if let Projection::L2Ball { radius } = *self {
            let nrm = norm2(w);
            if nrm > radius {
                let s = radius / nrm;
                w.iter_mut().for_each(|v| *v *= s);
            }
        }
    }
}

/// Which iterate is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OutputRule {
    /// w_that with that ~ unif{0, ..., T-1} (Algorithm 1, line 7; the paper's rule).
    #[default]
    RandomIterate,
    /// w_T.
    LastIterate,
    /// (1/T) sum_{t<T} w_t, the mean of the random iterate's law.
    AverageIterate,
}

/// The initial point w_0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Init {
    /// w_0 = 0.
    #[default]
    Zeros,
    /// w_0 = value * (1, ..., 1).
    Constant {
        /// The value of every coordinate.
        value: f64,
    },
    /// w_0 ~ N(0, scale^2 I) from the init stream.
    Gaussian {
        /// The standard deviation of each coordinate.
        scale: f64,
    },
    /// An explicit point.
    Point {
        /// w_0 (length p).
        w: Vec<f64>,
    },
}

/// DP-SGD's hyperparameters, as read from a config file. In code, build it with
/// [`DpSgdConfig::new`] and the `with_*` methods (it is `#[non_exhaustive]`, so a field added
/// later breaks no caller).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct DpSgdConfig {
    /// Number of iterations T.
    pub steps: usize,
    /// Expected batch size b; the sampling rate is q = b / n.
    pub batch_size: f64,
    /// eta_t.
    pub learning_rate: StepSchedule,
    /// tau_t.
    pub clip_norm: StepSchedule,
    /// sigma_n.
    pub noise: NoiseSpec,
    /// W.
    #[serde(default)]
    pub projection: Projection,
    /// The returned iterate.
    #[serde(default)]
    pub output: OutputRule,
    /// w_0.
    #[serde(default)]
    pub init: Init,
}

impl DpSgdConfig {
    /// T steps at expected batch size b with step sizes eta_t, clip norms tau_t and the noise
    /// `noise`; W = R^d, the random iterate as output and w_0 = 0 (a config file's defaults).
    /// Nothing is checked here: [`DpSgd::new`] validates against the data set size.
    pub fn new(
        steps: usize,
        batch_size: f64,
        learning_rate: StepSchedule,
        clip_norm: StepSchedule,
        noise: NoiseSpec,
    ) -> Self {
        DpSgdConfig {
            steps,
            batch_size,
            learning_rate,
            clip_norm,
            noise,
            projection: Projection::default(),
            output: OutputRule::default(),
            init: Init::default(),
        }
    }

    /// With the parameter domain W.
    pub fn with_projection(mut self, projection: Projection) -> Self {
        self.projection = projection;
        self
    }

    /// With the output rule.
    pub fn with_output(mut self, output: OutputRule) -> Self {
        self.output = output;
        self
    }

    /// With the initial point w_0.
    pub fn with_init(mut self, init: Init) -> Self {
        self.init = init;
        self
    }
}

/// A validated DP-SGD configuration for a given data set size, with its noise resolved.
#[derive(Debug, Clone)]
pub struct DpSgd {
    cfg: DpSgdConfig,
    n: usize,
    noise: ResolvedNoise,
    sampler: PoissonSampler,
    /// Draw the Poisson sampling and the Gaussian noise from the OS-keyed CSPRNG
    /// ([`ReleaseRng::secure`]) instead of the seeded streams: a private release.
    secure: bool,
}

/// What one run produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunOutput {
    /// The returned iterate (by the configured output rule).
    pub w_priv: Vec<f64>,
    /// The last iterate w_T.
    pub w_last: Vec<f64>,
    /// The average iterate (1/T) sum_{t<T} w_t.
    pub w_avg: Vec<f64>,
    /// The index that of the random iterate.
    pub t_hat: usize,
    /// T.
    pub steps: usize,
    /// Mean realized batch size |S_t| over the run.
    pub mean_batch: f64,
    /// Fraction of sampled per-sample gradients that were clipped.
    pub clipped_fraction: f64,
    /// sigma_n at step 0 (sigma_n scales with tau_t when tau follows a schedule).
    pub sigma_n: f64,
    /// The noise multiplier z on the sum of clipped gradients.
    pub noise_multiplier: f64,
}

impl DpSgd {
    /// Validates `cfg` against a data set of `n` samples and resolves the noise.
    pub fn new(cfg: DpSgdConfig, n: usize, calibrator: Option<&dyn Calibrator>) -> Result<Self> {
        if cfg.steps == 0 {
            return Err(Error::param("steps T must be at least 1, but is 0"));
        }
        let b = cfg.batch_size;
        if !(b.is_finite() && b > 0.0) {
            return Err(Error::param(format!(
                "batch_size b must be positive and finite, but is {b}"
            )));
        }
        if b > n as f64 {
            return Err(Error::param(format!(
                "batch_size b = {b} exceeds the number of samples n = {n}"
            )));
        }
        cfg.learning_rate.validate("learning_rate", cfg.steps)?;
        cfg.clip_norm.validate("clip_norm tau", cfg.steps)?;
        if let Projection::L2Ball { radius } = cfg.projection {
            crate::error::check_positive("projection radius", radius)?;
        }
        match &cfg.init {
            Init::Constant { value } if !value.is_finite() => {
                return Err(Error::param(format!(
                    "init value must be finite, but is {value}"
                )));
            }
            Init::Gaussian { scale } if !(scale.is_finite() && *scale >= 0.0) => {
                return Err(Error::param(format!(
                    "init scale must be >= 0 and finite, but is {scale}"
                )));
            }
            Init::Point { w } if w.iter().any(|v| !v.is_finite()) => {
                return Err(Error::param("init point has a non-finite coordinate"));
            }
            _ => {}
        }
        let noise = cfg.noise.resolve(n, b, cfg.steps, calibrator)?;
        let sampler = PoissonSampler::new(n, b / n as f64)?;
        Ok(DpSgd {
            cfg,
            n,
            noise,
            sampler,
            secure: false,
        })
    }

    /// With the batches and the noise drawn from the OS-keyed CSPRNG when `secure` (a private
    /// release of a user's data: nobody can replay them from the seed), else from the seeded
    /// streams of (seed, replicate) as every simulation does (the default). The seed keeps the
    /// initial point and the random iterate's index t_hat (the output rule is post-processing
    /// of the iterates, which the privacy analysis releases in full), so a secure run differs
    /// from a seeded one only in S_t and zeta_t, whose noise is [`ReleaseRng::gaussian`]'s.
    pub fn with_secure_randomness(mut self, secure: bool) -> Self {
        self.secure = secure;
        self
    }

    /// Whether the run draws from the OS-keyed CSPRNG ([`DpSgd::with_secure_randomness`]).
    pub fn is_secure(&self) -> bool {
        self.secure
    }

    /// The configuration.
    pub fn config(&self) -> &DpSgdConfig {
        &self.cfg
    }

    /// The resolved noise.
    pub fn noise(&self) -> ResolvedNoise {
        self.noise
    }

    /// The initial point for a loss with `p` parameters.
    pub fn initial_point(&self, p: usize, rng: &mut SimRng) -> Result<Vec<f64>> {
        let mut w = match &self.cfg.init {
            Init::Zeros => vec![0.0; p],
            Init::Constant { value } => vec![*value; p],
            Init::Gaussian { scale } => (0..p)
                .map(|_| {
                    scale * {
                        let z: f64 = StandardNormal.sample(rng);
                        z
                    }
                })
                .collect(),
            Init::Point { w } => {
                if w.len() != p {
                    return Err(Error::param(format!(
                        "dimension mismatch: init point has {} coordinates, the loss has {p} parameters",
                        w.len()
                    )));
                }
                w.clone()
            }
        };
        self.cfg.projection.apply(&mut w);
        Ok(w)
    }

    /// Runs Algorithm 1 with streams derived from (seed, replicate).
    pub fn run(
        &self,
        loss: &dyn Loss,
        data: &Dataset,
        seed: u64,
        replicate: u64,
    ) -> Result<RunOutput> {
        self.run_with(
            loss,
            data,
            seed,
            replicate,
            |_, _| ControlFlow::Continue(()),
        )?
        .into_output()
    }

    /// Runs Algorithm 1, calling `observe(t, w_t)` for t = 0..=T (before step t, and once after
    /// the last step). `observe` can stop the run: a `Break` at t ends it before step t, and the
    /// run ends as [`RunEnd::Stopped`].
    pub fn run_with(
        &self,
        loss: &dyn Loss,
        data: &Dataset,
        seed: u64,
        replicate: u64,
        observe: impl FnMut(usize, &[f64]) -> ControlFlow<()>,
    ) -> Result<RunEnd> {
        self.run_stepped(
            loss,
            data,
            seed,
            replicate,
            |stepper, t, w| {
                stepper.step(t, w);
            },
            observe,
        )
    }

    /// [`DpSgd::run_with`] with the step taken by `step(stepper, t, w)` instead of
    /// [`Stepper::step`] (the clip-norm study's adaptive and automatic clipping use
    /// [`Stepper::step_bounded`]). This is the one DP-SGD loop: every run method is this loop, so
    /// every run draws the same streams in the same order.
    pub fn run_stepped(
        &self,
        loss: &dyn Loss,
        data: &Dataset,
        seed: u64,
        replicate: u64,
        mut step: impl FnMut(&mut Stepper<'_>, usize, &mut [f64]),
        mut observe: impl FnMut(usize, &[f64]) -> ControlFlow<()>,
    ) -> Result<RunEnd> {
        let (mut w, mut stepper) = self.begin(loss, data, seed, replicate)?;
        let p = w.len();
        let steps = self.cfg.steps;
        let t_hat = stream(seed, replicate, Purpose::IterateChoice).random_range(0..steps);
        let mut w_avg = vec![0.0; p];
        let mut w_hat = Vec::new();
        for t in 0..steps {
            if observe(t, &w).is_break() {
                return Ok(RunEnd::Stopped(Stopped::new(t, steps, w, &stepper)));
            }
            if t == t_hat {
                w_hat = w.clone();
            }
            crate::linalg::axpy(1.0 / steps as f64, &w, &mut w_avg);
            step(&mut stepper, t, &mut w);
        }
        if observe(steps, &w).is_break() {
            return Ok(RunEnd::Stopped(Stopped::new(steps, steps, w, &stepper)));
        }
        let w_priv = match self.cfg.output {
            OutputRule::RandomIterate => w_hat,
            OutputRule::LastIterate => w.clone(),
            OutputRule::AverageIterate => w_avg.clone(),
        };
        Ok(RunEnd::Completed(RunOutput {
            w_priv,
            w_last: w,
            w_avg,
            t_hat,
            steps,
            mean_batch: stepper.sampled as f64 / steps as f64,
            clipped_fraction: clipped_fraction(&stepper),
            sigma_n: self.noise.sigma_per_tau * self.cfg.clip_norm.at(0),
            noise_multiplier: self.noise.multiplier,
        }))
    }

    /// The run's start: the checks, w_0 and the stepper with the run's streams, all derived
    /// from (seed, replicate) by purpose, so every run method draws the same values.
    fn begin<'a>(
        &'a self,
        loss: &'a dyn Loss,
        data: &'a Dataset,
        seed: u64,
        replicate: u64,
    ) -> Result<(Vec<f64>, Stepper<'a>)> {
        let (sampling, noise) = if self.secure {
            (ReleaseRng::secure()?, ReleaseRng::secure()?)
        } else {
            (
                stream(seed, replicate, Purpose::Sampling).into(),
                stream(seed, replicate, Purpose::Noise).into(),
            )
        };
        let stepper = Stepper::new(self, loss, data, sampling, noise)?;
        let w = self.initial_point(
            loss.param_dim(),
            &mut stream(seed, replicate, Purpose::Init),
        )?;
        Ok((w, stepper))
    }

    /// The iterates w_t at the steps `at` (sorted; a repeated step is observed once per
    /// repeat), by [`DpSgd::run_with`], so the same w_t as a full run, bit for bit.
    /// The run stops at the last of them: no step after it can change what is observed, and
    /// the output rule is not applied. This is how `verify` estimates the risk of the random
    /// iterate at K pre-drawn steps: the last of K uniform steps is about T K / (K + 1), so the
    /// run saves about T / (K + 1) steps. Returns the fraction of the per-sample gradients
    /// sampled in the steps that ran which were clipped.
    pub fn observe_at(
        &self,
        loss: &dyn Loss,
        data: &Dataset,
        seed: u64,
        replicate: u64,
        at: &[usize],
        mut observe: impl FnMut(usize, &[f64]),
    ) -> Result<f64> {
        if !at.is_sorted() {
            return Err(Error::param("the observed steps must be sorted"));
        }
        if let Some(&t) = at.last().filter(|&&t| t > self.cfg.steps) {
            return Err(Error::param(format!(
                "iterate {t} requested from a run of {} steps",
                self.cfg.steps
            )));
        }
        let mut rest = at;
        let end = self.run_with(loss, data, seed, replicate, |t, w| {
            while let Some((&first, tail)) = rest.split_first()
                && first == t
            {
                observe(t, w);
                rest = tail;
            }
            // every requested step is at most T, so this stops the run by t = T
            if rest.is_empty() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })?;
        Ok(match end {
            RunEnd::Completed(out) => out.clipped_fraction,
            RunEnd::Stopped(s) => s.clipped_fraction,
        })
    }
}

/// One DP-SGD step at a time on one data set with one loss, both borrowed for the stepper's
/// lifetime, with every buffer allocated up front.
pub struct Stepper<'a> {
    alg: &'a DpSgd,
    loss: &'a dyn Loss,
    /// The data set with its per-run tables (row norms, and the label clip factors at a
    /// constant tau), computed once here and handed to the kernels with the data.
    tables: RunTables<'a>,
    sampling: ReleaseRng,
    noise: ReleaseRng,
    batch: Vec<usize>,
    grad: Vec<f64>,
    scratch: Scratch,
    /// Samples drawn so far.
    pub sampled: usize,
    /// Of those, clipped.
    pub clipped: usize,
    /// sum of ||grad f_i(w_t)|| over the samples drawn so far ([`ClipStats::norm_sum`]).
    pub norm_sum: f64,
    /// Of that, the mass the per-sample bound removed: sum (||g_i|| - tau_t)_+ under clipping
    /// ([`ClipStats::excess`]).
    pub excess: f64,
}

/// Which part of Algorithm 1's step [`Stepper::step_part`] takes: the risk split of `verify`
/// runs the same step on the same sampling and noise streams with one of the two mechanisms
/// switched off (common random numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepPart {
    /// Algorithm 1's step: clip at tau_t (Eq. (2)) and add zeta_t ~ N(0, sigma_n(tau_t)^2 I).
    Full,
    /// Bias only: clip at tau_t, no noise (sigma = 0; the noise stream is not drawn from).
    BiasOnly,
    /// Noise only: no clipping (tau = inf in Eq. (2), every factor 1), and the noise of the full
    /// step, zeta_t ~ N(0, sigma_n(tau_t)^2 I) with sigma_n at the schedule's tau_t, from the same
    /// noise stream.
    NoiseOnly,
}

impl<'a> Stepper<'a> {
    /// A stepper for `loss` on `data` with its sampling and noise generators (a seeded
    /// [`SimRng`] converts into [`ReleaseRng::Seeded`]); refuses a data set
    /// that is not the one `alg` was configured for (n) or that does not fit the loss.
    ///
    /// Every buffer is sized here for batches up to b + 8 sqrt(b) + 16 (the batch size is
    /// Binomial(n, q), so a larger batch has probability below 1e-15 per step), by a clipped-sum
    /// call on such a batch; after that the step loop does not allocate. The per-run tables of
    /// `data` ([`RunTables`]) are computed here once.
    pub fn new(
        alg: &'a DpSgd,
        loss: &'a dyn Loss,
        data: &'a Dataset,
        sampling: impl Into<ReleaseRng>,
        noise: impl Into<ReleaseRng>,
    ) -> Result<Self> {
        let (sampling, noise) = (sampling.into(), noise.into());
        if data.n != alg.n {
            return Err(Error::param(format!(
                "dimension mismatch: configured for n = {}, data has n = {}",
                alg.n, data.n
            )));
        }
        loss.check_data(data)?;
        let b = alg.cfg.batch_size;
        let p = loss.param_dim();
        let cap = (b + 8.0 * b.sqrt() + 16.0).min(data.n as f64) as usize;
        let mut batch = Vec::with_capacity(cap);
        batch.extend(0..cap);
        let mut grad = vec![0.0; p];
        let mut scratch = Scratch::default();
        let constant_tau = match alg.cfg.clip_norm {
            StepSchedule::Constant(tau) => Some(tau),
            _ => None,
        };
        let tables = RunTables::new(data, constant_tau);
        let w = vec![0.0; p];
        loss.bounded_grad_sum(
            &w,
            tables.rows(),
            &batch,
            PerSampleBound::Clip(1.0),
            &mut grad,
            &mut scratch,
        );
        batch.clear();
        Ok(Stepper {
            alg,
            loss,
            tables,
            sampling,
            noise,
            batch,
            grad,
            scratch,
            sampled: 0,
            clipped: 0,
            norm_sum: 0.0,
            excess: 0.0,
        })
    }

    /// Algorithm 1, lines 3-5, for step t: w <- Pi_W(w - eta_t g_t) with
    /// g_t = (1/b) sum_{i in S_t} clip(grad f_i(w), tau_t) + zeta_t, zeta_t ~ N(0, sigma_n^2 I).
    #[inline]
    pub fn step(&mut self, t: usize, w: &mut [f64]) -> ClipStats {
        self.step_part(t, w, StepPart::Full)
    }

    /// [`Stepper::step`] with one mechanism switched off ([`StepPart`]): `BiasOnly` clips at
    /// tau_t and adds no noise, `NoiseOnly` sums the unclipped gradients (clip at tau = inf, every
    /// factor exactly 1) and adds sigma_n(tau_t) z_t with the full step's sigma_n and z_t.
    /// Same sampling stream, and the same noise stream where noise is drawn; `Full` is `step`.
    #[inline(always)]
    pub fn step_part(&mut self, t: usize, w: &mut [f64], part: StepPart) -> ClipStats {
        let cfg = &self.alg.cfg;
        let tau = cfg.clip_norm.at(t);
        let eta = cfg.learning_rate.at(t);
        let clip_at = if part == StepPart::NoiseOnly {
            f64::INFINITY
        } else {
            tau
        };
        let stats = self.sample_and_sum(w, PerSampleBound::Clip(clip_at));
        let sigma = if part == StepPart::BiasOnly {
            0.0
        } else {
            self.alg.noise.sigma_per_tau * tau
        };
        if sigma > 0.0 {
            self.noisy_update(w, eta, sigma);
        } else {
            // Divide by the expected batch size b, not |S_t| (Algorithm 1, line 4).
            let inv_b = 1.0 / self.alg.cfg.batch_size;
            for (wi, gi) in w.iter_mut().zip(&self.grad) {
                *wi -= eta * gi * inv_b;
            }
        }
        self.alg.cfg.projection.apply(w);
        stats
    }

    /// Draws S_t (Algorithm 1, line 3) and sets `grad` to the sum over S_t of the per-sample
    /// gradients at `w` bounded by `bound` (zero for an empty batch), counting sampled and
    /// clipped samples.
    #[inline(always)]
    fn sample_and_sum(&mut self, w: &[f64], bound: PerSampleBound) -> ClipStats {
        self.alg
            .sampler
            .sample_into(&mut self.sampling, &mut self.batch);
        let stats = if self.batch.is_empty() {
            self.grad.fill(0.0);
            ClipStats::default()
        } else {
            self.loss.bounded_grad_sum(
                w,
                self.tables.rows(),
                &self.batch,
                bound,
                &mut self.grad,
                &mut self.scratch,
            )
        };
        self.sampled += stats.count;
        self.clipped += stats.clipped;
        self.norm_sum += stats.norm_sum;
        self.excess += stats.excess;
        stats
    }

    /// w_j <- w_j - eta (grad_j / b + sigma z_j), with z_j ~ N(0, 1) drawn from the noise
    /// generator ([`ReleaseRng::gaussian`]) in coordinate order (Algorithm 1, line 4: the sum divided by the expected batch size b,
    /// not |S_t|).
    #[inline(always)]
    fn noisy_update(&mut self, w: &mut [f64], eta: f64, sigma: f64) {
        let inv_b = 1.0 / self.alg.cfg.batch_size;
        for (wi, gi) in w.iter_mut().zip(&self.grad) {
            let z = self.noise.gaussian();
            *wi -= eta * (gi * inv_b + sigma * z);
        }
    }

    /// Algorithm 1's step with a per-sample bound chosen by the caller instead of the configured
    /// clip norm and noise (the adaptive and automatic clipping baselines of the clip-norm study):
    /// w <- Pi_W(w - eta_t ((1/b) sum_{i in S_t} bound(grad f_i(w)) + zeta_t)),
    /// zeta_t ~ N(0, (noise_sd_on_sum / b)^2 I), where `noise_sd_on_sum` is the noise sd on the
    /// bounded sum (the noise multiplier times the bound's sensitivity). Same sampling and noise
    /// streams, in the same order, as [`Stepper::step`].
    pub fn step_bounded(
        &mut self,
        t: usize,
        w: &mut [f64],
        bound: PerSampleBound,
        noise_sd_on_sum: f64,
    ) -> ClipStats {
        let eta = self.alg.cfg.learning_rate.at(t);
        let stats = self.sample_and_sum(w, bound);
        // the noise sd on the mean, noise_sd_on_sum (1 / b)
        let inv_b = 1.0 / self.alg.cfg.batch_size;
        self.noisy_update(w, eta, noise_sd_on_sum * inv_b);
        self.alg.cfg.projection.apply(w);
        stats
    }

    /// Samples drawn in the last step (|S_t|).
    pub fn last_batch_len(&self) -> usize {
        self.batch.len()
    }
}
