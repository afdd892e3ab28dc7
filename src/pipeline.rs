//! The measured comparison behind `paper_refs/pipeline.md` (`dpsgd-lab clipnorm pipeline`): the
//! README's private recipe (`clipnorm recommend` then `train`) end to end, against the paper's
//! protocol (non-private standardization, eta tuned on the test part: an upper reference, not a
//! fair competitor), a practitioner's baseline (public-range scaling, tau = 1, a fixed eta, the
//! whole budget on DP-SGD, the last iterate, as an Opacus user would run it) and a non-private
//! run, on the shipped data sets and one synthetic set, per epsilon and seed.
//!
//! Every row of one (data set, epsilon, seed) uses the same hash split (seed = the recipe's
//! split seed), so the rows are paired. The recipe's row runs the library's `recommend` and the
//! config it writes, exactly as the CLI does (the test `pipeline_row_equals_the_cli_recipe`
//! checks one cell against the binary).

use std::time::Instant;

use serde::Serialize;

use crate::clipnorm::default_batch;
use crate::clipnorm::recommend::{
    AdviceData, AdviceRequest, DEFAULT_GRID_SIZE, NormsSource, PublicValues, logistic_lipschitz,
    recommend,
};
use crate::clipnorm::train_config::train_config;
use crate::config::{DataSpec, TrainConfig, from_toml_str};
use crate::data::Dataset;
use crate::data::preprocess::{Preprocess, read_ranges};
use crate::data::split::Standardizer;
use crate::dpsgd::{DpSgdConfig, NoiseSpec, OutputRule, StepSchedule};
use crate::error::Result;
use crate::loss::LossSpec;
use crate::privacy::AccountantKind;
use crate::rng::{Purpose, stream};
use crate::train::{ReportOptions, accuracy, train};

/// The step sizes the tuned rows pick from (on the test part: not private).
pub const ETA_GRID: [f64; 6] = [0.03, 0.1, 0.3, 1.0, 3.0, 10.0];
/// The practitioner's fixed step size.
pub const BASELINE_ETA: f64 = 0.1;
/// The budgets of the table.
pub const EPSILONS: [f64; 4] = [1.0, 2.0, 4.0, 8.0];

/// One data set of the table.
#[derive(Debug, Clone)]
pub struct PipelineData {
    /// Its name in the table.
    pub name: String,
    /// Every row.
    pub all: Dataset,
    /// Its public ranges, read once from `data/NAME.ranges.csv` (the recipe passes that file as
    /// --feature-ranges; the same values as rows give the same result bit for bit).
    pub ranges: Option<Vec<(f64, f64)>>,
}

/// One (data set, epsilon, method) cell over the seeds.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Data set.
    pub data: String,
    /// Total epsilon (0 for the non-private row).
    pub epsilon: f64,
    /// Row name.
    pub method: String,
    /// Test accuracy per seed (refused seeds left out).
    pub acc: Vec<f64>,
    /// The largest epsilon the recipe spent over the seeds (recommend's stages + DP-SGD's
    /// accounted epsilon), None for rows that are not private end to end.
    pub max_spent: Option<f64>,
    /// Seeds refused, with the reason.
    pub refusals: Vec<String>,
    /// The tuned eta (tuned rows only).
    pub eta: Option<f64>,
}

/// The shipped data sets with their public ranges, and the synthetic set (no public ranges: the
/// recipe standardizes privately).
pub fn datasets(root: &str) -> Result<Vec<PipelineData>> {
    let mut out = Vec::new();
    for name in ["breast_cancer", "digits", "wine"] {
        let all =
            crate::data::csv::CsvSpec::new(format!("{root}/data/{name}.csv"), "target").read()?;
        out.push(PipelineData {
            name: name.into(),
            all,
            ranges: Some(read_ranges(std::path::Path::new(&format!(
                "{root}/data/{name}.ranges.csv"
            )))?),
        });
    }
    let spec: DataSpec = from_toml_str(
        "source = \"generated\"\nn = 2000\nd = 10\nlabels = { kind = \"multinomial\", classes = 3, \
         separable = false, temperature = 0.5 }",
        "synthetic data",
    )?;
    out.push(PipelineData {
        name: "synthetic (n 2000, d 10, 3 classes)".into(),
        all: spec.build(&mut stream(1, 0, Purpose::Data))?,
        ranges: None,
    });
    Ok(out)
}

