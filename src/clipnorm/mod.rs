//! The clip-norm study of Section 5.2, Appendices A-C: which clip norm tau to use for private
//! softmax regression (and a two-layer tanh network), measured.
//!
//! Remark 5.6 recommends tuning tau only up to G_1 = min_i G_i when interpolation (nearly)
//! holds; Figure 1 and Tables 3-7 test it. A study trains, for every privacy level, clip norm
//! of the grid ([`grid::tau_grid`]: values below G_1 and percentiles of the G_i) and eta of the
//! 16-value grid, `runs` independent runs; a cell's score is the test accuracy averaged over the
//! last 5 epochs, the table reports the best eta's mean +- sd ([`table`]). Optional parts: the
//! non-private baseline, private G_1 by RNMM at eps = 0.3 (Table 3), and Delta(w*), alpha(G_1)
//! of Theorem 5.4.
//!
//! Cells run in parallel (rayon); every random stream derives from (seed, run index), so the
//! results do not depend on the thread count. Finished cells are appended to a JSONL file
//! ([`record`], on [`crate::results_file`]) and skipped on `--resume`.

pub mod comparison;
pub mod config;
pub mod figure;
pub mod grid;
pub mod methods;
pub mod recommend;
pub mod record;
pub mod table;
pub mod train;
pub mod train_config;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use crate::config::DataSpec;
use crate::data::{Dataset, split::SplitSpec};
use crate::dpsgd::Calibrator;
use crate::error::{Error, Result};
use crate::linalg::norm2;
use crate::loss::{mean_grad, mean_value, per_sample_lipschitz};
use crate::privacy::{RnmmConfig, private_min_lipschitz};
use crate::rng::{Purpose, ReleaseRng, stream};
use crate::stats::quantile_sorted;
use crate::theory::alpha::{AlphaOptions, estimate_alpha};

pub use crate::model::{Model, ModelSpec};
pub use comparison::MethodComparison;
pub use config::{MethodsSpec, Study, StudyConfig};
pub use grid::{Cell, CellKind, Group, TauPoint};
pub use methods::{
    adaptive_count_share, adaptive_effective_z, adaptive_noise_split, count_noise_for_share,
};
pub use record::RunRecord;
pub use table::{Entry, EpsColumn, Recommendation, StudyTable, TheoryReport};

/// How to run a study.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Output directory (results file, table, figure).
    pub out: PathBuf,
    /// Keep finished runs only under the same fingerprint: a changed study config is an error
    /// (without it, finished runs of the same fingerprint are reused anyway, and a changed config
    /// starts over; see [`crate::results_file::ResultsFile::open`]).
    pub resume: bool,
    /// Discard the finished runs of an existing results file and start over.
    pub fresh: bool,
    /// Draw the figure.
    pub figure: bool,
}

/// What a study produced.
#[derive(Debug, Clone, Serialize)]
pub struct StudyOutcome {
    /// The study's table: accuracy per (epsilon, tau) cell, in the paper's format (Tables 4-7).
    pub table: StudyTable,
    /// The clip norm the rule of Section 5 recommends at each epsilon.
    pub recommendations: Vec<Recommendation>,
    /// Cells trained by this invocation.
    pub executed: usize,
    /// Cells read back from the results file.
    pub reused: usize,
    /// Files written.
    pub files: Vec<String>,
    /// Wall-clock seconds this invocation took.
    pub wall_time_s: f64,
    /// The clip-norm methods head to head, when `[methods]` is configured.
    pub methods: Option<MethodComparison>,
    /// Every record, by cell id.
    #[serde(skip)]
    pub records: BTreeMap<String, RunRecord>,
}

