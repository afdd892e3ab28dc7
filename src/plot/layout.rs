//! Where the legend box and the slope guides go, in pixels of the plot: never over a drawn
//! point, error bar or line. The legend takes the first free corner (the figure's preferred one
//! first), else a band below the plot; a slope guide takes the free position nearest to the
//! series it belongs to.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor;

use super::{DrawResult, Style};

/// A pixel rectangle (x0, y0, x1, y1), x0 <= x1 and y0 <= y1 (y grows downwards).
pub type Rect = (i32, i32, i32, i32);

/// Font size of legend and guide labels.
pub const FONT: u32 = 14;
/// Height of one legend row.
const ROW: i32 = 20;
/// Padding inside the legend box and between it and the plot's frame.
const PAD: i32 = 8;
/// Width of a legend key and the gap after it.
const KEY: i32 = 30;
/// Pixels kept free around every drawn element.
pub const CLEARANCE: i32 = 6;

/// Something drawn that a legend or a guide must not cover.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Obstacle {
    /// A marker: centre and radius.
    Disc((i32, i32), i32),
    /// A line piece or an error bar.
    Segment((i32, i32), (i32, i32)),
    /// A text or another box.
    Box(Rect),
}

impl Obstacle {
    /// Whether the obstacle comes within `clear` pixels of rectangle `r`.
    pub fn hits(&self, r: Rect, clear: i32) -> bool {
        let g = (r.0 - clear, r.1 - clear, r.2 + clear, r.3 + clear);
        match *self {
            Obstacle::Disc((x, y), rad) => {
                x + rad >= g.0 && x - rad <= g.2 && y + rad >= g.1 && y - rad <= g.3
            }
            Obstacle::Box(b) => b.0 <= g.2 && b.2 >= g.0 && b.1 <= g.3 && b.3 >= g.1,
            Obstacle::Segment(a, b) => segment_meets_rect(a, b, g),
        }
    }
}

/// Liang-Barsky: whether segment ab meets the closed rectangle r.
fn segment_meets_rect(a: (i32, i32), b: (i32, i32), r: Rect) -> bool {
    let (x0, y0) = (a.0 as f64, a.1 as f64);
    let (dx, dy) = ((b.0 - a.0) as f64, (b.1 - a.1) as f64);
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (p, q) in [
        (-dx, x0 - r.0 as f64),
        (dx, r.2 as f64 - x0),
        (-dy, y0 - r.1 as f64),
        (dy, r.3 as f64 - y0),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return false;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
            if t0 > t1 {
                return false;
            }
        }
    }
    true
}

/// The width in pixels of `text` at [`FONT`] (from the font; about 0.6 em a character if the
/// font cannot be read).
pub fn text_width(text: &str) -> i32 {
    ("sans-serif", FONT)
        .into_font()
        .box_size(text)
        .map_or((text.chars().count() as u32 * FONT * 3 / 5) as i32, |b| {
            b.0 as i32
        })
}

/// One legend row: its label, key and color.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The text.
    pub label: String,
    /// The key drawn before it: a series style, or None for a shaded band.
    pub key: Option<Style>,
    /// The key's color.
    pub color: RGBColor,
}

/// Width and height of the legend box holding `entries` in one column.
pub fn box_size(entries: &[Entry]) -> (i32, i32) {
    let w = entries
        .iter()
        .map(|e| text_width(&e.label))
        .max()
        .unwrap_or(0);
    (2 * PAD + KEY + w, 2 * PAD + ROW * entries.len() as i32)
}

/// Where the legend goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// No entries: no legend.
    None,
    /// Inside the plot, this box (pixels of the figure's area).
    Inside(Rect),
    /// In a band of `height` pixels added below the figure, `cols` entries a row.
    Below {
        /// Entries per row.
        cols: usize,
        /// Height of the band.
        height: u32,
    },
}

/// The box of size `(w, h)` in corner `c` of `plot`, PAD from its frame.
pub fn corner_box(plot: Rect, (w, h): (i32, i32), c: super::Corner) -> Rect {
    use super::Corner::*;
    let x0 = match c {
        UpperLeft | LowerLeft => plot.0 + PAD,
        UpperRight | LowerRight => plot.2 - PAD - w,
    };
    let y0 = match c {
        UpperLeft | UpperRight => plot.1 + PAD,
        LowerLeft | LowerRight => plot.3 - PAD - h,
    };
    (x0, y0, x0 + w, y0 + h)
}

