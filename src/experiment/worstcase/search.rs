//! The search: a derivative-free maximization of OR / bound (or OR / (G D0)) over an instance
//! family, by argmin's Nelder-Mead with restarts, under common random numbers; and the
//! re-estimation of a found instance on fresh replicates.
//!
//! Why Nelder-Mead: with common random numbers the objective is a deterministic, piecewise
//! smooth function of the parameters (the row counts round), cheap in dimension (8-40) but
//! costly per evaluation (R runs of DP-SGD), so a method that moves on every evaluation fits a
//! budget of a few hundred evaluations better than a population method (particle swarm spends
//! its budget on a swarm per generation and needs box bounds, which the unconstrained
//! parameters do not have); restarts from random points make up for its locality.
//!
//! Streams ([`Phase`]): every candidate of a search runs on the same search streams (common
//! random numbers); the reported numbers come from the re-estimate streams and, for an OR /
//! bound above 1, the re-check streams, which no search evaluation touches.

use std::sync::Mutex;

use argmin::core::{CostFunction, Executor};
use argmin::solver::neldermead::NelderMead;
use rand::RngExt;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::family::{InstanceFamily, check_moment};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::experiment::replicate::{SweepPoint, run_on_data};
use crate::experiment::search_table::Objective;
use crate::experiment::spec::Spec;
use crate::loss::LipschitzForm;
use crate::rng::{Purpose, derive_seed, stream};

/// Cost of an instance outside the class (no Assumption 6.4 radius for K.1, a failed run):
/// Nelder-Mead minimizes -objective, so this is never preferred.
const OUTSIDE: f64 = 1e300;

/// Which random streams a set of runs uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The search's evaluations (every candidate the same streams).
    Search,
    /// The re-estimate of a found instance.
    Reestimate,
    /// The large-R re-check of an OR / bound above 1.
    Recheck,
}

impl Phase {
    fn tag(self) -> u64 {
        match self {
            Phase::Search => 0x5ea7c4,
            Phase::Reestimate => 0x2e57,
            Phase::Recheck => 0x2ec4,
        }
    }
}

/// The run seed of `phase` (shared by every cell, so a phase's replicate r is one set of common
/// random numbers at every phi and k).
pub fn phase_seed(base: u64, phase: Phase) -> u64 {
    derive_seed(base, 0, Purpose::Other(phase.tag()))
}

/// The seeds of the Gaussian-noise and sampling streams that `replicates` runs of `phase` draw
/// from (what the disjointness test compares).
pub fn stream_seeds(base: u64, phase: Phase, replicates: usize) -> Vec<u64> {
    let seed = phase_seed(base, phase);
    (0..replicates as u64)
        .flat_map(|r| {
            [
                derive_seed(seed, r, Purpose::Noise),
                derive_seed(seed, r, Purpose::Sampling),
            ]
        })
        .collect()
}

/// Per-replicate measurements of one instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Time-averaged risk of each replicate's run.
    pub risk: Vec<f64>,
    /// Do-nothing risk f(w0) - f* (one data set: the same in every replicate).
    pub risk0: f64,
    /// Mean clipped fraction.
    pub clipped: f64,
    /// The theorem's explicit bound (None: a constant the instance lacks).
    pub bound: Option<f64>,
    /// The clip norm tau the schedule ran.
    pub tau: f64,
    /// T.
    pub steps: u64,
}

/// One cell's search context: the spec, its cell (series = k, phi), the sweep point and the
/// normalization G D0.
pub struct Context<'a> {
    /// The spec.
    pub spec: &'a Spec,
    /// The cell.
    pub cell: usize,
    /// (n, epsilon, phi).
    pub point: SweepPoint,
    /// k of the cell's series.
    pub k: f64,
    /// The moment level every instance must meet.
    pub g_emp: f64,
    /// G D0.
    pub gd0: f64,
}

