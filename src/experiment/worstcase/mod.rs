//! The worst-case search: for each cell (series = k, phi) of a spec with a `[search]` table, the
//! data set in the theorem's instance class ([`family`]) that makes DP-SGD with the theorem's
//! own schedule (T, tau, eta) and noise do worst against its explicit bound, found by a
//! derivative-free search under common random numbers ([`search`]), then re-estimated on fresh
//! replicates that the search never saw, beside its bounded control (every G_i = G) on the same
//! fresh streams. An OR / bound above 1 is re-checked on a second fresh set of (more)
//! replicates; if its 95% interval stays above 1 it is a violation, and the instance is written
//! out as a CSV and a spec that `dpsgd-lab run` reruns.
//!
//! A found worst case is a lower estimate of the supremum over the family, and the family is
//! not the whole class: the report says so.
//!
//! Results: `results.jsonl` (one line per finished cell; `--resume` continues), then
//! [`report`] and [`figure`] from the complete file.

pub mod budget;
pub mod family;
pub mod figure;
pub mod report;
pub mod search;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::DataSpec;
use crate::data::csv::CsvSpec;
use crate::error::{Error, Result};
use crate::experiment::replicate::sweep_point;
use crate::experiment::results::{self, Header};
use crate::experiment::search_table::{FamilyKind, SearchScale, SearchSpec};
use crate::experiment::spec::{Scale, ScaleSpec, Spec};
use crate::loss::LossSpec;
use crate::results_file::{Record, ResultsFile};
use crate::theory::TheoremId;
use family::{Components, Family, LogisticMixture, RegressionMixture, SharpMixture, moment_level};
use search::{Budget, Context, Found, Measured, Phase};

/// One finished cell: the search and the fresh re-estimates of what it found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorstCell {
    /// Cell index (series-major, as `run`'s cells).
    pub cell: usize,
    /// Series index.
    pub series: usize,
    /// k.
    #[serde(with = "crate::k_serde")]
    pub k: f64,
    /// phi of Eq. (1).
    pub phi: f64,
    /// n.
    pub n: usize,
    /// epsilon.
    pub epsilon: f64,
    /// G of Assumption 6.1 (the schedule's G).
    pub g: f64,
    /// The moment level the family meets with equality.
    pub g_emp: f64,
    /// G D0 (G^2 for N.1: the unit of its risk).
    pub gd0: f64,
    /// The search (its values are on the search streams: never reported as results).
    pub found: Found,
    /// The found instance.
    pub instance: Components,
    /// Fresh re-estimate at the found instance.
    pub reestimate: Measured,
    /// The bounded control (every G_i = G, same centres and shares) on the same fresh streams.
    pub control: Measured,
    /// The re-check of an OR / bound above 1 (a second fresh set of replicates).
    pub recheck: Option<Measured>,
}

impl Record for WorstCell {
    type Key = usize;
    const NOUN: &'static str = "search cell";
    fn key(&self) -> usize {
        self.cell
    }
}

/// How a worst-case run goes.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// Output folder.
    pub out: PathBuf,
    /// Continue an interrupted run.
    pub resume: bool,
    /// Start over, discarding finished cells.
    pub fresh: bool,
}

