//! Distribution tests of the exact samplers: fixed seeds (seeded PCG64 streams), each frequency
//! against the exact pmf within 4 standard errors, sqrt(p (1 - p) / N) for a frequency of
//! probability p over N draws (a correct sampler fails one such check with probability
//! 6e-5). Each test was seen failing on a planted bug (named in its doc).

use std::collections::BTreeMap;

use super::*;
use crate::rng::{Purpose, stream};

fn rng(seed: u64) -> ReleaseRng {
    ReleaseRng::Seeded(stream(seed, 0, Purpose::Mechanism))
}

/// Asserts |f - p| <= 4 sqrt(p (1 - p) / n) for a count of n draws.
fn within_4_se(what: &str, count: u64, n: u64, p: f64) {
    let f = count as f64 / n as f64;
    let se = (p * (1.0 - p) / n as f64).sqrt();
    assert!(
        (f - p).abs() <= 4.0 * se,
        "{what}: frequency {f} against probability {p} (4 SE = {})",
        4.0 * se
    );
}

/// Per value y in [-k, k], and the tail |y| > k as one cell: frequency against `pmf`.
fn check_pmf(what: &str, draws: &[i64], k: i64, pmf: impl Fn(i64) -> f64) {
    let mut counts = BTreeMap::new();
    for &y in draws {
        *counts.entry(y.clamp(-k - 1, k + 1)).or_insert(0u64) += 1;
    }
    let n = draws.len() as u64;
    let mut inside = 0.0;
    for y in -k..=k {
        let p = pmf(y);
        inside += p;
        within_4_se(
            &format!("{what} at {y}"),
            counts.get(&y).copied().unwrap_or(0),
            n,
            p,
        );
    }
    let tail =
        counts.get(&(-k - 1)).copied().unwrap_or(0) + counts.get(&(k + 1)).copied().unwrap_or(0);
    within_4_se(
        &format!("{what}, |y| > {k}"),
        tail,
        n,
        (1.0 - inside).max(0.0),
    );
}

/// Bernoulli(3/7), Bernoulli(1/2^70) never 1 in 10^5 draws (probability 8e-17), and
/// Bernoulli(exp(-x)) at x = 0, 1/3, 1, 7/3, 5 (Algorithm 1's two branches), N = 10^5 each.
/// Planted bug (K even instead of odd in Algorithm 1, so 1 - exp(-x)): fails (already at x = 0,
/// never 1; with it the discrete Laplace sampler at t = 1 never accepts and hangs).
#[test]
fn bernoulli_and_bernoulli_exp_have_their_probabilities() {
    let n = 100_000u64;
    let mut r = rng(1);
    let c = (0..n).filter(|_| bernoulli(&mut r, 3, 7).unwrap()).count() as u64;
    within_4_se("Bernoulli(3/7)", c, n, 3.0 / 7.0);
    assert!((0..n).all(|_| !bernoulli(&mut r, 1, 1 << 70).unwrap()));
    for (num, den) in [(0u128, 1u128), (1, 3), (1, 1), (7, 3), (5, 1)] {
        let c = (0..n)
            .filter(|_| bernoulli_exp_neg(&mut r, num, den).unwrap())
            .count() as u64;
        let p = (-(num as f64) / den as f64).exp();
        within_4_se(&format!("Bernoulli(exp(-{num}/{den}))"), c, n, p);
    }
}

/// Discrete Laplace at scale t / s = 1 and 3 / 2 and 20 (the range check's at eps 0.05),
/// N = 2 10^5: per value in [-8, 8] (scale 20: [-40, 40]) and the tail, against
/// (1 - a) / (1 + a) a^|y|, a = exp(-s / t). Planted bug (X = U + (t + 1) V: the scale too
/// large): fails at scale 1 (at -8: 0.0085 against 0.00016), and so does the discrete Gaussian.
#[test]
fn discrete_laplace_has_its_pmf() {
    for (s, t, k) in [(1u128, 1u128, 8i64), (2, 3, 8), (1, 20, 40)] {
        let mut r = rng(2);
        let draws: Vec<i64> = (0..200_000)
            .map(|_| discrete_laplace(&mut r, s, t).unwrap())
            .collect();
        let a = (-(s as f64) / t as f64).exp();
        check_pmf(&format!("DLap({t}/{s})"), &draws, k, |y| {
            (1.0 - a) / (1.0 + a) * a.powi(y.abs() as i32)
        });
    }
}

