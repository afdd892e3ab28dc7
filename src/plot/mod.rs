//! Figures as code: plain series drawn into PNG and SVG, on log-log axes ([`Figure`]) or over
//! categories with a linear y axis ([`CategoryFigure`]). Knows nothing of experiments; the
//! studies turn their results into figures.

mod category;

pub use category::{CategoryFigure, Corner};

use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::combinators::{LogCoord, WithKeyPoints};
use plotters::prelude::*;

use crate::error::{Error, Result};

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Markers with vertical error bars.
    Points,
    /// A solid line.
    Line,
    /// A dashed line (reference slopes).
    Dashed,
    /// A dotted line (bounds).
    Dotted,
    /// Markers with vertical error bars, joined by a faint thin line (a trend across
    /// categories).
    JoinedPoints,
    /// A reference line (e.g. a non-private baseline) in black with long dashes, whatever the
    /// color index; its legend key is a full-width stroke.
    Reference,
    /// Open markers with thin vertical error bars, joined by a faint line (a control series
    /// beside the filled markers of the series it controls).
    Hollow,
}

/// One series: (x, y) points, optional error bars (lo, hi), a color index and a legend label.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend label; None keeps it out of the legend.
    pub label: Option<String>,
    /// Points (x, y) in data units, drawn in this order.
    pub points: Vec<(f64, f64)>,
    /// Error bars (lo, hi), one per point, or empty.
    pub errors: Vec<(f64, f64)>,
    /// How the points are drawn (markers, line, reference line, ...).
    pub style: Style,
    /// Index into the figure's palette (cycled); series with the same index share a color.
    pub color: usize,
}

/// A log-log figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Caption drawn above the plot area.
    pub title: String,
    /// x-axis label.
    pub x_label: String,
    /// y-axis label.
    pub y_label: String,
    /// Series, drawn in order (later ones on top).
    pub series: Vec<Series>,
    /// (width, height) in pixels of the PNG and of the SVG canvas.
    pub size: (u32, u32),
    /// An x range to shade (e.g. the smallest decade, where verdicts are read), with its
    /// legend label.
    pub shade: Option<(f64, f64, String)>,
    /// Where the legend box goes.
    pub legend: Corner,
}

/// A log-axis tick label: "1e-3", "2e-3", "5e-3" at mantissas 1, 2, 5; empty otherwise (so the
/// labels never crowd).
pub fn tick(v: f64) -> String {
    match mantissa(v) {
        Some((m, e)) if [1, 2, 5].contains(&m) => format!("{m}e{e}"),
        _ => String::new(),
    }
}

/// v = m 10^e with an integer mantissa m in 1..=9 (to 1e-3 relative), or None.
fn mantissa(v: f64) -> Option<(u32, i32)> {
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

/// A log axis over [lo, hi] whose bold (labelled, ticked) points are the grid values that
/// [`axis_label`] labels and whose light points are the rest of [`log_grid`]; `all` as there.
fn log_axis(lo: f64, hi: f64, all: bool) -> WithKeyPoints<LogCoord<f64>> {
    let (bold, light): (Vec<f64>, Vec<f64>) = log_grid(lo, hi)
        .into_iter()
        .partition(|&v| !axis_label(v, all).is_empty());
    (lo..hi)
        .log_scale()
        .with_key_points(bold)
        .with_light_points(light)
}

/// Whether an axis over [lo, hi] labels every grid value: when fewer than two of its grid values
/// have mantissa 1, 2 or 5 (an axis spanning less than a decade would otherwise show one label
/// or none).
pub fn label_all(lo: f64, hi: f64) -> bool {
    log_grid(lo, hi)
        .into_iter()
        .filter(|&g| !tick(g).is_empty())
        .count()
        < 2
}

/// The label of grid value v: its value if `all` ([`label_all`]), else only at mantissas 1, 2, 5
/// ([`tick`]).
pub fn axis_label(v: f64, all: bool) -> String {
    match mantissa(v) {
        Some((m, e)) if all => format!("{m}e{e}"),
        Some(_) => tick(v),
        None => String::new(),
    }
}

/// A color-blind friendly palette (Okabe-Ito).
pub fn color(i: usize) -> RGBColor {
    Palette::OkabeIto.color(i)
}

/// The colors a figure's series indices map to (cycled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Palette {
    /// Okabe-Ito, color-blind friendly: the log-log figures.
    #[default]
    OkabeIto,
    /// Six Tableau colors (red, blue, green, purple, orange, brown): the clip-norm figure.
    Tableau,
}

