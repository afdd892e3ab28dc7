//! One epsilon query at T = 10^5 steps (q = 0.01, z = 1.1, delta = 1e-5) with each accountant
//! (for the PLD also with its error estimate, the query `privacy epsilon --accountant pld` runs),
//! and one calibration at T = 1000. Issue 3's targets: RDP well under 10 ms, PLD under 1 s;
//! issue 15's: the PLD command <= 0.15 s end to end, a PLD calibration <= 1 s.
//!
//! Run: `cargo bench -p dpsgd-lab-bench --bench privacy` (or `cargo bench` in this folder).

use criterion::{Criterion, criterion_group, criterion_main};
use dpsgd_lab::privacy::{AccountantKind, PldAccountant, RdpAccountant, calibrate_noise};

fn epsilon_queries(c: &mut Criterion) {
    let mut g = c.benchmark_group("privacy_epsilon_T1e5");
    g.sample_size(10);
    g.bench_function("rdp", |b| {
        b.iter(|| {
            RdpAccountant::default()
                .epsilon(0.01, 100_000, 1.1, 1e-5)
                .unwrap()
        })
    });
    g.bench_function("pld", |b| {
        b.iter(|| {
            PldAccountant::default()
                .epsilon_upper(0.01, 100_000, 1.1, 1e-5)
                .unwrap()
        })
    });
    g.bench_function("pld_with_error", |b| {
        b.iter(|| {
            PldAccountant::default()
                .epsilon(0.01, 100_000, 1.1, 1e-5)
                .unwrap()
        })
    });
    g.finish();
    let mut g = c.benchmark_group("privacy_calibrate_T1000");
    g.sample_size(10);
    for kind in [AccountantKind::Rdp, AccountantKind::Pld] {
        g.bench_function(kind.as_str(), |b| {
            b.iter(|| calibrate_noise(kind, 0.01, 1000, 2.0, 1e-5).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, epsilon_queries);
criterion_main!(benches);
