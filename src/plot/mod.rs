//! Figures as code: plain series drawn into PNG and SVG, on log-log axes ([`Figure`]) or over
//! categories with a linear y axis ([`CategoryFigure`]). Knows nothing of experiments; the
//! studies turn their results into figures.

mod category;
mod draw;
mod layout;
mod ticks;

pub use category::{CategoryFigure, Corner};
pub use ticks::{LogTicks, log_grid, plain, power};

use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::combinators::{LogCoord, WithKeyPoints};
use plotters::prelude::*;

use crate::error::{Error, Result};
use draw::YScale;

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
    /// A gray dashed line: the legend key of slope guides ([`Guide`]).
    Guide,
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
    /// The corner the legend box prefers; it moves to another corner when points or lines
    /// sit under it, and below the plot when every corner is taken.
    pub legend: Corner,
    /// Slope guides, placed off the data.
    pub guides: Vec<Guide>,
}

/// A slope guide: a gray dashed segment of log-log slope `slope`, labelled, placed in free
/// space as near to `near` (the points it belongs to) as the drawn data allow, so that it
/// shows a rate without passing for a bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Guide {
    /// The slope on log-log axes.
    pub slope: f64,
    /// The label printed at its right end ("slope 0.50").
    pub label: String,
    /// The points it should sit near.
    pub near: Vec<(f64, f64)>,
}

/// A log axis over [lo, hi] whose bold (labelled, ticked) points are the grid values that
/// `ticks` labels and whose light points are the rest of [`log_grid`].
fn log_axis(lo: f64, hi: f64, ticks: LogTicks) -> WithKeyPoints<LogCoord<f64>> {
    let (bold, light): (Vec<f64>, Vec<f64>) = log_grid(lo, hi)
        .into_iter()
        .partition(|&v| !ticks.label(v).is_empty());
    (lo..hi)
        .log_scale()
        .with_key_points(bold)
        .with_light_points(light)
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

pub(crate) type DrawResult<DB> =
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

/// A log-log chart as built on an area.
type LogChart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<WithKeyPoints<LogCoord<f64>>, WithKeyPoints<LogCoord<f64>>>>;

/// Where a figure's legend and guides go (pixels of its area), worked out before drawing so
/// that a legend below the plot can widen the canvas.
#[derive(Debug, Clone, PartialEq)]
struct Layout {
    legend: layout::Place,
    guides: Vec<layout::PlacedGuide>,
}

impl Layout {
    /// Pixels added below the plot for the legend.
    fn band(&self) -> u32 {
        match self.legend {
            layout::Place::Below { height, .. } => height,
            _ => 0,
        }
    }
}

/// Lays out a figure on a scratch SVG of `size` pixels: `arrange` gets the scratch area.
fn scratch_layout(
    size: (u32, u32),
    arrange: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Option<Layout>,
) -> Layout {
    let mut buf = String::new();
    let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
    arrange(&root).unwrap_or(Layout {
        legend: layout::Place::None,
        guides: Vec::new(),
    })
}

/// Draws a laid-out legend and guides on `area` (the figure's whole area, band included).
fn draw_layout<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[layout::Entry],
    lay: &Layout,
    plot_height: u32,
) -> DrawResult<DB> {
    for g in &lay.guides {
        g.draw(area)?;
    }
    match lay.legend {
        layout::Place::None => Ok(()),
        layout::Place::Inside(r) => layout::draw_legend(area, entries, (r.0, r.1), 1, true),
        layout::Place::Below { cols, .. } => {
            layout::draw_legend(area, entries, (4, plot_height as i32), cols, false)
        }
    }
}

/// The plot rectangle of a chart, in its backend's pixels.
fn plot_rect<DB: DrawingBackend, CT: CoordTranslate>(
    chart: &ChartContext<'_, DB, CT>,
) -> layout::Rect {
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    (xs.start, ys.start, xs.end, ys.end)
}

/// Extends `(lo, hi)` on a log axis by `share` of its span in decades (at least `min_factor`
/// each side), and to half a decade in all where it is narrower (so that the axis shows at
/// least two labelled grid values).
fn log_margin((lo, hi): (f64, f64), share: f64, min_factor: f64) -> (f64, f64) {
    if !(lo > 0.0 && hi >= lo && hi.is_finite()) {
        return (1e-3, 1.0);
    }
    let f = (hi / lo).powf(share).max(min_factor);
    let (lo, hi) = (lo / f, hi * f);
    let widen = (10f64.sqrt() / (hi / lo)).max(1.0).sqrt();
    (lo / widen, hi * widen)
}

