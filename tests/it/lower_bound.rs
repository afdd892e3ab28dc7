//! The hard instance of Thms 6.6 / L.1 and I.3 (Appendix L): the packing set, Q_v and its
//! sampler, the closed-form minimizer, Assumption 6.1 with G = 3||v|| (Eq. 100), the far-point
//! growth of Eqs. (110)-(111) and the Chernoff event of Eq. (107).
//!
//! The deterministic growth inequalities (Eqs. 101-106, 109, 117, 123-124) are property-tested
//! in tests/lemmas.rs on arbitrary c_i; here they are exercised on data drawn from Q_v. Every
//! test uses a fixed seed; every tolerance is derived in a comment next to it, and every check
//! has a negative control that must fail.

use dpsgd_lab::config::DataSpec;
use dpsgd_lab::data::Dataset;
use dpsgd_lab::dpsgd::Projection;
use dpsgd_lab::linalg::{dot, norm2};
use dpsgd_lab::loss::{AppendixLLoss, mean_value};
use dpsgd_lab::lower_bound::checks::{
    empirical_lipschitz_moment, eq100_gradient_moment, eq100_lipschitz_moment, eq107_event,
    eq107_frequency, far_point, far_point_check,
};
use dpsgd_lab::lower_bound::packing::{check_dimension, lemma6_size};
use dpsgd_lab::lower_bound::{
    AppendixLSpec, Domain, OptimumKind, PackingSet, QvInstance, empirical_optimum,
};
use dpsgd_lab::rng::{Purpose, SimRng, stream};
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};

use crate::common::{assert_one_line_error, cli};

const KS: [f64; 4] = [1.5, 2.0, 4.0, f64::INFINITY];

fn spec(n: usize, d: usize, k: f64, epsilon: f64) -> AppendixLSpec {
    AppendixLSpec {
        n,
        d,
        k,
        epsilon,
        delta: 1e-5,
        codeword: 0,
        packing_seed: 0,
        constant: false,
    }
}

fn inst(n: usize, d: usize, k: f64, epsilon: f64) -> QvInstance {
    spec(n, d, k, epsilon)
        .instance()
        .unwrap_or_else(|e| panic!("valid instance rejected: {e}"))
}

fn rng(seed: u64) -> SimRng {
    stream(seed, 0, Purpose::Data)
}

fn random_w(d: usize, radius: f64, rng: &mut SimRng) -> Vec<f64> {
    let z: Vec<f64> = (0..d).map(|_| StandardNormal.sample(&mut *rng)).collect();
    let nz = norm2(&z);
    z.iter().map(|v| radius * v / nz).collect()
}

fn f(data: &Dataset, w: &[f64]) -> f64 {
    mean_value(&AppendixLLoss::new(data.d), w, data)
}

// ---------------------------------------------------------------------------------------------
// Packing set (Lemma 6 of Acharya et al. 2021)

/// Weight exactly d/2, pairwise Hamming distance >= d/8 and |V| >= 2^(7d/128), for every d
/// where 2^(7d/128) is small enough to build (d = 192 needs 1552 codewords, ~1.2e6 pairs).
#[test]
fn lemma6_packing_properties() {
    for d in [8, 16, 32, 64, 128, 192] {
        let need = lemma6_size(d).unwrap();
        let v = PackingSet::generate(d, need, d as u64).unwrap_or_else(|e| panic!("d = {d}: {e}"));
        let r = v.verify(true).unwrap_or_else(|e| panic!("d = {d}: {e}"));
        assert_eq!(r.size, need);
        assert!(r.min_distance >= d / 8, "d = {d}: {r:?}");
        for j in [0, need - 1] {
            let w = v.codeword(j).unwrap();
            assert!(w.iter().all(|&b| b == 0.0 || b == 1.0));
            // ||v|| = sqrt(d/2) exactly: a sum of d/2 ones is exact in f64.
            assert_eq!(norm2(&w), (d as f64 / 2.0).sqrt(), "d = {d}");
        }
    }
}

