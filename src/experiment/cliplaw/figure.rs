//! The figures of a clip-norm sweep: the risk curves over tau at each phi (tau* filled, the
//! theorem's tau(phi) open), tau* against phi beside the theorem's tau(phi), and min over tau
//! of the risk against phi beside the uniform-Lipschitz clip and the theorem's schedule.

use std::path::{Path, PathBuf};

use super::analysis::{CliplawSummary, GroupSummary, Minimum};
use crate::error::Result;
use crate::format::fixed;
use crate::plot::{Corner, Figure, Guide, Panels, Series, Style};

const PANEL: (u32, u32) = (760, 560);

fn panel(title: String, x: &str, y: &str, series: Vec<Series>, legend: Corner) -> Figure {
    Figure {
        legend,
        title,
        x_label: x.into(),
        y_label: y.into(),
        series,
        size: PANEL,
        shade: None,
        guides: Vec::new(),
    }
}

fn one(
    label: Option<String>,
    p: (f64, f64),
    err: Option<(f64, f64)>,
    style: Style,
    color: usize,
) -> Series {
    Series {
        label,
        points: vec![p],
        errors: err.into_iter().collect(),
        style,
        color,
    }
}

/// Risk against tau, one line per phi.
fn curves(s: &CliplawSummary, g: &GroupSummary) -> Figure {
    let mut series = Vec::new();
    for (i, c) in g.curves.iter().enumerate() {
        series.push(Series {
            label: Some(format!("phi = {}", crate::format::num(c.phi))),
            points: s.taus.iter().copied().zip(c.risk.iter().copied()).collect(),
            errors: Vec::new(),
            style: Style::Line,
            color: i,
        });
    }
    let best: Vec<(f64, &str)> = g
        .curves
        .iter()
        .map(|c| match (c.minimum, c.plateau) {
            (Minimum::Plateau, Some(p)) => (p.edge.0, "plateau edge (best)"),
            (Minimum::Interior { tau, .. }, _) => (tau, "tau* (smoothed)"),
            _ => (c.grid_best_tau, "grid minimum at the edge"),
        })
        .collect();
    // One legend entry naming every kind of marker the panel shows.
    let mut kinds: Vec<&str> = Vec::new();
    for &(_, what) in &best {
        if !kinds.contains(&what) {
            kinds.push(what);
        }
    }
    let filled = format!("filled: {}", kinds.join(" or "));
    for (i, (c, &(tau, _))) in g.curves.iter().zip(&best).enumerate() {
        let label = (i == 0).then(|| filled.clone());
        series.push(one(label, (tau, c.best.value), None, Style::Points, i));
        let label = (i == 0).then(|| "open: theorem's tau(phi)".to_string());
        series.push(one(
            label,
            (c.schedule_tau, c.schedule.value),
            None,
            Style::Hollow,
            i,
        ));
    }
    let y = if s.theorem.contains('N') || s.theorem == "6.8" {
        "E||grad f||^2"
    } else {
        "excess risk"
    };
    panel(
        format!("{} (tail: {})", g.label, tail_word(g)),
        "clip norm tau",
        y,
        series,
        Corner::UpperLeft,
    )
}

fn tail_word(g: &GroupSummary) -> &'static str {
    match g.tail {
        super::analysis::Tail::ScalesWithPhi => "scales with phi",
        super::analysis::Tail::Fixed => "fixed",
        super::analysis::Tail::Bounded => "bounded",
    }
}

/// tau* (filled, 95% interval) and plateau edges (open) against phi, with the theorem's tau(phi)
/// dashed, one color per series.
fn tau_figure(s: &CliplawSummary) -> Figure {
    let mut series = Vec::new();
    for (gi, g) in s.groups.iter().enumerate() {
        let mut star = Vec::new();
        let mut err = Vec::new();
        let mut edge = Vec::new();
        for c in &g.curves {
            if let Minimum::Interior { tau, lo, hi, .. } = c.minimum {
                star.push((c.phi, tau));
                err.push((lo, hi));
            } else if let Some(p) = c.plateau.filter(|p| p.edge.1.is_finite()) {
                edge.push((c.phi, (p.edge.0 * p.edge.1).sqrt()));
            }
        }
        let slope = |l: &Option<super::analysis::Law>| {
            l.as_ref()
                .map(|l| {
                    format!(
                        " slope {} [{}, {}]",
                        fixed(l.slope, 2),
                        fixed(l.lo, 2),
                        fixed(l.hi, 2)
                    )
                })
                .unwrap_or_default()
        };
        if !star.is_empty() {
            series.push(Series {
                label: Some(format!("{}: tau*{}", g.label, slope(&g.tau_law))),
                points: star,
                errors: err,
                style: Style::Points,
                color: gi,
            });
        }
        if !edge.is_empty() {
            series.push(Series {
                label: Some(format!("{}: plateau edge{}", g.label, slope(&g.edge_law))),
                points: edge,
                errors: Vec::new(),
                style: Style::Hollow,
                color: gi,
            });
        }
        series.push(Series {
            label: Some(format!(
                "{}: theorem's tau(phi), slope {}",
                g.label,
                fixed(g.tau_exponent.unwrap_or(f64::NAN), 2)
            )),
            points: g.curves.iter().map(|c| (c.phi, c.schedule_tau)).collect(),
            errors: Vec::new(),
            style: Style::Dashed,
            color: gi,
        });
        // Uniform-Lipschitz tuning's clip norm, for scale: tau* against max G_i (on Q_v it grows
        // with n like n^(1/k)).
        series.push(Series {
            label: Some(format!("{}: max G_i (uniform Lipschitz)", g.label)),
            points: g.curves.iter().map(|c| (c.phi, c.uniform_tau)).collect(),
            errors: Vec::new(),
            style: Style::Dotted,
            color: gi,
        });
    }
    let mut f = panel(
        format!("{}: best clip norm", s.title),
        "phi",
        "clip norm",
        series,
        Corner::UpperRight,
    );
    f.size = (1100, 800);
    f
}

