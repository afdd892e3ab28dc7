//! The Chernoff window of a composed PLD: where the T-fold loss lives, up to a certified tail
//! mass on each side (see the module doc of [`super`]).

use crate::optimize::golden_min;

/// Chernoff window for the T-fold sum S of J ~ p (J in 0..p.len(), p a sub-probability):
/// P(S < lo) <= tail and P(S >= lo + width) <= tail ([`Budget::window`]), with the exponents (per
/// lattice unit) that certify it. Callers ensure (p.len() - 1) T fits in i64 ([`lattice_fits`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Window {
    pub(super) lo: usize,
    pub(super) width: usize,
    pub(super) lam_lo: f64,
    pub(super) lam_hi: f64,
}

/// ln sum_j e^{ln m_j + lam x_j} over pairs (x_j, ln m_j), rounded up: terms more than 40 nats
/// below the largest count as e^{-40} times it (an upper bound on them), which keeps Chernoff
/// bounds valid. Zero masses (ln m = -inf) contribute nothing.
pub(super) fn log_mgf(xs: &[(f64, f64)], lam: f64) -> f64 {
    let m = xs
        .iter()
        .map(|&(x, lp)| lp + lam * x)
        .fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return m;
    }
    let mut s = 0.0;
    for &(x, lp) in xs {
        let a = lp + lam * x - m;
        if a > f64::NEG_INFINITY {
            s += if a < -40.0 { (-40.0f64).exp() } else { a.exp() };
        }
    }
    m + s.ln()
}

/// (j, ln p_j) for j in 0..p.len(), ln 0 = -inf (negative rounding noise counts as 0 mass).
pub(super) fn log_masses(p: &[f64]) -> Vec<(f64, f64)> {
    p.iter()
        .enumerate()
        .map(|(i, &v)| (i as f64, if v > 0.0 { v.ln() } else { f64::NEG_INFINITY }))
        .collect()
}

impl Window {
    /// The window of the T-fold sum of J ~ p. The exponents are searched on a coarsened copy of
    /// p (at most 4096 blocks at their centres of mass) and then used with the exact moment
    /// generating function, so the bound stays valid whatever the search finds.
    pub(super) fn chernoff(p: &[f64], steps: usize, tail: f64) -> Window {
        let n = p.len();
        let t = steps as f64;
        let s_max = (n - 1) * steps;
        let block = n.div_ceil(4096);
        let proxy: Vec<(f64, f64)> = p
            .chunks(block)
            .enumerate()
            .map(|(b, c)| {
                let m: f64 = c.iter().sum();
                let x: f64 = c.iter().enumerate().map(|(i, v)| i as f64 * v).sum::<f64>();
                ((b * block) as f64 + if m > 0.0 { x / m } else { 0.0 }, m)
            })
            .collect();
        let mass: f64 = proxy.iter().map(|v| v.1).sum();
        let mean = proxy.iter().map(|v| v.0 * v.1).sum::<f64>() / mass;
        let var = (p
            .iter()
            .enumerate()
            .map(|(i, v)| (i as f64 - mean).powi(2) * v)
            .sum::<f64>()
            / mass)
            .max(1e-6);
        let exact_pts = log_masses(p);
        let proxy_pts: Vec<(f64, f64)> = proxy
            .iter()
            .map(|&(x, m)| (x, if m > 0.0 { m.ln() } else { f64::NEG_INFINITY }))
            .collect();
        let exact = |lam: f64| log_mgf(&exact_pts, lam);
        let approx = |lam: f64| log_mgf(&proxy_pts, lam);
        let ln_tail = tail.ln();
        // Gaussian guess for the optimal exponent, searched over e^{+-6} around it.
        let u0 = (2.0 * -ln_tail / (t * var)).sqrt().ln();
        let upper = |k: &dyn Fn(f64) -> f64, lam: f64| (t * k(lam) - ln_tail) / lam;
        let lower = |k: &dyn Fn(f64) -> f64, lam: f64| (ln_tail - t * k(-lam)) / lam;
        let lam_hi = golden_min(|u| upper(&approx, u.exp()), u0 - 6.0, u0 + 6.0, 40).exp();
        let lam_lo = golden_min(|u| -lower(&approx, u.exp()), u0 - 6.0, u0 + 6.0, 40).exp();
        // P(S >= b) <= TAIL for b >= upper(lam_hi); P(S <= a) <= TAIL for a <= lower(lam_lo).
        let b = upper(&exact, lam_hi).ceil();
        let a = lower(&exact, lam_lo).floor();
        let lo = if a < 0.0 {
            0
        } else {
            (a as usize + 1).min(s_max)
        };
        let hi = if b > s_max as f64 {
            s_max + 1
        } else {
            (b as usize).max(lo + 1)
        };
        Window {
            lo,
            width: hi - lo,
            lam_lo,
            lam_hi,
        }
    }

    /// Placed in a buffer of length n >= width: the start of [lo, lo + n) (room added on top,
    /// the whole range when it fits) and the certified tail masses (below, above) outside it.
    pub(super) fn place(&self, p: &[f64], steps: usize, n: usize) -> (usize, f64, f64) {
        let s_max = (p.len() - 1) * steps;
        // Where the window reaches the top of the range, the buffer still ends room points above
        // it (empty there in truth, see [`Pmf::into_tails`]); n >= width + room keeps lo <=
        // self.lo, so the lower tail stays certified.
        let room = (self.width / 64).max(2);
        let lo = if s_max < n {
            0
        } else {
            self.lo.min((s_max + 1 + room).saturating_sub(n))
        };
        let t = steps as f64;
        let pts = log_masses(p);
        let k = |lam: f64| log_mgf(&pts, lam);
        // 1.001: headroom for rounding in T ln E[e^{lam J}].
        let below = if lo == 0 {
            0.0
        } else {
            1.001 * (self.lam_lo * (lo - 1) as f64 + t * k(-self.lam_lo)).exp()
        };
        let above = if lo + n > s_max {
            0.0
        } else {
            1.001 * (t * k(self.lam_hi) - self.lam_hi * (lo + n) as f64).exp()
        };
        (lo, below, above)
    }
}