/// Where the greedy rejection matters: d = 8 has only C(8,4) = 70 balanced words (a distance
/// of at least 1 means distinct), and at d = 24 a random pair is at distance 2 < 3 with probability
/// 144 / C(24,12) = 5.3e-5, i.e. ~26 such pairs among 1000 words without rejection. Asking
/// for 71 words in d = 8 is impossible and must stall with an error.
#[test]
fn lemma6_greedy_rejection_enforces_distance() {
    let all = PackingSet::generate(8, 70, 3).unwrap();
    assert_eq!(all.verify(false).unwrap().min_distance, 2);
    let r = PackingSet::generate(24, 1000, 4)
        .unwrap()
        .verify(false)
        .unwrap();
    assert!(r.min_distance >= 3, "{r:?}");
    let e = PackingSet::generate(8, 71, 3).unwrap_err().to_string();
    assert!(e.contains("stalled at 70 of 71"), "{e}");
}

/// Negative controls: `verify` rejects a wrong weight, a too-close pair and a too-small set.
#[test]
fn lemma6_verify_rejects_violations() {
    let d = 16;
    let good = PackingSet::generate(d, 3, 1).unwrap();
    let mut words: Vec<Vec<f64>> = (0..3).map(|j| good.codeword(j).unwrap()).collect();
    assert!(
        PackingSet::from_codewords(d, &words)
            .unwrap()
            .verify(false)
            .is_ok()
    );
    // |V| = 3 >= ceil(2^(7*16/128)) = 2: passes the size check too.
    assert!(
        PackingSet::from_codewords(d, &words)
            .unwrap()
            .verify(true)
            .is_ok()
    );
    // Distance 0 < d/8 = 2: a duplicate.
    let dup = vec![words[0].clone(), words[0].clone()];
    let e = PackingSet::from_codewords(d, &dup)
        .unwrap()
        .verify(false)
        .unwrap_err();
    assert!(e.to_string().contains("Hamming distance 0"), "{e}");
    // Distance exactly 2 = d/8 passes; a swap of one 1 and one 0 gives distance 2.
    let mut near = words[0].clone();
    let one = near.iter().position(|&b| b == 1.0).unwrap();
    let zero = near.iter().position(|&b| b == 0.0).unwrap();
    near.swap(one, zero);
    let pair = vec![words[0].clone(), near];
    assert_eq!(
        PackingSet::from_codewords(d, &pair)
            .unwrap()
            .verify(false)
            .unwrap()
            .min_distance,
        2
    );
    // Weight d/2 + 1.
    let z = words[1].iter().position(|&b| b == 0.0).unwrap();
    words[1][z] = 1.0;
    let e = PackingSet::from_codewords(d, &words)
        .unwrap()
        .verify(false)
        .unwrap_err();
    assert!(e.to_string().contains("not exactly d/2 = 8"), "{e}");
    // One codeword is fewer than 2^(7*64/128) = 12 at d = 64.
    let one_word = PackingSet::generate(64, 1, 0).unwrap();
    assert!(one_word.verify(false).is_ok());
    assert!(
        one_word
            .verify(true)
            .unwrap_err()
            .to_string()
            .contains("|V| = 1")
    );
    // Entries must be 0/1.
    assert!(PackingSet::from_codewords(2, &[vec![0.5, 1.0]]).is_err());
}

#[test]
fn lemma6_dimension_errors_name_d() {
    assert!(check_dimension(24).is_ok());
    for d in [0usize, 10, 30] {
        let e = spec(1000, d, 2.0, 1.0).instance().unwrap_err().to_string();
        assert!(e.contains(&format!("d = {d}")), "{e}");
    }
}

// ---------------------------------------------------------------------------------------------
// Q_v: parameters and sampler

