//! One training run of the study: Algorithm 1 with constant eta and tau, test accuracy after
//! every epoch. The loop is [`crate::dpsgd::DpSgd::run_stepped`]'s; its observer takes the
//! accuracy per epoch and stops a diverged run early.

use std::ops::ControlFlow;

use crate::data::Dataset;
use rand_distr::{Distribution, StandardNormal};

use crate::dpsgd::{DpSgd, DpSgdConfig, NoiseSpec, OutputRule, RunEnd, StepSchedule, Stepper};
use crate::error::Result;
use crate::loss::PerSampleBound;
use crate::rng::{Purpose, stream};

use crate::model::Model;

/// What every run of a study shares.
pub struct Setup<'a> {
    /// The model trained (softmax regression or the tanh network).
    pub model: &'a Model,
    /// The training split (DP-SGD runs on it).
    pub train: &'a Dataset,
    /// The test split (accuracy is measured on it).
    pub test: &'a Dataset,
    /// Expected batch size b.
    pub batch: f64,
    /// Steps per epoch, round(n / b).
    pub steps_per_epoch: usize,
    /// Epochs per run.
    pub epochs: usize,
    /// Accuracy is averaged over this many last epochs.
    pub average_last: usize,
    /// Base seed.
    pub seed: u64,
}

/// A run's accuracies.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Test accuracy after each epoch.
    pub acc: Vec<f64>,
    /// Mean of the last `average_last` entries.
    pub acc_last: f64,
    /// The iterate became non-finite and the run was stopped (accuracy counts as chance).
    pub diverged: bool,
    /// Fraction of the sampled per-sample gradients that were clipped.
    pub clipped_fraction: f64,
}

impl Setup<'_> {
    /// Total steps T.
    pub fn steps(&self) -> usize {
        self.epochs * self.steps_per_epoch
    }

    /// Trains with clip norm `tau`, step size `eta` and noise multiplier `z` (0: no noise).
    ///
    /// Streams come from (seed, run): every (tau, eta, epsilon) of one run index sees the same
    /// batches and the same standard-normal draws (common random numbers), so differences
    /// between clip norms are not masked by sampling noise.
    pub fn run(&self, tau: f64, eta: f64, z: f64, run: usize) -> Result<Outcome> {
        self.train_loop(tau, eta, z, run, None)
    }

    /// Trains with a clip-norm method other than a fixed tau ([`Rule`]), with the same batches
    /// and gradient-noise draws as [`Setup::run`] for the same run index (the adaptive rule's
    /// count noise has its own stream). Also returns the clip norm in force at the end (the
    /// tracked C of adaptive clipping; NaN for automatic clipping).
    pub fn run_rule(&self, rule: &Rule, eta: f64, run: usize) -> Result<(Outcome, f64)> {
        match *rule {
            Rule::Automatic { gamma, z } => {
                let mut step = |stepper: &mut Stepper<'_>, t, w: &mut [f64]| {
                    stepper.step_bounded(t, w, PerSampleBound::Normalize(gamma), z);
                };
                let o = self.train_loop(1.0, eta, 0.0, run, Some(&mut step))?;
                Ok((o, f64::NAN))
            }
            Rule::Adaptive(a) => {
                let mut count_rng = stream(self.seed, run as u64, Purpose::Other(COUNT_NOISE_TAG));
                let mut c = a.initial;
                let b = self.batch;
                let mut step = |stepper: &mut Stepper<'_>, t, w: &mut [f64]| {
                    let st = stepper.step_bounded(t, w, PerSampleBound::Clip(c), a.sigma_grad * c);
                    let noise: f64 = StandardNormal.sample(&mut count_rng);
                    c = a.next_clip(c, st.count - st.clipped, st.count, b, noise);
                };
                let o = self.train_loop(1.0, eta, 0.0, run, Some(&mut step))?;
                Ok((o, c))
            }
        }
    }

    /// The run shared by every method: [`DpSgd::run_with`], or [`DpSgd::run_stepped`] with `step`
    /// advancing w by one step t, observed after every epoch (test accuracy, or a stop once w is
    /// not finite).
    fn train_loop(
        &self,
        tau: f64,
        eta: f64,
        z: f64,
        run: usize,
        step: Option<CustomStep<'_>>,
    ) -> Result<Outcome> {
        let cfg = DpSgdConfig::new(
            self.steps(),
            self.batch,
            StepSchedule::Constant(eta),
            StepSchedule::Constant(tau),
            NoiseSpec::Multiplier { z },
        )
        .with_output(OutputRule::LastIterate)
        .with_init(self.model.init());
        let loss = self.model.loss();
        let alg = DpSgd::new(cfg, self.train.n, None)?;
        let mut acc = Vec::with_capacity(self.epochs);
        let mut diverged = false;
        let observe = |t: usize, w: &[f64]| {
            // after each epoch: t = k steps_per_epoch, k = 1..=epochs
            if t == 0 || !t.is_multiple_of(self.steps_per_epoch) {
                return ControlFlow::Continue(());
            }
            if w.iter().any(|v| !v.is_finite()) {
                diverged = true;
                acc.resize(self.epochs, 0.0);
                return ControlFlow::Break(());
            }
            acc.push(self.model.accuracy(w, self.test));
            ControlFlow::Continue(())
        };
        let (seed, r) = (self.seed, run as u64);
        let end = match step {
            None => alg.run_with(loss, self.train, seed, r, observe)?,
            Some(step) => alg.run_stepped(loss, self.train, seed, r, step, observe)?,
        };
        let clipped_fraction = match end {
            RunEnd::Completed(out) => out.clipped_fraction,
            RunEnd::Stopped(s) => s.clipped_fraction,
        };
        let last = &acc[self.epochs - self.average_last..];
        Ok(Outcome {
            acc_last: last.iter().sum::<f64>() / last.len() as f64,
            acc,
            diverged,
            clipped_fraction,
        })
    }
}

