//! `dpsgd-lab worstcase [--full]`: every spec with a `[search]` table in simulations/worstcase/,
//! searched for its worst instances, re-estimated on fresh replicates, one report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;

use dpsgd_lab::experiment::worstcase::report::{self, WorstSummary};
use dpsgd_lab::experiment::worstcase::{self, SearchOptions, WorstCell, figure};
use dpsgd_lab::experiment::{self, Spec};

use super::batch::BatchArgs;

/// Search each upper bound's instance class for the data that make DP-SGD worst.
#[derive(Debug, Args)]
pub struct WorstcaseArgs {
    /// Folder of the specs (every *.toml with a [search] table).
    #[arg(long, default_value = "simulations/worstcase")]
    pub specs: PathBuf,
    #[command(flatten)]
    pub batch: BatchArgs,
    /// Also write the report to this file (e.g. paper_refs/worstcase.md).
    #[arg(long)]
    pub report: Option<PathBuf>,
}

pub fn run(args: &WorstcaseArgs) -> Result<()> {
    let b = &args.batch;
    let word = b.scale_word();
    let (out, plots) = b.folders("worstcase");
    let start = Instant::now();
    let files = super::batch::spec_files(&args.specs, "search", None)?;
    if files.is_empty() {
        anyhow::bail!(
            "{} holds no spec with a [search] table",
            args.specs.display()
        );
    }
    // Every selected spec's size is checked before the first one runs.
    let selected = b.select(&files, &args.specs)?;
    for (_, spec) in &selected {
        worstcase::budget::check(spec, b.force)?;
    }
    let mut violations = Vec::new();
    let mut done: Vec<(WorstSummary, Vec<PathBuf>)> = Vec::new();
    for (f, spec) in &selected {
        let dir = out.join(&spec.raw.name);
        let t0 = Instant::now();
        let cells = worstcase::run(
            spec,
            &SearchOptions {
                out: dir.clone(),
                resume: b.resume,
                fresh: b.fresh,
            },
        )
        .with_context(|| format!("spec {}", f.display()))?;
        if !b.quiet {
            eprintln!("{}: {:.1} s", spec.raw.name, t0.elapsed().as_secs_f64());
        }
        let (s, stems) = finish(spec, &cells, &dir, &plots)?;
        for w in cells.values().filter(|w| report::is_violation(w)) {
            let p = worstcase::write_violation(spec, w, &dir.join("violations"))?;
            violations.push(format!(
                "{} cell {} ({})",
                spec.raw.name,
                w.cell,
                p.display()
            ));
        }
        done.push((s, stems));
    }
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("report.md"), document(word, &done, &out))?;
    if let Some(r) = &args.report {
        let base = r.parent().unwrap_or(Path::new(".")).to_path_buf();
        std::fs::write(r, document(word, &done, &base))
            .with_context(|| format!("{}", r.display()))?;
    }
    let summaries: Vec<WorstSummary> = done.into_iter().map(|d| d.0).collect();
    if b.json {
        println!("{}", super::json::to_string(&summaries)?);
    } else {
        print!("{}", report::text(&summaries));
        println!(
            "wrote {}/report.md and plots into {} in {:.1} s",
            out.display(),
            plots.display(),
            start.elapsed().as_secs_f64()
        );
    }
    if !violations.is_empty() {
        return super::check_failed(format!(
            "{} worst instances exceed their explicit bound on the re-check (VIOLATION), written as run specs: {}",
            violations.len(),
            violations.join(", ")
        ));
    }
    Ok(())
}

/// The whole report, its figure links relative to `base` (the folder the report is written to).
fn document(word: &str, done: &[(WorstSummary, Vec<PathBuf>)], base: &Path) -> String {
    let mut md = format!("# dpsgd-lab worstcase ({word} scale)\n\n");
    let full = if word == "full" {
        " --full --report paper_refs/worstcase.md"
    } else {
        ""
    };
    md.push_str(&format!(
        "Written by `cargo run --release -- worstcase{full}` from the specs in simulations/worstcase/.\n\n"
    ));
    let verification = std::fs::read_to_string("paper_refs/verification.md").ok();
    let shipped = |t: &str| {
        verification
            .as_deref()
            .and_then(|v| report::shipped_max(v, t))
    };
    let summaries: Vec<WorstSummary> = done.iter().map(|d| d.0.clone()).collect();
    md.push_str(&report::answers(&summaries, &|t| shipped(t).map(|x| x.0)));
    md.push_str(&report::legend());
    md.push('\n');
    for (s, stems) in done {
        let rel: Vec<String> = stems
            .iter()
            .map(|p| experiment::relative(base, &p.with_extension("png")))
            .collect();
        md.push_str(&report::markdown(s, &rel, shipped(&s.theorem)));
    }
    md.push_str(&report::limits(&summaries));
    md
}

fn finish(
    spec: &Spec,
    cells: &BTreeMap<usize, WorstCell>,
    dir: &Path,
    plots: &Path,
) -> Result<(WorstSummary, Vec<PathBuf>)> {
    if cells.len() != spec.cells() {
        anyhow::bail!(
            "{}: {} of {} cells finished; rerun with --resume",
            dir.display(),
            cells.len(),
            spec.cells()
        );
    }
    let s = report::summarize(spec, cells);
    std::fs::write(
        dir.join("summary.json"),
        serde_json::to_string_pretty(&s)? + "\n",
    )?;
    let stems = figure::save_all(&s, cells, spec.raw.constants.dist0, plots)?;
    Ok((s, stems))
}