/// p = 2 sqrt(d log(1/delta)) / (n eps) >= 1/2 is an error naming p and the fix.
#[test]
fn eq96_p_at_least_half_is_an_error() {
    // d = 32, delta = 1e-5, eps = 1: n p = 2 sqrt(32 ln 1e5) = 38.39, so p < 1/2 iff n >= 77.
    let e = spec(76, 32, 2.0, 1.0).instance().unwrap_err().to_string();
    assert!(e.contains("p = 0.505") && e.contains("use n > 76"), "{e}");
    assert!(spec(77, 32, 2.0, 1.0).instance().is_ok());
    // Thm L.1's hypothesis delta < exp(-eps^2): eps = 4 needs delta < 1.1e-7.
    let e = spec(10_000, 32, 2.0, 4.0)
        .instance()
        .unwrap_err()
        .to_string();
    assert!(e.contains("delta < exp(-epsilon^2)"), "{e}");
    for k in [1.0, 0.5, f64::NAN] {
        let e = spec(1000, 32, k, 1.0).instance().unwrap_err().to_string();
        assert!(e.contains("k must be > 1"), "{e}");
    }
    let e = spec(1000, 32, 2.0, -1.0)
        .instance()
        .unwrap_err()
        .to_string();
    assert!(e.contains("epsilon"), "{e}");
}

/// Facts of the instance: n p independent of n, G = 3 sqrt(d/2), ||E x|| = p^(1-1/k)||v||,
/// phi = sqrt(nu) p / 2.
#[test]
fn eq96_instance_facts() {
    let a = inst(1000, 32, 2.0, 1.0);
    let b = inst(64_000, 32, 2.0, 1.0);
    let np = 2.0 * (32.0 * 1e5f64.ln()).sqrt();
    // Two roundings in p and one in n p: relative 1e-14.
    assert!((a.expected_nonzero() - np).abs() < 1e-14 * np);
    assert!((b.expected_nonzero() - np).abs() < 1e-14 * np);
    assert!((a.g() - 3.0 * 4.0).abs() < 1e-14 * 12.0);
    assert!((a.mean_norm() - a.p().sqrt() * 4.0).abs() < 1e-14);
    assert!((a.phi(1.0) - a.p() / 2.0).abs() < 1e-16);
    assert_eq!(spec(1000, 32, 2.0, 1.0).g().unwrap(), a.g());
    let c = inst(1000, 32, f64::INFINITY, 1.0);
    assert_eq!(c.scale(), 1.0);
}

/// The sampler: every row is 0 or exactly p^(-1/k) v, and the nonzero frequency over N draws
/// is within 4 SE = 4 sqrt(p(1-p)/N) of p (a false alarm has probability ~6e-5 per check).
#[test]
fn sampler_nonzero_frequency_within_4_se() {
    for (i, &k) in KS.iter().enumerate() {
        let q = inst(2000, 32, k, 1.0);
        let point = q.support_point();
        let mut r = rng(100 + i as u64);
        let (mut nonzero, mut total) = (0usize, 0usize);
        for _ in 0..100 {
            let data = q.sample(&mut r);
            assert_eq!((data.n, data.d), (2000, 32));
            for j in 0..data.n {
                let x = data.row(j);
                if x.iter().any(|&v| v != 0.0) {
                    assert_eq!(x, &point[..]);
                    nonzero += 1;
                }
            }
            total += data.n;
        }
        let p = q.p();
        let se = (p * (1.0 - p) / total as f64).sqrt();
        let freq = nonzero as f64 / total as f64;
        assert!(
            (freq - p).abs() < 4.0 * se,
            "k = {k}: {freq} vs p = {p}, SE {se}"
        );
        // Negative control: the same frequency is far (> 4 SE) from 1.5 p.
        assert!((freq - 1.5 * p).abs() > 4.0 * se);
    }
}

/// `sample_nonzero_count` consumes the stream exactly like `sample`: same seed, same count.
#[test]
fn sampler_count_matches_dataset() {
    let q = inst(5000, 16, 4.0, 1.0);
    for seed in 0..5 {
        let data = q.sample(&mut rng(seed));
        let m = (0..data.n).filter(|&i| norm2(data.row(i)) > 0.0).count();
        assert_eq!(q.sample_nonzero_count(&mut rng(seed)), m);
        // ||x_bar|| from the data equals (m/n) p^(-1/k) ||v|| up to n additions: rel 1e-12.
        let nx = q.optimum(&data).xbar_norm;
        assert!((nx - q.xbar_norm_for_count(m)).abs() <= 1e-12 * nx);
    }
}

