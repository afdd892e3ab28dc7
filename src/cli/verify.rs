//! `dpsgd-lab verify [--full]`: every experiment spec in simulations/, one table.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use clap::Args;

use dpsgd_lab::experiment::{self, report};

use super::batch::BatchArgs;

/// Run every experiment spec and print the verification table.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Folder of the specs (every *.toml with a [sweep] table).
    #[arg(long, default_value = "simulations")]
    pub specs: PathBuf,
    /// Print every column of the table (as in report.md) instead of the compact one, and every
    /// line whole (the default output wraps at 120 columns).
    #[arg(long)]
    pub wide: bool,
    #[command(flatten)]
    pub batch: BatchArgs,
}

/// The experiment specs in `dir`: *.toml files that have a `[sweep]` table, sorted by name.
/// Clip-norm sweeps (`[clip_sweep]`) have their own command (`cliplaw`).
pub fn spec_files(dir: &Path) -> Result<Vec<PathBuf>> {
    super::batch::spec_files(dir, "sweep", Some("clip_sweep"))
}

pub fn run(args: &VerifyArgs) -> Result<()> {
    let b = &args.batch;
    let (out, plots) = b.folders("verify");
    let start = Instant::now();
    let mut summaries = Vec::new();
    let mut rows = Vec::new();
    b.run_each(
        &spec_files(&args.specs)?,
        &args.specs,
        &out,
        |spec, cells, dir| {
            let s = experiment::finalize(spec, cells, dir, Some(&plots))?;
            rows.extend(report::table_rows(&s));
            summaries.push(s);
            Ok(())
        },
    )?;
    let wall = start.elapsed().as_secs_f64();
    let mut md = format!("# dpsgd-lab verify ({} scale)\n\n", b.scale_word());
    if b.full && b.only.is_none() {
        md.push_str(&format!(
            "Cost of `verify --full` (release build): {}.\n\n",
            report::FULL_SCALE_COST
        ));
    }
    if let Some(o) = &b.only {
        md.push_str(&format!(
            "Only the specs whose name contains `{o}` (`verify --only {o}`).\n\n"
        ));
    }
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
    md.push_str(&report::one_line_summary(&summaries));
    md.push('\n');
    std::fs::create_dir_all(&out)?;
    let report_file = out.join(report_name(b.only.as_deref()));
    std::fs::write(&report_file, &md)?;
    if b.json {
        println!("{}", super::json::to_string(&summaries)?);
    } else {
        let table = if args.wide {
            report::text_table(&rows)
        } else {
            report::compact_table(&summaries)
        };
        let summary = report::one_line_summary(&summaries) + "\n";
        // The compact output keeps to the terminal's 120 columns (--wide prints lines whole);
        // the `wrote` line is as long as the folder the user named.
        let fit = |t: &str| {
            if args.wide {
                t.to_string()
            } else {
                dpsgd_lab::format::wrap(t, dpsgd_lab::format::TERMINAL_COLUMNS)
            }
        };
        print!("{}", fit(&table));
        println!(
            "wrote {} and {} plots into {} in {wall:.1} s{}",
            report_file.display(),
            summaries.len(),
            plots.display(),
            if b.only.is_some() {
                " (report.md, the combined report of a full run, is left as it was)"
            } else {
                ""
            }
        );
        print!("{}", fit(&summary));
    }
    violation_exit(&summaries)
}

/// The combined report's file name: report.md, or report-only-NAME.md for `--only NAME`, so
/// that a partial run never overwrites the combined report of a full one.
fn report_name(only: Option<&str>) -> String {
    match only {
        Some(o) => format!(
            "report-only-{}.md",
            o.replace(
                |c: char| !c.is_ascii_alphanumeric() && c != '_' && c != '-',
                "_"
            )
        ),
        None => "report.md".into(),
    }
}

/// A failed check (exit code 1) when any series is a VIOLATION, so that scripts and CI can rely on
/// `verify`'s exit status; the table and report are written first.
fn violation_exit(summaries: &[experiment::SpecSummary]) -> Result<()> {
    let bad = experiment::verdict::violations(summaries);
    if !bad.is_empty() {
        return super::check_failed(format!(
            "{} series are VIOLATIONs (OR above the explicit bound): {}",
            bad.len(),
            bad.join(", ")
        ));
    }
    Ok(())
}
