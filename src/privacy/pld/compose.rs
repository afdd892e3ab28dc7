//! Composition: the discrete PLD ([`Pmf`]), its T-fold self-convolution by FFT inside the Chernoff
//! window, the suffix-sum tables ([`Tails`]) that read delta(eps) and epsilon off it, and the plan
//! of one query (grid, memory, fallback reasons).

use super::discretize::{one_step, one_step_bounds, one_step_optimistic, optimistic_bounds};
use super::window::Window;
use super::{
    Budget, MAX_GRID_LOSS, MIN_LEVEL, ONE_STEP_WORDS, PLD_MAX_DISCRETIZATION, PLD_MEMORY_BOUND,
    PldGrid, TAIL_SHARE,
};
use crate::privacy::fft::{fast_len, scratch_words, self_convolve_circular};

/// A discrete loss distribution on the lattice (k0 + j) h, with mass `inf` at +inf.
#[derive(Debug, Clone)]
pub(super) struct Pmf {
    pub(super) k0: i64,
    pub(super) p: Vec<f64>,
    pub(super) inf: f64,
    /// Optimistic (lower-bound) distribution: truncation moves mass down, never up.
    pub(super) optimistic: bool,
    /// Subtracted from delta(eps): the optimistic side's bound on mass wrapped upwards.
    pub(super) slack: f64,
    /// Pessimistic side: a bound on the P-mass whose loss was raised by the truncations (moved to
    /// +inf, up onto the first kept atom, or wrapped upwards), including `inf`.
    pub(super) tail: f64,
    /// Composed PLDs: the first index of `p` above the Chernoff window, where the true mass is
    /// below the window's budget (usize::MAX where there is no such room).
    pub(super) clean: usize,
}

/// A composed PLD as suffix sums, for O(1) evaluation of delta(eps): over the atoms
/// l_j = (k0 + j) h, tail_k = sum_{j >= k} p_j and disc_k = sum_{j >= k} p_j e^{-(j - k) h},
/// summed from the top (small terms first).
pub(super) struct Tails {
    pub(super) k0: i64,
    pub(super) inf: f64,
    pub(super) slack: f64,
    /// [`Pmf::tail`] of the composed PLD.
    pub(super) moved: f64,
    /// Estimated rounding noise of the suffix sums per atom they span (see
    /// [`Pmf::into_tails`]): |error of delta(eps)| ~ noise_rate * (atoms above eps). Over a
    /// composed PLD of 1e5..2e6 points it adds up to about 1e-15..1e-12, the limit of this
    /// accountant at small delta.
    pub(super) noise_rate: f64,
    pub(super) tail: Vec<f64>,
    pub(super) disc: Vec<f64>,
}

impl Pmf {
    /// Pessimistic truncation: upper tail to +inf, lower tail up onto the first kept atom.
    /// Optimistic truncation (lower bounds): upper tail down onto the last kept atom, lower tail
    /// dropped; both can only decrease delta(eps), since delta(eps) = E_P[(1 - e^{eps - L})_+]
    /// is increasing in every loss value and in every mass.
    /// At most `tail` of P-mass is moved on each side; on the pessimistic side the moved mass is
    /// added to [`Pmf::tail`].
    pub(super) fn truncate(&mut self, tail: f64) {
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
    pub(super) fn self_compose(&self, steps: usize, n: usize, win: &Window) -> Pmf {
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
    pub(super) fn into_tails(self, h: f64) -> Tails {
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
    pub(super) fn delta(&self, eps: f64, h: f64) -> f64 {
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
    pub(super) fn noise_at(&self, eps: f64, h: f64) -> f64 {
        let start = ((eps / h).floor() as i64)
            .saturating_add(1)
            .saturating_sub(self.k0)
            .max(0) as usize;
        self.noise_rate * self.tail.len().saturating_sub(start) as f64
    }

    pub(super) fn max_loss(&self, h: f64) -> f64 {
        (self.k0 + self.tail.len() as i64) as f64 * h
    }
}

/// Smallest eps >= 0 with max(delta_rem(eps), delta_add(eps)) <= delta, by bisection.
#[cfg(test)]
pub(super) fn epsilon_from(r: &Tails, a: &Tails, h: f64, delta: f64) -> f64 {
    epsilon_bracket(r, a, h, delta, 0.0).1
}

/// The final bisection bracket (lo, hi) of [`epsilon_from`]: delta(lo) > delta >= delta(hi), so
/// the pair's epsilon lies in (lo, hi]; (0, 0) when delta(0) <= delta, (inf, inf) when the mass
/// at +inf alone exceeds delta.
/// `rounding` = +1 reads delta(eps) + the rounding allowance ([`Tails::noise_at`], upper
/// bounds), -1 delta(eps) - it (lower bounds), 0 neither; both keep f decreasing in eps.
pub(super) fn epsilon_bracket(
    r: &Tails,
    a: &Tails,
    h: f64,
    delta: f64,
    rounding: f64,
) -> (f64, f64) {
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
pub(super) enum Plan {
    /// It fits the memory bound.
    Fits(Box<Prepared>),
    /// It needs about this many bytes.
    TooBig(f64),
    /// The one-step losses leave f64's exponent range at any h, or the T-fold lattice leaves i64.
    Unrepresentable,
}

/// Why a query reports the RDP epsilon instead of the PLD's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum NoPld {
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
pub(super) fn no_pld_message(why: NoPld, q: f64, z: f64, steps: usize, delta: f64) -> String {
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
pub(super) fn lattice_fits(k0: i64, len: usize, steps: usize) -> bool {
    let span = (k0.unsigned_abs() as u128 + len as u128).checked_mul(steps as u128);
    span.is_some_and(|s| s <= 1u128 << 62) && (len.max(1) - 1).checked_mul(steps).is_some()
}

/// A query ready to compose: its grid, the truncated one-step pair and their windows.
pub(super) struct Prepared {
    pub(super) grid: PldGrid,
    pub(super) r: Pmf,
    pub(super) a: Pmf,
    pub(super) windows: [Window; 2],
}

impl Prepared {
    /// The grid at exactly h: the one-step pair is built only when it fits the bound, the FFT
    /// length is then known from the Chernoff windows, and the plans (for their scratch) only
    /// when that fits too.
    pub(super) fn at(
        q: f64,
        z: f64,
        steps: usize,
        h: f64,
        optimistic: bool,
        budget: Budget,
    ) -> Plan {
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
    pub(super) fn choose(
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
    pub(super) fn compose(self, steps: usize) -> (Tails, Tails, PldGrid) {
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
