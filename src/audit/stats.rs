//! The statistics of a distinguishing game: Clopper-Pearson bounds on error rates, the
//! (epsilon, delta) and Gaussian-DP lower bounds they certify, and the held-out threshold choice.

use statrs::distribution::{ContinuousCDF, Normal};
use statrs::function::beta::beta_reg;

/// One-sided Clopper-Pearson upper bound on a binomial rate: the p with
/// P(Binomial(n, p) <= k) = alpha, i.e. I_{1-p}(n - k, k + 1) = alpha (by bisection to 1e-14);
/// 1 when k = n.
pub fn clopper_pearson_upper(k: usize, n: usize, alpha: f64) -> f64 {
    if k >= n {
        return 1.0;
    }
    if k == 0 {
        // (1 - p)^n = alpha.
        return -(alpha.ln() / n as f64).exp_m1();
    }
    let cdf = |p: f64| beta_reg((n - k) as f64, (k + 1) as f64, 1.0 - p);
    let (mut lo, mut hi) = (k as f64 / n as f64, 1.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if cdf(mid) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-14 {
            break;
        }
    }
    hi
}

/// A fast approximate upper bound (Wilson score), used only to choose a threshold on the
/// selection half; the certified bound is always [`clopper_pearson_upper`] on held-out trials.
fn wilson_upper(k: usize, n: usize, zq: f64) -> f64 {
    let (n, p) = (n as f64, k as f64 / n as f64);
    let z2 = zq * zq;
    let c = p + z2 / (2.0 * n);
    let r = zq * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((c + r) / (1.0 + z2 / n)).min(1.0)
}

/// The largest epsilon that a test with false-positive rate <= fpr and false-negative rate <= fnr
/// refutes at delta: any (epsilon, delta)-DP mechanism has fpr + e^eps fnr >= 1 - delta and
/// fnr + e^eps fpr >= 1 - delta (Kairouz, Oh and Viswanath 2015), so
/// epsilon >= max(log((1 - delta - fnr)/fpr), log((1 - delta - fpr)/fnr)), floored at 0.
pub fn epsilon_from_rates(fpr: f64, fnr: f64, delta: f64) -> f64 {
    let a = ((1.0 - delta - fnr) / fpr).ln();
    let b = ((1.0 - delta - fpr) / fnr).ln();
    let e = a.max(b);
    if e.is_nan() { 0.0 } else { e.max(0.0) }
}

/// The Gaussian-DP parameter a test refutes: a mu-GDP mechanism has
/// fnr >= Phi(Phi^{-1}(1 - fpr) - mu) (Dong, Roth and Su 2022), so
/// mu >= Phi^{-1}(1 - fpr) - Phi^{-1}(fnr) (and symmetrically with the roles swapped).
pub fn gdp_mu_from_rates(fpr: f64, fnr: f64) -> f64 {
    let n = Normal::standard();
    let inv = |p: f64| n.inverse_cdf(p.clamp(1e-300, 1.0 - 1e-16));
    let mu = (inv(1.0 - fpr) - inv(fnr)).max(inv(1.0 - fnr) - inv(fpr));
    mu.max(0.0)
}

/// Which bound a threshold is chosen for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Clopper-Pearson rates into the (epsilon, delta) inequality.
    Threshold,
    /// Clopper-Pearson rates into the Gaussian trade-off curve.
    Gdp,
}

/// A certified lower bound from one threshold test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Certified {
    /// Scores >= threshold are called "canary present".
    pub threshold: f64,
    /// False positives / trials on the held-out half (score of D >= threshold).
    pub fpr: f64,
    /// False negatives / trials on the held-out half (score of D' < threshold).
    pub fnr: f64,
    /// Clopper-Pearson upper bounds on both, each at level alpha / 2.
    pub fpr_upper: f64,
    pub fnr_upper: f64,
    /// The certified epsilon lower bound at delta (for the GDP route: the epsilon of mu-GDP).
    pub epsilon_lb: f64,
    /// The certified mu lower bound (GDP route; for the threshold route, the mu its rates imply).
    pub mu_lb: f64,
}

/// Counts of scores >= t in a sorted slice.
fn count_ge(sorted: &[f64], t: f64) -> usize {
    sorted.len() - sorted.partition_point(|&x| x < t)
}