/// (train, test) of one seed: the recipe's hash split.
fn split(d: &PipelineData, seed: u64) -> Result<(Dataset, Dataset)> {
    d.all.hash_split(0.2, seed)
}

/// The recipe end to end for one seed: recommend (as the README prints it) and the config it
/// writes; returns (test accuracy, epsilon spent in all). `raw`: with --no-standardize.
fn recipe(d: &PipelineData, eps: f64, seed: u64, raw: bool) -> Result<(f64, f64)> {
    let req = AdviceRequest {
        data: AdviceData::Memory {
            data: d.all.clone(),
            name: d.name.clone(),
        },
        loss: "logistic".into(),
        standardize: !raw,
        std_share: None,
        feature_bounds: None,
        public_scales: None,
        epsilon: eps,
        delta: 1e-5,
        share: None,
        steps: None,
        batch_size: None,
        norms: NormsSource::Lipschitz,
        lo: None,
        hi: None,
        grid_size: DEFAULT_GRID_SIZE,
        accountant: crate::privacy::AccountantKind::Rdp,
        // a measurement of the recipe over seeds, not a release: seeded, as every simulation
        seed,
        reproducible: true,
        check_epsilon: None,
        test_fraction: Some(0.2),
        split_seed: seed,
        epochs: Some(30.0),
        feature_ranges: d
            .ranges
            .as_ref()
            .map(|r| PublicValues::Rows(r.iter().map(|&(a, b)| vec![a, b]).collect())),
        ledger: None,
        learning_rate: None,
    };
    let advice = recommend(&req)?;
    let cfg: TrainConfig = from_toml_str(&train_config(&advice)?, "the written config")?;
    let (mut tr, mut te) = split(d, seed)?;
    if let Some(p) = &cfg.preprocess {
        p.apply(&mut tr)?;
        p.apply(&mut te)?;
    }
    let run = run_on(&cfg.loss, &cfg.dpsgd, cfg.seed, &tr)?;
    let spent = advice.total_epsilon - advice.dpsgd_epsilon
        + run
            .privacy
            .as_ref()
            .map_or(f64::INFINITY, |p| p.epsilon_spent);
    Ok((accuracy(&cfg.loss, &run.output.w_priv, &te)?, spent))
}

fn run_on(
    loss: &LossSpec,
    cfg: &DpSgdConfig,
    seed: u64,
    data: &Dataset,
) -> Result<crate::train::TrainRun> {
    let opts = ReportOptions {
        accountant: None,
        delta: 1e-5,
        force: true,
    };
    train(seed, 0, loss, cfg, data, &opts, Instant::now())
}

/// A DP-SGD config of the comparison rows: B = min(500, n / 10), 30 epochs, constant eta and
/// tau, the given noise and output rule.
fn config(n: usize, eta: f64, tau: f64, noise: NoiseSpec, output: OutputRule) -> DpSgdConfig {
    let batch = default_batch(n);
    let steps = (30.0 * n as f64 / batch).ceil() as usize;
    let mut c = DpSgdConfig::new(
        steps,
        batch,
        StepSchedule::Constant(eta),
        StepSchedule::Constant(tau),
        noise,
    );
    c.output = output;
    c
}

/// Test accuracy of one run of `cfg` on the seed's split, features transformed by `pre`.
fn acc_of(d: &PipelineData, seed: u64, pre: Fit<'_>, cfg: &DpSgdConfig) -> Result<f64> {
    let (mut tr, mut te) = split(d, seed)?;
    let f = pre(&tr)?;
    f(&mut tr)?;
    f(&mut te)?;
    let loss = LossSpec::Logistic { classes: None };
    let run = run_on(&loss, cfg, seed, &tr)?;
    accuracy(&loss, &run.output.w_priv, &te)
}

