//! The two analyses of a one-run audit: from m canaries, each included independently with
//! probability 1/2, and an adversary's r guesses (abstaining on the other m - r) of which v are
//! correct, a lower bound on epsilon that holds with probability >= 1 - beta.
//!
//! - (epsilon, delta): the tail bound of Steinke, Nasr and Jagielski 2023 ("Privacy Auditing
//!   with One (1) Training Run", Section 5, the approximate-DP theorem, with the p-value routine
//!   the paper prints for it), computed with exact binomial sums;
//! - f-DP: the recursion of Mahloujifar, Melis and Chaudhuri 2025 ("Auditing f-Differential
//!   Privacy in One Run", the bound on the probability of c correct guesses out of c' for an
//!   f-DP mechanism, the `audit_rh_with_cap` routine of the authors' code), against a family of
//!   trade-off curves.
//!
//! Both are tests: a hypothesis (epsilon, or the curve's parameter) is rejected when the
//! observed count is less likely than beta under every mechanism that satisfies it, and the
//! lower bound is the largest rejected epsilon. They are valid for any score and guess rule that
//! is fixed before the inclusion bits are seen.

use statrs::distribution::{ContinuousCDF, Normal};
use statrs::function::gamma::ln_gamma;

use crate::error::{Error, Result};
use crate::privacy::gaussian::full_batch_epsilon;

/// The largest epsilon the bisections consider: a lower bound above it is reported as it.
pub const EPSILON_CAP: f64 = 50.0;
/// The largest Gaussian-DP mu the f-DP bisection considers.
pub const MU_CAP: f64 = 40.0;

/// Binomial(r, p) probabilities at 0..=r with p = 1 / (1 + e^{-eps}) (the accuracy of
/// eps-DP randomized response), by exact log-space terms (log-gamma), for eps >= 0.
fn binomial_pmf_rr(r: usize, eps: f64) -> Vec<f64> {
    // log p = -log(1 + e^{-eps}), log(1 - p) = -eps - log(1 + e^{-eps}), both without
    // cancellation for large eps.
    let l1 = (-eps).exp().ln_1p();
    let (lp, lq) = (-l1, -eps - l1);
    let rf = r as f64;
    let lg_r = ln_gamma(rf + 1.0);
    (0..=r)
        .map(|k| {
            let kf = k as f64;
            let lc = lg_r - ln_gamma(kf + 1.0) - ln_gamma(rf - kf + 1.0);
            (lc + kf * lp + (rf - kf) * lq).exp()
        })
        .collect()
}

/// The p-value of v or more correct guesses out of r under an (eps, delta)-DP mechanism with m
/// canaries: with f(v) = P[Binomial(r, e^eps / (1 + e^eps)) >= v],
/// P[W >= v] <= f(v) + 2 m delta max_{1 <= i <= v} (f(v - i) - f(v)) / i
/// (Steinke, Nasr and Jagielski 2023, Section 5; the maximum over i is their computation of the
/// delta term). Capped at 1. Exact binomial sums, no normal approximation.
pub fn steinke_p_value(m: usize, r: usize, v: usize, eps: f64, delta: f64) -> f64 {
    if v == 0 {
        return 1.0;
    }
    if v > r {
        return 0.0;
    }
    let pmf = binomial_pmf_rr(r, eps);
    // Upper tail summed from the far end (small terms first).
    let beta: f64 = pmf[v..].iter().rev().sum();
    if delta == 0.0 {
        return beta.min(1.0);
    }
    let (mut alpha, mut s) = (0.0f64, 0.0);
    for i in 1..=v {
        // s = P[v - i <= Binomial < v] = f(v - i) - f(v).
        s += pmf[v - i];
        alpha = alpha.max(s / i as f64);
    }
    (beta + 2.0 * m as f64 * delta * alpha).min(1.0)
}

/// epsilon_lb of the (epsilon, delta) analysis: the largest eps in [0, [`EPSILON_CAP`]] whose
/// p-value ([`steinke_p_value`]) is <= beta, by bisection to 1e-9 (the p-value increases with
/// eps); 0 when even eps = 0 is not rejected.
pub fn steinke_epsilon_lb(m: usize, r: usize, v: usize, delta: f64, beta: f64) -> f64 {
    let rejects = |eps: f64| steinke_p_value(m, r, v, eps, delta) <= beta;
    largest_rejected(rejects, EPSILON_CAP)
}

