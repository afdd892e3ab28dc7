//! Rendering of spec summaries: the verify table (text and markdown) and each spec's report.md
//! (the verdicts: [`super::verdict`]; the figure: [`super::figure`]).

use crate::format::signed;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::fit::{self, Fit};
use super::probability::NO_POWER;
use super::probability::Probability;
use super::results::{CellResult, ReplicateResult};
use super::spec::fmt_k;
use super::time_average::{HEAD, PER_BLOCK};
use super::verdict::{
    BIAS_SHARE_THRESHOLD, BiasShare, DO_NOTHING, Informative, LowerRate, MAX_HALF_WIDTH, Rate,
    Role, SeriesSummary, SpecSummary, Spent, Verdict, cell_mean, reps_of, sig,
};

pub(crate) fn fmt_fit(f: &Option<Fit>) -> String {
    match f {
        Some(f) => format!("{:.2} [{:.2}, {:.2}]", f.slope, f.lo, f.hi),
        None => "-".into(),
    }
}

/// What `verify --full` costs, measured with `/usr/bin/time` on an otherwise idle 2-core machine
/// (reproducing the committed table's 80 rows exactly). Stated once here: the full report's
/// header prints it, and a test holds the README to it.
pub const FULL_SCALE_COST: &str = "362 s of wall time and 689 s of CPU on an idle 2-core machine";

/// Columns of the table.
pub const COLS: usize = 14;

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
    "clipped mass",
    "bias share [95% CI]",
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

/// "0.12 [0.08, 0.15]" (three significant digits), or "-" without a split.
fn fmt_share(b: &Option<BiasShare>) -> String {
    match b {
        Some(b) => format!(
            "{} [{}, {}]",
            share_num(b.share),
            share_num(b.lo),
            share_num(b.hi)
        ),
        None => "-".into(),
    }
}

/// A share with two decimals (a share is a fraction of the risk; -0.00 reads as 0.00).
fn share_num(v: f64) -> String {
    let t = format!("{v:.2}");
    if t == "-0.00" { "0.00".into() } else { t }
}