/// The public-range transform of `d` (raw features without ranges).
fn ranges_pre(d: &PipelineData) -> Result<Option<Preprocess>> {
    d.ranges
        .as_ref()
        .map(|r| Preprocess::from_ranges(r, "ranges"))
        .transpose()
}

/// A feature transform, applied to a part in place.
type Transform = Box<dyn Fn(&mut Dataset) -> Result<()>>;
/// A feature transform fitted on a training part, applied to both parts.
type Fit<'a> = &'a dyn Fn(&Dataset) -> Result<Transform>;

/// The training part's own standardization (not private: the paper's protocol).
fn fitted(tr: &Dataset) -> Result<Transform> {
    let st = Standardizer::fit(tr);
    Ok(Box::new(move |x: &mut Dataset| st.apply(x)))
}

fn target(e: f64) -> NoiseSpec {
    NoiseSpec::Target {
        epsilon: e,
        delta: 1e-5,
        accountant: AccountantKind::Rdp,
    }
}

/// The recipe's rows at `eps`: the default, and without public ranges also --no-standardize.
fn recipe_cells(d: &PipelineData, eps: f64, seeds: u64) -> Vec<Cell> {
    let variants: &[(bool, &str)] = if d.ranges.is_some() {
        &[(false, "recipe (every choice private)")]
    } else {
        &[
            (false, "recipe (every choice private)"),
            (true, "recipe with --no-standardize (every choice private)"),
        ]
    };
    let mut out = Vec::new();
    for &(raw, name) in variants {
        let mut cell = Cell {
            data: d.name.clone(),
            epsilon: eps,
            method: name.into(),
            acc: Vec::new(),
            max_spent: Some(0.0),
            refusals: Vec::new(),
            eta: None,
        };
        for s in 0..seeds {
            match recipe(d, eps, s, raw) {
                Ok((a, spent)) => {
                    cell.acc.push(a);
                    cell.max_spent = cell.max_spent.map(|m| m.max(spent));
                }
                Err(e) => cell.refusals.push(format!("seed {s}: {e}")),
            }
        }
        out.push(cell);
    }
    out
}

/// The best eta of [`ETA_GRID`] (largest mean test accuracy) for the configs `cfg(eta, seed)`
/// on features transformed by `pre`: a row tuned on the test part.
fn tuned(
    d: &PipelineData,
    eps: f64,
    seeds: u64,
    method: &str,
    pre: Fit<'_>,
    cfg: &dyn Fn(f64, u64) -> Result<DpSgdConfig>,
) -> Result<Cell> {
    let mut best: Option<Cell> = None;
    for eta in ETA_GRID {
        let acc = (0..seeds)
            .map(|s| acc_of(d, s, pre, &cfg(eta, s)?))
            .collect::<Result<Vec<_>>>()?;
        let c = Cell {
            data: d.name.clone(),
            epsilon: eps,
            method: method.into(),
            acc,
            max_spent: None,
            refusals: Vec::new(),
            eta: Some(eta),
        };
        if best.as_ref().is_none_or(|b| mean(&c.acc) > mean(&b.acc)) {
            best = Some(c);
        }
    }
    Ok(best.expect("ETA_GRID is not empty"))
}

