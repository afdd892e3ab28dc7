//! The per-spec figure: risk against phi on log-log axes, drawn through [`crate::plot`].

use std::collections::BTreeMap;

use super::fit;
use super::report::fmt_fit;
use super::results::CellResult;
use super::spec::Spec;
use super::verdict::{SeriesSummary, SpecSummary, reps_of};
use crate::plot::{Figure, Guide, Series, Style};

/// x factor of a control's markers (a 4% shift to the right of its series' markers).
const CONTROL_DODGE: f64 = 1.04;

/// 95% error bars of a cell: mean +- 1.96 standard errors over its replicates.
fn error_bar(r: &[f64]) -> (f64, (f64, f64)) {
    let m = fit::mean(r);
    let sd =
        (r.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (r.len().max(2) - 1) as f64).sqrt();
    let se = 1.96 * sd / (r.len() as f64).sqrt();
    (m, ((m - se).max(m * 1e-3), m + se))
}

/// A series' points and 95% error bars, and its mean bound per phi where every replicate has one.
type Measured = (Vec<(f64, f64)>, Vec<(f64, f64)>, Vec<(f64, f64)>);

/// The cells of series `i` as points, error bars and bounds.
fn measured(i: usize, cells: &BTreeMap<usize, CellResult>) -> Measured {
    let (mut pts, mut err, mut bnd) = (Vec::new(), Vec::new(), Vec::new());
    for c in cells.values().filter(|c| c.series == i) {
        let (m, e) = error_bar(&reps_of(c));
        pts.push((c.phi, m));
        err.push(e);
        let b: Option<Vec<f64>> = c.replicates.iter().map(|r| r.bound).collect();
        if let Some(b) = b {
            bnd.push((c.phi, fit::mean(&b)));
        }
    }
    (pts, err, bnd)
}

/// The layers of one (non-control) series: its markers with the legend entry, the fit over the
/// smallest decade (solid) and the bound (dotted). A lower bound without its constant is drawn
/// as its shape c G phi^(1-1/k) (Eq. 130) at the largest c under every mean.
fn series_layers(x: &SeriesSummary, m: Measured, color: usize, lower: bool) -> Vec<Series> {
    let (pts, err, bnd) = m;
    let line = |points, style| Series {
        label: None,
        points,
        errors: vec![],
        style,
        color,
    };
    let mut out = vec![Series {
        label: Some(format!(
            "{}: {} vs {:.2}",
            x.label,
            fmt_fit(&x.decade),
            x.predicted
        )),
        points: pts.clone(),
        errors: err,
        style: Style::Points,
        color,
    }];
    if let Some(f) = &x.decade {
        let (a, b) = f.phi_range;
        let at = |p: f64| (p, (f.intercept + f.slope * p.ln()).exp());
        out.push(line(vec![at(a), at(b)], Style::Line));
    }
    if !bnd.is_empty() {
        out.push(line(bnd, Style::Dotted));
    } else if lower {
        out.push(line(lower_shape(&pts, x.predicted), Style::Dotted));
    }
    out
}

/// Thm 6.6 / L.1, Thm I.3 (Eq. 130): OR >= c G phi^(1-1/k) with c unstated (an Omega(.)
/// constant). Without c, the curve c G phi^(1 - 1/k) at the largest c G that keeps it at or
/// under every mean in `pts`, over their phi range: the bound's shape, not a test of it.
pub(crate) fn lower_shape(pts: &[(f64, f64)], exponent: f64) -> Vec<(f64, f64)> {
    let cg = pts
        .iter()
        .filter(|p| p.0 > 0.0 && p.1 > 0.0)
        .map(|&(phi, m)| m / phi.powf(exponent))
        .fold(f64::INFINITY, f64::min);
    if !cg.is_finite() {
        return Vec::new();
    }
    let mut phis: Vec<f64> = pts.iter().map(|p| p.0).filter(|p| *p > 0.0).collect();
    phis.sort_by(f64::total_cmp);
    phis.iter()
        .map(|&phi| (phi, cg * phi.powf(exponent)))
        .collect()
}

