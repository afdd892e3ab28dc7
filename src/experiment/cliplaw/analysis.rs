//! The analysis of a finished clip-norm sweep: per (declared series, phi) the risk curve over
//! the grid of clip norms, its low plateau, the best clip norm tau* (a quadratic in log-log
//! through the grid minimum and its neighbours, not a raw argmin), and per declared series the
//! laws: log tau* and log min-risk on log phi, each with a paired bootstrap interval (every
//! resample draws R replicate indices once for every arm and phi, as the runs share their
//! random streams).

use std::collections::BTreeMap;

use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::{Arm, ClipSweepSpec};
use crate::config::DataSpec;
use crate::error::{Error, Result};
use crate::experiment::fit::{interval, mean, ols};
use crate::experiment::replicate::schedule_theorem;
use crate::experiment::results::CellResult;
use crate::experiment::spec::Spec;
use crate::rng::{Purpose, stream};
use crate::theory::TheoremId;

/// Two grid arms whose per-replicate risks agree to this relative tolerance (of the larger of
/// the two risks and the do-nothing risk) are the same run: with eta tau fixed (eta = C / (T
/// tau) psi^(-1/2)), clipping every sampled gradient makes the run independent of tau, and
/// under common random numbers the runs then agree up to rounding.
pub const TIE: f64 = 1e-9;
/// Largest half-width of a law's 95% interval that earns a verdict (0.1: a slope known to
/// +-0.1 tells -1/3 from -1/2 apart).
pub const MAX_HALF_WIDTH: f64 = 0.1;
/// Grid points each side of the grid minimum in the quadratic smoothing.
const WINDOW: usize = 2;

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

/// Where the risk curve over the grid has its minimum.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Minimum {
    /// A resolved interior minimum: the vertex of the log-log quadratic through the grid
    /// minimum and its neighbours, with its bootstrap interval over the resamples that also
    /// had an interior minimum (`resolved`: their share).
    Interior {
        /// tau*.
        tau: f64,
        /// 2.5% quantile.
        lo: f64,
        /// 97.5% quantile.
        hi: f64,
        /// Share of resamples with an interior minimum.
        resolved: f64,
    },
    /// The minimum is the low plateau: every clip norm up to the plateau edge gives the same
    /// (best) run, so no tau* is identifiable; the edge is the largest clip norm that is best.
    Plateau,
    /// The grid minimum is the smallest clip norm and there is no plateau: tau* lies below
    /// the grid.
    BelowGrid,
    /// The grid minimum is the largest clip norm: tau* lies above the grid.
    AboveGrid,
}

impl Minimum {
    /// Short text for tables.
    pub fn short(&self) -> String {
        match self {
            Minimum::Interior {
                tau,
                lo,
                hi,
                resolved,
            } => format!(
                "{} [{}, {}]{}",
                num(*tau),
                num(*lo),
                num(*hi),
                if *resolved < 0.95 {
                    format!(" ({:.0}% resolved)", 100.0 * resolved)
                } else {
                    String::new()
                }
            ),
            Minimum::Plateau => "plateau".into(),
            Minimum::BelowGrid => "below grid".into(),
            Minimum::AboveGrid => "above grid".into(),
        }
    }
}

/// The low plateau of a risk curve: grid clip norms 0..=last give the same runs (every
/// replicate), and the edge where the runs start to differ lies in [taus[last], taus[last + 1]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Plateau {
    /// The last grid index on the plateau.
    pub last: usize,
    /// The bracket of the edge (upper end infinite when the whole grid is one plateau).
    pub edge: (f64, f64),
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

/// A fitted power law in phi (or n) with its interval and verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Law {
    /// OLS slope of the log value on log phi.
    pub slope: f64,
    /// 2.5% quantile (bootstrap) or lower end (grid bracket).
    pub lo: f64,
    /// 97.5% quantile or upper end.
    pub hi: f64,
    /// Sweep points the fit uses.
    pub points: usize,
    /// The exponent it is compared with.
    pub predicted: Option<f64>,
    /// agrees / differs / too wide.
    pub verdict: LawVerdict,
}

/// A law against its predicted exponent, read from the interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LawVerdict {
    /// The interval contains the predicted exponent.
    Agrees,
    /// The interval excludes it.
    Differs,
    /// Half-width above [`MAX_HALF_WIDTH`]: no verdict.
    TooWide,
    /// Nothing to compare with.
    NoPrediction,
}