/// The (train, test) data of a study.
pub fn load_data(cfg: &StudyConfig) -> Result<(Dataset, Dataset)> {
    match &cfg.data {
        DataSpec::Csv(c) => {
            let mut c = c.clone();
            if c.split.is_none() {
                c.split = Some(SplitSpec {
                    test_fraction: cfg.test_fraction,
                    seed: cfg.seed,
                    method: Default::default(),
                });
            }
            let (train, test) = c.load_split()?;
            Ok((train, test.expect("split set")))
        }
        // Generators: one draw, then a seeded split.
        other => {
            let all = other.build(&mut stream(cfg.seed, 0, Purpose::Data))?;
            all.train_test_split(cfg.test_fraction, &mut stream(cfg.seed, 0, Purpose::Split))
        }
    }
}

/// Default expected batch: 500 as in the paper, or n / 10 for small data sets.
pub fn default_batch(n: usize) -> f64 {
    (n / 10).clamp(1, 500) as f64
}

/// Runs (or resumes) a study and writes its outputs into `opts.out`. The protocol of
/// Section 5.2 and Appendix B, one named step each: load and split the data, build the clip-norm
/// grid, fix the training protocol and calibrate the noise, select G_1 privately by RNMM
/// (Table 3), train every (epsilon, tau, eta, run) cell, estimate the quantities of Theorem 5.4,
/// tune eta per tau into the table, and write the results.
pub fn run_study(study: &Study, opts: &RunOptions) -> Result<StudyOutcome> {
    let start = Instant::now();
    let cfg = &study.cfg;
    let data = StudyData::load(cfg)?;
    let taus = clip_norm_grid(cfg, &data)?;
    let setup = training_protocol(cfg, &data)?;
    let cal = &cfg.train.accountant;
    let zs = noise_multipliers(cfg, &setup, cal, 0.0)?;
    let rnmm = private_g1_by_rnmm(cfg, &data, &setup, cal)?;
    let plan = cfg
        .methods
        .as_ref()
        .map(|m| methods::MethodPlan::new(m, setup.batch, &zs, &taus));
    let trained = train_cells(
        study,
        opts,
        &setup,
        &taus,
        &zs,
        rnmm.as_ref(),
        plan.as_ref(),
    )?;
    let theory = match (&cfg.theory, &data.g_sorted) {
        (Some(th), Some(g)) => Some(theorem_5_4(&data.model, &data.train, g, th, cfg.seed)?),
        _ => None,
    };
    let table = study_table(cfg, &data, &setup, taus, &zs, theory, &trained.records);
    let recs = table::recommend(&table);
    let mut files = vec![trained.path.display().to_string()];
    files.extend(write_outputs(study, opts, &table, &recs)?);
    let comparison = plan.as_ref().map(|p| {
        comparison::compare(
            &table,
            p,
            cfg.rnmm.as_ref().map(|r| r.epsilon),
            &trained.records,
        )
    });
    if let Some(m) = &comparison {
        files.extend(write_comparison(study, opts, &table, m)?);
    }
    Ok(StudyOutcome {
        table,
        methods: comparison,
        recommendations: recs,
        executed: trained.executed,
        reused: trained.reused,
        files,
        wall_time_s: start.elapsed().as_secs_f64(),
        records: trained.records,
    })
}

/// The data of a study and what is fixed by it: the (train, test) split, the number of classes,
/// the model, and (softmax only, where they have a closed form) the per-sample Lipschitz
/// constants G_i of the training set, sorted, so that G_1 = `g_sorted[0]`.
struct StudyData {
    train: Dataset,
    test: Dataset,
    classes: usize,
    model: Model,
    g_sorted: Option<Vec<f64>>,
}

impl StudyData {
    /// Step 1: load and split the data, then build the model for its dimension and classes.
    fn load(cfg: &StudyConfig) -> Result<Self> {
        let (train, test) = load_data(cfg)?;
        let classes = train
            .num_classes()
            .zip(test.num_classes())
            .map(|(a, b)| a.max(b))
            .ok_or_else(|| Error::data("labels must be class indices 0..m-1"))?;
        if classes < 2 {
            return Err(Error::data(format!(
                "a classification study needs at least 2 classes, but the labels have {classes}"
            )));
        }
        let model = Model::new(&cfg.model, train.d, classes)?;
        model.loss().check_data(&train)?;
        model.loss().check_data(&test)?;
        let g_sorted = match cfg.model {
            ModelSpec::Softmax => {
                let mut g = per_sample_lipschitz(model.loss(), &train)
                    .ok_or_else(|| Error::param("softmax loss without finite G_i"))?;
                g.sort_by(f64::total_cmp);
                Some(g)
            }
            ModelSpec::TanhNet { .. } => None,
        };
        Ok(StudyData {
            train,
            test,
            classes,
            model,
            g_sorted,
        })
    }
}

