//! Log-space arithmetic and Gaussian tails accurate far into the tail.

/// The privacy loss of one step of the Poisson-subsampled Gaussian in the remove direction,
/// log(1 - q + q e^u), where u = (2x - 1) / (2 z^2) is the loss of the Gaussian N(1, z^2) against
/// N(0, z^2) at x (the log of the density ratio of P = (1 - q) N(0, z^2) + q N(1, z^2) to
/// Q = N(0, z^2); module doc of [`super::pld`]). Computed as log_add(log1p(-q), log q + u), which
/// stays accurate for q near 0 and u large; exactly u at q = 1. Shared by the PLD accountant's
/// discretization and the privacy audit's likelihood-ratio statistic.
pub(crate) fn subsampled_gaussian_loss(q: f64, u: f64) -> f64 {
    if q == 1.0 {
        u
    } else {
        log_add((-q).ln_1p(), q.ln() + u)
    }
}

/// log(e^a + e^b).
pub fn log_add(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        // Never let a NaN turn into a small value downstream: the callers sum positive terms,
        // so an undefined term makes the sum unbounded (conservative).
        return f64::INFINITY;
    }
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    if lo == f64::NEG_INFINITY || hi == f64::INFINITY {
        // inf + inf would give inf - inf = NaN below.
        return hi;
    }
    hi + (lo - hi).exp().ln_1p()
}

/// log(e^a - e^b) for a >= b.
pub fn log_sub(a: f64, b: f64) -> f64 {
    if b == f64::NEG_INFINITY {
        return a;
    }
    if a <= b {
        return f64::NEG_INFINITY;
    }
    a + (-(b - a).exp()).ln_1p()
}

/// Where [`log_erfc`] leaves libm's erfc for the asymptotic series: erfc(26) ~ 5e-296 is still a
/// normal double (erfc underflows to subnormals near x = 26.6), and the series below is exact to
/// double precision from here on.
const LOG_ERFC_SWITCH: f64 = 26.0;

/// log erfc(x), finite for all x.
pub fn log_erfc(x: f64) -> f64 {
    if x < LOG_ERFC_SWITCH {
        libm::erfc(x).ln()
    } else {
        // Asymptotic series (Abramowitz and Stegun 7.1.23) erfc(x) = e^{-x^2}/(x sqrt(pi)) S,
        // S = 1 - 1/(2x^2) + 3/(4x^4) - 15/(8x^6) + 105/(16x^8) - 945/(32x^10), coefficients
        // (-1)^m (2m - 1)!! / 2^m; the error is below the first omitted term,
        // 10395/(64 x^12) < 2e-15 relative for x >= 26.
        let r = 1.0 / (x * x);
        let s = r * (-0.5 + r * (0.75 + r * (-1.875 + r * (6.5625 + r * -29.53125))));
        -x * x - (x * std::f64::consts::PI.sqrt()).ln() + s.ln_1p()
    }
}

/// P(N(0,1) > x).
pub fn norm_sf(x: f64) -> f64 {
    0.5 * libm::erfc(x / std::f64::consts::SQRT_2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    // The references keep mpmath's digits as printed, beyond f64's precision.
    #[allow(clippy::excessive_precision)]
    fn log_erfc_matches_high_precision_values_on_both_sides_of_the_switch() {
        // log erfc(x) by mpmath at 40 digits (`mp.log(mp.erfc(x))`). The tolerance is 4 ulp of
        // the value (|value| x 8.9e-16): a wrong series coefficient moves x = 26 by >= 3e-12
        // (the 105/16 term) up to 1e-7 (the 3/4 term), far outside it; so would switching at a
        // point where the truncated series is off (at x = 20, 2.5e-10 with four terms).
        for (x, want) in [
            (20.0, -403.569_343_334_104_234_962_968_8),
            (25.9, -674.637_351_895_319_178_967_361_9),
            (26.0, -679.831_199_763_194_230_262_387_1),
            (26.5, -706.100_220_410_148_086_605_048_7),
            (27.0, -732.868_886_507_897_410_976_370_8),
            (30.0, -903.974_117_110_643_878_079_600_2),
            (40.0, -1_604.261_556_653_273_555_659_814),
            (100.0, -10_005.177_585_122_664_330_47),
            (1000.0, -1_000_007.480_120_721_906_212_141),
            (1e5, -10_000_000_012.085_290_407_944_93),
        ] {
            let (x, want): (f64, f64) = (x, want);
            let got = log_erfc(x);
            let tol = 4.0 * f64::EPSILON * want.abs();
            assert!((got - want).abs() <= tol, "x = {x}: {got} vs {want}");
        }
        // The two branches agree where they meet.
        let below = libm::erfc(LOG_ERFC_SWITCH).ln();
        let above = log_erfc(LOG_ERFC_SWITCH);
        assert!(
            (below - above).abs() <= 4.0 * f64::EPSILON * above.abs(),
            "{below} vs {above}"
        );
    }

    #[test]
    fn log_add_never_nan() {
        assert_eq!(log_add(f64::INFINITY, f64::INFINITY), f64::INFINITY);
        assert_eq!(log_add(f64::NAN, 0.0), f64::INFINITY);
        assert_eq!(
            log_add(f64::NEG_INFINITY, f64::NEG_INFINITY),
            f64::NEG_INFINITY
        );
    }

    #[test]
    fn log_add_sub_roundtrip() {
        let (a, b) = (-3.0f64, -5.0f64);
        let s = log_add(a, b);
        assert!((s - (a.exp() + b.exp()).ln()).abs() < 1e-14);
        assert!((log_sub(s, b) - a).abs() < 1e-13);
    }
}
#[cfg(test)]
#[test]
fn erfc_is_accurate_to_a_few_ulp() {
    // mpmath (30 digits). statrs 0.19's erfc is off by ~1e-10 relative at x = 0.5, which shows up
    // as spurious atoms in the PLD's second differences; libm's (musl) erfc is within 1e-15.
    for (x, want) in [
        (0.5, 0.479_500_122_186_953_5),
        (0.7, 0.322_198_806_162_581_6),
        (1.0, 0.157_299_207_050_285_13),
        (2.0, 4.677_734_981_047_266e-3),
        (5.0, 1.537_459_794_428_035e-12),
    ] {
        let got = libm::erfc(x);
        assert!(
            ((got - want) / want).abs() < 1e-15,
            "x={x}: {got} vs {want}"
        );
    }
}
