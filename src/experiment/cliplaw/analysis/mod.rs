//! The analysis of a finished clip-norm sweep: per (declared series, phi) the risk curve over
//! the grid of clip norms, its low plateau, the best clip norm tau* (a quadratic in log-log
//! through the grid minimum and its neighbours, not a raw argmin), and per declared series the
//! laws: log tau* and log min-risk on log phi, each with a paired bootstrap interval (every
//! resample draws R replicate indices once for every arm and phi, as the runs share their
//! random streams).

mod laws;
mod minimum;
mod plateau;

use std::collections::BTreeMap;

use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::{Arm, ClipSweepSpec};
use crate::error::{Error, Result};
use crate::experiment::fit::{interval, mean, ols};
use crate::experiment::results::CellResult;
use crate::experiment::spec::Spec;
use crate::experiment::theorem::schedule_theorem;
use crate::rng::{Purpose, stream};
use crate::theory::TheoremId;

pub use laws::{KSpan, Law, LawVerdict, MAX_HALF_WIDTH, Tail, k_span};
pub use minimum::Minimum;
pub use plateau::{Plateau, TIE};

/// A mean with its paired bootstrap 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The point estimate.
    pub value: f64,
    /// 2.5% quantile over the resamples.
    pub lo: f64,
    /// 97.5% quantile.
    pub hi: f64,
}

/// One (declared series, phi): the risk over the grid and the three arms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurveSummary {
    /// phi of Eq. (1).
    pub phi: f64,
    /// n.
    pub n: usize,
    /// epsilon.
    pub epsilon: f64,
    /// T.
    pub steps: u64,
    /// The calibrated noise multiplier z.
    pub z: Option<f64>,
    /// Mean risk at each grid clip norm.
    pub risk: Vec<f64>,
    /// Mean clipped fraction at each grid clip norm.
    pub clipped: Vec<f64>,
    /// Mean do-nothing risk f(w0) - f*.
    pub risk0: f64,
    /// The low plateau, if the first two grid clip norms give the same runs.
    pub plateau: Option<Plateau>,
    /// Where the minimum is.
    pub minimum: Minimum,
    /// Min over tau of the risk (the quadratic's value at an interior minimum, else the grid
    /// minimum).
    pub best: Estimate,
    /// The grid clip norm of the grid minimum.
    pub grid_best_tau: f64,
    /// Clipped fraction at the grid minimum.
    pub clipped_at_best: f64,
    /// Mean max_i G_i over the data sets (the uniform-Lipschitz clip norm).
    pub uniform_tau: f64,
    /// Risk at tau = max_i G_i.
    pub uniform: Estimate,
    /// risk(uniform) / min over tau.
    pub ratio: Estimate,
    /// The theorem's tau(phi) (mean over replicates; it varies only where G does).
    pub schedule_tau: f64,
    /// Risk at the theorem's tau(phi).
    pub schedule: Estimate,
    /// Clipped fraction at the theorem's tau(phi).
    pub schedule_clipped: f64,
}

