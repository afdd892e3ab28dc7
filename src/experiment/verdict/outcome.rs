//! The verdict on one series, from its axes: a violation, or the upper bound's informativeness
//! and rate, or the lower bound's tightness, or an ablation's outcome.

use std::fmt;

use serde::{Serialize, Serializer};

use super::super::fit::{self, Difference, Fit};
use super::super::results::CellResult;
use super::cells::reps_of;
use super::informative::Informative;
use super::rate::{LowerRate, MAX_HALF_WIDTH, Rate, lower_verdict};
use super::split::Mechanism;
use crate::format::signed;

/// slope(run) - slope(do-nothing risk) over the smallest decade, with the paired 95% interval
/// of the joint bootstrap (one resample of replicate indices for both: replicate r is one data
/// set, whose w0 gives its do-nothing risk).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DoNothing(pub Option<Difference>);

impl DoNothing {
    /// A do-nothing algorithm earns the same rate: the paired interval of the difference
    /// contains 0 and is narrow enough for a rate (half-width at most [`MAX_HALF_WIDTH`]).
    /// Decided on the difference, not on the two slopes' verdict classes: two slopes in one
    /// class can differ (a run that moved well below risk0 along the decade).
    pub fn same(&self) -> bool {
        self.0
            .is_some_and(|d| d.lo <= 0.0 && d.hi >= 0.0 && (d.hi - d.lo) / 2.0 <= MAX_HALF_WIDTH)
    }

    /// "slope minus do-nothing slope +0.01 [-0.02, +0.03]" (None: no difference).
    pub fn words(&self) -> Option<String> {
        self.0.map(|d| {
            format!(
                "slope minus do-nothing slope {} [{}, {}]",
                signed(d.value, 2),
                signed(d.lo, 2),
                signed(d.hi, 2)
            )
        })
    }
}

/// An ablation's outcome.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ablation {
    /// The smallest decade's slope interval lies below 0.25 (a bias floor).
    Floor,
    /// The risk still falls with phi (the smallest decade's slope).
    Falling(f64),
    /// No fit.
    NoFit,
}

/// The verdict on one series. `Display` gives the text of the table's "verdict" column (and of the
/// summary JSON); `verify` exits non-zero on [`Verdict::Violation`].
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Some cell's mean OR is above its mean explicit bound (the cells, named).
    Violation(Vec<String>),
    /// Upper bound: no fit, because some mean risk is not positive.
    NoFit,
    /// Upper bound, the bound holding in every cell: whether it is informative, and the rate
    /// only where it is.
    Upper {
        /// The bound against the do-nothing risk in the smallest decade.
        informative: Informative,
        /// The rate (None unless the bound is informative).
        rate: Option<Rate>,
        /// The slope against the do-nothing risk's slope ([`DoNothing::same`]: not moving earns
        /// the rate too; said only where a rate is stated).
        do_nothing: DoNothing,
        /// Whether the series tests the heavy-tail mechanism (its bias share and family).
        mechanism: Option<Mechanism>,
    },
    /// Lower bound: the run's rate against the lower exponent 1 - 1/k and the constant c_hat
    /// with OR >= c_hat G phi^(1-1/k) in every cell.
    Lower {
        /// The smallest decade's interval against 1 - 1/k.
        rate: LowerRate,
        /// 1 - 1/k.
        predicted: f64,
        /// min over cells of OR / (G phi^(1-1/k)).
        c_hat: f64,
        /// The slope against the do-nothing risk's slope ([`DoNothing::same`]).
        do_nothing: DoNothing,
    },
    /// Lower bound: no fit.
    LowerNoFit,
    /// Ablation (a clip norm outside the theorem).
    Ablation(Ablation),
}

impl Verdict {
    /// True for [`Verdict::Violation`].
    pub fn is_violation(&self) -> bool {
        matches!(self, Verdict::Violation(_))
    }

