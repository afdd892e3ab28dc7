//! The worst-case search's bookkeeping: what it returns is the best of everything it evaluated,
//! not the last point Nelder-Mead visited nor a restart's local best.

use std::sync::Mutex;

use dpsgd_lab::dataset::Dataset;
use dpsgd_lab::error::Result;
use dpsgd_lab::experiment::search_table::Objective;
use dpsgd_lab::experiment::worstcase::cell_setup;
use dpsgd_lab::experiment::worstcase::family::{Family, InstanceFamily};
use dpsgd_lab::experiment::worstcase::search::{self, Budget, Phase};
use dpsgd_lab::experiment::{Scale, Spec};

use crate::common::ROOT;

/// A family that records every parameter vector the search builds an instance from.
struct Recording {
    inner: Family,
    offset: Vec<f64>,
    seen: Mutex<Vec<Vec<f64>>>,
}

impl Recording {
    fn shifted_of(&self, theta: &[f64]) -> Vec<f64> {
        theta.iter().zip(&self.offset).map(|(a, b)| a + b).collect()
    }
}

impl InstanceFamily for Recording {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn build(&self, theta: &[f64]) -> Result<Dataset> {
        self.seen.lock().unwrap().push(theta.to_vec());
        self.inner.build(&self.shifted_of(theta))
    }
}

/// The search's result is the maximum over every evaluation it made. The objective is the
/// do-nothing risk (f(w0) - f*) / (G D0), a deterministic function of the instance, so every
/// recorded proposal can be re-evaluated exactly: the returned value must equal the largest of
/// them (to the bit), the returned parameters must reproduce it, the count of evaluations must
/// match, and the best of the restarts' values must be the returned value. A search that kept the
/// last evaluation, or the last restart's best, fails here (the start is far from the optimum,
/// so Nelder-Mead's last points are not its best ones until it has converged, and 6 iterations
/// per restart stop it long before that).
#[test]
fn the_search_returns_the_best_of_every_evaluation() {
    let path = format!("{ROOT}/simulations/worstcase/worstcase_j1_sharp.toml");
    let spec = Spec::load(path.as_ref(), Scale::Quick).unwrap();
    let (ctx, fam) = cell_setup(&spec, 0).unwrap();
    // The start of the closed-form test in worstcase.rs: unequal weights, the heavier one beyond
    // the other centre, well below the family's optimum.
    let offset: Vec<f64> = (0..fam.dim())
        .map(|i| [0.3, 0.0, -1.0, 0.5, 0.0, 0.0, 3.0, 3.0][i % 8])
        .collect();
    let family = Recording {
        inner: fam,
        offset,
        seen: Mutex::new(Vec::new()),
    };
    let budget = Budget {
        restarts: 3,
        iterations: 6,
        replicates: 1,
        spread: 1.0,
    };
    let found = search::search(&ctx, &family, Objective::DoNothingOverGd0, &budget).unwrap();
    let seen = std::mem::take(&mut *family.seen.lock().unwrap());
    let value = |theta: &[f64]| -> f64 {
        let data = family.inner.build(&family.shifted_of(theta)).unwrap();
        let m = ctx.measure(&data, Phase::Search, 1).unwrap();
        ctx.value(&m, Objective::DoNothingOverGd0).unwrap()
    };
    let values: Vec<f64> = seen.iter().map(|t| value(t)).collect();
    let best = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(found.evaluations, seen.len());
    assert_eq!(
        found.search_value.to_bits(),
        best.to_bits(),
        "returned {} but the best of {} evaluations is {best} (last {})",
        found.search_value,
        values.len(),
        values.last().unwrap()
    );
    assert_eq!(value(&found.theta).to_bits(), best.to_bits());
    let best_restart = found
        .restart_values
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    assert_eq!(best_restart.to_bits(), best.to_bits());
    // The test has teeth only if the last evaluation is clearly not the best one (a gap far
    // above rounding, so that the bit-equality above is not decided in the last digits).
    assert!(
        *values.last().unwrap() < best * (1.0 - 1e-3),
        "the last evaluation is the best one: the plant 'keep the last' would pass"
    );
}
