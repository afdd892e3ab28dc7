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

/// The terminal width the default output of `verify` and `cliplaw` keeps to (`--wide` prints
/// every line whole).
pub const TERMINAL_COLUMNS: usize = 120;

/// `text` with every line longer than `width` characters broken at the last separator that fits
/// (" | ", "; ", ", ", then a space; the separator's space ends the line), each continuation
/// indented four spaces past the line's own indent. A word longer than the width stays whole.
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let indent = body.len() - body.trim_start().len();
        let pad = " ".repeat(indent + 4);
        let mut rest: &str = body;
        let mut first = true;
        loop {
            let lead = if first { "" } else { pad.as_str() };
            if lead.len() + rest.chars().count() <= width {
                out.push_str(lead);
                out.push_str(rest);
                break;
            }
            let room = width.saturating_sub(lead.len());
            let head: String = rest.chars().take(room + 1).collect();
            let cut = [" | ", "; ", ", ", " "]
                .iter()
                .filter_map(|sep| {
                    head.rfind(sep)
                        .filter(|&i| i > 0)
                        .map(|i| (i + sep.trim_end().len(), i + sep.len()))
                })
                .find(|&(end, _)| end <= room);
            let Some((end, next)) = cut else {
                out.push_str(lead);
                out.push_str(rest);
                break;
            };
            out.push_str(lead);
            out.push_str(&rest[..end]);
            out.push('\n');
            rest = &rest[next..];
            first = false;
        }
        out.push_str(nl);
    }
    out
}

#[cfg(test)]
mod wrap_tests {
    use super::wrap;

    #[test]
    fn long_lines_break_at_separators_and_short_ones_stay() {
        assert_eq!(wrap("short\n", 20), "short\n");
        assert_eq!(
            wrap("  aaaa bbbb | cccc dddd; eeee\n", 16),
            "  aaaa bbbb |\n      cccc dddd;\n      eeee\n"
        );
        let long = format!("{} end\n", "word ".repeat(60));
        let w = wrap(&long, 120);
        assert!(w.lines().all(|l| l.len() <= 120), "{w}");
        assert_eq!(
            w.split_whitespace().count(),
            long.split_whitespace().count()
        );
        // A single word wider than the width is kept whole rather than cut.
        assert_eq!(wrap(&"x".repeat(30), 10), "x".repeat(30));
    }
}
