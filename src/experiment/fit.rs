//! The exponent fit: OLS slope of log OR on log phi, with a percentile bootstrap 95% interval
//! over replicates (each cell's replicates resampled with replacement, cell means refitted).

use rand::RngExt;
use serde::{Deserialize, Serialize};

use crate::rng::{Purpose, stream};
use crate::stats::quantile_sorted;

/// A fitted slope with its bootstrap interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    /// OLS slope of log risk on log phi.
    pub slope: f64,
    /// OLS intercept: the fitted log risk at phi = 1.
    pub intercept: f64,
    /// 2.5% bootstrap quantile of the slope.
    pub lo: f64,
    /// 97.5% bootstrap quantile of the slope.
    pub hi: f64,
    /// Number of cells (phi values) in the fit: those with replicates and a positive mean
    /// risk.
    pub cells: usize,
    /// Smallest and largest phi among the cells fitted.
    pub phi_range: (f64, f64),
}

/// OLS (slope, intercept) of y on x; None with fewer than 2 distinct x.
pub fn ols(x: &[f64], y: &[f64]) -> Option<(f64, f64)> {
    let n = x.len() as f64;
    if x.len() < 2 {
        return None;
    }
    let mx = x.iter().sum::<f64>() / n;
    let my = y.iter().sum::<f64>() / n;
    let sxx: f64 = x.iter().map(|v| (v - mx) * (v - mx)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let slope = sxy / sxx;
    Some((slope, my - slope * mx))
}

/// Fits log(mean risk) on log phi over the cells `phis[i]` with replicate risks `reps[i]`;
/// cells whose mean is not positive are left out. `seed` makes the bootstrap reproducible.
pub fn fit(phis: &[f64], reps: &[Vec<f64>], resamples: usize, seed: u64) -> Option<Fit> {
    let keep: Vec<usize> = (0..phis.len())
        .filter(|&i| !reps[i].is_empty() && mean(&reps[i]) > 0.0)
        .collect();
    let x: Vec<f64> = keep.iter().map(|&i| phis[i].ln()).collect();
    let y: Vec<f64> = keep.iter().map(|&i| mean(&reps[i]).ln()).collect();
    let (slope, intercept) = ols(&x, &y)?;
    let mut rng = stream(seed, 0, Purpose::Other(0xb007));
    let mut slopes = Vec::with_capacity(resamples);
    let mut yb = vec![0.0; keep.len()];
    for _ in 0..resamples {
        let mut ok = true;
        for (j, &i) in keep.iter().enumerate() {
            let r = &reps[i];
            let m = (0..r.len())
                .map(|_| r[rng.random_range(0..r.len())])
                .sum::<f64>()
                / r.len() as f64;
            ok &= m > 0.0;
            yb[j] = m.max(f64::MIN_POSITIVE).ln();
        }
        if ok && let Some((s, _)) = ols(&x, &yb) {
            slopes.push(s);
        }
    }
    if slopes.is_empty() {
        return None;
    }
    slopes.sort_by(f64::total_cmp);
    let lo_phi = keep.iter().map(|&i| phis[i]).fold(f64::INFINITY, f64::min);
    let hi_phi = keep.iter().map(|&i| phis[i]).fold(0.0, f64::max);
    Some(Fit {
        slope,
        intercept,
        lo: quantile_sorted(&slopes, 0.025),
        hi: quantile_sorted(&slopes, 0.975),
        cells: keep.len(),
        phi_range: (lo_phi, hi_phi),
    })
}

/// Indices of the cells in the smallest decade of phi: phi <= 10 phi_min (at least 2 cells).
pub fn smallest_decade(phis: &[f64]) -> Vec<usize> {
    let m = phis.iter().cloned().fold(f64::INFINITY, f64::min);
    let mut idx: Vec<usize> = (0..phis.len())
        .filter(|&i| phis[i] <= 10.0 * m * (1.0 + 1e-9))
        .collect();
    if idx.len() < 2 {
        let mut all: Vec<usize> = (0..phis.len()).collect();
        all.sort_by(|a, b| phis[*a].total_cmp(&phis[*b]));
        idx = all.into_iter().take(2).collect();
    }
    idx
}

/// The two-sided (1 - alpha) Clopper-Pearson interval of a binomial proportion with `x`
/// successes in `n` trials: the Beta(x, n - x + 1) alpha/2 and Beta(x + 1, n - x) 1 - alpha/2
/// quantiles (0 at x = 0, 1 at x = n).
pub fn clopper_pearson(x: usize, n: usize, alpha: f64) -> (f64, f64) {
    use statrs::distribution::{Beta, ContinuousCDF};
    assert!(x <= n && n > 0, "clopper_pearson: need 0 <= x <= n, n > 0");
    let (xf, nf) = (x as f64, n as f64);
    let lo = if x == 0 {
        0.0
    } else {
        Beta::new(xf, nf - xf + 1.0)
            .expect("positive shapes")
            .inverse_cdf(alpha / 2.0)
    };
    let hi = if x == n {
        1.0
    } else {
        Beta::new(xf + 1.0, nf - xf)
            .expect("positive shapes")
            .inverse_cdf(1.0 - alpha / 2.0)
    };
    (lo, hi)
}

/// Arithmetic mean.
pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clopper_pearson_matches_r_binom_test() {
        // R: binom.test(7, 20)$conf.int = 0.1539092 0.5921885.
        let (lo, hi) = clopper_pearson(7, 20, 0.05);
        assert!((lo - 0.1539092).abs() < 1e-6 && (hi - 0.5921885).abs() < 1e-6);
        // Edge cases: x = 0 gives 1 - (alpha/2)^(1/n) as the upper end.
        let (lo, hi) = clopper_pearson(0, 10, 0.05);
        assert!(lo == 0.0 && (hi - (1.0 - 0.025f64.powf(0.1))).abs() < 1e-9);
        assert_eq!(clopper_pearson(10, 10, 0.05).1, 1.0);
    }
}
