//! The Monte Carlo runner: cells (series x phi) of R replicates, rayon over (cell, replicate),
//! each finished cell appended to the results file as one JSON line.
//!
//! Seeds derive from (base seed, series or cell index, replicate), never from threads, so the
//! results file is the same for every RAYON_NUM_THREADS, every shard split and every resume.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rayon::prelude::*;

use super::replicate::{run_replicate, sweep_point};
use super::results::{self, CellResult};
use super::spec::Spec;
use crate::error::{Error, Result};
use crate::theory::TheoremId;
use crate::theory::bounds;

/// Options of [`run`].
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Output folder.
    pub out: PathBuf,
    /// Keep finished cells only under the same fingerprint: a changed spec is an error. Without
    /// it, cells of the same fingerprint are reused anyway and a changed spec starts over (see
    /// [`crate::results_file::ResultsFile::open`]).
    pub resume: bool,
    /// Start over, discarding every finished cell (also what decides the cases a rerun refuses:
    /// another spec's file, a corrupted line).
    pub fresh: bool,
    /// Run only cells with index % N == I - 1 (I in 1..=N).
    pub shard: Option<(usize, usize)>,
    /// Progress bar on stderr.
    pub progress: bool,
    /// Stop after this many newly finished cells (tests of resume; None: run all).
    pub stop_after: Option<usize>,
    /// Run even when the estimated work exceeds [`crate::limits::WORK_LIMIT`].
    pub force: bool,
}

/// Runs the cells of `spec` not yet in the results file; returns every finished cell (old and
/// new) of this run's slice.
pub fn run(spec: &Spec, opts: &RunOptions) -> Result<BTreeMap<usize, CellResult>> {
    if let Some((i, n)) = opts.shard
        && (n == 0 || i == 0 || i > n)
    {
        return Err(Error::param(format!(
            "--shard I/N needs 1 <= I <= N, but is {i}/{n}"
        )));
    }
    // More shards than cells leaves shards with nothing to do, and `merge` would have to look
    // for every one of them: refuse N above the number of cells.
    if let Some((i, n)) = opts.shard
        && n > spec.cells()
    {
        return Err(Error::param(format!(
            "--shard {i}/{n}: N = {n} exceeds the spec's {} cells; use N <= {}",
            spec.cells(),
            spec.cells()
        )));
    }
    let total_work = work_estimate(spec)?;
    crate::limits::check_work(
        &format!(
            "spec {} (phi_min = {}, replicates = {}, batch_size = {})",
            spec.raw.name,
            crate::error::fmt_num(spec.phis.iter().cloned().fold(f64::INFINITY, f64::min)),
            spec.replicates,
            spec.raw.batch_size
        ),
        total_work,
        opts.force,
    )?;
    if opts.out.exists() && !opts.out.is_dir() {
        return Err(Error::param(format!(
            "--out {}: not a directory",
            opts.out.display()
        )));
    }
    std::fs::create_dir_all(&opts.out).map_err(|e| Error::io(opts.out.display().to_string(), e))?;
    let head = results::header(spec);
    let path = results::results_path(&opts.out, opts.shard);
    let (file, mut done) = results::open(&path, &head, opts.resume, opts.fresh)?;
    let mine = |c: &usize| opts.shard.is_none_or(|(i, n)| c % n == i - 1);
    let mut todo: Vec<usize> = (0..spec.cells())
        .filter(mine)
        .filter(|c| !done.contains_key(c))
        .collect();
    if let Some(m) = opts.stop_after {
        todo.truncate(m);
    }
    // Largest T first, so the long cells do not trail at the end.
    todo.sort_by(|a, b| {
        spec.cell(*a)
            .1
            .cmp(&spec.cell(*b).1)
            .reverse()
            .then(a.cmp(b))
    });
    let work = |c: usize| spec.replicates as f64 * steps_estimate(spec, spec.cell(c).1);
    let progress = Progress::new(
        todo.iter().map(|&c| work(c)).sum(),
        todo.len(),
        opts.progress,
        &spec.raw.name,
    );
    progress.set_estimate(total_work);
    let new: Vec<CellResult> = todo
        .par_iter()
        .map(|&c| -> Result<CellResult> {
            let cell = run_cell(spec, c, &|| {
                progress.add(steps_estimate(spec, spec.cell(c).1))
            })?;
            file.append(&cell)?;
            progress.cell_done();
            Ok(cell)
        })
        .collect::<Result<Vec<_>>>()?;
    progress.finish();
    for c in new {
        done.insert(c.cell, c);
    }
    file.finish(&done)?;
    Ok(done)
}

