//! The tau* fit: where a risk curve over the log grid of clip norms has its minimum, and tau* as
//! the vertex of a log-log quadratic through the grid minimum and its neighbours (not a raw
//! argmin).

use serde::{Deserialize, Serialize};

use crate::format::num;

/// Grid points each side of the grid minimum in the quadratic smoothing.
const WINDOW: usize = 2;

/// Where the risk curve over the grid has its minimum.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Minimum {
    /// A resolved interior minimum: the vertex of the log-log quadratic through the grid
    /// minimum and its neighbours, with its bootstrap interval over the resamples that also
    /// had an interior minimum (`resolved`: their share).
    Interior {
        /// tau*.
        tau: f64,
        /// 2.5% quantile.
        lo: f64,
        /// 97.5% quantile.
        hi: f64,
        /// Share of resamples with an interior minimum.
        resolved: f64,
    },
    /// The minimum is the low plateau: every clip norm up to the plateau edge gives the same
    /// (best) run, so no tau* is identifiable; the edge is the largest clip norm that is best.
    Plateau,
    /// The grid minimum is the smallest clip norm and there is no plateau: tau* lies below
    /// the grid.
    BelowGrid,
    /// The grid minimum is the largest clip norm: tau* lies above the grid.
    AboveGrid,
}

impl Minimum {
    /// Short text for tables.
    pub fn short(&self) -> String {
        match self {
            Minimum::Interior {
                tau,
                lo,
                hi,
                resolved,
            } => format!(
                "{} [{}, {}]{}",
                num(*tau),
                num(*lo),
                num(*hi),
                if *resolved < 0.95 {
                    format!(" ({:.0}% resolved)", 100.0 * resolved)
                } else {
                    String::new()
                }
            ),
            Minimum::Plateau => "plateau".into(),
            Minimum::BelowGrid => "below grid".into(),
            Minimum::AboveGrid => "above grid".into(),
        }
    }
}

/// The minimum of one curve of means `m` over log clip norms `x`, the plateau ending at `lo`:
/// (kind, tau*, min risk, grid argmin).
pub fn minimum(m: &[f64], x: &[f64], lo: usize, has_plateau: bool) -> (Minimum, f64, f64, usize) {
    let last = m.len() - 1;
    let a = (lo..=last).fold(lo, |b, j| if m[j] < m[b] { j } else { b });
    let grid = (x[a].exp(), m[a]);
    if a == lo {
        let kind = if has_plateau {
            Minimum::Plateau
        } else {
            Minimum::BelowGrid
        };
        return (kind, grid.0, grid.1, a);
    }
    if a == last {
        return (Minimum::AboveGrid, grid.0, grid.1, a);
    }
    let idx: Vec<usize> = (a.saturating_sub(WINDOW).max(lo)..=(a + WINDOW).min(last)).collect();
    let (tau, best) = match quadratic(
        &idx.iter().map(|&j| x[j] - x[a]).collect::<Vec<_>>(),
        &idx.iter().map(|&j| m[j].ln()).collect::<Vec<_>>(),
    ) {
        Some((c0, c1, c2)) if c2 > 0.0 => {
            let v = (-c1 / (2.0 * c2)).clamp(x[a - 1] - x[a], x[a + 1] - x[a]);
            ((x[a] + v).exp(), (c0 + c1 * v + c2 * v * v).exp())
        }
        _ => grid,
    };
    let kind = Minimum::Interior {
        tau,
        lo: tau,
        hi: tau,
        resolved: 1.0,
    };
    (kind, tau, best, a)
}

/// Least-squares y = c0 + c1 x + c2 x^2 (3 or more points); None when singular.
fn quadratic(x: &[f64], y: &[f64]) -> Option<(f64, f64, f64)> {
    if x.len() < 3 {
        return None;
    }
    let mut s = [0.0f64; 5];
    let mut t = [0.0f64; 3];
    for (&xi, &yi) in x.iter().zip(y) {
        let mut p = 1.0;
        for (k, sk) in s.iter_mut().enumerate() {
            *sk += p;
            if k < 3 {
                t[k] += p * yi;
            }
            p *= xi;
        }
    }
    // Normal equations [s0 s1 s2; s1 s2 s3; s2 s3 s4] c = t by Cramer's rule.
    let det3 = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let a = [[s[0], s[1], s[2]], [s[1], s[2], s[3]], [s[2], s[3], s[4]]];
    let d = det3(a);
    if d.abs() < 1e-12 {
        return None;
    }
    let col = |i: usize| {
        let mut m = a;
        for r in 0..3 {
            m[r][i] = t[r];
        }
        det3(m) / d
    };
    Some((col(0), col(1), col(2)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quadratic recovers a parabola's vertex exactly.
    #[test]
    fn quadratic_vertex() {
        let x = [-2.0, -1.0, 0.0, 1.0, 2.0];
        let y: Vec<f64> = x.iter().map(|v| 3.0 + 0.5 * (v - 0.3f64).powi(2)).collect();
        let (c0, c1, c2) = quadratic(&x, &y).unwrap();
        assert!((c2 - 0.5).abs() < 1e-12, "{c2}");
        assert!((-c1 / (2.0 * c2) - 0.3).abs() < 1e-12);
        assert!((c0 - (3.0 + 0.5 * 0.09)).abs() < 1e-12);
    }

    /// A U-shaped curve in log-log gives an interior minimum at its vertex; a curve flat on
    /// the left and rising is a plateau; monotone curves are off the grid.
    #[test]
    fn minimum_kinds() {
        let x: Vec<f64> = (0..12).map(|j| 0.4 * j as f64).collect();
        let u: Vec<f64> = x
            .iter()
            .map(|v| (0.7 * (v - 2.1f64).powi(2)).exp())
            .collect();
        match minimum(&u, &x, 0, false).0 {
            Minimum::Interior { tau, .. } => assert!((tau.ln() - 2.1).abs() < 1e-9, "{tau}"),
            k => panic!("{k:?}"),
        }
        let flat: Vec<f64> = x
            .iter()
            .map(|v| if *v <= 1.2 { 1.0 } else { 1.0 + v })
            .collect();
        assert_eq!(minimum(&flat, &x, 3, true).0, Minimum::Plateau);
        let down: Vec<f64> = x.iter().map(|v| (-v).exp()).collect();
        assert_eq!(minimum(&down, &x, 0, false).0, Minimum::AboveGrid);
        let up: Vec<f64> = x.iter().map(|v| v.exp()).collect();
        assert_eq!(minimum(&up, &x, 0, false).0, Minimum::BelowGrid);
    }
}
