//! Drawing series on a chart, and the same series as the pixels a legend or a guide must keep
//! clear of ([`obstacles`]).

use plotters::prelude::*;

use super::layout::{Entry, Obstacle};
use super::{DrawResult, Palette, Series, Style};

/// Whether the y axis is logarithmic: there, points and bars must be positive and bars are cut
/// to the drawn range; on a linear axis every point and bar is drawn as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum YScale {
    Log,
    Linear,
}

/// Radius of a marker.
const MARKER: i32 = 5;

/// The points of `s` that are drawn on a chart whose y range is `(y0, y1)`.
fn shown(s: &Series, scale: YScale, (y0, y1): (f64, f64)) -> Vec<(f64, f64)> {
    s.points
        .iter()
        .copied()
        .filter(|p| match scale {
            YScale::Log => p.0 > 0.0 && p.1 > 0.0 && p.1 >= y0 && p.1 <= y1,
            YScale::Linear => true,
        })
        .collect()
}

/// The error bars of `s` as drawn, (x, lo, y, hi): on a log axis cut to the drawn range, and
/// for markers with a non-positive lower end left out (they cannot be drawn).
fn bars(s: &Series, scale: YScale, (y0, y1): (f64, f64)) -> Vec<(f64, f64, f64, f64)> {
    s.points
        .iter()
        .zip(&s.errors)
        .filter(|(_, e)| scale == YScale::Linear || s.style == Style::JoinedPoints || e.0 > 0.0)
        .map(|(&(x, y), &(lo, hi))| match scale {
            YScale::Log => (x, lo.max(y0), y, hi.min(y1)),
            YScale::Linear => (x, lo, y, hi),
        })
        .collect()
}

/// Draws `series` in order on a chart whose drawn y range is `range`.
pub(super) fn draw_series<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    series: &[Series],
    palette: Palette,
    range: (f64, f64),
    scale: YScale,
) -> DrawResult<DB>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for s in series {
        let c = palette.color(s.color);
        let pts = shown(s, scale, range);
        let bars = |width: u32, head: u32| {
            bars(s, scale, range)
                .into_iter()
                .map(move |(x, lo, y, hi)| {
                    ErrorBar::new_vertical(x, lo, y, hi, c.filled().stroke_width(width), head)
                })
        };
        let dots = |style: ShapeStyle| {
            pts.iter()
                .map(move |&p| Circle::new(p, MARKER, style))
                .collect::<Vec<_>>()
        };
        match s.style {
            Style::Points => {
                chart.draw_series(bars(2, 8))?;
                chart.draw_series(dots(c.filled()))?;
            }
            Style::JoinedPoints => {
                chart.draw_series(bars(2, 8))?;
                chart.draw_series(LineSeries::new(pts.iter().copied(), c.mix(0.5)))?;
                chart.draw_series(dots(c.filled()))?;
            }
            Style::Hollow => {
                chart.draw_series(bars(1, 6))?;
                chart.draw_series(LineSeries::new(pts.iter().copied(), c.mix(0.4)))?;
                chart.draw_series(dots(WHITE.filled()))?;
                chart.draw_series(dots(c.stroke_width(2)))?;
            }
            Style::Line => {
                chart.draw_series(LineSeries::new(pts, c.stroke_width(2)))?;
            }
            Style::Dashed => {
                chart.draw_series(DashedLineSeries::new(pts, 8, 6, c.stroke_width(2)))?;
            }
            Style::Dotted => {
                chart.draw_series(DashedLineSeries::new(pts, 2, 5, c.stroke_width(2)))?;
            }
            Style::Reference => {
                chart.draw_series(DashedLineSeries::new(pts, 8, 5, BLACK.stroke_width(2)))?;
            }
            Style::Guide => {
                let g = super::layout::GUIDE;
                chart.draw_series(DashedLineSeries::new(pts, 6, 4, g.stroke_width(2)))?;
            }
        }
    }
    Ok(())
}

/// Every marker, error bar and line piece of `series` in the chart's pixels (absolute, as
/// the chart maps them).
pub(super) fn obstacles<DB, X, Y>(
    chart: &ChartContext<'_, DB, Cartesian2d<X, Y>>,
    series: &[Series],
    range: (f64, f64),
    scale: YScale,
) -> Vec<Obstacle>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let px = |p: (f64, f64)| chart.backend_coord(&p);
    let mut out = Vec::new();
    for s in series {
        let pts = shown(s, scale, range);
        if matches!(s.style, Style::Points | Style::JoinedPoints | Style::Hollow) {
            out.extend(pts.iter().map(|&p| Obstacle::Disc(px(p), MARKER + 1)));
            out.extend(
                bars(s, scale, range)
                    .into_iter()
                    .map(|(x, lo, _, hi)| Obstacle::Segment(px((x, lo)), px((x, hi)))),
            );
        }
        if s.style != Style::Points {
            out.extend(
                pts.windows(2)
                    .map(|w| Obstacle::Segment(px(w[0]), px(w[1]))),
            );
        }
    }
    out
}

/// The legend rows of `series` (those with a label), in order, with `first` before them.
pub(super) fn entries(series: &[Series], palette: Palette, first: Option<Entry>) -> Vec<Entry> {
    first
        .into_iter()
        .chain(series.iter().filter_map(|s| {
            s.label.as_ref().map(|l| Entry {
                label: l.clone(),
                key: Some(s.style),
                color: palette.color(s.color),
            })
        }))
        .collect()
}
