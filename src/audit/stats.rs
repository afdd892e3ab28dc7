//! The statistics of a distinguishing game: Clopper-Pearson bounds on error rates, the
//! (epsilon, delta) and Gaussian-DP lower bounds they certify, the held-out threshold choice,
//! and the Gaussian-DP lower bound on mu from the mean shift of a fixed statistic.

use statrs::distribution::{ChiSquared, Continuous, ContinuousCDF, Normal};
use statrs::function::beta::beta_reg;
use statrs::function::erf::erfc;

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
    /// Clopper-Pearson upper bound on the false-positive rate, at level alpha / 2.
    pub fpr_upper: f64,
    /// Clopper-Pearson upper bound on the false-negative rate, at level alpha / 2.
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

/// Standard normal CDF, Phi(x) = erfc(-x / sqrt 2) / 2 (accurate in both tails).
fn phi(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// Quadrature of the law of W = sqrt(V / df), V ~ chi^2(df): nodes w_j and weights p_j with
/// sum_j p_j g(w_j) ~ E g(W) for smooth bounded g (composite Simpson rule in V over
/// [df - 12 s, df + 20 s + 20], s = sqrt(2 df), clipped at 0; the mass outside is below 1e-15).
fn chi_quadrature(df: f64) -> (Vec<f64>, Vec<f64>) {
    let chi = ChiSquared::new(df).expect("df > 0");
    let s = (2.0 * df).sqrt();
    let (a, b) = ((df - 12.0 * s).max(0.0), df + 20.0 * s + 20.0);
    let m = 1600; // even: intervals of Simpson's rule
    let h = (b - a) / m as f64;
    let mut w = Vec::with_capacity(m + 1);
    let mut p = Vec::with_capacity(m + 1);
    for j in 0..=m {
        let v = a + h * j as f64;
        let c = if j == 0 || j == m {
            1.0
        } else if j % 2 == 1 {
            4.0
        } else {
            2.0
        };
        let dens = if v > 0.0 { chi.ln_pdf(v).exp() } else { 0.0 };
        w.push((v / df).sqrt());
        p.push(c * h / 3.0 * dens);
    }
    let total: f64 = p.iter().sum();
    p.iter_mut().for_each(|x| *x /= total);
    (w, p)
}

/// One-sided lower confidence bound on the Gaussian-DP parameter mu = (m1 - m0) / sigma from
/// samples `s0` ~ N(m0, sigma^2) (without the canary) and `s1` ~ N(m1, sigma^2) (with it), at
/// level 1 - `alpha`, and the point estimate (m1_hat - m0_hat) / s_p.
///
/// Derivation: with the pooled variance s_p^2 = (sum (x - x0_bar)^2 + sum (y - y1_bar)^2) / df,
/// df = n0 + n1 - 2, and k = sqrt(1/n0 + 1/n1), the statistic t = (y1_bar - x0_bar) / (s_p k) is
/// noncentral t with df degrees of freedom and noncentrality mu / k (the two-sample t test with
/// equal variances). Its survival function P(t' >= t; ncp) = E_W Phi(ncp - t W), W = sqrt(V/df),
/// V ~ chi^2(df), increases in ncp, so ncp_lb solving P(t' >= t_obs; ncp_lb) = alpha gives
/// P(mu_lb > mu) = alpha exactly (the inverted one-sided test), mu_lb = k ncp_lb, floored at 0.
///
/// The test on a statistic with these two laws has the trade-off curve G_mu of mu-GDP (Dong, Roth
/// and Su 2022, Def. 2.7), and post-processing cannot improve on the mechanism, so a mechanism
/// that is mu'-GDP has mu' >= mu: a lower bound on mu is a lower bound on the mechanism's mu.
/// Nothing is selected from the data (the statistic is fixed before the trials run), so every
/// trial certifies.
pub fn gdp_mu_lower(s0: &[f64], s1: &[f64], alpha: f64) -> (f64, f64) {
    let (n0, n1) = (s0.len() as f64, s1.len() as f64);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (m0, m1) = (mean(s0), mean(s1));
    let ss = |v: &[f64], m: f64| v.iter().map(|x| (x - m) * (x - m)).sum::<f64>();
    let df = n0 + n1 - 2.0;
    let sp = ((ss(s0, m0) + ss(s1, m1)) / df).sqrt();
    let k = (1.0 / n0 + 1.0 / n1).sqrt();
    let t = (m1 - m0) / (sp * k);
    let mu_hat = (m1 - m0) / sp;
    if t.is_nan() {
        return (0.0, 0.0);
    }
    if t == f64::INFINITY {
        return (f64::INFINITY, f64::INFINITY);
    }
    let (w, p) = chi_quadrature(df);
    let sf = |ncp: f64| -> f64 {
        w.iter()
            .zip(&p)
            .map(|(&wj, &pj)| pj * phi(ncp - t * wj))
            .sum()
    };
    if sf(0.0) >= alpha {
        return (0.0, mu_hat.max(0.0));
    }
    // sf(hi) ~ 1 > alpha: at ncp = t w_max + 40 every term is Phi(>= 40).
    let (mut lo, mut hi) = (0.0, t.max(0.0) * w[w.len() - 1] + 40.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if sf(mid) >= alpha {
            hi = mid;
        } else {
            lo = mid;
        }
        if hi - lo <= 1e-12 * hi.max(1.0) {
            break;
        }
    }
    // lo: the largest ncp with sf < alpha, up to 1e-12 relative (rounded down, against the user).
    (k * lo, mu_hat)
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
