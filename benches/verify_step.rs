//! The step `verify` spends its time on: tiny problems (n = 400, d = 5, expected batch b = 10;
//! Appendix L at its specs' n = 1000, d = 32 with 96% zero rows), float64, one DP-SGD step with
//! Poisson sampling, clipping and Gaussian noise. `verify --full` executes about 2.93e9 such steps
//! on 2 cores, so these steps are most of its run time.
//!
//! Run: `cargo bench -p dpsgd-lab-bench --bench verify_step`.

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use dpsgd_lab::data::Dataset;
use dpsgd_lab::loss::{AppendixLLoss, HuberLoss, Loss, RobustLoss, SharpLoss};
use dpsgd_lab::rng::{Purpose, stream};
use rand::{Rng, RngExt, SeedableRng};
use rand_distr::{Distribution, Exp1, StandardNormal};
use rand_pcg::Pcg64Mcg;
use rand_xoshiro::Xoshiro256PlusPlus;

/// n rows of N(0, I_d) (a row is 0 with probability `zero`), labels `label(z)` of z ~ N(0, 1).
fn data(n: usize, d: usize, zero: f64, label: impl Fn(f64) -> f64) -> Dataset {
    let mut rng = stream(0, 0, Purpose::Data);
    let mut x = Vec::with_capacity(n * d);
    for _ in 0..n {
        let keep = rng.random::<f64>() >= zero;
        x.extend((0..d).map(|_| {
            let z: f64 = StandardNormal.sample(&mut rng);
            if keep { z } else { 0.0 }
        }));
    }
    let y = (0..n)
        .map(|_| label(StandardNormal.sample(&mut rng)))
        .collect();
    Dataset::new(x, y, d).unwrap()
}

fn bench_one(c: &mut Criterion, label: &str, data: &Dataset, loss: &dyn Loss, tau: f64) {
    let alg = common::one_step_alg(data.n, 10.0, 0.01, tau);
    let mut w = vec![0.0; loss.param_dim()];
    let mut stepper = common::stepper(&alg, loss, data);
    c.bench_function(label, |bch| {
        bch.iter(|| stepper.step(0, &mut w));
    });
}

/// The floor a step cannot go below with these draws: the draws one step makes (b + 1 Exp(1)
/// gaps for a batch of b = 10, and d = 5 normals), and nothing else. The results are combined
/// by xor of their bits, so no floating-point addition chain adds latency that a step does not
/// have. The committed generator (PCG64) is timed beside two others: the ziggurat draws, not the
/// generator, set this floor.
fn bench_draws(c: &mut Criterion) {
    fn draws<R: Rng>(c: &mut Criterion, label: &str, mut sampling: R, mut noise: R) {
        c.bench_function(label, |bch| {
            bch.iter(|| {
                let mut acc = 0u64;
                for _ in 0..11 {
                    let e: f64 = Exp1.sample(&mut sampling);
                    acc ^= e.to_bits();
                }
                for _ in 0..5 {
                    let z: f64 = StandardNormal.sample(&mut noise);
                    acc ^= z.to_bits();
                }
                acc
            });
        });
    }
    draws(
        c,
        "verify_step/draws_only_11exp_5normal",
        stream(1, 0, Purpose::Sampling),
        stream(1, 0, Purpose::Noise),
    );
    draws(
        c,
        "verify_step/draws_only_pcg64mcg",
        Pcg64Mcg::seed_from_u64(1),
        Pcg64Mcg::seed_from_u64(2),
    );
    draws(
        c,
        "verify_step/draws_only_xoshiro256pp",
        Xoshiro256PlusPlus::seed_from_u64(1),
        Xoshiro256PlusPlus::seed_from_u64(2),
    );
}

fn bench_verify_steps(c: &mut Criterion) {
    let d = 5;
    let sharp = data(400, d, 0.0, |z| 1.0 + 0.5 * z.abs());
    bench_one(
        c,
        "verify_step/sharp_n400_d5_b10",
        &sharp,
        &SharpLoss::new(d),
        1.2,
    );
    let reg = data(400, d, 0.0, |z| z);
    let huber = HuberLoss::new(d, 1.0).unwrap();
    bench_one(c, "verify_step/huber_n400_d5_b10", &reg, &huber, 2.0);
    bench_one(
        c,
        "verify_step/robust_n400_d5_b10",
        &reg,
        &RobustLoss::new(d),
        2.0,
    );
    let lower = data(1000, 32, 0.96, |_| 0.0);
    let appl = AppendixLLoss::new(32);
    bench_one(
        c,
        "verify_step/appendix_l_n1000_d32_b10",
        &lower,
        &appl,
        5.0,
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = bench_verify_steps, bench_draws
}
criterion_main!(benches);
