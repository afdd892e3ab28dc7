use dpsgd_lab::privacy::*;
use std::time::Instant;

#[test]
#[ignore]
fn scratch_print() {
    let cases = [
        (0.01, 1.1, 1000usize, 1e-5),
        (0.01, 1.0, 10000, 1e-5),
        (256.0 / 60000.0, 1.1, 14040, 1e-5),
        (0.001, 0.8, 5000, 1e-6),
        (0.1, 2.0, 100, 1e-5),
        (1.0, 5.0, 10, 1e-5),
        (0.02, 0.7, 2000, 1e-7),
        (0.05, 1.5, 500, 1e-5),
    ];
    for (q, z, t, d) in cases {
        let t0 = Instant::now();
        let r = RdpAccountant::default().epsilon(q, t, z, d).unwrap();
        let t1 = t0.elapsed();
        let t0 = Instant::now();
        let p = PldAccountant::default().epsilon(q, t, z, d).unwrap();
        let t2 = t0.elapsed();
        println!("{q} {z} {t} {d}: rdp {} (a={}) {:?} | pld {} +- {} {:?}", r.epsilon, r.order, t1, p.epsilon, p.error, t2);
    }
}
