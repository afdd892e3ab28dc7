//! report.md of a clip-norm sweep: the laws table (one row per declared series) and, per
//! series, the per-phi table.

use super::analysis::{CliplawSummary, GroupSummary, KSpan, Law, LawVerdict, Tail};
use crate::format::{fixed, num};

/// How to read the tables (also in the README's glossary and paper_refs/cliplaw.md).
pub fn legend() -> String {
    "\
- **tau\\***: the best constant clip norm at one phi: the vertex of a quadratic in (log tau, log
  risk) through the grid minimum and its two neighbours each side, with the 95% interval of the
  paired bootstrap over replicates (resamples without an interior minimum are left out; their
  share is shown when above 5%). **plateau**: every grid tau up to the plateau edge gives the
  same run (each replicate's risk equal to 1e-9): with eta tau fixed, clipping every sampled
  gradient makes the run independent of tau, so no tau* is identifiable and the edge is the
  largest best clip norm. **below/above grid**: the grid minimum is at an end of the grid.
- **tau\\* slope**: OLS slope of log tau* on log phi over the phis with an interior minimum (at
  least 3), with the paired bootstrap interval; **edge slope**: the same for the plateau edge,
  whose interval holds every slope the grid brackets allow. Both are compared with the
  theorem's tau exponent (the slope of its tau(phi)): *agrees* / *differs* from the interval,
  *too wide* when the half-width exceeds 0.1.
- **min-risk slope**: slope of log (min over tau of the risk) on log phi, against the upper
  bound's exponent and, on Thm 6.6 / L.1's instance, the lower bound's 1 - 1/k: an interval
  above 1 - 1/k would mean a clip norm beats the lower bound.
- **uniform**: tau = max_i G_i of the data set (uniform-Lipschitz tuning: no sample is
  clipped), with eta from the same formula; **ratio** = its risk / the min over tau.
- **schedule**: the theorem's own tau(phi).
- **do-nothing slope**: the slope of f(w0) - f* itself (no step taken): a min-risk slope equal
  to it says nothing about the algorithm (on Q_v, f* moves with phi).
- **at k = ...**: on a real data set every moment is finite, so its k is a modelling choice (a
  Hill estimate, which moves with the number of order statistics it uses): each verdict names
  that k and the range of k over which it would hold, beside the Hill estimates.
"
    .to_string()
}

/// A law's cell; on a real data set (`k` given: a modelling choice) the verdict names that k and
/// the k span over which it holds, then `extra` (the Hill estimates, on the tau laws).
fn law_at(l: &Option<Law>, k: Option<f64>, extra: &str) -> String {
    match l {
        None => "-".into(),
        Some(l) => format!(
            "{} [{}, {}] ({} phis){}",
            fixed(l.slope, 3),
            fixed(l.lo, 3),
            fixed(l.hi, 3),
            l.points,
            match (l.verdict, l.predicted) {
                (LawVerdict::Agrees, Some(p)) =>
                    format!(": agrees with {p:.3}{}", at_k(l, k, extra)),
                (LawVerdict::Differs, Some(p)) => {
                    format!(": DIFFERS from {p:.3}{}", at_k(l, k, extra))
                }
                (LawVerdict::TooWide, _) => ": too wide for a verdict".into(),
                _ => String::new(),
            }
        ),
    }
}

/// " at k = 4 (holds for k in [3.76, 4.32] only; ...)" for a law with a k span, else "".
fn at_k(l: &Law, k: Option<f64>, extra: &str) -> String {
    let (Some(k), Some(span)) = (k, l.k_span) else {
        return String::new();
    };
    let agrees = l.verdict == LawVerdict::Agrees;
    let range = match span {
        KSpan::Nowhere => "at no k > 1".to_string(),
        KSpan::Between { lo, hi } if hi.is_infinite() => format!("for k >= {}", fixed(lo, 2)),
        KSpan::Between { lo, hi } => format!("for k in [{}, {}]", fixed(lo, 2), fixed(hi, 2)),
    };
    let words = match (agrees, span) {
        (true, _) => format!("holds {range} only"),
        (false, KSpan::Nowhere) => "agrees at no k > 1".into(),
        (false, _) => format!("agrees {range}"),
    };
    format!(
        " at k = {} ({words}{})",
        crate::experiment::spec::fmt_k(k),
        if extra.is_empty() {
            String::new()
        } else {
            format!("; {extra}")
        }
    )
}

/// "Hill 3.12-4.24 (10-200 order statistics)" from a real data set's estimates, else "".
fn hill_range(g: &GroupSummary) -> String {
    let (Some(first), Some(last)) = (g.hill.first(), g.hill.last()) else {
        return String::new();
    };
    let lo = g.hill.iter().map(|h| h.1).fold(f64::INFINITY, f64::min);
    let hi = g.hill.iter().map(|h| h.1).fold(f64::NEG_INFINITY, f64::max);
    format!(
        "Hill {}-{} at {}-{} order statistics",
        fixed(lo, 2),
        fixed(hi, 2),
        first.0,
        last.0
    )
}

fn tail(t: Tail) -> &'static str {
    match t {
        Tail::ScalesWithPhi => "scales with phi",
        Tail::Fixed => "fixed",
        Tail::Bounded => "bounded",
    }
}

