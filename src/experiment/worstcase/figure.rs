//! Figures of a worst-case run: the worst OR / bound found against phi per k (fresh
//! re-estimates with their intervals, the line OR / bound = 1), and the worst instances drawn at
//! the largest and the smallest phi (each component's share of the rows against its G_i / G, and
//! against its centre's distance from the rows' mean centre over D0).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::WorstCell;
use super::report::WorstSummary;
use crate::error::Result;
use crate::experiment::spec::fmt_k;
use crate::format::num;
use crate::plot::{Corner, Figure, Panels, Series, Style};

const PANEL: (u32, u32) = (760, 560);
/// Relative offset in phi between the k series of the worst-case figure.
const DODGE: f64 = 0.04;

/// The plot corner with the fewest points (on log axes), where the legend covers least data.
fn emptiest_corner(series: &[Series]) -> Corner {
    let pts: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| &s.points)
        .filter(|p| p.0 > 0.0 && p.1 > 0.0)
        .map(|p| (p.0.ln(), p.1.ln()))
        .collect();
    let mid = |f: fn(&(f64, f64)) -> f64| {
        let (lo, hi) = pts
            .iter()
            .map(f)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
        0.5 * (lo + hi)
    };
    let (mx, my) = (mid(|p| p.0), mid(|p| p.1));
    let count = |right: bool, upper: bool| {
        pts.iter()
            .filter(|p| (p.0 > mx) == right && (p.1 > my) == upper)
            .count()
    };
    [
        (Corner::UpperRight, count(true, true)),
        (Corner::UpperLeft, count(false, true)),
        (Corner::LowerRight, count(true, false)),
        (Corner::LowerLeft, count(false, false)),
    ]
    .into_iter()
    .min_by_key(|c| c.1)
    .map_or(Corner::UpperRight, |c| c.0)
}

fn figure(title: String, x: &str, y: &str, series: Vec<Series>, legend: Corner) -> Figure {
    Figure {
        title,
        x_label: x.into(),
        y_label: y.into(),
        series,
        size: PANEL,
        shade: None,
        legend,
        guides: Vec::new(),
    }
}

/// Worst OR / bound (or OR / (G D0) where the instances have no bound) against phi.
fn worst(s: &WorstSummary) -> Figure {
    let bound = s
        .groups
        .iter()
        .flat_map(|g| &g.rows)
        .all(|r| r.ratio.is_some());
    let mut series = Vec::new();
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    let groups = s.groups.len() as f64;
    for (i, g) in s.groups.iter().enumerate() {
        // Series of different k at one phi can coincide (K.1's k = 2 and 4 both near 0.32):
        // each is drawn DODGE apart in phi (the axis label says so) so that every one shows.
        let dodge = (1.0 + DODGE).powf(i as f64 - (groups - 1.0) / 2.0);
        let pts: Vec<(f64, f64, f64, f64)> = g
            .rows
            .iter()
            .map(|r| {
                let e = if bound {
                    r.ratio.unwrap_or(r.or_gd0)
                } else {
                    r.or_gd0
                };
                (r.phi * dodge, e.value, e.lo, e.hi)
            })
            .collect();
        lo = pts.iter().map(|p| p.0).fold(lo, f64::min);
        hi = pts.iter().map(|p| p.0).fold(hi, f64::max);
        series.push(Series {
            label: Some(g.label.clone()),
            points: pts.iter().map(|p| (p.0, p.1)).collect(),
            errors: pts.iter().map(|p| (p.2, p.3)).collect(),
            style: Style::JoinedPoints,
            color: i,
        });
    }
    if bound && lo.is_finite() {
        series.push(Series {
            label: Some("OR / bound = 1".into()),
            points: vec![(lo, 1.0), (hi, 1.0)],
            errors: Vec::new(),
            style: Style::Reference,
            color: 0,
        });
    }
    figure(
        format!("{}: worst case found (fresh re-estimates, 95%)", s.spec),
        // H.1's series are clip rules (tau = G_(q)), not tail indices.
        if s.theorem == "5.4" || s.theorem.contains("H.1") {
            "phi (each clip norm tau drawn 4% apart)"
        } else {
            "phi (each k drawn 4% apart)"
        },
        if bound {
            "OR / bound at the worst instance"
        } else {
            "OR / (G D0) at the worst instance"
        },
        series,
        Corner::LowerRight,
    )
}