impl Palette {
    /// The color of series index `i`.
    pub fn color(self, i: usize) -> RGBColor {
        const OKABE_ITO: [RGBColor; 8] = [
            RGBColor(0, 114, 178),
            RGBColor(213, 94, 0),
            RGBColor(0, 158, 115),
            RGBColor(204, 121, 167),
            RGBColor(230, 159, 0),
            RGBColor(86, 180, 233),
            RGBColor(0, 0, 0),
            RGBColor(240, 228, 66),
        ];
        const TABLEAU: [RGBColor; 6] = [
            RGBColor(214, 39, 40),
            RGBColor(31, 119, 180),
            RGBColor(44, 160, 44),
            RGBColor(148, 103, 189),
            RGBColor(255, 127, 14),
            RGBColor(140, 86, 75),
        ];
        match self {
            Palette::OkabeIto => OKABE_ITO[i % OKABE_ITO.len()],
            Palette::Tableau => TABLEAU[i % TABLEAU.len()],
        }
    }
}

type DrawResult<DB> =
    std::result::Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A figure that can draw itself on any plotters backend.
trait Render {
    fn render<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB>;
}

/// Draws `fig` once into `png` and once into `svg`, both `size` pixels.
fn write_png_svg(fig: &impl Render, png: &Path, svg: &Path, size: (u32, u32)) -> Result<()> {
    let mut rgb = vec![0u8; 3 * size.0 as usize * size.1 as usize];
    present(
        fig,
        BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area(),
        png,
    )?;
    write_png(png, &rgb, size)?;
    present(fig, SVGBackend::new(svg, size).into_drawing_area(), svg)
}

/// Encodes an RGB8 buffer as a PNG file (the `png` crate; plotters' own encoder would pull in
/// the whole `image` crate).
fn write_png(path: &Path, rgb: &[u8], (w, h): (u32, u32)) -> Result<()> {
    let io = |e: std::io::Error| Error::io(path.display().to_string(), e);
    let file = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
    let mut enc = png::Encoder::new(file, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let cannot =
        |e: png::EncodingError| Error::data(format!("{}: cannot write: {e}", path.display()));
    let mut writer = enc.write_header().map_err(cannot)?;
    writer.write_image_data(rgb).map_err(cannot)?;
    writer.finish().map_err(cannot)
}

/// Draws `fig` on `root` and writes it out to `path`.
fn present<DB: DrawingBackend>(
    fig: &impl Render,
    root: DrawingArea<DB, Shift>,
    path: &Path,
) -> Result<()> {
    fig.render(&root)
        .map_err(|e| Error::data(format!("{}: cannot draw: {e}", path.display())))?;
    root.present()
        .map_err(|e| Error::data(format!("{}: cannot write: {e}", path.display())))
}

/// Whether the y axis is logarithmic: there, points and bars must be positive and bars are cut
/// to the drawn range; on a linear axis every point and bar is drawn as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum YScale {
    Log,
    Linear,
}

