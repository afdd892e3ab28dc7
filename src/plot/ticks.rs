//! Tick labels: plain numbers ("0.5", "2", "100") where an axis stays inside [0.01, 10^4],
//! powers of ten ("10⁻³", "2×10⁻³") elsewhere; never "5e-1".

/// Smallest and largest value a log axis may show as plain numbers: below 0.01 a plain number
/// needs too many zeros to read at a glance, above 10^4 too many digits.
const PLAIN: (f64, f64) = (0.01, 1e4);

/// v = m 10^e with an integer mantissa m in 1..=9 (to 1e-3 relative), or None.
pub(super) fn mantissa(v: f64) -> Option<(u32, i32)> {
    if !(v > 0.0 && v.is_finite()) {
        return None;
    }
    let e = v.log10().floor();
    let m = v / 10f64.powf(e);
    let r = m.round();
    if (m - r).abs() >= 1e-3 * r {
        return None;
    }
    // m just below 10 rounds up to the next decade
    let (r, e) = if r >= 10.0 { (1.0, e + 1.0) } else { (r, e) };
    Some((r as u32, e as i32))
}

/// The grid of a log axis over [lo, hi]: every m 10^e (m = 1..9) inside it, ascending.
///
/// Plotters' own log-axis key points can leave a whole decade without a tick (a verify figure
/// over phi in [0.002, 0.1] had no label left of 1e-2), so the axes get theirs from here.
pub fn log_grid(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return Vec::new();
    }
    let (e0, e1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    (e0..=e1)
        .flat_map(|e| (1..=9).map(move |m| m as f64 * 10f64.powi(e)))
        .filter(|&v| v >= lo && v <= hi)
        .collect()
}

/// A number as people write it: at most 6 significant digits, no trailing zeros, no exponent
/// ("0.5", "2", "100", "97.5", "0.002").
pub fn plain(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() {
            "0".into()
        } else {
            v.to_string()
        };
    }
    let decimals = (5 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" { "0".into() } else { s }
}

/// m 10^e with the exponent as superscript: "10⁻³" for m = 1, "2×10⁻³" otherwise.
pub fn power(m: u32, e: i32) -> String {
    let sup: String = e
        .to_string()
        .chars()
        .map(|c| match c {
            '-' => '⁻',
            d => ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'][d as usize - '0' as usize],
        })
        .collect();
    if m == 1 {
        format!("10{sup}")
    } else {
        format!("{m}×10{sup}")
    }
}

/// How one log axis over [lo, hi] labels its grid values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogTicks {
    /// Plain numbers ([`plain`]) rather than powers of ten ([`power`]).
    plain: bool,
    /// Which mantissas carry a label: every one (a narrow axis, where 1, 2 and 5 would give
    /// fewer than three labels), 1, 2, 5 (up to four and a half decades) or 1 alone (a wider
    /// axis, where "2×10⁻³" labels would crowd).
    marks: Marks,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marks {
    All,
    OneTwoFive,
    Decades,
}

impl LogTicks {
    /// The labelling of a log axis over [lo, hi].
    pub fn new(lo: f64, hi: f64) -> LogTicks {
        let grid = log_grid(lo, hi);
        let count = |ms: &[u32]| {
            grid.iter()
                .filter(|&&g| mantissa(g).is_some_and(|(m, _)| ms.contains(&m)))
                .count()
        };
        let span = if lo > 0.0 && hi > lo {
            (hi / lo).log10()
        } else {
            0.0
        };
        let marks = if count(&[1, 2, 5]) < 3 {
            Marks::All
        } else if span > 4.5 && count(&[1]) >= 4 {
            Marks::Decades
        } else {
            Marks::OneTwoFive
        };
        let plain = grid
            .iter()
            .all(|&g| g >= PLAIN.0 * (1.0 - 1e-9) && g <= PLAIN.1 * (1.0 + 1e-9));
        LogTicks { plain, marks }
    }

    /// The label of grid value v, or "" where it carries none.
    pub fn label(self, v: f64) -> String {
        let Some((m, e)) = mantissa(v) else {
            return String::new();
        };
        let shown = match self.marks {
            Marks::All => true,
            Marks::OneTwoFive => [1, 2, 5].contains(&m),
            Marks::Decades => m == 1,
        };
        match (shown, self.plain) {
            (false, _) => String::new(),
            (true, true) => plain(v),
            (true, false) => power(m, e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(lo: f64, hi: f64) -> Vec<String> {
        let t = LogTicks::new(lo, hi);
        log_grid(lo, hi)
            .iter()
            .map(|&v| t.label(v))
            .filter(|l| !l.is_empty())
            .collect()
    }

    /// The x axis of a verify figure over phi in [0.002, 0.1] (padded): every decade it crosses
    /// has grid lines, and 2, 5 and 1 times each power of ten are labelled, as powers of ten.
    #[test]
    fn log_axis_labels_every_decade_as_powers_of_ten() {
        let (lo, hi) = (0.002 / 1.25, 0.1 * 1.25);
        let grid = log_grid(lo, hi);
        assert_eq!(grid.first().map(|v| mantissa(*v)), Some(Some((2, -3))));
        assert_eq!(grid.last().map(|v| mantissa(*v)), Some(Some((1, -1))));
        assert_eq!(grid.len(), 8 + 9 + 1);
        assert_eq!(
            labels(lo, hi),
            ["2×10⁻³", "5×10⁻³", "10⁻²", "2×10⁻²", "5×10⁻²", "10⁻¹"].map(String::from)
        );
    }

    /// An axis inside [0.01, 10^4] reads as plain numbers: 0.5 is "0.5", 2 is "2", 100 is "100".
    #[test]
    fn plain_numbers_where_the_axis_allows() {
        assert_eq!(
            labels(0.05, 500.0),
            [
                "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "50", "100", "200", "500"
            ]
            .map(String::from)
        );
        assert_eq!(labels(0.25, 0.45), ["0.3", "0.4"].map(String::from));
        // Inside a decade with only 0.05 and 0.1 of 1, 2, 5: every grid value.
        assert_eq!(
            labels(0.028, 0.105),
            [
                "0.03", "0.04", "0.05", "0.06", "0.07", "0.08", "0.09", "0.1"
            ]
            .map(String::from)
        );
        for (v, s) in [(0.5, "0.5"), (2.0, "2"), (100.0, "100"), (97.5, "97.5")] {
            assert_eq!(plain(v), s);
        }
        assert_eq!(plain(0.30000000000000004), "0.3");
        assert_eq!(plain(-0.0), "0");
        assert_eq!(plain(99.99999999), "100");
    }

    /// Below 0.01 a decade is "10⁻³" (superscript), and no axis ever prints "5e-1" style.
    #[test]
    fn no_exponent_notation_on_any_axis() {
        assert_eq!(power(1, -3), "10⁻³");
        assert_eq!(power(5, 2), "5×10²");
        assert_eq!(LogTicks::new(1e-4, 1e-2).label(1e-3), "10⁻³");
        // A wide axis (more than four and a half decades) labels the decades only.
        assert_eq!(
            labels(3e-5, 5.0),
            ["10⁻⁴", "10⁻³", "10⁻²", "10⁻¹", "10⁰"].map(String::from)
        );
        let mut lo = 1e-6;
        while lo < 1e3 {
            for f in [1.7, 4.0, 30.0, 1e4] {
                for l in labels(lo, lo * f) {
                    assert!(!l.contains('e'), "'{l}' on [{lo}, {}]", lo * f);
                }
            }
            lo *= 3.1;
        }
    }
}
