//! How the clip-law report and figures print numbers: fixed decimals without the sign of a
//! value that rounds to zero, and four significant digits.

/// `v` with `d` decimals, without the sign of a value that rounds to zero ("-0.00" reads as a
/// negative slope).
pub fn fixed(v: f64, d: usize) -> String {
    let s = format!("{v:.d$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

/// A number for tables: 4 significant digits.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e4).contains(&a) {
        format!("{v:.3e}")
    } else {
        // Four significant digits; counted again after rounding, so 0.99999 prints as 1.000
        // rather than 1.0000.
        let digits = |a: f64| {
            if a == 0.0 {
                3
            } else {
                (3 - a.log10().floor() as i32).max(0) as usize
            }
        };
        let first = digits(a);
        let rounded: f64 = format!("{a:.first$}").parse().unwrap_or(a);
        let d = digits(rounded).min(first);
        format!("{v:.d$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slope that rounds to zero prints without a sign.
    #[test]
    fn fixed_drops_the_sign_of_zero() {
        assert_eq!(fixed(-0.0001, 2), "0.00");
        assert_eq!(fixed(-0.0, 3), "0.000");
        assert_eq!(fixed(-0.004, 2), "0.00");
        assert_eq!(fixed(-0.006, 2), "-0.01");
        assert_eq!(fixed(0.5, 2), "0.50");
    }

    /// Four significant digits, also when rounding carries into the next power of ten.
    #[test]
    fn num_keeps_four_significant_digits() {
        for (v, want) in [
            (0.999_99, "1.000"),
            (9.999_96, "10.00"),
            (0.123_456, "0.1235"),
            (1.5, "1.500"),
            (-0.999_99, "-1.000"),
            (0.0, "0.000"),
            (12_345.0, "1.234e4"),
        ] {
            assert_eq!(num(v), want, "{v}");
        }
    }
}
