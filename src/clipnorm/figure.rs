//! Figure 1-style plot: test accuracy against the clip norm (one categorical x position per
//! tau, labelled like the paper's "0.1", "0%", "100%"), mean +- sd error bars, one series per
//! epsilon, and the non-private baseline as a dashed line. Self-contained plotters code so it
//! can move to a shared `plot` module later.

use std::path::Path;

use plotters::prelude::*;

use super::table::StudyTable;
use crate::error::{Error, Result};

const COLORS: [RGBColor; 6] = [
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
];

/// Writes the figure to `png` and `svg`.
pub fn draw(t: &StudyTable, png: &Path, svg: &Path) -> Result<()> {
    let size = (900, 560);
    {
        let root = BitMapBackend::new(png, size).into_drawing_area();
        draw_on(t, &root).map_err(|e| Error::Numerical(format!("{}: {e}", png.display())))?;
        root.present()
            .map_err(|e| Error::Numerical(format!("{}: {e}", png.display())))?;
    }
    {
        let root = SVGBackend::new(svg, size).into_drawing_area();
        draw_on(t, &root).map_err(|e| Error::Numerical(format!("{}: {e}", svg.display())))?;
        root.present()
            .map_err(|e| Error::Numerical(format!("{}: {e}", svg.display())))?;
    }
    Ok(())
}

type DrawResult<DB> =
    std::result::Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw_on<DB: DrawingBackend>(
    t: &StudyTable,
    root: &DrawingArea<DB, plotters::coord::Shift>,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let k = t.taus.len();
    // y range from the data (and the baseline), padded.
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for c in &t.columns {
        for e in c.entries.iter().flatten() {
            lo = lo.min(100.0 * (e.mean - e.sd));
            hi = hi.max(100.0 * (e.mean + e.sd));
        }
    }
    if let Some(b) = &t.baseline {
        lo = lo.min(100.0 * b.mean);
        hi = hi.max(100.0 * b.mean);
    }
    if !lo.is_finite() {
        lo = 0.0;
        hi = 100.0;
    }
    let pad = ((hi - lo) * 0.08).max(0.5);
    let (ylo, yhi) = ((lo - pad).max(0.0), (hi + pad).min(100.0));
    let labels: Vec<String> = t.taus.iter().map(|p| p.short_label()).collect();
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!("{} ({}): test accuracy vs clip norm", t.name, t.model),
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..(k as f64 - 0.5), ylo..yhi)?;
    let lbl = labels.clone();
    let xfmt = move |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < lbl.len() {
            lbl[i as usize].clone()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc(if t.taus.iter().any(|p| p.pct.is_some()) {
            "clip norm τ (% = percentile of the G_i)"
        } else {
            "clip norm τ"
        })
        .y_desc("test accuracy (%)")
        .x_labels(k)
        .x_label_formatter(&xfmt)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()?;
    // G_1 marker: between the last tau <= G_1 and the first above.
    if let Some(i) = t.taus.iter().rposition(|p| p.le_g1 == Some(true)) {
        let x = i as f64 + 0.5;
        if i + 1 < k {
            chart.draw_series(DashedLineSeries::new(
                vec![(x, ylo), (x, yhi)],
                4,
                4,
                BLACK.mix(0.35).stroke_width(1),
            ))?;
        }
    }
    let ne = t.columns.len().max(1) as f64;
    for (ci, c) in t.columns.iter().enumerate() {
        let color = COLORS[ci % COLORS.len()];
        let dx = (ci as f64 - (ne - 1.0) / 2.0) * 0.12;
        let pts: Vec<(f64, f64, f64)> = c
            .entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                e.as_ref()
                    .map(|e| (i as f64 + dx, 100.0 * e.mean, 100.0 * e.sd))
            })
            .collect();
        chart.draw_series(pts.iter().map(|&(x, m, s)| {
            ErrorBar::new_vertical(x, m - s, m, m + s, color.filled().stroke_width(2), 8)
        }))?;
        chart.draw_series(LineSeries::new(
            pts.iter().map(|&(x, m, _)| (x, m)),
            color.mix(0.5),
        ))?;
        chart
            .draw_series(
                pts.iter()
                    .map(|&(x, m, _)| Circle::new((x, m), 5, color.filled())),
            )?
            .label(format!("ε = {}", c.epsilon))
            .legend(move |(x, y)| Circle::new((x + 10, y), 5, color.filled()));
    }
    if let Some(b) = &t.baseline {
        let y = 100.0 * b.mean;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(-0.5, y), (k as f64 - 0.5, y)],
                8,
                5,
                BLACK.stroke_width(2),
            ))?
            .label(format!("non-private ({y:.1} %)"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    Ok(())
}