/// Each component (with rows) of the worst instances at one phi: (share, G_j / G) and
/// (share, distance of its centre from the row-weighted mean centre / D0, floored at 1e-3).
/// Each series is named by `labels[series]` (the spec's series label: "k = 2", or for H.1's two
/// k = inf series their clip quantile).
fn instances(cells: &[&WorstCell], labels: &[String], d0: f64, title: String) -> [Figure; 2] {
    let mut weights = Vec::new();
    let mut centres = Vec::new();
    for (i, w) in cells.iter().enumerate() {
        let inst = &w.instance;
        let d = inst.centre.first().map_or(0, |c| c.len());
        let mut mid = vec![0.0; d];
        for (c, &r) in inst.centre.iter().zip(&inst.rows) {
            for (m, v) in mid.iter_mut().zip(c) {
                *m += v * r as f64 / w.n as f64;
            }
        }
        let live: Vec<usize> = (0..inst.rows.len()).filter(|&j| inst.rows[j] > 0).collect();
        let share = |j: usize| inst.rows[j] as f64 / w.n as f64;
        let label = Some(
            labels
                .get(w.series)
                .cloned()
                .unwrap_or_else(|| format!("k = {}", fmt_k(w.k))),
        );
        weights.push(Series {
            label: label.clone(),
            points: live
                .iter()
                .map(|&j| (share(j), inst.weight[j] / w.g))
                .collect(),
            errors: Vec::new(),
            style: Style::Points,
            color: i,
        });
        centres.push(Series {
            label,
            points: live
                .iter()
                .map(|&j| {
                    let dist = crate::linalg::dist(&inst.centre[j], &mid);
                    (share(j), (dist / d0).max(1e-3))
                })
                .collect(),
            errors: Vec::new(),
            style: Style::Points,
            color: i,
        });
    }
    [
        figure(
            format!("{title}: G_i / G per component"),
            "share of the rows",
            "G_i / G",
            weights.clone(),
            emptiest_corner(&weights),
        ),
        figure(
            format!("{title}: centres"),
            "share of the rows",
            "||c_j - mean centre|| / D0 (floor 1e-3)",
            centres.clone(),
            emptiest_corner(&centres),
        ),
    ]
}

/// Writes `<spec>_worst` and `<spec>_instances` (PNG + SVG) into `dir`; returns their stems.
pub fn save_all(
    s: &WorstSummary,
    cells: &BTreeMap<usize, WorstCell>,
    d0: f64,
    dir: &Path,
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)
        .map_err(|e| crate::error::Error::io(dir.display().to_string(), e))?;
    let a = dir.join(format!("{}_worst", s.spec));
    worst(s).save(&a)?;
    let phis: Vec<f64> = {
        let mut v: Vec<f64> = cells.values().map(|w| w.phi).collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    };
    let labels: Vec<String> = s.groups.iter().map(|g| g.label.clone()).collect();
    let mut figures = Vec::new();
    for phi in [phis.last(), phis.first()].into_iter().flatten() {
        let at: Vec<&WorstCell> = cells.values().filter(|w| w.phi == *phi).collect();
        figures.extend(instances(&at, &labels, d0, format!("phi = {}", num(*phi))));
    }
    let b = dir.join(format!("{}_instances", s.spec));
    Panels {
        title: format!("{}: the worst instances found", s.spec),
        figures,
        cols: 2,
        panel: PANEL,
    }
    .save(&b)?;
    Ok(vec![a, b])
}