/// Step 2: the clip norms to try: values below G_1 and percentiles of the G_i
/// ([`grid::tau_grid`]).
fn clip_norm_grid(cfg: &StudyConfig, data: &StudyData) -> Result<Vec<TauPoint>> {
    let taus = grid::tau_grid(data.g_sorted.as_deref(), &cfg.clip);
    if taus.is_empty() {
        return Err(Error::Config("the clip-norm grid is empty".into()));
    }
    Ok(taus)
}

/// Step 3: what every run shares: Poisson sampling with expected batch b (default
/// [`default_batch`]), round(n / b) steps per epoch, the configured epochs.
fn training_protocol<'a>(cfg: &StudyConfig, data: &'a StudyData) -> Result<train::Setup<'a>> {
    let n = data.train.n;
    let batch = cfg.train.batch_size.unwrap_or_else(|| default_batch(n));
    if batch > n as f64 {
        return Err(Error::Config(format!(
            "train.batch_size = {batch} exceeds the {n} training samples"
        )));
    }
    Ok(train::Setup {
        model: &data.model,
        train: &data.train,
        test: &data.test,
        batch,
        steps_per_epoch: ((n as f64 / batch).round() as usize).max(1),
        epochs: cfg.train.epochs,
        average_last: cfg.train.average_last,
        seed: cfg.seed,
    })
}

/// Step 4: the noise multiplier z that makes T steps at sampling rate q = b/n
/// (epsilon - `spent`, delta)-DP under the configured accountant, for every epsilon of the study.
fn noise_multipliers(
    cfg: &StudyConfig,
    setup: &train::Setup<'_>,
    cal: &dyn Calibrator,
    spent: f64,
) -> Result<Vec<f64>> {
    let q = setup.batch / setup.train.n as f64;
    cfg.train
        .epsilons
        .iter()
        .map(|&e| cal.noise_multiplier(q, setup.steps(), e - spent, cfg.train.delta))
        .collect()
}

/// The private-G_1 arm of Table 3: DP-SGD with tau = G_1 selected by RNMM.
struct RnmmArm {
    /// Noise multipliers for epsilon - eps_RNMM (DP-SGD gets what RNMM leaves).
    zs: Vec<f64>,
    /// The privately selected G_1, one per run index.
    taus: Vec<f64>,
}

/// Step 5 (Table 3, optional): select G_1 privately by RNMM at eps_RNMM, once per run index,
/// and calibrate DP-SGD to the remaining budget. Needs the G_i (softmax).
fn private_g1_by_rnmm(
    cfg: &StudyConfig,
    data: &StudyData,
    setup: &train::Setup<'_>,
    cal: &dyn Calibrator,
) -> Result<Option<RnmmArm>> {
    let (Some(r), Some(g)) = (&cfg.rnmm, &data.g_sorted) else {
        return Ok(None);
    };
    let zs = noise_multipliers(cfg, setup, cal, r.epsilon)?;
    let rc = RnmmConfig {
        epsilon: r.epsilon,
        lo: r.lo.unwrap_or(std::f64::consts::SQRT_2),
        hi: r
            .hi
            .unwrap_or(3.0 * (2.0 * (data.train.d as f64 + 1.0)).sqrt()),
        grid_size: r.grid_size,
        target_count: 1,
    };
    let taus = (0..cfg.train.runs)
        .map(|run| {
            private_min_lipschitz(
                g,
                &rc,
                &mut ReleaseRng::Seeded(stream(cfg.seed, run as u64, Purpose::Mechanism)),
            )
            .map(|o| o.value)
        })
        .collect::<Result<_>>()?;
    Ok(Some(RnmmArm { zs, taus }))
}

