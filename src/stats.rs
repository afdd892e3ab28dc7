//! The one empirical quantile of the crate.

/// The empirical q-quantile (q in [0, 1]) of `sorted` (ascending, non-empty), by linear
/// interpolation between order statistics at rank h = q (n - 1): x_(lo) + (h - lo)(x_(lo+1) - x_(lo)).
/// This is the "linear" definition (Hyndman and Fan's type 7, numpy's and R's default):
/// q = 0 gives the minimum, q = 1 the maximum. Percentile p is `quantile_sorted(v, p / 100)`.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    let h = q * (n - 1) as f64;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// [`quantile_sorted`] of unsorted values (sorts a copy; NaN-free input).
pub fn quantile(values: &[f64], q: f64) -> f64 {
    let mut s = values.to_vec();
    s.sort_by(f64::total_cmp);
    quantile_sorted(&s, q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_interpolation_between_order_statistics() {
        let v = [1.0, 2.0, 4.0, 8.0];
        assert_eq!(quantile_sorted(&v, 0.0), 1.0);
        assert_eq!(quantile_sorted(&v, 1.0), 8.0);
        // h = 0.5 * 3 = 1.5: halfway between 2 and 4.
        assert_eq!(quantile_sorted(&v, 0.5), 3.0);
        // h = 0.9 * 3 = 2.7: 4 + 0.7 * 4.
        assert!((quantile_sorted(&v, 0.9) - 6.8).abs() < 1e-12);
        assert_eq!(quantile(&[8.0, 1.0, 4.0, 2.0], 0.5), 3.0);
        assert_eq!(quantile_sorted(&[5.0], 0.3), 5.0);
    }
}