/// One declared series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupSummary {
    /// Legend label.
    pub label: String,
    /// k.
    #[serde(with = "crate::k_serde")]
    pub k: f64,
    /// How its tail moves with phi.
    pub tail: Tail,
    /// One per phi, phi_max first.
    pub curves: Vec<CurveSummary>,
    /// log tau* on log phi over the phis with an interior minimum (>= 3), against the
    /// theorem's tau exponent.
    pub tau_law: Option<Law>,
    /// The plateau edge on log phi over the phis where the plateau is the minimum (geometric
    /// middle of each bracket; the interval is every OLS slope the brackets allow), against
    /// the theorem's tau exponent.
    pub edge_law: Option<Law>,
    /// The theorem's tau exponent: the slope of log tau(phi) of the schedule arm.
    pub tau_exponent: Option<f64>,
    /// log min over tau of the risk on log phi, against the theorem's risk exponent.
    pub risk_law: Option<Law>,
    /// The upper bound's exponent of phi.
    pub risk_exponent: f64,
    /// The lower bound's exponent 1 - 1/k (Thm 6.6 / L.1 specs).
    pub lower_exponent: Option<f64>,
    /// true when the min-risk interval lies above the lower bound's exponent (a clip norm
    /// beating Thm 6.6: a bug until explained).
    pub beats_lower_bound: bool,
    /// log risk at tau = max G_i on log phi.
    pub uniform_law: Option<Law>,
    /// log risk at the theorem's tau(phi) on log phi.
    pub schedule_law: Option<Law>,
    /// log do-nothing risk f(w0) - f* on log phi: the baseline a law must beat to be evidence
    /// (on Q_v f* itself moves with phi).
    pub do_nothing_law: Option<Law>,
    /// log (mean max_i G_i) on log n, where the sweep varies n (max_i G_i ~ n^(1/k)).
    pub uniform_tau_on_n: Option<f64>,
    /// On a real data set (k finite, a modelling choice): Hill's tail-index estimate of its G_i
    /// at each number of upper order statistics in [`HILL_TOPS`] (below n), as (top, alpha).
    /// Each law then carries the k span of its interval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hill: Vec<(usize, f64)>,
}

/// The numbers of upper order statistics at which a real data set's Hill estimates are shown
/// (the estimate moves with them: that spread is what makes k a modelling choice).
pub const HILL_TOPS: [usize; 6] = [10, 20, 30, 50, 100, 200];

/// The summary of a clip-norm sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CliplawSummary {
    /// Spec name.
    pub spec: String,
    /// Title.
    pub title: String,
    /// The theorem whose step size (and schedule arm) the runs use.
    pub theorem: String,
    /// quick or full.
    pub scale: String,
    /// Replicates per cell.
    pub replicates: usize,
    /// Bootstrap resamples.
    pub bootstrap: usize,
    /// The accountant that calibrated the noise.
    pub accountant: String,
    /// delta.
    pub delta: f64,
    /// The grid of clip norms.
    pub taus: Vec<f64>,
    /// One per declared series.
    pub groups: Vec<GroupSummary>,
}

/// Per-replicate values of one (group, phi).
struct Cells {
    phi: f64,
    n: usize,
    epsilon: f64,
    steps: u64,
    z: Option<f64>,
    grid: Vec<Vec<f64>>,
    clipped: Vec<f64>,
    risk0: f64,
    risk0s: Vec<f64>,
    uniform: Vec<f64>,
    uniform_tau: f64,
    schedule: Vec<f64>,
    schedule_tau: f64,
    schedule_clipped: f64,
}