impl std::fmt::Display for LawVerdict {
    /// In words, as the terminal and the report print it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LawVerdict::Agrees => "agrees",
            LawVerdict::Differs => "DIFFERS",
            LawVerdict::TooWide => "too wide for a verdict",
            LawVerdict::NoPrediction => "no prediction",
        })
    }
}

impl Law {
    fn new(slope: f64, (lo, hi): (f64, f64), points: usize, predicted: Option<f64>) -> Law {
        let verdict = match predicted {
            None => LawVerdict::NoPrediction,
            Some(_) if (hi - lo) / 2.0 > MAX_HALF_WIDTH => LawVerdict::TooWide,
            Some(p) if lo <= p && p <= hi => LawVerdict::Agrees,
            Some(_) => LawVerdict::Differs,
        };
        Law {
            slope,
            lo,
            hi,
            points,
            predicted,
            verdict,
        }
    }
}

/// How a series' per-sample Lipschitz constants behave as phi moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tail {
    /// The tail is part of the instance and moves with phi (Appendix L: x = p^(-1/k) v with
    /// p = 2 phi / sqrt(nu)).
    ScalesWithPhi,
    /// A fixed law (a generator's, or a real data set's): a user's data are of this kind.
    Fixed,
    /// Bounded: every G_i <= G (k = inf).
    Bounded,
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
}

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
            group_summary(spec, g, k, sched, &taus, &curves, &resamples)
        })
        .collect();
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