    /// The verdict in a few words, for the terminal's compact table (the full text is
    /// `Display`'s, in report.md and behind `verify --wide`).
    pub fn word(&self) -> String {
        let mut w = match self {
            Verdict::Violation(_) => "VIOLATED".to_string(),
            Verdict::NoFit | Verdict::LowerNoFit => "no fit".into(),
            Verdict::Upper {
                informative,
                rate,
                mechanism,
                ..
            } => match (informative, rate) {
                (Informative::Yes(_), Some(Rate::Attains))
                    if mechanism.is_some_and(|m| m.tested()) =>
                {
                    "attains rate (heavy-tail test)".into()
                }
                (Informative::Yes(_), Some(Rate::Attains)) => "consistent with schedule".into(),
                (Informative::Yes(_), Some(Rate::Faster)) => "faster than bound".into(),
                (Informative::Yes(_), Some(Rate::Slower)) => "slower than bound".into(),
                (Informative::Yes(_), Some(Rate::TooWide)) => "too wide for a rate".into(),
                (Informative::Yes(_), None) => "informative".into(),
                (Informative::Vacuous(_), _) => "no rate: vacuous".into(),
                (Informative::NoBound(..), _) => "no rate: no bound".into(),
            },
            Verdict::Lower { rate, .. } => match rate {
                LowerRate::Matches => "matches lower exponent".into(),
                LowerRate::Slower => "slower than lower exponent".into(),
                LowerRate::Faster => "faster than lower exponent".into(),
                LowerRate::TooWide => "too wide for a rate".into(),
            },
            Verdict::Ablation(Ablation::Floor) => "ablation: floor".into(),
            Verdict::Ablation(Ablation::Falling(_)) => "ablation: falling".into(),
            Verdict::Ablation(Ablation::NoFit) => "ablation: no fit".into(),
        };
        if self.do_nothing_too() {
            w.push_str(" (do-nothing too)");
        }
        w
    }

    /// The verdict says that a do-nothing algorithm earns it too: a stated rate (upper: not too
    /// wide; lower: any class but too wide) whose slope the do-nothing slope matches
    /// ([`DoNothing::same`]).
    pub fn do_nothing_too(&self) -> bool {
        match self {
            Verdict::Upper {
                rate, do_nothing, ..
            } => rate.is_some_and(|r| r != Rate::TooWide) && do_nothing.same(),
            Verdict::Lower {
                rate, do_nothing, ..
            } => *rate != LowerRate::TooWide && do_nothing.same(),
            _ => false,
        }
    }
}

/// The suffix of a verdict that the do-nothing risk would earn too.
pub const DO_NOTHING: &str = "; a do-nothing algorithm earns the same";

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Violation(v) => write!(f, "VIOLATION: {}", v.join("; ")),
            Verdict::NoFit => f.write_str("no fit (risk not positive)"),
            Verdict::Upper {
                informative,
                rate,
                do_nothing,
                mechanism,
            } => {
                let tested = mechanism.is_some_and(|m| m.tested());
                match (informative, rate) {
                    (Informative::Yes(v), Some(r)) => {
                        let r = match r {
                            Rate::Attains if tested => "attains the bound's rate".to_string(),
                            Rate::Attains => {
                                "consistent with the schedule's exponent (interval contains it)"
                                    .to_string()
                            }
                            Rate::Faster => "faster than the bound".into(),
                            Rate::Slower => "slower than the bound (pre-asymptotic)".into(),
                            Rate::TooWide => format!(
                                "interval too wide for a rate (half-width above {MAX_HALF_WIDTH})"
                            ),
                        };
                        write!(f, "{r}; bound informative (bound / risk0 <= {})", sig(*v))?;
                        if let Some(m) = mechanism {
                            write!(f, "; {}", m.words())?;
                        }
                    }
                    (Informative::Yes(v), None) => {
                        write!(f, "bound informative (bound / risk0 <= {})", sig(*v))?;
                    }
                    (Informative::Vacuous(v), _) => write!(
                        f,
                        "no rate claim: bound vacuous (bound / risk0 up to {})",
                        sig(*v)
                    )?,
                    (Informative::NoBound(0, _), _) => {
                        f.write_str("no rate claim: no bound applies")?
                    }
                    (Informative::NoBound(a, b), _) => write!(
                        f,
                        "no rate claim: bound in {a} of {b} smallest-decade cells"
                    )?,
                }
                if self.do_nothing_too() {
                    do_nothing_suffix(f, do_nothing)?;
                }
                Ok(())
            }
            Verdict::Lower {
                rate,
                predicted,
                c_hat,
                do_nothing,
            } => {
                match rate {
                    LowerRate::Matches => write!(
                        f,
                        "rate matches the lower exponent (interval contains {predicted:.3})"
                    )?,
                    LowerRate::Slower => write!(
                        f,
                        "rate slower than the lower exponent (interval below {predicted:.3})"
                    )?,
                    LowerRate::Faster => write!(
                        f,
                        "rate faster than the lower exponent (interval above {predicted:.3})"
                    )?,
                    LowerRate::TooWide => write!(
                        f,
                        "interval too wide for a rate (half-width above {MAX_HALF_WIDTH})"
                    )?,
                }
                write!(f, " (OR >= {c_hat:.3e} G phi^(1-1/k))")?;
                if self.do_nothing_too() {
                    do_nothing_suffix(f, do_nothing)?;
                } else if let Some(w) = do_nothing.words() {
                    write!(f, "; not a do-nothing rate: {w}")?;
                }
                Ok(())
            }
            Verdict::LowerNoFit => f.write_str("no fit"),
            Verdict::Ablation(Ablation::Floor) => f.write_str("ablation: bias floor"),
            Verdict::Ablation(Ablation::Falling(slope)) => {
                write!(f, "ablation: still falling (slope {slope:.2})")
            }
            Verdict::Ablation(Ablation::NoFit) => f.write_str("ablation: no fit"),
        }
    }
}

