//! `dpsgd-lab run SPEC.toml [--full] [--resume] [--shard I/N] [--out DIR]`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;

use dpsgd_lab::experiment::{self, RunOptions, Scale, Spec, report};

/// Run one experiment spec.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The experiment spec (TOML).
    pub spec: PathBuf,
    /// Publication scale (the spec's [full] table) instead of [quick].
    #[arg(long)]
    pub full: bool,
    /// Keep finished cells only if their fingerprint matches (a changed spec is an error, not a
    /// restart). Without it a rerun reuses matching cells anyway and starts over where the spec
    /// changed.
    #[arg(long, conflicts_with = "fresh")]
    pub resume: bool,
    /// Discard every finished cell and start over (also decides the cases a rerun refuses: a
    /// folder of another spec, a corrupted line).
    #[arg(long)]
    pub fresh: bool,
    /// Run one slice of the cells (I of N, 1-based); combine with `dpsgd-lab merge`.
    #[arg(long, value_parser = parse_shard)]
    pub shard: Option<(usize, usize)>,
    /// Output folder (default: the spec's `out`, else results/<name>[-full]).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Print the summary as one JSON object on the last line.
    #[arg(long)]
    pub json: bool,
    /// Run even when the estimated work exceeds the limit.
    #[arg(long)]
    pub force: bool,
}

/// Parses "I/N".
pub fn parse_shard(s: &str) -> std::result::Result<(usize, usize), String> {
    let (i, n) = s
        .split_once('/')
        .ok_or_else(|| format!("--shard must look like I/N (e.g. 2/8), but is {s:?}"))?;
    let i: usize = i
        .trim()
        .parse()
        .map_err(|_| format!("--shard: bad I in {s:?}"))?;
    let n: usize = n
        .trim()
        .parse()
        .map_err(|_| format!("--shard: bad N in {s:?}"))?;
    if n == 0 || i == 0 || i > n {
        return Err(format!("--shard I/N needs 1 <= I <= N, but is {i}/{n}"));
    }
    Ok((i, n))
}

/// The output folder of a spec.
pub fn out_dir(spec: &Spec, out: Option<&Path>) -> PathBuf {
    match out {
        Some(o) => o.to_path_buf(),
        None => match (&spec.raw.out, spec.scale) {
            (Some(o), Scale::Quick) => PathBuf::from(o),
            (Some(o), Scale::Full) => PathBuf::from(format!("{o}-full")),
            (None, Scale::Quick) => PathBuf::from("results").join(&spec.raw.name),
            (None, Scale::Full) => PathBuf::from("results").join(format!("{}-full", spec.raw.name)),
        },
    }
}

pub fn run(args: &RunArgs) -> Result<()> {
    let scale = if args.full { Scale::Full } else { Scale::Quick };
    let spec = Spec::load(&args.spec, scale)?;
    let out = out_dir(&spec, args.out.as_deref());
    let start = Instant::now();
    let cells = experiment::run(
        &spec,
        &RunOptions {
            out: out.clone(),
            resume: args.resume,
            fresh: args.fresh,
            shard: args.shard,
            progress: !args.quiet,
            stop_after: None,
            force: args.force,
        },
    )
    .with_context(|| format!("spec {}", args.spec.display()))?;
    let wall = start.elapsed().as_secs_f64();
    if let Some((i, n)) = args.shard {
        println!(
            "shard {i}/{n} of {}: {} cells in {} ({wall:.1} s); when every shard is done: dpsgd-lab merge {} --out {}{}",
            spec.raw.name,
            cells.len(),
            out.display(),
            args.spec.display(),
            out.display(),
            if args.full { " --full" } else { "" }
        );
        return Ok(());
    }
    if cells.len() != spec.cells() {
        bail!("only {} of {} cells finished", cells.len(), spec.cells());
    }
    if spec.raw.clip_sweep.is_some() {
        let s = experiment::cliplaw::finalize(&spec, &cells, &out, None)?;
        if args.json {
            println!("{}", super::json::to_string(&s)?);
        } else {
            print!("{}", super::cliplaw::text(std::slice::from_ref(&s)));
            println!(
                "wrote {}/{{results.jsonl, summary.json, report.md}} and 3 figures in {wall:.1} s",
                out.display()
            );
        }
        return super::cliplaw::beats_exit(std::slice::from_ref(&s));
    }
    let summary = experiment::finalize(&spec, &cells, &out, None)?;
    let rows = report::table_rows(&summary);
    if args.json {
        println!("{}", super::json::to_string(&summary)?);
    } else {
        print!("{}", report::text_table(&rows));
        println!(
            "wrote {}/{{results.jsonl, summary.json, report.md, {}.png, {}.svg}} in {wall:.1} s",
            out.display(),
            spec.raw.name,
            spec.raw.name
        );
    }
    Ok(())
}