/// The largest x in [0, cap] with `rejects(x)`, for a hypothesis rejected on [0, x*] only
/// (bisection to 1e-9); 0 when 0 is not rejected, `cap` when `cap` is.
fn largest_rejected(rejects: impl Fn(f64) -> bool, cap: f64) -> f64 {
    if !rejects(0.0) {
        return 0.0;
    }
    if rejects(cap) {
        return cap;
    }
    let (mut lo, mut hi) = (0.0, cap);
    while hi - lo > 1e-9 {
        let mid = 0.5 * (lo + hi);
        if rejects(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A mechanism's f-DP guarantee as the adversary's constraint: `g(y)` is the least probability
/// an event can have under one neighbouring input when it has probability y under the other
/// (in either order), i.e. g(y) = f(1 - y) for a symmetric trade-off curve f.
pub trait InverseBlowUp {
    /// g(y) for y in [0, 1].
    fn g(&self, y: f64) -> f64;
}

/// mu-Gaussian DP: f(a) = Phi(Phi^{-1}(1 - a) - mu) (Dong, Roth and Su 2022, Def. 2.7), so
/// g(y) = Phi(Phi^{-1}(y) - mu). DP-SGD at q = 1 is exactly mu-GDP with mu = sqrt(T) / z.
#[derive(Debug, Clone, Copy)]
pub struct Gdp(pub f64);

impl InverseBlowUp for Gdp {
    fn g(&self, y: f64) -> f64 {
        if y <= 0.0 {
            return 0.0;
        }
        if y >= 1.0 {
            return 1.0;
        }
        let n = Normal::standard();
        n.cdf(n.inverse_cdf(y) - self.0)
    }
}

/// (eps, delta)-DP: P(E) <= e^eps P'(E) + delta for both orders, so
/// g(y) = max(0, e^{-eps} (y - delta), 1 - delta - e^eps (1 - y)) (Kairouz, Oh and Viswanath
/// 2015; the trade-off curve f_{eps, delta} of Dong, Roth and Su 2022, Eq. (5)).
#[derive(Debug, Clone, Copy)]
pub struct ApproxDp {
    /// epsilon.
    pub eps: f64,
    /// delta.
    pub delta: f64,
}

impl InverseBlowUp for ApproxDp {
    fn g(&self, y: f64) -> f64 {
        let a = (-self.eps).exp() * (y - self.delta);
        let b = 1.0 - self.delta - self.eps.exp() * (1.0 - y);
        a.max(b).max(0.0)
    }
}

/// Whether c correct guesses out of `guesses` (m canaries) reject the f-DP hypothesis `g` at
/// level tau: Mahloujifar, Melis and Chaudhuri 2025 bound the probability of >= c correct
/// guesses by tau whenever the recursion below ends with r_0 + h_0 > guesses / m. From
/// r_c = tau c / m and h_c = tau (guesses - c) / m, for i = c - 1 down to 0:
/// h_i = max(h_{i+1}, g(r_{i+1})), r_i = min(1, r_{i+1} + i / (guesses - i) (h_i - h_{i+1})).
/// (r is capped at 1 as a probability; the cap can only make the test reject less.)
pub fn fdp_rejects(g: &dyn InverseBlowUp, m: usize, guesses: usize, c: usize, tau: f64) -> bool {
    if c == 0 || guesses == 0 || c > guesses || guesses > m {
        return false;
    }
    let mf = m as f64;
    let k = guesses as f64;
    let mut r = tau * c as f64 / mf;
    let mut h = tau * (k - c as f64) / mf;
    for i in (0..c).rev() {
        let h_new = h.max(g.g(r));
        if h_new == h {
            // Neither r nor h changes again.
            break;
        }
        r = (r + i as f64 / (k - i as f64) * (h_new - h)).min(1.0);
        h = h_new;
    }
    r + h > k / mf
}

/// The trade-off curve of a privacy profile: a mechanism that is (eps_i, delta_i)-DP for every i
/// is f-DP with f = max_i f_{eps_i, delta_i} (Dong, Roth and Su 2022, Prop. 2.12: the maximum of
/// valid trade-off curves is valid), so g(y) = max_i g_{eps_i, delta_i}(y). With the PLD
/// accountant's upper profile on a grid of eps it is a conservative (never stronger) version of
/// the accountant's own curve, exact in the limit of a fine grid and exact profile.
#[derive(Debug, Clone)]
pub struct Profile(pub Vec<ApproxDp>);

impl InverseBlowUp for Profile {
    fn g(&self, y: f64) -> f64 {
        self.0.iter().map(|c| c.g(y)).fold(0.0, f64::max)
    }
}

/// The eps grid of [`pld_profile`]: 0 to 12 in steps of 0.02 (g from pairs beyond 12 is below
/// e^{-12} y, negligible against the recursion's tau / m terms at m <= 10^6).
fn profile_grid() -> Vec<f64> {
    (0..=600).map(|i| i as f64 * 0.02).collect()
}

/// The PLD accountant's trade-off curve of DP-SGD at (q, T, z) as a [`Profile`]: its upper
/// delta(eps) on [`profile_grid`], from one composition.
pub fn pld_profile(q: f64, steps: usize, z: f64) -> Result<Profile> {
    let eps = profile_grid();
    let d = crate::privacy::PldAccountant::default().delta_profile(q, steps, z, &eps)?;
    Ok(Profile(
        eps.into_iter()
            .zip(d)
            .map(|(eps, delta)| ApproxDp { eps, delta })
            .collect(),
    ))
}

/// The f-DP analysis against the accountant's own curves of DP-SGD at (q, T): the smallest noise
/// multiplier z' whose PLD curve ([`pld_profile`]) [`fdp_rejects`] rejects (rejection grows with
/// z', the curve rising with it), by bisection on log z' to a relative 1e-4 within
/// [z / 4, 64 z] around the claim's z; returns (z_lb, epsilon at delta of the PLD curve at z_lb),
/// or (+inf, 0) when even 64 z is not rejected. z_lb = z / 4 (reported as such) is the cap.
pub fn fdp_pld_lb(
    (m, guesses, c, tau): (usize, usize, usize, f64),
    (q, steps, z, delta): (f64, usize, f64, f64),
) -> Result<(f64, f64)> {
    let rejects = |zz: f64| -> Result<bool> {
        Ok(fdp_rejects(&pld_profile(q, steps, zz)?, m, guesses, c, tau))
    };
    let (mut lo, mut hi) = (z / 4.0, 64.0 * z);
    if !rejects(hi)? {
        return Ok((f64::INFINITY, 0.0));
    }
    if !rejects(lo)? {
        while hi / lo > 1.0 + 1e-4 {
            let mid = (lo * hi).sqrt();
            if rejects(mid)? {
                hi = mid;
            } else {
                lo = mid;
            }
        }
    } else {
        hi = lo;
    }
    let eps = crate::privacy::PldAccountant::default().epsilon_upper(q, steps, hi, delta)?;
    Ok((hi, eps))
}

/// The largest mu in [0, [`MU_CAP`]] whose mu-GDP hypothesis [`fdp_rejects`] rejects (by
/// bisection; rejection is monotone in mu since g decreases with mu); 0 when none is.
pub fn fdp_mu_lb(m: usize, guesses: usize, c: usize, tau: f64) -> f64 {
    largest_rejected(|mu| fdp_rejects(&Gdp(mu), m, guesses, c, tau), MU_CAP)
}

/// The largest pure eps in [0, [`EPSILON_CAP`]] whose (eps, delta) hypothesis [`fdp_rejects`]
/// rejects (the f-DP analysis against the (eps, delta) trade-off curve).
pub fn fdp_epsilon_lb_approx_dp(m: usize, guesses: usize, c: usize, delta: f64, tau: f64) -> f64 {
    largest_rejected(
        |eps| fdp_rejects(&ApproxDp { eps, delta }, m, guesses, c, tau),
        EPSILON_CAP,
    )
}

/// epsilon at delta of mu-GDP: the eps solving delta = Phi(-eps/mu + mu/2) - e^eps
/// Phi(-eps/mu - mu/2) (Dong, Roth and Su 2022, Cor. 2.13), i.e. the Gaussian mechanism at
/// noise multiplier 1/mu (Balle and Wang 2018, Thm 8); 0 at mu = 0.
pub fn gdp_epsilon(mu: f64, delta: f64) -> Result<f64> {
    if mu <= 0.0 {
        return Ok(0.0);
    }
    full_batch_epsilon(1, 1.0 / mu, delta)
}

/// The mu of the Gaussian-DP curve whose epsilon at delta is `eps` (bisection on
/// [`gdp_epsilon`], increasing in mu).
pub fn gdp_mu_of_epsilon(eps: f64, delta: f64) -> Result<f64> {
    if !(eps.is_finite() && eps > 0.0) {
        return Err(Error::param(format!(
            "the Gaussian-DP mu needs a positive, finite epsilon, but it is {eps}"
        )));
    }
    let (mut lo, mut hi) = (0.0, MU_CAP);
    if gdp_epsilon(hi, delta)? < eps {
        return Ok(MU_CAP);
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if gdp_epsilon(mid, delta)? < eps {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(hi)
}

/// The guess rule: the k highest scores are guessed "included", the k lowest "excluded", the
/// rest abstain (Steinke et al. 2023, Section 6). Returns (guesses, correct) with guesses =
/// min(2 k, m); ties are broken by canary index, so the rule is a fixed function of the scores.
pub fn guess(scores: &[f64], included: &[bool], k: usize) -> (usize, usize) {
    let m = scores.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let k = k.min(m / 2);
    let top = order[..k].iter().filter(|&&i| included[i]).count();
    let bottom = order[m - k..].iter().filter(|&&i| !included[i]).count();
    (2 * k, top + bottom)
}

/// Which analysis a guess count is chosen for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Analysis {
    /// Steinke et al.'s (epsilon, delta) tail bound.
    EpsDelta,
    /// Mahloujifar et al.'s f-DP recursion against Gaussian DP.
    Fdp,
}

/// The guess count k' (per side) of the rule stated in advance: among k' = m f / 2 for f in
/// {0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1}, the one whose bound is largest at
/// the *expected* outcome of a mechanism that is exactly mu-GDP (scores N(mu, 1) for included
/// canaries, N(0, 1) for excluded ones, m / 2 of each): the top k' then have precision
/// Q(t - mu) / (Q(t - mu) + Q(t)) with (m / 2)(Q(t - mu) + Q(t)) = k', and the expected count
/// correct is 2 k' times it. mu is the claim's (the hypothesis under test), so k' depends on
/// (m, claim, delta, beta) only, never on the run's scores or inclusion bits.
pub fn choose_k(m: usize, mu: f64, delta: f64, beta: f64, analysis: Analysis) -> usize {
    let fracs = [0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0];
    let mut best = (f64::NEG_INFINITY, 1usize);
    let mut seen = Vec::new();
    for f in fracs {
        let k = ((m as f64 * f / 2.0).round() as usize).clamp(1, m / 2);
        if seen.contains(&k) {
            continue;
        }
        seen.push(k);
        let prec = expected_precision(m, k, mu);
        let c = (2.0 * k as f64 * prec).floor() as usize;
        let value = match analysis {
            Analysis::EpsDelta => steinke_epsilon_lb(m, 2 * k, c, delta, beta),
            Analysis::Fdp => fdp_mu_lb(m, 2 * k, c, beta),
        };
        if value > best.0 {
            best = (value, k);
        }
    }
    best.1
}

/// Precision of the top k of m / 2 N(mu, 1) and m / 2 N(0, 1) scores at the threshold where
/// the expected count above it is k (bisection on t).
pub fn expected_precision(m: usize, k: usize, mu: f64) -> f64 {
    let n = Normal::standard();
    let sf = |x: f64| n.cdf(-x);
    let target = k as f64 / (m as f64 / 2.0);
    let (mut lo, mut hi) = (-40.0, 40.0);
    for _ in 0..200 {
        let t = 0.5 * (lo + hi);
        if sf(t - mu) + sf(t) > target {
            lo = t;
        } else {
            hi = t;
        }
    }
    let t = 0.5 * (lo + hi);
    let (a, b) = (sf(t - mu), sf(t));
    if a + b > 0.0 { a / (a + b) } else { 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pmf sums to 1 and matches a direct product at a small point.
    #[test]
    fn pmf_is_a_distribution() {
        let p = binomial_pmf_rr(50, 1.0);
        let s: f64 = p.iter().sum();
        assert!((s - 1.0).abs() < 1e-12, "{s}");
        let q = 1.0 / (1.0 + (-1.0f64).exp());
        let direct = 50.0 * 49.0 / 2.0 * q.powi(2) * (1.0 - q).powi(48);
        assert!(
            (p[2] - direct).abs() < 1e-12 * direct.max(1e-300),
            "{} {direct}",
            p[2]
        );
    }

    /// Rejection is monotone in the hypothesis for both analyses at a typical point.
    #[test]
    fn rejection_is_monotone() {
        let (m, r, v) = (1000, 100, 80);
        let e = steinke_epsilon_lb(m, r, v, 1e-5, 0.05);
        assert!(e > 0.0);
        assert!(steinke_p_value(m, r, v, e * 0.99, 1e-5) <= 0.05);
        assert!(steinke_p_value(m, r, v, e * 1.01, 1e-5) > 0.05);
        let mu = fdp_mu_lb(m, r, v, 0.05);
        assert!(fdp_rejects(&Gdp(mu * 0.99), m, r, v, 0.05));
        assert!(!fdp_rejects(&Gdp(mu * 1.01), m, r, v, 0.05));
    }
}