impl Figure {
    /// Writes `stem.png` and `stem.svg`.
    pub fn save(&self, stem: &Path) -> Result<()> {
        let png = stem.with_extension("png");
        let svg = stem.with_extension("svg");
        write_png_svg(self, &png, &svg, self.canvas())
    }

    /// The canvas: the figure's size, plus a band below it when the legend sits there.
    pub fn canvas(&self) -> (u32, u32) {
        (self.size.0, self.size.1 + self.layout(self.size).band())
    }

    /// The drawn ranges: every point, error bar and line, with a margin of 4% of each span
    /// (at least 10% in y and 6% in x, so markers stay inside the frame).
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
                y0 = y0.min(if lo > 0.0 { lo } else { y });
                y1 = y1.max(hi.max(y));
            }
        }
        (
            log_margin((x0, x1), 0.04, 1.06),
            log_margin((y0, y1), 0.04, 1.1),
        )
    }

    /// The legend rows: the shaded band first, then every labelled series.
    fn entries(&self) -> Vec<layout::Entry> {
        let shade = self.shade.as_ref().map(|(_, _, l)| layout::Entry {
            label: l.clone(),
            key: None,
            color: BLACK,
        });
        draw::entries(&self.series, Palette::OkabeIto, shade)
    }

    /// The chart on `area`, with its axes, before any series is drawn.
    fn chart<'a, DB: DrawingBackend>(
        &self,
        area: &'a DrawingArea<DB, Shift>,
    ) -> std::result::Result<LogChart<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
        let ((x0, x1), (y0, y1)) = self.range();
        let (xt, yt) = (LogTicks::new(x0, x1), LogTicks::new(y0, y1));
        ChartBuilder::on(area)
            .caption(&self.title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(78)
            .build_cartesian_2d(log_axis(x0, x1, xt), log_axis(y0, y1, yt))
    }

    /// The legend's place and the guides' positions on an area of `size` pixels.
    fn layout(&self, size: (u32, u32)) -> Layout {
        scratch_layout(size, |root| {
            let chart = self.chart(root).ok()?;
            Some(self.arrange(&chart, size.0))
        })
    }

    /// The layout on a built chart: the legend in a free corner (or below), then each guide
    /// in the free position nearest its points.
    fn arrange<DB: DrawingBackend>(&self, chart: &LogChart<'_, DB>, width: u32) -> Layout {
        let (_, yr) = self.range();
        let plot = plot_rect(chart);
        let mut obst = draw::obstacles(chart, &self.series, yr, YScale::Log);
        let legend = layout::place_legend(plot, &self.entries(), self.legend, &obst, width);
        if let layout::Place::Inside(r) = legend {
            obst.push(layout::Obstacle::Box(r));
        }
        let mut guides = Vec::new();
        for g in &self.guides {
            if let Some(p) = self.place_guide(chart, plot, g, &obst) {
                obst.extend(p.obstacles());
                guides.push(p);
            }
        }
        Layout { legend, guides }
    }

    /// Candidate positions of guide `g` (parallel shifts of the line of slope `g.slope`
    /// through the centre of its points, nearest first, below before above, at five
    /// positions along x), the first free one chosen.
    fn place_guide<DB: DrawingBackend>(
        &self,
        chart: &LogChart<'_, DB>,
        plot: layout::Rect,
        g: &Guide,
        obst: &[layout::Obstacle],
    ) -> Option<layout::PlacedGuide> {
        let ((x0, x1), (y0, y1)) = self.range();
        let logs: Vec<(f64, f64)> = g
            .near
            .iter()
            .filter(|p| p.0 > 0.0 && p.1 > 0.0)
            .map(|p| (p.0.log10(), p.1.log10()))
            .collect();
        if logs.is_empty() || !g.slope.is_finite() {
            return None;
        }
        let n = logs.len() as f64;
        let (cx, cy) = (
            logs.iter().map(|p| p.0).sum::<f64>() / n,
            logs.iter().map(|p| p.1).sum::<f64>() / n,
        );
        let (lx0, lx1, ly0, ly1) = (x0.log10(), x1.log10(), y0.log10(), y1.log10());
        let xa = logs.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let xb = logs.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
        let len = (0.6 * (xb - xa)).clamp(0.25 * (lx1 - lx0), 0.45 * (lx1 - lx0));
        let inner = (
            plot.0 + layout::CLEARANCE,
            plot.1 + layout::CLEARANCE,
            plot.2 - layout::CLEARANCE,
            plot.3 - layout::CLEARANCE,
        );
        let steps: u32 = 90;
        let dy = (ly1 - ly0) / steps as f64;
        let mut cands = Vec::new();
        for j in 1..=2 * steps {
            let shift = dy * (j.div_ceil(2) as f64) * if j % 2 == 1 { -1.0 } else { 1.0 };
            for t in [0.5, 0.25, 0.75, 0.0, 1.0] {
                let a = lx0 + t * (lx1 - lx0 - len);
                let at = |x: f64| {
                    let y = cy + g.slope * (x - cx) + shift;
                    chart.backend_coord(&(10f64.powf(x), 10f64.powf(y)))
                };
                let (from, to) = (at(a), at(a + len));
                let label_box = layout::label_box(&g.label, to);
                let seg = (
                    from.0.min(to.0),
                    from.1.min(to.1),
                    from.0.max(to.0),
                    from.1.max(to.1),
                );
                if layout::inside(seg, inner) && layout::inside(label_box, inner) {
                    cands.push(layout::PlacedGuide {
                        from,
                        to,
                        label: g.label.clone(),
                        label_box,
                    });
                }
            }
        }
        layout::best_guide(cands, obst)
    }

    /// Draws the figure on `area`: the chart in its top `self.size.1` pixels (or all of
    /// `plot_height`), the legend in the layout's place.
    fn draw_on<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        plot_height: u32,
    ) -> DrawResult<DB> {
        let width = area.dim_in_pixel().0;
        let lay = self.layout((width, plot_height));
        let (top, _) = area.split_vertically(plot_height);
        let ((x0, x1), (y0, y1)) = self.range();
        let (xt, yt) = (LogTicks::new(x0, x1), LogTicks::new(y0, y1));
        let mut chart = self.chart(&top)?;
        chart
            .configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 18))
            .x_labels(30)
            .y_labels(30)
            .x_label_formatter(&|v| xt.label(*v))
            .y_label_formatter(&|v| yt.label(*v))
            .bold_line_style(BLACK.mix(0.25))
            .light_line_style(BLACK.mix(0.05))
            .draw()?;
        if let Some((a, b, _)) = &self.shade {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(a.max(x0), y0), (b.min(x1), y1)],
                BLACK.mix(0.07).filled(),
            )))?;
        }
        draw::draw_series(
            &mut chart,
            &self.series,
            Palette::OkabeIto,
            (y0, y1),
            YScale::Log,
        )?;
        draw_layout(area, &self.entries(), &lay, plot_height)
    }
}