/// The `appendix_l` data source: TOML with `k = inf` parses and builds n draws of Q_v.
#[test]
fn dataspec_appendix_l_builds() {
    let text = r#"
        source = "appendix_l"
        n = 500
        d = 32
        k = inf
        epsilon = 1.0
        delta = 1e-5
        codeword = 2
        packing_seed = 9
    "#;
    let s: DataSpec = toml::from_str(text).unwrap();
    let data = s.build(&mut rng(3)).unwrap();
    assert_eq!((data.n, data.d), (500, 32));
    let v = PackingSet::generate(32, 3, 9).unwrap().codeword(2).unwrap();
    // k = inf: the support point is v itself.
    assert!((0..data.n).all(|i| data.row(i) == &v[..] || data.row(i).iter().all(|&x| x == 0.0)));
    assert!(toml::from_str::<DataSpec>(&format!("{text}\nextra = 1")).is_err());
    // k = "inf" (the experiment specs' spelling) is the same spec; k = "big" is an error.
    let quoted: DataSpec = toml::from_str(&text.replace("k = inf", "k = \"inf\"")).unwrap();
    assert_eq!(quoted, s);
    let e = toml::from_str::<DataSpec>(&text.replace("k = inf", "k = \"big\"")).unwrap_err();
    assert!(e.to_string().contains("\"big\""), "{e}");
}

// ---------------------------------------------------------------------------------------------
// Minimizer (Eqs. 99, 105): w* = v/||v||, f* = -||x_bar||; degenerate data sets

/// On data from Q_v: 0 is in the subdifferential at w* (-x_bar + 2||x_bar|| t w*, t in [0, 1],
/// vanishes at t = 1/2 iff x_bar = ||x_bar|| w*), f(w*) = f* = -||x_bar||, and f(w*) <= f(w)
/// at 2000 random points of radius in [0, 6] and at 200 points within 1e-3 of w*.
/// Tolerance: f is a sum of n terms of size <= (1 + ||w||) ||x_i||, so rounding is below
/// 1e-12 (1 + ||w||) * mean||x_i|| = 1e-12 (1 + ||w||) ||x_bar||.
#[test]
fn eq105_minimizer_optimality() {
    for (i, &k) in KS.iter().enumerate() {
        let q = inst(3000, 32, k, 1.0);
        let mut r = rng(200 + i as u64);
        let data = q.sample(&mut r);
        let opt = q.optimum(&data);
        assert_eq!(opt.kind, OptimumKind::Unique, "k = {k}");
        let nx = opt.xbar_norm;
        let ws = q.w_star();
        for (a, b) in opt.w_star.iter().zip(&ws) {
            assert!((a - b).abs() < 1e-15, "k = {k}: w* != v/||v||");
        }
        // Subgradient: x_bar - ||x_bar|| w*, x_bar from the data.
        let xbar: Vec<f64> = (0..32)
            .map(|j| (0..data.n).map(|s| data.row(s)[j]).sum::<f64>() / data.n as f64)
            .collect();
        let resid: f64 = norm2(
            &xbar
                .iter()
                .zip(&ws)
                .map(|(x, w)| x - nx * w)
                .collect::<Vec<_>>(),
        );
        assert!(resid < 1e-12 * nx, "k = {k}: subgradient residual {resid}");
        let fstar = f(&data, &ws);
        assert!((fstar - opt.f_star).abs() < 1e-12 * nx, "k = {k}");
        assert!((opt.f_star - q.eq99_value(nx, &ws)).abs() < 1e-12 * nx);
        let tol = |w: &[f64]| 1e-12 * (1.0 + norm2(w)) * nx;
        for _ in 0..2000 {
            let rad = 6.0 * r.random::<f64>();
            let w = random_w(32, rad, &mut r);
            assert!(f(&data, &w) >= fstar - tol(&w), "k = {k}");
        }
        for _ in 0..200 {
            let dw = random_w(32, 1e-3, &mut r);
            let w: Vec<f64> = ws.iter().zip(&dw).map(|(a, b)| a + b).collect();
            assert!(f(&data, &w) >= fstar - tol(&w), "k = {k}");
        }
        // Negative controls: 0.9 w* and 1.1 w* are strictly worse, by 0.1 ||x_bar|| (Eq. 99:
        // f(s w*) = -s||x_bar|| + 2||x_bar|| max(s - 1, 0)).
        for s in [0.9, 1.1] {
            let w: Vec<f64> = ws.iter().map(|a| s * a).collect();
            let gap = f(&data, &w) - fstar;
            assert!(
                (gap - 0.1 * nx).abs() < 1e-12 * nx,
                "k = {k}, s = {s}: {gap}"
            );
        }
    }
}