/// Every cell of the table for `seeds` seeds (0..seeds).
pub fn cells(data: &[PipelineData], seeds: u64) -> Result<Vec<Cell>> {
    let mut out = Vec::new();
    for d in data {
        let n_train = split(d, 0)?.0.n;
        let ranges = ranges_pre(d)?;
        let ranges_fn = |_: &Dataset| -> Result<Transform> {
            let r = ranges.clone();
            Ok(Box::new(move |x: &mut Dataset| match &r {
                Some(p) => p.apply(x),
                None => Ok(()),
            }))
        };
        for eps in EPSILONS {
            out.extend(recipe_cells(d, eps, seeds));
            // The paper's protocol: standardized with the training part's own statistics (not
            // private), tau = RNMM's private G_1 on those features (eps 0.3), DP-SGD calibrated
            // to the rest, eta tuned on the test part.
            let protocol = |eta: f64, s: u64| -> Result<DpSgdConfig> {
                let (tr, _) = split(d, s)?;
                let mut z = tr.clone();
                Standardizer::fit(&tr).apply(&mut z)?;
                let tau = rnmm_tau(&z, s)?;
                Ok(config(
                    n_train,
                    eta,
                    tau,
                    target(eps - 0.3),
                    OutputRule::AverageIterate,
                ))
            };
            out.push(tuned(
                d,
                eps,
                seeds,
                "paper's protocol (non-private standardization, eta tuned on test)",
                &fitted,
                &protocol,
            )?);
            let cfg = config(
                n_train,
                BASELINE_ETA,
                1.0,
                target(eps),
                OutputRule::LastIterate,
            );
            out.push(Cell {
                data: d.name.clone(),
                epsilon: eps,
                method: "practitioner's baseline (public ranges or raw features, tau 1, eta 0.1, \
                         last iterate)"
                    .into(),
                acc: (0..seeds)
                    .map(|s| acc_of(d, s, &ranges_fn, &cfg))
                    .collect::<Result<Vec<_>>>()?,
                max_spent: Some(eps),
                refusals: Vec::new(),
                eta: Some(BASELINE_ETA),
            });
        }
        let open = |eta: f64, _: u64| -> Result<DpSgdConfig> {
            Ok(config(
                n_train,
                eta,
                1e6,
                NoiseSpec::None,
                OutputRule::AverageIterate,
            ))
        };
        let mut c = tuned(
            d,
            0.0,
            seeds,
            "non-private (standardized, no clipping, eta tuned on test)",
            &fitted,
            &open,
        )?;
        c.epsilon = 0.0;
        out.push(c);
    }
    Ok(out)
}

/// RNMM's private G_1 on standardized training rows (the recipe's selection, eps 0.3, seed s).
fn rnmm_tau(z: &Dataset, seed: u64) -> Result<f64> {
    let g = logistic_lipschitz(z)?;
    let d = z.d as f64;
    let cfg = crate::privacy::RnmmConfig {
        epsilon: 0.3,
        lo: (2.0f64).sqrt(),
        hi: 3.0 * (2.0 * (d + 1.0)).sqrt(),
        grid_size: DEFAULT_GRID_SIZE,
        target_count: 1,
    };
    Ok(crate::privacy::private_min_lipschitz(
        &g,
        &cfg,
        &mut crate::rng::ReleaseRng::Seeded(stream(seed, 0, Purpose::Mechanism)),
    )?
    .value)
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NEG_INFINITY;
    }
    v.iter().sum::<f64>() / v.len() as f64
}

/// Sample sd (0 for fewer than two values).
fn sd(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
}

/// The cells as the markdown table of `paper_refs/pipeline.md`: one row per (data set, method),
/// one column per epsilon, test accuracy % mean ± sd over the seeds.
pub fn markdown(cells: &[Cell]) -> String {
    let mut t = String::from(
        "| data set | row | eps = 1 | eps = 2 | eps = 4 | eps = 8 |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    let mut keys: Vec<(String, String)> = Vec::new();
    for c in cells {
        let k = (c.data.clone(), c.method.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (data, method) in keys {
        let mut row = format!("| {data} | {method} |");
        for eps in EPSILONS {
            let c = cells.iter().find(|c| {
                c.data == data && c.method == method && (c.epsilon == eps || c.epsilon == 0.0)
            });
            let text = match c {
                Some(c) if !c.acc.is_empty() => {
                    let mut s = format!("{:.2} ± {:.2}", 100.0 * mean(&c.acc), 100.0 * sd(&c.acc));
                    if let Some(e) = c.eta
                        && c.method.contains("tuned")
                    {
                        s.push_str(&format!(" (eta {e})"));
                    }
                    if !c.refusals.is_empty() {
                        s.push_str(&format!(" ({} refused)", c.refusals.len()));
                    }
                    if let Some(m) = c.max_spent
                        && c.method.starts_with("recipe")
                    {
                        s.push_str(&format!(" [spent ≤ {m:.4}]"));
                    }
                    s
                }
                Some(c) => format!("refused ({})", c.refusals.len()),
                None => "-".into(),
            };
            row.push_str(&format!(" {text} |"));
        }
        t.push_str(&row);
        t.push('\n');
    }
    t
}
