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

#[cfg(test)]
mod tests {
    use super::*;

    /// Constructed sweeps with known plateau edges (three replicates, risk0 = 1): flat through
    /// index 4 then apart; flat everywhere; apart at index 1; and a slow drift of 0.4 TIE per step,
    /// within TIE of each neighbour but beyond TIE of point 0 after three steps. Every point is
    /// compared with point 0, so the drift ends the plateau at index 2. Planted bug (each point
    /// compared with its predecessor): the drift is taken for one long plateau.
    #[test]
    fn plateau_edges_on_constructed_sweeps() {
        let taus: Vec<f64> = (0..8).map(|j| 0.1 * 2f64.powi(j)).collect();
        let reps = [0.5, 0.7, 0.9];
        let sweep = |f: &dyn Fn(usize, f64) -> f64| -> Vec<Vec<f64>> {
            (0..taus.len())
                .map(|j| reps.iter().map(|&r| f(j, r)).collect())
                .collect()
        };
        let step = sweep(&|j, r| {
            if j <= 4 {
                r
            } else {
                r * (1.0 + 0.01 * j as f64)
            }
        });
        assert_eq!(
            plateau(&step, 1.0, &taus),
            Some(Plateau {
                last: 4,
                edge: (taus[4], taus[5])
            })
        );
        let flat = sweep(&|_, r| r);
        assert_eq!(
            plateau(&flat, 1.0, &taus).map(|p| p.edge.1),
            Some(f64::INFINITY)
        );
        let none = sweep(&|j, r| r + 1e-3 * j as f64);
        assert_eq!(plateau(&none, 1.0, &taus), None);
        let drift = sweep(&|j, r| r + 0.4 * TIE * j as f64);
        assert_eq!(plateau(&drift, 1.0, &taus).map(|p| p.last), Some(2));
    }
}