/// exp(-y^2 / (2 sigma^2)) / Z, Z summed over |z| <= 40 sigma + 40 (the rest below 1e-300).
fn gauss_pmf(sigma2: f64) -> impl Fn(i64) -> f64 {
    let k = (40.0 * sigma2.sqrt() + 40.0) as i64;
    let w = move |y: i64| (-((y * y) as f64) / (2.0 * sigma2)).exp();
    let z: f64 = (-k..=k).map(w).sum();
    move |y| w(y) / z
}

/// Discrete Gaussian at sigma^2 = 1, 7/3 and 30, N = 2 10^5: per value in [-4 sigma, 4 sigma]
/// and the tail against exp(-y^2 / (2 sigma^2)) / Z. Planted bug (the acceptance exponent over
/// a b t^2 instead of 2 a b t^2): fails (at sigma^2 = 1, y = -4: never drawn against 1.3e-4).
#[test]
fn discrete_gaussian_has_its_pmf() {
    for (a, b) in [(1u128, 1u128), (7, 3), (30, 1)] {
        let sigma2 = a as f64 / b as f64;
        let mut r = rng(3);
        let draws: Vec<i64> = (0..200_000)
            .map(|_| discrete_gaussian(&mut r, a, b).unwrap())
            .collect();
        let k = (4.0 * sigma2.sqrt()).ceil() as i64;
        check_pmf(&format!("N_Z(0, {a}/{b})"), &draws, k, gauss_pmf(sigma2));
    }
}

/// The large-integer path: sigma^2 = 2^60 + 12345 (t = 2^30 + 1, 256-bit squares) and
/// sigma^2 = 10^6 / 2^32 + 1 / 2^32 (a rational with b = 2^32), N = 2 10^4 each: the mean
/// within 4 sigma / sqrt(N) of 0 and the sample variance within 4 sqrt(2 / N) (the relative sd
/// of a normal sample variance; the discrete Gaussian's variance is sigma^2 within
/// exp(-2 pi^2 sigma^2) for sigma >= 1) of sigma^2, plus the second sigma's pmf at 0.
/// Planted bugs (the acceptance exponent without its factor 2, or its fractional part dropped):
/// the variance fails at 2^60 (0.89 and 1.09 of sigma^2), as does the pmf test above.
#[test]
fn discrete_gaussian_is_right_at_large_and_fine_sigma() {
    let n = 20_000;
    for (a, b) in [
        ((1u128 << 60) + 12345, 1u128),
        (1_000_000 * (1 << 32) + 1, 1 << 32),
    ] {
        let sigma2 = a as f64 / b as f64;
        let mut r = rng(4);
        let draws: Vec<f64> = (0..n)
            .map(|_| discrete_gaussian(&mut r, a, b).unwrap() as f64)
            .collect();
        let m = draws.iter().sum::<f64>() / n as f64;
        let v = draws.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64;
        assert!(
            m.abs() <= 4.0 * (sigma2 / n as f64).sqrt(),
            "mean {m} at sigma^2 {sigma2}"
        );
        let tol = 4.0 * (2.0 / n as f64).sqrt();
        assert!(
            (v / sigma2 - 1.0).abs() <= tol,
            "variance {v} against {sigma2}"
        );
    }
}

/// The exponential mechanism at temperature 2 / eps, eps = 1.3, on utilities with fractional
/// bits (0, -1, -2.5, -0.25, -7, 3.125), N = 2 10^5: each index's frequency against
/// exp(eps u_j / 2) / sum; and at eps = 0.01 on counts near 400 (the bound selection's scale). Planted bug (the exponent
/// without the factor 1/2: P ∝ exp(eps u_j)): fails (index 0 at eps 1.3: 0.017 against 0.098).
#[test]
fn exponential_mechanism_has_its_probabilities() {
    for (eps, u) in [
        (1.3, vec![0.0, -1.0, -2.5, -0.25, -7.0, 3.125]),
        (0.01, vec![-400.0, -37.75, -120.5, -3.0]),
    ] {
        let mut r = rng(5);
        let n = 200_000u64;
        let mut counts = vec![0u64; u.len()];
        for _ in 0..n {
            counts[exponential(&mut r, &u, 2.0 / eps).unwrap()] += 1;
        }
        let w: Vec<f64> = u.iter().map(|x| (eps * x / 2.0).exp()).collect();
        let z: f64 = w.iter().sum();
        for (j, (&c, wj)) in counts.iter().zip(&w).enumerate() {
            within_4_se(&format!("eps {eps}, index {j}"), c, n, wj / z);
        }
    }
}