/// Thm I.3 (W = unit ball): the same w* minimizes over the ball; the domain's projection is
/// the unit-ball projection of Algorithm 1.
#[test]
fn thm_i3_constrained_minimizer() {
    let q = inst(3000, 32, 2.0, 1.0);
    let mut r = rng(300);
    let data = q.sample(&mut r);
    let opt = q.optimum(&data);
    assert_eq!(
        Domain::UnitBall.projection(),
        Projection::L2Ball { radius: 1.0 }
    );
    assert_eq!(Domain::Unconstrained.projection(), Projection::None);
    assert!((norm2(&opt.w_star) - 1.0).abs() < 1e-15);
    let tol = 2e-12 * opt.xbar_norm;
    for _ in 0..2000 {
        let w = random_w(32, r.random::<f64>(), &mut r);
        let fw = f(&data, &w);
        assert!(fw >= opt.f_star - tol);
        // Inside the ball the loss is linear: f(w) - f* = ||x_bar|| (1 - <w, w*>) (Eq. 119).
        let want = opt.xbar_norm * (1.0 - dot(&w, &opt.w_star));
        assert!((fw - opt.f_star - want).abs() < tol);
    }
}

/// Degenerate data sets: all zero (Q_v's empty draw) -> every point minimizes, f* = 0; x_bar =
/// 0 with nonzero points -> the unit ball minimizes, f* = 0 and f > 0 outside it.
#[test]
fn eq99_degenerate_datasets() {
    let q = inst(1000, 16, 2.0, 1.0);
    let zero = Dataset {
        n: 4,
        d: 16,
        x: vec![0.0; 64],
        y: vec![0.0; 4],
    };
    let opt = q.optimum(&zero);
    assert_eq!(opt.kind, OptimumKind::Everywhere);
    assert_eq!(opt.f_star, 0.0);
    assert_eq!(opt.w_star, q.w_star());
    assert_eq!(f(&zero, &[5.0; 16]), 0.0);
    let mut x = vec![0.0; 32];
    x[0] = 1.0;
    x[16] = -1.0;
    let cancel = Dataset::new(x, vec![0.0; 2], 16).unwrap();
    let opt = empirical_optimum(&cancel, &[0.0; 16]);
    assert_eq!(opt.kind, OptimumKind::UnitBall);
    assert_eq!(opt.f_star, 0.0);
    let mut w = vec![0.0; 16];
    w[0] = 0.7;
    assert_eq!(f(&cancel, &w), 0.0);
    w[0] = 1.5;
    // f = 2 * mean||x_i|| * 0.5 = 1.
    assert!((f(&cancel, &w) - 1.0).abs() < 1e-15);
}

/// The closed form is not specific to Q_v: on arbitrary data x_bar/||x_bar|| minimizes with
/// f* = -||x_bar|| (mean||x_i|| >= ||x_bar|| only strengthens the penalty).
#[test]
fn eq105_minimizer_on_general_data() {
    let mut r = rng(400);
    let d = 8;
    let x: Vec<f64> = (0..50 * d).map(|_| StandardNormal.sample(&mut r)).collect();
    let data = Dataset::new(x, vec![0.0; 50], d).unwrap();
    let opt = empirical_optimum(&data, &[0.0; 8]);
    assert_eq!(opt.kind, OptimumKind::Unique);
    let fstar = f(&data, &opt.w_star);
    assert!((fstar - opt.f_star).abs() < 1e-12);
    for _ in 0..2000 {
        let w = random_w(d, 4.0 * r.random::<f64>(), &mut r);
        assert!(f(&data, &w) >= fstar - 1e-12);
    }
}

// ---------------------------------------------------------------------------------------------
// Assumption 6.1 (Eq. 100)