/// The `[search]` table of `spec`, checked against the rest of the spec.
pub fn search_table(spec: &Spec) -> Result<&SearchSpec> {
    let s =
        spec.raw.search.as_ref().ok_or_else(|| {
            Error::Config(format!("spec {} has no [search] table", spec.raw.name))
        })?;
    match s.family {
        FamilyKind::SharpMixture if !matches!(spec.raw.loss, LossSpec::Sharp) => {
            return Err(Error::Config(
                "search.family = \"sharp_mixture\" needs loss = { family = \"sharp\" }".into(),
            ));
        }
        FamilyKind::LogisticMixture if !matches!(spec.raw.loss, LossSpec::BinaryLogistic) => {
            return Err(Error::Config(
                "search.family = \"logistic_mixture\" needs loss = { family = \"binary_logistic\" }"
                    .into(),
            ));
        }
        FamilyKind::RegressionMixture if linear_lip(spec).is_none() => {
            return Err(Error::Config(
                "search.family = \"regression_mixture\" needs a loss with G(x, y) = c ||x|| (robust or huber)".into(),
            ));
        }
        _ => {}
    }
    let constrained = spec.raw.theorem.full_version() == TheoremId::I1;
    if constrained != spec.raw.radius.is_some() {
        return Err(Error::Config(
            "a [search] spec sets a radius (the ball W) exactly when its theorem is I.1".into(),
        ));
    }
    if constrained && s.family != FamilyKind::SharpMixture {
        return Err(Error::Config(
            "a Thm I.1 search uses search.family = \"sharp_mixture\" (centres kept inside W)"
                .into(),
        ));
    }
    if s.boundary && !constrained {
        return Err(Error::Config(
            "search.boundary = true puts the minimizer on the boundary of W: it needs Thm I.1 (a radius)".into(),
        ));
    }
    if let Some(r) = spec.raw.radius
        && r <= spec.raw.constants.dist0
    {
        return Err(Error::Config(format!(
            "a Thm I.1 search needs radius > constants.dist0 (centres lie within R - D0 so that w0 is in W), but {r} <= {}",
            spec.raw.constants.dist0
        )));
    }
    if spec.raw.constants.g.is_none() {
        return Err(Error::Config(
            "a [search] spec sets constants.g (the G of Assumption 6.1 every instance meets)"
                .into(),
        ));
    }
    if spec.raw.controls || spec.raw.runs_per_data != 1 {
        return Err(Error::Config(
            "a [search] spec sets controls = false (the search runs its own control) and runs_per_data = 1".into(),
        ));
    }
    Ok(s)
}

/// a / b of the loss's G(x, y) = (a / b) ||x|| (None: another form).
fn linear_lip(spec: &Spec) -> Option<f64> {
    match spec.raw.loss.lipschitz_form()? {
        crate::loss::LipschitzForm::Linear { a, b } => Some(a / b),
        _ => None,
    }
}

/// The budget of `spec`'s scale.
pub fn scale_of(spec: &Spec, s: &SearchSpec) -> SearchScale {
    match spec.scale {
        Scale::Quick => s.quick,
        Scale::Full => s.full,
    }
}

/// The search context and family of cell `c` (the moment level and G D0 of its k).
pub fn cell_setup(spec: &Spec, c: usize) -> Result<(Context<'_>, Family)> {
    let s = search_table(spec)?;
    let (si, pi) = spec.cell(c);
    let point = sweep_point(spec, pi)?;
    let k = spec.series[si].k;
    let g = spec.raw.constants.g.unwrap_or(f64::NAN);
    let g_emp = moment_level(spec.raw.theorem, g, k, spec.raw.constants.gamma)?;
    let (n, d, m) = (point.n, spec.dim()?, s.components);
    let family = match s.family {
        FamilyKind::SharpMixture => Family::Sharp(SharpMixture {
            n,
            d,
            m,
            k,
            g_emp,
            max_centre: spec.raw.radius.map(|r| r - spec.raw.constants.dist0),
            boundary: spec.raw.radius.filter(|_| s.boundary),
        }),
        FamilyKind::RegressionMixture => Family::Regression(RegressionMixture {
            n,
            d,
            m,
            k,
            g_emp,
            lip: linear_lip(spec).unwrap_or(f64::NAN),
        }),
        FamilyKind::LogisticMixture => Family::Logistic(LogisticMixture { n, d, m, k, g_emp }),
    };
    let ctx = Context {
        spec,
        cell: c,
        point,
        k,
        g_emp,
        gd0: risk_unit(spec, g),
    };
    Ok((ctx, family))
}

/// The unit the risk is reported in: G D0 for the convex theorems (risk f - f*), G^2 for
/// Thm 6.8 / N.1 (risk E ||grad f||^2).
fn risk_unit(spec: &Spec, g: f64) -> f64 {
    if spec.raw.theorem.full_version() == TheoremId::N1 {
        g * g
    } else {
        g * spec.raw.constants.dist0
    }
}