/// Every record of a study, and how many this invocation trained or read back.
struct Trained {
    /// The results file.
    path: PathBuf,
    records: BTreeMap<String, RunRecord>,
    executed: usize,
    reused: usize,
}

/// Step 6: train every (group, epsilon, tau, eta, run) cell in parallel, appending each
/// finished cell to the results file; with `resume`, cells already there are read back.
fn train_cells(
    study: &Study,
    opts: &RunOptions,
    setup: &train::Setup<'_>,
    taus: &[TauPoint],
    zs: &[f64],
    rnmm: Option<&RnmmArm>,
    plan: Option<&methods::MethodPlan>,
) -> Result<Trained> {
    let cfg = &study.cfg;
    let etas = &cfg.train.learning_rates;
    let mut all_cells = grid::cells(
        zs.len(),
        taus.len(),
        etas.len(),
        cfg.train.runs,
        cfg.train.baseline,
        rnmm.is_some(),
    );
    if let Some(p) = plan {
        all_cells.extend(p.cells(etas.len(), cfg.train.runs));
    }
    let (n, batch, spe) = (setup.train.n, setup.batch, setup.steps_per_epoch);
    // The fingerprint covers everything a record depends on.
    let (rnmm_zs, rnmm_taus) = (rnmm.map(|r| &r.zs), rnmm.map(|r| &r.taus));
    let fp_src = serde_json::to_string(&(cfg, taus, zs, &rnmm_zs, &rnmm_taus, n, batch, spe))
        .map_err(|e| Error::Numerical(e.to_string()))?;
    let fp = crate::fingerprint::fingerprint(fp_src.as_bytes());
    let path = opts.out.join(format!("results{}.jsonl", suffix(study)));
    std::fs::create_dir_all(&opts.out).map_err(|e| Error::io(opts.out.display().to_string(), e))?;
    let head = record::Header::new(&cfg.name, &fp);
    let (file, mut done) =
        record::ResultsFile::open(&path, head, opts.resume, opts.fresh, |_: &RunRecord| None)?;
    done.retain(|k, _| all_cells.iter().any(|c| &c.key() == k));
    let reused = done.len();
    let pending: Vec<&Cell> = all_cells
        .iter()
        .filter(|c| !done.contains_key(&c.key()))
        .collect();
    let new: Vec<RunRecord> = pending
        .par_iter()
        .map(|c| {
            let methods = || plan.expect("method cells exist only with [methods]");
            let eta = etas[c.eta_idx];
            let (tau, z) = match c.kind {
                CellKind::Private { eps, tau } => (taus[tau].tau, zs[eps]),
                CellKind::Baseline => (f64::MAX, 0.0),
                CellKind::Rnmm { eps } => {
                    let r = rnmm.expect("rnmm cells exist only with RNMM");
                    (r.taus[c.run], r.zs[eps])
                }
                CellKind::DefaultTau { eps } => (methods().spec.default_tau, zs[eps]),
                // Their clip norm: C_0 (adaptive) or the sensitivity 1 (automatic).
                CellKind::Adaptive { eps, .. } | CellKind::AdaptiveShare { eps, .. } => {
                    (methods().spec.adaptive_initial, zs[eps])
                }
                CellKind::Automatic { eps } => (1.0, zs[eps]),
            };
            let (o, final_clip) = match plan.and_then(|p| p.rule(c, z)) {
                Some(rule) => {
                    let (o, fc) = setup.run_rule(&rule, eta, c.run)?;
                    (o, fc.is_finite().then_some(fc))
                }
                None => (setup.run(tau, eta, z, c.run)?, None),
            };
            let rec = RunRecord {
                key: c.key(),
                group: c.kind.group(),
                eps_idx: c.kind.eps_idx(),
                tau_idx: c.kind.tau_idx(),
                eta_idx: c.eta_idx,
                run: c.run,
                tau,
                eta,
                z,
                acc: o.acc,
                acc_last: o.acc_last,
                diverged: o.diverged,
                clipped_fraction: o.clipped_fraction,
                final_clip,
            };
            file.append(&rec)?;
            Ok(rec)
        })
        .collect::<Result<_>>()?;
    let executed = new.len();
    for r in new {
        done.insert(r.key.clone(), r);
    }
    // Rewrite canonically (records by cell id, atomic) and release the lock.
    file.finish(&done)?;
    Ok(Trained {
        path,
        records: done,
        executed,
        reused,
    })
}