/// (E (3||x||)^k)^(1/k) = 3||v|| = G exactly (closed form over the two-point law, rel 1e-14),
/// (E ||grad l(w, x)||^k)^(1/k) <= G at random w, with equality at w = -2 w* (grad = -3x).
#[test]
fn eq100_assumption61_constant_is_3_norm_v() {
    for (i, &k) in KS.iter().enumerate() {
        let q = inst(1000, 32, k, 1.0);
        let g = q.g();
        assert!((g - 3.0 * 4.0).abs() < 1e-14 * g);
        assert!(
            (eq100_lipschitz_moment(&q) - g).abs() < 1e-14 * g,
            "k = {k}"
        );
        let mut r = rng(500 + i as u64);
        for _ in 0..1000 {
            let w = random_w(32, 5.0 * r.random::<f64>(), &mut r);
            assert!(
                eq100_gradient_moment(&q, &w) <= g * (1.0 + 1e-14),
                "k = {k}"
            );
        }
        let far: Vec<f64> = q.w_star().iter().map(|a| -2.0 * a).collect();
        assert!(
            (eq100_gradient_moment(&q, &far) - g).abs() < 1e-13 * g,
            "k = {k}"
        );
        // Negative control: inside the ball the gradient is -x, moment ||v|| = G/3 < G.
        let inside: Vec<f64> = q.w_star().iter().map(|a| 0.5 * a).collect();
        assert!((eq100_gradient_moment(&q, &inside) - g / 3.0).abs() < 1e-13 * g);
    }
}

/// Monte Carlo version of Eq. (96)/(100): the empirical mean of (3||x_i||)^k over N draws is
/// within 4 SE of G^k. Y = (3||x||)^k is G^k/p w.p. p and 0 otherwise, so
/// Var Y = G^(2k) (1/p - 1) and SE = G^k sqrt((1/p - 1)/N). At k = inf: max 3||x_i|| = G.
#[test]
fn eq100_empirical_moment_within_4_se() {
    for (i, &k) in KS.iter().enumerate() {
        let q = inst(200_000, 32, k, 1.0);
        let data = q.sample(&mut rng(600 + i as u64));
        let g = q.g();
        let m = empirical_lipschitz_moment(&data, k);
        if k.is_infinite() {
            assert!((m - g).abs() < 1e-14 * g);
            continue;
        }
        let gk = g.powf(k);
        let se = gk * ((1.0 / q.p() - 1.0) / data.n as f64).sqrt();
        let mk = m.powf(k);
        assert!((mk - gk).abs() < 4.0 * se, "k = {k}: {mk} vs {gk}, SE {se}");
        // Negative control: G = ||v|| (the ball's constant) is rejected by the same test.
        assert!((mk - (g / 3.0).powf(k)).abs() > 4.0 * se);
    }
}

// ---------------------------------------------------------------------------------------------
// Far points (Eqs. 110-111) and the Chernoff event (Eq. 107)

/// For ||w - w*|| >= 4: gap >= ||x_bar|| ||w - w*|| / 2 (Eq. 110 with the constant of Eqs. 106
/// and 109), and under the event of Eq. (107) gap >= p^(1-1/k) ||v|| ||w - w*|| / 4 (Eq. 111).
/// Checked at 1000 random far points on 5 data sets per k; ratios >= 1 - 1e-12 (rounding of f
/// relative to (1 + ||w||) ||x_bar||, with ||w|| <= 25 and the bound >= 2 ||x_bar||).
#[test]
fn eq110_eq111_far_points() {
    for (i, &k) in KS.iter().enumerate() {
        let q = inst(1000, 32, k, 1.0);
        let mut r = rng(700 + i as u64);
        for _ in 0..5 {
            let data = q.sample(&mut r);
            let rep = far_point_check(&q, &data, 1000, 20.0, &mut r);
            assert!(rep.min_ratio_eq110 >= 1.0 - 1e-12, "k = {k}: {rep:?}");
            // n p = 38.4: the event fails with probability ~1e-4 (Eq. 107 test below).
            assert!(rep.eq107_event, "k = {k}");
            assert!(rep.min_ratio_eq111 >= 1.0 - 1e-12, "k = {k}: {rep:?}");
        }
        // Along w*, w = t w* (t >= 5): gap = ||x_bar|| (t - 1) = ||x_bar|| dist, so the ratio
        // to Eq. 110 is exactly 2; the negative control (a bound of 2.01 * Eq. 110) fails.
        let data = q.sample(&mut r);
        let w: Vec<f64> = q.w_star().iter().map(|a| 5.0 * a).collect();
        let fp = far_point(&q, &data, &w);
        assert!((fp.gap / fp.eq110 - 2.0).abs() < 1e-12, "k = {k}: {fp:?}");
        assert!(fp.gap < 2.01 * fp.eq110);
    }
}