impl Context<'_> {
    /// Runs `replicates` replicates of `phase` on `data` (in parallel; the result does not depend
    /// on the thread count).
    pub fn measure(&self, data: &Dataset, phase: Phase, replicates: usize) -> Result<Measured> {
        let seed = phase_seed(self.spec.raw.seed, phase);
        let reps = (0..replicates)
            .into_par_iter()
            .map(|r| run_on_data(self.spec, self.cell, &self.point, data, seed, r))
            .collect::<Result<Vec<_>>>()?;
        let steps = reps.first().map_or(0, |r| r.1);
        let first = &reps
            .first()
            .ok_or_else(|| Error::param("a measurement needs at least one replicate"))?
            .0;
        Ok(Measured {
            risk: reps.iter().map(|r| r.0.risk).collect(),
            risk0: first.risk0.unwrap_or(f64::NAN),
            clipped: reps.iter().map(|r| r.0.clipped.unwrap_or(0.0)).sum::<f64>()
                / replicates as f64,
            bound: first.bound,
            tau: first.tau,
            steps,
        })
    }

    /// Refuses `data` outside Assumption 6.1 at this cell's level: the per-sample G_i are
    /// computed from the loss's own G(x, y) (not from the family's decoding), then
    /// [`check_moment`]. Called on every instance the search proposes, before it runs.
    pub fn check(&self, data: &Dataset) -> Result<()> {
        let form: LipschitzForm = self.spec.raw.loss.lipschitz_form().ok_or_else(|| {
            Error::Config("the worst-case search needs a loss with a closed-form G(x, y)".into())
        })?;
        let gi: Vec<f64> = (0..data.n)
            .map(|i| form.eval(data.row(i), data.y[i]))
            .collect();
        check_moment(&gi, self.k, self.g_emp)
    }

    /// The objective of a measurement (None: outside the class for this objective).
    pub fn value(&self, m: &Measured, objective: Objective) -> Option<f64> {
        let mean = m.risk.iter().sum::<f64>() / m.risk.len() as f64;
        match objective {
            Objective::OrOverBound => m.bound.filter(|b| *b > 0.0).map(|b| mean / b),
            Objective::OrOverGd0 => Some(mean / self.gd0),
            Objective::DoNothingOverGd0 => Some(m.risk0 / self.gd0),
        }
    }
}

/// The search's budget.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// Restarts (the first from the neutral point 0, the others from random points).
    pub restarts: usize,
    /// Nelder-Mead iterations per restart.
    pub iterations: u64,
    /// Replicates per evaluation.
    pub replicates: usize,
    /// Standard deviation of a random restart's parameters and the initial simplex's step.
    pub spread: f64,
}

/// The result of a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Found {
    /// The best parameters over every evaluation.
    pub theta: Vec<f64>,
    /// Their objective on the search streams (biased upwards: never reported as a result).
    pub search_value: f64,
    /// The best value of each restart.
    pub restart_values: Vec<f64>,
    /// Evaluations spent.
    pub evaluations: usize,
}

struct Problem<'a, F: InstanceFamily> {
    ctx: &'a Context<'a>,
    family: &'a F,
    objective: Objective,
    replicates: usize,
    /// (best value, its parameters, evaluations, best value of the current restart).
    best: Mutex<(f64, Vec<f64>, usize, f64)>,
    /// The first error of an evaluation (argmin's Nelder-Mead panics on a cost error, so the
    /// cost reports "outside" and the search returns this error when the run ends).
    failed: Mutex<Option<Error>>,
}