fn curves_k(spec: &Spec, g: usize) -> f64 {
    spec.raw
        .series
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
        .raw
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
        let slot = spec.raw.series[cell.series]
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

/// The low plateau: the largest e with every replicate's risk at grid points 0..=e equal to
/// its risk at point 0 (to [`TIE`]); None when point 1 already differs.
fn plateau(c: &Cells, taus: &[f64]) -> Option<Plateau> {
    let same = |j: usize| {
        c.grid[j]
            .iter()
            .zip(&c.grid[0])
            .all(|(a, b)| (a - b).abs() <= TIE * a.abs().max(b.abs()).max(c.risk0.abs()))
    };
    let last = (1..taus.len()).take_while(|&j| same(j)).last()?;
    let upper = taus.get(last + 1).copied().unwrap_or(f64::INFINITY);
    Some(Plateau {
        last,
        edge: (taus[last], upper),
    })
}

/// The minimum of one curve of means `m` over log clip norms `x`, the plateau ending at `lo`:
/// (kind, tau*, min risk, grid argmin).
fn minimum(m: &[f64], x: &[f64], lo: usize, has_plateau: bool) -> (Minimum, f64, f64, usize) {
    let last = m.len() - 1;
    let a = (lo..=last).fold(lo, |b, j| if m[j] < m[b] { j } else { b });
    let grid = (x[a].exp(), m[a]);
    if a == lo {
        let kind = if has_plateau {
            Minimum::Plateau
        } else {
            Minimum::BelowGrid
        };
        return (kind, grid.0, grid.1, a);
    }
    if a == last {
        return (Minimum::AboveGrid, grid.0, grid.1, a);
    }
    let idx: Vec<usize> = (a.saturating_sub(WINDOW).max(lo)..=(a + WINDOW).min(last)).collect();
    let (tau, best) = match quadratic(
        &idx.iter().map(|&j| x[j] - x[a]).collect::<Vec<_>>(),
        &idx.iter().map(|&j| m[j].ln()).collect::<Vec<_>>(),
    ) {
        Some((c0, c1, c2)) if c2 > 0.0 => {
            let v = (-c1 / (2.0 * c2)).clamp(x[a - 1] - x[a], x[a + 1] - x[a]);
            ((x[a] + v).exp(), (c0 + c1 * v + c2 * v * v).exp())
        }
        _ => grid,
    };
    let kind = Minimum::Interior {
        tau,
        lo: tau,
        hi: tau,
        resolved: 1.0,
    };
    (kind, tau, best, a)
}

/// Least-squares y = c0 + c1 x + c2 x^2 (3 or more points); None when singular.
fn quadratic(x: &[f64], y: &[f64]) -> Option<(f64, f64, f64)> {
    if x.len() < 3 {
        return None;
    }
    let mut s = [0.0f64; 5];
    let mut t = [0.0f64; 3];
    for (&xi, &yi) in x.iter().zip(y) {
        let mut p = 1.0;
        for (k, sk) in s.iter_mut().enumerate() {
            *sk += p;
            if k < 3 {
                t[k] += p * yi;
            }
            p *= xi;
        }
    }
    // Normal equations [s0 s1 s2; s1 s2 s3; s2 s3 s4] c = t by Cramer's rule.
    let det3 = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let a = [[s[0], s[1], s[2]], [s[1], s[2], s[3]], [s[2], s[3], s[4]]];
    let d = det3(a);
    if d.abs() < 1e-12 {
        return None;
    }
    let col = |i: usize| {
        let mut m = a;
        for r in 0..3 {
            m[r][i] = t[r];
        }
        det3(m) / d
    };
    Some((col(0), col(1), col(2)))
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
    let (kind, tau, best, _) = minimum(&m, x, lo, p.is_some());
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
    let plateaus: Vec<Option<Plateau>> = cells.iter().map(|c| plateau(c, taus)).collect();
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
        .map(|(i, c)| {
            let f = &full[i];
            let d = &draws[i];
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
            let lo = plateaus[i].map_or(0, |p| p.last);
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
                plateau: plateaus[i],
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
        })
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
        if keep.len() < 3 {
            return None;
        }
        let xs: Vec<f64> = keep.iter().map(|&i| lphi[i]).collect();
        let slope = ols(
            &xs,
            &keep
                .iter()
                .map(|&i| pick(&full[i]).ln())
                .collect::<Vec<_>>(),
        )?
        .0;
        let slopes = (0..resamples.len()).map(|b| {
            let ys: Vec<f64> = keep.iter().map(|&i| pick(&draws[i][b]).ln()).collect();
            ols(&xs, &ys).map_or(f64::NAN, |l| l.0)
        });
        Some(Law::new(slope, interval(slopes)?, keep.len(), predicted))
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
        tail: tail(spec, k),
        tau_law: law(&interior, &|v| v.tau, tau_exponent),
        edge_law: edge_law(
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
    }
}

/// The plateau edge's law over the phis where the plateau is the minimum (`best`) and its edge
/// lies inside the grid (>= 3): the slope
/// through the geometric middles of the brackets, and the smallest and largest OLS slopes over
/// edges anywhere in their brackets (the slope is linear in each log edge, so its extremes sit
/// at bracket ends chosen by the sign of each weight (x_i - x_bar) / Sxx).
fn edge_law(
    lphi: &[f64],
    plateaus: &[Option<Plateau>],
    best: &[bool],
    predicted: Option<f64>,
) -> Option<Law> {
    let keep: Vec<(f64, f64, f64)> = lphi
        .iter()
        .zip(plateaus)
        .zip(best)
        .filter_map(|((&x, p), &b)| {
            let p = p.filter(|_| b)?;
            p.edge
                .1
                .is_finite()
                .then(|| (x, p.edge.0.ln(), p.edge.1.ln()))
        })
        .collect();
    if keep.len() < 3 {
        return None;
    }
    let xs: Vec<f64> = keep.iter().map(|k| k.0).collect();
    let mx = xs.iter().sum::<f64>() / xs.len() as f64;
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let mid = ols(
        &xs,
        &keep.iter().map(|k| 0.5 * (k.1 + k.2)).collect::<Vec<_>>(),
    )?
    .0;
    let (mut lo, mut hi) = (0.0, 0.0);
    for &(x, a, b) in &keep {
        let w = (x - mx) / sxx;
        lo += w * if w > 0.0 { a } else { b };
        hi += w * if w > 0.0 { b } else { a };
    }
    Some(Law::new(mid, (lo, hi), keep.len(), predicted))
}

fn tail(spec: &Spec, k: f64) -> Tail {
    if k.is_infinite() {
        Tail::Bounded
    } else if matches!(spec.raw.data, DataSpec::AppendixL(_)) {
        Tail::ScalesWithPhi
    } else {
        Tail::Fixed
    }
}

/// `v` with `d` decimals, without the sign of a value that rounds to zero ("-0.00" reads as a
/// negative slope).
pub fn fixed(v: f64, d: usize) -> String {
    let s = format!("{v:.d$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

/// A number for tables: 4 significant digits.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e4).contains(&a) {
        format!("{v:.3e}")
    } else {
        // Four significant digits; counted again after rounding, so 0.99999 prints as 1.000
        // rather than 1.0000.
        let digits = |a: f64| {
            if a == 0.0 {
                3
            } else {
                (3 - a.log10().floor() as i32).max(0) as usize
            }
        };
        let first = digits(a);
        let rounded: f64 = format!("{a:.first$}").parse().unwrap_or(a);
        let d = digits(rounded).min(first);
        format!("{v:.d$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slope that rounds to zero prints without a sign.
    #[test]
    fn fixed_drops_the_sign_of_zero() {
        assert_eq!(fixed(-0.0001, 2), "0.00");
        assert_eq!(fixed(-0.0, 3), "0.000");
        assert_eq!(fixed(-0.004, 2), "0.00");
        assert_eq!(fixed(-0.006, 2), "-0.01");
        assert_eq!(fixed(0.5, 2), "0.50");
    }

    /// Four significant digits, also when rounding carries into the next power of ten.
    #[test]
    fn num_keeps_four_significant_digits() {
        for (v, want) in [
            (0.999_99, "1.000"),
            (9.999_96, "10.00"),
            (0.123_456, "0.1235"),
            (1.5, "1.500"),
            (-0.999_99, "-1.000"),
            (0.0, "0.000"),
            (12_345.0, "1.234e4"),
        ] {
            assert_eq!(num(v), want, "{v}");
        }
    }

    /// The quadratic recovers a parabola's vertex exactly.
    #[test]
    fn quadratic_vertex() {
        let x = [-2.0, -1.0, 0.0, 1.0, 2.0];
        let y: Vec<f64> = x.iter().map(|v| 3.0 + 0.5 * (v - 0.3f64).powi(2)).collect();
        let (c0, c1, c2) = quadratic(&x, &y).unwrap();
        assert!((c2 - 0.5).abs() < 1e-12, "{c2}");
        assert!((-c1 / (2.0 * c2) - 0.3).abs() < 1e-12);
        assert!((c0 - (3.0 + 0.5 * 0.09)).abs() < 1e-12);
    }

    /// A U-shaped curve in log-log gives an interior minimum at its vertex; a curve flat on
    /// the left and rising is a plateau; monotone curves are off the grid.
    #[test]
    fn minimum_kinds() {
        let x: Vec<f64> = (0..12).map(|j| 0.4 * j as f64).collect();
        let u: Vec<f64> = x
            .iter()
            .map(|v| (0.7 * (v - 2.1f64).powi(2)).exp())
            .collect();
        match minimum(&u, &x, 0, false).0 {
            Minimum::Interior { tau, .. } => assert!((tau.ln() - 2.1).abs() < 1e-9, "{tau}"),
            k => panic!("{k:?}"),
        }
        let flat: Vec<f64> = x
            .iter()
            .map(|v| if *v <= 1.2 { 1.0 } else { 1.0 + v })
            .collect();
        assert_eq!(minimum(&flat, &x, 3, true).0, Minimum::Plateau);
        let down: Vec<f64> = x.iter().map(|v| (-v).exp()).collect();
        assert_eq!(minimum(&down, &x, 0, false).0, Minimum::AboveGrid);
        let up: Vec<f64> = x.iter().map(|v| v.exp()).collect();
        assert_eq!(minimum(&up, &x, 0, false).0, Minimum::BelowGrid);
    }

    /// The edge law's interval holds every slope the brackets allow: edges at exactly
    /// phi^(-1/2) bracketed by a factor-2 grid give an interval that contains -1/2, and the
    /// interval's ends are the OLS slopes of the extreme bracket ends.
    #[test]
    fn edge_law_brackets() {
        let lphi: Vec<f64> = (0..5).map(|i| -(i as f64) * 0.5).collect();
        let plateaus: Vec<Option<Plateau>> = lphi
            .iter()
            .map(|x| {
                let e = -0.5 * x; // log edge
                let lo = (e / 2f64.ln()).floor() * 2f64.ln();
                Some(Plateau {
                    last: 1,
                    edge: (lo.exp(), (lo + 2f64.ln()).exp()),
                })
            })
            .collect();
        let l = edge_law(&lphi, &plateaus, &[true; 5], Some(-0.5)).unwrap();
        assert!(l.lo <= -0.5 && -0.5 <= l.hi, "{l:?}");
        assert!(l.hi - l.lo > 0.0);
    }
}
