//! The rate axis: the smallest decade's slope interval against the predicted exponent.

use super::super::fit::Fit;

/// Largest half-width of a smallest-decade 95% interval that earns a rate verdict (0.1, the
/// clip-law report's threshold: an interval of +-0.1 tells exponents such as 1/2 and 2/3 apart).
pub const MAX_HALF_WIDTH: f64 = 0.1;

/// True when `f`'s interval is too wide for a rate ([`MAX_HALF_WIDTH`]).
fn too_wide(f: &Fit) -> bool {
    (f.hi - f.lo) / 2.0 > MAX_HALF_WIDTH
}

/// The rate read from the smallest decade's 95% interval against the predicted exponent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate {
    /// The interval contains the exponent.
    Attains,
    /// The interval lies above it.
    Faster,
    /// The interval lies below it.
    Slower,
    /// Half-width above [`MAX_HALF_WIDTH`]: no rate.
    TooWide,
}

impl Rate {
    /// The class of `f`'s interval against `predicted`, read from the interval with no
    /// tolerance; too wide first.
    pub fn classify(f: &Fit, predicted: f64) -> Rate {
        if too_wide(f) {
            Rate::TooWide
        } else if f.lo > predicted {
            Rate::Faster
        } else if f.hi < predicted {
            Rate::Slower
        } else {
            Rate::Attains
        }
    }
}

/// A lower-bound run's rate against the lower exponent 1 - 1/k ([`lower_verdict`]). One
/// algorithm's slope cannot show that a lower bound is tight; it says whether this run's risk
/// falls like the lower bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LowerRate {
    /// The interval contains 1 - 1/k: the run's rate matches the lower exponent.
    Matches,
    /// The interval lies below it: the run's risk falls more slowly than the lower bound.
    Slower,
    /// The interval lies above it: the run's risk falls faster than the lower bound (it must
    /// meet the bound's curve at smaller phi: pre-asymptotic).
    Faster,
    /// Half-width above [`MAX_HALF_WIDTH`]: no rate.
    TooWide,
}

/// The lower-bound verdict on the smallest decade's 95% interval against 1 - 1/k, read from the
/// interval with no tolerance (as the upper bounds' are): too wide, below, above, or
/// containing it.
pub fn lower_verdict(f: &Fit, predicted: f64) -> LowerRate {
    if too_wide(f) {
        LowerRate::TooWide
    } else if f.hi < predicted {
        LowerRate::Slower
    } else if f.lo > predicted {
        LowerRate::Faster
    } else {
        LowerRate::Matches
    }
}
