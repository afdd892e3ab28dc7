//! Algorithm 1 end to end: the noise's law, the divisor b, projection, the output rule,
//! Theorem 3.4's sigma, and bit-identical results for any thread count.

use std::ops::ControlFlow;

use dpsgd_lab::data::Dataset;
use dpsgd_lab::dpsgd::{
    DpSgd, DpSgdConfig, NoiseSpec, OutputRule, Projection, RunEnd, StepSchedule, theorem_3_4_sigma,
};
use dpsgd_lab::linalg::norm2;
use dpsgd_lab::loss::{AppendixLLoss, Loss, SoftmaxLoss};
use dpsgd_lab::rng::{Purpose, stream};
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

fn cfg(steps: usize, b: f64, lr: f64, tau: f64, noise: NoiseSpec) -> DpSgdConfig {
    DpSgdConfig::new(
        steps,
        b,
        StepSchedule::Constant(lr),
        StepSchedule::Constant(tau),
        noise,
    )
}

fn logistic_data(n: usize, d: usize, seed: u64) -> Dataset {
    let mut rng = stream(seed, 0, Purpose::Data);
    let x: Vec<f64> = (0..n * d)
        .map(|_| {
            let z: f64 = StandardNormal.sample(&mut rng);
            z
        })
        .collect();
    let y: Vec<f64> = (0..n).map(|i| (x[i * d] > 0.0) as u8 as f64).collect();
    Dataset::new(x, y, d).unwrap()
}

/// With all-zero features the Appendix L loss has zero gradient at w_0 = 0, so one step with
/// eta = 1 gives w_1 = -zeta_0 exactly: its p = 40000 coordinates are i.i.d. N(0, sigma_n^2).
/// The sample variance has standard error sigma^2 sqrt(2/(p-1)) and the sample mean sigma/sqrt(p);
/// both must lie within 4 standard errors.
#[test]
fn noise_has_variance_sigma_n_squared() {
    let (n, p) = (100, 40_000);
    let data = Dataset::new(vec![0.0; n * p], vec![0.0; n], p).unwrap();
    let noise = NoiseSpec::Theorem34 {
        nu: 2.0,
        epsilon: 0.5,
        delta: 1e-5,
    };
    let alg = DpSgd::new(cfg(1, 10.0, 1.0, 0.8, noise), n, None).unwrap();
    let sigma = theorem_3_4_sigma(2.0, 1, 1e-5, 0.8, n, 0.5);
    let out = alg.run(&AppendixLLoss::new(p), &data, 5, 0).unwrap();
    assert!((out.sigma_n - sigma).abs() <= 1e-15 * sigma);
    let w = &out.w_last;
    let m = w.iter().sum::<f64>() / p as f64;
    let var = w.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (p as f64 - 1.0);
    let s2 = sigma * sigma;
    assert!(m.abs() < 4.0 * sigma / (p as f64).sqrt(), "mean {m}");
    assert!(
        (var - s2).abs() < 4.0 * s2 * (2.0 / (p as f64 - 1.0)).sqrt(),
        "var {var} vs {s2}"
    );
}

/// Theorem 3.4 by hand: nu = 3, T = 100, delta = e^-4 (log(1/delta) = 4), tau = 2, n = 50,
/// eps = 0.5: sigma^2 = 3 * 100 * 4 * 4 / (2500 * 0.25) = 7.68.
#[test]
fn theorem_3_4_sigma_by_hand() {
    let s = theorem_3_4_sigma(3.0, 100, (-4f64).exp(), 2.0, 50, 0.5);
    assert!((s * s - 7.68).abs() < 1e-12);
    // A noise multiplier z gives sigma_n = z tau / b.
    let alg = DpSgd::new(
        cfg(3, 20.0, 0.1, 1.5, NoiseSpec::Multiplier { z: 1.1 }),
        100,
        None,
    )
    .unwrap();
    assert!((alg.noise().sigma_per_tau * 1.5 - 1.1 * 1.5 / 20.0).abs() < 1e-15);
}

