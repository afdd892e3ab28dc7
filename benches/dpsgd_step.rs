//! One DP-SGD step (Algorithm 1, lines 3-5) of multinomial logistic regression at the three
//! sizes of the README's speed table, float64, ghost clipping.
//! Throughput is in examples (expected batch size b) per second; steps/s = examples/s / b.
//!
//! Run: `cargo bench -p dpsgd-lab-bench --bench dpsgd_step` (or `cargo bench` in this folder).
//! `python3 scripts/speed_table.py` runs it with the numpy reference `scripts/bench_numpy.py` in
//! one sitting and prints the README's table.

mod common;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dpsgd_lab::data::Dataset;
use dpsgd_lab::linalg::{Mat, gemm};
use dpsgd_lab::loss::{Loss, Scratch, SoftmaxKernel, SoftmaxLoss, bench_clipped_sum2};
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

/// The stepper of one benchmark shape, warmed so that the timed loop never allocates.
fn bench_one(
    group: &mut criterion::BenchmarkGroup<criterion::measurement::WallTime>,
    label: &str,
    data: &Dataset,
    loss: &SoftmaxLoss,
    b: f64,
) {
    let alg = common::one_step_alg(data.n, b, 0.5, 1.0);
    let mut w = vec![0.0; loss.param_dim()];
    let mut stepper = common::stepper(&alg, loss, data);
    for _ in 0..20 {
        stepper.step(0, &mut w);
    }
    group.throughput(Throughput::Elements(b as u64));
    group.bench_function(label, |bch| {
        bch.iter(|| stepper.step(0, &mut w));
    });
}

/// The one-pass kernel against the two-GEMM path, both forced, at b = 500: over d at m = 10,
/// and over m at d = 784 (the measured crossover behind `loss::logistic::onepass_wins`).
fn bench_crossover(c: &mut Criterion) {
    let mut group = c.benchmark_group("softmax_kernel_crossover");
    for (n, d, m) in [
        (20_000, 64, 10),
        (20_000, 256, 10),
        (60_000, 784, 10),
        (60_000, 784, 16),
    ] {
        let data = data(n, d, m);
        for (name, kernel) in [
            ("gemm", SoftmaxKernel::Gemm),
            ("onepass", SoftmaxKernel::OnePass),
        ] {
            let loss = SoftmaxLoss::new(d, m).with_kernel(kernel);
            bench_one(
                &mut group,
                &format!("{name}_d{d}_m{m}"),
                &data,
                &loss,
                500.0,
            );
        }
    }
    group.finish();
}

/// The m = 2 kernel's AVX2 blocks (`softmax_small::avx`, about 140 lines of `unsafe`) against
/// its portable twin on the same data, weights and batch (code-review.md section 4): the clipped
/// sum alone, no sampling or noise, at size a's d = 10, b = 64 and at d = 64 and d = 784 with
/// b = 500. On a machine without AVX2 both labels time the portable blocks.
fn bench_m2_vector(c: &mut Criterion) {
    let mut group = c.benchmark_group("softmax_m2_vector_vs_portable");
    for (n, d, b) in [(10_000, 10, 64), (20_000, 64, 500), (20_000, 784, 500)] {
        let data = data(n, d, 2);
        let w: Vec<f64> = (0..2 * (d + 1))
            .map(|k| (k as f64 * 0.37).sin() * 0.1)
            .collect();
        let batch: Vec<usize> = (0..b).map(|i| i * (n / b)).collect();
        let mut out = vec![0.0; 2 * (d + 1)];
        let mut scratch = Scratch::default();
        group.throughput(Throughput::Elements(b as u64));
        for (name, vector) in [("avx2", true), ("portable", false)] {
            group.bench_function(format!("{name}_d{d}_b{b}"), |bch| {
                bch.iter(|| {
                    bench_clipped_sum2(&w, &data, &batch, 1.0, &mut out, &mut scratch, vector)
                });
            });
        }
    }
    group.finish();
}

/// The machine's float64 matrix-product peak with the same `matrixmultiply::dgemm` the step
/// uses (through `linalg::gemm`): C = A B for square N = 1024, one thread, and two such
/// products at once on two threads (the step's two halves run that way). Throughput is in
/// flops (2 N^3 per product); size b's step does 4 b (d + 1) m flops.
fn bench_gemm_peak(c: &mut Criterion) {
    let n = 1024;
    let a: Vec<f64> = (0..n * n)
        .map(|i| ((i * 7919) % 1000) as f64 / 1000.0)
        .collect();
    let b: Vec<f64> = (0..n * n)
        .map(|i| ((i * 104_729) % 1000) as f64 / 1000.0)
        .collect();
    let mut c0 = vec![0.0; n * n];
    let mut c1 = vec![0.0; n * n];
    let mut group = c.benchmark_group("gemm_peak_f64");
    group.sample_size(10);
    let flops = 2 * n * n * n;
    group.throughput(Throughput::Elements(flops as u64));
    group.bench_function("dgemm_1024_1thread", |bch| {
        bch.iter(|| gemm(1.0, Mat::rm(&a, n, n), Mat::rm(&b, n, n), 0.0, &mut c0, n));
    });
    group.throughput(Throughput::Elements(2 * flops as u64));
    group.bench_function("dgemm_1024_x2_2threads", |bch| {
        bch.iter(|| {
            rayon::join(
                || gemm(1.0, Mat::rm(&a, n, n), Mat::rm(&b, n, n), 0.0, &mut c0, n),
                || gemm(1.0, Mat::rm(&a, n, n), Mat::rm(&b, n, n), 0.0, &mut c1, n),
            )
        });
    });
    group.finish();
}

fn bench_steps(c: &mut Criterion) {
    // (label, n, d, m, b): the README's three sizes
    let sizes = [
        ("a_n10000_d10_m2_b64", 10_000, 10, 2, 64.0),
        ("b_n50000_d512_m100_b500", 50_000, 512, 100, 500.0),
        ("c_n60000_d784_m10_b500", 60_000, 784, 10, 500.0),
    ];
    let mut group = c.benchmark_group("dpsgd_step_logistic_f64");
    for (label, n, d, m, b) in sizes {
        let data = data(n, d, m);
        bench_one(&mut group, label, &data, &SoftmaxLoss::new(d, m), b);
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(4));
    targets = bench_steps, bench_gemm_peak, bench_crossover, bench_m2_vector
}
criterion_main!(benches);