impl Render for Figure {
    fn render<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        self.draw_on(root, self.size.1)
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
    fn cols(&self) -> usize {
        self.cols.clamp(1, self.figures.len().max(1))
    }

    /// The height of each row: the panel's, plus the tallest legend band below a panel of it.
    fn row_heights(&self) -> Vec<u32> {
        let rows = self.figures.len().div_ceil(self.cols()).max(1);
        (0..rows)
            .map(|r| {
                let band = self
                    .figures
                    .iter()
                    .skip(r * self.cols())
                    .take(self.cols())
                    .map(|f| f.layout(self.panel).band())
                    .max()
                    .unwrap_or(0);
                self.panel.1 + band
            })
            .collect()
    }

    fn size(&self) -> (u32, u32) {
        (
            self.panel.0 * self.cols() as u32,
            self.row_heights().iter().sum::<u32>() + PANELS_CAPTION,
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
        let (top, mut body) = root.split_vertically(PANELS_CAPTION);
        top.titled(&self.title, ("sans-serif", 24))?;
        let cols = self.cols();
        for (r, h) in self.row_heights().into_iter().enumerate() {
            let (row, rest) = body.split_vertically(h);
            body = rest;
            let cells = row.split_evenly((1, cols));
            for (f, area) in self.figures.iter().skip(r * cols).take(cols).zip(&cells) {
                f.draw_on(area, self.panel.1)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
