//! One DP-SGD step (Algorithm 1, lines 3-5) of multinomial logistic regression at the three
//! sizes of shared/bench/README.md, float64, ghost clipping, single-threaded.
//! Throughput is in examples (expected batch size b) per second; steps/s = examples/s / b.
//!
//! Run: `cargo bench --bench dpsgd_step`. Compare with the numpy reference
//! (`python3 ../shared/bench/dpsgd_numpy.py --n ... --d ... --m ... --b ... --steps ...`) on the
//! same machine in the same sitting.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dpsgd_lab::data::Dataset;
use dpsgd_lab::dpsgd::{
    DpSgd, DpSgdConfig, Init, NoiseSpec, OutputRule, Projection, StepSchedule, Stepper,
};
use dpsgd_lab::loss::{Loss, SoftmaxLoss};
use dpsgd_lab::rng::{Purpose, stream};
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};

/// The reference's data: x ~ N(0, I_d), y ~ Uniform{0..m-1}.
fn data(n: usize, d: usize, m: usize) -> Dataset {
    let mut rng = stream(0, 0, Purpose::Data);
    let x: Vec<f64> = (0..n * d)
        .map(|_| {
            let z: f64 = StandardNormal.sample(&mut rng);
            z
        })
        .collect();
    let y: Vec<f64> = (0..n).map(|_| rng.random_range(0..m) as f64).collect();
    Dataset::new(x, y, d).unwrap()
}

fn bench_steps(c: &mut Criterion) {
    // (label, n, d, m, b) as in shared/bench/README.md
    let sizes = [
        ("a_n10000_d10_m2_b64", 10_000, 10, 2, 64.0),
        ("b_n50000_d512_m100_b500", 50_000, 512, 100, 500.0),
        ("c_n60000_d784_m10_b500", 60_000, 784, 10, 500.0),
    ];
    let mut group = c.benchmark_group("dpsgd_step_logistic_f64");
    for (label, n, d, m, b) in sizes {
        let data = data(n, d, m);
        let loss = SoftmaxLoss::new(d, m);
        let alg = DpSgd::new(
            DpSgdConfig {
                steps: 1,
                batch_size: b,
                learning_rate: StepSchedule::Constant(0.5),
                clip_norm: StepSchedule::Constant(1.0),
                noise: NoiseSpec::Multiplier { z: 1.0 },
                projection: Projection::None,
                output: OutputRule::LastIterate,
                init: Init::Zeros,
            },
            n,
            None,
        )
        .unwrap();
        let mut w = vec![0.0; loss.param_dim()];
        let mut stepper = Stepper::new(
            &alg,
            &loss,
            &data,
            stream(1, 0, Purpose::Sampling),
            stream(1, 0, Purpose::Noise),
        );
        // warm the buffers so the timed loop never allocates
        for _ in 0..20 {
            stepper.step(&loss, &data, 0, &mut w);
        }
        group.throughput(Throughput::Elements(b as u64));
        group.bench_function(label, |bch| {
            bch.iter(|| stepper.step(&loss, &data, 0, &mut w));
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(4));
    targets = bench_steps
}
criterion_main!(benches);
