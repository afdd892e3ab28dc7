//! Rendering of spec summaries: the verify table (text and markdown) and each spec's report.md
//! (the verdicts: [`super::verdict`]; the figure: [`super::figure`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::fit::{self, Fit};
use super::probability::Probability;
use super::results::CellResult;
use super::spec::fmt_k;
use super::verdict::{Role, SpecSummary, reps_of, sig};

fn fmt_fit(f: &Option<Fit>) -> String {
    match f {
        Some(f) => format!("{:.2} [{:.2}, {:.2}]", f.slope, f.lo, f.hi),
        None => "-".into(),
    }
}

/// Columns of the table.
pub const COLS: usize = 10;

/// The table's header.
pub const TABLE_HEADER: [&str; COLS] = [
    "spec",
    "theorem",
    "series",
    "predicted",
    "slope sweep [95% CI]",
    "slope smallest decade [95% CI]",
    "max OR/bound",
    "bound / risk at w0",
    "P(OR <= bound) [95% CP] vs theorem",
    "verdict",
];

fn fmt_probability(p: &Option<Probability>) -> String {
    match p {
        Some(p) => format!(
            "{}/{} [{:.2}, {:.2}] vs >= {:.2}",
            p.under, p.total, p.ci.0, p.ci.1, p.claimed
        ),
        None => "-".into(),
    }
}

/// The table rows of a summary.
pub fn table_rows(s: &SpecSummary) -> Vec<[String; COLS]> {
    s.series
        .iter()
        .map(|x| {
            [
                s.spec.clone(),
                s.theorem.clone(),
                x.label.clone(),
                format!("{:.3}", x.predicted),
                fmt_fit(&x.sweep),
                fmt_fit(&x.decade),
                match (x.role, x.max_ratio, x.min_ratio) {
                    (Role::Lower, _, Some(r)) => format!(
                        "min {r:.3} vs lower bound ({}/{} cells)",
                        x.bound_cells.0, x.bound_cells.1
                    ),
                    (_, Some(r), _) => {
                        format!("{r:.3} ({}/{} cells)", x.bound_cells.0, x.bound_cells.1)
                    }
                    _ => "n/a".into(),
                },
                x.vacuity.map_or("-".into(), sig),
                fmt_probability(&x.probability),
                x.verdict.to_string(),
            ]
        })
        .collect()
}

/// Plain-text table with aligned columns.
pub fn text_table(rows: &[[String; COLS]]) -> String {
    let mut w = TABLE_HEADER.map(|h| h.len());
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i < COLS - 1 {
                w[i] = w[i].max(c.chars().count());
            }
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        for (i, c) in cells.iter().enumerate() {
            if i < COLS - 1 {
                let _ = write!(out, "{:<width$}  ", c, width = w[i]);
            } else {
                let _ = write!(out, "{c}");
            }
        }
        out.push('\n');
    };
    line(TABLE_HEADER.to_vec(), &mut out);
    for r in rows {
        line(r.iter().map(|s| s.as_str()).collect(), &mut out);
    }
    out
}

/// Markdown table.
pub fn markdown_table(rows: &[[String; COLS]]) -> String {
    let mut out = format!("| {} |\n", TABLE_HEADER.join(" | "));
    out.push_str(&format!("|{}\n", "---|".repeat(COLS)));
    for r in rows {
        out.push_str(&format!("| {} |\n", r.join(" | ").replace('\n', " ")));
    }
    out
}

/// report.md for one spec (no timings, so merged shards reproduce it byte for byte).
pub fn markdown(s: &SpecSummary, plot_file: &str, cells: &BTreeMap<usize, CellResult>) -> String {
    let mut out = format!("# {}\n\n", s.title);
    let _ = writeln!(
        out,
        "Spec `{}`, Thm {} (schedule of Thm {}), {} scale. Risk: {}.\n",
        s.spec, s.theorem, s.schedule, s.scale, s.risk
    );
    out.push_str(&markdown_table(&table_rows(s)));
    out.push_str("\n| series | C range | tau range |\n|---|---|---|\n");
    for x in &s.series {
        let _ = writeln!(
            out,
            "| {} | {:.4} .. {:.4} | {:.4} .. {:.4} |",
            x.label, x.c_range.0, x.c_range.1, x.tau_range.0, x.tau_range.1
        );
    }
    out.push_str("\nConventions:\n\n");
    for n in &s.notes {
        let _ = writeln!(out, "- {n}");
    }
    let _ = writeln!(out, "\n![{}]({plot_file})\n", s.title);
    out.push_str("Cells (mean over replicates; risk at w0 = the do-nothing risk; lambda_min S = relaxation times covered, S = T eta):\n\n| cell | series | phi | n | epsilon | T | mean OR | mean bound | mean risk at w0 | mean lambda_min S |\n|---|---|---|---|---|---|---|---|---|---|\n");
    let opt_mean =
        |v: Option<Vec<f64>>| v.map_or("n/a".to_string(), |v| format!("{:.4e}", fit::mean(&v)));
    for c in cells.values() {
        let or = fit::mean(&reps_of(c));
        let b: Option<Vec<f64>> = c.replicates.iter().map(|r| r.bound).collect();
        let _ = writeln!(
            out,
            "| {} | {} | {:.4e} | {} | {:.4} | {} | {:.4e} | {} | {} | {} |",
            c.cell,
            s.series[c.series].label,
            c.phi,
            c.n,
            c.epsilon,
            c.steps,
            or,
            b.map(|b| format!("{:.4e}", fit::mean(&b)))
                .unwrap_or("n/a".into()),
            opt_mean(c.replicates.iter().map(|r| r.risk0).collect()),
            opt_mean(c.replicates.iter().map(|r| r.lambda_s).collect()),
        );
    }
    out
}

pub(crate) fn fmt_slope(f: &Option<Fit>) -> String {
    f.as_ref().map_or("-".into(), |f| format!("{:.2}", f.slope))
}

/// "inf" or k.
pub fn k_label(k: f64) -> String {
    fmt_k(k)
}
