//! A figure over categories: one x position per label (at x = 0, 1, ...; a series may offset
//! its points within a category), a linear y axis over a given range, vertical guide lines
//! between categories, and the shared series styles and legend.

use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::draw::{YScale, draw_series, entries, obstacles};
use super::layout::{Obstacle, text_width};
use super::{
    DrawResult, Layout, Palette, Render, Series, draw_layout, plain, plot_rect, scratch_layout,
    write_png_svg,
};
use crate::error::Result;

/// The corner of the plot the legend box sits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corner {
    /// Bottom left of the plot area.
    LowerLeft,
    /// Bottom right of the plot area.
    LowerRight,
    /// Top left of the plot area.
    UpperLeft,
    /// Top right of the plot area.
    UpperRight,
}

impl Corner {}

/// A figure with categorical x (e.g. a grid of clip norms) and linear y.
#[derive(Debug, Clone, PartialEq)]
pub struct CategoryFigure {
    /// Caption drawn above the plot area.
    pub title: String,
    /// x-axis label.
    pub x_label: String,
    /// y-axis label.
    pub y_label: String,
    /// Category labels, at x = 0, 1, ..., len - 1; the x axis spans [-0.5, len - 0.5].
    pub categories: Vec<String>,
    /// The drawn y range (lo, hi).
    pub y_range: (f64, f64),
    /// Vertical guide lines (e.g. a threshold between two categories) at x, drawn under the
    /// series across the whole y range, each with a label printed at its top.
    pub guides: Vec<(f64, String)>,
    /// Series, drawn in order (later ones on top).
    pub series: Vec<Series>,
    /// The colors of the series' indices.
    pub palette: Palette,
    /// The corner the legend box prefers; it moves to another corner when points or lines
    /// sit under it, and below the plot when every corner is taken.
    pub legend: Corner,
    /// Text drawn centered at (x, middle of the y range), e.g. "n/a" under a category with
    /// no data, so an empty column is not mistaken for a missing point.
    pub notes: Vec<(f64, String)>,
    /// y tick labels above this value are left blank (e.g. 100 for an accuracy in percent
    /// whose axis has headroom above 100 so error bars and markers stay inside the frame).
    pub y_label_max: Option<f64>,
    /// (width, height) in pixels of the PNG and of the SVG canvas.
    pub size: (u32, u32),
}

type LinChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

impl CategoryFigure {
    /// The x range: half a category beyond the first and the last.
    pub fn x_range(&self) -> (f64, f64) {
        (-0.5, self.categories.len() as f64 - 0.5)
    }

    /// Writes the figure to `png` and `svg`.
    pub fn save(&self, png: &Path, svg: &Path) -> Result<()> {
        write_png_svg(self, png, svg, self.canvas())
    }

    /// The canvas: the figure's size, plus a band below it when the legend sits there.
    pub fn canvas(&self) -> (u32, u32) {
        (self.size.0, self.size.1 + self.layout().band())
    }

    fn chart<'a, DB: DrawingBackend>(
        &self,
        area: &'a DrawingArea<DB, Shift>,
    ) -> std::result::Result<LinChart<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
        let (x0, x1) = self.x_range();
        let (y0, y1) = self.y_range;
        ChartBuilder::on(area)
            .caption(&self.title, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, y0..y1)
    }

    /// Where the legend goes: a free corner, else below. Guides, their labels and the notes
    /// count as drawn.
    fn layout(&self) -> Layout {
        scratch_layout(self.size, |root| {
            let chart = self.chart(root).ok()?;
            let (y0, y1) = self.y_range;
            let mut obst = obstacles(&chart, &self.series, self.y_range, YScale::Linear);
            let px = |p: (f64, f64)| chart.backend_coord(&p);
            for (x, label) in &self.guides {
                obst.push(Obstacle::Segment(px((*x, y0)), px((*x, y1))));
                let (cx, top) = px((*x, y1));
                let w = text_width(label);
                obst.push(Obstacle::Box((cx - w / 2, top, cx + w / 2, top + 16)));
            }
            for (x, text) in &self.notes {
                let (cx, cy) = px((*x, 0.5 * (y0 + y1)));
                let w = text_width(text);
                obst.push(Obstacle::Box((cx - w / 2, cy - 9, cx + w / 2, cy + 9)));
            }
            let plot = plot_rect(&chart);
            let legend = super::layout::place_legend(
                plot,
                &entries(&self.series, self.palette, None),
                self.legend,
                &obst,
                self.size.0,
            );
            Some(Layout {
                legend,
                guides: Vec::new(),
            })
        })
    }
}

