//! Privacy loss distribution (PLD) accountant for the Poisson-subsampled Gaussian with the
//! pessimistic "connect-the-dots" discretization of Doroshenko, Ghazi, Kamath, Kumar and
//! Manurangsi (2022).
//!
//! One step is the pair P = (1 - q) N(0, z^2) + q N(1, z^2), Q = N(0, z^2) (remove direction;
//! add is (Q, P)). Its privacy profile H(t) = sup_S P(S) - t Q(S), t = e^eps >= 0, is convex and
//! decreasing. We interpolate H linearly (in t) through the lattice eps_k = k h, k_lo..k_hi, and hold
//! it constant past t_hi. Chords of a convex function lie above it, so the interpolant H' >= H for
//! every t >= 0; H' is itself the profile of a discrete pair (P', Q'), i.e. (P', Q') dominates
//! (P, Q) in the sense of Zhu, Dong and Wang (2022), and dominating pairs compose. P' has atoms at
//! losses eps_k with masses t_k (slope_k - slope_{k-1}) and mass H(t_hi) at +inf; the add
//! direction (Q', P') has atoms at -eps_k with masses slope_k - slope_{k-1} and mass
//! H_{1/t_lo}(Q || P) at +inf. Each direction is composed T times by FFT convolutions
//! (binary powering); after every convolution the negligible upper tail (P-mass <= 1e-15) is
//! moved to +inf and the lower tail is moved up to the first kept atom, both of which can only
//! increase delta(eps) (the loss only grows under that coupling). So the reported epsilon is an
//! upper bound on the true one, up to floating-point rounding.
//!
//! Error: refining the grid from 2h to h replaces chords by shorter chords, so eps(h) <= eps(2h)
//! and both are upper bounds; we report eps(2h) - eps(h) as the discretization error estimate.

use super::fft::convolve_two;
use super::math::{log_add, log_sub, norm_sf};
use super::validate::{check_delta, check_q, check_steps, check_z};
use crate::error::{Error, Result};

/// P-mass allowed to be pushed to +inf (upper tail) or up to the first atom (lower tail) per
/// truncation, and the privacy-profile level where the single-step grid stops.
const TAIL: f64 = 1e-15;

/// The PLD accountant.
#[derive(Debug, Clone, Copy)]
pub struct PldAccountant {
    /// Loss-grid spacing h.
    pub discretization: f64,
}

impl Default for PldAccountant {
    fn default() -> Self {
        Self {
            discretization: 1e-4,
        }
    }
}

/// A PLD epsilon with its discretization error estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PldEpsilon {
    /// Upper bound on epsilon (grid h).
    pub epsilon: f64,
    /// eps(2h) - eps(h) >= 0: how much the answer moved when the grid was halved.
    pub error: f64,
}

/// A discrete loss distribution on the lattice (k0 + j) h, with mass `inf` at +inf.
#[derive(Debug, Clone)]
struct Pmf {
    k0: i64,
    p: Vec<f64>,
    inf: f64,
    /// Optimistic (lower-bound) distribution: truncation moves mass down, never up.
    optimistic: bool,
}

impl Pmf {
    /// The composition of (self, self2) with (other, other2) (or with themselves), both
    /// directions sharing FFTs.
    fn compose_two(x: (&Pmf, &Pmf), y: Option<(&Pmf, &Pmf)>) -> (Pmf, Pmf) {
        let (p1, p2) = convolve_two(&x.0.p, &x.1.p, y.map(|(a, b)| (&a.p[..], &b.p[..])));
        let y = y.unwrap_or(x);
        // FFT rounding leaves entries of either sign at the ~1e-17 level; clamping them to 0 would
        // bias delta upwards by (number of atoms) x 1e-17, so they are kept (zero-mean noise).
        let mk = |a: &Pmf, b: &Pmf, p: Vec<f64>| {
            let mut out = Pmf {
                k0: a.k0 + b.k0,
                p,
                inf: 1.0 - (1.0 - a.inf) * (1.0 - b.inf),
                optimistic: a.optimistic,
            };
            out.truncate();
            out
        };
        (mk(x.0, y.0, p1), mk(x.1, y.1, p2))
    }