/// Step 8: the study's table (Tables 3-7): the G_i percentiles, and per epsilon and tau the
/// best eta's mean +- sd over runs ([`table::fill`] tunes eta per tau).
fn study_table(
    cfg: &StudyConfig,
    data: &StudyData,
    setup: &train::Setup<'_>,
    taus: Vec<TauPoint>,
    zs: &[f64],
    theory: Option<TheoryReport>,
    records: &BTreeMap<String, RunRecord>,
) -> StudyTable {
    let g_sorted = &data.g_sorted;
    let mut table = StudyTable {
        name: cfg.name.clone(),
        model: match &cfg.model {
            ModelSpec::Softmax => "softmax regression".into(),
            ModelSpec::TanhNet { hidden, .. } => format!("tanh network, hidden {hidden}"),
        },
        n_train: data.train.n,
        n_test: data.test.n,
        d: data.train.d,
        classes: data.classes,
        batch: setup.batch,
        steps_per_epoch: setup.steps_per_epoch,
        epochs: cfg.train.epochs,
        runs: cfg.train.runs,
        delta: cfg.train.delta,
        accountant: cfg.train.accountant.to_string(),
        learning_rates: cfg.train.learning_rates.clone(),
        g_percentiles: g_sorted.as_ref().map(|g| {
            [0.0, 10.0, 20.0, 40.0, 80.0, 100.0]
                .iter()
                .map(|&p| (p, quantile_sorted(g, p / 100.0)))
                .collect()
        }),
        g1: g_sorted.as_ref().map(|g| g[0]),
        gn: g_sorted.as_ref().map(|g| g[g.len() - 1]),
        taus,
        columns: cfg
            .train
            .epsilons
            .iter()
            .zip(zs)
            .map(|(&epsilon, &z)| EpsColumn {
                epsilon,
                z,
                entries: Vec::new(),
                rnmm: None,
            })
            .collect(),
        baseline: None,
        theory,
    };
    table::fill(&mut table, records, cfg.rnmm.as_ref().map(|r| r.epsilon));
    table
}

/// Step 9: the figure (PNG and SVG, unless disabled), the Markdown table and the JSON table;
/// returns the files written.
fn write_outputs(
    study: &Study,
    opts: &RunOptions,
    table: &StudyTable,
    recs: &[Recommendation],
) -> Result<Vec<String>> {
    let mut files = Vec::new();
    let stem = format!("clipnorm_{}{}", study.cfg.name, suffix(study));
    let fig_name = format!("{stem}.png");
    if opts.figure {
        let png = opts.out.join(&fig_name);
        let svg = opts.out.join(format!("{stem}.svg"));
        figure::draw(table, &png, &svg)?;
        files.push(png.display().to_string());
        files.push(svg.display().to_string());
    }
    let md = table::markdown(table, recs, opts.figure.then_some(fig_name.as_str()));
    let md_path = opts.out.join(format!("{stem}.md"));
    write(&md_path, &md)?;
    files.push(md_path.display().to_string());
    let json_path = opts.out.join(format!("{stem}.json"));
    let json = serde_json::to_string_pretty(&(table, recs))
        .map_err(|e| Error::Numerical(e.to_string()))?;
    write(&json_path, &json)?;
    files.push(json_path.display().to_string());
    Ok(files)
}

