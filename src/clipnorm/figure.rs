//! Figure 1-style plot: test accuracy against the clip norm (one categorical x position per
//! tau, labelled like the paper's "0.1", "0%", "100%"), mean +- sd error bars (the y label
//! says so), one series per epsilon, the non-private baseline as a dashed line, and a guide
//! line at G_1. The y axis has headroom above 100 % (no tick label there), so bars and markers
//! at 100 % stay inside the frame. Only the data preparation is here;
//! [`crate::plot::CategoryFigure`] draws it.

use std::path::Path;

use super::table::{Entry, StudyTable};
use crate::error::Result;
use crate::plot::{CategoryFigure, Corner, Palette, Series, Style};

/// Writes the figure to `png` and `svg`.
pub fn draw(t: &StudyTable, png: &Path, svg: &Path) -> Result<()> {
    figure(t).save(png, svg)
}

/// The label of the line between the clip norms at most G_1 and those above it.
pub const G1_GUIDE: &str = "τ <= G_1 | τ > G_1";

/// The study's table as a figure: accuracies in percent.
pub fn figure(t: &StudyTable) -> CategoryFigure {
    let k = t.taus.len();
    let (ylo, yhi) = accuracy_window(t);
    // G_1 marker: between the last tau <= G_1 and the first above.
    let guides = match t.taus.iter().rposition(|p| p.le_g1 == Some(true)) {
        Some(i) if i + 1 < k => vec![(i as f64 + 0.5, G1_GUIDE.to_string())],
        _ => Vec::new(),
    };
    let ne = t.columns.len();
    let mut series: Vec<Series> = t
        .columns
        .iter()
        .enumerate()
        .map(|(ci, c)| {
            let entries = c.entries.iter().map(Option::as_ref);
            epsilon_series(ci, ne, c.epsilon, entries, Style::JoinedPoints)
        })
        .collect();
    if let Some(b) = &t.baseline {
        series.push(baseline_series(b.mean, k));
    }
    CategoryFigure {
        title: format!("{} ({}): test accuracy vs clip norm", t.name, t.model),
        x_label: if t.taus.iter().any(|p| p.pct.is_some()) {
            "clip norm τ (% = percentile of the G_i)"
        } else {
            "clip norm τ"
        }
        .into(),
        y_label: accuracy_label(t.runs),
        categories: t.taus.iter().map(|p| p.short_label()).collect(),
        y_range: (ylo, yhi),
        guides,
        series,
        palette: Palette::Tableau,
        legend: Corner::LowerLeft,
        notes: empty_columns(k, t.columns.iter().map(|c| c.entries.as_slice())),
        y_label_max: Some(100.0),
        size: (900, 560),
    }
}

/// The y label of both figures of a study: what is plotted and what the error bars are.
pub(crate) fn accuracy_label(runs: usize) -> String {
    format!("test accuracy (%): mean ± sd over {runs} runs, cut at 100")
}

/// An "n/a" note under every category (0..k) where no column has an entry, so an empty
/// column reads as "did not run" rather than as a missing point.
pub(crate) fn empty_columns<'e>(
    k: usize,
    columns: impl Iterator<Item = &'e [Option<Entry>]> + Clone,
) -> Vec<(f64, String)> {
    (0..k)
        .filter(|&i| {
            columns
                .clone()
                .all(|c| c.get(i).is_none_or(|e| e.is_none()))
        })
        .map(|i| (i as f64, "n/a".to_string()))
        .collect()
}

/// The accuracy window shown (percent): every bar ([`sd_bar`]) and the baseline, padded by 8% of the
/// span (at least half a point), from at least 0 and with the padding kept above 100 (the
/// frame must not cut bars or markers at 100 %); all of [0, 100] without data.
fn accuracy_window(t: &StudyTable) -> (f64, f64) {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for c in &t.columns {
        for e in c.entries.iter().flatten() {
            let (blo, bhi) = sd_bar(e);
            lo = lo.min(blo);
            hi = hi.max(bhi);
        }
    }
    if let Some(b) = &t.baseline {
        lo = lo.min(100.0 * b.mean);
        hi = hi.max(100.0 * b.mean);
    }
    if !lo.is_finite() {
        return (0.0, 100.0);
    }
    let pad = ((hi - lo) * 0.08).max(0.5);
    ((lo - pad).max(0.0), hi + pad)
}