/// Chooses a threshold on the selection halves (`sel0` from D, `sel1` from D'), then certifies
/// it on the held-out halves (`hold0`, `hold1`) with Clopper-Pearson at total level `alpha`
/// (alpha / 2 for each rate, a union bound). Choosing on data that the certificate does not use
/// keeps the confidence level exact however the threshold is picked. `eps_of_mu` converts a GDP
/// mu into epsilon at delta.
pub fn certify(
    sel: (&[f64], &[f64]),
    hold: (&[f64], &[f64]),
    delta: f64,
    alpha: f64,
    route: Route,
    eps_of_mu: &dyn Fn(f64) -> f64,
) -> Certified {
    let sort = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        s
    };
    let (s0, s1) = (sort(sel.0), sort(sel.1));
    let (n0, n1) = (s0.len(), s1.len());
    let zq = Normal::standard().inverse_cdf(1.0 - alpha / 2.0);
    let score = |t: f64| {
        let fp = count_ge(&s0, t);
        let fnc = n1 - count_ge(&s1, t);
        let (fu, nu) = (wilson_upper(fp, n0, zq), wilson_upper(fnc, n1, zq));
        match route {
            Route::Threshold => epsilon_from_rates(fu, nu, delta),
            Route::Gdp => gdp_mu_from_rates(fu, nu),
        }
    };
    // Candidates: up to 4000 quantiles of the pooled selection scores.
    let mut pooled: Vec<f64> = s0.iter().chain(&s1).copied().collect();
    pooled.sort_by(|a, b| a.total_cmp(b));
    let step = (pooled.len() / 4000).max(1);
    let mut best = (f64::NEG_INFINITY, f64::INFINITY);
    for &t in pooled.iter().step_by(step) {
        let v = score(t);
        if v > best.0 {
            best = (v, t);
        }
    }
    let t = best.1;
    let (h0, h1) = (sort(hold.0), sort(hold.1));
    let fp = count_ge(&h0, t);
    let fnc = h1.len() - count_ge(&h1, t);
    let fpr_upper = clopper_pearson_upper(fp, h0.len(), alpha / 2.0);
    let fnr_upper = clopper_pearson_upper(fnc, h1.len(), alpha / 2.0);
    let mu_lb = gdp_mu_from_rates(fpr_upper, fnr_upper);
    let epsilon_lb = match route {
        Route::Threshold => epsilon_from_rates(fpr_upper, fnr_upper, delta),
        Route::Gdp => eps_of_mu(mu_lb),
    };
    Certified {
        threshold: t,
        fpr: fp as f64 / h0.len() as f64,
        fnr: fnc as f64 / h1.len() as f64,
        fpr_upper,
        fnr_upper,
        epsilon_lb,
        mu_lb,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clopper_pearson_bound_solves_its_defining_equation() {
        // The bound p must satisfy P(Binomial(n, p) <= k) = alpha; the binomial CDF is summed
        // directly here (in logs), independently of the incomplete beta function.
        let binom_cdf = |k: usize, n: usize, p: f64| -> f64 {
            let mut lc = 0.0f64; // log C(n, i)
            let mut s = 0.0;
            for i in 0..=k {
                if i > 0 {
                    lc += ((n - i + 1) as f64).ln() - (i as f64).ln();
                }
                s += (lc + i as f64 * p.ln() + (n - i) as f64 * (-p).ln_1p()).exp();
            }
            s
        };
        for &(k, n, alpha) in &[
            (0, 100, 0.025),
            (5, 100, 0.025),
            (50, 100, 0.025),
            (3, 2000, 5e-4),
        ] {
            let p = clopper_pearson_upper(k, n, alpha);
            let c = binom_cdf(k, n, p);
            assert!(
                (c - alpha).abs() < 1e-9 * alpha.max(1e-3),
                "k={k} n={n}: {p} gives {c}"
            );
        }
        assert_eq!(clopper_pearson_upper(7, 7, 0.05), 1.0);
    }

    #[test]
    fn rates_to_epsilon_and_mu() {
        // fpr = 0.01, fnr = 0.5, delta = 0: log(0.5 / 0.01) = log 50.
        assert!((epsilon_from_rates(0.01, 0.5, 0.0) - 50f64.ln()).abs() < 1e-12);
        // A mu-GDP test at threshold t has fpr = Phi(-t), fnr = Phi(t - mu).
        let n = Normal::standard();
        let (mu, t) = (1.3, 0.4);
        let m = gdp_mu_from_rates(n.cdf(-t), n.cdf(t - mu));
        assert!((m - mu).abs() < 1e-9, "{m}");
    }
}
