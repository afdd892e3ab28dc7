//! The controls axis: a series' smallest-decade fit, the same fit of its do-nothing risk and of
//! its bounded-data control, resampled jointly.

use std::collections::BTreeMap;

use serde::Serialize;

use super::super::fit::{self, Difference, Fit, JointBootstrap, Sample};
use super::super::results::CellResult;
use super::super::spec::Spec;
use super::cells::SeriesCells;

/// A heavy-tailed series against its bounded-data control over the smallest decade.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ControlComparison {
    /// The control's smallest-decade fit.
    pub fit: Option<Fit>,
    /// slope(series) - slope(control) with its paired interval.
    pub difference: Option<Difference>,
}

/// The smallest decade's fits of one series.
pub(super) struct DecadeFits {
    /// The series' fit.
    pub(super) decade: Option<Fit>,
    /// The do-nothing risk's fit.
    pub(super) do_nothing: Option<Fit>,
    /// slope(series) - slope(do-nothing risk), paired.
    pub(super) do_nothing_diff: Option<Difference>,
    /// The control's fit and the difference, when the series has a control.
    pub(super) control: Option<ControlComparison>,
}

/// The decade's fits of series `s` (cells `sc`, smallest decade `dec`), its do-nothing risk and
/// its control, on one set of resampled replicate indices (replicate r is one data set and one
/// set of common random numbers in all three).
pub(super) fn decade_fits(
    spec: &Spec,
    s: usize,
    cells: &BTreeMap<usize, CellResult>,
    sc: &SeriesCells,
    dec: &[usize],
    seed: u64,
) -> DecadeFits {
    let (dphi, dreps) = sc.decade(dec, false);
    let (_, d0) = sc.decade(dec, true);
    let control = spec.control(s).map(|c| SeriesCells::new(cells, c));
    let cdec = control
        .as_ref()
        .map(|c| c.decade(&fit::smallest_decade(&c.phis), false));
    let mut samples = vec![
        Sample {
            phis: &dphi,
            reps: &dreps,
        },
        Sample {
            phis: &dphi,
            reps: &d0,
        },
    ];
    if let Some((p, r)) = &cdec {
        samples.push(Sample { phis: p, reps: r });
    }
    let joint = JointBootstrap::new(&samples, spec.bootstrap, seed);
    DecadeFits {
        decade: joint.fits[0].clone(),
        do_nothing: joint.fits[1].clone(),
        do_nothing_diff: joint.difference(0, 1),
        control: cdec.map(|_| ControlComparison {
            fit: joint.fits[2].clone(),
            difference: joint.difference(0, 2),
        }),
    }
}
