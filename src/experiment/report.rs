//! Rendering of spec summaries: the verify table (text and markdown) and each spec's report.md
//! (the verdicts: [`super::verdict`]; the figure: [`super::figure`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::fit::{self, Fit};
use super::probability::NO_POWER;
use super::probability::Probability;
use super::results::{CellResult, ReplicateResult};
use super::spec::fmt_k;
use super::verdict::{BAND, DO_NOTHING, Role, SeriesSummary, SpecSummary, cell_mean, reps_of, sig};

pub(crate) fn fmt_fit(f: &Option<Fit>) -> String {
    match f {
        Some(f) => format!("{:.2} [{:.2}, {:.2}]", f.slope, f.lo, f.hi),
        None => "-".into(),
    }
}

/// Columns of the table.
pub const COLS: usize = 12;

/// The table's header.
pub const TABLE_HEADER: [&str; COLS] = [
    "spec",
    "theorem",
    "series",
    "predicted",
    "slope smallest decade [95% CI]",
    "minus control [95% CI]",
    "max OR/bound",
    "bound / risk0",
    "OR / risk0",
    "clipped",
    "P(OR <= bound) [95% CP] vs theorem",
    "verdict",
];

fn fmt_probability(p: &Option<Probability>) -> String {
    match p {
        Some(p) => {
            let mut t = format!(
                "{}/{} [{:.2}, {:.2}] vs >= {:.2}",
                p.under, p.total, p.ci.0, p.ci.1, p.claimed
            );
            if p.short() {
                t.push_str(" SHORT");
            } else if p.no_power() {
                t.push_str(" (no power)");
            }
            t
        }
        None => "-".into(),
    }
}

fn fmt_range(r: Option<(f64, f64)>) -> String {
    match r {
        Some((a, b)) if sig(a) == sig(b) => sig(a),
        Some((a, b)) => format!("{}..{}", sig(a), sig(b)),
        None => "-".into(),
    }
}

fn fmt_control(x: &SeriesSummary) -> String {
    if x.is_control {
        return "(control)".into();
    }
    match x.control.as_ref().and_then(|c| c.difference) {
        Some(d) => format!("{:+.2} [{:+.2}, {:+.2}]", d.value, d.lo, d.hi),
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
                fmt_fit(&x.decade),
                fmt_control(x),
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
                fmt_range(x.do_nothing_ratio),
                fmt_range(x.clipped),
                fmt_probability(&x.probability),
                x.verdict.to_string(),
            ]
        })
        .collect()
}

/// What the table's columns and verdicts mean (the top of `verify`'s report.md).
pub fn legend() -> String {
    format!(
        "How to read the table. Every column but the first four is over the smallest decade of phi \
(phi <= 10 phi_min), where the verdicts are read.\n\n\
- **slope smallest decade**: OLS slope of log(mean risk) on log phi with a 95% paired bootstrap interval \
(replicate r is one data set and one set of common random numbers at every phi; a resample draws replicates once for all cells).\n\
- **minus control**: slope(series) - slope(its bounded-data control: same schedule and G, every G_i = G, same random streams), \
paired interval. An interval containing 0 means the slope is not evidence about heavy tails.\n\
- **max OR/bound**: largest mean risk / mean explicit bound over all cells (cells with a bound / cells); above 1 is a VIOLATION, and `verify` exits 2.\n\
- **bound / risk0**: largest mean bound / mean do-nothing risk (the risk at w0). At 1 or more the bound is vacuous: \
not moving at all meets it, so no rate is stated for it.\n\
- **OR / risk0**: range of mean risk / mean do-nothing risk: near 1 the run has barely moved.\n\
- **clipped**: range of the fraction of sampled per-sample gradients that were clipped. Near 0 the clip norm never binds and the slope is that of the schedule's tau(phi) phi.\n\
- **P(OR <= bound)**: at the smallest phi, data sets whose risk is under their bound, 95% Clopper-Pearson interval, against the theorem's probability; \
SHORT when the interval's upper end is below it, (no power) when every risk is below {NO_POWER} of its bound.\n\
- **verdict** (upper bounds): 'attains the bound's rate' (interval contains the predicted exponent), 'faster than the bound' (interval above), \
'slower than the bound (pre-asymptotic)' (interval below), each only where the bound is informative; 'no rate claim' otherwise; \
'a do-nothing algorithm earns the same' when the do-nothing risk's interval gives the same rate. \
Lower bounds: 'tight' (interval within {BAND} of 1 - 1/k), 'consistent', 'not tight'. Ablations: 'bias floor' or 'still falling'.\n"
    )
}