/// The methods comparison as Markdown, JSON and a figure (PNG and SVG, unless
/// disabled), beside the study's own files; returns the files written.
fn write_comparison(
    study: &Study,
    opts: &RunOptions,
    table: &StudyTable,
    m: &MethodComparison,
) -> Result<Vec<String>> {
    let mut files = Vec::new();
    let stem = format!("clipnorm_{}_methods{}", study.cfg.name, suffix(study));
    let fig_name = format!("{stem}.png");
    if opts.figure {
        let png = opts.out.join(&fig_name);
        let svg = opts.out.join(format!("{stem}.svg"));
        comparison::figure(m, table.baseline.as_ref().map(|b| b.mean)).save(&png, &svg)?;
        files.push(png.display().to_string());
        files.push(svg.display().to_string());
    }
    let md = comparison::markdown(
        m,
        &table.learning_rates,
        opts.figure.then_some(fig_name.as_str()),
    );
    let md_path = opts.out.join(format!("{stem}.md"));
    write(&md_path, &md)?;
    files.push(md_path.display().to_string());
    let json_path = opts.out.join(format!("{stem}.json"));
    let json = serde_json::to_string_pretty(m).map_err(|e| Error::Numerical(e.to_string()))?;
    write(&json_path, &json)?;
    files.push(json_path.display().to_string());
    Ok(files)
}

/// File-name suffix of quick runs, so that they never overwrite a full study's files.
fn suffix(study: &Study) -> &'static str {
    if study.quick { "_quick" } else { "" }
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::io(path.display().to_string(), e))
}

/// Step 7 (optional, softmax): Definition 5.2's Delta(w*) at an approximate minimizer (full-batch gradient descent with
/// Armijo backtracking from 0; f_i^* = 0 for softmax cross-entropy, so Delta is the mean loss,
/// and any iterate gives an upper estimate), and Definition 5.3's alpha(G_1), estimated.
pub fn theorem_5_4(
    model: &Model,
    data: &Dataset,
    g_sorted: &[f64],
    spec: &config::TheorySpec,
    seed: u64,
) -> Result<TheoryReport> {
    let loss = model.loss();
    let p = loss.param_dim();
    let mut w = vec![0.0; p];
    let mut g = vec![0.0; p];
    let mut trial = vec![0.0; p];
    let mut f = mean_value(loss, &w, data);
    let mut step = 1.0;
    for _ in 0..spec.gd_iters {
        mean_grad(loss, &w, data, &mut g);
        let gn2: f64 = g.iter().map(|v| v * v).sum();
        if gn2 < 1e-24 {
            break;
        }
        let mut ok = false;
        for _ in 0..50 {
            for ((t, wi), gi) in trial.iter_mut().zip(&w).zip(&g) {
                *t = wi - step * gi;
            }
            let ft = mean_value(loss, &trial, data);
            if ft <= f - 0.5 * step * gn2 {
                f = ft;
                ok = true;
                break;
            }
            step *= 0.5;
        }
        if !ok {
            break;
        }
        std::mem::swap(&mut w, &mut trial);
        step *= 1.5;
    }
    mean_grad(loss, &w, data, &mut g);
    let f_star = vec![0.0; data.n];
    let delta_star = crate::theory::alpha::delta_star(loss, data, &w, &f_star)?;
    let g1 = g_sorted[0];
    let gn = g_sorted[g_sorted.len() - 1];
    let alpha = estimate_alpha(
        loss,
        data,
        &f_star,
        g1,
        &AlphaOptions {
            starts: spec.alpha_starts,
            iters: spec.alpha_iters,
            init_scale: 1.0,
            seed,
        },
    )?;
    Ok(TheoryReport {
        delta_star,
        gd_iters: spec.gd_iters,
        grad_norm: norm2(&g),
        train_accuracy: model.accuracy(&w, data),
        alpha_g1: alpha.value,
        gn_over_g1: gn / g1,
        term_b_g1: (gn / (g1 * alpha.value) - 1.0).max(0.0) * delta_star,
    })
}