/// Epsilon number `ci` of `ne` as a series over the categories (taus or methods): mean +- sd in
/// percent at category i, offset within the category so the epsilons sit side by side, 0.12
/// apart, and their bars do not overlap. Both figures of a study draw their series here.
pub(crate) fn epsilon_series<'e>(
    ci: usize,
    ne: usize,
    epsilon: f64,
    entries: impl Iterator<Item = Option<&'e Entry>>,
    style: Style,
) -> Series {
    let ne = ne.max(1) as f64;
    let dx = (ci as f64 - (ne - 1.0) / 2.0) * 0.12;
    let pts: Vec<(f64, f64, (f64, f64))> = entries
        .enumerate()
        .filter_map(|(i, e)| e.map(|e| (i as f64 + dx, 100.0 * e.mean, sd_bar(e))))
        .collect();
    Series {
        label: Some(format!("ε = {epsilon}")),
        points: pts.iter().map(|&(x, m, _)| (x, m)).collect(),
        errors: pts.iter().map(|&(_, _, b)| b).collect(),
        style,
        color: ci,
    }
}

/// The bar of an accuracy in percent: mean +- sd, cut to [0, 100] (an accuracy cannot leave
/// it, so a bar beyond 100 would show an impossible spread).
fn sd_bar(e: &Entry) -> (f64, f64) {
    let (m, s) = (100.0 * e.mean, 100.0 * e.sd);
    ((m - s).max(0.0), (m + s).min(100.0))
}

