//! One step of the subsampled Gaussian, discretized on the loss lattice k h: the pessimistic
//! connect-the-dots pair (remove and add directions) and the optimistic one, with the one-step
//! privacy profile and loss they are built from (see the module doc of [`super`]).

use super::MAX_GRID_LOSS;
use super::pmf::Pmf;
use crate::privacy::math::{log_sub, norm_sf, subsampled_gaussian_loss};

/// t - (1 - q) with t = e^eps, to full relative precision: e^eps for q = 1, else
/// (1 - q) expm1(eps - log(1 - q)). (expm1(eps) + q loses all digits when e^eps << 1, e.g.
/// at eps = -35 for q = 1, which used to corrupt the add-direction PLD.)
pub(super) fn t_minus_1_plus_q(q: f64, eps: f64) -> f64 {
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
pub(super) fn delta_one(q: f64, z: f64, eps: f64) -> f64 {
    let c = t_minus_1_plus_q(q, eps);
    if c <= 0.0 {
        return 1.0 - eps.exp();
    }
    let x = z * z * (c / q).ln() + 0.5;
    (q * norm_sf((x - 1.0) / z) - c * norm_sf(x / z)).max(0.0)
}

/// u(eps) = H(t) - (1 - t) = t H_{1/t}(Q || P) = (t - 1 + q) Phi(x_t/z) - q Phi((x_t - 1)/z),
/// accurate for eps < 0 where H(t) is close to 1 - t.
pub(super) fn excess_one(q: f64, z: f64, eps: f64) -> f64 {
    let c = t_minus_1_plus_q(q, eps);
    if c <= 0.0 {
        return 0.0;
    }
    let x = z * z * (c / q).ln() + 0.5;
    (c * norm_sf(-x / z) - q * norm_sf(-(x - 1.0) / z)).max(0.0)
}

/// Lattice range [k_lo, k_hi] of the connect-the-dots grid of one step, its top where the profile
/// H falls to `level` ([`Budget::top`]: the mass past it goes to +inf); None where its losses
/// leave [-MAX_GRID_LOSS, MAX_GRID_LOSS] (z tiny), where e^eps is not finite in f64.
pub(super) fn one_step_bounds(q: f64, z: f64, h: f64, level: f64) -> Option<(i64, i64)> {
    let mut e_hi = 0.01f64;
    while delta_one(q, z, e_hi) > level {
        e_hi *= 2.0;
        if e_hi > 2.0 * MAX_GRID_LOSS {
            return None;
        }
    }
    // The smallest such eps to 1e-3 relative (H is decreasing), not the power of 2 above it.
    let mut lo = 0.5 * e_hi;
    while e_hi - lo > 1e-3 * e_hi {
        let mid = 0.5 * (lo + e_hi);
        if delta_one(q, z, mid) > level {
            lo = mid;
        } else {
            e_hi = mid;
        }
    }
    let k_hi = (e_hi / h).ceil() as i64;
    let k_lo = if q < 1.0 {
        ((-q).ln_1p() / h).floor() as i64
    } else {
        -k_hi
    };
    let fits = |k: i64| (k as f64 * h).abs() <= MAX_GRID_LOSS;
    (fits(k_lo) && fits(k_hi)).then_some((k_lo, k_hi))
}

/// The connect-the-dots pair for one step on the lattice [k_lo, k_hi] of
/// [`one_step_bounds`], as (remove PLD, add PLD).
/// Each PLD is then truncated by `trunc` ([`Budget::trunc`]).
pub(super) fn one_step(q: f64, z: f64, h: f64, (k_lo, k_hi): (i64, i64), trunc: f64) -> (Pmf, Pmf) {
    let n = (k_hi - k_lo + 1) as usize;
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
        slack: 0.0,
        clean: usize::MAX,
        tail: vals_d[n - 1],
    };
    let mut a = Pmf {
        k0: -k_hi,
        p: add,
        inf: vals_u[0] / t0,
        optimistic: false,
        slack: 0.0,
        clean: usize::MAX,
        tail: vals_u[0] / t0,
    };
    r.truncate(trunc);
    a.truncate(trunc);
    (r, a)
}

/// P(a <= N(0, 1) < b), from whichever tail keeps the digits.
pub(super) fn gauss_mass(a: f64, b: f64) -> f64 {
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
/// The remove-direction loss log((1 - q) + q e^{(2x - 1)/(2 z^2)}) of one step at x, increasing.
pub(super) fn loss_at(q: f64, z: f64, x: f64) -> f64 {
    subsampled_gaussian_loss(q, (2.0 * x - 1.0) * 0.5 / z / z)
}

/// X-ranges of the optimistic discretization: remove X ~ P in [-10 z, 1 + 10 z], add X ~ Q in
/// [-10 z, 10 z].
pub(super) fn optimistic_ranges(z: f64) -> [(f64, f64); 2] {
    [(-10.0 * z, 1.0 + 10.0 * z), (-10.0 * z, 10.0 * z)]
}

/// Lattice starts and lengths of the optimistic one-step grids, (remove, add); None where the
/// losses leave [-MAX_GRID_LOSS, MAX_GRID_LOSS].
pub(super) fn optimistic_bounds(q: f64, z: f64, h: f64) -> Option<[(i64, usize); 2]> {
    let grid = |lo: f64, hi: f64| {
        // Checked before the lattice indices are formed: an infinite loss (z tiny) would
        // saturate them and overflow their difference.
        if !(lo.abs() <= MAX_GRID_LOSS && hi.abs() <= MAX_GRID_LOSS) {
            return None;
        }
        let (k_lo, k_hi) = ((lo / h).floor() as i64, (hi / h).floor() as i64);
        Some((k_lo, (k_hi - k_lo + 1) as usize))
    };
    let [(x_lo, x_hi), (y_lo, y_hi)] = optimistic_ranges(z);
    let r = grid(loss_at(q, z, x_lo), loss_at(q, z, x_hi))?;
    let a = grid(-loss_at(q, z, y_hi), -loss_at(q, z, y_lo))?;
    Some([r, a])
}

pub(super) fn one_step_optimistic(
    q: f64,
    z: f64,
    h: f64,
    bounds: [(i64, usize); 2],
    trunc: f64,
) -> (Pmf, Pmf) {
    let l1q = (-q).ln_1p();
    let lq = q.ln();
    // The inverse of loss_at: the x with loss(x) = l (-inf below the loss's infimum log(1 - q)).
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
    let [(x_lo, _), (_, y_hi)] = optimistic_ranges(z);
    let [(k_lo, n), (j_lo, m)] = bounds;
    // Remove: losses in [loss(x_lo), loss(x_hi)].
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
            slack: 0.0,
            clean: usize::MAX,
            tail: 0.0,
        };
        out.truncate(trunc);
        out
    };
    (mk(k_lo, rem), mk(j_lo, add))
}
