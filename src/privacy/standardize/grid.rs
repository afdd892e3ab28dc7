//! The exact noisy sums of the private standardization (step 3 of [`super`]'s module doc) on
//! the OS-keyed generator of a release: the statistic on a grid, discrete Gaussian noise.
//!
//! Grid: gamma = 2^-k with k = [`grid_exponent`]`(sigma)`, the largest k in [0, 40] with
//! sigma 2^k <= 2^30 (public: sigma is). Each y_ij = clamp(x_ij, -C_j, C_j) / C_j in [-1, 1]
//! becomes m_ij = round(y_ij 2^k), an integer with |m_ij| <= 2^k (2^k is on the grid, so rounding
//! keeps the range), and its square w_ij = round(m_ij^2 / 2^k) <= 2^k; the count coordinate is
//! 2^k. So the row's integer vector (m_i, w_i, 2^k) has every coordinate in [-2^k, 2^k] and
//! L2 norm at most 2^k sqrt(2d + 1) = Delta_2 / gamma: the rounding is a per-row map into the same
//! box, and the sensitivity in grid units is exactly the real one divided by gamma. The rounding
//! moves y by at most gamma / 2 and y^2 by at most 3 gamma / 2.
//!
//! Noise: each integer sum plus N_Z(0, sigma_Z^2), sigma_Z^2 = sigma^2 / gamma^2 rounded up (by
//! 2^-40 relative and one ulp, which covers the f64 roundings of sigma = Delta_2 / sqrt(2 rho_g)),
//! drawn by [`crate::privacy::exact::discrete_gaussian`]. Independent discrete Gaussian noise of
//! variance sigma_Z^2 on an integer query of L2 sensitivity Delta_Z is Delta_Z^2 / (2 sigma_Z^2)
//! -zCDP (Canonne, Kamath & Steinke 2020, the multivariate discrete Gaussian), which here is
//! Delta_2^2 / (2 sigma^2) = rho_g, the continuous Gaussian's. The released sums are the noisy
//! integers times gamma (post-processing).

use rand::Rng;

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::privacy::exact;

/// k of the grid 2^-k: the largest k in [0, 40] with sigma 2^k <= 2^30 (module doc).
pub fn grid_exponent(sigma: f64) -> i32 {
    let mut k = 40;
    while k > 0 && sigma * 2f64.powi(k) > 1_073_741_824.0 {
        k -= 1;
    }
    k
}

/// The integer statistic (m, w, 2^k) of one row on the grid 2^-k (module doc).
pub fn grid_row(row: &[f64], bounds: &[f64], k: i32) -> Vec<i128> {
    let d = row.len();
    let one = 1i128 << k;
    let mut v = vec![0i128; 2 * d + 1];
    for (j, (&x, &c)) in row.iter().zip(bounds).enumerate() {
        let y = x.clamp(-c, c) / c;
        // |y| <= 1 and 2^k <= 2^40: y 2^k is exact and rounds into [-2^k, 2^k] (NaN gives 0).
        let m = ((y * one as f64).round() as i128).clamp(-one, one);
        let m2 = m * m;
        v[j] = m;
        v[d + j] = if k == 0 { m2 } else { (m2 + (one >> 1)) >> k };
    }
    v[2 * d] = one;
    v
}

/// sigma_Z^2 = sigma^2 2^(2k), rounded up (module doc), as an exact ratio of integers.
fn grid_variance(sigma: f64, k: i32) -> Result<(u128, u128)> {
    let v = (sigma * sigma * 2f64.powi(2 * k) * (1.0 + 2f64.powi(-40))).next_up();
    exact::ratio_of(v).ok_or_else(|| {
        Error::param(format!(
            "the standardization's noise sigma = {sigma} is outside the exact sampler's range"
        ))
    })
}