/// Searches cell `c` and re-estimates what it found.
pub fn run_cell(spec: &Spec, c: usize) -> Result<WorstCell> {
    let s = search_table(spec)?;
    let sc = scale_of(spec, s);
    let (ctx, family) = cell_setup(spec, c)?;
    let budget = Budget {
        restarts: sc.restarts,
        iterations: sc.iterations,
        replicates: sc.search_replicates,
        spread: s.spread,
    };
    let found = search::search(&ctx, &family, s.objective, &budget)?;
    let instance = family.components(&found.theta)?;
    let data = instance.dataset(family.d())?;
    ctx.check(&data)?;
    let reestimate = ctx.measure(&data, Phase::Reestimate, sc.replicates)?;
    let g = spec.raw.constants.g.unwrap_or(f64::NAN);
    let bounded = instance.control(g).dataset(family.d())?;
    let control = ctx.measure(&bounded, Phase::Reestimate, sc.replicates)?;
    let over = ctx
        .value(
            &reestimate,
            crate::experiment::search_table::Objective::OrOverBound,
        )
        .is_some_and(|v| v > 1.0);
    let recheck = if over {
        Some(ctx.measure(&data, Phase::Recheck, sc.recheck_replicates)?)
    } else {
        None
    };
    let (si, _) = spec.cell(c);
    Ok(WorstCell {
        cell: c,
        series: si,
        k: ctx.k,
        phi: ctx.point.phi,
        n: ctx.point.n,
        epsilon: ctx.point.epsilon,
        g,
        g_emp: ctx.g_emp,
        gd0: ctx.gd0,
        found,
        instance,
        reestimate,
        control,
        recheck,
    })
}

/// Runs (or resumes) every cell of `spec`, writing each as it finishes; returns every finished
/// cell. Cells run one after another, the replicates of each
/// evaluation in parallel.
pub fn run(spec: &Spec, opts: &SearchOptions) -> Result<BTreeMap<usize, WorstCell>> {
    search_table(spec)?;
    std::fs::create_dir_all(&opts.out).map_err(|e| Error::io(opts.out.display().to_string(), e))?;
    let head: Header = results::header(spec);
    let path = results::results_path(&opts.out, None);
    let cells = spec.cells();
    let (file, mut done) =
        ResultsFile::open::<WorstCell>(&path, head, opts.resume, opts.fresh, |w: &WorstCell| {
            (w.cell >= cells)
                .then(|| format!("search {} is outside the spec's {cells} cells", w.cell))
        })?;
    for c in 0..cells {
        if done.contains_key(&c) {
            continue;
        }
        let w = run_cell(spec, c)
            .map_err(|e| Error::Numerical(format!("search cell {c} of {}: {e}", spec.raw.name)))?;
        file.append(&w)?;
        done.insert(c, w);
    }
    file.finish(&done)?;
    Ok(done)
}

/// A violation: the instance as a CSV (centres x0.., then the weight a, or a regression
/// mixture's label y) and a spec that reruns it with
/// `dpsgd-lab run` at its phi (R = the re-check's replicates). Returns the spec's path.
pub fn write_violation(spec: &Spec, w: &WorstCell, dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display().to_string(), e))?;
    let stem = format!("{}-cell{}", spec.raw.name, w.cell);
    let csv = dir.join(format!("{stem}.csv"));
    let d = w.instance.centre.first().map_or(0, |c| c.len());
    let label = if w.instance.label.is_some() { "y" } else { "a" };
    let mut text: String = (0..d).map(|j| format!("x{j},")).collect::<String>() + label + "\n";
    let data = w.instance.dataset(d)?;
    for i in 0..data.n {
        let row: String = data.row(i).iter().map(|v| format!("{v:e},")).collect();
        text.push_str(&format!("{row}{:e}\n", data.y[i]));
    }
    crate::results_file::write_atomic(&csv, text.as_bytes())?;
    let mut raw = spec.raw.clone();
    raw.name = stem.clone();
    raw.search = None;
    raw.data = DataSpec::Csv(CsvSpec::new(csv.display().to_string(), label));
    let mut series = spec.series[w.series].spec.clone();
    // The CSV is the data: no generator law to take from the series.
    series.law = None;
    raw.series = vec![series];
    let reps = w.recheck.as_ref().map_or(2, |m| m.risk.len().max(2));
    let one = ScaleSpec {
        phi_max: w.phi,
        phi_min: w.phi * (1.0 - 1e-9),
        points: 2,
        replicates: reps,
        iterates: spec.iterates,
        bootstrap: spec.bootstrap.max(10),
    };
    raw.quick = one.clone();
    raw.full = one;
    let toml = toml::to_string(&raw).map_err(|e| {
        Error::Numerical(format!("cannot write the violating instance's spec: {e}"))
    })?;
    let path = dir.join(format!("{stem}.toml"));
    crate::results_file::write_atomic(&path, toml.as_bytes())?;
    Ok(path)
}
