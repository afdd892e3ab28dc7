//! Numerical checks of the facts the proof of Thm L.1 rests on, each against an explicit
//! reference: Assumption 6.1 with G = 3||v|| (Eq. 100), the far-point growth of Eqs. (110)-(111),
//! and the frequency of the Chernoff event of Eq. (107) against the exact binomial tail and the
//! multiplicative Chernoff bound.

use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};
use serde::Serialize;
use statrs::distribution::{Binomial, DiscreteCDF};

use super::instance::QvInstance;
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::linalg::norm2;
use crate::loss::{AppendixLLoss, Loss, mean_value};
use crate::rng::SimRng;

/// (E_{x ~ Q_v} ||grad l(w, x)||^k)^(1/k) at a fixed w, exactly (two-point law; the x = 0 atom
/// contributes 0): p^(1/k) ||grad l(w, p^(-1/k) v)||, and the ess sup ||grad l(w, v)|| at
/// k = inf. Eq. (100) says this is <= G = 3||v|| for every w, with equality when w is a
/// multiple of -v with ||w|| > 1 (then the gradient is -3x).
pub fn eq100_gradient_moment(inst: &QvInstance, w: &[f64]) -> f64 {
    let loss = AppendixLLoss::new(inst.d());
    let x = inst.support_point();
    let mut g = vec![0.0; inst.d()];
    loss.grad(w, &x, 0.0, &mut g);
    // p^(1/k) * ||grad at p^(-1/k) v||; at k = inf, p^0 = 1 and the point is v itself.
    inst.p().powf(1.0 / inst.k()) * norm2(&g)
}

/// (E (3||x||)^k)^(1/k) under Q_v in closed form (Eq. 96 with Eq. 100): p^(1/k) 3 p^(-1/k)||v||,
/// which is 3||v|| = G up to rounding; at k = inf the ess sup 3||v||.
pub fn eq100_lipschitz_moment(inst: &QvInstance) -> f64 {
    let k = inst.k();
    let g_point = 3.0 * norm2(&inst.support_point());
    if k.is_infinite() {
        g_point
    } else {
        (inst.p().ln() / k + g_point.ln()).exp()
    }
}

/// Empirical k-th moment of G(x_i) = 3||x_i|| over a data set, ((1/n) sum G_i^k)^(1/k), or the
/// max at k = inf.
pub fn empirical_lipschitz_moment(data: &Dataset, k: f64) -> f64 {
    let gs = (0..data.n).map(|i| 3.0 * norm2(data.row(i)));
    if k.is_infinite() {
        gs.fold(0.0, f64::max)
    } else {
        (gs.map(|g| g.powf(k)).sum::<f64>() / data.n as f64).powf(1.0 / k)
    }
}

/// One far point w (||w - w*|| >= 4) and the three sides of Eqs. (110)-(111).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FarPoint {
    /// ||w - w*||.
    pub dist: f64,
    /// f(w) - f(w*).
    pub gap: f64,
    /// Eq. (110) with its constant made explicit by Eqs. (106) and (109):
    /// ||x_bar|| ||w - w*|| / 2.
    pub eq110: f64,
    /// Eq. (111) under the event of Eq. (107), ||x_bar|| >= p^(1-1/k)||v||/2:
    /// p^(1-1/k) ||v|| ||w - w*|| / 4 = (p^(1-1/k) G / 12) ||w - w*||.
    pub eq111: f64,
}

/// Summary of the far-point check over random far points.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FarPointReport {
    /// Points tried.
    pub points: usize,
    /// Whether the data set satisfies the Chernoff event of Eq. (107).
    pub eq107_event: bool,
    /// min over points of gap / eq110 (>= 1 is the claim; NaN if ||x_bar|| = 0).
    pub min_ratio_eq110: f64,
    /// min over points of gap / eq111 (>= 1 is the claim when `eq107_event`).
    pub min_ratio_eq111: f64,
}

/// Evaluates Eqs. (110)-(111) at w on `data` (drawn from `inst`), with f the mean of Eq. (97)
/// computed sample by sample (not from the closed form), and w* = v/||v||.
pub fn far_point(inst: &QvInstance, data: &Dataset, w: &[f64]) -> FarPoint {
    let loss = AppendixLLoss::new(inst.d());
    let ws = inst.w_star();
    let opt = inst.optimum(data);
    let dist = norm2(&w.iter().zip(&ws).map(|(a, b)| a - b).collect::<Vec<_>>());
    let gap = mean_value(&loss, w, data) - mean_value(&loss, &ws, data);
    FarPoint {
        dist,
        gap,
        eq110: opt.xbar_norm * dist / 2.0,
        eq111: inst.eq130_scale() * dist / 4.0,
    }
}

