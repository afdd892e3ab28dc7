//! `dpsgd-lab data describe` and `dpsgd-lab data generate`: the spread of the per-sample
//! Lipschitz constants G_i of a data set, and synthetic data written to CSV.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use serde::Serialize;

use dpsgd_lab::config::exact_lipschitz_k_norm;
use dpsgd_lab::data::Dataset;
use dpsgd_lab::data::csv::CsvSpec;
use dpsgd_lab::data::generator::GeneratorSpec;
use dpsgd_lab::data::radial::RadialLaw;
use dpsgd_lab::data::split::SplitSpec;
use dpsgd_lab::data::summary::LipschitzSummary;
use dpsgd_lab::loss::{LossSpec, lipschitz_constants};
use dpsgd_lab::rng::{Purpose, stream};

/// Describe or generate data sets.
#[derive(Debug, Args)]
pub struct DataArgs {
    #[command(subcommand)]
    pub command: DataCommand,
}

#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// Summarize the per-sample Lipschitz constants G_i of a data set for a loss: percentiles
    /// 0/10/20/40/80/100 (Section 5's clip norms), G_Z^k and a Hill tail-index estimate.
    Describe(DescribeArgs),
    /// Draw a synthetic data set and write it as CSV (label column `target`).
    Generate(GenerateArgs),
}

#[derive(Debug, Args)]
pub struct DescribeArgs {
    /// Generator spec (TOML): n, d, [radial], [direction], labels; or an experiment config
    /// whose [data] table is a generator.
    #[arg(long, conflicts_with = "csv", required_unless_present = "csv")]
    pub generator: Option<PathBuf>,
    /// CSV file with a header row.
    #[arg(long, requires = "label")]
    pub csv: Option<PathBuf>,
    /// Name of the CSV's label column.
    #[arg(long)]
    pub label: Option<String>,
    /// Loss family (logistic, binary_logistic, huber, sharp, appendix_l, robust), or an inline
    /// TOML table such as '{ family = "huber", c = 0.5 }'.
    #[arg(long, default_value = "logistic")]
    pub loss: String,
    /// Moment order k of G_Z^k = mean G_i^k (Assumption 6.1). Default: the generator's k when
    /// it is finite, else 2.
    #[arg(long)]
    pub k: Option<f64>,
    /// Seed of the generator's data stream (default: the file's `seed`, else 0).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Describe only the training part of a seeded CSV split with this test fraction.
    #[arg(long, requires = "csv")]
    pub test_fraction: Option<f64>,
    /// Seed of the CSV train/test split.
    #[arg(long, default_value_t = 0)]
    pub split_seed: u64,
    /// Standardize CSV features (training statistics) before computing G_i.
    #[arg(long, requires = "csv")]
    pub standardize: bool,
    /// Print the summary as one JSON object on the last line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Generator spec (TOML), as for `data describe`.
    #[arg(long)]
    pub generator: PathBuf,
    /// Seed of the data stream (the same data as `train` with this seed, replicate 0).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Output CSV file.
    #[arg(long)]
    pub out: PathBuf,
    /// Print a one-line JSON report as the last line.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &DataArgs) -> Result<()> {
    match &args.command {
        DataCommand::Describe(a) => describe(a),
        DataCommand::Generate(a) => generate(a),
    }
}

/// Reads a generator spec, accepting either the bare spec or an experiment config with a
/// `[data]` table of `source = "generated"`; returns the spec and the file's seed, if any.
fn read_generator(path: &Path) -> Result<(GeneratorSpec, Option<u64>)> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    let mut value: toml::Table =
        toml::from_str(&text).with_context(|| format!("{}: invalid TOML", path.display()))?;
    let seed = match value.get("seed") {
        Some(toml::Value::Integer(s)) if *s >= 0 => Some(*s as u64),
        Some(v) => bail!(
            "{}: seed must be a non-negative integer, but is {v}",
            path.display()
        ),
        None => None,
    };
    let table = match value.remove("data") {
        Some(toml::Value::Table(mut t)) => {
            match t.remove("source") {
                Some(toml::Value::String(s)) if s == "generated" => {}
                other => bail!(
                    "{}: [data] must have source = \"generated\" to be used as a generator, but \
                     has source = {}",
                    path.display(),
                    other.map_or("(none)".to_string(), |v| v.to_string())
                ),
            }
            t
        }
        Some(_) => bail!("{}: data must be a table", path.display()),
        None => {
            value.remove("seed");
            value
        }
    };
    let spec: GeneratorSpec = toml::Value::Table(table)
        .try_into()
        .with_context(|| format!("{}: not a generator spec", path.display()))?;
    Ok((spec, seed))
}

/// A loss given by family name or as an inline TOML table ([`LossSpec`]'s `FromStr`, shared
/// with the Python module).
fn parse_loss(s: &str) -> Result<LossSpec> {
    s.parse::<LossSpec>()
        .map_err(|e| anyhow::anyhow!("--loss {e}"))
}

#[derive(Debug, Serialize)]
struct LawReport {
    law: String,
    k: f64,
    g: f64,
    scale: f64,
    tail_index: Option<f64>,
    /// Exact (E G(x, y)^k)^(1/k) for the loss, where it has a closed form.
    exact_lipschitz_k_norm: Option<f64>,
}

