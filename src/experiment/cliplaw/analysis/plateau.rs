//! Plateau detection: the clip norms at the bottom of the grid that clip every sampled gradient
//! give the same run (eta tau is fixed), so the risk curve starts with a flat stretch whose edge
//! is where clipping stops binding for some sample.

use serde::{Deserialize, Serialize};

/// Two grid arms whose per-replicate risks agree to this relative tolerance (of the larger of
/// the two risks and the do-nothing risk) are the same run: with eta tau fixed (eta = C / (T
/// tau) psi^(-1/2)), clipping every sampled gradient makes the run independent of tau, and
/// under common random numbers the runs then agree up to rounding.
pub const TIE: f64 = 1e-9;
/// The low plateau of a risk curve: grid clip norms 0..=last give the same runs (every
/// replicate), and the edge where the runs start to differ lies in [taus[last], taus[last + 1]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Plateau {
    /// The last grid index on the plateau.
    pub last: usize,
    /// The bracket of the edge (upper end infinite when the whole grid is one plateau).
    pub edge: (f64, f64),
}

/// The low plateau of the per-replicate risks `grid[j][r]` over the clip norms `taus`: the
/// largest e with every replicate's risk at grid points 0..=e equal to its risk at point 0 (to [`TIE`]); None when point 1 already differs.
pub fn plateau(grid: &[Vec<f64>], risk0: f64, taus: &[f64]) -> Option<Plateau> {
    let same = |j: usize| {
        grid[j]
            .iter()
            .zip(&grid[0])
            .all(|(a, b)| (a - b).abs() <= TIE * a.abs().max(b.abs()).max(risk0.abs()))
    };
    let last = (1..taus.len()).take_while(|&j| same(j)).last()?;
    let upper = taus.get(last + 1).copied().unwrap_or(f64::INFINITY);
    Some(Plateau {
        last,
        edge: (taus[last], upper),
    })
}