/// One gray slope guide per distinct predicted slope of the non-control series, placed by
/// the figure beside the points of the series that share it.
fn slope_guides(s: &SpecSummary, cells: &BTreeMap<usize, CellResult>) -> Vec<Guide> {
    let mut out: Vec<Guide> = Vec::new();
    for (i, x) in s.series.iter().enumerate().filter(|(_, x)| !x.is_control) {
        let (pts, _, _) = measured(i, cells);
        let label = format!("slope {:.2}", x.predicted);
        match out.iter_mut().find(|g| g.label == label) {
            Some(g) => g.near.extend(pts),
            None => out.push(Guide {
                slope: x.predicted,
                label,
                near: pts,
            }),
        }
    }
    out
}

/// Legend entries for the marker and line styles (gray).
fn style_keys(spec: &Spec, any_control: bool, any_bound: bool) -> Vec<Series> {
    let key = |label: &str, style| Series {
        label: Some(label.into()),
        points: vec![],
        errors: vec![],
        style,
        color: 6,
    };
    let mut out = vec![key(
        "series: smallest-decade slope [95% CI] vs predicted; bars: mean +- 1.96 se",
        Style::Points,
    )];
    if any_control {
        out.push(key(
            "open: bounded-data control (every G_i = G), same color, drawn 4% right",
            Style::Hollow,
        ));
    }
    out.push(key("fit over the smallest decade (solid)", Style::Line));
    let lower = spec.raw.theorem.is_lower_bound();
    if !lower {
        out.push(key(
            "predicted slope (gray dashed, drawn beside the data; not a bound)",
            Style::Guide,
        ));
    }
    if any_bound {
        out.push(key(
            if lower {
                "lower bound (dotted)"
            } else {
                "explicit bound (dotted)"
            },
            Style::Dotted,
        ));
    } else if lower {
        out.push(key(
            "lower bound's shape c G phi^(1-1/k) (dotted): c is unstated, drawn at the largest \
             c under the means",
            Style::Dotted,
        ));
    }
    out
}

/// The figure: risk against phi per series with 95% error bars (mean +- 1.96 se over the
/// replicates), the smallest decade shaded (the verdicts' range) with its fitted line (solid),
/// a gray dashed guide of each predicted slope beside the data (upper bounds), the bound or a
/// lower bound's shape (dotted), and each series' bounded-data control as open markers of the
/// same color. Legends give the smallest-decade slope with its interval and the predicted
/// exponent.
pub fn figure(spec: &Spec, s: &SpecSummary, cells: &BTreeMap<usize, CellResult>) -> Figure {
    let mut series = Vec::new();
    let mut any_bound = false;
    let mut any_control = false;
    for (i, x) in s.series.iter().enumerate() {
        let color = spec.series[i].stream_series(i);
        let (pts, err, bnd) = measured(i, cells);
        any_bound |= !x.is_control && !bnd.is_empty();
        if x.is_control {
            any_control = true;
            // Drawn 4% to the right of its series' markers, which it would hide.
            series.push(Series {
                label: None,
                points: pts.iter().map(|&(p, m)| (p * CONTROL_DODGE, m)).collect(),
                errors: err,
                style: Style::Hollow,
                color,
            });
        } else {
            let lower = spec.raw.theorem.is_lower_bound();
            series.extend(series_layers(x, (pts, err, bnd), color, lower));
        }
    }
    series.extend(style_keys(spec, any_control, any_bound));
    let phis: Vec<f64> = cells.values().map(|c| c.phi).collect();
    let lo = phis.iter().cloned().fold(f64::INFINITY, f64::min);
    Figure {
        legend: crate::plot::Corner::LowerRight,
        guides: if spec.raw.theorem.is_lower_bound() {
            Vec::new()
        } else {
            slope_guides(s, cells)
        },
        title: s.title.clone(),
        x_label: "phi = sqrt(nu d log(1/delta)) / (n eps)".into(),
        y_label: format!("OR = {}", s.risk),
        series,
        size: (1100, 780),
        shade: lo.is_finite().then(|| {
            (
                lo / 1.1,
                10.0 * lo * 1.05,
                "smallest decade (verdicts)".to_string(),
            )
        }),
    }
}
