//! What the step benchmarks share.

use dpsgd_lab::dpsgd::{DpSgd, DpSgdConfig, Init, NoiseSpec, OutputRule, Projection, StepSchedule};

/// One-step DP-SGD on n samples with expected batch b, constant step size and clip norm, noise
/// multiplier 1, no projection: the configuration every step benchmark times.
pub fn one_step_alg(n: usize, b: f64, learning_rate: f64, clip_norm: f64) -> DpSgd {
    DpSgd::new(
        DpSgdConfig {
            steps: 1,
            batch_size: b,
            learning_rate: StepSchedule::Constant(learning_rate),
            clip_norm: StepSchedule::Constant(clip_norm),
            noise: NoiseSpec::Multiplier { z: 1.0 },
            projection: Projection::None,
            output: OutputRule::LastIterate,
            init: Init::Zeros,
        },
        n,
        None,
    )
    .unwrap()
}
