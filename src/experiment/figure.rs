//! The per-spec figure: risk against phi on log-log axes, drawn through [`crate::plot`].

use std::collections::BTreeMap;

use super::fit;
use super::report::fmt_slope;
use super::results::CellResult;
use super::spec::Spec;
use super::verdict::{SpecSummary, reps_of};
use crate::plot::{Figure, Series, Style};

/// The figure: risk against phi per series with bootstrap-free 95% error bars (mean +- 1.96 se),
/// the fitted line, a dashed reference line with the predicted slope through the smallest-phi
/// point, and the bound (dotted).
pub fn figure(spec: &Spec, s: &SpecSummary, cells: &BTreeMap<usize, CellResult>) -> Figure {
    let mut series = Vec::new();
    let mut any_bound = false;
    for (i, x) in s.series.iter().enumerate() {
        let cs: Vec<&CellResult> = cells.values().filter(|c| c.series == i).collect();
        let mut pts = Vec::new();
        let mut err = Vec::new();
        let mut bnd = Vec::new();
        for c in &cs {
            let r = reps_of(c);
            let m = fit::mean(&r);
            let sd = (r.iter().map(|v| (v - m) * (v - m)).sum::<f64>()
                / (r.len().max(2) - 1) as f64)
                .sqrt();
            let se = 1.96 * sd / (r.len() as f64).sqrt();
            pts.push((c.phi, m));
            err.push(((m - se).max(m * 1e-3), m + se));
            let b: Option<Vec<f64>> = c.replicates.iter().map(|r| r.bound).collect();
            if let Some(b) = b {
                bnd.push((c.phi, fit::mean(&b)));
            }
        }
        series.push(Series {
            label: Some(format!("{} (slope {})", x.label, fmt_slope(&x.sweep))),
            points: pts.clone(),
            errors: err,
            style: Style::Points,
            color: i,
        });
        if let Some(f) = &x.sweep {
            let (a, b) = f.phi_range;
            series.push(Series {
                label: None,
                points: vec![
                    (a, (f.intercept + f.slope * a.ln()).exp()),
                    (b, (f.intercept + f.slope * b.ln()).exp()),
                ],
                errors: vec![],
                style: Style::Line,
                color: i,
            });
        }
        if let Some(&(p0, r0)) = pts.iter().min_by(|a, b| a.0.total_cmp(&b.0)) {
            let p1 = pts.iter().map(|p| p.0).fold(0.0, f64::max);
            series.push(Series {
                label: None,
                points: vec![(p0, r0), (p1, r0 * (p1 / p0).powf(x.predicted))],
                errors: vec![],
                style: Style::Dashed,
                color: i,
            });
        }
        if !bnd.is_empty() {
            any_bound = true;
            series.push(Series {
                label: None,
                points: bnd,
                errors: vec![],
                style: Style::Dotted,
                color: i,
            });
        }
    }
    // Legend entries for the line styles (gray).
    series.push(Series {
        label: Some("fitted OLS line (solid)".into()),
        points: vec![],
        errors: vec![],
        style: Style::Line,
        color: 6,
    });
    series.push(Series {
        label: Some("predicted slope (dashed)".into()),
        points: vec![],
        errors: vec![],
        style: Style::Dashed,
        color: 6,
    });
    if any_bound {
        series.push(Series {
            label: Some(
                if spec.raw.theorem.is_lower_bound() {
                    "lower bound (dotted)"
                } else {
                    "explicit bound (dotted)"
                }
                .into(),
            ),
            points: vec![],
            errors: vec![],
            style: Style::Dotted,
            color: 6,
        });
    }
    Figure {
        title: s.title.clone(),
        x_label: "phi = sqrt(nu d log(1/delta)) / (n eps)".into(),
        y_label: format!("OR = {}", s.risk),
        series,
        size: (960, 720),
    }
}
