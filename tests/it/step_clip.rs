//! Algorithm 1's step clips: a per-sample gradient far larger than tau moves w by at most
//! eta * tau / b through `Stepper::step` (not only inside the loss's clipped sum).

use dpsgd_lab::data::Dataset;
use dpsgd_lab::dpsgd::{
    DpSgd, DpSgdConfig, NoiseSpec, OutputRule, Projection, StepSchedule, Stepper,
};
use dpsgd_lab::linalg::norm2;
use dpsgd_lab::loss::{ClipStats, HuberLoss, Loss, Scratch, SoftmaxKernel, SoftmaxLoss};
use dpsgd_lab::rng::{Purpose, stream};
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};

#[test]
fn a_gradient_larger_than_tau_is_clipped_in_the_step() {
    // One sample with ||x|| = 1e3; q = b/n = 1, so it is in every batch; no noise.
    let x = vec![600.0, -800.0];
    let data = Dataset::new(x, vec![1.0], 2).unwrap();
    let (tau, eta) = (0.5, 1.0);
    let losses: Vec<Box<dyn Loss>> = vec![
        Box::new(SoftmaxLoss::new(2, 2)),
        // m = 5 > 4 classes: the two-GEMM path and the one-pass kernel.
        Box::new(SoftmaxLoss::new(2, 5).with_kernel(SoftmaxKernel::Gemm)),
        Box::new(SoftmaxLoss::new(2, 5).with_kernel(SoftmaxKernel::OnePass)),
        Box::new(HuberLoss::new(2, 1.0).unwrap()),
    ];
    for loss in losses {
        let alg = DpSgd::new(
            DpSgdConfig::new(
                1,
                1.0,
                StepSchedule::Constant(eta),
                StepSchedule::Constant(tau),
                NoiseSpec::None,
            )
            .with_output(OutputRule::LastIterate),
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
        )
        .unwrap();
        let stats = stepper.step(0, &mut w);
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

/// Gaussian data (x ~ N(0, s^2 I), with s varying by row so that some gradients are clipped and
/// some are not), labels uniform in 0..m, and a random W.
fn random_problem(n: usize, d: usize, m: usize, seed: u64) -> (Dataset, Vec<f64>) {
    let mut rng = stream(seed, 0, Purpose::Data);
    let mut x = Vec::with_capacity(n * d);
    for i in 0..n {
        let s = 0.02 + (i % 7) as f64 * 0.3 / (d as f64).sqrt();
        for _ in 0..d {
            let z: f64 = StandardNormal.sample(&mut rng);
            x.push(s * z);
        }
    }
    let y: Vec<f64> = (0..n).map(|_| rng.random_range(0..m) as f64).collect();
    let w: Vec<f64> = (0..m * (d + 1))
        .map(|_| {
            let z: f64 = StandardNormal.sample(&mut rng);
            0.5 * z
        })
        .collect();
    (Dataset::new(x, y, d).unwrap(), w)
}

/// Without AVX2 and FMA the one-pass kernel cannot run and `loss` falls back to the portable
/// two-GEMM path. The tests then still check that path (against Eq. (2)), but the one-pass
/// kernel goes untested on this machine: say so loudly instead of passing in silence.
fn warn_if_no_onepass(loss: &SoftmaxLoss, test: &str) {
    if !loss.uses_onepass() {
        eprintln!(
            "WARNING: {test}: this machine has no AVX2/FMA, so the one-pass kernel is NOT \
             tested here; only the portable two-GEMM path is checked"
        );
    }
}

#[test]
fn onepass_kernel_matches_the_two_gemm_path() {
    // (d, m, |batch|): m over all four vector widths (5..=16), d not a multiple of 4, batch
    // sizes that leave a remainder after the row blocks, and shapes on both sides of the
    // two-half split (m (d + 1) >= 4096), including size c of the speed benchmark.
    let shapes = [
        (7, 5, 13),
        (1, 6, 5),
        (33, 16, 9),
        (40, 9, 1),
        (300, 10, 37),
        (257, 13, 64),
        (784, 10, 501),
    ];
    let mut clipped_some = false;
    for (k, &(d, m, bsz)) in shapes.iter().enumerate() {
        let n = bsz + 11;
        let (data, w) = random_problem(n, d, m, 40 + k as u64);
        // every other sample, out of order (the kernel reads rows where they lie)
        let mut batch: Vec<usize> = (0..n).step_by(2).chain((1..n).step_by(2)).collect();
        batch.truncate(bsz);
        let gemm = SoftmaxLoss::new(d, m).with_kernel(SoftmaxKernel::Gemm);
        let one = SoftmaxLoss::new(d, m).with_kernel(SoftmaxKernel::OnePass);
        assert!(!gemm.uses_onepass());
        if k == 0 {
            warn_if_no_onepass(&one, "onepass_kernel_matches_the_two_gemm_path");
        }
        let p = gemm.param_dim();
        // tau near the median per-sample norm, so both clipped and unclipped samples occur
        let mut norms: Vec<f64> = batch
            .iter()
            .map(|&i| {
                let mut g = vec![0.0; p];
                gemm.grad(&w, data.row(i), data.y[i], &mut g);
                norm2(&g)
            })
            .collect();
        norms.sort_by(f64::total_cmp);
        let tau = norms[norms.len() / 2] * 1.0001;
        let (mut a, mut b) = (vec![0.0; p], vec![f64::NAN; p]);
        let sa = gemm.clipped_grad_sum(&w, &data, &batch, tau, &mut a, &mut Scratch::default());
        let sb = one.clipped_grad_sum(&w, &data, &batch, tau, &mut b, &mut Scratch::default());
        assert_same_clip(&sa, &sb, &format!("d {d} m {m}: clip counts"));
        clipped_some |= sb.clipped > 0 && sb.clipped < sb.count;
        // Two summation orders of at most 501 terms of norm <= tau: rounding is about
        // 501 * 2^-53 tau ~ 6e-14 tau per entry, far inside 1e-12 relative to ||sum||.
        let diff: Vec<f64> = a.iter().zip(&b).map(|(u, v)| u - v).collect();
        let rel = norm2(&diff) / norm2(&a);
        assert!(
            rel <= 1e-12,
            "d {d} m {m} b {bsz}: relative difference {rel:e}"
        );
        // and both agree with the per-sample definition, Eq. (2), one gradient at a time
        let mut r = vec![0.0; p];
        let mut g = vec![0.0; p];
        for &i in &batch {
            gemm.grad(&w, data.row(i), data.y[i], &mut g);
            let c = (tau / norm2(&g)).min(1.0);
            r.iter_mut().zip(&g).for_each(|(ri, gi)| *ri += c * gi);
        }
        let diff: Vec<f64> = r.iter().zip(&b).map(|(u, v)| u - v).collect();
        let rel = norm2(&diff) / norm2(&r);
        assert!(rel <= 1e-12, "d {d} m {m}: vs Eq. (2) per sample: {rel:e}");
    }
    assert!(
        clipped_some,
        "the shapes must clip some samples and not others"
    );
}

#[test]
fn onepass_kernel_clips_a_large_gradient_to_tau() {
    // One sample with ||x|| = 100 sqrt(150) ~ 1225 in 300 dimensions and 10 classes (the auto rule picks the
    // one-pass kernel here): its clipped gradient has norm exactly tau, in direction -grad.
    let d = 300;
    let x: Vec<f64> = (0..d)
        .map(|k| if k % 2 == 0 { 80.0 } else { -60.0 })
        .collect();
    let data = Dataset::new(x, vec![3.0], d).unwrap();
    let loss = SoftmaxLoss::new(d, 10);
    warn_if_no_onepass(&loss, "onepass_kernel_clips_a_large_gradient_to_tau");
    let p = loss.param_dim();
    let w: Vec<f64> = (0..p).map(|j| ((j * 37) % 11) as f64 * 1e-3).collect();
    let mut g = vec![0.0; p];
    loss.grad(&w, data.row(0), 3.0, &mut g);
    let tau = 0.5;
    assert!(norm2(&g) > 100.0 * tau);
    let mut out = vec![0.0; p];
    let st = loss.clipped_grad_sum(&w, &data, &[0], tau, &mut out, &mut Scratch::default());
    assert_eq!((st.count, st.clipped), (1, 1));
    assert!((norm2(&out) - tau).abs() <= 1e-12 * tau, "{}", norm2(&out));
    let cos = out.iter().zip(&g).map(|(a, b)| a * b).sum::<f64>() / (norm2(&out) * norm2(&g));
    assert!((cos - 1.0).abs() <= 1e-12, "direction: cos {cos}");
}

/// `Stepper::step_bounded` with the bound Clip(tau) and the sum's noise sd z tau is Algorithm 1's
/// step with noise multiplier z: same batches, same noise draws in the same order, same update.
/// Over 200 noisy steps of a softmax (m = 3, the blocked kernel) and a Huber problem with a
/// shrinking tau schedule, the iterates agree to 1e-12 relative; the only difference allowed is
/// the rounding of sigma (z / b) tau against (z tau) (1 / b). A stepper that drew its batch or its
/// noise from another place in the streams, or divided by |S_t| instead of b, would drift by O(1).
#[test]
fn step_bounded_with_clipping_is_the_step() {
    use dpsgd_lab::loss::PerSampleBound;
    let (n, d, b, z) = (300, 4, 12.0, 1.3);
    let (data, _) = random_problem(n, d, 3, 21);
    let reg = Dataset::new(
        data.x.clone(),
        data.x.chunks(d).map(|r| r[0] - r[1]).collect(),
        d,
    )
    .unwrap();
    let softmax = SoftmaxLoss::new(d, 3);
    let huber = HuberLoss::new(d, 0.5).unwrap();
    let cases: [(&dyn Loss, &Dataset); 2] = [(&softmax, &data), (&huber, &reg)];
    let steps = 200;
    let tau = |t: usize| 0.8 / (1.0 + t as f64 / 50.0);
    for (loss, data) in cases {
        let alg = DpSgd::new(
            DpSgdConfig::new(
                steps,
                b,
                StepSchedule::Constant(0.3),
                StepSchedule::Values {
                    values: (0..steps).map(tau).collect(),
                },
                NoiseSpec::Multiplier { z },
            )
            .with_projection(Projection::L2Ball { radius: 3.0 })
            .with_output(OutputRule::LastIterate),
            n,
            None,
        )
        .unwrap();
        let streams = || {
            (
                stream(5, 2, Purpose::Sampling),
                stream(5, 2, Purpose::Noise),
            )
        };
        let (s, nz) = streams();
        let mut a = Stepper::new(&alg, loss, data, s, nz).unwrap();
        let (s, nz) = streams();
        let mut bnd = Stepper::new(&alg, loss, data, s, nz).unwrap();
        let p = loss.param_dim();
        let (mut wa, mut wb) = (vec![0.0; p], vec![0.0; p]);
        let mut clipped = 0;
        for t in 0..steps {
            let sa = a.step(t, &mut wa);
            let sb = bnd.step_bounded(t, &mut wb, PerSampleBound::Clip(tau(t)), z * tau(t));
            assert_same_clip(
                &sa,
                &sb,
                &format!("{} step {t}: batch or clip counts differ", loss.name()),
            );
            clipped += sa.clipped;
            for (x, y) in wa.iter().zip(&wb) {
                assert!(
                    (x - y).abs() <= 1e-12 * (1.0 + x.abs()),
                    "{} step {t}: {x} vs {y}",
                    loss.name()
                );
            }
        }
        assert!(
            clipped > 0,
            "{}: some gradients must be clipped",
            loss.name()
        );
        assert!(norm2(&wa) > 0.1, "{}: the iterate must move", loss.name());
    }
}

/// `Stepper::new` validates what it borrows for its lifetime: a data set of another size than
/// the configured n, or labels the loss cannot read (class 7 of a 2-class softmax, which the
/// m <= 4 kernel would otherwise silently treat as no class), are refused with an error naming
/// them. Stepping on another data set is not expressible: the stepper owns its data borrow.
#[test]
fn the_stepper_validates_its_data_set_and_loss() {
    let alg = DpSgd::new(
        DpSgdConfig::new(
            1,
            1.0,
            StepSchedule::Constant(0.1),
            StepSchedule::Constant(1.0),
            NoiseSpec::None,
        ),
        2,
        None,
    )
    .unwrap();
    let loss = SoftmaxLoss::new(1, 2);
    let new = |data: &Dataset| {
        Stepper::new(
            &alg,
            &loss,
            data,
            stream(1, 0, Purpose::Sampling),
            stream(1, 0, Purpose::Noise),
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
    };
    assert_eq!(
        new(&Dataset::new(vec![1.0, 2.0], vec![0.0, 1.0], 1).unwrap()),
        Ok(())
    );
    let three = Dataset::new(vec![1.0, 2.0, 3.0], vec![0.0, 1.0, 0.0], 1).unwrap();
    let e = new(&three).unwrap_err();
    assert!(e.contains("n = 2") && e.contains("n = 3"), "{e}");
    let bad_label = Dataset::new(vec![1.0, 2.0], vec![0.0, 7.0], 1).unwrap();
    let e = new(&bad_label).unwrap_err();
    assert!(e.contains("label of sample 1 is 7"), "{e}");
}

/// The same batch and clip counts, exactly, and the same gradient mass and clipped mass up to
/// the summation order: two paths add at most a few hundred norms of size <= max ||g_i||, so
/// their sums agree to about 500 * 2^-53 relative, far inside 1e-12.
fn assert_same_clip(a: &ClipStats, b: &ClipStats, what: &str) {
    assert_eq!((a.clipped, a.count), (b.clipped, b.count), "{what}");
    for (x, y) in [(a.norm_sum, b.norm_sum), (a.excess, b.excess)] {
        assert!(
            (x - y).abs() <= 1e-12 * x.abs().max(y.abs()).max(f64::MIN_POSITIVE),
            "{what}: {a:?} vs {b:?}"
        );
    }
}
