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
//! H_{1/t_lo}(Q || P) at +inf. The one-step P-mass <= 1e-15 in either tail is moved (upper tail
//! to +inf, lower tail up onto the first kept atom), which can only increase delta(eps).
//!
//! Composition: each direction's T-fold self-convolution is one real FFT, the spectrum raised to
//! the T-th power, and one inverse FFT, of a length N covering a window [lo, lo + N) of the summed
//! loss chosen by Chernoff bounds from the discrete one-step PLD itself (Koskela, Jälkö and
//! Honkela 2020; dp_accounting's `self_convolve`): outside it lies P-mass at most tau_lo below and
//! tau_hi above (certified, computed from the exact moment generating function of the grid).
//! The circular convolution wraps that mass into the window: mass from below lands higher
//! (pessimistic), mass from above lands lower, which can lower delta(eps) by at most tau_hi, so
//! tau_hi is added to the mass at +inf. So the reported epsilon is an upper bound on the true
//! one, up to floating-point rounding.
//!
//! Memory: N grows like (window of the T-fold loss) / h. The accountant estimates the grid of a
//! query before allocating it ([`PldAccountant::grid`]) and coarsens h by powers of 2 until the
//! query fits [`PLD_MEMORY_BOUND`]; where no h <= [`PLD_MAX_DISCRETIZATION`] fits, or the one-step
//! losses leave f64's range (z tiny), [`PldAccountant::epsilon`] reports the RDP epsilon (always
//! a valid upper bound) with a note.
//!
//! Error: refining the grid from 2h to h replaces chords by shorter chords, so eps(h) <= eps(2h)
//! and both are upper bounds; we report eps(2h) - eps(h) as the discretization error estimate.

use super::fft::{fast_len, scratch_words, self_convolve_circular};
use super::math::{log_add, log_sub, norm_sf};
use super::rdp::RdpAccountant;
use super::validate::{check_delta, check_q, check_steps, check_z};
use crate::error::{Error, Result};

/// Cap on the P-mass pushed to +inf (upper tail) or up to the first atom (lower tail) by the
/// one-step truncation, and on the Chernoff bound of the T-fold loss outside the FFT window (per
/// side): the values used before the budget of [`TAIL_SHARE`], kept wherever they are smaller, so
/// that results at ordinary delta did not change.
const TAIL: f64 = 1e-15;

/// The share of delta the truncated tails may hold in all ([`Budget`]): the P-mass placed
/// pessimistically by the truncations (to +inf, up to the first kept atom, or wrapped by the
/// circular convolution) is at most `TAIL_SHARE * delta` in each direction, so it moves
/// delta(eps) by at most that much, and epsilon by at most the `tail` part of the error estimate.
pub const TAIL_SHARE: f64 = 1e-3;

/// The smallest per-step level at which the one-step profile H is evaluated to define the top of
/// the grid: below it `norm_sf` nears the subnormal range and H loses its relative accuracy.
const MIN_LEVEL: f64 = 1e-290;

/// Memory one PLD query may allocate, in bytes (its grids, FFT buffers and cached FFT plans),
/// as estimated by [`PldGrid::bytes`] before anything is allocated.
pub const PLD_MEMORY_BOUND: f64 = 256.0 * 1024.0 * 1024.0;

/// The coarsest loss-grid spacing the accountant coarsens to before it falls back to RDP.
pub const PLD_MAX_DISCRETIZATION: f64 = 1.0;

/// One-step losses must satisfy |eps| <= this so that e^eps is finite on the whole grid.
const MAX_GRID_LOSS: f64 = 700.0;

/// f64 words per point of the one-step grid while it is built (pessimistic: eps, the two profile
/// forms, the slopes (two words), both directions' masses and their truncated copies).
const ONE_STEP_WORDS: f64 = 9.0;
/// f64 words per point of N for one cached pair of forward and inverse FFT plans (twiddles);
/// measured with `/usr/bin/time -v`, see the tests of [`PldGrid::bytes`].
const PLAN_WORDS: f64 = 3.0;

/// The tail masses one query may place pessimistically, from its delta and T: the total
/// b = [`TAIL_SHARE`] delta is split as T top <= b/4 (one-step profile past the grid's top, i.e.
/// mass at +inf), T (upper + lower truncation) <= b/4, and the window's two sides <= b/4, so the
/// whole is <= 3b/4 (1 - (1 - m)^T <= T m). Each part is also capped by the value used before the
/// budget existed (1e-18 / T for the top, [`TAIL`] for the rest).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Budget {
    /// Per step: H(t_hi), the profile past the grid's top (mass at +inf).
    top: f64,
    /// Per step and per side: the P-mass moved by [`Pmf::truncate`].
    trunc: f64,
    /// Per side of the composed loss: the certified mass outside the FFT window.
    window: f64,
}

