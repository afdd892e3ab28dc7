//! What the step benchmarks share.

use dpsgd_lab::data::Dataset;
use dpsgd_lab::dpsgd::{
    DpSgd, DpSgdConfig, Init, NoiseSpec, OutputRule, Projection, StepSchedule, Stepper,
};
use dpsgd_lab::loss::Loss;
use dpsgd_lab::rng::{Purpose, stream};

/// One-step DP-SGD on n samples with expected batch b, constant step size and clip norm, noise
/// multiplier 1, no projection: the configuration every step benchmark times.
pub fn one_step_alg(n: usize, b: f64, learning_rate: f64, clip_norm: f64) -> DpSgd {
    DpSgd::new(
        DpSgdConfig::new(
            1,
            b,
            StepSchedule::Constant(learning_rate),
            StepSchedule::Constant(clip_norm),
            NoiseSpec::Multiplier { z: 1.0 },
        )
        .with_output(OutputRule::LastIterate),
        n,
        None,
    )
    .unwrap()
}

/// A stepper for `alg` on `data` with the sampling and noise streams of seed 1, replicate 0.
pub fn stepper<'a>(alg: &'a DpSgd, loss: &'a dyn Loss, data: &'a Dataset) -> Stepper<'a> {
    Stepper::new(
        alg,
        loss,
        data,
        stream(1, 0, Purpose::Sampling),
        stream(1, 0, Purpose::Noise),
    )
    .expect("the bench's data fits its loss")
}
