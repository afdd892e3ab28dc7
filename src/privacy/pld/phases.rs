//! Phases with different (q, z, T) in one account: each phase's T_i-fold PLD as in a single
//! query ([`Prepared::compose_pmfs`]), all on one loss grid h, then the phases' PLDs convolved
//! with each other ([`Pmf::convolve`]). Dominating pairs compose (Zhu, Dong and Wang 2022), so
//! the product of the phases' pessimistic PLDs is pessimistic for the whole run, and that of the
//! optimistic ones optimistic; this is dp_accounting's `ComposedDpEvent` of
//! `SelfComposedDpEvent`s.

use super::compose::{NoPld, Plan, Prepared};
use super::pmf::{Pmf, Tails};
use super::{Budget, PLD_MAX_DISCRETIZATION, PLD_MEMORY_BOUND, PldGrid};
use crate::privacy::Phase;
use crate::privacy::fft::convolve_words;

/// The tail budget of a run of phases: the per-step parts as for one run of T = sum T_i steps,
/// the window's part split between the phases (each has its own Chernoff window), so that the
/// whole run places at most what one query of T steps may. One phase: [`Budget::new`].
pub(super) fn budget(phases: &[Phase], delta: f64) -> Option<Budget> {
    let t: usize = phases.iter().map(|p| p.steps).sum();
    Budget::new(delta, t).map(|b| Budget {
        window: b.window / phases.len() as f64,
        ..b
    })
}

/// Both directions of the phases composed, as suffix sums, on the finest grid h0 2^k (k >= 0,
/// h <= [`PLD_MAX_DISCRETIZATION`]) on which every phase and the running product fit
/// [`PLD_MEMORY_BOUND`]; why not, where there is none. One phase is exactly
/// [`Prepared::choose`] and [`Prepared::compose`].
pub(super) fn compose_phases(
    phases: &[Phase],
    h0: f64,
    optimistic: bool,
    budget: Budget,
) -> Result<(Tails, Tails, PldGrid), NoPld> {
    if let [p] = phases {
        return Ok(Prepared::choose(p.q, p.z, p.steps, h0, optimistic, budget)?.compose(p.steps));
    }
    // No phase can use a finer grid than it could alone.
    let mut h = h0;
    for p in phases {
        let alone = Prepared::choose(p.q, p.z, p.steps, h, optimistic, budget)?;
        h = h.max(alone.grid.discretization);
    }
    while h <= PLD_MAX_DISCRETIZATION.max(h0) {
        if let Some(done) = compose_at(phases, h, optimistic, budget)? {
            return Ok(done);
        }
        h *= 2.0;
    }
    Err(NoPld::Memory)
}

/// The composition at exactly h; None where it does not fit [`PLD_MEMORY_BOUND`]. The peak is
/// estimated before any FFT: the one-step PLDs of every phase, the running product (both
/// directions) held while the next phase is composed ([`PldGrid::bytes`]) and then convolved
/// with it ([`convolve_words`]), and the final suffix-sum tables.
fn compose_at(
    phases: &[Phase],
    h: f64,
    optimistic: bool,
    budget: Budget,
) -> Result<Option<(Tails, Tails, PldGrid)>, NoPld> {
    let mut preps = Vec::with_capacity(phases.len());
    for p in phases {
        match Prepared::at(p.q, p.z, p.steps, h, optimistic, budget) {
            Plan::Fits(prep) => preps.push(*prep),
            Plan::TooBig(_) => return Ok(None),
            Plan::Unrepresentable => return Err(NoPld::Range),
        }
    }
    let kept: usize = preps.iter().map(|p| p.grid.kept_len).sum();
    let (mut len, mut peak) = (0usize, 0.0f64);
    for prep in &preps {
        let n = prep.grid.fft_len;
        let held = 8.0 * (kept + 2 * len) as f64;
        peak = peak.max(held + prep.grid.bytes());
        if len > 0 {
            let conv = 2 * n + (len + n) + convolve_words(len, n);
            peak = peak.max(held + 8.0 * conv as f64);
            len += n - 1;
        } else {
            len = n;
        }
    }
    if peak.max(8.0 * 4.0 * len as f64) > PLD_MEMORY_BOUND {
        return Ok(None);
    }
    let mut grid = PldGrid {
        discretization: h,
        one_step_len: 0,
        kept_len: kept,
        fft_len: 0,
        scratch_len: 0,
    };
    let mut acc: Option<(Pmf, Pmf)> = None;
    for (prep, p) in preps.into_iter().zip(phases) {
        grid.one_step_len = grid.one_step_len.max(prep.grid.one_step_len);
        grid.scratch_len = grid.scratch_len.max(prep.grid.scratch_len);
        let (r, a, _) = prep.compose_pmfs(p.steps);
        acc = Some(match acc {
            None => (r, a),
            Some((ar, aa)) => {
                // The product's lattice must stay within i64 with room, as each phase's does.
                for (x, y) in [(&ar, &r), (&aa, &a)] {
                    let k0 = x.k0 as i128 + y.k0 as i128;
                    if k0.unsigned_abs() + (x.p.len() + y.p.len()) as u128 > 1u128 << 62 {
                        return Err(NoPld::Range);
                    }
                }
                (ar.convolve(&r), aa.convolve(&a))
            }
        });
    }
    let (r, a) = acc.expect("at least two phases");
    grid.fft_len = r.p.len().max(a.p.len());
    Ok(Some((r.into_tails(h), a.into_tails(h), grid)))
}