#[derive(Debug, Serialize)]
struct DescribeReport {
    source: String,
    summary: LipschitzSummary,
    law: Option<LawReport>,
    test_n: Option<usize>,
}

fn describe(a: &DescribeArgs) -> Result<()> {
    let loss_spec = parse_loss(&a.loss)?;
    let mut k = a.k.unwrap_or(2.0);
    let (data, source, law, test_n): (Dataset, String, Option<LawReport>, Option<usize>) =
        if let Some(path) = &a.generator {
            let (spec, file_seed) = read_generator(path)?;
            let seed = a.seed.or(file_seed).unwrap_or(0);
            let radial = spec.check()?;
            if a.k.is_none() && radial.k().is_finite() {
                k = radial.k();
            }
            let data = spec.generate(&mut stream(seed, 0, Purpose::Data))?;
            let tail = radial.tail_index();
            let law = LawReport {
                law: radial.describe(),
                k: radial.k(),
                g: radial.g(),
                scale: radial.scale(),
                tail_index: tail.is_finite().then_some(tail),
                exact_lipschitz_k_norm: exact_lipschitz_k_norm(&spec, &loss_spec)?,
            };
            (
                data,
                format!("generator {} (seed {seed})", path.display()),
                Some(law),
                None,
            )
        } else {
            let path = a.csv.as_ref().expect("clap requires --generator or --csv");
            let label = a.label.clone().expect("clap requires --label with --csv");
            let spec = CsvSpec {
                path: path.display().to_string(),
                label: label.clone(),
                split: a.test_fraction.map(|f| SplitSpec {
                    test_fraction: f,
                    seed: a.split_seed,
                    method: Default::default(),
                }),
                standardize: a.standardize,
            };
            let (train, test) = spec.load_split()?;
            let mut src = format!("{} (label '{label}')", path.display());
            if let Some(t) = &test {
                src.push_str(&format!(
                    ", training part of a split with {} test samples (seed {})",
                    t.n, a.split_seed
                ));
            }
            if a.standardize {
                src.push_str(", standardized");
            }
            (train, src, None, test.map(|t| t.n))
        };
    let loss = loss_spec.build(&data)?;
    let g = lipschitz_constants(loss.as_ref(), &data)?;
    let summary = LipschitzSummary::from_values(loss.name(), &data, &g, k)?;
    let report = DescribeReport {
        source,
        summary,
        law,
        test_n,
    };
    if a.json {
        println!("{}", super::json::to_string(&report)?);
    } else {
        print_describe(&report);
    }
    Ok(())
}

fn print_describe(r: &DescribeReport) {
    let s = &r.summary;
    println!("data: {}", r.source);
    let classes = match (&s.classes, &s.class_counts) {
        (Some(m), Some(c)) => format!(
            ", classes = {m} (counts {})",
            c.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        ),
        _ => String::new(),
    };
    println!("  n = {}, d = {}{classes}", s.n, s.d);
    if let Some(l) = &r.law {
        println!("  law of r: {}", l.law);
        if let Some(t) = l.tail_index {
            println!("  tail index of r: {t}");
        }
        let what = if l.k.is_finite() {
            format!("(E G(x,y)^{k})^(1/{k})", k = l.k)
        } else {
            "ess sup G(x,y)".to_string()
        };
        match l.exact_lipschitz_k_norm {
            Some(g) => println!("  exact {what} for the {} loss: {g:.6}", s.loss),
            None => println!("  exact {what} for the {} loss: no closed form", s.loss),
        }
    }
    println!("per-sample Lipschitz constants G_i ({} loss):", s.loss);
    println!("  min  = {:.6}", s.min);
    for p in &s.percentiles {
        println!("  {:>3}th percentile = {:.6}", p.pct, p.value);
    }
    println!("  max  = {:.6}", s.max);
    println!("  mean = {:.6}", s.mean);
    println!(
        "  G_Z^k = mean G_i^k = {:.6e} (k = {}), G_Z = {:.6}",
        s.mean_g_pow_k, s.k, s.g_z
    );
    match &s.hill {
        Some(h) => println!(
            "  Hill tail index = {:.3} (top {} of {} order statistics)",
            h.alpha, h.top, s.n
        ),
        None => println!("  Hill tail index: not estimable"),
    }
}

#[derive(Debug, Serialize)]
struct GenerateReport {
    out: String,
    n: usize,
    d: usize,
    seed: u64,
}

fn generate(a: &GenerateArgs) -> Result<()> {
    let (spec, file_seed) = read_generator(&a.generator)?;
    let seed = a.seed.or(file_seed).unwrap_or(0);
    let data = spec.generate(&mut stream(seed, 0, Purpose::Data))?;
    let out = a.out.display().to_string();
    data.write_csv(&out)?;
    let report = GenerateReport {
        out,
        n: data.n,
        d: data.d,
        seed,
    };
    if a.json {
        println!("{}", super::json::to_string(&report)?);
    } else {
        println!(
            "wrote {} samples x {} features (+ label column 'target') to {} (seed {})",
            report.n, report.d, report.out, report.seed
        );
    }
    Ok(())
}
