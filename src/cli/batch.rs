//! What `verify` and `cliplaw` share: the options of a batch over a folder of specs, where its
//! results and figures go, and the loop that runs (or resumes) every selected spec.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;

use dpsgd_lab::experiment::{self, CellResult, RunOptions, Scale, Spec};

/// Options of a batch command over a folder of specs.
#[derive(Debug, Args)]
pub struct BatchArgs {
    /// Publication scale.
    #[arg(long)]
    pub full: bool,
    /// Output folder (default results/<this command>-quick, or -full with --full).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Plots folder (default plots/ for --full, else OUT/plots).
    #[arg(long)]
    pub plots: Option<PathBuf>,
    /// Only specs whose name contains this.
    #[arg(long)]
    pub only: Option<String>,
    /// Keep finished cells only if their fingerprint matches (a changed spec is an error, not a
    /// restart). Without it a rerun reuses matching cells anyway and starts over where the spec
    /// changed.
    #[arg(long, conflicts_with = "fresh")]
    pub resume: bool,
    /// Discard every finished cell and start over (also decides the cases a rerun refuses: a
    /// folder of another spec, a corrupted line).
    #[arg(long)]
    pub fresh: bool,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
    /// Print the summaries as one JSON array on the last line.
    #[arg(long)]
    pub json: bool,
    /// Run even when the estimated work exceeds the limit.
    #[arg(long)]
    pub force: bool,
}

impl BatchArgs {
    /// The scale the specs run at.
    pub fn scale(&self) -> Scale {
        if self.full { Scale::Full } else { Scale::Quick }
    }

    /// "full" or "quick", for headings.
    pub fn scale_word(&self) -> &'static str {
        if self.full { "full" } else { "quick" }
    }

    /// The output and plots folders of `command`: results/<command>-<scale> and plots/ for
    /// --full (the committed figures), else OUT/plots.
    pub fn folders(&self, command: &str) -> (PathBuf, PathBuf) {
        let out = self.out.clone().unwrap_or_else(|| {
            PathBuf::from("results").join(format!("{command}-{}", self.scale_word()))
        });
        let plots = self.plots.clone().unwrap_or_else(|| {
            if self.full {
                PathBuf::from("plots")
            } else {
                out.join("plots")
            }
        });
        (out, plots)
    }

    /// The specs of `files` (from the folder `dir`) whose name contains `--only`, every one
    /// without it, loaded at this scale. A filter that matches none is refused before anything
    /// runs, naming the specs there are.
    pub fn select(&self, files: &[PathBuf], dir: &Path) -> Result<Vec<(PathBuf, Spec)>> {
        let mut all = Vec::new();
        for f in files {
            let spec =
                Spec::load(f, self.scale()).with_context(|| format!("spec {}", f.display()))?;
            all.push((f.clone(), spec));
        }
        let Some(o) = &self.only else {
            return Ok(all);
        };
        let names: Vec<String> = all.iter().map(|(_, s)| s.raw.name.clone()).collect();
        all.retain(|(_, s)| s.raw.name.contains(o.as_str()));
        if all.is_empty() {
            anyhow::bail!(
                "--only {o} matches none of the {} specs in {}: {}",
                names.len(),
                dir.display(),
                names.join(", ")
            );
        }
        Ok(all)
    }

    /// Runs (or resumes) every spec in `files` (from the folder `dir`) selected by `--only`
    /// ([`BatchArgs::select`]), each into OUT/<name>, and hands its finished cells to `done`
    /// with its output folder.
    pub fn run_each(
        &self,
        files: &[PathBuf],
        dir: &Path,
        out: &Path,
        mut done: impl FnMut(&Spec, &BTreeMap<usize, CellResult>, &Path) -> Result<()>,
    ) -> Result<()> {
        for (f, spec) in self.select(files, dir)? {
            let dir = out.join(&spec.raw.name);
            let t0 = std::time::Instant::now();
            let cells = experiment::run(
                &spec,
                &RunOptions {
                    out: dir.clone(),
                    resume: self.resume,
                    fresh: self.fresh,
                    shard: None,
                    progress: !self.quiet,
                    stop_after: None,
                    force: self.force,
                },
            )
            .with_context(|| format!("spec {}", f.display()))?;
            done(&spec, &cells, &dir)?;
            if !self.quiet {
                eprintln!("{}: {:.1} s", spec.raw.name, t0.elapsed().as_secs_f64());
            }
        }
        Ok(())
    }
}

/// The *.toml files in `dir` with a `[table]` line (e.g. "sweep") and, if `not` is given,
/// without a `[not]` line, sorted by name.
pub fn spec_files(dir: &Path, table: &str, not: Option<&str>) -> Result<Vec<PathBuf>> {
    let has = |text: &str, t: &str| {
        let line = format!("[{t}]");
        text.lines().any(|l| l.trim() == line)
    };
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("{}", dir.display()))? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "toml") {
            let text = std::fs::read_to_string(&p)?;
            if has(&text, table) && !not.is_some_and(|t| has(&text, t)) {
                v.push(p);
            }
        }
    }
    v.sort();
    Ok(v)
}
