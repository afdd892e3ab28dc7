//! A theorem's probability statement over the data set, checked on the finished cells.

use serde::{Deserialize, Serialize};

use super::fit;
use super::results::CellResult;
use super::spec::Spec;
use crate::theory::TheoremId;

/// A theorem's probability statement over the data set, checked at one cell: the fraction of
/// data sets on which the risk (the mean over the algorithm runs on that data set) is under
/// the bound, with a 95% Clopper-Pearson interval, beside the theorem's probability.
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

pub(crate) fn probability_check(spec: &Spec, s: usize, cs: &[&CellResult]) -> Option<Probability> {
    let raw = &spec.raw;
    if !raw.fresh_data {
        return None;
    }
    let claimed = claimed_probability(raw.theorem, raw.constants.gamma, spec.series[s].k)?;
    let c = cs.iter().min_by(|a, b| a.phi.total_cmp(&b.phi))?;
    let b: Option<Vec<f64>> = c.replicates.iter().map(|r| r.bound).collect();
    let b = b?;
    let under = c
        .replicates
        .iter()
        .zip(&b)
        .filter(|(r, b)| r.risk <= **b)
        .count();
    let total = b.len();
    let max_ratio = c
        .replicates
        .iter()
        .zip(&b)
        .map(|(r, b)| r.risk / b)
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
