//! The exponent fit: OLS slope of log OR on log phi, with a paired percentile bootstrap 95%
//! interval. Replicate r of every cell of a series is one data set (or one fixed data set) and
//! one set of common random numbers (the same sampling, noise and iterate streams at every phi),
//! so the cells are correlated through r: a resample draws R replicate indices once and every
//! cell (and every series resampled jointly, e.g. a control) takes the mean over those same
//! replicates.

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

impl Fit {
    /// Half-width of the 95% interval.
    pub fn half_width(&self) -> f64 {
        0.5 * (self.hi - self.lo)
    }
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

/// One series to fit: `reps[i][r]` is replicate r's risk at phi `phis[i]`.
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    /// phi of each cell.
    pub phis: &'a [f64],
    /// Replicate risks of each cell, in replicate order.
    pub reps: &'a [Vec<f64>],
}

impl Sample<'_> {
    /// Cells with replicates and a positive mean.
    fn kept(&self) -> Vec<usize> {
        (0..self.phis.len())
            .filter(|&i| !self.reps[i].is_empty() && mean(&self.reps[i]) > 0.0)
            .collect()
    }

    /// OLS (slope, intercept) of log mean on log phi over `keep`, with cell means over the
    /// replicates `idx` (None: all); None when a mean is not positive.
    fn line(&self, keep: &[usize], idx: Option<&[usize]>, y: &mut Vec<f64>) -> Option<(f64, f64)> {
        y.clear();
        for &i in keep {
            let r = &self.reps[i];
            let m = match idx {
                Some(idx) => idx.iter().map(|&j| r[j]).sum::<f64>() / idx.len() as f64,
                None => mean(r),
            };
            if m.is_nan() || m <= 0.0 {
                return None;
            }
            y.push(m.ln());
        }
        let x: Vec<f64> = keep.iter().map(|&i| self.phis[i].ln()).collect();
        ols(&x, y)
    }
}

/// The paired bootstrap of several series over one set of R replicates: `fits[j]` is series j's
/// fit, and `slopes[j][b]` its slope in resample b (NaN where a resampled mean was not
/// positive), so that differences of slopes between series get paired intervals.
#[derive(Debug, Clone)]
pub struct JointBootstrap {
    /// Each series' fit with its paired interval.
    pub fits: Vec<Option<Fit>>,
    slopes: Vec<Vec<f64>>,
}

impl JointBootstrap {
    /// Resamples replicate indices 0..R with replacement `resamples` times (R: the smallest
    /// replicate count over the series' cells; every cell of a finished spec has R) and refits
    /// every series on each resample. `seed` makes it reproducible.
    pub fn new(series: &[Sample<'_>], resamples: usize, seed: u64) -> JointBootstrap {
        let keeps: Vec<Vec<usize>> = series.iter().map(Sample::kept).collect();
        let r = series
            .iter()
            .zip(&keeps)
            .flat_map(|(s, k)| k.iter().map(|&i| s.reps[i].len()))
            .min()
            .unwrap_or(0);
        let mut rng = stream(seed, 0, Purpose::Other(0xb007));
        let mut slopes = vec![Vec::with_capacity(resamples); series.len()];
        let mut idx = vec![0usize; r];
        let mut y = Vec::new();
        if r > 0 {
            for _ in 0..resamples {
                for j in idx.iter_mut() {
                    *j = rng.random_range(0..r);
                }
                for (j, s) in series.iter().enumerate() {
                    let b = s.line(&keeps[j], Some(&idx), &mut y);
                    slopes[j].push(b.map_or(f64::NAN, |l| l.0));
                }
            }
        }
        let fits = series
            .iter()
            .zip(&keeps)
            .zip(&slopes)
            .map(|((s, keep), b)| {
                let (slope, intercept) = s.line(keep, None, &mut Vec::new())?;
                let (lo, hi) = interval(b.iter().copied())?;
                let phi = keep.iter().map(|&i| s.phis[i]);
                Some(Fit {
                    slope,
                    intercept,
                    lo,
                    hi,
                    cells: keep.len(),
                    phi_range: (
                        phi.clone().fold(f64::INFINITY, f64::min),
                        phi.fold(0.0, f64::max),
                    ),
                })
            })
            .collect();
        JointBootstrap { fits, slopes }
    }

    /// slope(a) - slope(b) with its paired 95% interval (the resamples where both fitted).
    pub fn difference(&self, a: usize, b: usize) -> Option<Difference> {
        let (fa, fb) = (self.fits[a].as_ref()?, self.fits[b].as_ref()?);
        let d = self.slopes[a]
            .iter()
            .zip(&self.slopes[b])
            .map(|(x, y)| x - y);
        let (lo, hi) = interval(d)?;
        Some(Difference {
            value: fa.slope - fb.slope,
            lo,
            hi,
        })
    }
}

/// A difference of two slopes with its paired bootstrap 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// The difference of the point estimates.
    pub value: f64,
    /// 2.5% quantile.
    pub lo: f64,
    /// 97.5% quantile.
    pub hi: f64,
}