/// The Chernoff event of Eq. (107), m >= n p / 2, over 20000 draws with n p = 9.6 (d = 8,
/// eps = 2): its frequency is within 4 SE = 4 sqrt(P(1-P)/N) of the exact binomial probability
/// P and above the Chernoff bound 1 - exp(-n p / 8) (minus 4 SE); the empty frequency is within
/// 4 SE (+ 1/N for a probability ~7e-5) of (1 - p)^n.
#[test]
fn eq107_chernoff_event_frequency() {
    let q = inst(1000, 8, 2.0, 2.0);
    let np = q.expected_nonzero();
    assert!((np - 2.0 * (8.0 * 1e5f64.ln()).sqrt() / 2.0).abs() < 1e-12);
    let draws = 20_000;
    let rep = eq107_frequency(&q, draws, &mut rng(800)).unwrap();
    let pb = rep.binomial_probability;
    let se = (pb * (1.0 - pb) / draws as f64).sqrt();
    assert!((rep.event_frequency - pb).abs() < 4.0 * se, "{rep:?}");
    assert!(
        rep.event_frequency >= rep.chernoff_bound - 4.0 * se,
        "{rep:?}"
    );
    // The Chernoff bound is a bound: below the exact probability.
    assert!(rep.chernoff_bound <= pb);
    // Mean count within 4 SE = 4 sqrt(n p (1-p) / N) of n p.
    let se_m = (np * (1.0 - q.p()) / draws as f64).sqrt();
    assert!((rep.mean_nonzero - np).abs() < 4.0 * se_m, "{rep:?}");
    let pe = rep.empty_probability;
    let se_e = (pe * (1.0 - pe) / draws as f64).sqrt();
    assert!(
        (rep.empty_frequency - pe).abs() < 4.0 * se_e + 1.0 / draws as f64,
        "{rep:?}"
    );
    // Negative control: the event frequency is not 1 (the event does fail at n p = 9.6: P ~ 0.96).
    assert!(rep.event_frequency < 1.0 - 4.0 * se);
    // The data-set version of the event agrees with the count version on a sample.
    let data = q.sample(&mut rng(801));
    let m = q.sample_nonzero_count(&mut rng(801));
    assert_eq!(eq107_event(&q, &data), m as f64 >= np / 2.0);
}

// ---------------------------------------------------------------------------------------------
// CLI

/// `dpsgd-lab lower-bound --json`: the last line carries n p, G, the verified packing set and
/// one row per n; p >= 1/2 exits with status 2 and names p.
#[test]
fn cli_lower_bound_facts() {
    let args = [
        "lower-bound",
        "--n",
        "1000",
        "4000",
        "--d",
        "32",
        "--k",
        "inf",
        "--eps",
        "1",
        "--delta",
        "1e-5",
        "--draws",
        "200",
        "--json",
    ];
    let out = cli(args);
    assert!(out.success(), "{out:?}");
    let v = out.last_json();
    let np = 2.0 * (32.0 * 1e5f64.ln()).sqrt();
    assert!((v["expected_nonzero"].as_f64().unwrap() - np).abs() < 1e-12);
    assert!((v["g"].as_f64().unwrap() - 12.0).abs() < 1e-12);
    assert_eq!(v["packing"]["size"].as_u64(), Some(4));
    assert_eq!(v["rows"].as_array().unwrap().len(), 2);
    assert!((v["rows"][1]["p"].as_f64().unwrap() - np / 4000.0).abs() < 1e-15);
    let bad = cli([
        "lower-bound",
        "--n",
        "50",
        "--d",
        "32",
        "--k",
        "2",
        "--eps",
        "1",
        "--delta",
        "1e-5",
    ]);
    assert_one_line_error(&bad, "p = 0.76");
}
