//! The informative axis: does the bound say more than not moving at all?

use super::super::results::CellResult;
use super::cells::cell_mean;

/// Whether an upper bound says anything in the smallest decade of phi.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Informative {
    /// bound / risk0 < 1 in every cell of the smallest decade (the largest ratio).
    Yes(f64),
    /// bound / risk0 >= 1 in some cell of the smallest decade (the largest ratio): not moving
    /// at all meets the bound there, so the bound supports no rate statement.
    Vacuous(f64),
    /// Some cell of the smallest decade has no bound (cells with one, cells).
    NoBound(usize, usize),
}

/// Whether the bound is informative over the smallest decade's cells `dec`: the largest mean
/// bound / mean do-nothing risk, when every one of them has a bound.
pub(super) fn informative(cs: &[&CellResult], dec: &[usize]) -> Informative {
    let ratios: Vec<f64> = dec
        .iter()
        .filter_map(|&i| Some(cell_mean(cs[i], |r| r.bound)? / cell_mean(cs[i], |r| r.risk0)?))
        .collect();
    if ratios.len() < dec.len() {
        return Informative::NoBound(ratios.len(), dec.len());
    }
    let worst = ratios.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if worst < 1.0 {
        Informative::Yes(worst)
    } else {
        Informative::Vacuous(worst)
    }
}
