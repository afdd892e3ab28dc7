//! Monte Carlo verification of the theorems' rates: specs, the runner, exact solvers, the
//! exponent fit with bootstrap intervals, verdicts, results files (resume, shards, merge) and
//! reports.
//!
//! A run writes into its output folder: `results.jsonl` (header + one line per cell, canonical
//! order), `summary.json`, `report.md` and `<name>.png` / `<name>.svg`. None of them holds a
//! timing, so a sharded run merged with [`merge`] reproduces them byte for byte.

pub mod clip_sweep;
pub mod cliplaw;
pub mod figure;
pub mod fit;
mod measure;
mod notes;
pub mod probability;
pub mod replicate;
pub mod report;
pub mod results;
pub mod runner;
pub mod search_table;
pub mod solver;
pub mod spec;
pub mod spec_file;
pub mod theorem;
pub mod time_average;
pub mod verdict;
pub mod worstcase;

use std::collections::BTreeMap;
use std::path::Path;

pub use results::{CellResult, merge};
pub use runner::{RunOptions, run};
pub use spec::{ExperimentSpec, Scale, Spec};
pub use verdict::{SpecSummary, summarize};

use crate::error::{Error, Result};

/// Writes summary.json, report.md and the figure for complete results; returns the summary.
pub fn finalize(
    spec: &Spec,
    cells: &BTreeMap<usize, CellResult>,
    out: &Path,
    plots: Option<&Path>,
) -> Result<SpecSummary> {
    check_complete(spec, cells, out)?;
    let summary = summarize(spec, cells);
    write_json(&out.join("summary.json"), &summary)?;
    let plot_dir = plots_folder(plots, out)?;
    let stem = plot_dir.join(&spec.raw.name);
    figure::figure(spec, &summary, cells).save(&stem)?;
    let rel = relative(out, &stem.with_extension("png"));
    write_text(
        &out.join("report.md"),
        &report::markdown(&summary, &rel, cells),
    )?;
    Ok(summary)
}

/// An error unless `cells` holds every cell of `spec` (a summary of part of a run would be
/// silently wrong).
pub(crate) fn check_complete(
    spec: &Spec,
    cells: &BTreeMap<usize, CellResult>,
    out: &Path,
) -> Result<()> {
    if cells.len() != spec.cells() {
        return Err(Error::Results(format!(
            "{} has {} of {} cells; finish the run (--resume) or merge every shard",
            out.display(),
            cells.len(),
            spec.cells()
        )));
    }
    Ok(())
}

/// Writes `value` as pretty JSON with a final newline.
pub(crate) fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    write_text(
        path,
        &(serde_json::to_string_pretty(value).expect("summaries serialize") + "\n"),
    )
}

/// Writes `text` to `path`, naming the path in the error.
pub(crate) fn write_text(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::io(path.display().to_string(), e))
}

/// The folder the figures go to (`plots`, else `out`), created.
pub(crate) fn plots_folder<'a>(plots: Option<&'a Path>, out: &'a Path) -> Result<&'a Path> {
    let dir = plots.unwrap_or(out);
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display().to_string(), e))?;
    Ok(dir)
}

/// The path of `to` as seen from the folder `from` (both relative to the same root, or both
/// absolute), for links in report.md.
pub fn relative(from: &Path, to: &Path) -> String {
    use std::path::Component;
    let parts = |p: &Path| -> Vec<String> {
        p.components()
            .filter(|c| !matches!(c, Component::CurDir))
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect()
    };
    let (f, t) = (parts(from), parts(to));
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut out: Vec<String> = vec!["..".to_string(); f.len() - common];
    out.extend(t[common..].iter().cloned());
    out.join("/")
}
