//! One training run of the study: Algorithm 1 with constant eta and tau, test accuracy after
//! every epoch. The loop is ours (not [`crate::dpsgd::DpSgd::run`]) so that accuracy is taken
//! per epoch and a diverged run stops early.

use crate::data::Dataset;
use crate::dpsgd::{DpSgd, DpSgdConfig, NoiseSpec, OutputRule, Projection, StepSchedule, Stepper};
use crate::error::Result;
use crate::rng::{Purpose, stream};

use super::model::Model;

/// What every run of a study shares.
pub struct Setup<'a> {
    pub model: &'a Model,
    pub train: &'a Dataset,
    pub test: &'a Dataset,
    /// Expected batch size b.
    pub batch: f64,
    /// Steps per epoch, round(n / b).
    pub steps_per_epoch: usize,
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
    pub diverged: bool,
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
        let cfg = DpSgdConfig {
            steps: self.steps(),
            batch_size: self.batch,
            learning_rate: StepSchedule::Constant(eta),
            clip_norm: StepSchedule::Constant(tau),
            noise: NoiseSpec::Multiplier { z },
            projection: Projection::None,
            output: OutputRule::LastIterate,
            init: self.model.init(),
        };
        let loss = self.model.loss();
        let alg = DpSgd::new(cfg, self.train.n, None)?;
        let r = run as u64;
        let mut w =
            alg.initial_point(loss.param_dim(), &mut stream(self.seed, r, Purpose::Init))?;
        let mut stepper = Stepper::new(
            &alg,
            loss,
            self.train,
            stream(self.seed, r, Purpose::Sampling),
            stream(self.seed, r, Purpose::Noise),
        );
        let mut acc = Vec::with_capacity(self.epochs);
        let mut diverged = false;
        let mut t = 0;
        for _ in 0..self.epochs {
            for _ in 0..self.steps_per_epoch {
                stepper.step(loss, self.train, t, &mut w);
                t += 1;
            }
            if w.iter().any(|v| !v.is_finite()) {
                diverged = true;
                acc.resize(self.epochs, 0.0);
                break;
            }
            acc.push(self.model.accuracy(&w, self.test));
        }
        let last = &acc[self.epochs - self.average_last..];
        Ok(Outcome {
            acc_last: last.iter().sum::<f64>() / last.len() as f64,
            acc,
            diverged,
            clipped_fraction: if stepper.sampled == 0 {
                0.0
            } else {
                stepper.clipped as f64 / stepper.sampled as f64
            },
        })
    }
}
