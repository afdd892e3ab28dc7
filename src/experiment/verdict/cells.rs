//! A series' cells and the per-cell means the axes read.

use std::collections::BTreeMap;

use super::super::fit;
use super::super::results::{CellResult, ReplicateResult};

/// Mean over replicates of an optional per-replicate value; None if any replicate lacks it.
pub(crate) fn cell_mean(
    c: &CellResult,
    f: impl Fn(&ReplicateResult) -> Option<f64>,
) -> Option<f64> {
    let v: Option<Vec<f64>> = c.replicates.iter().map(f).collect();
    v.filter(|v| !v.is_empty()).map(|v| fit::mean(&v))
}

/// The replicate risks (OR) of a cell.
pub(crate) fn reps_of(c: &CellResult) -> Vec<f64> {
    c.replicates.iter().map(|r| r.risk).collect()
}

/// (min, max) of `v`.
pub(super) fn range(v: impl Iterator<Item = f64>) -> (f64, f64) {
    v.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    })
}

/// The cells of series `s`, in phi order of the grid, with their replicate risks and
/// do-nothing risks.
pub(super) struct SeriesCells<'a> {
    pub(super) cs: Vec<&'a CellResult>,
    pub(super) phis: Vec<f64>,
    pub(super) reps: Vec<Vec<f64>>,
    risk0: Vec<Vec<f64>>,
}

impl<'a> SeriesCells<'a> {
    pub(super) fn new(cells: &'a BTreeMap<usize, CellResult>, s: usize) -> Self {
        let cs: Vec<&CellResult> = cells.values().filter(|c| c.series == s).collect();
        SeriesCells {
            phis: cs.iter().map(|c| c.phi).collect(),
            reps: cs.iter().map(|c| reps_of(c)).collect(),
            risk0: cs
                .iter()
                .map(|c| c.replicates.iter().filter_map(|r| r.risk0).collect())
                .collect(),
            cs,
        }
    }

    /// The smallest decade's cells of risks (or of do-nothing risks).
    pub(super) fn decade(&self, dec: &[usize], risk0: bool) -> (Vec<f64>, Vec<Vec<f64>>) {
        let src = if risk0 { &self.risk0 } else { &self.reps };
        (
            dec.iter().map(|&i| self.phis[i]).collect(),
            dec.iter().map(|&i| src[i].clone()).collect(),
        )
    }
}
