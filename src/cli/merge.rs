//! `dpsgd-lab merge SPEC.toml [--full] [--out DIR]`: combine shard-I-of-N.jsonl files.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use dpsgd_lab::error::Error;
use dpsgd_lab::experiment::{self, Scale, Spec, report};

/// Merge the shards of a run into exactly what an unsharded run writes.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The experiment spec the shards ran.
    pub spec: PathBuf,
    /// The shards ran the [full] scale.
    #[arg(long)]
    pub full: bool,
    /// The folder holding shard-I-of-N.jsonl (default as in `run`).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(args: &MergeArgs) -> Result<()> {
    let scale = if args.full { Scale::Full } else { Scale::Quick };
    let spec = Spec::load(&args.spec, scale)?;
    let out = super::run::out_dir(&spec, args.out.as_deref());
    // The shards, not the spec, are what is wrong here: no `config:` label.
    let cells = experiment::merge(&spec, &out).map_err(|e| match e {
        Error::Config(m) => anyhow::anyhow!("merge: {m}"),
        e => e.into(),
    })?;
    if spec.raw.clip_sweep.is_some() {
        let s = experiment::cliplaw::finalize(&spec, &cells, &out, None)?;
        print!("{}", super::cliplaw::text(std::slice::from_ref(&s)));
        println!(
            "merged {} cells into {}/results.jsonl",
            cells.len(),
            out.display()
        );
        return super::cliplaw::beats_exit(std::slice::from_ref(&s));
    }
    let summary = experiment::finalize(&spec, &cells, &out, None)?;
    print!("{}", report::text_table(&report::table_rows(&summary)));
    println!(
        "merged {} cells into {}/results.jsonl",
        cells.len(),
        out.display()
    );
    Ok(())
}
