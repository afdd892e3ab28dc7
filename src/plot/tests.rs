//! Figures laid out end to end: the legend and the slope guides never cover a drawn marker,
//! error bar or line, and the axes are fitted to what is drawn.

use super::layout::{CLEARANCE, Obstacle, Place};
use super::*;

/// A reproducible stream in [0, 1) (a 64-bit LCG; the figures only need scattered points).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn figure(series: Vec<Series>, legend: Corner, guides: Vec<Guide>) -> Figure {
    Figure {
        title: "title".into(),
        x_label: "phi".into(),
        y_label: "risk".into(),
        series,
        size: (760, 560),
        shade: None,
        legend,
        guides,
    }
}

/// The figure's obstacles and plot rectangle, as its layout sees them.
fn drawn(f: &Figure) -> (Vec<Obstacle>, layout::Rect) {
    let mut buf = String::new();
    let root = SVGBackend::with_string(&mut buf, f.size).into_drawing_area();
    let chart = f.chart(&root).expect("a scratch chart builds");
    let (_, yr) = f.range();
    (
        draw::obstacles(&chart, &f.series, yr, YScale::Log),
        plot_rect(&chart),
    )
}

/// Three labelled series of points with bars and a line through them, at random positions
/// (log-uniform over four decades), so that any corner may be taken.
fn random_series(rng: &mut Lcg) -> Vec<Series> {
    (0..3)
        .map(|i| {
            let pts: Vec<(f64, f64)> = (0..6)
                .map(|_| {
                    (
                        10f64.powf(-3.0 + 2.0 * rng.next()),
                        10f64.powf(-2.0 + 2.0 * rng.next()),
                    )
                })
                .collect();
            Series {
                label: Some(format!("series number {i} with a long label")),
                errors: pts.iter().map(|p| (p.1 / 1.3, p.1 * 1.3)).collect(),
                points: pts,
                style: if i == 2 { Style::Line } else { Style::Points },
                color: i,
            }
        })
        .collect()
}

/// On 40 random figures the legend box inside the plot never comes within the clearance of a
/// marker, a bar or a line; where no corner is free it goes below, and the canvas grows.
#[test]
fn legend_never_covers_a_drawn_point() {
    let mut rng = Lcg(48);
    let (mut inside, mut below) = (0, 0);
    for t in 0..40 {
        let prefer = [
            Corner::LowerRight,
            Corner::UpperLeft,
            Corner::UpperRight,
            Corner::LowerLeft,
        ][t % 4];
        let f = figure(random_series(&mut rng), prefer, Vec::new());
        let (obst, plot) = drawn(&f);
        match f.layout(f.size).legend {
            Place::Inside(r) => {
                inside += 1;
                assert!(
                    layout::inside(r, plot),
                    "figure {t}: {r:?} outside {plot:?}"
                );
                for o in &obst {
                    assert!(
                        !o.hits(r, CLEARANCE),
                        "figure {t}: legend {r:?} covers {o:?}"
                    );
                }
                assert_eq!(f.canvas(), f.size);
            }
            Place::Below { height, .. } => {
                below += 1;
                assert_eq!(f.canvas(), (f.size.0, f.size.1 + height));
            }
            Place::None => panic!("figure {t} has labelled series"),
        }
    }
    // Both branches ran.
    assert!(inside > 0 && below > 0, "inside {inside}, below {below}");
}

/// A rising series over the whole axis with a guide of its own slope: the guide is placed off
/// the points, bars and line (not through them, where a bound would be drawn).
#[test]
fn slope_guides_keep_off_the_data() {
    let pts: Vec<(f64, f64)> = (0..8)
        .map(|i| {
            let x = 1e-3 * 10f64.powf(i as f64 / 3.5);
            (x, 0.5 * x.powf(0.5))
        })
        .collect();
    let other: Vec<(f64, f64)> = pts.iter().map(|&(x, y)| (x, 0.2 * y)).collect();
    let series = vec![
        Series {
            label: Some("a".into()),
            errors: pts.iter().map(|p| (p.1 / 1.2, p.1 * 1.2)).collect(),
            points: pts.clone(),
            style: Style::Points,
            color: 0,
        },
        Series {
            label: Some("b".into()),
            errors: Vec::new(),
            points: other,
            style: Style::Line,
            color: 1,
        },
    ];
    let guides = vec![Guide {
        slope: 0.5,
        label: "slope 0.50".into(),
        near: pts,
    }];
    let f = figure(series, Corner::UpperLeft, guides);
    let (obst, plot) = drawn(&f);
    let lay = f.layout(f.size);
    assert_eq!(lay.guides.len(), 1);
    let g = &lay.guides[0];
    assert_eq!(g.conflicts(&obst), 0, "{g:?}");
    assert!(layout::inside(g.label_box, plot));
    // Its drawn slope in pixels is that of the data: y falls 0.5 decade per x decade.
    assert!(g.to.0 > g.from.0 && g.to.1 < g.from.1);
}

/// The y axis of a series spanning one decade is fitted to it: less than a tenth of the
/// axis (in decades) lies beyond the data on either side, and a single value still gets a
/// range around it.
#[test]
fn axes_fit_the_data_drawn() {
    let s = Series {
        label: None,
        points: vec![(1e-3, 0.01), (1e-2, 0.1)],
        errors: vec![(0.009, 0.011), (0.09, 0.11)],
        style: Style::JoinedPoints,
        color: 0,
    };
    let f = figure(vec![s], Corner::LowerRight, Vec::new());
    let ((x0, x1), (y0, y1)) = f.range();
    let span = (y1 / y0).log10();
    assert!((0.009 / y0).log10() < 0.1 * span && (y1 / 0.11).log10() < 0.1 * span);
    assert!((1e-3 / x0).log10() < 0.1 * (x1 / x0).log10());
    assert!(y0 < 0.009 && y1 > 0.11);
    let one = Series {
        label: None,
        points: vec![(0.5, 1e-3), (0.6, 1e-3)],
        errors: Vec::new(),
        style: Style::Points,
        color: 0,
    };
    let (_, (y0, y1)) = figure(vec![one], Corner::LowerRight, Vec::new()).range();
    assert!(y0 < 1e-3 && y1 > 1e-3, "{y0} {y1}");
    assert!(((y1 / y0).log10() - 0.5).abs() < 1e-9, "{y0} {y1}");
}

/// The saved SVG of a figure prints powers of ten, not "1e-3".
#[test]
fn saved_figure_prints_powers_of_ten() {
    let s = Series {
        label: Some("a".into()),
        points: vec![(1e-3, 1e-4), (1e-1, 1e-2)],
        errors: Vec::new(),
        style: Style::Line,
        color: 0,
    };
    let f = figure(vec![s], Corner::LowerRight, Vec::new());
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, f.canvas()).into_drawing_area();
        f.render(&root).expect("the figure draws");
        root.present().expect("the SVG is written");
    }
    assert!(
        buf.contains("10⁻³") && buf.contains("10⁻²"),
        "no power of ten drawn"
    );
    assert!(!buf.contains("1e-3") && !buf.contains("e-2<"));
}