/// The 2.5% and 97.5% quantiles of the finite values; None when there are none.
pub fn interval(v: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let mut v: Vec<f64> = v.filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some((quantile_sorted(&v, 0.025), quantile_sorted(&v, 0.975)))
}

/// Fits log(mean risk) on log phi over the cells `phis[i]` with replicate risks `reps[i]`,
/// with the paired bootstrap interval ([`JointBootstrap`] of one series); cells whose mean is
/// not positive are left out. `seed` makes the bootstrap reproducible.
pub fn fit(phis: &[f64], reps: &[Vec<f64>], resamples: usize, seed: u64) -> Option<Fit> {
    JointBootstrap::new(&[Sample { phis, reps }], resamples, seed)
        .fits
        .pop()
        .flatten()
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
    use rand_distr::{Distribution, StandardNormal};

    /// Risks risk[i][r] = phi_i^b (1 + s (rho Z_r + sqrt(1 - rho^2) E_ir)), Z and E standard
    /// normal: replicate r shares Z_r across the cells (correlation rho^2 between cells).
    fn correlated(b: f64, s: f64, rho: f64, reps: usize, seed: u64) -> (Vec<f64>, Vec<Vec<f64>>) {
        let phis: Vec<f64> = (0..5)
            .map(|i| 1e-2 * 10f64.powf(-(i as f64) / 4.0))
            .collect();
        let mut rng = stream(seed, 0, Purpose::Other(1));
        let z: Vec<f64> = (0..reps).map(|_| StandardNormal.sample(&mut rng)).collect();
        let risks = phis
            .iter()
            .map(|p| {
                z.iter()
                    .map(|zr| {
                        let e: f64 = StandardNormal.sample(&mut rng);
                        p.powf(b) * (1.0 + s * (rho * zr + (1.0 - rho * rho).sqrt() * e))
                    })
                    .collect()
            })
            .collect();
        (phis, risks)
    }

    /// The paired bootstrap against a case with known correlation. To first order in s, the
    /// log cell means are b x_i + s rho Z_bar + s sqrt(1 - rho^2) E_bar_i, so the common Z_bar
    /// cancels from the slope and sd(slope) = s sqrt((1 - rho^2) / (R Sxx)), Sxx = sum (x_i -
    /// x_bar)^2. An unpaired bootstrap (cells resampled independently) would give
    /// s / sqrt(R Sxx), 2.3x wider at rho = 0.9. Tolerance: the bootstrap's half-width estimates
    /// 1.96 sd with relative error about 1/sqrt(2R) = 3.5% from the sample (R = 400) plus about
    /// 2.5% from 4000 resamples' quantiles; 4 such errors (combined 4.3%) give 17%: we allow 20%.
    #[test]
    fn paired_interval_matches_the_known_correlation() {
        let (b, s, rho, r) = (0.5, 0.05, 0.9, 400);
        let (phis, reps) = correlated(b, s, rho, r, 3);
        let fit = fit(&phis, &reps, 4000, 11).unwrap();
        let x: Vec<f64> = phis.iter().map(|p| p.ln()).collect();
        let mx = x.iter().sum::<f64>() / x.len() as f64;
        let sxx: f64 = x.iter().map(|v| (v - mx).powi(2)).sum();
        let sd = s * ((1.0 - rho * rho) / (r as f64 * sxx)).sqrt();
        let ratio = fit.half_width() / (1.96 * sd);
        assert!((ratio - 1.0).abs() < 0.2, "half-width / expected = {ratio}");
        // The slope itself: within 4 sd of b.
        assert!((fit.slope - b).abs() < 4.0 * sd, "slope {}", fit.slope);
    }

    /// Two series with the same noise per replicate differ by an exact slope difference: the
    /// paired interval of the difference collapses to it, while each series' own interval
    /// does not.
    #[test]
    fn paired_difference_cancels_common_noise() {
        let (phis, a) = correlated(0.5, 0.05, 0.0, 50, 5);
        let c: Vec<Vec<f64>> = a
            .iter()
            .zip(&phis)
            .map(|(r, p)| r.iter().map(|v| v * p.powf(0.25)).collect())
            .collect();
        let joint = JointBootstrap::new(
            &[
                Sample {
                    phis: &phis,
                    reps: &a,
                },
                Sample {
                    phis: &phis,
                    reps: &c,
                },
            ],
            1000,
            2,
        );
        let d = joint.difference(1, 0).unwrap();
        assert!((d.value - 0.25).abs() < 1e-9 && d.hi - d.lo < 1e-9, "{d:?}");
        assert!(joint.fits[0].as_ref().unwrap().half_width() > 1e-3);
    }

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