/// The work of the whole sweep in gradient coordinates: replicates x T x (b + 1) x (d + 1)
/// summed over cells, known from the spec before anything runs.
pub fn work_estimate(spec: &Spec) -> Result<f64> {
    let d = spec.dim()? as f64;
    let steps: f64 = (0..spec.cells())
        .map(|c| {
            spec.replicates as f64
                * steps_estimate(spec, spec.cell(c).1)
                * (spec.raw.batch_size + 1.0)
                * (d + 1.0)
        })
        .sum();
    // The report's fits: two per series (whole sweep and smallest decade), each resampling every
    // replicate of every point `bootstrap` times (one draw counts as one coordinate).
    let fits = 2.0
        * spec.series.len() as f64
        * spec.bootstrap as f64
        * spec.phis.len() as f64
        * spec.replicates as f64;
    Ok(steps + fits)
}

/// T at the `pi`-th phi of the grid, from the theorem's schedule (Thm 5.4: 1 / (3 phi^2); the
/// others: phi^-2).
pub(crate) fn steps_estimate(spec: &Spec, pi: usize) -> f64 {
    let phi = spec.phis[pi];
    if spec.raw.theorem.full_version() == TheoremId::H1 {
        bounds::thm54_steps(phi)
    } else {
        bounds::main_text_steps(phi)
    }
}

/// One cell: R replicates in parallel.
pub fn run_cell(spec: &Spec, c: usize, tick: &(dyn Fn() + Sync)) -> Result<CellResult> {
    let (s, pi) = spec.cell(c);
    let point = sweep_point(spec, pi)?;
    let reps = (0..spec.replicates)
        .into_par_iter()
        .map(|r| {
            let out = run_replicate(spec, c, &point, r);
            tick();
            out
        })
        .collect::<Result<Vec<_>>>()
        .map_err(|e| {
            Error::Numerical(format!(
                "cell {c} ({}, phi = {:.4e}): {e}",
                spec.label(s),
                point.phi
            ))
        })?;
    let steps = reps.first().map(|r| r.1).unwrap_or(0);
    Ok(CellResult {
        cell: c,
        series: s,
        k: spec.series[s].k,
        phi_index: pi,
        phi: point.phi,
        n: point.n,
        epsilon: point.epsilon,
        steps,
        replicates: reps.into_iter().map(|r| r.0).collect(),
    })
}

/// The progress bar of one spec on stderr (indicatif), weighted by the steps T of each
/// replicate; hidden when stderr is not a terminal, so logs and CI output stay clean.
struct Progress {
    bar: indicatif::ProgressBar,
    cells: usize,
    done: std::sync::atomic::AtomicUsize,
}

impl Progress {
    fn new(total: f64, cells: usize, on: bool, name: &str) -> Self {
        let bar = if on {
            indicatif::ProgressBar::new(total.max(1.0) as u64)
        } else {
            indicatif::ProgressBar::hidden()
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{prefix:<24} [{bar:30}] {percent:>3}%  {msg} cells  {elapsed_precise}  ETA {eta}",
            )
            .expect("static template")
            .progress_chars("#>-"),
        );
        bar.set_prefix(name.to_string());
        bar.set_message(format!("0/{cells}"));
        Progress {
            bar,
            cells,
            done: std::sync::atomic::AtomicUsize::new(0),
        }
    }
    fn set_estimate(&self, work: f64) {
        self.bar.set_prefix(format!(
            "{} (work {})",
            self.bar.prefix(),
            crate::error::fmt_num(work)
        ));
    }
    fn add(&self, w: f64) {
        self.bar.inc(w as u64);
    }
    fn cell_done(&self) {
        let k = self.done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        self.bar.set_message(format!("{k}/{}", self.cells));
    }
    fn finish(&self) {
        self.bar.finish();
    }
}