/// Draws `series` in order, with their legend entries, on a chart whose drawn y range is
/// `(y0, y1)`.
fn draw_series<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    series: &[Series],
    palette: Palette,
    (y0, y1): (f64, f64),
    scale: YScale,
) -> DrawResult<DB>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let shown = |p: &(f64, f64)| match scale {
        YScale::Log => p.0 > 0.0 && p.1 > 0.0 && p.1 >= y0 && p.1 <= y1,
        YScale::Linear => true,
    };
    for s in series {
        let c = palette.color(s.color);
        let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(shown).collect();
        // Vertical error bars of stroke `width` and head `head`, cut to the drawn range; bars
        // whose lower end is not positive cannot be drawn on a log axis and are left out.
        let log_bars = |width: u32, head: u32| {
            s.points
                .iter()
                .zip(&s.errors)
                .filter(|(_, e)| e.0 > 0.0)
                .map(move |(&(x, y), &(lo, hi))| {
                    ErrorBar::new_vertical(
                        x,
                        lo.max(y0),
                        y,
                        hi.min(y1),
                        c.stroke_width(width),
                        head,
                    )
                })
        };
        let anno = match s.style {
            Style::Points => {
                chart.draw_series(log_bars(2, 8))?;
                chart.draw_series(pts.iter().map(|&p| Circle::new(p, 5, c.filled())))?
            }
            Style::JoinedPoints => {
                let bars = s.points.iter().zip(&s.errors).map(|(&(x, y), &(lo, hi))| {
                    let (lo, hi) = match scale {
                        YScale::Log => (lo.max(y0), hi.min(y1)),
                        YScale::Linear => (lo, hi),
                    };
                    ErrorBar::new_vertical(x, lo, y, hi, c.filled().stroke_width(2), 8)
                });
                chart.draw_series(bars)?;
                chart.draw_series(LineSeries::new(pts.iter().copied(), c.mix(0.5)))?;
                chart.draw_series(pts.iter().map(|&p| Circle::new(p, 5, c.filled())))?
            }
            Style::Hollow => {
                chart.draw_series(log_bars(1, 6))?;
                chart.draw_series(LineSeries::new(pts.iter().copied(), c.mix(0.4)))?;
                chart.draw_series(
                    pts.iter()
                        .map(|&p| Circle::new(p, 5, WHITE.filled()).into_dyn()),
                )?;
                chart.draw_series(pts.iter().map(|&p| Circle::new(p, 5, c.stroke_width(2))))?
            }
            Style::Line => chart.draw_series(LineSeries::new(pts, c.stroke_width(2)))?,
            Style::Dashed => {
                chart.draw_series(DashedLineSeries::new(pts, 8, 6, c.stroke_width(2)))?
            }
            Style::Dotted => {
                chart.draw_series(DashedLineSeries::new(pts, 2, 5, c.stroke_width(2)))?
            }
            Style::Reference => {
                chart.draw_series(DashedLineSeries::new(pts, 8, 5, BLACK.stroke_width(2)))?
            }
        };
        if let Some(l) = &s.label {
            let style = s.style;
            anno.label(l.clone()).legend(move |(x, y)| {
                let seg = |a: i32, b: i32| {
                    PathElement::new(vec![(x + a, y), (x + b, y)], c.stroke_width(2))
                };
                match style {
                    Style::Points | Style::JoinedPoints => {
                        Circle::new((x + 10, y), 5, c.filled()).into_dyn()
                    }
                    Style::Hollow => Circle::new((x + 10, y), 5, c.stroke_width(2)).into_dyn(),
                    Style::Line => seg(0, 20).into_dyn(),
                    // The label names the dash pattern; the key is a short stroke.
                    Style::Dashed => seg(4, 14).into_dyn(),
                    Style::Dotted => seg(8, 11).into_dyn(),
                    Style::Reference => {
                        PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2))
                            .into_dyn()
                    }
                }
            });
        }
    }
    Ok(())
}

/// The legend box of every figure, in corner `pos`.
fn draw_legend<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    pos: SeriesLabelPosition,
) -> DrawResult<DB>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .configure_series_labels()
        .position(pos)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
}

impl Figure {
    /// Writes `stem.png` and `stem.svg`.
    pub fn save(&self, stem: &Path) -> Result<()> {
        let png = stem.with_extension("png");
        let svg = stem.with_extension("svg");
        write_png_svg(self, &png, &svg, self.size)
    }

    fn range(&self) -> ((f64, f64), (f64, f64)) {
        let (mut x0, mut x1, mut y0, mut y1) = (f64::INFINITY, 0.0f64, f64::INFINITY, 0.0f64);
        for s in &self.series {
            for (i, &(x, y)) in s.points.iter().enumerate() {
                if !(x > 0.0 && y > 0.0 && x.is_finite() && y.is_finite()) {
                    continue;
                }
                x0 = x0.min(x);
                x1 = x1.max(x);
                let (lo, hi) = s.errors.get(i).copied().unwrap_or((y, y));
                if matches!(s.style, Style::Points | Style::Hollow) {
                    y0 = y0.min(if lo > 0.0 { lo } else { y });
                    y1 = y1.max(hi.max(y));
                } else {
                    y0 = y0.min(y);
                    y1 = y1.max(y);
                }
            }
        }
        if x0.partial_cmp(&x1) != Some(std::cmp::Ordering::Less) {
            (x0, x1) = (1e-3, 1.0);
        }
        if y0.partial_cmp(&y1) != Some(std::cmp::Ordering::Less) {
            (y0, y1) = (1e-3, 1.0);
        }
        ((x0 / 1.25, x1 * 1.25), (y0 / 2.0, y1 * 2.0))
    }
}

