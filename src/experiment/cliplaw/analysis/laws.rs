//! The laws: power laws in phi fitted by OLS on log-log axes, with a paired bootstrap interval
//! (or, for the plateau edge, every slope its grid brackets allow), and a verdict read from the
//! interval against the predicted exponent.

use serde::{Deserialize, Serialize};

use super::plateau::Plateau;
use crate::config::DataSpec;
use crate::experiment::fit::{interval, ols};
use crate::experiment::spec::Spec;

/// Largest half-width of a law's 95% interval that earns a verdict (0.1: a slope known to
/// +-0.1 tells -1/3 from -1/2 apart).
pub const MAX_HALF_WIDTH: f64 = 0.1;
/// A fitted power law in phi (or n) with its interval and verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Law {
    /// OLS slope of the log value on log phi.
    pub slope: f64,
    /// 2.5% quantile (bootstrap) or lower end (grid bracket).
    pub lo: f64,
    /// 97.5% quantile or upper end.
    pub hi: f64,
    /// Sweep points the fit uses.
    pub points: usize,
    /// The exponent it is compared with.
    pub predicted: Option<f64>,
    /// agrees / differs / too wide.
    pub verdict: LawVerdict,
    /// Where k is a modelling choice (a fixed real data set: every moment is finite): the k over
    /// which the interval contains the predicted exponent (None: k is the law's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k_span: Option<KSpan>,
}

/// The k > 1 at which a predicted exponent e(k), increasing in k, lies in a law's interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KSpan {
    /// No k > 1.
    Nowhere,
    /// Every k in [lo, hi] (hi may be inf).
    Between {
        /// Smallest k (1 when e(1) is already in the interval).
        lo: f64,
        /// Largest k.
        #[serde(with = "crate::k_serde")]
        hi: f64,
    },
}

/// Largest k searched for a [`KSpan`] end (beyond it the span is open: hi = inf).
const K_MAX: f64 = 1e9;

/// The k in (1, inf) at which `e(k)` lies in [lo, hi], for `e` increasing in k (every theorem's
/// tau and risk exponent is): each end by bisection on log k (100 halvings of [1, K_MAX]).
pub fn k_span(lo: f64, hi: f64, e: &dyn Fn(f64) -> f64) -> KSpan {
    let k_min = 1.0 + 1e-12;
    if e(K_MAX) < lo || e(k_min) > hi {
        return KSpan::Nowhere;
    }
    // The smallest k with e(k) >= v (e increasing).
    let first_at_least = |v: f64| {
        let (mut a, mut b) = (k_min.ln(), K_MAX.ln());
        for _ in 0..100 {
            let m = 0.5 * (a + b);
            if e(m.exp()) >= v {
                b = m;
            } else {
                a = m;
            }
        }
        b.exp()
    };
    let k_lo = if e(k_min) >= lo {
        1.0
    } else {
        first_at_least(lo)
    };
    let k_hi = if e(K_MAX) <= hi {
        f64::INFINITY
    } else {
        first_at_least(hi)
    };
    KSpan::Between { lo: k_lo, hi: k_hi }
}

/// A law against its predicted exponent, read from the interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LawVerdict {
    /// The interval contains the predicted exponent.
    Agrees,
    /// The interval excludes it.
    Differs,
    /// Half-width above [`MAX_HALF_WIDTH`]: no verdict.
    TooWide,
    /// Nothing to compare with.
    NoPrediction,
}

impl std::fmt::Display for LawVerdict {
    /// In words, as the terminal and the report print it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LawVerdict::Agrees => "agrees",
            LawVerdict::Differs => "DIFFERS",
            LawVerdict::TooWide => "too wide for a verdict",
            LawVerdict::NoPrediction => "no prediction",
        })
    }
}

impl Law {
    /// A law with its verdict read from the interval.
    pub fn new(slope: f64, (lo, hi): (f64, f64), points: usize, predicted: Option<f64>) -> Law {
        let verdict = match predicted {
            None => LawVerdict::NoPrediction,
            Some(_) if (hi - lo) / 2.0 > MAX_HALF_WIDTH => LawVerdict::TooWide,
            Some(p) if lo <= p && p <= hi => LawVerdict::Agrees,
            Some(_) => LawVerdict::Differs,
        };
        Law {
            slope,
            lo,
            hi,
            points,
            predicted,
            verdict,
            k_span: None,
        }
    }

    /// The same law with the k span of its interval under the exponent `e(k)` (a fixed data set
    /// whose k is a modelling choice); a law too wide for a verdict gets none.
    pub fn with_k_span(mut self, e: &dyn Fn(f64) -> f64) -> Law {
        if matches!(self.verdict, LawVerdict::Agrees | LawVerdict::Differs) {
            self.k_span = Some(k_span(self.lo, self.hi, e));
        }
        self
    }
}

/// How a series' per-sample Lipschitz constants behave as phi moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tail {
    /// The tail is part of the instance and moves with phi (Appendix L: x = p^(-1/k) v with
    /// p = 2 phi / sqrt(nu)).
    ScalesWithPhi,
    /// A fixed law (a generator's, or a real data set's): a user's data are of this kind.
    Fixed,
    /// Bounded: every G_i <= G (k = inf).
    Bounded,
}

