//! Monte Carlo verification of the theorems' rates: specs, the runner, exact solvers, the
//! exponent fit with bootstrap intervals, verdicts, results files (resume, shards, merge) and
//! reports.
//!
//! A run writes into its output folder: `results.jsonl` (header + one line per cell, canonical
//! order), `summary.json`, `report.md` and `<name>.png` / `<name>.svg`. None of them holds a
//! timing, so a sharded run merged with [`merge`] reproduces them byte for byte.

pub mod cliplaw;
pub mod figure;
pub mod fit;
mod notes;
pub mod probability;
pub mod replicate;
pub mod report;
pub mod results;
pub mod runner;
pub mod solver;
pub mod spec;
pub mod verdict;

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
    if cells.len() != spec.cells() {
        return Err(Error::Config(format!(
            "{} has {} of {} cells; finish the run (--resume) or merge every shard",
            out.display(),
            cells.len(),
            spec.cells()
        )));
    }
    let summary = summarize(spec, cells);
    let io = |p: &Path| {
        let p = p.display().to_string();
        move |e| Error::io(p, e)
    };
    let js = out.join("summary.json");
    std::fs::write(
        &js,
        serde_json::to_string_pretty(&summary).expect("summary serializes") + "\n",
    )
    .map_err(io(&js))?;
    let plot_dir = plots.unwrap_or(out);
    std::fs::create_dir_all(plot_dir).map_err(io(plot_dir))?;
    let stem = plot_dir.join(&spec.raw.name);
    figure::figure(spec, &summary, cells).save(&stem)?;
    let rel = relative(out, &stem.with_extension("png"));
    let md = out.join("report.md");
    std::fs::write(&md, report::markdown(&summary, &rel, cells)).map_err(io(&md))?;
    Ok(summary)
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