impl Budget {
    /// The budget of a query at (delta, steps); None where the per-step top level falls below
    /// [`MIN_LEVEL`] (delta tiny and T huge), where f64 cannot certify it.
    fn new(delta: f64, steps: usize) -> Option<Budget> {
        let b = TAIL_SHARE * delta;
        let t = steps as f64;
        let top = (1e-18 / t).min(b / (4.0 * t));
        (top >= MIN_LEVEL).then_some(Budget {
            top,
            trunc: TAIL.min(b / (8.0 * t)),
            window: TAIL.min(b / 8.0),
        })
    }

    /// The budget used where no delta is given ([`PldAccountant::delta`], the grid estimates of
    /// the old interface): the caps alone.
    fn caps(steps: usize) -> Budget {
        Budget {
            top: (1e-18 / steps as f64).max(MIN_LEVEL),
            trunc: TAIL,
            window: TAIL,
        }
    }
}

/// The PLD accountant.
#[derive(Debug, Clone, Copy)]
pub struct PldAccountant {
    /// Requested loss-grid spacing h (coarsened by powers of 2 where memory requires).
    pub discretization: f64,
}

impl Default for PldAccountant {
    fn default() -> Self {
        Self {
            discretization: 1e-4,
        }
    }
}

/// The grids one PLD query allocates, known before any of them is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PldGrid {
    /// Loss-grid spacing h actually used.
    pub discretization: f64,
    /// Points of the one-step grid as built (the longer direction), before truncation.
    pub one_step_len: usize,
    /// Points of the two truncated one-step PLDs kept during composition (remove + add).
    pub kept_len: usize,
    /// Length N of the FFT buffers, which are the composed PLDs (each direction).
    pub fft_len: usize,
    /// f64 words of FFT scratch.
    pub scratch_len: usize,
}

impl PldGrid {
    /// Peak bytes of a query on this grid: the larger of the one-step construction and the
    /// composition (kept one-step PLDs, the first direction's result, the second's buffer and
    /// spectrum, scratch; then both results with their suffix sums, 4 N; and all along up to two
    /// cached plan pairs of length <= N).
    pub fn bytes(&self) -> f64 {
        let n = self.fft_len as f64;
        let build = ONE_STEP_WORDS * self.one_step_len as f64;
        let compose = (self.kept_len as f64 + 3.0 * n + 2.0 + self.scratch_len as f64).max(4.0 * n)
            + 2.0 * PLAN_WORDS * n;
        8.0 * build.max(compose)
    }
}

/// A PLD epsilon with its error estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct PldEpsilon {
    /// Upper bound on epsilon (grid h; the RDP epsilon where `rdp_fallback`).
    pub epsilon: f64,
    /// Error estimate, the sum of two parts >= 0: the discretization's eps(2h) - eps(h) (how much
    /// the answer moved when the grid was halved) and the tails' part: epsilon (read with the
    /// FFT's estimated rounding added to delta(eps)) minus epsilon read at delta + m with the
    /// rounding subtracted, m the P-mass the truncations placed pessimistically (at most
    /// [`TAIL_SHARE`] delta). NaN where the RDP fallback was used.
    pub error: f64,
    /// The tails' part of `error` (NaN where the RDP fallback was used).
    pub tail_error: f64,
    /// The grid used; None when the RDP epsilon is reported.
    pub grid: Option<PldGrid>,
    /// True when the PLD could not meet its tail budget within [`PLD_MEMORY_BOUND`] (or f64's
    /// range) and `epsilon` is the RDP accountant's; `note` then says why.
    pub rdp_fallback: bool,
    /// One line for the user where the requested discretization could not be had within
    /// [`PLD_MEMORY_BOUND`] (coarsened grid, or RDP fallback).
    pub note: Option<String>,
}

/// A discrete loss distribution on the lattice (k0 + j) h, with mass `inf` at +inf.
#[derive(Debug, Clone)]
struct Pmf {
    k0: i64,
    p: Vec<f64>,
    inf: f64,
    /// Optimistic (lower-bound) distribution: truncation moves mass down, never up.
    optimistic: bool,
    /// Subtracted from delta(eps): the optimistic side's bound on mass wrapped upwards.
    slack: f64,
    /// Pessimistic side: a bound on the P-mass whose loss was raised by the truncations (moved to
    /// +inf, up onto the first kept atom, or wrapped upwards), including `inf`.
    tail: f64,
    /// Composed PLDs: the first index of `p` above the Chernoff window, where the true mass is
    /// below the window's budget (usize::MAX where there is no such room).
    clean: usize,
}