/// The seeded selection is the Gumbel-max draw (bit-identical seeded runs), and the secure one
/// the exact sampler: on a fixed-seed ChaCha12 the two differ in their stream use but agree
/// in distribution (the exact test above).
#[test]
fn select_release_is_gumbel_when_seeded() {
    let u = [-3.0, 0.0, -1.0, -0.5];
    for seed in 0..20 {
        let mut a = rng(seed);
        let mut b = stream(seed, 0, Purpose::Mechanism);
        assert_eq!(
            select_release(&mut a, &u, 2.0 / 0.7).unwrap(),
            gumbel_max(&mut b, &u, 2.0 / 0.7)
        );
    }
    let mut s = ReleaseRng::Secure(Box::new(
        <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(9),
    ));
    assert!(
        select_release(&mut s, &u, 2.0 / 0.7)
            .unwrap()
            .is_some_and(|j| j < 4)
    );
}

/// 256-bit arithmetic: for random a, b, d (of random bit lengths), mul_wide(q, d) + r rebuilds
/// a b with r < d whenever div_wide answers, and products below 2^128 match u128's.
/// Planted bug (no carry in div_wide's shift): the rebuild fails.
#[test]
fn wide_products_and_quotients_are_exact() {
    let mut r = stream(6, 0, Purpose::Mechanism);
    let draw = |r: &mut crate::rng::SimRng| {
        let x = (u128::from(r.next_u64()) << 64) | u128::from(r.next_u64());
        x >> (r.next_u64() % 128)
    };
    let mut answered = 0;
    for _ in 0..20_000 {
        let (a, b, d) = (draw(&mut r), draw(&mut r), draw(&mut r).max(1));
        let (hi, lo) = mul_wide(a, b);
        if let Some(p) = a.checked_mul(b) {
            assert_eq!((hi, lo), (0, p));
        }
        if let Some((q, rem)) = div_wide(hi, lo, d) {
            answered += 1;
            assert!(rem < d);
            let (h2, l2) = mul_wide(q, d);
            let (l3, carry) = l2.overflowing_add(rem);
            assert_eq!((h2 + u128::from(carry), l3), (hi, lo), "{a} {b} {d}");
        } else {
            assert!(hi >= d);
        }
    }
    assert!(answered > 5_000, "only {answered} quotients fit");
}

/// Bad parameters give errors before any draw, never a panic.
#[test]
fn bad_parameters_are_errors() {
    let mut r = rng(7);
    assert!(bernoulli(&mut r, 3, 2).is_err());
    assert!(bernoulli(&mut r, 0, 0).is_err());
    assert!(bernoulli_exp_neg(&mut r, 1, 0).is_err());
    assert!(uniform_below(&mut r, 0).is_err());
    assert!(discrete_laplace(&mut r, 0, 1).is_err());
    assert!(discrete_laplace(&mut r, 1, 1 << 41).is_err());
    assert!(discrete_gaussian(&mut r, 0, 1).is_err());
    assert!(discrete_gaussian(&mut r, 1 << 100, 1).is_err());
    assert!(discrete_gaussian(&mut r, 1 << 70, 1 << 69).is_err());
    assert!(exponential(&mut r, &[], 1.0).is_err());
    assert!(exponential(&mut r, &[0.0, f64::NAN], 1.0).is_err());
    assert!(exponential(&mut r, &[0.0, 1e30], 1.0).is_err());
    assert!(exponential(&mut r, &[0.0, 1e-30], 1.0).is_err());
    assert!(exponential(&mut r, &[0.0], -1.0).is_err());
    assert!(exponential(&mut r, &[0.0, 0.5], 1e40).is_err());
    assert!(epsilon_units(f64::INFINITY).is_err());
    assert_eq!(epsilon_units(1e300).unwrap(), 1 << 84);
    assert_eq!(epsilon_units(0.5).unwrap(), 1 << 63);
    assert_eq!(ratio_of(0.75), Some((3, 4)));
    assert_eq!(ratio_of(96.0), Some((96, 1)));
    assert!(ratio_of(0.0).is_none() && ratio_of(f64::NAN).is_none() && ratio_of(1e300).is_none());
}