/// One line per theorem: the series under each verdict (controls named as such).
pub fn theorem_summary(summaries: &[SpecSummary]) -> String {
    let mut by: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for s in summaries {
        for x in &s.series {
            let v = x.verdict.to_string();
            let mut class = v
                .split([';', '(', ':'])
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            if v.ends_with(DO_NOTHING) {
                class.push_str(", which a do-nothing algorithm earns too");
            }
            let who = format!("{} {}", s.spec, x.label);
            by.entry(format!("Thm {}", s.theorem))
                .or_default()
                .push((class, who));
        }
    }
    let mut out = String::from("Per theorem (series by verdict):\n\n");
    for (thm, v) in by {
        let mut classes: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (c, who) in &v {
            classes.entry(c).or_default().push(who);
        }
        let parts: Vec<String> = classes
            .iter()
            .map(|(c, w)| format!("{c} ({}): {}", w.len(), w.join(", ")))
            .collect();
        let _ = writeln!(out, "- **{thm}**: {}", parts.join("; "));
    }
    out
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
    out.push_str("\n| series | slope whole sweep [95% CI] | do-nothing slope, smallest decade [95% CI] | control slope, smallest decade [95% CI] | C range | tau range |\n|---|---|---|---|---|---|\n");
    for x in &s.series {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.4} .. {:.4} | {:.4} .. {:.4} |",
            x.label,
            fmt_fit(&x.sweep),
            fmt_fit(&x.do_nothing_fit),
            x.control.as_ref().map_or("-".into(), |c| fmt_fit(&c.fit)),
            x.c_range.0,
            x.c_range.1,
            x.tau_range.0,
            x.tau_range.1
        );
    }
    out.push_str("\nConventions:\n\n");
    for n in &s.notes {
        let _ = writeln!(out, "- {n}");
    }
    let _ = writeln!(out, "\n![{}]({plot_file})\n", s.title);
    out.push_str("Cells (mean over replicates; risk at w0 = the do-nothing risk; lambda_min S = relaxation times covered, S = T eta):\n\n| cell | series | phi | n | epsilon | T | mean OR | mean bound | mean risk at w0 | OR / risk at w0 | mean lambda_min S | mean clipped fraction |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    let opt_mean = |c: &CellResult, f: fn(&ReplicateResult) -> Option<f64>| {
        cell_mean(c, f).map_or("n/a".to_string(), |m| format!("{m:.4e}"))
    };
    for c in cells.values() {
        let or = fit::mean(&reps_of(c));
        let _ = writeln!(
            out,
            "| {} | {} | {:.4e} | {} | {:.4} | {} | {:.4e} | {} | {} | {} | {} | {} |",
            c.cell,
            s.series[c.series].label,
            c.phi,
            c.n,
            c.epsilon,
            c.steps,
            or,
            opt_mean(c, |r| r.bound),
            opt_mean(c, |r| r.risk0),
            cell_mean(c, |r| r.risk0).map_or("n/a".into(), |r0| sig(or / r0)),
            opt_mean(c, |r| r.lambda_s),
            opt_mean(c, |r| r.clipped),
        );
    }
    out
}

/// "inf" or k.
pub fn k_label(k: f64) -> String {
    fmt_k(k)
}