/// A composed PLD as suffix sums, for O(1) evaluation of delta(eps): over the atoms
/// l_j = (k0 + j) h, tail_k = sum_{j >= k} p_j and disc_k = sum_{j >= k} p_j e^{-(j - k) h},
/// summed from the top (small terms first).
struct Tails {
    k0: i64,
    inf: f64,
    slack: f64,
    /// [`Pmf::tail`] of the composed PLD.
    moved: f64,
    /// Estimated rounding noise of the suffix sums per atom they span (see
    /// [`Pmf::into_tails`]): |error of delta(eps)| ~ noise_rate * (atoms above eps). Over a
    /// composed PLD of 1e5..2e6 points it adds up to about 1e-15..1e-12, the limit of this
    /// accountant at small delta.
    noise_rate: f64,
    tail: Vec<f64>,
    disc: Vec<f64>,
}

/// Chernoff window for the T-fold sum S of J ~ p (J in 0..p.len(), p a sub-probability):
/// P(S < lo) <= tail and P(S >= lo + width) <= tail ([`Budget::window`]), with the exponents (per
/// lattice unit) that certify it. Callers ensure (p.len() - 1) T fits in i64 ([`lattice_fits`]).
#[derive(Debug, Clone, Copy)]
struct Window {
    lo: usize,
    width: usize,
    lam_lo: f64,
    lam_hi: f64,
}