/// The sum of clipped gradients is divided by the expected batch size b, not by |S_t|: with every
/// x_i = v the Appendix L gradient at w_0 = 0 is -v for every sample, so one noiseless step with
/// eta = 1 gives w_1 = (|S_0| / b) v, and |S_0| is reported by the run.
#[test]
fn step_divides_by_expected_batch_size() {
    let (n, d) = (1000, 3);
    let v = [0.1, -0.2, 0.05];
    let data = Dataset::new(v.repeat(n), vec![0.0; n], d).unwrap();
    for seed in 0..5 {
        let alg = DpSgd::new(cfg(1, 37.0, 1.0, 1e9, NoiseSpec::None), n, None).unwrap();
        let out = alg.run(&AppendixLLoss::new(d), &data, seed, 0).unwrap();
        let realized = out.mean_batch; // one step: the realized batch size
        assert_ne!(realized, 37.0);
        for (wk, vk) in out.w_last.iter().zip(v) {
            assert!((wk - realized / 37.0 * vk).abs() < 1e-15);
        }
    }
}

/// Every iterate stays in the ball ||w|| <= R (Algorithm 1, line 5).
#[test]
fn projection_keeps_iterates_in_the_ball() {
    let data = logistic_data(400, 5, 1);
    let loss = SoftmaxLoss::new(5, 2);
    let mut c = cfg(200, 40.0, 5.0, 1.0, NoiseSpec::Multiplier { z: 3.0 });
    c.projection = Projection::L2Ball { radius: 0.7 };
    let alg = DpSgd::new(c, data.n, None).unwrap();
    let mut max_norm: f64 = 0.0;
    alg.run_with(&loss, &data, 3, 0, |_, w| {
        max_norm = max_norm.max(norm2(w));
        ControlFlow::Continue(())
    })
    .unwrap();
    assert!(max_norm <= 0.7 * (1.0 + 1e-12), "max norm {max_norm}");
    assert!(
        max_norm > 0.69,
        "the run should reach the boundary, max norm {max_norm}"
    );
}

/// The random iterate is w_that for the reported that in 0..T; the average iterate is the mean of
/// w_0..w_{T-1}; the last iterate is w_T.
#[test]
fn output_rules_return_the_right_iterates() {
    let data = logistic_data(300, 4, 2);
    let loss = SoftmaxLoss::new(4, 2);
    for rule in [
        OutputRule::RandomIterate,
        OutputRule::LastIterate,
        OutputRule::AverageIterate,
    ] {
        let mut c = cfg(25, 30.0, 0.5, 1.0, NoiseSpec::Multiplier { z: 1.0 });
        c.output = rule;
        let alg = DpSgd::new(c, data.n, None).unwrap();
        let mut traj: Vec<Vec<f64>> = Vec::new();
        let out = alg
            .run_with(&loss, &data, 9, 1, |_, w| {
                traj.push(w.to_vec());
                ControlFlow::Continue(())
            })
            .unwrap()
            .into_output()
            .unwrap();
        assert_eq!(traj.len(), 26);
        assert!(out.t_hat < 25);
        assert_eq!(out.w_last, traj[25]);
        let p = loss.param_dim();
        for k in 0..p {
            let mean = traj[..25].iter().map(|w| w[k]).sum::<f64>() / 25.0;
            assert!((out.w_avg[k] - mean).abs() < 1e-12);
        }
        match rule {
            OutputRule::RandomIterate => assert_eq!(out.w_priv, traj[out.t_hat]),
            OutputRule::LastIterate => assert_eq!(out.w_priv, out.w_last),
            OutputRule::AverageIterate => assert_eq!(out.w_priv, out.w_avg),
        }
    }
}