/// Min over tau (filled), tau = max G_i (open) and the theorem's schedule (line) against phi,
/// with gray guides of the bounds' exponents beside the data (slopes only, not bounds).
fn risk_panel(g: &GroupSummary) -> Figure {
    let best: Vec<(f64, f64)> = g.curves.iter().map(|c| (c.phi, c.best.value)).collect();
    let mut series = vec![
        Series {
            label: Some(format!(
                "min over tau{}",
                g.risk_law
                    .as_ref()
                    .map(|l| format!(
                        ": slope {} [{}, {}]",
                        fixed(l.slope, 2),
                        fixed(l.lo, 2),
                        fixed(l.hi, 2)
                    ))
                    .unwrap_or_default()
            )),
            points: best.clone(),
            errors: g.curves.iter().map(|c| (c.best.lo, c.best.hi)).collect(),
            style: Style::Points,
            color: 0,
        },
        Series {
            label: Some("tau = max G_i (uniform Lipschitz)".into()),
            points: g.curves.iter().map(|c| (c.phi, c.uniform.value)).collect(),
            errors: g
                .curves
                .iter()
                .map(|c| (c.uniform.lo, c.uniform.hi))
                .collect(),
            style: Style::Hollow,
            color: 1,
        },
        Series {
            label: Some("theorem's tau(phi)".into()),
            points: g.curves.iter().map(|c| (c.phi, c.schedule.value)).collect(),
            errors: Vec::new(),
            style: Style::Line,
            color: 2,
        },
        // The trivial baseline beside the claim: f(w0) - f*, no step taken. On Q_v it falls like
        // phi^(1 - 1/k) by construction, so a min-risk slope equal to 1 - 1/k is the instance's,
        // not the algorithm's; the vertical gap is what DP-SGD gains.
        Series {
            label: Some(format!(
                "do nothing (w = w0){}",
                g.do_nothing_law
                    .as_ref()
                    .map(|l| format!(": slope {}", fixed(l.slope, 2)))
                    .unwrap_or_default()
            )),
            points: g.curves.iter().map(|c| (c.phi, c.risk0)).collect(),
            errors: Vec::new(),
            style: Style::Line,
            color: 5,
        },
    ];
    let mut guides = Vec::new();
    if !best.is_empty() {
        let same = g
            .lower_exponent
            .is_some_and(|e| (e - g.risk_exponent).abs() < 1e-12);
        let key = if same {
            "bounds' slope, upper = lower 1 - 1/k (gray dashed; not a bound)".to_string()
        } else if g.lower_exponent.is_some() {
            "slopes of the upper and the lower bound (gray dashed; not bounds)".to_string()
        } else {
            "upper bound's slope (gray dashed; not a bound)".to_string()
        };
        series.push(Series {
            label: Some(key),
            points: Vec::new(),
            errors: Vec::new(),
            style: Style::Guide,
            color: 0,
        });
        let guide = |e: f64, what: &str| Guide {
            slope: e,
            label: format!("slope {e:.2}{what}"),
            near: best.clone(),
        };
        if let Some(e) = g.lower_exponent.filter(|_| !same) {
            guides.push(guide(g.risk_exponent, " (upper)"));
            guides.push(guide(e, " (lower)"));
        } else {
            guides.push(guide(g.risk_exponent, ""));
        }
    }
    let mut f = panel(g.label.clone(), "phi", "risk", series, Corner::LowerRight);
    f.guides = guides;
    f
}

/// Writes the three figures into `dir`; returns their stems.
pub fn save_all(s: &CliplawSummary, dir: &Path) -> Result<Vec<PathBuf>> {
    let cols = if s.groups.len() > 2 {
        2
    } else {
        s.groups.len().max(1)
    };
    let stems = [
        dir.join(format!("{}_curves", s.spec)),
        dir.join(format!("{}_tau", s.spec)),
        dir.join(format!("{}_risk", s.spec)),
    ];
    Panels {
        title: format!("{}: risk against the clip norm (eta tau fixed)", s.title),
        figures: s.groups.iter().map(|g| curves(s, g)).collect(),
        cols,
        // A lone panel gets the width of the tau figure, so the caption fits.
        panel: if cols == 1 { (1300, 760) } else { PANEL },
    }
    .save(&stems[0])?;
    tau_figure(s).save(&stems[1])?;
    Panels {
        title: format!(
            "{}: best clip norm, uniform Lipschitz and the schedule",
            s.title
        ),
        figures: s.groups.iter().map(risk_panel).collect(),
        cols,
        // A lone panel gets the width of the tau figure, so the caption fits.
        panel: if cols == 1 { (1300, 760) } else { PANEL },
    }
    .save(&stems[2])?;
    Ok(stems.to_vec())
}