    /// Pessimistic truncation: upper tail to +inf, lower tail up onto the first kept atom.
    /// Optimistic truncation (lower bounds): upper tail down onto the last kept atom, lower tail
    /// dropped; both can only decrease delta(eps), since delta(eps) = E_P[(1 - e^{eps - L})_+]
    /// is increasing in every loss value and in every mass.
    fn truncate(&mut self) {
        let n = self.p.len();
        let (mut hi, mut acc) = (n, 0.0);
        while hi > 1 && acc + self.p[hi - 1] <= TAIL {
            acc += self.p[hi - 1];
            hi -= 1;
        }
        if self.optimistic {
            self.p[hi - 1] += acc;
        } else {
            self.inf += acc;
        }
        let (mut lo, mut low) = (0, 0.0);
        while lo + 1 < hi && low + self.p[lo] <= TAIL {
            low += self.p[lo];
            lo += 1;
        }
        let mut p = self.p[lo..hi].to_vec();
        if !self.optimistic {
            p[0] += low;
        }
        self.k0 += lo as i64;
        self.p = p;
    }

    /// (r^t, a^t) by binary powering.
    fn pow_two(r: &Pmf, a: &Pmf, mut t: usize) -> (Pmf, Pmf) {
        let mut base = (r.clone(), a.clone());
        let mut acc: Option<(Pmf, Pmf)> = None;
        loop {
            if t & 1 == 1 {
                acc = Some(match acc {
                    None => base.clone(),
                    Some(c) => Pmf::compose_two((&c.0, &c.1), Some((&base.0, &base.1))),
                });
            }
            t >>= 1;
            if t == 0 {
                return acc.expect("t >= 1");
            }
            base = Pmf::compose_two((&base.0, &base.1), None);
        }
    }

    /// delta(eps) = sum_{l > eps} p_l (1 - e^{eps - l}) + inf.
    fn delta(&self, eps: f64, h: f64) -> f64 {
        let start = ((eps / h).floor() as i64 + 1 - self.k0).max(0) as usize;
        let mut s = self.inf;
        for (j, &pj) in self.p.iter().enumerate().skip(start) {
            let l = (self.k0 + j as i64) as f64 * h;
            if l > eps {
                s += pj * (-(eps - l).exp_m1());
            }
        }
        s
    }

    fn max_loss(&self, h: f64) -> f64 {
        (self.k0 + self.p.len() as i64) as f64 * h
    }
}

/// t - (1 - q) with t = e^eps, to full relative precision: e^eps for q = 1, else
/// (1 - q) expm1(eps - log(1 - q)). (expm1(eps) + q loses all digits when e^eps << 1, e.g.
/// at eps = -35 for q = 1, which used to corrupt the add-direction PLD.)
fn t_minus_1_plus_q(q: f64, eps: f64) -> f64 {
    if q == 1.0 {
        eps.exp()
    } else {
        let l1q = (-q).ln_1p();
        (1.0 - q) * (eps - l1q).exp_m1()
    }
}

/// delta(eps) of one step, remove direction (= add direction for q = 1): with t = e^eps and
/// x_t = z^2 log((t - 1 + q)/q) + 1/2 the point where P/Q = t,
/// H(t) = q Phi_bar((x_t - 1)/z) - (t - 1 + q) Phi_bar(x_t/z).
fn delta_one(q: f64, z: f64, eps: f64) -> f64 {
    let c = t_minus_1_plus_q(q, eps);
    if c <= 0.0 {
        return 1.0 - eps.exp();
    }
    let x = z * z * (c / q).ln() + 0.5;
    (q * norm_sf((x - 1.0) / z) - c * norm_sf(x / z)).max(0.0)
}

/// u(eps) = H(t) - (1 - t) = t H_{1/t}(Q || P) = (t - 1 + q) Phi(x_t/z) - q Phi((x_t - 1)/z),
/// accurate for eps < 0 where H(t) is close to 1 - t.
fn excess_one(q: f64, z: f64, eps: f64) -> f64 {
    let c = t_minus_1_plus_q(q, eps);
    if c <= 0.0 {
        return 0.0;
    }
    let x = z * z * (c / q).ln() + 0.5;
    (c * norm_sf(-x / z) - q * norm_sf(-(x - 1.0) / z)).max(0.0)
}