/// The non-private baseline's accuracy `mean` as a reference line across `k` categories.
pub(crate) fn baseline_series(mean: f64, k: usize) -> Series {
    let y = 100.0 * mean;
    Series {
        label: Some(format!("non-private ({y:.1} %)")),
        points: vec![(-0.5, y), (k as f64 - 0.5, y)],
        errors: Vec::new(),
        style: Style::Reference,
        color: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clipnorm::TauPoint;
    use crate::clipnorm::table::{Entry, EpsColumn};

    fn entry(mean: f64, sd: f64) -> Option<Entry> {
        Some(Entry {
            mean,
            sd,
            eta: 0.1,
            runs: 3,
            diverged: 0,
        })
    }

    fn table() -> StudyTable {
        let tp = |tau, pct, le_g1| TauPoint { tau, pct, le_g1 };
        StudyTable {
            name: "toy".into(),
            model: "softmax regression".into(),
            n_train: 100,
            n_test: 20,
            d: 2,
            classes: 2,
            batch: 10.0,
            steps_per_epoch: 10,
            epochs: 2,
            runs: 3,
            delta: 1e-5,
            accountant: "rdp".into(),
            learning_rates: vec![0.1],
            g_percentiles: None,
            g1: Some(2.0),
            gn: Some(5.0),
            taus: vec![
                tp(0.1, None, Some(true)),
                tp(2.0, Some(0.0), Some(true)),
                tp(5.0, Some(100.0), Some(false)),
            ],
            columns: vec![
                EpsColumn {
                    epsilon: 1.0,
                    z: 2.0,
                    entries: vec![entry(0.9, 0.02), None, entry(0.88, 0.01)],
                    rnmm: None,
                },
                EpsColumn {
                    epsilon: 4.0,
                    z: 1.0,
                    entries: vec![entry(0.92, 0.0), entry(0.91, 0.01), entry(0.9, 0.0)],
                    rnmm: None,
                },
            ],
            baseline: entry(0.95, 0.0),
            theory: None,
        }
    }

    #[test]
    fn figure_prepares_percent_series_the_g1_guide_and_the_window() {
        let f = figure(&table());
        assert_eq!(f.categories, vec!["0.1", "2 (0%)", "5 (100%)"]);
        assert_eq!(f.x_label, "clip norm τ (% = percentile of the G_i)");
        // G_1 lies between the second tau (<= G_1) and the third.
        assert_eq!(f.guides, vec![(1.5, G1_GUIDE.to_string())]);
        assert_eq!(f.series.len(), 3);
        // Two epsilons sit at -0.06 and +0.06 of their tau; the missing cell is left out.
        let s0 = &f.series[0];
        assert_eq!(s0.style, Style::JoinedPoints);
        assert_eq!(s0.label.as_deref(), Some("ε = 1"));
        assert_eq!(s0.points.len(), 2);
        assert!((s0.points[0].0 + 0.06).abs() < 1e-12 && (s0.points[0].1 - 90.0).abs() < 1e-12);
        assert!((s0.points[1].0 - 1.94).abs() < 1e-12 && (s0.points[1].1 - 88.0).abs() < 1e-12);
        assert!((s0.errors[0].0 - 88.0).abs() < 1e-12 && (s0.errors[0].1 - 92.0).abs() < 1e-12);
        assert!((f.series[1].points[1].0 - 1.06).abs() < 1e-12);
        assert_eq!((f.series[0].color, f.series[1].color), (0, 1));
        // The baseline spans the axis at 95 %.
        let b = &f.series[2];
        assert_eq!(b.style, Style::Reference);
        assert_eq!(b.points, vec![(-0.5, 95.0), (2.5, 95.0)]);
        assert_eq!(b.label.as_deref(), Some("non-private (95.0 %)"));
        // Window: data span [87, 95] (0.88 - 0.01 and the baseline), padded by 8% of 8 = 0.64.
        assert!((f.y_range.0 - 86.36).abs() < 1e-9, "{:?}", f.y_range);
        assert!((f.y_range.1 - 95.64).abs() < 1e-9, "{:?}", f.y_range);
    }

    /// A mean of 99 % with sd 2 points: its bar runs from 97 to 100, not to 101 (an accuracy
    /// cannot pass 100 %), and the window is fitted to the cut bar.
    #[test]
    fn sd_bars_stop_at_100_percent() {
        let mut t = table();
        t.columns[0].entries[0] = entry(0.99, 0.02);
        t.columns[1].entries[2] = entry(0.995, 0.01);
        let f = figure(&t);
        for s in &f.series {
            for &(lo, hi) in &s.errors {
                assert!(hi <= 100.0 && lo >= 0.0, "bar ({lo}, {hi})");
            }
        }
        assert!((f.series[0].errors[0].0 - 97.0).abs() < 1e-9);
        assert_eq!(f.series[0].errors[0].1, 100.0);
        assert_eq!(f.series[1].errors[2].1, 100.0);
        // Window: bars span [87, 100], padded by 8% of 13 = 1.04.
        assert!((f.y_range.1 - 101.04).abs() < 1e-9, "{:?}", f.y_range);
    }

    #[test]
    fn no_guide_when_every_tau_is_below_g1_and_full_window_without_data() {
        let mut t = table();
        for p in &mut t.taus {
            p.le_g1 = Some(true);
        }
        assert!(figure(&t).guides.is_empty());
        t.columns.clear();
        t.baseline = None;
        let f = figure(&t);
        assert_eq!(f.y_range, (0.0, 100.0));
        assert_eq!(f.series.len(), 0);
    }

    #[test]
    fn headroom_above_100_percent_error_bar_label_and_na_for_an_empty_column() {
        let mut t = table();
        // A perfect mean at the first tau: the window must reach above 100 by the padding.
        t.columns[1].entries[0] = entry(1.0, 0.0);
        // The second tau empty in every column.
        t.columns[1].entries[1] = None;
        let f = figure(&t);
        // Data span [87, 100], padded by 8% of 13 = 1.04 on both sides.
        assert!((f.y_range.1 - 101.04).abs() < 1e-9, "{:?}", f.y_range);
        assert_eq!(f.y_label_max, Some(100.0));
        assert_eq!(
            f.y_label,
            "test accuracy (%): mean ± sd over 3 runs, cut at 100"
        );
        assert_eq!(f.notes, vec![(1.0, "n/a".to_string())]);
        assert!(figure(&table()).notes.is_empty());
    }
}
