//! Algorithm 1's step clips: a per-sample gradient far larger than tau moves w by at most
//! eta * tau / b through `Stepper::step` (not only inside the loss's clipped sum).

use dpsgd_lab::data::Dataset;
use dpsgd_lab::dpsgd::{
    DpSgd, DpSgdConfig, Init, NoiseSpec, OutputRule, Projection, StepSchedule, Stepper,
};
use dpsgd_lab::loss::{HuberLoss, Loss, SoftmaxLoss, norm2};
use dpsgd_lab::rng::{Purpose, stream};

#[test]
fn a_gradient_larger_than_tau_is_clipped_in_the_step() {
    // One sample with ||x|| = 1e3; q = b/n = 1, so it is in every batch; no noise.
    let x = vec![600.0, -800.0];
    let data = Dataset::new(x, vec![1.0], 2).unwrap();
    let (tau, eta) = (0.5, 1.0);
    let losses: Vec<Box<dyn Loss>> = vec![
        Box::new(SoftmaxLoss::new(2, 2)),
        Box::new(HuberLoss::new(2, 1.0).unwrap()),
    ];
    for loss in losses {
        let alg = DpSgd::new(
            DpSgdConfig {
                steps: 1,
                batch_size: 1.0,
                learning_rate: StepSchedule::Constant(eta),
                clip_norm: StepSchedule::Constant(tau),
                noise: NoiseSpec::None,
                projection: Projection::None,
                output: OutputRule::LastIterate,
                init: Init::Zeros,
            },
            1,
            None,
        )
        .unwrap();
        let p = loss.param_dim();
        let w0 = vec![0.0; p];
        let mut g = vec![0.0; p];
        loss.grad(&w0, data.row(0), data.y[0], &mut g);
        assert!(norm2(&g) > 100.0 * tau, "the test needs ||grad|| >> tau");
        let mut w = w0.clone();
        let mut stepper = Stepper::new(
            &alg,
            loss.as_ref(),
            &data,
            stream(1, 0, Purpose::Sampling),
            stream(1, 0, Purpose::Noise),
        );
        let stats = stepper.step(loss.as_ref(), &data, 0, &mut w);
        assert_eq!((stats.count, stats.clipped), (1, 1), "{}", loss.name());
        let moved: Vec<f64> = w.iter().zip(&w0).map(|(a, b)| a - b).collect();
        // Exactly eta * tau / b along -grad: clipped to norm tau, divided by b = 1.
        assert!(
            (norm2(&moved) - eta * tau).abs() <= 1e-12,
            "{}: the step moved {} but clipping bounds it by eta tau = {}",
            loss.name(),
            norm2(&moved),
            eta * tau
        );
    }
}