/// A step taken in place of [`Stepper::step`]: `step(stepper, t, w)` advances w by step t.
type CustomStep<'s> = &'s mut dyn FnMut(&mut Stepper<'_>, usize, &mut [f64]);

/// The stream tag of adaptive clipping's count noise ("count").
const COUNT_NOISE_TAG: u64 = 0x0063_6f75_6e74;

/// A clip-norm method run step by step ([`Setup::run_rule`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// Automatic clipping (Bu et al. 2023): each per-sample gradient becomes g / (||g|| + gamma)
    /// (sensitivity 1), and the sum gets N(0, z^2 I).
    Automatic {
        /// The stabilizer gamma > 0 in g / (||g|| + gamma).
        gamma: f64,
        /// Noise multiplier z on the normalized sum.
        z: f64,
    },
    /// Adaptive quantile clipping (Andrew et al. 2021).
    Adaptive(Adaptive),
}

/// Adaptive quantile clipping's parameters for one run (Andrew et al. 2021, Algorithm 1 with
/// the geometric update, and Theorem 1 for the noise).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Adaptive {
    /// Target unclipped quantile gamma.
    pub quantile: f64,
    /// Clip-norm learning rate eta_C.
    pub lr: f64,
    /// C_0.
    pub initial: f64,
    /// Noise sd of the private count (absolute, in samples).
    pub sigma_b: f64,
    /// Noise multiplier of the clipped-gradient sum (its sd is sigma_grad C_t).
    pub sigma_grad: f64,
}

impl Adaptive {
    /// C_{t+1} = C_t exp(-eta_C (b~_t - gamma)), with the private unclipped fraction
    /// b~_t = (sum_{i in S_t} (1[||g_i|| <= C_t] - 1/2) + sigma_b xi) / b + 1/2, xi ~ N(0, 1).
    /// The centred indicators b_i - 1/2 make the released sum's sensitivity 1/2 under adding or
    /// removing one sample (Andrew et al., Sec. 3), which is where Theorem 1's 2 sigma_b comes
    /// from; b~_t is unbiased for the unclipped fraction since E|S_t| = b.
    pub fn next_clip(&self, c: f64, unclipped: usize, sampled: usize, b: f64, xi: f64) -> f64 {
        let centred = unclipped as f64 - 0.5 * sampled as f64 + self.sigma_b * xi;
        let frac = centred / b + 0.5;
        c * (-self.lr * (frac - self.quantile)).exp()
    }
}
