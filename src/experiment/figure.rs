//! The per-spec figure: risk against phi on log-log axes, drawn through [`crate::plot`].

use std::collections::BTreeMap;

use super::fit;
use super::report::fmt_fit;
use super::results::CellResult;
use super::spec::Spec;
use super::verdict::{SeriesSummary, SpecSummary, reps_of};
use crate::plot::{Figure, Series, Style};

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
/// smallest decade (solid), the predicted slope through the smallest-phi point (dashed) and the
/// bound (dotted).
fn series_layers(x: &SeriesSummary, m: Measured, color: usize) -> Vec<Series> {
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
    if let Some(&(p0, r0)) = pts.iter().min_by(|a, b| a.0.total_cmp(&b.0)) {
        let p1 = pts.iter().map(|p| p.0).fold(0.0, f64::max);
        let guide = vec![(p0, r0), (p1, r0 * (p1 / p0).powf(x.predicted))];
        out.push(line(guide, Style::Dashed));
    }
    if !bnd.is_empty() {
        out.push(line(bnd, Style::Dotted));
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
    out.push(key("predicted slope (dashed)", Style::Dashed));
    if any_bound {
        out.push(key(
            if spec.raw.theorem.is_lower_bound() {
                "lower bound (dotted)"
            } else {
                "explicit bound (dotted)"
            },
            Style::Dotted,
        ));
    }
    out
}

/// The figure: risk against phi per series with 95% error bars (mean +- 1.96 se over the
/// replicates), the smallest decade shaded (the verdicts' range) with its fitted line (solid),
/// a dashed line with the predicted slope through the smallest-phi point, the bound (dotted),
/// and each series' bounded-data control as open markers of the same color. Legends give the
/// smallest-decade slope with its interval and the predicted exponent.
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
            series.extend(series_layers(x, (pts, err, bnd), color));
        }
    }
    series.extend(style_keys(spec, any_control, any_bound));
    let phis: Vec<f64> = cells.values().map(|c| c.phi).collect();
    let lo = phis.iter().cloned().fold(f64::INFINITY, f64::min);
    Figure {
        legend: crate::plot::Corner::LowerRight,
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
