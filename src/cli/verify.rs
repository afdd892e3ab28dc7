//! `dpsgd-lab verify [--full]`: every experiment spec in simulations/, one table.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;

use dpsgd_lab::experiment::{self, RunOptions, Scale, Spec, report};

/// Run every experiment spec and print the verification table.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Publication scale.
    #[arg(long)]
    pub full: bool,
    /// Folder of the specs (every *.toml with a [sweep] table).
    #[arg(long, default_value = "simulations")]
    pub specs: PathBuf,
    /// Output folder (default results/verify-quick or results/verify-full).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Plots folder (default plots/ for --full, else OUT/plots).
    #[arg(long)]
    pub plots: Option<PathBuf>,
    /// Only specs whose name contains this.
    #[arg(long)]
    pub only: Option<String>,
    /// Continue an interrupted verify.
    #[arg(long)]
    pub resume: bool,
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

/// The experiment specs in `dir`: *.toml files that have a `[sweep]` table, sorted by name.
pub fn spec_files(dir: &PathBuf) -> Result<Vec<PathBuf>> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("{}", dir.display()))? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "toml") {
            let text = std::fs::read_to_string(&p)?;
            // Clip-norm sweeps have their own command (`cliplaw`).
            if text.lines().any(|l| l.trim() == "[sweep]")
                && !text.lines().any(|l| l.trim() == "[clip_sweep]")
            {
                v.push(p);
            }
        }
    }
    v.sort();
    Ok(v)
}

pub fn run(args: &VerifyArgs) -> Result<()> {
    let scale = if args.full { Scale::Full } else { Scale::Quick };
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("results").join(if args.full {
            "verify-full"
        } else {
            "verify-quick"
        })
    });
    let plots = args.plots.clone().unwrap_or_else(|| {
        if args.full {
            PathBuf::from("plots")
        } else {
            out.join("plots")
        }
    });
    let start = Instant::now();
    let mut summaries = Vec::new();
    let mut rows = Vec::new();
    for f in spec_files(&args.specs)? {
        let spec = Spec::load(&f, scale)?;
        if let Some(o) = &args.only
            && !spec.raw.name.contains(o.as_str())
        {
            continue;
        }
        let dir = out.join(&spec.raw.name);
        let t0 = Instant::now();
        let cells = experiment::run(
            &spec,
            &RunOptions {
                out: dir.clone(),
                resume: args.resume,
                fresh: !args.resume,
                shard: None,
                progress: !args.quiet,
                stop_after: None,
                force: args.force,
            },
        )
        .with_context(|| format!("spec {}", f.display()))?;
        let s = experiment::finalize(&spec, &cells, &dir, Some(&plots))?;
        if !args.quiet {
            eprintln!("{}: {:.1} s", spec.raw.name, t0.elapsed().as_secs_f64());
        }
        rows.extend(report::table_rows(&s));
        summaries.push(s);
    }
    let wall = start.elapsed().as_secs_f64();
    let mut md = format!(
        "# dpsgd-lab verify ({} scale)\n\n",
        if args.full { "full" } else { "quick" }
    );
    md.push_str(&report::legend());
    md.push('\n');
    md.push_str(&report::theorem_summary(&summaries));
    md.push('\n');
    md.push_str(&report::markdown_table(&rows));
    md.push_str("\nPer-spec reports (constants, cells): ");
    md.push_str(
        &summaries
            .iter()
            .map(|s| format!("[{}]({}/report.md)", s.spec, s.spec))
            .collect::<Vec<_>>()
            .join(", "),
    );
    md.push_str("\n\n");
    for s in &summaries {
        md.push_str(&format!(
            "![{}]({})\n\n",
            s.title,
            experiment::relative(&out, &plots.join(format!("{}.png", s.spec)))
        ));
    }
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("report.md"), &md)?;
    if args.json {
        println!("{}", super::json::to_string(&summaries)?);
    } else {
        print!("{}", report::text_table(&rows));
        println!(
            "wrote {}/report.md and {} plots into {} in {wall:.1} s",
            out.display(),
            summaries.len(),
            plots.display()
        );
    }
    violation_exit(&summaries)
}

/// An error (exit code 2) when any series is a VIOLATION, so that scripts and CI can rely on
/// `verify`'s exit status; the table and report are written first.
fn violation_exit(summaries: &[experiment::SpecSummary]) -> Result<()> {
    let bad = experiment::verdict::violations(summaries);
    if !bad.is_empty() {
        anyhow::bail!(
            "{} series are VIOLATIONs (OR above the explicit bound): {}",
            bad.len(),
            bad.join(", ")
        );
    }
    Ok(())
}