/// The connect-the-dots pair for one step, as (remove PLD, add PLD).
fn one_step(q: f64, z: f64, h: f64, steps: usize) -> Result<(Pmf, Pmf)> {
    // Upper end: the profile level past which mass goes to +inf; T times it stays <= 1e-18.
    let level = (1e-18 / steps as f64).max(1e-300);
    let mut e_hi = 0.01f64;
    while delta_one(q, z, e_hi) > level {
        e_hi *= 2.0;
        if e_hi > 1e4 {
            return Err(Error::Numerical(format!(
                "privacy loss of one step (q = {q}, z = {z}) does not decay; z is too small"
            )));
        }
    }
    let k_hi = (e_hi / h).ceil() as i64;
    let k_lo = if q < 1.0 {
        ((-q).ln_1p() / h).floor() as i64
    } else {
        -k_hi
    };
    let n = (k_hi - k_lo + 1) as usize;
    if n > 50_000_000 {
        return Err(Error::param(format!(
            "PLD grid of {n} points: discretization {h} is too fine for z = {z}"
        )));
    }
    let eps: Vec<f64> = (0..n).map(|i| (k_lo + i as i64) as f64 * h).collect();
    // Slope of the interpolant on [t_i, t_{i+1}]: in the "excess" form u (slope of H + 1) while
    // eps_{i+1} <= 0, in the H form for eps_{i+1} > 0, to avoid cancellation on either side.
    let em1h = h.exp_m1();
    let vals_u: Vec<f64> = eps
        .iter()
        .map(|&e| if e <= h { excess_one(q, z, e) } else { 0.0 })
        .collect();
    let vals_d: Vec<f64> = eps
        .iter()
        .map(|&e| if e >= -h { delta_one(q, z, e) } else { 0.0 })
        .collect();
    // slope[i] for interval i, as (value, is_u_form); slope[-1] = u_0 / t_0 (u form), the last
    // slope is 0 in H form.
    let mut slopes: Vec<(f64, bool)> = Vec::with_capacity(n + 1);
    let t0 = eps[0].exp();
    slopes.push((vals_u[0] / t0, true));
    for i in 0..n - 1 {
        let dt = eps[i].exp() * em1h;
        if eps[i + 1] <= 0.0 {
            slopes.push(((vals_u[i + 1] - vals_u[i]) / dt, true));
        } else {
            slopes.push(((vals_d[i + 1] - vals_d[i]) / dt, false));
        }
    }
    slopes.push((0.0, false));
    let diff = |a: (f64, bool), b: (f64, bool)| -> f64 {
        // a - b as slopes of H; u-slopes are H-slopes + 1.
        let conv = |s: (f64, bool)| if s.1 { s.0 - 1.0 } else { s.0 };
        if a.1 == b.1 {
            a.0 - b.0
        } else {
            conv(a) - conv(b)
        }
    };
    let mut rem = Vec::with_capacity(n);
    let mut add = Vec::with_capacity(n);
    for i in 0..n {
        let d = diff(slopes[i + 1], slopes[i]).max(0.0);
        rem.push(eps[i].exp() * d);
        add.push(d);
    }
    add.reverse(); // add-direction losses are -eps_i, ascending.
    let mut r = Pmf {
        k0: k_lo,
        p: rem,
        inf: vals_d[n - 1],
        optimistic: false,
    };
    let mut a = Pmf {
        k0: -k_hi,
        p: add,
        inf: vals_u[0] / t0,
        optimistic: false,
    };
    r.truncate();
    a.truncate();
    Ok((r, a))
}

/// P(a <= N(0, 1) < b), from whichever tail keeps the digits.
fn gauss_mass(a: f64, b: f64) -> f64 {
    if a >= b {
        0.0
    } else if a >= 0.0 {
        norm_sf(a) - norm_sf(b)
    } else if b <= 0.0 {
        norm_sf(-b) - norm_sf(-a)
    } else {
        1.0 - norm_sf(b) - norm_sf(-a)
    }
    .max(0.0)
}

