//! The geometric median argmin_w (1/n) sum_i ||w - p_i||: the minimizer w* of Appendix E's
//! f(w) = (1/n) sum_i ||w - w_i*||, by Weiszfeld's iteration with the Vardi-Zhang correction at
//! data points (so the iteration cannot stall on a sample).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Result of [`geometric_median`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeometricMedian {
    /// The minimizer estimate.
    pub w: Vec<f64>,
    /// (1/n) sum_i ||w - p_i|| at `w`.
    pub objective: f64,
    /// Iterations used.
    pub iterations: usize,
}

fn dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

/// (1/n) sum_i ||w - p_i||.
pub fn median_objective(points: &[Vec<f64>], w: &[f64]) -> f64 {
    points.iter().map(|p| dist(w, p)).sum::<f64>() / points.len() as f64
}

/// Weiszfeld's iteration from the centroid; the objective never increases, so the result is
/// never worse than the centroid (which Appendix E's Eq. (16) relies on).
pub fn geometric_median(points: &[Vec<f64>], tol: f64, max_iter: usize) -> Result<GeometricMedian> {
    let n = points.len();
    if n == 0 {
        return Err(Error::param(
            "the geometric median needs at least one point",
        ));
    }
    let d = points[0].len();
    if let Some(j) = points.iter().position(|p| p.len() != d) {
        return Err(Error::param(format!(
            "point {j} has dimension {}, but point 0 has {d}",
            points[j].len()
        )));
    }
    let mut w: Vec<f64> = (0..d)
        .map(|k| points.iter().map(|p| p[k]).sum::<f64>() / n as f64)
        .collect();
    let mut obj = median_objective(points, &w);
    let mut it = 0;
    while it < max_iter {
        it += 1;
        let mut num = vec![0.0; d];
        let mut den = 0.0;
        let mut r = vec![0.0; d];
        let mut at_point = 0.0;
        for p in points {
            let dd = dist(&w, p);
            if dd <= 1e-300 {
                at_point += 1.0;
                continue;
            }
            for k in 0..d {
                num[k] += p[k] / dd;
                r[k] += (p[k] - w[k]) / dd;
            }
            den += 1.0 / dd;
        }
        if den == 0.0 {
            break; // every point coincides with w
        }
        let t: Vec<f64> = num.iter().map(|v| v / den).collect();
        let next: Vec<f64> = if at_point > 0.0 {
            // Vardi-Zhang: w is a data point; it is optimal iff ||R|| <= multiplicity.
            let rn = r.iter().map(|v| v * v).sum::<f64>().sqrt();
            if rn <= at_point {
                break;
            }
            let beta = at_point / rn;
            t.iter()
                .zip(&w)
                .map(|(tk, wk)| (1.0 - beta) * tk + beta * wk)
                .collect()
        } else {
            t
        };
        let nobj = median_objective(points, &next);
        let moved = dist(&next, &w);
        if nobj > obj {
            break; // numerical noise at convergence; keep the better point
        }
        w = next;
        obj = nobj;
        if moved <= tol * (1.0 + w.iter().map(|v| v.abs()).fold(0.0, f64::max)) {
            break;
        }
    }
    Ok(GeometricMedian {
        w,
        objective: obj,
        iterations: it,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_collinear_points_median_is_the_middle_one() {
        let pts = vec![vec![0.0, 0.0], vec![1.0, 0.0], vec![5.0, 0.0]];
        let m = geometric_median(&pts, 1e-14, 10_000).unwrap();
        assert!(dist(&m.w, &[1.0, 0.0]) < 1e-9, "{:?}", m.w);
        // objective = (1 + 0 + 4) / 3
        assert!((m.objective - 5.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn square_median_is_the_center() {
        let pts = vec![
            vec![0.0, 0.0],
            vec![2.0, 0.0],
            vec![0.0, 2.0],
            vec![2.0, 2.0],
        ];
        let m = geometric_median(&pts, 1e-14, 10_000).unwrap();
        assert!(dist(&m.w, &[1.0, 1.0]) < 1e-12);
    }
}