/// The laws table rows of one summary (the combined report stacks them).
pub fn law_rows(s: &CliplawSummary) -> Vec<String> {
    s.groups
        .iter()
        .map(|g| {
            let ratio = range(g.curves.iter().map(|c| c.ratio.value));
            let clipped = range(g.curves.iter().map(|c| c.clipped_at_best));
            let minima = g
                .curves
                .iter()
                .map(|c| match c.minimum {
                    super::analysis::Minimum::Interior { .. } => 'I',
                    super::analysis::Minimum::Plateau => 'P',
                    super::analysis::Minimum::BelowGrid => 'b',
                    super::analysis::Minimum::AboveGrid => 'a',
                })
                .collect::<String>();
            let lower = match g.lower_exponent {
                Some(e) if g.beats_lower_bound => format!("{e:.3}: BEATS THE LOWER BOUND"),
                Some(e) => format!("{e:.3}: not beaten"),
                None => "-".into(),
            };
            // On a real data set k is a modelling choice: each verdict names it and its k span.
            let k = (!g.hill.is_empty()).then_some(g.k);
            let hill = hill_range(g);
            format!(
                "| {} | {} | {} | {} | {} | {} | {} | {:.3} | {} | {} | {} | {} | {} | {} |",
                s.spec,
                g.label,
                tail(g.tail),
                minima,
                law_at(&g.tau_law, k, &hill),
                law_at(&g.edge_law, k, &hill),
                g.tau_exponent.map_or("-".into(), |e| format!("{e:.3}")),
                g.risk_exponent,
                law_at(&g.risk_law, k, ""),
                lower,
                law_at(&g.uniform_law, k, ""),
                law_at(&g.do_nothing_law, k, ""),
                ratio,
                clipped,
            )
        })
        .collect()
}

/// The laws table's header.
pub const LAW_HEADER: &str = "| spec | series | tail | minima (I interior, P plateau, b/a below/above grid; phi_max first) | tau* slope | edge slope | theorem's tau exponent | upper-bound risk exponent | min-risk slope | lower bound 1 - 1/k | uniform (tau = max G_i) slope | do-nothing slope | uniform / min ratio | clipped at best |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";

fn range(v: impl Iterator<Item = f64>) -> String {
    let v: Vec<f64> = v.filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return "-".into();
    }
    let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    format!("{} - {}", num(lo), num(hi))
}

fn est(e: &super::analysis::Estimate) -> String {
    format!("{} [{}, {}]", num(e.value), num(e.lo), num(e.hi))
}

fn group_table(g: &GroupSummary) -> String {
    let mut md = format!(
        "### {}\n\n| phi | n | epsilon | T | z | tau* | plateau edge | min risk | clipped at best | theorem's tau | its risk (clipped) | max G_i | its risk | ratio | risk0 |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        g.label
    );
    for c in &g.curves {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} ({}) | {} | {} | {} | {} |\n",
            num(c.phi),
            c.n,
            num(c.epsilon),
            c.steps,
            c.z.map_or("-".into(), num),
            c.minimum.short(),
            c.plateau.map_or("-".into(), |p| format!(
                "[{}, {})",
                num(p.edge.0),
                num(p.edge.1)
            )),
            est(&c.best),
            num(c.clipped_at_best),
            num(c.schedule_tau),
            est(&c.schedule),
            num(c.schedule_clipped),
            num(c.uniform_tau),
            est(&c.uniform),
            est(&c.ratio),
            num(c.risk0),
        ));
    }
    if !g.hill.is_empty() {
        let each: Vec<String> = g
            .hill
            .iter()
            .map(|(top, a)| format!("{} ({top})", fixed(*a, 2)))
            .collect();
        md.push_str(&format!(
            "\nA real data set has every moment finite, so k = {} is a modelling choice. Hill's tail-index estimate of its G_i at (m) upper order statistics: {}.\n",
            crate::experiment::spec::fmt_k(g.k),
            each.join(", ")
        ));
    }
    if let Some(e) = g.uniform_tau_on_n {
        md.push_str(&format!(
            "\nmax_i G_i grows like n^{} over the sweep (k = {}: n^(1/k) for an i.i.d. tail).\n",
            fixed(e, 3),
            crate::experiment::spec::fmt_k(g.k)
        ));
    }
    md.push('\n');
    md
}

/// report.md of one sweep; `figures` are the figures' paths relative to the report.
pub fn markdown(s: &CliplawSummary, figures: &[String]) -> String {
    let mut md = format!(
        "# {}\n\nClip-norm sweep ({} scale): {} constant clip norms from {} to {}, the theorem's step size (Thm {}) at each, noise calibrated to (epsilon, delta = {}) by the {} accountant; R = {} replicates per cell, {} paired bootstrap resamples.\n\n",
        s.title,
        s.scale,
        s.taus.len(),
        num(s.taus[0]),
        num(*s.taus.last().unwrap_or(&f64::NAN)),
        s.theorem,
        s.delta,
        s.accountant,
        s.replicates,
        s.bootstrap
    );
    md.push_str(&legend());
    md.push('\n');
    md.push_str(LAW_HEADER);
    for r in law_rows(s) {
        md.push_str(&r);
        md.push('\n');
    }
    md.push('\n');
    for g in &s.groups {
        md.push_str(&group_table(g));
    }
    for f in figures {
        md.push_str(&format!("![{}]({f})\n\n", s.title));
    }
    md
}
