//! The up-front size of a worst-case search ([`crate::limits`]'s rule: estimate, then refuse
//! before any work): the memory its replicates hold and the work its evaluations do, from the
//! `[search]` budget of the spec's scale, so that `iterations = 1000000000000` is refused in
//! one line instead of running for ever.

use super::{cell_setup, scale_of, search_table};
use crate::error::{Result, fmt_num};
use crate::experiment::runner::steps_estimate;
use crate::experiment::spec::Spec;
use crate::limits;

use super::family::InstanceFamily;

/// Bytes one replicate's result takes while a measurement holds it (the result struct with its
/// options and the collected risk), rounded up.
const REPLICATE_BYTES: f64 = 256.0;

/// Nelder-Mead evaluations per iteration in the estimate: a reflection and one expansion or
/// contraction (argmin's Nelder-Mead; a shrink, rare, costs p more).
const EVALS_PER_ITERATION: f64 = 2.0;

/// The search's evaluations of one cell whose family has `p` parameters: per restart the p + 1
/// points of the initial simplex and [`EVALS_PER_ITERATION`] per iteration.
pub fn evaluations(restarts: usize, iterations: u64, p: usize) -> f64 {
    restarts as f64 * (p as f64 + 1.0 + EVALS_PER_ITERATION * iterations as f64)
}

/// The estimated work of every cell of `spec` in gradient coordinates, as `run`'s estimate
/// counts them (T (B + 1) (d + 1) per DP-SGD run, T from the theorem's schedule at the cell's
/// phi): the search's evaluations times its replicates, the re-estimate and its control
/// (`replicates` each) and the re-check (`recheck_replicates`, counted as if every cell ran
/// it).
pub fn work_estimate(spec: &Spec) -> Result<f64> {
    let sc = scale_of(spec, search_table(spec)?);
    let per_step = (spec.raw.batch_size + 1.0) * (spec.dim()? as f64 + 1.0);
    let mut total = 0.0;
    for c in 0..spec.cells() {
        let (_, family) = cell_setup(spec, c)?;
        let runs = evaluations(sc.restarts, sc.iterations, family.dim())
            * sc.search_replicates as f64
            + 2.0 * sc.replicates as f64
            + sc.recheck_replicates as f64;
        total += runs * steps_estimate(spec, spec.cell(c).1) * per_step;
    }
    Ok(total)
}

/// Refuses a search of `spec` whose replicates do not fit in memory, or whose
/// [`work_estimate`] exceeds [`limits::WORK_LIMIT`] unless `force`; the message names the
/// spec's `[search]` budget.
pub fn check(spec: &Spec, force: bool) -> Result<()> {
    let s = search_table(spec)?;
    let sc = scale_of(spec, s);
    let scale = match spec.scale {
        crate::experiment::spec::Scale::Quick => "quick",
        crate::experiment::spec::Scale::Full => "full",
    };
    let what = format!(
        "spec {} [search] {scale} = {{ restarts = {}, iterations = {}, search_replicates = {}, \
         replicates = {}, recheck_replicates = {} }}",
        spec.raw.name,
        sc.restarts,
        sc.iterations,
        sc.search_replicates,
        sc.replicates,
        sc.recheck_replicates
    );
    let most = sc
        .search_replicates
        .max(sc.replicates)
        .max(sc.recheck_replicates) as f64;
    limits::check_memory(
        &what,
        REPLICATE_BYTES * most + 8.0 * sc.restarts as f64 * spec.cells() as f64,
    )?;
    let work = work_estimate(spec)?;
    limits::check_work(
        &format!("{what} ({} cells)", fmt_num(spec.cells() as f64)),
        work,
        force,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::spec::Scale;

    #[test]
    fn evaluations_count_the_simplex_and_two_per_iteration() {
        // 3 restarts of (8 + 1) + 2 * 60 evaluations.
        assert_eq!(evaluations(3, 60, 8), 3.0 * 129.0);
        assert_eq!(evaluations(1, 1_000_000_000_000, 4), 2e12 + 5.0);
    }

    /// Every shipped search passes the check at both scales, without --force.
    #[test]
    fn the_shipped_searches_fit_the_limits() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("simulations/worstcase");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        assert!(files.len() >= 8);
        for f in &files {
            for scale in [Scale::Quick, Scale::Full] {
                let spec = Spec::load(f, scale).unwrap();
                let w = work_estimate(&spec).unwrap();
                eprintln!("{} {scale:?}: {w:.3e}", spec.raw.name);
                check(&spec, false).unwrap();
            }
        }
    }
}
