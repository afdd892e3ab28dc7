//! Composition of one query: reading epsilon off the composed PLDs of both directions, and the
//! plan (grid, memory, fallback reasons) that discretizes one step ([`super::discretize`]) and
//! composes it T times ([`super::pmf`]).

use super::discretize::{one_step, one_step_bounds, one_step_optimistic, optimistic_bounds};
use super::pmf::{Pmf, Tails};
use super::window::Window;
use super::{
    Budget, MAX_GRID_LOSS, MIN_LEVEL, ONE_STEP_WORDS, PLD_MAX_DISCRETIZATION, PLD_MEMORY_BOUND,
    PldGrid, TAIL_SHARE,
};
use crate::privacy::Phase;
use crate::privacy::fft::{fast_len, scratch_words};

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
    /// The FFT's estimated rounding at the answer is more than [`ROUNDING_CERT_SHARE`] of delta:
    /// the allowance is an estimate, not a bound, so where it is a visible share of delta the
    /// answer is not certified (q 0.01, T 1000, z 1.04, delta 1e-12 read 3.54618 against a true
    /// 3.5483).
    Rounding(f64),
}

/// The largest share of delta that the FFT's estimated rounding may take at the answer for the
/// PLD's epsilon to be reported: 1e-4. Far below it, an estimate off by a factor of 100 still
/// moves epsilon by less than the discretization; above it the RDP bound answers.
pub const ROUNDING_CERT_SHARE: f64 = 1e-4;

/// The one line shown where the PLD cannot answer within its tail budget.
pub(super) fn no_pld_message(why: NoPld, phases: &[Phase], delta: f64) -> String {
    let f = crate::error::fmt_num;
    let run = match phases {
        [p] => format!("q = {}, z = {}, T = {}", f(p.q), f(p.z), p.steps),
        _ => format!(
            "{} phases (T = {} in all)",
            phases.len(),
            phases.iter().map(|p| p.steps).sum::<usize>()
        ),
    };
    let what = format!("the PLD of {run} at delta = {}", f(delta));
    match why {
        NoPld::Memory => format!(
            "{what}, with its truncated tails within delta * {TAIL_SHARE}, does not fit in {} at any discretization <= {PLD_MAX_DISCRETIZATION}",
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
        NoPld::Rounding(r) => format!(
            "{what}: the FFT's estimated rounding at the answer ({r:.1e}) is more than \
             {ROUNDING_CERT_SHARE:e} of delta, so the PLD's value is not certified"
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
        let h = self.grid.discretization;
        let (r, a, grid) = self.compose_pmfs(steps);
        (r.into_tails(h), a.into_tails(h), grid)
    }

    /// Both directions composed T times (remove, add), before the suffix sums.
    pub(super) fn compose_pmfs(self, steps: usize) -> (Pmf, Pmf, PldGrid) {
        let n = self.grid.fft_len;
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
        (r, a, grid)
    }
}