/// Analyzes a finished sweep.
pub fn analyze(spec: &Spec, cells: &BTreeMap<usize, CellResult>) -> Result<CliplawSummary> {
    let cs: &ClipSweepSpec = spec
        .raw
        .clip_sweep
        .as_ref()
        .ok_or_else(|| Error::Config(format!("spec {} has no [clip_sweep]", spec.raw.name)))?;
    let taus = cs.grid();
    let groups = gather(spec, cells, taus.len())?;
    let r = spec.replicates;
    // One set of resampled replicate indices for every curve and arm (paired bootstrap).
    let mut rng = stream(spec.raw.seed, 0, Purpose::Other(0xc11b));
    let resamples: Vec<Vec<usize>> = (0..spec.bootstrap)
        .map(|_| (0..r).map(|_| rng.random_range(0..r)).collect())
        .collect();
    let sched = schedule_theorem(spec.raw.theorem);
    let out = groups
        .into_iter()
        .enumerate()
        .map(|(g, curves)| {
            let k = curves_k(spec, g);
            let sum = group_summary(spec, g, k, sched, &taus, &curves, &resamples);
            k_as_choice(spec, g, sched, sum)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(CliplawSummary {
        spec: spec.raw.name.clone(),
        title: spec.raw.title.clone().unwrap_or(spec.raw.name.clone()),
        theorem: spec.raw.theorem.label().to_string(),
        scale: format!("{:?}", spec.scale).to_lowercase(),
        replicates: r,
        bootstrap: spec.bootstrap,
        accountant: cs.accountant.as_str().to_string(),
        delta: spec.raw.privacy.delta,
        taus,
        groups: out,
    })
}

/// On a real data set (a CSV, k finite) every moment of the G_i is finite, so the series' k
/// is a modelling choice (a Hill estimate): each law's verdict is read over k as well (the k span
/// of its interval, under the theorem's tau exponent for the tau laws and its risk exponent for
/// the others), beside the data's Hill estimates at [`HILL_TOPS`] order statistics.
fn k_as_choice(
    spec: &Spec,
    g: usize,
    sched: TheoremId,
    mut sum: GroupSummary,
) -> Result<GroupSummary> {
    if !matches!(spec.raw.data, crate::config::DataSpec::Csv(_)) || !sum.k.is_finite() {
        return Ok(sum);
    }
    let s = spec
        .series
        .iter()
        .position(|x| x.sweep.is_some_and(|w| w.group == g))
        .ok_or_else(|| Error::Config(format!("clip-norm group {g} has no series")))?;
    let n = sum.curves.first().map_or(0, |c| c.n);
    let data = crate::experiment::replicate::build_data(spec, s, n, 0)?;
    let form = spec.raw.loss.lipschitz_form().ok_or_else(|| {
        Error::Config("a real data set's k span needs a loss with a closed-form G(x, y)".into())
    })?;
    let gi: Vec<f64> = (0..data.n)
        .map(|i| form.eval(data.row(i), data.y[i]))
        .collect();
    sum.hill = HILL_TOPS
        .iter()
        .filter_map(|&top| crate::data::summary::hill(&gi, top).map(|h| (top, h.alpha)))
        .collect();
    if sched.tau_exponent(sum.k).is_some() {
        let tau = |k: f64| sched.tau_exponent(k).unwrap_or(f64::NAN);
        sum.tau_law = sum.tau_law.map(|l| l.with_k_span(&tau));
        sum.edge_law = sum.edge_law.map(|l| l.with_k_span(&tau));
    }
    let risk = |k: f64| sched.phi_exponent(k);
    for l in [
        &mut sum.risk_law,
        &mut sum.uniform_law,
        &mut sum.schedule_law,
        &mut sum.do_nothing_law,
    ] {
        *l = l.take().map(|l| l.with_k_span(&risk));
    }
    Ok(sum)
}

fn curves_k(spec: &Spec, g: usize) -> f64 {
    spec.series
        .iter()
        .find(|s| s.sweep.is_some_and(|w| w.group == g))
        .map_or(f64::NAN, |s| s.k)
}

/// Sorts the cells into groups x phis.
fn gather(
    spec: &Spec,
    cells: &BTreeMap<usize, CellResult>,
    points: usize,
) -> Result<Vec<Vec<Cells>>> {
    let groups = spec
        .series
        .iter()
        .filter_map(|s| s.sweep.map(|w| w.group + 1))
        .max()
        .unwrap_or(0);
    let mut out: Vec<Vec<Cells>> = (0..groups)
        .map(|_| {
            spec.phis
                .iter()
                .map(|_| Cells {
                    phi: f64::NAN,
                    n: 0,
                    epsilon: f64::NAN,
                    steps: 0,
                    z: None,
                    grid: vec![Vec::new(); points],
                    clipped: vec![f64::NAN; points],
                    risk0: f64::NAN,
                    risk0s: Vec::new(),
                    uniform: Vec::new(),
                    uniform_tau: f64::NAN,
                    schedule: Vec::new(),
                    schedule_tau: f64::NAN,
                    schedule_clipped: f64::NAN,
                })
                .collect()
        })
        .collect();
    for cell in cells.values() {
        let slot = spec.series[cell.series]
            .sweep
            .ok_or_else(|| Error::Config("a clip-norm sweep cell without its arm".into()))?;
        let c = &mut out[slot.group][cell.phi_index];
        let reps = &cell.replicates;
        let risks: Vec<f64> = reps.iter().map(|x| x.risk).collect();
        let clipped = mean(
            &reps
                .iter()
                .map(|x| x.clipped.unwrap_or(f64::NAN))
                .collect::<Vec<_>>(),
        );
        let taus = mean(&reps.iter().map(|x| x.tau).collect::<Vec<_>>());
        c.phi = cell.phi;
        c.n = cell.n;
        c.epsilon = cell.epsilon;
        c.steps = cell.steps;
        c.z = reps.first().and_then(|x| x.noise_multiplier);
        c.risk0s = reps.iter().map(|x| x.risk0.unwrap_or(f64::NAN)).collect();
        c.risk0 = mean(&c.risk0s);
        match slot.arm {
            Arm::Grid(j) => {
                c.grid[j] = risks;
                c.clipped[j] = clipped;
            }
            Arm::Uniform => {
                c.uniform = risks;
                c.uniform_tau = taus;
            }
            Arm::Schedule => {
                c.schedule = risks;
                c.schedule_tau = taus;
                c.schedule_clipped = clipped;
            }
        }
    }
    Ok(out)
}

fn mean_at(v: &[f64], idx: Option<&[usize]>) -> f64 {
    match idx {
        Some(ix) => ix.iter().map(|&i| v[i]).sum::<f64>() / ix.len() as f64,
        None => mean(v),
    }
}

/// One resample's (or the full sample's) view of a curve.
struct View {
    kind: Minimum,
    tau: f64,
    best: f64,
    uniform: f64,
    schedule: f64,
    risk0: f64,
}

fn view(c: &Cells, x: &[f64], p: Option<Plateau>, idx: Option<&[usize]>) -> View {
    let m: Vec<f64> = c.grid.iter().map(|g| mean_at(g, idx)).collect();
    let lo = p.map_or(0, |p| p.last);
    let (kind, tau, best, _) = minimum::minimum(&m, x, lo, p.is_some());
    View {
        kind,
        tau,
        best,
        uniform: mean_at(&c.uniform, idx),
        schedule: mean_at(&c.schedule, idx),
        risk0: mean_at(&c.risk0s, idx),
    }
}

fn estimate(value: f64, draws: impl Iterator<Item = f64>) -> Estimate {
    let (lo, hi) = interval(draws).unwrap_or((f64::NAN, f64::NAN));
    Estimate { value, lo, hi }
}

/// The summary of one curve from its full-sample view `f` and its resamples' views `d`.
fn curve_summary(
    c: &Cells,
    p: Option<Plateau>,
    taus: &[f64],
    f: &View,
    d: &[View],
) -> CurveSummary {
    let minimum = match f.kind {
        Minimum::Interior { tau, .. } => {
            let inner: Vec<f64> = d
                .iter()
                .filter(|v| matches!(v.kind, Minimum::Interior { .. }))
                .map(|v| v.tau)
                .collect();
            let (lo, hi) = interval(inner.iter().copied()).unwrap_or((tau, tau));
            Minimum::Interior {
                tau,
                lo,
                hi,
                resolved: inner.len() as f64 / d.len().max(1) as f64,
            }
        }
        other => other,
    };
    let m: Vec<f64> = c.grid.iter().map(|v| mean(v)).collect();
    let lo = p.map_or(0, |p| p.last);
    let a = (lo..m.len()).fold(lo, |b, j| if m[j] < m[b] { j } else { b });
    CurveSummary {
        phi: c.phi,
        n: c.n,
        epsilon: c.epsilon,
        steps: c.steps,
        z: c.z,
        risk: m,
        clipped: c.clipped.clone(),
        risk0: c.risk0,
        plateau: p,
        minimum,
        best: estimate(f.best, d.iter().map(|v| v.best)),
        grid_best_tau: taus[a],
        clipped_at_best: c.clipped[a],
        uniform_tau: c.uniform_tau,
        uniform: estimate(f.uniform, d.iter().map(|v| v.uniform)),
        ratio: estimate(f.uniform / f.best, d.iter().map(|v| v.uniform / v.best)),
        schedule_tau: c.schedule_tau,
        schedule: estimate(f.schedule, d.iter().map(|v| v.schedule)),
        schedule_clipped: c.schedule_clipped,
    }
}

fn group_summary(
    spec: &Spec,
    g: usize,
    k: f64,
    sched: TheoremId,
    taus: &[f64],
    cells: &[Cells],
    resamples: &[Vec<usize>],
) -> GroupSummary {
    let x: Vec<f64> = taus.iter().map(|t| t.ln()).collect();
    let plateaus: Vec<Option<Plateau>> = cells
        .iter()
        .map(|c| plateau::plateau(&c.grid, c.risk0, taus))
        .collect();
    let full: Vec<View> = cells
        .iter()
        .zip(&plateaus)
        .map(|(c, p)| view(c, &x, *p, None))
        .collect();
    // draws[phi][b]
    let draws: Vec<Vec<View>> = cells
        .iter()
        .zip(&plateaus)
        .map(|(c, p)| {
            resamples
                .iter()
                .map(|ix| view(c, &x, *p, Some(ix)))
                .collect()
        })
        .collect();
    let curves: Vec<CurveSummary> = cells
        .iter()
        .enumerate()
        .map(|(i, c)| curve_summary(c, plateaus[i], taus, &full[i], &draws[i]))
        .collect();
    let lphi: Vec<f64> = cells.iter().map(|c| c.phi.ln()).collect();
    let tau_exponent = ols(
        &lphi,
        &cells
            .iter()
            .map(|c| c.schedule_tau.ln())
            .collect::<Vec<_>>(),
    )
    .map(|l| l.0);
    // A law over the sweep points `keep`: the full-sample slope, and the slope of every
    // resample (its value at each kept phi from `pick`).
    let law = |keep: &[usize], pick: &dyn Fn(&View) -> f64, predicted: Option<f64>| {
        let value = |i: usize, b: Option<usize>| match b {
            None => pick(&full[i]),
            Some(b) => pick(&draws[i][b]),
        };
        laws::bootstrap_law(&lphi, keep, resamples.len(), &value, predicted)
    };
    let all: Vec<usize> = (0..cells.len()).collect();
    let interior: Vec<usize> = all
        .iter()
        .copied()
        .filter(|&i| matches!(full[i].kind, Minimum::Interior { .. }))
        .collect();
    let risk_exponent = sched.phi_exponent(k);
    let lower_exponent = spec
        .raw
        .theorem
        .is_lower_bound()
        .then(|| TheoremId::L1.phi_exponent(k));
    let risk_law = law(&all, &|v| v.best, Some(risk_exponent));
    let beats_lower_bound = match (&risk_law, lower_exponent) {
        (Some(l), Some(e)) => l.lo > e,
        _ => false,
    };
    let n_varies = cells.windows(2).any(|w| w[0].n != w[1].n);
    GroupSummary {
        label: spec.group_label(g),
        k,
        tail: laws::tail(spec, k),
        tau_law: law(&interior, &|v| v.tau, tau_exponent),
        edge_law: laws::edge_law(
            &lphi,
            &plateaus,
            &full
                .iter()
                .map(|v| v.kind == Minimum::Plateau)
                .collect::<Vec<_>>(),
            tau_exponent,
        ),
        tau_exponent,
        risk_law,
        risk_exponent,
        lower_exponent,
        beats_lower_bound,
        uniform_law: law(&all, &|v| v.uniform, Some(risk_exponent)),
        schedule_law: law(&all, &|v| v.schedule, Some(risk_exponent)),
        do_nothing_law: law(&all, &|v| v.risk0, Some(risk_exponent)),
        uniform_tau_on_n: n_varies
            .then(|| {
                ols(
                    &cells.iter().map(|c| (c.n as f64).ln()).collect::<Vec<_>>(),
                    &cells.iter().map(|c| c.uniform_tau.ln()).collect::<Vec<_>>(),
                )
            })
            .flatten()
            .map(|l| l.0),
        curves,
        hill: Vec::new(),
    }
}
