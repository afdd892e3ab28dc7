//! How reports and figures print numbers, in one place: fixed decimals without the sign of a
//! value that rounds to zero ("-0.00" reads as a negative slope), a signed form for
//! differences, and four significant digits. `verify`, `cliplaw`, `worstcase` and the clip-norm
//! study all print through it.

/// `v` with `d` decimals, without the sign of a value that rounds to zero ("-0.00" reads as a
/// negative slope).
pub fn fixed(v: f64, d: usize) -> String {
    let s = format!("{v:.d$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

/// `v` with `d` decimals and an explicit sign (`+0.01`, `-0.03`) for differences and slopes; a
/// value that rounds to zero prints unsigned (`0.00`), as in [`fixed`].
pub fn signed(v: f64, d: usize) -> String {
    let s = fixed(v, d);
    if s.starts_with('-') || !v.is_finite() || s.chars().all(|c| c == '0' || c == '.') {
        s
    } else {
        format!("+{s}")
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

    /// Differences carry a sign unless they round to zero.
    #[test]
    fn signed_marks_the_sign_but_not_of_zero() {
        assert_eq!(signed(0.0123, 2), "+0.01");
        assert_eq!(signed(-0.0301, 2), "-0.03");
        assert_eq!(signed(-0.004, 2), "0.00");
        assert_eq!(signed(0.004, 2), "0.00");
        assert_eq!(signed(-0.0, 2), "0.00");
        assert_eq!(signed(1.5, 1), "+1.5");
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
