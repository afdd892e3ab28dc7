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

/// A series' points and 95% error bars, its mean bound per phi where every replicate has one,
/// and its mean do-nothing risk (the risk at w0) per phi where every replicate has one.
struct Measured {
    pts: Vec<(f64, f64)>,
    err: Vec<(f64, f64)>,
    bnd: Vec<(f64, f64)>,
    risk0: Vec<(f64, f64)>,
}

/// The cells of series `i` as points, error bars, bounds and do-nothing risks.
fn measured(i: usize, cells: &BTreeMap<usize, CellResult>) -> Measured {
    let mut m = Measured {
        pts: Vec::new(),
        err: Vec::new(),
        bnd: Vec::new(),
        risk0: Vec::new(),
    };
    for c in cells.values().filter(|c| c.series == i) {
        let (mean, e) = error_bar(&reps_of(c));
        m.pts.push((c.phi, mean));
        m.err.push(e);
        let b: Option<Vec<f64>> = c.replicates.iter().map(|r| r.bound).collect();
        if let Some(b) = b {
            m.bnd.push((c.phi, fit::mean(&b)));
        }
        let r0: Option<Vec<f64>> = c.replicates.iter().map(|r| r.risk0).collect();
        if let Some(r0) = r0.filter(|v| !v.is_empty()) {
            m.risk0.push((c.phi, fit::mean(&r0)));
        }
    }
    m
}

/// The layers of one (non-control) series: its markers with the legend entry, the fit over the
/// smallest decade (solid) and the bound (dotted). A lower-bound series instead draws its
/// do-nothing risk (dashed, the mean risk at w0: on Q_v it falls like p^(1-1/k) by
/// construction, the baseline its slope must beat) and no fitted curve; its bound is drawn only
/// at a stated constant (`constants.c_lower`), never at one fitted under the data.
fn series_layers(x: &SeriesSummary, m: Measured, color: usize, lower: bool) -> Vec<Series> {
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
        points: m.pts,
        errors: m.err,
        style: Style::Points,
        color,
    }];
    match (&x.decade, lower) {
        (_, true) => {
            if !m.risk0.is_empty() {
                out.push(line(m.risk0, Style::Dashed));
            }
        }
        (Some(f), false) => {
            let (a, b) = f.phi_range;
            let at = |p: f64| (p, (f.intercept + f.slope * p.ln()).exp());
            out.push(line(vec![at(a), at(b)], Style::Line));
        }
        (None, false) => {}
    }
    if !m.bnd.is_empty() {
        out.push(line(m.bnd, Style::Dotted));
    }
    out
}

/// One gray slope guide per distinct predicted slope of the non-control series, placed by
/// the figure beside the points of the series that share it.
fn slope_guides(s: &SpecSummary, cells: &BTreeMap<usize, CellResult>) -> Vec<Guide> {
    let mut out: Vec<Guide> = Vec::new();
    for (i, x) in s.series.iter().enumerate().filter(|(_, x)| !x.is_control) {
        let pts = measured(i, cells).pts;
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
    let lower = spec.raw.theorem.is_lower_bound();
    if lower {
        out.push(key(
            "do-nothing risk: mean risk at w0 (dashed, same color); no fitted curve",
            Style::Dashed,
        ));
    } else {
        out.push(key("fit over the smallest decade (solid)", Style::Line));
    }
    if !lower {
        out.push(key(
            "predicted slope (gray dashed, drawn beside the data; not a bound)",
            Style::Guide,
        ));
    }
    if any_bound {
        out.push(key(
            if lower {
                "lower bound at the spec's stated constant c_lower (dotted)"
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
/// a gray dashed guide of each predicted slope beside the data (upper bounds), the bound
/// (dotted; a lower bound only at a stated constant), a lower-bound series' do-nothing risk
/// (dashed, in place of a fitted line), and each series' bounded-data control as open markers of the
/// same color. Legends give the smallest-decade slope with its interval and the predicted
/// exponent.
pub fn figure(spec: &Spec, s: &SpecSummary, cells: &BTreeMap<usize, CellResult>) -> Figure {
    let mut series = Vec::new();
    let mut any_bound = false;
    let mut any_control = false;
    for (i, x) in s.series.iter().enumerate() {
        let color = spec.series[i].stream_series(i);
        let m = measured(i, cells);
        any_bound |= !x.is_control && !m.bnd.is_empty();
        if x.is_control {
            any_control = true;
            // Drawn 4% to the right of its series' markers, which it would hide.
            series.push(Series {
                label: None,
                points: m.pts.iter().map(|&(p, v)| (p * CONTROL_DODGE, v)).collect(),
                errors: m.err,
                style: Style::Hollow,
                color,
            });
        } else {
            let lower = spec.raw.theorem.is_lower_bound();
            series.extend(series_layers(x, m, color, lower));
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