impl<F: InstanceFamily> Problem<'_, F> {
    /// Builds, checks (Assumption 6.1 on every proposal) and measures one candidate.
    fn evaluate(&self, theta: &[f64]) -> Result<f64> {
        let data = self.family.build(theta)?;
        self.ctx.check(&data)?;
        let reps = if self.objective == Objective::DoNothingOverGd0 {
            1
        } else {
            self.replicates
        };
        // An instance whose exact solver does not certify f* (a numerical failure) has no
        // risk to measure: outside the class, never preferred; any other error stops the search.
        let v = match self.ctx.measure(&data, Phase::Search, reps) {
            Ok(m) => self.ctx.value(&m, self.objective),
            Err(Error::Numerical(_)) => None,
            Err(e) => return Err(e),
        };
        let mut best = self.best.lock().unwrap_or_else(|e| e.into_inner());
        best.2 += 1;
        if let Some(v) = v {
            best.3 = best.3.max(v);
            if v > best.0 {
                best.0 = v;
                best.1 = theta.to_vec();
            }
        }
        Ok(v.map_or(OUTSIDE, |v| -v))
    }
}

impl<F: InstanceFamily> CostFunction for Problem<'_, F> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, theta: &Self::Param) -> std::result::Result<f64, argmin::core::Error> {
        let lock = || self.failed.lock().unwrap_or_else(|e| e.into_inner());
        if lock().is_some() {
            return Ok(OUTSIDE);
        }
        Ok(self.evaluate(theta).unwrap_or_else(|e| {
            lock().get_or_insert(e);
            OUTSIDE
        }))
    }
}

/// Maximizes `objective` over `family` in cell `ctx` with Nelder-Mead and restarts. Every
/// proposal is checked against Assumption 6.1 before it runs; a violation stops the search with
/// an error.
pub fn search<F: InstanceFamily>(
    ctx: &Context<'_>,
    family: &F,
    objective: Objective,
    budget: &Budget,
) -> Result<Found> {
    let p = family.dim();
    let problem = Problem {
        ctx,
        family,
        objective,
        replicates: budget.replicates,
        best: Mutex::new((f64::NEG_INFINITY, vec![0.0; p], 0, f64::NEG_INFINITY)),
        failed: Mutex::new(None),
    };
    let mut restart_values = Vec::new();
    let mut rng = stream(
        ctx.spec.raw.seed,
        ctx.cell as u64,
        Purpose::Other(0x5ea7_57a7),
    );
    for restart in 0..budget.restarts {
        let start: Vec<f64> = if restart == 0 {
            vec![0.0; p]
        } else {
            (0..p)
                .map(|_| budget.spread * (2.0 * rng.random::<f64>() - 1.0) * 3f64.sqrt())
                .collect()
        };
        // The initial simplex: the start and one step along each axis.
        let simplex: Vec<Vec<f64>> = std::iter::once(start.clone())
            .chain((0..p).map(|i| {
                let mut v = start.clone();
                v[i] += budget.spread;
                v
            }))
            .collect();
        let solver = NelderMead::new(simplex)
            .with_sd_tolerance(1e-10)
            .map_err(|e| Error::Numerical(e.to_string()))?;
        problem.best.lock().unwrap_or_else(|e| e.into_inner()).3 = f64::NEG_INFINITY;
        let res = Executor::new(&problem, solver)
            .configure(|s| s.max_iters(budget.iterations))
            .run();
        if let Some(e) = problem
            .failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            return Err(e);
        }
        if let Err(e) = res {
            return Err(Error::Numerical(format!(
                "the worst-case search stopped: {e}"
            )));
        }
        let best = problem.best.lock().unwrap_or_else(|e| e.into_inner());
        restart_values.push(best.3);
    }
    let best = problem.best.into_inner().unwrap_or_else(|e| e.into_inner());
    if !best.0.is_finite() {
        return Err(Error::Numerical(
            "the worst-case search found no instance inside the class".into(),
        ));
    }
    Ok(Found {
        theta: best.1,
        search_value: best.0,
        restart_values,
        evaluations: best.2,
    })
}

impl<F: InstanceFamily> CostFunction for &Problem<'_, F> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, theta: &Self::Param) -> std::result::Result<f64, argmin::core::Error> {
        (*self).cost(theta)
    }
}