/// `observe_at` (verify's risk estimate) sees the same w_t as a full run, bit for bit, once per
/// repeat of t, in order, including w_0 and w_T; unsorted or out-of-range steps are refused.
#[test]
fn observe_at_sees_the_full_runs_iterates() {
    let data = logistic_data(300, 4, 5);
    let loss = SoftmaxLoss::new(4, 3);
    let mut c = cfg(40, 30.0, 0.5, 1.0, NoiseSpec::Multiplier { z: 1.0 });
    c.projection = Projection::L2Ball { radius: 2.0 };
    let alg = DpSgd::new(c, data.n, None).unwrap();
    let mut traj: Vec<Vec<f64>> = Vec::new();
    alg.run_with(&loss, &data, 9, 2, |_, w| {
        traj.push(w.to_vec());
        ControlFlow::Continue(())
    })
    .unwrap();
    for at in [vec![0, 3, 3, 17, 39], vec![5, 40, 40], vec![0], vec![]] {
        let mut seen: Vec<(usize, Vec<f64>)> = Vec::new();
        alg.observe_at(&loss, &data, 9, 2, &at, |t, w| seen.push((t, w.to_vec())))
            .unwrap();
        let want: Vec<(usize, Vec<f64>)> = at.iter().map(|&t| (t, traj[t].clone())).collect();
        assert_eq!(seen, want, "at {at:?}");
    }
    assert!(
        alg.observe_at(&loss, &data, 9, 2, &[3, 2], |_, _| {})
            .is_err()
    );
    assert!(
        alg.observe_at(&loss, &data, 9, 2, &[41], |_, _| {})
            .is_err()
    );
}