/// A law over the sweep points `keep` (log phi `lphi`): the OLS slope of `value(i, None)`, and
/// its 95% interval over the `resamples` slopes of `value(i, Some(b))` (logs taken here).
pub fn bootstrap_law(
    lphi: &[f64],
    keep: &[usize],
    resamples: usize,
    value: &dyn Fn(usize, Option<usize>) -> f64,
    predicted: Option<f64>,
) -> Option<Law> {
    if keep.len() < 3 {
        return None;
    }
    let xs: Vec<f64> = keep.iter().map(|&i| lphi[i]).collect();
    let slope = ols(
        &xs,
        &keep
            .iter()
            .map(|&i| value(i, None).ln())
            .collect::<Vec<_>>(),
    )?
    .0;
    let slopes = (0..resamples).map(|b| {
        let ys: Vec<f64> = keep.iter().map(|&i| value(i, Some(b)).ln()).collect();
        ols(&xs, &ys).map_or(f64::NAN, |l| l.0)
    });
    Some(Law::new(slope, interval(slopes)?, keep.len(), predicted))
}

/// The plateau edge's law over the phis where the plateau is the minimum (`best`) and its edge
/// lies inside the grid (>= 3): the slope
/// through the geometric middles of the brackets, and the smallest and largest OLS slopes over
/// edges anywhere in their brackets (the slope is linear in each log edge, so its extremes sit
/// at bracket ends chosen by the sign of each weight (x_i - x_bar) / Sxx).
pub fn edge_law(
    lphi: &[f64],
    plateaus: &[Option<Plateau>],
    best: &[bool],
    predicted: Option<f64>,
) -> Option<Law> {
    let keep: Vec<(f64, f64, f64)> = lphi
        .iter()
        .zip(plateaus)
        .zip(best)
        .filter_map(|((&x, p), &b)| {
            let p = p.filter(|_| b)?;
            p.edge
                .1
                .is_finite()
                .then(|| (x, p.edge.0.ln(), p.edge.1.ln()))
        })
        .collect();
    if keep.len() < 3 {
        return None;
    }
    let xs: Vec<f64> = keep.iter().map(|k| k.0).collect();
    let mx = xs.iter().sum::<f64>() / xs.len() as f64;
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let mid = ols(
        &xs,
        &keep.iter().map(|k| 0.5 * (k.1 + k.2)).collect::<Vec<_>>(),
    )?
    .0;
    let (mut lo, mut hi) = (0.0, 0.0);
    for &(x, a, b) in &keep {
        let w = (x - mx) / sxx;
        lo += w * if w > 0.0 { a } else { b };
        hi += w * if w > 0.0 { b } else { a };
    }
    Some(Law::new(mid, (lo, hi), keep.len(), predicted))
}

/// How the per-sample Lipschitz constants of a series with tail index k move with phi.
pub fn tail(spec: &Spec, k: f64) -> Tail {
    if k.is_infinite() {
        Tail::Bounded
    } else if matches!(spec.raw.data, DataSpec::AppendixL(_)) {
        Tail::ScalesWithPhi
    } else {
        Tail::Fixed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// breast_cancer's tau* interval [-0.420, -0.376] against J.1's -2/(k+1): k in
    /// [2/0.420 - 1, 2/0.376 - 1] = [3.762, 4.319] in closed form; an interval above every
    /// -2/(k+1) (>= 0) holds no k; one reaching 0 is open above; one below -1 holds none.
    #[test]
    fn k_span_inverts_the_exponent() {
        let e = |k: f64| -2.0 / (k + 1.0);
        let KSpan::Between { lo, hi } = k_span(-0.420, -0.376, &e) else {
            panic!("no span")
        };
        assert!((lo - (2.0 / 0.420 - 1.0)).abs() < 1e-9, "{lo}");
        assert!((hi - (2.0 / 0.376 - 1.0)).abs() < 1e-9, "{hi}");
        assert_eq!(k_span(0.01, 0.02, &e), KSpan::Nowhere);
        assert_eq!(k_span(-1.5, -1.2, &e), KSpan::Nowhere);
        let KSpan::Between { lo, hi } = k_span(-0.1, 0.05, &e) else {
            panic!("no span")
        };
        assert!((lo - 19.0).abs() < 1e-9 && hi.is_infinite(), "{lo} {hi}");
        let KSpan::Between { lo, hi } = k_span(-1.2, -0.9, &e) else {
            panic!("no span")
        };
        assert!(
            lo == 1.0 && (hi - (2.0 / 0.9 - 1.0)).abs() < 1e-9,
            "{lo} {hi}"
        );
    }

    /// The edge law's interval holds every slope the brackets allow: edges at exactly
    /// phi^(-1/2) bracketed by a factor-2 grid give an interval that contains -1/2, and the
    /// interval's ends are the OLS slopes of the extreme bracket ends.
    #[test]
    fn edge_law_brackets() {
        let lphi: Vec<f64> = (0..5).map(|i| -(i as f64) * 0.5).collect();
        let plateaus: Vec<Option<Plateau>> = lphi
            .iter()
            .map(|x| {
                let e = -0.5 * x; // log edge
                let lo = (e / 2f64.ln()).floor() * 2f64.ln();
                Some(Plateau {
                    last: 1,
                    edge: (lo.exp(), (lo + 2f64.ln()).exp()),
                })
            })
            .collect();
        let l = edge_law(&lphi, &plateaus, &[true; 5], Some(-0.5)).unwrap();
        assert!(l.lo <= -0.5 && -0.5 <= l.hi, "{l:?}");
        assert!(l.hi - l.lo > 0.0);
    }
}