/// The legend's place: the first corner of `plot` (`prefer` first, then the others) whose box
/// covers no obstacle, else a band below a figure `width` pixels wide.
pub fn place_legend(
    plot: Rect,
    entries: &[Entry],
    prefer: super::Corner,
    obstacles: &[Obstacle],
    width: u32,
) -> Place {
    use super::Corner::*;
    if entries.is_empty() {
        return Place::None;
    }
    let size = box_size(entries);
    let fits = size.0 <= plot.2 - plot.0 - 2 * PAD && size.1 <= plot.3 - plot.1 - 2 * PAD;
    let corners = [prefer, UpperRight, UpperLeft, LowerRight, LowerLeft];
    if fits {
        for c in corners {
            let r = corner_box(plot, size, c);
            if !obstacles.iter().any(|o| o.hits(r, CLEARANCE)) {
                return Place::Inside(r);
            }
        }
    }
    let col = size.0 - 2 * PAD + 2 * PAD;
    let cols = ((width as i32 - 2 * PAD) / col.max(1)).clamp(1, entries.len() as i32) as usize;
    let rows = entries.len().div_ceil(cols) as i32;
    Place::Below {
        cols,
        height: (2 * PAD + ROW * rows + PAD) as u32,
    }
}

/// Draws the legend `entries` in a box at `(x0, y0)`, `cols` entries a row (column width from
/// the widest label); `framed` draws the white box with a frame around it.
pub fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[Entry],
    (x0, y0): (i32, i32),
    cols: usize,
    framed: bool,
) -> DrawResult<DB> {
    let (w1, _) = box_size(entries);
    let col = w1 - 2 * PAD + 2 * PAD;
    let cols = cols.max(1);
    let rows = entries.len().div_ceil(cols) as i32;
    if framed {
        let r = [
            (x0, y0),
            (
                x0 + cols as i32 * col - 2 * PAD + 2 * PAD,
                y0 + 2 * PAD + ROW * rows,
            ),
        ];
        area.draw(&Rectangle::new(r, WHITE.mix(0.9).filled()))?;
        area.draw(&Rectangle::new(r, BLACK.stroke_width(1)))?;
    }
    for (i, e) in entries.iter().enumerate() {
        // Column by column, so that related rows stay one under the other.
        let (r, c) = ((i as i32 % rows), (i as i32 / rows));
        let x = x0 + PAD + c * col;
        let y = y0 + PAD + ROW * r + ROW / 2;
        area.draw(&key(e.key, e.color, (x, y)))?;
        let style = ("sans-serif", FONT)
            .into_font()
            .color(&BLACK)
            .pos(text_anchor::Pos::new(
                text_anchor::HPos::Left,
                text_anchor::VPos::Center,
            ));
        area.draw(&Text::new(e.label.clone(), (x + KEY, y), style))?;
    }
    Ok(())
}

/// The key of a legend row at `(x, y)` (its left end, vertically centred): a marker, a stroke
/// in the series' dash pattern, or a shaded square.
fn key<DB: DrawingBackend>(
    style: Option<Style>,
    c: RGBColor,
    (x, y): (i32, i32),
) -> DynElement<'static, DB, (i32, i32)> {
    let dashed = |size: i32, gap: i32, color: RGBColor| {
        DashedPathElement::new(vec![(x, y), (x + 22, y)], size, gap, color.stroke_width(2))
            .into_dyn()
    };
    match style {
        None => Rectangle::new([(x, y - 6), (x + 20, y + 6)], BLACK.mix(0.07).filled()).into_dyn(),
        Some(Style::Points | Style::JoinedPoints) => {
            Circle::new((x + 10, y), 5, c.filled()).into_dyn()
        }
        Some(Style::Hollow) => Circle::new((x + 10, y), 5, c.stroke_width(2)).into_dyn(),
        Some(Style::Line) => {
            PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(2)).into_dyn()
        }
        Some(Style::Dashed) => dashed(8, 6, c),
        Some(Style::Dotted) => dashed(2, 5, c),
        Some(Style::Reference) => dashed(8, 5, BLACK),
        Some(Style::Guide) => dashed(6, 4, GUIDE),
    }
}

/// The gray of the slope guides.
pub const GUIDE: RGBColor = RGBColor(110, 110, 110);

/// A slope guide placed in pixels: its segment and its label's anchor (left end, centred).
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedGuide {
    /// The segment.
    pub from: (i32, i32),
    /// The segment's other end.
    pub to: (i32, i32),
    /// The label.
    pub label: String,
    /// The label's box.
    pub label_box: Rect,
}

impl PlacedGuide {
    /// The guide's segment and label as obstacles for what is placed after it.
    pub fn obstacles(&self) -> [Obstacle; 2] {
        [
            Obstacle::Segment(self.from, self.to),
            Obstacle::Box(self.label_box),
        ]
    }