/// ln sum_j e^{ln m_j + lam x_j} over pairs (x_j, ln m_j), rounded up: terms more than 40 nats
/// below the largest count as e^{-40} times it (an upper bound on them), which keeps Chernoff
/// bounds valid. Zero masses (ln m = -inf) contribute nothing.
fn log_mgf(xs: &[(f64, f64)], lam: f64) -> f64 {
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
fn log_masses(p: &[f64]) -> Vec<(f64, f64)> {
    p.iter()
        .enumerate()
        .map(|(i, &v)| (i as f64, if v > 0.0 { v.ln() } else { f64::NEG_INFINITY }))
        .collect()
}

/// Golden-section search for the minimum of f over [a, b].
fn golden_min(f: impl Fn(f64) -> f64, mut a: f64, mut b: f64, iters: usize) -> f64 {
    let r = 0.5 * (5f64.sqrt() - 1.0);
    let (mut c, mut d) = (b - r * (b - a), a + r * (b - a));
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..iters {
        if fc < fd {
            (b, d, fd) = (d, c, fc);
            c = b - r * (b - a);
            fc = f(c);
        } else {
            (a, c, fc) = (c, d, fd);
            d = a + r * (b - a);
            fd = f(d);
        }
    }
    if fc < fd { c } else { d }
}

impl Window {
    /// The window of the T-fold sum of J ~ p. The exponents are searched on a coarsened copy of
    /// p (at most 4096 blocks at their centres of mass) and then used with the exact moment
    /// generating function, so the bound stays valid whatever the search finds.
    fn chernoff(p: &[f64], steps: usize, tail: f64) -> Window {
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
    fn place(&self, p: &[f64], steps: usize, n: usize) -> (usize, f64, f64) {
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

impl Pmf {
    /// Pessimistic truncation: upper tail to +inf, lower tail up onto the first kept atom.
    /// Optimistic truncation (lower bounds): upper tail down onto the last kept atom, lower tail
    /// dropped; both can only decrease delta(eps), since delta(eps) = E_P[(1 - e^{eps - L})_+]
    /// is increasing in every loss value and in every mass.
    /// At most `tail` of P-mass is moved on each side; on the pessimistic side the moved mass is
    /// added to [`Pmf::tail`].
    fn truncate(&mut self, tail: f64) {
        let n = self.p.len();
        let (mut hi, mut acc) = (n, 0.0);
        while hi > 1 && acc + self.p[hi - 1] <= tail {
            acc += self.p[hi - 1];
            hi -= 1;
        }
        if self.optimistic {
            self.p[hi - 1] += acc;
        } else {
            self.inf += acc;
        }
        let (mut lo, mut low) = (0, 0.0);
        while lo + 1 < hi && low + self.p[lo] <= tail {
            low += self.p[lo];
            lo += 1;
        }
        let mut p = self.p[lo..hi].to_vec();
        if !self.optimistic {
            p[0] += low;
            self.tail += acc + low;
        }
        self.k0 += lo as i64;
        self.p = p;
    }

    /// The T-fold composition on a buffer of length n (one FFT each way): the window [lo, lo + n)
    /// of the summed lattice offsets, with the wrapped tails accounted as described in the
    /// module documentation.
    fn self_compose(&self, steps: usize, n: usize, win: &Window) -> Pmf {
        let (lo, below, above) = win.place(&self.p, steps, n);
        let mut p = self_convolve_circular(&self.p, steps, n);
        p.rotate_left(lo % n);
        // 1 - (1 - m)^T without cancellation.
        let compose = |m: f64| -((steps as f64) * (-m).ln_1p()).exp_m1();
        let inf = compose(self.inf);
        // [`lattice_fits`] checked before anything was built that this fits in i64.
        let k0 = steps as i128 * self.k0 as i128 + lo as i128;
        Pmf {
            k0: i64::try_from(k0).expect("lattice range checked by lattice_fits"),
            p,
            inf: if self.optimistic { inf } else { inf + above },
            optimistic: self.optimistic,
            slack: if self.optimistic { below } else { 0.0 },
            clean: (win.lo + win.width).saturating_sub(lo).min(n),
            // Moved one-step mass (any of the T steps), plus both wrapped tails of the window.
            tail: if self.optimistic {
                0.0
            } else {
                compose(self.tail) + above + below
            },
        }
    }

    /// The suffix sums of [`Tails`], computed over p in place.
    fn into_tails(self, h: f64) -> Tails {
        let r = (-h).exp();
        let mut tail = self.p;
        let mut disc = vec![0.0; tail.len()];
        let (mut t, mut d) = (0.0, 0.0);
        for (tj, dj) in tail.iter_mut().zip(disc.iter_mut()).rev() {
            t += *tj;
            d = *tj + r * d;
            *tj = t;
            *dj = d;
        }
        // FFT rounding: above the Chernoff window (from index `clean`) the true suffix sums are
        // below the window's budget (< 1e-15), so what is found there is rounding noise; a
        // uniform offset from the spectrum's T-th power (relative error ~ T 2^-53 in its
        // low-frequency bins) grows linearly across the buffer, so the largest |suffix sum|
        // there, per atom of that room, times the atoms above eps estimates how much rounding
        // moves delta(eps) (an estimate, not a proof). Without that room (the one-step PLDs),
        // the top 1/64.
        let n = tail.len();
        let from = if self.clean < n {
            self.clean
        } else {
            n - (n / 64).max(1)
        };
        let top = tail[from..]
            .iter()
            .chain(&disc[from..])
            .fold(0.0f64, |m, v| m.max(v.abs()));
        let noise_rate = top / (n - from) as f64;
        Tails {
            k0: self.k0,
            inf: self.inf,
            slack: self.slack,
            moved: self.tail,
            noise_rate,
            tail,
            disc,
        }
    }
}

impl Tails {
    /// delta(eps) = sum_{l > eps} p_l (1 - e^{eps - l}) + inf (- slack on the optimistic side),
    /// in O(1): with s the first atom above eps, delta = tail_s - e^{eps - l_s} disc_s + ...
    fn delta(&self, eps: f64, h: f64) -> f64 {
        // Saturating: eps / h beyond i64 (eps huge or +inf) is past every atom.
        let start = ((eps / h).floor() as i64)
            .saturating_add(1)
            .saturating_sub(self.k0)
            .max(0) as usize;
        let mut s = self.inf - self.slack;
        if start < self.tail.len() {
            let l = (self.k0 + start as i64) as f64 * h;
            s += self.tail[start] - (eps - l).exp() * self.disc[start];
        }
        s
    }

    /// The rounding allowance of delta(eps): noise_rate times the atoms above eps.
    fn noise_at(&self, eps: f64, h: f64) -> f64 {
        let start = ((eps / h).floor() as i64)
            .saturating_add(1)
            .saturating_sub(self.k0)
            .max(0) as usize;
        self.noise_rate * self.tail.len().saturating_sub(start) as f64
    }

    fn max_loss(&self, h: f64) -> f64 {
        (self.k0 + self.tail.len() as i64) as f64 * h
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

/// Lattice range [k_lo, k_hi] of the connect-the-dots grid of one step, its top where the profile
/// H falls to `level` ([`Budget::top`]: the mass past it goes to +inf); None where its losses
/// leave [-MAX_GRID_LOSS, MAX_GRID_LOSS] (z tiny), where e^eps is not finite in f64.
fn one_step_bounds(q: f64, z: f64, h: f64, level: f64) -> Option<(i64, i64)> {
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
fn one_step(q: f64, z: f64, h: f64, (k_lo, k_hi): (i64, i64), trunc: f64) -> (Pmf, Pmf) {
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
/// The remove-direction loss log((1 - q) + q e^{(2x - 1)/(2 z^2)}) of one step at x, increasing.
fn loss_at(q: f64, z: f64, x: f64) -> f64 {
    let u = (2.0 * x - 1.0) * 0.5 / z / z;
    if q == 1.0 {
        u
    } else {
        log_add((-q).ln_1p(), q.ln() + u)
    }
}

/// X-ranges of the optimistic discretization: remove X ~ P in [-10 z, 1 + 10 z], add X ~ Q in
/// [-10 z, 10 z].
fn optimistic_ranges(z: f64) -> [(f64, f64); 2] {
    [(-10.0 * z, 1.0 + 10.0 * z), (-10.0 * z, 10.0 * z)]
}

/// Lattice starts and lengths of the optimistic one-step grids, (remove, add); None where the
/// losses leave [-MAX_GRID_LOSS, MAX_GRID_LOSS].
fn optimistic_bounds(q: f64, z: f64, h: f64) -> Option<[(i64, usize); 2]> {
    let grid = |lo: f64, hi: f64| {
        let ok = lo.abs() <= MAX_GRID_LOSS && hi.abs() <= MAX_GRID_LOSS;
        let (k_lo, k_hi) = ((lo / h).floor() as i64, (hi / h).floor() as i64);
        ok.then_some((k_lo, (k_hi - k_lo + 1) as usize))
    };
    let [(x_lo, x_hi), (y_lo, y_hi)] = optimistic_ranges(z);
    let r = grid(loss_at(q, z, x_lo), loss_at(q, z, x_hi))?;
    let a = grid(-loss_at(q, z, y_hi), -loss_at(q, z, y_lo))?;
    Some([r, a])
}

fn one_step_optimistic(
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

/// Smallest eps >= 0 with max(delta_rem(eps), delta_add(eps)) <= delta, by bisection.
#[cfg(test)]
fn epsilon_from(r: &Tails, a: &Tails, h: f64, delta: f64) -> f64 {
    epsilon_bracket(r, a, h, delta, 0.0).1
}

/// The final bisection bracket (lo, hi) of [`epsilon_from`]: delta(lo) > delta >= delta(hi), so
/// the pair's epsilon lies in (lo, hi]; (0, 0) when delta(0) <= delta, (inf, inf) when the mass
/// at +inf alone exceeds delta.
/// `rounding` = +1 reads delta(eps) + the rounding allowance ([`Tails::noise_at`], upper
/// bounds), -1 delta(eps) - it (lower bounds), 0 neither; both keep f decreasing in eps.
fn epsilon_bracket(r: &Tails, a: &Tails, h: f64, delta: f64, rounding: f64) -> (f64, f64) {
    let d = |t: &Tails, e: f64| t.delta(e, h) + rounding * t.noise_at(e, h);
    let f = |e: f64| d(r, e).max(d(a, e));
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

/// What became of a query's grid at one h.
enum Plan {
    /// It fits the memory bound.
    Fits(Box<Prepared>),
    /// It needs about this many bytes.
    TooBig(f64),
    /// The one-step losses leave f64's exponent range at any h, or the T-fold lattice leaves i64.
    Unrepresentable,
}

/// Why a query reports the RDP epsilon instead of the PLD's.
#[derive(Debug, Clone, Copy, PartialEq)]
enum NoPld {
    /// No grid with h <= [`PLD_MAX_DISCRETIZATION`] fits [`PLD_MEMORY_BOUND`] with the tail
    /// budget met.
    Memory,
    /// The one-step losses exceed e^MAX_GRID_LOSS, or the T-fold lattice 2^62 points.
    Range,
    /// The budget's per-step level is below [`MIN_LEVEL`].
    Budget,
    /// The mass at +inf plus the rounding allowance reach delta at every loss of the grid (the
    /// budget keeps the mass at +inf below delta / 1000; the FFT's rounding, about 1e-15..1e-12,
    /// is what reaches small delta).
    Infinite,
    /// The PLD's bound (the value held), rounding allowance included, exceeds the RDP epsilon
    /// (at small delta, where the FFT's rounding dominates).
    AboveRdp(f64),
}

/// The one line shown where the PLD cannot answer within its tail budget.
fn no_pld_message(why: NoPld, q: f64, z: f64, steps: usize, delta: f64) -> String {
    let what = format!(
        "the PLD of q = {}, z = {}, T = {steps} at delta = {}",
        crate::error::fmt_num(q),
        crate::error::fmt_num(z),
        crate::error::fmt_num(delta)
    );
    match why {
        NoPld::Memory => format!(
            "{what} with its truncated tails within delta * {TAIL_SHARE} fits in {} at no discretization <= {PLD_MAX_DISCRETIZATION}",
            crate::limits::fmt_bytes(PLD_MEMORY_BOUND)
        ),
        NoPld::Range => format!(
            "{what} has one-step losses beyond e^{MAX_GRID_LOSS} or a T-fold loss lattice beyond 2^62 points"
        ),
        NoPld::Budget => format!(
            "{what}: its tail budget delta * {TAIL_SHARE} / T per step is below {MIN_LEVEL:e}, where f64 can no longer certify the one-step tail"
        ),
        NoPld::AboveRdp(e) => format!(
            "{what}: its bound {e:.6} (with the FFT's estimated rounding) exceeds the RDP epsilon"
        ),
        NoPld::Infinite => format!(
            "{what}: its mass at +inf plus the FFT's estimated rounding reach delta at every loss"
        ),
    }
}

/// Whether every lattice index of the T-fold sum of a one-step PLD with `len` atoms from `k0` fits
/// in i64 with room to spare (T (|k0| + len) <= 2^62), which also keeps (len - 1) T within usize
/// on 64-bit targets. Checked before anything is allocated, so no count derived from T can wrap.
fn lattice_fits(k0: i64, len: usize, steps: usize) -> bool {
    let span = (k0.unsigned_abs() as u128 + len as u128).checked_mul(steps as u128);
    span.is_some_and(|s| s <= 1u128 << 62) && (len.max(1) - 1).checked_mul(steps).is_some()
}

/// A query ready to compose: its grid, the truncated one-step pair and their windows.
struct Prepared {
    grid: PldGrid,
    r: Pmf,
    a: Pmf,
    windows: [Window; 2],
}

impl Prepared {
    /// The grid at exactly h: the one-step pair is built only when it fits the bound, the FFT
    /// length is then known from the Chernoff windows, and the plans (for their scratch) only
    /// when that fits too.
    fn at(q: f64, z: f64, steps: usize, h: f64, optimistic: bool, budget: Budget) -> Plan {
        let (len, bounds) = if optimistic {
            match optimistic_bounds(q, z, h) {
                Some(b) => (b[0].1.max(b[1].1), Err(b)),
                None => return Plan::Unrepresentable,
            }
        } else {
            match one_step_bounds(q, z, h, budget.top) {
                Some(b) => ((b.1 - b.0 + 1) as usize, Ok(b)),
                None => return Plan::Unrepresentable,
            }
        };
        let fits = match bounds {
            Ok((k_lo, k_hi)) => lattice_fits(k_lo.min(-k_hi), len, steps),
            Err([(k, n), (j, m)]) => lattice_fits(k, n, steps) && lattice_fits(j, m, steps),
        };
        if !fits {
            return Plan::Unrepresentable;
        }
        let build = 8.0 * ONE_STEP_WORDS * len as f64;
        if build > PLD_MEMORY_BOUND {
            return Plan::TooBig(build);
        }
        let (r, a) = match bounds {
            Ok(b) => one_step(q, z, h, b, budget.trunc),
            Err(b) => one_step_optimistic(q, z, h, b, budget.trunc),
        };
        let windows = [
            Window::chernoff(&r.p, steps, budget.window),
            Window::chernoff(&a.p, steps, budget.window),
        ];
        // Room above the window (1/64 of it, >= 2 points) where the true mass is certified to be
        // below the budget: what is found there is rounding ([`Pmf::into_tails`]).
        let width = windows[0].width.max(windows[1].width);
        let need = (width + (width / 64).max(2)).max(r.p.len().max(a.p.len()));
        let mut grid = PldGrid {
            discretization: h,
            one_step_len: len,
            kept_len: r.p.len() + a.p.len(),
            fft_len: fast_len(need),
            scratch_len: 0,
        };
        if grid.bytes() <= PLD_MEMORY_BOUND {
            grid.scratch_len = scratch_words(grid.fft_len);
        }
        if grid.bytes() > PLD_MEMORY_BOUND {
            return Plan::TooBig(grid.bytes());
        }
        Plan::Fits(Box::new(Prepared {
            grid,
            r,
            a,
            windows,
        }))
    }

    /// The finest grid h0 2^k (k >= 0) with h <= PLD_MAX_DISCRETIZATION that fits the bound;
    /// why not, if there is none.
    fn choose(
        q: f64,
        z: f64,
        steps: usize,
        h0: f64,
        optimistic: bool,
        budget: Budget,
    ) -> std::result::Result<Prepared, NoPld> {
        let mut h = h0;
        while h <= PLD_MAX_DISCRETIZATION.max(h0) {
            match Prepared::at(q, z, steps, h, optimistic, budget) {
                Plan::Fits(p) => return Ok(*p),
                // The sizes scale like 1/h: jump to the power of 2 that should fit.
                Plan::TooBig(b) => {
                    h *= 2f64.powi(((b / PLD_MEMORY_BOUND).log2().ceil() as i32).max(1))
                }
                Plan::Unrepresentable => return Err(NoPld::Range),
            }
        }
        Err(NoPld::Memory)
    }

    /// Both directions composed T times, as suffix sums; the grid records the buffer length
    /// actually allocated.
    fn compose(self, steps: usize) -> (Tails, Tails, PldGrid) {
        let (n, h) = (self.grid.fft_len, self.grid.discretization);
        let r = self.r.self_compose(steps, n, &self.windows[0]);
        let a = self.a.self_compose(steps, n, &self.windows[1]);
        drop((self.r, self.a));
        assert_eq!(
            (r.p.len(), a.p.len()),
            (n, n),
            "FFT buffers of the estimated length"
        );
        let grid = PldGrid {
            fft_len: r.p.len(),
            ..self.grid
        };
        (r.into_tails(h), a.into_tails(h), grid)
    }
}

/// An upper bound on epsilon without the discretization error estimate (what calibration uses),
/// and whether the RDP fallback produced it.
#[derive(Debug, Clone, PartialEq)]
pub struct PldUpper {
    /// Upper bound on epsilon: the PLD's, or the RDP epsilon where `rdp_fallback`.
    pub epsilon: f64,
    /// True when the PLD could not meet its tail budget and `epsilon` is the RDP accountant's.
    pub rdp_fallback: bool,
    /// Why, where it fell back.
    pub note: Option<String>,
}

/// One composed upper-bound query.
struct Upper {
    epsilon: f64,
    /// eps read with the rounding allowance added at delta, minus eps read with it subtracted at
    /// delta + moved (moved: the P-mass the truncations placed pessimistically).
    tail_error: f64,
    grid: PldGrid,
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

    fn check(&self, q: f64, steps: usize, z: f64) -> Result<()> {
        self.validate()?;
        check_q(q)?;
        check_z(z)?;
        check_steps(steps)?;
        Ok(())
    }

    /// The grid an upper-bound query ([`PldAccountant::epsilon`], `epsilon_upper`) at
    /// (q, steps, z, delta) allocates, estimated before allocating it: the requested
    /// discretization coarsened by powers of 2 until [`PldGrid::bytes`] <= [`PLD_MEMORY_BOUND`];
    /// None where no grid fits (the accountant then reports RDP). Costs one one-step
    /// construction, no FFT.
    pub fn grid(&self, q: f64, steps: usize, z: f64, delta: f64) -> Result<Option<PldGrid>> {
        self.grid_of(q, steps, z, delta, false)
    }

    /// The grid of [`PldAccountant::epsilon_lower`], as [`PldAccountant::grid`].
    pub fn grid_lower(&self, q: f64, steps: usize, z: f64, delta: f64) -> Result<Option<PldGrid>> {
        self.grid_of(q, steps, z, delta, true)
    }

    fn grid_of(
        &self,
        q: f64,
        steps: usize,
        z: f64,
        delta: f64,
        optimistic: bool,
    ) -> Result<Option<PldGrid>> {
        self.check(q, steps, z)?;
        check_delta(delta)?;
        Ok(Budget::new(delta, steps).and_then(|b| {
            Prepared::choose(q, z, steps, self.discretization, optimistic, b)
                .ok()
                .map(|p| p.grid)
        }))
    }

    /// Epsilon upper bound on the grid of [`PldAccountant::grid`] at requested h, with the
    /// tails' part of the error. `estimate`: for the coarse grid of the error estimate only, read
    /// at delta itself, without the rounding check.
    fn upper_at(
        &self,
        q: f64,
        steps: usize,
        z: f64,
        delta: f64,
        h: f64,
        estimate: bool,
    ) -> std::result::Result<Upper, NoPld> {
        let budget = Budget::new(delta, steps).ok_or(NoPld::Budget)?;
        let (r, a, grid) = Prepared::choose(q, z, steps, h, false, budget)?.compose(steps);
        let h = grid.discretization;
        // Read with the rounding allowance added (none for the error estimate's coarse grid).
        let up = if estimate { 0.0 } else { 1.0 };
        let e = epsilon_bracket(&r, &a, h, delta, up).1;
        if !e.is_finite() {
            return Err(NoPld::Infinite);
        }
        // Both are upper bounds: where RDP's is smaller, it is the answer (noted).
        if !estimate {
            let rdp = RdpAccountant::default().epsilon(q, steps, z, delta);
            if rdp.is_ok_and(|r| r.epsilon < e) {
                return Err(NoPld::AboveRdp(e));
            }
        }
        let moved = r.moved.max(a.moved);
        let e_moved = epsilon_bracket(&r, &a, h, (delta + moved).min(1.0), -up).1;
        Ok(Upper {
            epsilon: e,
            tail_error: (e - e_moved).max(0.0),
            grid,
        })
    }

    /// The RDP epsilon with the note that says why it replaces the PLD's.
    fn fallback(
        &self,
        q: f64,
        steps: usize,
        z: f64,
        delta: f64,
        why: NoPld,
    ) -> Result<(f64, String)> {
        let rdp = RdpAccountant::default().epsilon(q, steps, z, delta)?;
        let note = format!(
            "{}; reporting the RDP epsilon, a valid upper bound",
            no_pld_message(why, q, z, steps, delta)
        );
        Ok((rdp.epsilon, note))
    }

    /// Epsilon upper bound without an error estimate (what calibration uses); the RDP epsilon,
    /// also an upper bound, where the PLD cannot meet its tail budget (see
    /// [`PldAccountant::epsilon`]), with `rdp_fallback` set.
    pub fn upper_bound(&self, q: f64, steps: usize, z: f64, delta: f64) -> Result<PldUpper> {
        self.check(q, steps, z)?;
        check_delta(delta)?;
        Ok(
            match self.upper_at(q, steps, z, delta, self.discretization, false) {
                Ok(u) => PldUpper {
                    epsilon: u.epsilon,
                    rdp_fallback: false,
                    note: None,
                },
                Err(why) => {
                    let (epsilon, note) = self.fallback(q, steps, z, delta, why)?;
                    PldUpper {
                        epsilon,
                        rdp_fallback: true,
                        note: Some(note),
                    }
                }
            },
        )
    }

    /// [`PldAccountant::upper_bound`]'s epsilon alone.
    pub fn epsilon_upper(&self, q: f64, steps: usize, z: f64, delta: f64) -> Result<f64> {
        Ok(self.upper_bound(q, steps, z, delta)?.epsilon)
    }

    /// A lower bound on the true epsilon: the optimistic PLD (every privacy loss rounded down to
    /// the grid), the counterpart of [`PldAccountant::epsilon_upper`], on a grid coarsened like
    /// it, its truncations within the same budget. The true epsilon lies in
    /// [epsilon_lower, epsilon_upper]. An error where no grid fits.
    pub fn epsilon_lower(&self, q: f64, steps: usize, z: f64, delta: f64) -> Result<f64> {
        self.check(q, steps, z)?;
        check_delta(delta)?;
        let p = Budget::new(delta, steps)
            .ok_or(NoPld::Budget)
            .and_then(|b| Prepared::choose(q, z, steps, self.discretization, true, b))
            .map_err(|why| Error::param(no_pld_message(why, q, z, steps, delta)))?;
        let (r, a, grid) = p.compose(steps);
        // Read with the rounding allowance subtracted, so that rounding of the estimated size
        // cannot raise it; the lower end of the bisection bracket is the side that keeps this a
        // lower bound.
        Ok(epsilon_bracket(&r, &a, grid.discretization, delta, -1.0).0)
    }

    /// Epsilon (upper bound) and its error estimate: eps(2h) - eps(h), h the grid used, plus the
    /// tails' part (see [`PldEpsilon::error`]). The truncated tails hold at most
    /// [`TAIL_SHARE`] delta ([`Budget`]). Where the requested grid does not fit
    /// [`PLD_MEMORY_BOUND`] the note says which was used; where none fits with the budget met,
    /// the RDP epsilon is reported with `rdp_fallback` set and a note.
    pub fn epsilon(&self, q: f64, steps: usize, z: f64, delta: f64) -> Result<PldEpsilon> {
        self.check(q, steps, z)?;
        check_delta(delta)?;
        let up = match self.upper_at(q, steps, z, delta, self.discretization, false) {
            Ok(u) => u,
            Err(why) => {
                let (epsilon, note) = self.fallback(q, steps, z, delta, why)?;
                return Ok(PldEpsilon {
                    epsilon,
                    error: f64::NAN,
                    tail_error: f64::NAN,
                    grid: None,
                    rdp_fallback: true,
                    note: Some(note),
                });
            }
        };
        let h = up.grid.discretization;
        let note = (h > self.discretization).then(|| {
            format!(
                "PLD discretization coarsened from {} to {h} to stay within {}",
                self.discretization,
                crate::limits::fmt_bytes(PLD_MEMORY_BOUND)
            )
        });
        let disc = match self.upper_at(q, steps, z, delta, 2.0 * h, true) {
            Ok(coarse) => (coarse.epsilon - up.epsilon).max(0.0),
            Err(_) => f64::NAN,
        };
        Ok(PldEpsilon {
            epsilon: up.epsilon,
            error: disc + up.tail_error,
            tail_error: up.tail_error,
            grid: Some(up.grid),
            rdp_fallback: false,
            note,
        })
    }

    /// delta(eps) after `steps` steps (upper bound), max over add and remove; an error where no
    /// grid fits. With no delta to budget against, the truncations use the caps of [`TAIL`]
    /// (at most T 2e-15 + 2e-15 of mass placed pessimistically, included in the result).
    pub fn delta(&self, q: f64, steps: usize, z: f64, eps: f64) -> Result<f64> {
        self.check(q, steps, z)?;
        let p = Prepared::choose(q, z, steps, self.discretization, false, Budget::caps(steps))
            .map_err(|why| Error::param(no_pld_message(why, q, z, steps, f64::NAN)))?;
        let (r, a, grid) = p.compose(steps);
        let h = grid.discretization;
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
            let (r, a) = one_step(
                q,
                z,
                1e-3,
                one_step_bounds(q, z, 1e-3, 1e-18).unwrap(),
                TAIL,
            );
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
        let (r, _) = one_step(q, z, h, one_step_bounds(q, z, h, 1e-18).unwrap(), TAIL);
        for k in 0..400 {
            let e = k as f64 * 0.0137;
            let exact = delta_one(q, z, e);
            let disc = r.clone().into_tails(h).delta(e, h);
            assert!(disc >= exact - 1e-13, "eps={e}: {disc} < {exact}");
        }
    }
}
#[cfg(test)]
#[path = "pld_direction_tests.rs"]
mod direction_tests;
