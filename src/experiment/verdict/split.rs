//! The risk-split axis: how much of a series' risk the clipping bias carries, from each
//! replicate's full run and its noise-only twin on common random numbers
//! (`measure.rs`'s `measure_runs`), and whether the series is a test of the
//! heavy-tail mechanism (Section 6: clipping at tau(phi) trades the bias of the samples cut at
//! tau against the noise proportional to tau).

use rand::RngExt;
use serde::Serialize;

use super::super::fit;
use super::super::results::CellResult;
use crate::rng::{Purpose, stream};
use crate::stats::quantile_sorted;

/// The smallest lower end of a row's bias-share interval at which the series counts as a test
/// of the heavy-tail mechanism: the clipping bias carries at least a tenth of the risk.
pub const BIAS_SHARE_THRESHOLD: f64 = 0.1;

/// A series' bias share over the smallest decade with its paired bootstrap 95% interval.
///
/// Definition: in cell c, with F_r the replicate's risk (the full run) and N_r the risk of the
/// same run without clipping (tau = inf in Eq. (2), the same sigma_n(tau_t), batches and noise
/// draws), s_c = (mean_r F_r - mean_r N_r) / mean_r F_r: the share of the risk that removing
/// the clipping (and nothing else) would remove. The row's share is the mean of s_c over the
/// smallest decade's cells; its interval is the percentile bootstrap that draws R replicate
/// indices once for every cell of the decade (replicate r is one data set and one set of random
/// streams in all of them), as the slope fits do. Negative where clipping lowers the risk.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BiasShare {
    /// The mean over the decade's cells of s_c.
    pub share: f64,
    /// 2.5% bootstrap quantile.
    pub lo: f64,
    /// 97.5% bootstrap quantile.
    pub hi: f64,
}

impl BiasShare {
    /// True when the interval's lower end is at least [`BIAS_SHARE_THRESHOLD`].
    pub fn passes(&self) -> bool {
        self.lo >= BIAS_SHARE_THRESHOLD
    }
}

/// s_c over the replicates `idx` (None: all) of one cell's (full, noise-only) risks.
fn cell_share(full: &[f64], noise: &[f64], idx: Option<&[usize]>) -> f64 {
    let m = |v: &[f64]| match idx {
        Some(idx) => idx.iter().map(|&j| v[j]).sum::<f64>() / idx.len() as f64,
        None => fit::mean(v),
    };
    let f = m(full);
    (f - m(noise)) / f
}

/// The (full, noise-only) risks of a cell's replicates; None if a replicate has no split.
fn split_of(c: &CellResult) -> Option<(Vec<f64>, Vec<f64>)> {
    let noise: Option<Vec<f64>> = c.replicates.iter().map(|r| r.risk_noise).collect();
    Some((c.replicates.iter().map(|r| r.risk).collect(), noise?))
}

/// The bias share of the cells `cs` (a series' smallest decade), with `resamples` paired
/// resamples from `seed`; None where a cell has no split or a mean risk is not positive.
pub fn bias_share(cs: &[&CellResult], resamples: usize, seed: u64) -> Option<BiasShare> {
    let cells: Vec<(Vec<f64>, Vec<f64>)> = cs.iter().map(|c| split_of(c)).collect::<Option<_>>()?;
    let r = cells.iter().map(|c| c.0.len()).min()?;
    if r == 0
        || cells
            .iter()
            .any(|c| fit::mean(&c.0).is_nan() || fit::mean(&c.0) <= 0.0)
    {
        return None;
    }
    let row = |idx: Option<&[usize]>| {
        cells
            .iter()
            .map(|(f, n)| cell_share(f, n, idx))
            .sum::<f64>()
            / cells.len() as f64
    };
    let mut rng = stream(seed, 0, Purpose::Other(0xb1a5));
    let mut idx = vec![0usize; r];
    let mut draws: Vec<f64> = (0..resamples)
        .map(|_| {
            for j in idx.iter_mut() {
                *j = rng.random_range(0..r);
            }
            row(Some(&idx))
        })
        .filter(|v| v.is_finite())
        .collect();
    if draws.is_empty() {
        return None;
    }
    draws.sort_by(f64::total_cmp);
    Some(BiasShare {
        share: row(None),
        lo: quantile_sorted(&draws, 0.025),
        hi: quantile_sorted(&draws, 0.975),
    })
}

/// Whether a series can test the heavy-tail mechanism at all, before its bias share is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TailTest {
    /// A heavy-tailed series (k < inf, not a control) on a family whose heavy part moves with
    /// phi: its bias share decides.
    Candidate,
    /// k = inf or a bounded-data control: no heavy tail.
    NoTail,
    /// The family's heavy part does not move with phi ([`crate::experiment::Spec::tail_motion`]):
    /// a fixed tail falls under a clip norm that grows as phi shrinks, so its slope is not the
    /// trade the theorems' exponents in k are about.
    FixedTail,
}

/// Whether the series is a test of the heavy-tail mechanism, and why not.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Mechanism {
    /// What the family and the series allow.
    pub candidate: TailTest,
    /// The bias share over the smallest decade (None: no split was measured).
    pub share: Option<BiasShare>,
}

impl Mechanism {
    /// A test of the heavy-tail mechanism: a candidate whose bias share passes.
    pub fn tested(&self) -> bool {
        self.candidate == TailTest::Candidate && self.share.is_some_and(|b| b.passes())
    }

    /// Why the series is, or is not, a test of the heavy-tail mechanism, in words.
    pub fn words(&self) -> String {
        let share = match self.share {
            Some(b) => format!(
                "bias share {} [{}, {}]",
                super::sig(b.share),
                super::sig(b.lo),
                super::sig(b.hi)
            ),
            None => "no risk split".into(),
        };
        if self.tested() {
            return format!(
                "a test of the heavy-tail mechanism ({share}, lower end >= {BIAS_SHARE_THRESHOLD})"
            );
        }
        let why = match (self.candidate, self.share) {
            (TailTest::NoTail, _) => "no heavy tail (k = inf or a bounded control)".to_string(),
            (TailTest::FixedTail, _) => "its heavy part does not move with phi".into(),
            (TailTest::Candidate, Some(_)) => {
                format!("the lower end is below {BIAS_SHARE_THRESHOLD}")
            }
            (TailTest::Candidate, None) => "no risk split measured".into(),
        };
        format!("not a test of the heavy-tail mechanism: {why}; {share}")
    }
}