    /// How many of `obstacles` the guide's segment (within [`CLEARANCE`]) or label touches.
    pub fn conflicts(&self, obstacles: &[Obstacle]) -> usize {
        obstacles
            .iter()
            .filter(|o| o.hits(self.label_box, CLEARANCE) || segment_near(self.from, self.to, o))
            .count()
    }

    /// Draws the guide: a gray dashed segment with its label at the right end.
    pub fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        area.draw(&DashedPathElement::new(
            vec![self.from, self.to],
            6,
            4,
            GUIDE.stroke_width(2),
        ))?;
        let style = ("sans-serif", FONT)
            .into_font()
            .color(&GUIDE)
            .pos(text_anchor::Pos::new(
                text_anchor::HPos::Left,
                text_anchor::VPos::Top,
            ));
        area.draw(&Text::new(
            self.label.clone(),
            (self.label_box.0, self.label_box.1),
            style,
        ))
    }
}

/// Whether segment ab comes within [`CLEARANCE`] of obstacle `o` (sampled every 3 pixels).
fn segment_near(a: (i32, i32), b: (i32, i32), o: &Obstacle) -> bool {
    let len = (((b.0 - a.0).pow(2) + (b.1 - a.1).pow(2)) as f64).sqrt();
    let n = (len / 3.0).ceil().max(1.0) as i32;
    (0..=n).any(|i| {
        let t = i as f64 / n as f64;
        let x = a.0 + ((b.0 - a.0) as f64 * t).round() as i32;
        let y = a.1 + ((b.1 - a.1) as f64 * t).round() as i32;
        o.hits((x, y, x, y), CLEARANCE)
    })
}

/// The candidate that touches the fewest obstacles and, among equals, comes first: `cands`
/// are ordered by preference (nearest to the series first). None without candidates.
pub fn best_guide(cands: Vec<PlacedGuide>, obstacles: &[Obstacle]) -> Option<PlacedGuide> {
    let mut best: Option<(usize, PlacedGuide)> = None;
    for g in cands {
        let n = g.conflicts(obstacles);
        if n == 0 {
            return Some(g);
        }
        if best.as_ref().is_none_or(|b| n < b.0) {
            best = Some((n, g));
        }
    }
    best.map(|b| b.1)
}

/// Whether rectangle `inner` lies inside `outer`.
pub fn inside(inner: Rect, outer: Rect) -> bool {
    inner.0 >= outer.0 && inner.1 >= outer.1 && inner.2 <= outer.2 && inner.3 <= outer.3
}

/// The label box of a guide ending at `to`: to its right, centred on the end.
pub fn label_box(label: &str, to: (i32, i32)) -> Rect {
    let w = text_width(label);
    let h = FONT as i32 + 2;
    (to.0 + 4, to.1 - h / 2, to.0 + 4 + w, to.1 + h / 2)
}

#[cfg(test)]
mod tests {
    use super::super::Corner;
    use super::*;

    fn entries(n: usize) -> Vec<Entry> {
        (0..n)
            .map(|i| Entry {
                label: format!("series {i}"),
                key: Some(Style::Points),
                color: BLACK,
            })
            .collect()
    }

    #[test]
    fn segments_meet_rectangles_as_drawn() {
        let r = (10, 10, 20, 20);
        assert!(segment_meets_rect((0, 0), (30, 30), r));
        assert!(segment_meets_rect((15, 0), (15, 5), (10, 0, 20, 20)));
        assert!(!segment_meets_rect((0, 0), (30, 0), r));
        assert!(!segment_meets_rect((0, 25), (25, 50), r));
        assert!(Obstacle::Disc((25, 15), 3).hits(r, 2));
        assert!(!Obstacle::Disc((30, 15), 3).hits(r, 2));
    }

    /// The legend takes the preferred corner when it is free, moves to a free corner when
    /// points sit in the preferred one, and goes below the plot when every corner is taken.
    #[test]
    fn legend_never_covers_an_obstacle() {
        let plot = (0, 0, 800, 600);
        let e = entries(3);
        let at = |c| corner_box(plot, box_size(&e), c);
        assert_eq!(
            place_legend(plot, &e, Corner::LowerRight, &[], 800),
            Place::Inside(at(Corner::LowerRight))
        );
        let lr = Obstacle::Disc((780, 580), 5);
        assert_eq!(
            place_legend(plot, &e, Corner::LowerRight, &[lr], 800),
            Place::Inside(at(Corner::UpperRight))
        );
        let all = [
            lr,
            Obstacle::Segment((0, 20), (800, 20)),
            Obstacle::Disc((20, 580), 5),
        ];
        assert!(matches!(
            place_legend(plot, &e, Corner::LowerRight, &all, 800),
            Place::Below { cols: 3, .. }
        ));
    }
}
