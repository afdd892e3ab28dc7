//! A theorem's probability statement over the data set, checked on the finished cells.

use serde::{Deserialize, Serialize};

use super::fit;
use super::results::CellResult;
use super::spec::Spec;
use crate::theory::TheoremId;

/// A theorem's probability statement over the data set, checked at one cell: the fraction of
/// data sets on which the risk (each run's time-averaged risk, the theorem's OR given the data
/// set, averaged over the runs on that data set) is under the bound, with a 95% Clopper-Pearson interval, beside the theorem's probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probability {
    /// phi of the cell.
    pub phi: f64,
    /// Data sets with risk <= bound.
    pub under: usize,
    /// Data sets.
    pub total: usize,
    /// Algorithm runs per data set.
    pub runs: usize,
    /// 95% Clopper-Pearson interval of the fraction.
    pub ci: (f64, f64),
    /// The theorem's probability: 1 - gamma (I.1, J.1, N.1; 1 at k = inf), 3/4 (K.1), 1 (H.1,
    /// which holds for every data set).
    pub claimed: f64,
    /// The largest risk / bound over the data sets of the cell.
    pub max_ratio: f64,
}

/// Below this largest risk / bound over the data sets, the count cannot fail: "no power".
pub const NO_POWER: f64 = 0.1;

impl Probability {
    /// The one-sided test fails: the Clopper-Pearson interval's upper end is below the
    /// claimed probability.
    pub fn short(&self) -> bool {
        self.ci.1 < self.claimed
    }

    /// Every data set's risk is far below its bound (largest ratio < [`NO_POWER`]): the count
    /// passes whatever the probability is, so it is not evidence.
    pub fn no_power(&self) -> bool {
        self.max_ratio < NO_POWER
    }
}

/// The probability with which `id`'s bound holds over the data set.
pub fn claimed_probability(id: TheoremId, gamma: Option<f64>, k: f64) -> Option<f64> {
    match id.full_version() {
        TheoremId::H1 => Some(1.0),
        TheoremId::K1 => Some(if k.is_infinite() { 1.0 } else { 0.75 }),
        TheoremId::I1 | TheoremId::J1 | TheoremId::N1 => {
            if k.is_infinite() {
                Some(1.0)
            } else {
                gamma.map(|g| 1.0 - g)
            }
        }
        _ => None,
    }
}

/// The grid index of the cell a probability statement reads for series `s` (its smallest phi),
/// or None when the series states none (one fixed data set, or no probability in the theorem).
/// Only that cell's replicates estimate the time-averaged risk ([`super::time_average`]).
pub(crate) fn probability_point(spec: &Spec, s: usize) -> Option<usize> {
    let raw = &spec.raw;
    if !raw.fresh_data {
        return None;
    }
    claimed_probability(raw.theorem, raw.constants.gamma, spec.series[s].k)?;
    (0..spec.phis.len()).min_by(|&a, &b| spec.phis[a].total_cmp(&spec.phis[b]))
}

/// The probability statement at series `s`'s smallest phi, on each data set's time-averaged risk
/// (the theorem's OR given the data set, [`super::results::ReplicateResult::risk_avg`]); None where the series
/// states none or the cell lacks that estimate (results written before it existed).
pub(crate) fn probability_check(spec: &Spec, s: usize, cs: &[&CellResult]) -> Option<Probability> {
    let raw = &spec.raw;
    let claimed = claimed_probability(raw.theorem, raw.constants.gamma, spec.series[s].k)?;
    let pi = probability_point(spec, s)?;
    let c = cs.iter().find(|c| c.phi_index == pi)?;
    let pairs: Option<Vec<(f64, f64)>> = c
        .replicates
        .iter()
        .map(|r| Some((r.risk_avg?, r.bound?)))
        .collect();
    let pairs = pairs?;
    let under = pairs.iter().filter(|(r, b)| r <= b).count();
    let total = pairs.len();
    let max_ratio = pairs
        .iter()
        .map(|(r, b)| r / b)
        .fold(f64::NEG_INFINITY, f64::max);
    Some(Probability {
        phi: c.phi,
        under,
        total,
        runs: raw.runs_per_data,
        ci: fit::clopper_pearson(under, total, 0.05),
        claimed,
        max_ratio,
    })
}