/// An observer's `Break` at t stops `run_with` before step t: the stopped run holds w_t of the
/// full run bit for bit, t steps' clipped fraction, and no output; a `Break` at T (after the
/// last step) also stops it. Steps are never taken after the stop (the observer is called
/// t + 1 times).
#[test]
fn observer_break_stops_the_run_before_step_t() {
    let data = logistic_data(300, 4, 5);
    let loss = SoftmaxLoss::new(4, 3);
    let c = cfg(40, 30.0, 0.5, 1.5, NoiseSpec::Multiplier { z: 1.0 });
    let alg = DpSgd::new(c, data.n, None).unwrap();
    let mut traj: Vec<Vec<f64>> = Vec::new();
    let full = alg
        .run_with(&loss, &data, 9, 2, |_, w| {
            traj.push(w.to_vec());
            ControlFlow::Continue(())
        })
        .unwrap()
        .into_output()
        .unwrap();
    assert!(
        full.clipped_fraction > 0.0 && full.clipped_fraction < 1.0,
        "{}",
        full.clipped_fraction
    );
    for stop in [0, 1, 17, 40] {
        let mut calls = 0;
        let end = alg
            .run_with(&loss, &data, 9, 2, |t, _| {
                calls += 1;
                if t == stop {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .unwrap();
        assert_eq!(calls, stop + 1);
        let RunEnd::Stopped(s) = end.clone() else {
            panic!("a Break at {stop} must stop the run")
        };
        assert_eq!((s.t, s.steps), (stop, 40));
        assert_eq!(s.w, traj[stop], "w at the stop {stop}");
        if stop == 0 {
            assert_eq!(s.clipped_fraction, 0.0);
        } else if stop == 40 {
            assert_eq!(s.clipped_fraction, full.clipped_fraction);
        }
        let err = end.into_output().unwrap_err().to_string();
        assert!(err.contains(&format!("at step {stop} of 40")), "{err}");
    }
}

/// that ~ unif{0..T-1}: over 4000 replicates with T = 8 each count is Binomial(4000, 1/8),
/// mean 500, sd 20.9; every count within 4 sd.
#[test]
fn random_iterate_index_is_uniform() {
    let data = logistic_data(50, 2, 3);
    let loss = SoftmaxLoss::new(2, 2);
    let alg = DpSgd::new(cfg(8, 5.0, 0.1, 1.0, NoiseSpec::None), data.n, None).unwrap();
    let mut counts = [0usize; 8];
    for r in 0..4000 {
        counts[alg.run(&loss, &data, 77, r).unwrap().t_hat] += 1;
    }
    let sd = (4000.0f64 * 0.125 * 0.875).sqrt();
    for c in counts {
        assert!((c as f64 - 500.0).abs() < 4.0 * sd, "counts {counts:?}");
    }
}

fn replicate_bits(threads: usize) -> Vec<Vec<u64>> {
    let data = logistic_data(2000, 10, 4);
    let loss = SoftmaxLoss::new(10, 2);
    let alg = DpSgd::new(
        cfg(60, 50.0, 0.3, 0.5, NoiseSpec::Multiplier { z: 0.8 }),
        data.n,
        None,
    )
    .unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        (0..16u64)
            .into_par_iter()
            .map(|r| {
                let out = alg.run(&loss, &data, 2024, r).unwrap();
                out.w_priv
                    .iter()
                    .chain(&out.w_last)
                    .map(|v| v.to_bits())
                    .collect()
            })
            .collect()
    })
}

/// A run is a pure function of (config, seed, replicate): bit-identical with 1 and 2 threads.
#[test]
fn bit_identical_for_any_thread_count() {
    let one = replicate_bits(1);
    let two = replicate_bits(2);
    assert_eq!(one, two);
    assert_ne!(one[0], one[1], "replicates must differ");
}

/// Bad hyperparameters are errors that name the value.
#[test]
fn bad_hyperparameters_are_named() {
    let msg = |c: DpSgdConfig, n: usize| DpSgd::new(c, n, None).unwrap_err().to_string();
    let m = msg(cfg(10, 200.0, 0.1, 1.0, NoiseSpec::None), 100);
    assert!(
        m.contains("batch_size b = 200") && m.contains("n = 100"),
        "{m}"
    );
    let m = msg(cfg(10, 10.0, 0.1, -1.0, NoiseSpec::None), 100);
    assert!(m.contains("clip_norm tau") && m.contains("-1"), "{m}");
    let m = msg(
        cfg(
            10,
            10.0,
            0.1,
            1.0,
            NoiseSpec::Theorem34 {
                nu: 1.0,
                epsilon: 0.0,
                delta: 1e-5,
            },
        ),
        100,
    );
    assert!(
        m.contains("epsilon must be positive and finite, but is 0"),
        "{m}"
    );
    let m = msg(
        cfg(
            10,
            10.0,
            0.1,
            1.0,
            NoiseSpec::Theorem34 {
                nu: 1.0,
                epsilon: 1.0,
                delta: 1.5,
            },
        ),
        100,
    );
    assert!(m.contains("delta") && m.contains("1.5"), "{m}");
    let m = msg(
        cfg(
            10,
            10.0,
            0.1,
            1.0,
            NoiseSpec::Theorem34 {
                nu: -2.0,
                epsilon: 1.0,
                delta: 0.1,
            },
        ),
        100,
    );
    assert!(m.contains("nu") && m.contains("-2"), "{m}");
    let m = msg(cfg(0, 10.0, 0.1, 1.0, NoiseSpec::None), 100);
    assert!(m.contains("steps"), "{m}");
    let mut c = cfg(5, 10.0, 0.1, 1.0, NoiseSpec::None);
    c.clip_norm = StepSchedule::Values {
        values: vec![1.0, 1.0],
    };
    assert!(msg(c, 100).contains("2 values"));
}

/// zeta_t is drawn from the noise stream alone, coordinate by coordinate in order: with zero
/// gradients and eta = 1, w_1 = -sigma_n z bit for bit, z the stream's first p standard normals
/// (so no other stream and no thread schedule can change the noise).
#[test]
fn noise_draws_are_the_noise_stream_in_order() {
    for p in [100usize, 5000] {
        let n = 20;
        let data = Dataset::new(vec![0.0; n * p], vec![0.0; n], p).unwrap();
        let alg = DpSgd::new(
            cfg(1, 5.0, 1.0, 2.0, NoiseSpec::Multiplier { z: 1.5 }),
            n,
            None,
        )
        .unwrap();
        let out = alg.run(&AppendixLLoss::new(p), &data, 31, 4).unwrap();
        let sigma = 1.5 * 2.0 / 5.0;
        let mut rng = stream(31, 4, Purpose::Noise);
        for (k, wk) in out.w_last.iter().enumerate() {
            let z: f64 = StandardNormal.sample(&mut rng);
            assert_eq!(
                wk.to_bits(),
                (-(sigma * z)).to_bits(),
                "p = {p}, coordinate {k}"
            );
        }
    }
}