/// The optimistic discretization of one step, as (remove PLD, add PLD): each privacy loss
/// L = log(P/Q)(X), X ~ P, is rounded down to the lattice k h (Koskela, Jälkö and Honkela 2020;
/// the "optimistic" PLD of dp_accounting). With every loss rounded down, every composed loss is
/// <= the true one, so delta(eps) = E[(1 - e^{eps - L_1 - ... - L_T})_+] and the epsilon read off
/// are lower bounds on the truth. X is kept within 10 standard deviations (mass beyond, < 1e-23,
/// is dropped below and rounded down onto the top atom above).
fn one_step_optimistic(q: f64, z: f64, h: f64) -> Result<(Pmf, Pmf)> {
    let l1q = (-q).ln_1p();
    let lq = q.ln();
    let inv = 0.5 / z / z;
    // Loss of the remove direction at x: log((1 - q) + q e^{(2x - 1)/(2 z^2)}), increasing.
    let loss = |x: f64| {
        let u = (2.0 * x - 1.0) * inv;
        if q == 1.0 { u } else { log_add(l1q, lq + u) }
    };
    // Its inverse: the x with loss(x) = l (-inf below the loss's infimum log(1 - q)).
    let x_of = |l: f64| {
        let m = if q == 1.0 { l } else { log_sub(l, l1q) - lq };
        if m == f64::NEG_INFINITY {
            f64::NEG_INFINITY
        } else {
            z * z * m + 0.5
        }
    };
    // P-mass of X in [a, b) for the remove direction's P = (1 - q) N(0, z^2) + q N(1, z^2), and
    // the add direction's P = N(0, z^2).
    let mass_p = |a: f64, b: f64| {
        (1.0 - q) * gauss_mass(a / z, b / z) + q * gauss_mass((a - 1.0) / z, (b - 1.0) / z)
    };
    let mass_q = |a: f64, b: f64| gauss_mass(a / z, b / z);
    let grid = |lo: f64, hi: f64| -> Result<(i64, usize)> {
        let (k_lo, k_hi) = ((lo / h).floor() as i64, (hi / h).floor() as i64);
        let n = (k_hi - k_lo + 1) as usize;
        if !(lo.is_finite() && hi.is_finite()) || n > 50_000_000 {
            return Err(Error::param(format!(
                "optimistic PLD grid of {n} points: discretization {h} is too fine for z = {z}"
            )));
        }
        Ok((k_lo, n))
    };
    // Remove: losses in [loss(x_lo), loss(x_hi)].
    let (x_lo, x_hi) = (-10.0 * z, 1.0 + 10.0 * z);
    let (k_lo, n) = grid(loss(x_lo), loss(x_hi))?;
    let rem: Vec<f64> = (0..n)
        .map(|i| {
            let k = k_lo + i as i64;
            let a = if i == 0 {
                x_lo
            } else {
                x_of(k as f64 * h).max(x_lo)
            };
            let b = if i + 1 == n {
                f64::INFINITY
            } else {
                x_of((k + 1) as f64 * h)
            };
            mass_p(a, b)
        })
        .collect();
    // Add: the loss is -loss(x), X ~ N(0, z^2), x in [-10 z, 10 z]; the atom k holds
    // -loss(x) in [k h, (k + 1) h), i.e. x in (x_of(-(k + 1) h), x_of(-k h)].
    let (y_lo, y_hi) = (-10.0 * z, 10.0 * z);
    let (j_lo, m) = grid(-loss(y_hi), -loss(y_lo))?;
    let add: Vec<f64> = (0..m)
        .map(|i| {
            let k = j_lo + i as i64;
            let a = if i == 0 {
                y_hi
            } else {
                x_of(-(k as f64) * h).min(y_hi)
            };
            let b = if i + 1 == m {
                f64::NEG_INFINITY
            } else {
                x_of(-((k + 1) as f64) * h)
            };
            // x in (b, a]: a continuous law gives the same mass to [b, a).
            mass_q(b, a)
        })
        .collect();
    let mk = |k0: i64, p: Vec<f64>| {
        let mut out = Pmf {
            k0,
            p,
            inf: 0.0,
            optimistic: true,
        };
        out.truncate();
        out
    };
    Ok((mk(k_lo, rem), mk(j_lo, add)))
}

/// Smallest eps >= 0 with max(delta_rem(eps), delta_add(eps)) <= delta, by bisection.
fn epsilon_from(r: &Pmf, a: &Pmf, h: f64, delta: f64) -> f64 {
    epsilon_bracket(r, a, h, delta).1
}

/// The final bisection bracket (lo, hi) of [`epsilon_from`]: delta(lo) > delta >= delta(hi), so
/// the pair's epsilon lies in (lo, hi]; (0, 0) when delta(0) <= delta, (inf, inf) when the mass
/// at +inf alone exceeds delta.
fn epsilon_bracket(r: &Pmf, a: &Pmf, h: f64, delta: f64) -> (f64, f64) {
    let f = |e: f64| r.delta(e, h).max(a.delta(e, h));
    if r.inf.max(a.inf) >= delta {
        return (f64::INFINITY, f64::INFINITY);
    }
    if f(0.0) <= delta {
        return (0.0, 0.0);
    }
    let (mut lo, mut hi) = (0.0, r.max_loss(h).max(a.max_loss(h)) + h);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(mid) <= delta {
            hi = mid;
        } else {
            lo = mid;
        }
        if hi - lo < 1e-10 * hi.max(1e-3) {
            break;
        }
    }
    (lo, hi)
}

