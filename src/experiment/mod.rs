//! Monte Carlo verification of the theorems' rates: specs, the runner, exact solvers, the
//! exponent fit with bootstrap intervals, verdicts, results files (resume, shards, merge) and
//! reports.
//!
//! A run writes into its output folder: `results.jsonl` (header + one line per cell, canonical
//! order), `summary.json`, `report.md` and `<name>.png` / `<name>.svg`. None of them holds a
//! timing, so a sharded run merged with [`merge`] reproduces them byte for byte.

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

pub use runner::{CellResult, RunOptions, run};
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

/// Merges every `shard-I-of-N.jsonl` in `out` into `results.jsonl` (exactly what an unsharded
/// run writes). Refuses, naming the file: a shard of another spec, of the other scale (`--full`)
/// or of another version of the spec; shards of two different splits N; a missing shard; a
/// shard missing some of its cells (an interrupted task: `run --shard I/N --resume`).
pub fn merge(spec: &Spec, out: &Path) -> Result<BTreeMap<usize, CellResult>> {
    let head = runner::header(spec);
    let rd = std::fs::read_dir(out).map_err(|e| Error::io(out.display().to_string(), e))?;
    let mut shards: Vec<(usize, usize, std::path::PathBuf)> = Vec::new();
    for path in rd.filter_map(|e| e.ok().map(|e| e.path())) {
        let Some(name) = path.file_name().and_then(|f| f.to_str()) else {
            continue;
        };
        if !(name.starts_with("shard-") && name.ends_with(".jsonl")) {
            continue;
        }
        let (i, n) = parse_shard_name(name).ok_or_else(|| {
            Error::Config(format!(
                "{} is not a shard file name (shard-I-of-N.jsonl)",
                path.display()
            ))
        })?;
        shards.push((i, n, path));
    }
    shards.sort();
    let Some(&(_, n, _)) = shards.first() else {
        return Err(Error::Config(format!(
            "{} holds no shard-I-of-N.jsonl files",
            out.display()
        )));
    };
    if let Some((_, _, other)) = shards.iter().find(|s| s.1 != n) {
        return Err(Error::Config(format!(
            "{} holds shards of two splits ({} and {}): keep the shards of one --shard I/N split",
            out.display(),
            shards[0].2.display(),
            other.display()
        )));
    }
    // N comes from a file name: never enumerate more shards than the spec has cells.
    if n > spec.cells() {
        return Err(Error::Config(format!(
            "{} is a shard of {n}, but the spec has only {} cells: it was not written by this spec's `run --shard`; remove it",
            shards[0].2.display(),
            spec.cells()
        )));
    }
    // Every present shard first: a shard of the wrong spec or scale is the more basic mistake.
    for (_, _, path) in &shards {
        match runner::read_header(path)? {
            Some(h) if h == head => {}
            Some(h) => return Err(shard_mismatch(path, &h, &head)),
            None => {
                return Err(Error::Config(format!(
                    "{} is empty: rerun that shard",
                    path.display()
                )));
            }
        }
    }
    let absent: Vec<usize> = (1..=n)
        .filter(|i| !shards.iter().any(|s| s.0 == *i))
        .collect();
    if !absent.is_empty() {
        let names: Vec<String> = absent
            .iter()
            .map(|i| format!("shard-{i}-of-{n}.jsonl"))
            .collect();
        let list: Vec<String> = absent.iter().map(|i| i.to_string()).collect();
        let runs: Vec<String> = absent.iter().map(|i| format!("--shard {i}/{n}")).collect();
        return Err(Error::Config(format!(
            "{} {} of {n} {} missing: no {} in {}; run {} ({}), then merge again",
            if absent.len() == 1 { "shard" } else { "shards" },
            list.join(", "),
            if absent.len() == 1 { "is" } else { "are" },
            names.join(", "),
            out.display(),
            if absent.len() == 1 { "it" } else { "them" },
            runs.join(", "),
        )));
    }
    let mut all = BTreeMap::new();
    for (i, _, path) in &shards {
        let cells = runner::read_results(path, &head)?;
        if let Some(c) = cells.keys().find(|c| *c % n != i - 1) {
            return Err(Error::Config(format!(
                "{} holds cell {c}, which belongs to shard {} of {n}",
                path.display(),
                c % n + 1
            )));
        }
        let want: Vec<usize> = (0..spec.cells())
            .filter(|c| c % n == i - 1 && !cells.contains_key(c))
            .collect();
        if !want.is_empty() {
            return Err(Error::Config(format!(
                "shard {i} of {n} is incomplete: {} holds {} of {} cells (missing cells {want:?}); finish it with `run --shard {i}/{n} --resume`, then merge again",
                path.display(),
                cells.len(),
                cells.len() + want.len()
            )));
        }
        all.extend(cells);
    }
    // A run or another merge writing the same results.jsonl holds its lock: never write under it.
    let target = runner::results_path(out, None);
    let _lock = results::lock(&target)?;
    runner::write_results(&target, &head, &all)?;
    Ok(all)
}

/// (I, N) of `shard-I-of-N.jsonl`.
fn parse_shard_name(name: &str) -> Option<(usize, usize)> {
    let (i, n) = name
        .strip_prefix("shard-")?
        .strip_suffix(".jsonl")?
        .split_once("-of-")?;
    let (i, n) = (i.parse().ok()?, n.parse().ok()?);
    (1..=n).contains(&i).then_some((i, n))
}

/// Why the shard at `path` (header `found`) cannot be merged into a run of `expect`.
fn shard_mismatch(path: &Path, found: &runner::Header, expect: &runner::Header) -> Error {
    let flag = |scale: &str| {
        if scale == "full" {
            "with --full"
        } else {
            "without --full"
        }
    };
    Error::Config(if found.spec != expect.spec {
        format!(
            "{} is a shard of spec {}, not of {}: merge it with its own spec, or use another --out",
            path.display(),
            found.spec,
            expect.spec
        )
    } else if found.scale != expect.scale {
        format!(
            "{} ran at the {} scale (run {}), but this merge is at the {} scale: merge {}",
            path.display(),
            found.scale,
            flag(&found.scale),
            expect.scale,
            flag(&found.scale)
        )
    } else {
        format!(
            "{} ran another version of spec {} (fingerprint {}, this spec's is {}): the spec changed since the shard ran; rerun it or merge with the spec it ran",
            path.display(),
            found.spec,
            found.fingerprint,
            expect.fingerprint
        )
    })
}