fn fmt_control(x: &SeriesSummary) -> String {
    if x.is_control {
        return "(control)".into();
    }
    match x.control.as_ref().and_then(|c| c.difference) {
        Some(d) => format!(
            "{} [{}, {}]",
            signed(d.value, 2),
            signed(d.lo, 2),
            signed(d.hi, 2)
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
                fmt_range(x.clipped_mass),
                fmt_share(&x.bias_share),
                fmt_probability(&x.probability),
                verdict_cell(x, &s.theorem),
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
- **max OR/bound**: largest mean risk / mean explicit bound over all cells (cells with a bound / cells); above 1 is a VIOLATION, and `verify` exits 1.\n\
- **bound / risk0**: largest mean bound / mean do-nothing risk (the risk at w0). At 1 or more the bound is vacuous: \
not moving at all meets it, so no rate is stated for it.\n\
- **OR / risk0**: range of mean risk / mean do-nothing risk: near 1 the run has barely moved.\n\
- **clipped**: range of the fraction of sampled per-sample gradients that were clipped. Near 0 the clip norm never binds and the slope is that of the schedule's tau(phi) phi.\n\
- **clipped mass**: range of the clipped gradient mass, sum over the sampled per-sample gradients of (||g_i|| - tau_t)_+ over the sum of ||g_i|| (the share of the gradient mass that Eq. (2) removes), over the steps each run took.\n\
- **bias share**: the risk split on common random numbers. Every replicate's run is run twice more on its own streams and observed at its own K iterates: without noise (bias only: the same Poisson batches and clip norms tau_t, sigma = 0) and without clipping (noise only: tau = inf in Eq. (2), the same sigma_n(tau_t) and the same noise draws). \
In each cell, share = (mean risk - mean noise-only risk) / mean risk, the part of the risk that removing the clipping and nothing else would remove; the column gives its mean over the smallest decade's cells with a paired bootstrap 95% interval \
(one draw of replicate indices for every cell). Per cell, report.md also gives the bias-only and noise-only means. A row tests the heavy-tail mechanism only where the lower end is at least {BIAS_SHARE_THRESHOLD}, k < inf, it is no bounded control, \
and its family's heavy part moves with phi (Q_v of Appendix L swept by n, whose heavy fraction p = 2 phi / sqrt(nu) scales with phi; a generator's fixed radial law does not).\n\
- **P(OR <= bound)**: at the smallest phi, data sets whose OR is under their bound, 95% Clopper-Pearson interval, against the theorem's probability. \
OR given a data set is the expectation over Algorithm 1, here each run's time-averaged risk (1/T) sum_t risk(w_t), estimated on strata that resolve the start-up \
(every step of the first {HEAD}, then {PER_BLOCK} per doubling of t), not the K-iterate estimate of the other columns, whose single-run spread is not the algorithm's; \
SHORT when the interval's upper end is below it (also shown in the verdict column and the per-theorem summary), (no power) when every risk is below {NO_POWER} of its bound.\n\
- **verdict** (upper bounds): 'consistent with the schedule's exponent' (interval contains the predicted exponent, but the row is no test of the heavy-tail mechanism: the exponent is then the one the schedule's tau(phi) and eta(phi) build in), \
'attains the bound's rate' (the same, on a row that tests the heavy-tail mechanism, see bias share), 'faster than the bound' (interval above), \
'slower than the bound (pre-asymptotic)' (interval below), each only where the bound is informative, read from the interval with no tolerance, and each saying whether the row tests the heavy-tail mechanism and why; \
'interval too wide for a rate' when its half-width is above {MAX_HALF_WIDTH}; 'no rate claim' otherwise; \
'a do-nothing algorithm earns the same' when the paired 95% interval of slope minus the do-nothing risk's slope (one resample of replicates for both) contains 0 with a half-width of at most {MAX_HALF_WIDTH}. \
Lower bounds: the run's rate against the lower exponent 1 - 1/k, read from the interval with no tolerance: 'rate matches the lower exponent' (contains it), \
'slower' (below), 'faster' (above), or too wide; one algorithm's slope cannot show that a lower bound is tight; 'a do-nothing algorithm earns the same' by the paired difference above, \
else the difference itself ('not a do-nothing rate'): on Q_v the do-nothing risk ||x_bar|| falls like p^(1-1/k) with p proportional to phi, so the instance builds the exponent in. \
Each lower-bound row also states the epsilon its Thm 3.4 noise spends by the RDP and PLD accountants, from every cell's own q = b/n, T, \
noise multiplier z = q sqrt(nu T log(1/delta)) / epsilon and delta, against the nominal epsilon that the theorem's (epsilon, delta) premise assumes. Ablations: 'bias floor' or 'still falling'.\n"
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
            if v.contains(DO_NOTHING) {
                class.push_str(", which a do-nothing algorithm earns too");
            }
            if is_short(x) {
                class.push_str(", SHORT");
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

/// Plain-text table with aligned columns (every column: `verify --wide`).
pub fn text_table(rows: &[[String; COLS]]) -> String {
    let rows: Vec<Vec<String>> = rows.iter().map(|r| r.to_vec()).collect();
    aligned(&TABLE_HEADER, &rows)
}

/// Columns padded to their widest cell, two spaces apart; the last column is not padded.
fn aligned(header: &[&str], rows: &[Vec<String>]) -> String {
    let last = header.len() - 1;
    let mut w: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(last) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[&str]| {
        for (i, c) in cells.iter().enumerate() {
            if i < last {
                let _ = write!(out, "{:<width$}  ", c, width = w[i]);
            } else {
                let _ = write!(out, "{c}");
            }
        }
        out.push('\n');
    };
    line(header);
    for r in rows {
        line(&r.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    }
    out
}

/// The compact table's header (`verify`'s default terminal output, about 110 columns).
pub const COMPACT_HEADER: [&str; 7] = [
    "  series",
    "pred.",
    "slope [95% CI]",
    "OR/bound",
    "mass",
    "bias share",
    "verdict",
];

/// The terminal's default table: one heading line per spec, then per series its predicted
/// exponent, smallest-decade slope, max OR / bound (lower bounds: min) and the verdict in a few
/// words (SHORT added where the probability statement fails). The full table is in report.md
/// and behind `verify --wide`.
pub fn compact_table(summaries: &[SpecSummary]) -> String {
    let mut out = String::new();
    for s in summaries {
        let _ = writeln!(out, "{} (Thm {}; risk {})", s.spec, s.theorem, s.risk);
        let rows: Vec<Vec<String>> = s
            .series
            .iter()
            .map(|x| {
                let mut v = x.verdict.word();
                if is_short(x) {
                    v.push_str("; SHORT");
                }
                vec![
                    format!("  {}", x.label),
                    format!("{:.3}", x.predicted),
                    fmt_fit(&x.decade),
                    match (x.role, x.max_ratio, x.min_ratio) {
                        (Role::Lower, _, Some(r)) => format!("min {r:.2}"),
                        (_, Some(r), _) => format!("{r:.3}"),
                        _ => "-".into(),
                    },
                    x.clipped_mass.map_or("-".into(), |m| sig(m.1)),
                    fmt_share(&x.bias_share).replace(", ", ","),
                    v,
                ]
            })
            .collect();
        out.push_str(&aligned(&COMPACT_HEADER, &rows));
        if let Some(e) = spec_spent(s) {
            let _ = writeln!(out, "  every row: {}", spent_words(&e, &s.theorem));
        }
    }
    out
}

/// True when the series' probability statement over data sets fails (SHORT).
fn is_short(x: &SeriesSummary) -> bool {
    x.probability.as_ref().is_some_and(|p| p.short())
}

/// The verdict cell of the full table: the verdict, SHORT where the probability statement
/// over data sets fails, and on a lower-bound row the epsilon its noise spends.
fn verdict_cell(x: &SeriesSummary, theorem: &str) -> String {
    let mut v = x.verdict.to_string();
    if is_short(x) {
        v.push_str(SHORT_NOTE);
    }
    if let Some(e) = &x.epsilon_spent {
        let _ = write!(v, "; {}", spent_words(e, theorem));
    }
    v
}

/// "epsilon spent 1.35..1.38 by RDP (...) at nominal epsilon 1: Thm 6.6's (epsilon, delta)
/// premise does not formally hold" (or "holds" where no cell spends more than nominal).
pub fn spent_words(e: &Spent, theorem: &str) -> String {
    format!(
        "{}: Thm {theorem}'s (epsilon, delta) premise {}",
        e.words(),
        if e.exceeds() {
            "does not formally hold"
        } else {
            "holds"
        }
    )
}

/// The epsilon spent over every lower-bound series of a spec (the union of their ranges).
fn spec_spent(s: &SpecSummary) -> Option<Spent> {
    let all: Vec<&Spent> = s
        .series
        .iter()
        .filter_map(|x| x.epsilon_spent.as_ref())
        .collect();
    let union = |f: &dyn Fn(&Spent) -> (f64, f64)| {
        all.iter()
            .map(|e| f(e))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (c, d)| {
                (a.min(c), b.max(d))
            })
    };
    (!all.is_empty()).then(|| Spent {
        nominal: union(&|e| e.nominal),
        rdp: union(&|e| e.rdp),
        pld: all
            .iter()
            .all(|e| e.pld.is_some())
            .then(|| union(&|e| e.pld.unwrap_or(e.rdp))),
    })
}

/// What a SHORT verdict cell adds.
pub const SHORT_NOTE: &str = "; SHORT: P(OR <= bound) below the theorem's probability";

/// One line over every series: bounds held / VIOLATED / SHORT / informative / rates stated,
/// then the lower bounds and ablations.
pub fn one_line_summary(summaries: &[SpecSummary]) -> String {
    let all: Vec<&SeriesSummary> = summaries.iter().flat_map(|s| &s.series).collect();
    let count = |f: &dyn Fn(&SeriesSummary) -> bool| all.iter().filter(|x| f(x)).count();
    let with_bound = |x: &SeriesSummary| x.role == Role::Upper && x.bound_cells.0 > 0;
    let rate = |r: Rate| move |x: &SeriesSummary| matches!(x.verdict, Verdict::Upper { rate: Some(q), .. } if q == r);
    let lower = |t: LowerRate| move |x: &SeriesSummary| matches!(x.verdict, Verdict::Lower { rate, .. } if rate == t);
    let tested = |x: &SeriesSummary| matches!(&x.verdict, Verdict::Upper { mechanism: Some(m), .. } if m.tested());
    let heavy = count(&|x| rate(Rate::Attains)(x) && tested(x));
    let (att, fast, slow, wide) = (
        count(&rate(Rate::Attains)),
        count(&rate(Rate::Faster)),
        count(&rate(Rate::Slower)),
        count(&rate(Rate::TooWide)),
    );
    format!(
        "{} series: bound held {} of {}, VIOLATED {}, SHORT {}, informative {}, rates stated {} \
(consistent with the schedule {}, attaining as heavy-tail tests {heavy}, faster {fast}, slower {slow}), too wide {wide}; lower bounds' rate against 1 - 1/k: matches {}, slower {}, faster {}, too wide {}; ablations {}",
        all.len(),
        count(&|x| with_bound(x) && !x.verdict.is_violation()),
        count(&with_bound),
        count(&|x| x.verdict.is_violation()),
        count(&is_short),
        count(&|x| matches!(
            x.verdict,
            Verdict::Upper {
                informative: Informative::Yes(_),
                ..
            }
        )),
        att + fast + slow,
        att - heavy,
        count(&lower(LowerRate::Matches)),
        count(&lower(LowerRate::Slower)),
        count(&lower(LowerRate::Faster)),
        count(&lower(LowerRate::TooWide)),
        count(&|x| x.role == Role::Ablation),
    )
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
    out.push_str("Cells (mean over replicates; risk at w0 = the do-nothing risk; lambda_min S = relaxation times covered, S = T eta; bias-only risk: the same run with sigma = 0; noise-only risk: the same run without clipping; bias share = (mean OR - mean noise-only risk) / mean OR):\n\n| cell | series | phi | n | epsilon | T | mean OR | mean bound | mean risk at w0 | OR / risk at w0 | mean lambda_min S | mean clipped fraction | mean clipped mass | mean bias-only risk | mean noise-only risk | bias share |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    let opt_mean = |c: &CellResult, f: fn(&ReplicateResult) -> Option<f64>| {
        cell_mean(c, f).map_or("n/a".to_string(), |m| format!("{m:.4e}"))
    };
    for c in cells.values() {
        let or = fit::mean(&reps_of(c));
        let _ = writeln!(
            out,
            "| {} | {} | {:.4e} | {} | {:.4} | {} | {:.4e} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
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
            opt_mean(c, |r| r.clipped_mass),
            opt_mean(c, |r| r.risk_bias),
            opt_mean(c, |r| r.risk_noise),
            cell_mean(c, |r| r.risk_noise).map_or("n/a".into(), |nn| share_num((or - nn) / or)),
        );
    }
    out
}

/// "inf" or k.
pub fn k_label(k: f64) -> String {
    fmt_k(k)
}

#[cfg(test)]
mod tests {
    use super::super::verdict::tests::summary_with;
    use super::*;

    /// A failed probability statement shows as SHORT in the verdict column (full and compact)
    /// and in the per-theorem summary, not only in its own column.
    #[test]
    fn short_shows_in_the_verdict_column_and_the_per_theorem_summary() {
        let v = Verdict::Upper {
            informative: Informative::Yes(0.5),
            rate: Some(Rate::Attains),
            do_nothing: super::super::verdict::DoNothing(None),
            mechanism: None,
        };
        let mut s = summary_with(&[v.clone(), v]);
        s.series[0].probability = Some(Probability {
            phi: 1e-3,
            under: 27,
            total: 32,
            runs: 1,
            ci: (0.67, 0.95),
            claimed: 1.0,
            max_ratio: 4.2,
        });
        let rows = table_rows(&s);
        assert!(rows[0][COLS - 1].ends_with(SHORT_NOTE), "{:?}", rows[0]);
        assert!(!rows[1][COLS - 1].contains("SHORT"), "{:?}", rows[1]);
        let compact = compact_table(std::slice::from_ref(&s));
        assert!(
            compact.contains("consistent with schedule; SHORT"),
            "{compact}"
        );
        let per = theorem_summary(std::slice::from_ref(&s));
        assert!(
            per.contains("consistent with the schedule's exponent, SHORT (1): s k = 0"),
            "{per}"
        );
        let line = one_line_summary(&[s]);
        assert!(line.contains("SHORT 1, "), "{line}");
    }
}