impl PldAccountant {
    fn validate(&self) -> Result<()> {
        let h = self.discretization;
        if !(h.is_finite() && h > 0.0 && h <= 0.1) {
            return Err(Error::param(format!(
                "PLD discretization must lie in (0, 0.1], but is {h}"
            )));
        }
        Ok(())
    }

    /// Epsilon upper bound at grid h only (what calibration uses).
    pub fn epsilon_upper(&self, q: f64, steps: usize, z: f64, delta: f64) -> Result<f64> {
        self.validate()?;
        check_q(q)?;
        check_z(z)?;
        check_steps(steps)?;
        check_delta(delta)?;
        self.eps_at(q, steps, z, delta, self.discretization)
    }

    fn eps_at(&self, q: f64, steps: usize, z: f64, delta: f64, h: f64) -> Result<f64> {
        let (r1, a1) = one_step(q, z, h, steps)?;
        let (r, a) = Pmf::pow_two(&r1, &a1, steps);
        Ok(epsilon_from(&r, &a, h, delta))
    }

    /// A lower bound on the true epsilon at grid h: the optimistic PLD (every privacy loss
    /// rounded down to the grid), the counterpart of [`PldAccountant::epsilon_upper`]. The true
    /// epsilon lies in [epsilon_lower, epsilon_upper].
    pub fn epsilon_lower(&self, q: f64, steps: usize, z: f64, delta: f64) -> Result<f64> {
        self.validate()?;
        check_q(q)?;
        check_z(z)?;
        check_steps(steps)?;
        check_delta(delta)?;
        let h = self.discretization;
        let (r1, a1) = one_step_optimistic(q, z, h)?;
        let (r, a) = Pmf::pow_two(&r1, &a1, steps);
        // The lower end of the bisection bracket is the side that keeps this a lower bound.
        Ok(epsilon_bracket(&r, &a, h, delta).0)
    }

    /// Epsilon (upper bound) and its discretization error estimate eps(2h) - eps(h).
    pub fn epsilon(&self, q: f64, steps: usize, z: f64, delta: f64) -> Result<PldEpsilon> {
        let e = self.epsilon_upper(q, steps, z, delta)?;
        if !e.is_finite() {
            return Ok(PldEpsilon {
                epsilon: e,
                error: 0.0,
            });
        }
        let coarse = self.eps_at(q, steps, z, delta, 2.0 * self.discretization)?;
        Ok(PldEpsilon {
            epsilon: e,
            error: (coarse - e).max(0.0),
        })
    }

    /// delta(eps) after `steps` steps (upper bound), max over add and remove.
    pub fn delta(&self, q: f64, steps: usize, z: f64, eps: f64) -> Result<f64> {
        self.validate()?;
        check_q(q)?;
        check_z(z)?;
        check_steps(steps)?;
        let h = self.discretization;
        let (r1, a1) = one_step(q, z, h, steps)?;
        let (r, a) = Pmf::pow_two(&r1, &a1, steps);
        Ok(r.delta(eps, h).max(a.delta(eps, h)).min(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_step_masses_sum_to_one_in_both_directions() {
        // P'-masses plus the mass at +inf must sum to H'(0) = 1, and Q'-masses plus its +inf mass
        // to 1 (the interpolant's slope runs from -(1 - u_0/t_0) to 0). 1e-9 covers the
        // truncated 1e-15 tails and rounding of ~1e5 terms.
        for &(q, z) in &[(0.01, 1.1), (1.0, 2.0), (0.3, 0.7)] {
            let (r, a) = one_step(q, z, 1e-3, 1).unwrap();
            let sr: f64 = r.p.iter().sum::<f64>() + r.inf;
            let sa: f64 = a.p.iter().sum::<f64>() + a.inf;
            assert!((sr - 1.0).abs() < 1e-9, "q={q} z={z}: remove mass {sr}");
            assert!((sa - 1.0).abs() < 1e-9, "q={q} z={z}: add mass {sa}");
        }
    }

    #[test]
    fn one_step_profile_dominates_exact_profile() {
        // The discretized pair's delta(eps) must be >= the exact H(e^eps) at and between grid
        // points (chords above a convex function); the slack 1e-13 is rounding only.
        let (q, z, h) = (0.05, 0.9, 1e-2);
        let (r, _) = one_step(q, z, h, 1).unwrap();
        for k in 0..400 {
            let e = k as f64 * 0.0137;
            let exact = delta_one(q, z, e);
            let disc = r.delta(e, h);
            assert!(disc >= exact - 1e-13, "eps={e}: {disc} < {exact}");
        }
    }
}
#[cfg(test)]
#[path = "pld_direction_tests.rs"]
mod direction_tests;