impl Serialize for Verdict {
    /// As its text (the summary JSON's format).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The upper-bound verdict: informative or not over the smallest decade, and only where it is,
/// the rate from the decade's interval (no tolerance). `do_nothing` is the paired difference of
/// the slope and the do-nothing risk's slope ([`DoNothing::same`]); `mechanism` says whether a
/// stated rate tests the heavy-tail mechanism (only then is a contained exponent "the bound's
/// rate"; otherwise it is "consistent with the schedule's exponent").
pub fn upper_verdict(
    decade: &Option<Fit>,
    predicted: f64,
    informative: Informative,
    do_nothing: Option<Difference>,
    mechanism: Option<Mechanism>,
) -> Verdict {
    let Some(f) = decade else {
        return Verdict::NoFit;
    };
    let rate = matches!(informative, Informative::Yes(_)).then(|| Rate::classify(f, predicted));
    Verdict::Upper {
        informative,
        rate,
        do_nothing: DoNothing(do_nothing),
        mechanism,
    }
}

/// "; a do-nothing algorithm earns the same (slope minus do-nothing slope ...)".
fn do_nothing_suffix(f: &mut fmt::Formatter<'_>, d: &DoNothing) -> fmt::Result {
    f.write_str(DO_NOTHING)?;
    match d.words() {
        Some(w) => write!(f, " ({w})"),
        None => Ok(()),
    }
}

/// The lower-bound verdict: the smallest decade's rate against 1 - 1/k, and the reported constant
/// c_hat with OR >= c_hat G phi^(1-1/k) in every cell.
pub(super) fn lower_series_verdict(
    decade: &Option<Fit>,
    predicted: f64,
    k: f64,
    cs: &[&CellResult],
    do_nothing: Option<Difference>,
) -> Verdict {
    let c_hat = cs
        .iter()
        .map(|c| {
            let g = c.replicates.first().map_or(f64::NAN, |r| r.g);
            fit::mean(&reps_of(c)) / (g * c.phi.powf(1.0 - 1.0 / k))
        })
        .fold(f64::INFINITY, f64::min);
    match decade {
        Some(f) => Verdict::Lower {
            rate: lower_verdict(f, predicted),
            predicted,
            c_hat,
            do_nothing: DoNothing(do_nothing),
        },
        None => Verdict::LowerNoFit,
    }
}

/// The ablation verdict: a bias floor, or still falling.
pub(super) fn ablation_verdict(decade: &Option<Fit>) -> Verdict {
    Verdict::Ablation(match decade {
        Some(f) if f.hi < 0.25 => Ablation::Floor,
        Some(f) => Ablation::Falling(f.slope),
        None => Ablation::NoFit,
    })
}

/// Three significant digits: fixed between 0.01 and 1000, else scientific.
pub(crate) fn sig(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    if (0.01..1000.0).contains(&a) {
        let dec = (2 - a.log10().floor() as i32).max(0) as usize;
        format!("{v:.dec$}")
    } else {
        format!("{v:.2e}")
    }
}