impl Render for Figure {
    fn render<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let ((x0, x1), (y0, y1)) = self.range();
        let (x_all, y_all) = (label_all(x0, x1), label_all(y0, y1));
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(78)
            .build_cartesian_2d(log_axis(x0, x1, x_all), log_axis(y0, y1, y_all))?;
        chart
            .configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 18))
            .x_labels(30)
            .y_labels(30)
            .x_label_formatter(&|v| axis_label(*v, x_all))
            .y_label_formatter(&|v| axis_label(*v, y_all))
            .bold_line_style(BLACK.mix(0.25))
            .light_line_style(BLACK.mix(0.05))
            .draw()?;
        if let Some((a, b, label)) = &self.shade {
            let shade = BLACK.mix(0.07).filled();
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(a.max(x0), y0), (b.min(x1), y1)],
                    shade,
                )))?
                .label(label.clone())
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 20, y + 6)], shade));
        }
        draw_series(
            &mut chart,
            &self.series,
            Palette::OkabeIto,
            (y0, y1),
            YScale::Log,
        )?;
        draw_legend(&mut chart, self.legend.position())?;
        Ok(())
    }
}

/// Several log-log figures side by side (row-major, `cols` per row), each with its own axes
/// and legend, under one title.
#[derive(Debug, Clone, PartialEq)]
pub struct Panels {
    /// Caption above the panels.
    pub title: String,
    /// The panels.
    pub figures: Vec<Figure>,
    /// Panels per row.
    pub cols: usize,
    /// (width, height) of one panel in pixels.
    pub panel: (u32, u32),
}

impl Panels {
    fn size(&self) -> (u32, u32) {
        let cols = self.cols.clamp(1, self.figures.len().max(1));
        let rows = self.figures.len().div_ceil(cols).max(1);
        (
            self.panel.0 * cols as u32,
            self.panel.1 * rows as u32 + PANELS_CAPTION,
        )
    }

    /// Writes `stem.png` and `stem.svg`.
    pub fn save(&self, stem: &Path) -> Result<()> {
        let png = stem.with_extension("png");
        let svg = stem.with_extension("svg");
        write_png_svg(self, &png, &svg, self.size())
    }
}

/// Height of the caption band above a [`Panels`] figure.
const PANELS_CAPTION: u32 = 40;

impl Render for Panels {
    fn render<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let (top, body) = root.split_vertically(PANELS_CAPTION);
        top.titled(&self.title, ("sans-serif", 24))?;
        let cols = self.cols.clamp(1, self.figures.len().max(1));
        let rows = self.figures.len().div_ceil(cols).max(1);
        for (f, area) in self
            .figures
            .iter()
            .zip(body.split_evenly((rows, cols)).iter())
        {
            f.render(area)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The x axis of a verify figure over phi in [0.002, 0.1] (range padded by 1.25 each side):
    /// every decade it crosses has grid lines, and 2e-3 and 5e-3 are labelled.
    #[test]
    fn log_axis_labels_every_decade() {
        let (lo, hi) = (0.002 / 1.25, 0.1 * 1.25);
        let grid = log_grid(lo, hi);
        assert_eq!(grid.first().map(|v| mantissa(*v)), Some(Some((2, -3))));
        assert_eq!(grid.last().map(|v| mantissa(*v)), Some(Some((1, -1))));
        assert_eq!(grid.len(), 8 + 9 + 1);
        let labels: Vec<String> = grid
            .iter()
            .map(|&v| axis_label(v, label_all(lo, hi)))
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(
            labels,
            ["2e-3", "5e-3", "1e-2", "2e-2", "5e-2", "1e-1"].map(String::from)
        );
    }

    /// An axis inside one decade with at most one of 1, 2, 5 labels every grid value.
    #[test]
    fn narrow_log_axis_labels_every_grid_value() {
        let labels: Vec<String> = log_grid(0.25, 0.45)
            .iter()
            .map(|&v| axis_label(v, label_all(0.25, 0.45)))
            .collect();
        assert_eq!(labels, ["3e-1", "4e-1"].map(String::from));
        assert_eq!(tick(3e-4), "");
        assert_eq!(tick(0.00999999999), "1e-2");
        assert_eq!(tick(2e5), "2e5");
    }
}
