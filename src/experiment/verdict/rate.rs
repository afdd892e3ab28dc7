//! The rate axis: the smallest decade's slope interval against the predicted exponent.

use super::super::fit::Fit;

/// The rate read from the smallest decade's 95% interval against the predicted exponent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate {
    /// The interval contains the exponent.
    Attains,
    /// The interval lies above it.
    Faster,
    /// The interval lies below it.
    Slower,
}

impl Rate {
    /// The class of `f`'s interval against `predicted`.
    pub fn classify(f: &Fit, predicted: f64) -> Rate {
        if f.lo > predicted {
            Rate::Faster
        } else if f.hi < predicted {
            Rate::Slower
        } else {
            Rate::Attains
        }
    }
}

/// The lower bound's three-way tightness ([`lower_verdict`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tightness {
    /// The interval lies within `BAND` of 1 - 1/k.
    Tight,
    /// It contains 1 - 1/k (or misses it by less than `BAND`) but is wider than +-`BAND`.
    Consistent,
    /// It excludes 1 - 1/k by more than `BAND`.
    NotTight,
}

/// Half-width of the lower bound's tightness band.
pub const BAND: f64 = 0.05;

/// The lower-bound verdict, three-way on the smallest decade's 95% interval against 1 - 1/k:
/// tight (within `BAND` of it), not tight (excludes it by more than `BAND`), consistent
/// (otherwise: contains it, or misses it by less than `BAND`, but is wider than +-`BAND`).
pub fn lower_verdict(f: &Fit, predicted: f64) -> Tightness {
    if f.lo >= predicted - BAND && f.hi <= predicted + BAND {
        Tightness::Tight
    } else if f.hi < predicted - BAND || f.lo > predicted + BAND {
        Tightness::NotTight
    } else {
        Tightness::Consistent
    }
}
