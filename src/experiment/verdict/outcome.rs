//! The verdict on one series, from its axes: a violation, or the upper bound's informativeness
//! and rate, or the lower bound's tightness, or an ablation's outcome.

use std::fmt;

use serde::{Serialize, Serializer};

use super::super::fit::{self, Fit};
use super::super::results::CellResult;
use super::cells::reps_of;
use super::informative::Informative;
use super::rate::{LowerRate, MAX_HALF_WIDTH, Rate, lower_verdict};

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
        /// The do-nothing risk's own interval gives the same rate: not moving earns it too.
        do_nothing: bool,
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
        /// The do-nothing risk's interval gives the same class: not moving earns it too.
        do_nothing: bool,
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
                informative, rate, ..
            } => match (informative, rate) {
                (Informative::Yes(_), Some(Rate::Attains)) => "attains rate".into(),
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
        if matches!(
            self,
            Verdict::Upper {
                do_nothing: true,
                ..
            } | Verdict::Lower {
                do_nothing: true,
                ..
            }
        ) {
            w.push_str(" (do-nothing too)");
        }
        w
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
            } => {
                match (informative, rate) {
                    (Informative::Yes(v), Some(r)) => {
                        let r = match r {
                            Rate::Attains => "attains the bound's rate".to_string(),
                            Rate::Faster => "faster than the bound".into(),
                            Rate::Slower => "slower than the bound (pre-asymptotic)".into(),
                            Rate::TooWide => format!(
                                "interval too wide for a rate (half-width above {MAX_HALF_WIDTH})"
                            ),
                        };
                        write!(f, "{r}; bound informative (bound / risk0 <= {})", sig(*v))?;
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
                if *do_nothing {
                    f.write_str(DO_NOTHING)?;
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
                if *do_nothing {
                    f.write_str(DO_NOTHING)?;
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
/// the rate from the decade's interval (no tolerance). `do_nothing` is the same fit of the
/// do-nothing risk: when its interval gives the same rate, the verdict says so.
pub fn upper_verdict(
    decade: &Option<Fit>,
    predicted: f64,
    informative: Informative,
    do_nothing: &Option<Fit>,
) -> Verdict {
    let Some(f) = decade else {
        return Verdict::NoFit;
    };
    let rate = matches!(informative, Informative::Yes(_)).then(|| Rate::classify(f, predicted));
    let do_nothing = rate.is_some_and(|r| r != Rate::TooWide)
        && do_nothing
            .as_ref()
            .is_some_and(|d| Some(Rate::classify(d, predicted)) == rate);
    Verdict::Upper {
        informative,
        rate,
        do_nothing,
    }
}

/// The lower-bound verdict: the smallest decade's rate against 1 - 1/k, and the reported constant
/// c_hat with OR >= c_hat G phi^(1-1/k) in every cell.
pub(super) fn lower_series_verdict(
    decade: &Option<Fit>,
    predicted: f64,
    k: f64,
    cs: &[&CellResult],
    do_nothing: &Option<Fit>,
) -> Verdict {
    let c_hat = cs
        .iter()
        .map(|c| {
            let g = c.replicates.first().map_or(f64::NAN, |r| r.g);
            fit::mean(&reps_of(c)) / (g * c.phi.powf(1.0 - 1.0 / k))
        })
        .fold(f64::INFINITY, f64::min);
    match decade {
        Some(f) => {
            let rate = lower_verdict(f, predicted);
            Verdict::Lower {
                rate,
                predicted,
                c_hat,
                do_nothing: do_nothing.as_ref().is_some_and(|d| {
                    rate != LowerRate::TooWide && lower_verdict(d, predicted) == rate
                }),
            }
        }
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