/// Eqs. (110)-(111) at `points` random far points w = w* + r u, u uniform on the sphere and
/// r uniform in [4, 4 + spread].
pub fn far_point_check(
    inst: &QvInstance,
    data: &Dataset,
    points: usize,
    spread: f64,
    rng: &mut SimRng,
) -> FarPointReport {
    let ws = inst.w_star();
    let d = inst.d();
    let mut min110 = f64::INFINITY;
    let mut min111 = f64::INFINITY;
    let mut u = vec![0.0; d];
    for _ in 0..points {
        u.iter_mut()
            .for_each(|z| *z = StandardNormal.sample(&mut *rng));
        let nu = norm2(&u);
        let r = 4.0 + spread * rng.random::<f64>();
        let w: Vec<f64> = ws.iter().zip(&u).map(|(a, z)| a + r * z / nu).collect();
        let fp = far_point(inst, data, &w);
        min110 = min110.min(fp.gap / fp.eq110);
        min111 = min111.min(fp.gap / fp.eq111);
    }
    FarPointReport {
        points,
        eq107_event: eq107_event(inst, data),
        min_ratio_eq110: min110,
        min_ratio_eq111: min111,
    }
}

/// The event of Eq. (107): ||x_bar|| >= p^(1-1/k) ||v|| / 2, computed from the data.
pub fn eq107_event(inst: &QvInstance, data: &Dataset) -> bool {
    inst.optimum(data).xbar_norm >= inst.eq107_threshold()
}

/// Frequency of the Chernoff event of Eq. (107) and of the empty data set over many draws.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ChernoffReport {
    /// Data sets drawn.
    pub draws: usize,
    /// Fraction with ||x_bar|| >= p^(1-1/k)||v||/2.
    pub event_frequency: f64,
    /// Fraction of all-zero data sets.
    pub empty_frequency: f64,
    /// Mean number of nonzero samples (expected: n p).
    pub mean_nonzero: f64,
    /// n p.
    pub expected_nonzero: f64,
    /// Exact P(Bin(n, p) >= n p / 2): the event is m >= n p / 2 for m nonzero samples, since
    /// ||x_bar|| = (m/n) p^(-1/k) ||v||.
    pub binomial_probability: f64,
    /// The multiplicative Chernoff lower bound 1 - exp(-n p / 8)
    /// (P(X <= (1 - 1/2) mu) <= exp(-(1/2)^2 mu / 2)), the O(np) of Eq. (107) made explicit.
    pub chernoff_bound: f64,
    /// (1 - p)^n.
    pub empty_probability: f64,
}

/// Draws `draws` data sets of n samples (by nonzero count, the same stream consumption as
/// [`QvInstance::sample`]) and measures the Chernoff event of Eq. (107) and empty data sets.
pub fn eq107_frequency(
    inst: &QvInstance,
    draws: usize,
    rng: &mut SimRng,
) -> Result<ChernoffReport> {
    if draws == 0 {
        return Err(Error::param(
            "the number of draws must be at least 1, but is 0",
        ));
    }
    let thr = inst.eq107_threshold();
    let (mut hits, mut empty, mut total) = (0usize, 0usize, 0usize);
    for _ in 0..draws {
        let m = inst.sample_nonzero_count(rng);
        total += m;
        empty += (m == 0) as usize;
        hits += (inst.xbar_norm_for_count(m) >= thr) as usize;
    }
    let np = inst.expected_nonzero();
    let bin = Binomial::new(inst.p(), inst.n() as u64).map_err(|e| {
        Error::Numerical(format!("binomial(n = {}, p = {}): {e}", inst.n(), inst.p()))
    })?;
    // P(m >= np/2) = 1 - P(m <= ceil(np/2) - 1).
    let m_min = (np / 2.0).ceil() as u64;
    let binomial_probability = if m_min == 0 { 1.0 } else { bin.sf(m_min - 1) };
    Ok(ChernoffReport {
        draws,
        event_frequency: hits as f64 / draws as f64,
        empty_frequency: empty as f64 / draws as f64,
        mean_nonzero: total as f64 / draws as f64,
        expected_nonzero: np,
        binomial_probability,
        chernoff_bound: 1.0 - (-np / 8.0).exp(),
        empty_probability: inst.empty_probability(),
    })
}