impl Render for CategoryFigure {
    fn render<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let k = self.categories.len();
        let (y0, y1) = self.y_range;
        let lay = self.layout();
        let (top, _) = root.split_vertically(self.size.1);
        let mut chart = self.chart(&top)?;
        // Only integer positions carry a label.
        let xfmt = |x: &f64| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < k {
                self.categories[i as usize].clone()
            } else {
                String::new()
            }
        };
        let yfmt = |y: &f64| match self.y_label_max {
            Some(m) if *y > m + 1e-9 => String::new(),
            _ => plain(*y),
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .bold_line_style(BLACK.mix(0.15))
            .light_line_style(BLACK.mix(0.04))
            .y_label_formatter(&yfmt)
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .x_labels(k)
            .x_label_formatter(&xfmt)
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 16))
            .draw()?;
        for (x, label) in &self.guides {
            chart.draw_series(DashedLineSeries::new(
                vec![(*x, y0), (*x, y1)],
                4,
                4,
                BLACK.mix(0.35).stroke_width(1),
            ))?;
            let style = ("sans-serif", 13)
                .into_font()
                .color(&BLACK.mix(0.6))
                .pos(Pos::new(HPos::Center, VPos::Top));
            chart.draw_series(std::iter::once(Text::new(
                label.clone(),
                (*x, y1 - 0.01 * (y1 - y0)),
                style,
            )))?;
        }
        draw_series(
            &mut chart,
            &self.series,
            self.palette,
            (y0, y1),
            YScale::Linear,
        )?;
        let mid = 0.5 * (y0 + y1);
        for (x, text) in &self.notes {
            let style = ("sans-serif", 16)
                .into_font()
                .color(&BLACK.mix(0.6))
                .pos(Pos::new(HPos::Center, VPos::Center));
            chart.draw_series(std::iter::once(Text::new(text.clone(), (*x, mid), style)))?;
        }
        draw_layout(
            root,
            &entries(&self.series, self.palette, None),
            &lay,
            self.size.1,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Style, color};
    use super::*;

    fn fig(guides: Vec<(f64, String)>) -> CategoryFigure {
        CategoryFigure {
            title: "title T".into(),
            x_label: "x X".into(),
            y_label: "y Y".into(),
            categories: vec!["cat-a".into(), "cat-b".into(), "cat-c".into()],
            y_range: (80.0, 100.0),
            guides,
            series: vec![
                Series {
                    label: Some("first".into()),
                    points: vec![(0.0, 90.0), (1.0, 85.0), (2.0, 95.0)],
                    errors: vec![(88.0, 92.0), (84.0, 86.0), (93.0, 97.0)],
                    style: Style::JoinedPoints,
                    color: 0,
                },
                Series {
                    label: Some("second".into()),
                    points: vec![(0.1, 91.0)],
                    errors: vec![(90.0, 92.0)],
                    style: Style::JoinedPoints,
                    color: 1,
                },
                Series {
                    label: Some("level".into()),
                    points: vec![(-0.5, 98.0), (2.5, 98.0)],
                    errors: Vec::new(),
                    style: Style::Reference,
                    color: 0,
                },
            ],
            palette: Palette::Tableau,
            legend: Corner::LowerLeft,
            notes: vec![(1.0, "note N".into())],
            y_label_max: Some(95.0),
            size: (600, 400),
        }
    }

    fn svg(f: &CategoryFigure) -> String {
        let mut buf = String::new();
        {
            let root = SVGBackend::with_string(&mut buf, f.size).into_drawing_area();
            f.render(&root).unwrap();
            root.present().unwrap();
        }
        buf
    }

    #[test]
    fn category_figure_draws_labels_palette_and_guides() {
        let f = fig(vec![(1.5, "guide G".into())]);
        assert_eq!(f.x_range(), (-0.5, 2.5));
        let s = svg(&f);
        for text in [
            "title T", "x X", "y Y", "cat-a", "cat-b", "cat-c", "first", "second", "level",
            "note N", "guide G",
        ] {
            assert!(s.contains(text), "'{text}' missing from the SVG");
        }
        // Tableau red and blue for indices 0 and 1; no Okabe-Ito blue.
        assert!(s.contains("#D62728") && s.contains("#1F77B4"));
        assert!(!s.contains("#0072B2"));
        // The guide is the only element at opacity 0.35; without guides it is gone.
        assert!(s.contains("\"0.35\""));
        assert!(!svg(&fig(Vec::new())).contains("\"0.35\""));
        // Tick labels above y_label_max (95) are blank; without it some are drawn.
        let ticks = |s: &str| -> Vec<f64> { s.lines().filter_map(|l| l.parse().ok()).collect() };
        let shown = ticks(&s);
        assert!(shown.iter().any(|&y| y > 85.0), "{shown:?}");
        assert!(shown.iter().all(|&y| y <= 95.0), "{shown:?}");
        let mut all = fig(vec![(1.5, "guide G".into())]);
        all.y_label_max = None;
        assert!(ticks(&svg(&all)).iter().any(|&y| y > 95.0));
    }

    #[test]
    fn palettes_cycle_and_okabe_ito_is_the_default() {
        assert_eq!(Palette::Tableau.color(0), RGBColor(214, 39, 40));
        assert_eq!(Palette::Tableau.color(6), Palette::Tableau.color(0));
        assert_eq!(Palette::OkabeIto.color(6), RGBColor(0, 0, 0));
        assert_eq!(Palette::OkabeIto.color(8), Palette::OkabeIto.color(0));
        assert_eq!(Palette::default(), Palette::OkabeIto);
        for i in 0..10 {
            assert_eq!(color(i), Palette::OkabeIto.color(i));
        }
    }

    #[test]
    fn save_writes_png_and_svg() {
        let dir = crate::test_dir::tmpdir("plot-category");
        let (png, svg) = (dir.join("f.png"), dir.join("f.svg"));
        fig(vec![(0.5, "guide G".into())]).save(&png, &svg).unwrap();
        let png_bytes = std::fs::read(&png).unwrap();
        assert_eq!(&png_bytes[1..4], b"PNG");
        assert!(std::fs::read_to_string(&svg).unwrap().contains("cat-b"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