/// The released sums S + noise of step 3 on the grid (module doc) and the sigma used (the
/// declared one rounded up, in the data's units).
pub fn noisy_sums_exact<R: Rng + ?Sized>(
    data: &Dataset,
    bounds: &[f64],
    sigma: f64,
    rng: &mut R,
) -> Result<(Vec<f64>, f64)> {
    let k = grid_exponent(sigma);
    let mut s = vec![0i128; 2 * data.d + 1];
    for i in 0..data.n {
        for (a, v) in s.iter_mut().zip(grid_row(data.row(i), bounds, k)) {
            *a += v;
        }
    }
    let (a, b) = grid_variance(sigma, k)?;
    let gamma = 2f64.powi(-k);
    let mut out = Vec::with_capacity(s.len());
    for t in s {
        out.push((t + i128::from(exact::discrete_gaussian(rng, a, b)?)) as f64 * gamma);
    }
    Ok((out, (a as f64 / b as f64).sqrt() * gamma))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::standardize::l2_sensitivity;
    use crate::rng::{Purpose, stream};
    use rand::{RngExt, SeedableRng};

    /// The grid statistic keeps the declared sensitivity: for rows at random, at +-C_j, beyond
    /// and NaN-free extremes, at k = 0, 7, 24, 40, every coordinate lies in [-2^k, 2^k], the
    /// row's L2 norm is at most 2^k sqrt(2d + 1) (attained by a row at +-C_j), and m 2^-k is
    /// within 2^-(k+1) of y. Planted bug (m one too large: round(y 2^k) + 1): fails (at k = 0 a
    /// row gives m = 2 > 2^k).
    #[test]
    fn the_grid_statistic_keeps_the_sensitivity() {
        let mut r = stream(8, 0, Purpose::Data);
        for k in [0, 7, 24, 40] {
            let one = (1i128 << k) as f64;
            for d in [1usize, 3, 30] {
                let bounds: Vec<f64> = (0..d).map(|j| 0.5 + j as f64).collect();
                let mut rows: Vec<Vec<f64>> = (0..200)
                    .map(|_| {
                        bounds
                            .iter()
                            .map(|c| c * 3.0 * (r.random::<f64>() - 0.5))
                            .collect()
                    })
                    .collect();
                rows.push(bounds.clone());
                rows.push(bounds.iter().map(|c| -c).collect());
                rows.push(vec![1e300; d]);
                let cap = l2_sensitivity(d) * one;
                let mut attained = false;
                for row in &rows {
                    let v = grid_row(row, &bounds, k);
                    assert!(v.iter().all(|x| x.abs() as f64 <= one), "k {k}: {v:?}");
                    let norm = v.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
                    assert!(norm <= cap * (1.0 + 1e-12), "k {k} d {d}: {norm} > {cap}");
                    attained |= norm >= cap * (1.0 - 1e-12);
                    for (j, (&x, &c)) in row.iter().zip(&bounds).enumerate() {
                        let y = x.clamp(-c, c) / c;
                        assert!((v[j] as f64 / one - y).abs() <= 0.5 / one + 1e-15);
                    }
                }
                assert!(
                    attained,
                    "k {k} d {d}: a row at the bounds should attain the cap"
                );
            }
        }
    }

    /// The exact sums carry the declared noise: on fixed data (n = 100, d = 3, C = 4) with
    /// sigma = 2.5 (k = 28), 4000 releases from a fixed-seed ChaCha12; the error of S1 against
    /// the grid's exact sum has mean within 4 sigma / sqrt(K) of 0 and sample variance within
    /// 4 sqrt(2 / (K - 1)) = 8.9% of sigma^2; the count's error is a multiple of 2^-28 and the
    /// sigma reported is sigma within 1e-9. Planted bug (sigma_Z^2 without the 2^(2k): noise
    /// 2^-28 of the declared): fails (sigma used 9.3e-9 for 2.5).
    #[test]
    fn the_exact_sums_carry_the_declared_noise() {
        let d = 3;
        let data = Dataset::new(
            (0..300).map(|i| (i % 7) as f64).collect(),
            vec![0.0; 100],
            d,
        )
        .expect("a 100 x 3 data set");
        let bounds = vec![4.0; d];
        let sigma = 2.5;
        let k = grid_exponent(sigma);
        assert_eq!(k, 28);
        let exact: i128 = (0..data.n)
            .map(|i| grid_row(data.row(i), &bounds, k)[0])
            .sum();
        let exact = exact as f64 * 2f64.powi(-k);
        let mut r = rand::rngs::StdRng::seed_from_u64(5);
        let kk = 4000;
        let mut e = Vec::with_capacity(kk);
        for _ in 0..kk {
            let (s, used) = noisy_sums_exact(&data, &bounds, sigma, &mut r).unwrap();
            assert!(
                (used / sigma - 1.0).abs() < 1e-9 && used >= sigma,
                "sigma {used}"
            );
            let count_err = (s[2 * d] - 100.0) * 2f64.powi(k);
            assert_eq!(count_err, count_err.round());
            e.push(s[0] - exact);
        }
        let m = e.iter().sum::<f64>() / kk as f64;
        let v = e.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (kk - 1) as f64;
        assert!(m.abs() <= 4.0 * sigma / (kk as f64).sqrt(), "mean {m}");
        let tol = 4.0 * (2.0 / (kk - 1) as f64).sqrt();
        assert!(
            (v / (sigma * sigma) - 1.0).abs() <= tol,
            "var {v} vs {}",
            sigma * sigma
        );
    }
}
