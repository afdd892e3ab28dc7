//! Stage 1 of `clipnorm recommend`: the plan. Every public parameter is checked, the data are
//! read and split, the budget is split between the stages and DP-SGD's noise is calibrated, all
//! before any mechanism runs, so that every refusal here costs nothing and nothing is recorded.

use std::path::PathBuf;

use super::budget::{dpsgd_budget, range_check_epsilon, rnmm_share};
use super::values::{PublicValues, read_norms_file};
use super::{
    AdviceData, AdviceRequest, ClipNormAdvice, DEFAULT_EPOCHS, MIN_NOISE_MULTIPLIER, NormsSource,
    RangeCheck, StageSpend,
};
use crate::clipnorm::default_batch;
use crate::data::Dataset;
use crate::data::csv::CsvSpec;
use crate::data::preprocess::{Preprocess, read_ranges};
use crate::data::split::{SplitMethod, SplitSpec, Standardizer};
use crate::error::{Error, Result, check_open, check_positive, fmt_num};
use crate::loss::LossSpec;
use crate::privacy::ledger::Ledger;
use crate::privacy::standardize::{DEFAULT_STD_SHARE, PrivateStandardization};

/// How the features are transformed before the G_i are computed and DP-SGD trains.
#[derive(Debug, Clone)]
pub enum Preprocessing {
    /// Raw features.
    None,
    /// Public ranges: clamp and scale into [-1, 1] (no cost).
    Ranges(Preprocess),
    /// Public means and scales (no cost).
    PublicScales(Standardizer),
    /// The private standardization with (epsilon, delta) and optional public bounds C_j.
    Private {
        /// eps_std.
        epsilon: f64,
        /// delta_std.
        delta: f64,
        /// Public bounds C_j on |x_j| (None: chosen privately).
        bounds: Option<Vec<f64>>,
    },
}

/// What the preprocessing stage released.
#[derive(Debug, Clone, Default)]
pub struct Preprocessed {
    /// The per-row transform (None: raw features).
    pub preprocess: Option<Preprocess>,
    /// The private (or user-stated) standardization behind it, with its cost.
    pub standardization: Option<PrivateStandardization>,
    /// Features whose private statistic was mostly noise (fell back to the bound's scale).
    pub noisy_features: Vec<usize>,
}

/// The checked request: what every stage runs with.
#[derive(Debug, Clone)]
pub struct AdvicePlan {
    /// The request as given.
    pub req: AdviceRequest,
    /// The data's name (CSV path or the in-memory name).
    pub csv: String,
    /// The label column (empty for data in memory).
    pub label: String,
    /// Every row, as read (per-row values are aligned with these).
    pub all: Dataset,
    /// The hash split (None: every row trains).
    pub split: Option<SplitSpec>,
    /// Per row of `all`: true where it is a training row.
    pub mask: Vec<bool>,
    /// The training rows, in order.
    pub train: Dataset,
    /// The user's per-sample norms of the training rows (None: the loss's G_i).
    pub user_norms: Option<Vec<f64>>,
    /// Rows held out.
    pub n_test: usize,
    /// The preprocessing stage's source.
    pub preprocessing: Preprocessing,
    /// RNMM's public candidate range.
    pub lo: f64,
    /// RNMM's public candidate range.
    pub hi: f64,
    /// epsilon of the range check (0: not run).
    pub check_epsilon: f64,
    /// Fraction of epsilon on RNMM.
    pub share: f64,
    /// eps_RNMM.
    pub rnmm_epsilon: f64,
    /// DP-SGD's share of epsilon.
    pub dpsgd_epsilon: f64,
    /// DP-SGD's share of delta.
    pub dpsgd_delta: f64,
    /// Steps T.
    pub steps: usize,
    /// Expected batch B.
    pub batch: f64,
    /// Sampling rate q = B / n.
    pub q: f64,
    /// The calibrated noise multiplier.
    pub z: f64,
    /// Model parameters p = m (d + 1) of the multinomial logistic loss DP-SGD trains.
    pub params: usize,
    /// The rows the ledger guards (all of them, before the split).
    pub data_id: crate::privacy::ledger::DataId,
    /// The stages' planned spends before DP-SGD, with their curves, in order.
    pub stage_spends: Vec<(super::budget::Stage, crate::privacy::ledger::Spend)>,
    /// DP-SGD's noise under the composition of every stage (who calibrated it, what basic
    /// composition would have left).
    pub calibration: super::budget::ComposedCalibration,
}

impl AdvicePlan {
    /// Checks `req` (module doc); no mechanism runs.
    pub fn check(req: &AdviceRequest) -> Result<AdvicePlan> {
        check_positive("--epsilon", req.epsilon)?;
        check_open("--delta", req.delta, 0.0, 1.0)?;
        if !matches!(req.loss.as_str(), "logistic" | "softmax") {
            return Err(Error::param(format!(
                "--loss must be logistic or softmax (the multinomial logistic loss), but is '{}'",
                req.loss
            )));
        }
        let share = rnmm_share(req)?;
        if req.grid_size < 2 {
            return Err(Error::param(format!(
                "--grid-size must be >= 2, but is {}",
                req.grid_size
            )));
        }
        crate::limits::check_memory(
            &format!("RNMM grid_size = {}", req.grid_size),
            24.0 * req.grid_size as f64,
        )?;
        check_options(req)?;
        let (csv, label, all) = read_all(req)?;
        let data_id = crate::privacy::ledger::DataId::of(&csv, &all); // every row, pre-split
        let split = match req.test_fraction {
            Some(f) => Some(SplitSpec {
                test_fraction: check_open("--test-fraction", f, 0.0, 1.0)?,
                seed: req.split_seed,
                method: SplitMethod::Hash,
            }),
            None => None,
        };
        let (mask, train, n_test) = match &split {
            Some(s) => {
                let (train, test) = all.hash_split(s.test_fraction, s.seed)?;
                (s.train_mask(&all)?, train, test.n)
            }
            None => (vec![true; all.n], all.clone(), 0),
        };
        let params = model_params(req, &train)?;
        let user_norms = user_norms(req, &csv, &label, all.n, &mask)?;
        let n = train.n;
        let (batch, steps) = batch_and_steps(req, n, &csv)?;
        let preprocessing = preprocessing(req, train.d)?;
        let (lo, hi, exact_range) = candidate_range(req, &preprocessing, train.d)?;
        let check_epsilon = range_check_epsilon(req, exact_range)?;
        let (std_epsilon, std_delta) = match &preprocessing {
            Preprocessing::Private { epsilon, delta, .. } => (*epsilon, *delta),
            _ => (0.0, 0.0),
        };
        let rnmm_epsilon = share * req.epsilon;
        super::small::check_rnmm_size(train.n, rnmm_epsilon, req.epsilon)?;
        if matches!(preprocessing, Preprocessing::Private { .. }) {
            let std = (std_epsilon, std_delta);
            super::small::check_standardization_size(train.n, std, req.epsilon)?;
        }
        let (basic_epsilon, dpsgd_delta) =
            dpsgd_budget(req, (std_epsilon, std_delta), check_epsilon, rnmm_epsilon)?;
        let q = batch / n as f64;
        let kind = req.accountant;
        let stage_spends = super::budget::stage_spends(
            &command(req),
            (std_epsilon, std_delta),
            check_epsilon,
            rnmm_epsilon,
        );
        let calibration = super::budget::calibrate_composed(
            kind,
            &stage_spends,
            (q, steps),
            (req.epsilon, req.delta),
            (basic_epsilon, dpsgd_delta),
        )?;
        let (z, dpsgd_epsilon) = (calibration.z, calibration.epsilon);
        if !(z.is_finite() && z >= MIN_NOISE_MULTIPLIER) {
            return Err(Error::param(format!(
                "--epsilon {} is out of the accountant's range: DP-SGD's share {} is met by z = {} \
                 (no noise worth the name); lower --epsilon",
                fmt_num(req.epsilon),
                fmt_num(dpsgd_epsilon),
                fmt_num(z)
            )));
        }
        size_check(
            req,
            &csv,
            kind,
            (n, params, steps, batch),
            (z, dpsgd_epsilon, dpsgd_delta),
            (std_epsilon, std_delta),
            (share, check_epsilon, rnmm_epsilon),
        )?;
        super::small::check_range_check_size(n, check_epsilon, req.epsilon)?;
        Ok(AdvicePlan {
            req: req.clone(),
            csv,
            label,
            all,
            split,
            mask,
            train,
            user_norms,
            n_test,
            preprocessing,
            lo,
            hi,
            check_epsilon,
            share,
            rnmm_epsilon,
            dpsgd_epsilon,
            dpsgd_delta,
            steps,
            batch,
            q,
            z,
            params,
            data_id,
            stage_spends,
            calibration,
        })
    }

    /// The data set's ledger, when the request names one: made with the request's budget when
    /// absent; refused when the request's (epsilon, delta) exceeds what it has left.
    pub fn open_ledger(&self) -> Result<Option<Ledger>> {
        let Some(path) = &self.req.ledger else {
            return Ok(None);
        };
        let ledger = Ledger::open_for(
            path,
            &self.data_id,
            Some((self.req.epsilon, self.req.delta)),
        )?;
        // The whole request (every stage and the DP-SGD run it plans) against what the ledger
        // holds, before any mechanism runs.
        let mut planned: Vec<_> = self.stage_spends.iter().map(|(_, s)| s.clone()).collect();
        planned.push(super::budget::dpsgd_spend(
            &command(&self.req),
            self.q,
            self.z,
            self.steps,
            self.dpsgd_epsilon,
            self.dpsgd_delta,
        ));
        ledger.check(
            &planned,
            "clipnorm recommend's request (its stages and the DP-SGD run it plans)",
        )?;
        Ok(Some(ledger))
    }

    /// The advice from the stages' outputs.
    pub fn advice(
        &self,
        pre: Preprocessed,
        range_check: Option<RangeCheck>,
        sel: crate::privacy::RnmmOutput,
        ledger: Option<&Ledger>,
    ) -> ClipNormAdvice {
        let (std_epsilon, std_delta) = pre
            .standardization
            .as_ref()
            .map_or((0.0, 0.0), |s| (s.epsilon, s.delta));
        let check_eps = range_check.as_ref().map_or(0.0, |c| c.epsilon);
        let (learning_rate, rule) = match self.req.learning_rate {
            Some(eta) => (eta, "given".to_string()),
            None => (
                super::step_size(self.params, sel.value, self.z, self.batch, self.steps),
                "sqrt(p) / (tau sqrt(1 + p z^2 / B^2) sqrt(T))".to_string(),
            ),
        };
        let mut stages = Vec::new();
        if std_epsilon > 0.0 {
            stages.push(StageSpend {
                stage: "preprocessing".into(),
                mechanism: "private standardization (zCDP)".into(),
                epsilon: std_epsilon,
                delta: std_delta,
            });
        }
        if check_eps > 0.0 {
            stages.push(StageSpend {
                stage: "range check".into(),
                mechanism: "Laplace count (pure DP)".into(),
                epsilon: check_eps,
                delta: 0.0,
            });
        }
        stages.push(StageSpend {
            stage: "RNMM".into(),
            mechanism: "Report Noisy Max (pure DP)".into(),
            epsilon: self.rnmm_epsilon,
            delta: 0.0,
        });
        stages.push(StageSpend {
            stage: "DP-SGD (planned)".into(),
            mechanism: format!("Poisson-subsampled Gaussian ({})", self.calibration.label),
            epsilon: self.dpsgd_epsilon,
            delta: self.dpsgd_delta,
        });
        ClipNormAdvice {
            csv: self.csv.clone(),
            label: self.label.clone(),
            n: self.train.n,
            split: self.split.clone(),
            n_test: self.n_test,
            d: self.train.d,
            loss: self.req.loss.clone(),
            norms_source: norms_name(&self.req.norms),
            epsilon: self.req.epsilon,
            delta: self.req.delta,
            rnmm_epsilon: self.rnmm_epsilon,
            share: self.share,
            dpsgd_epsilon: self.dpsgd_epsilon,
            dpsgd_delta: self.dpsgd_delta,
            standardization: pre.standardization,
            preprocess: pre.preprocess,
            noisy_features: pre.noisy_features,
            learning_rate,
            learning_rate_rule: rule,
            ledger: ledger.map(|l| l.path().display().to_string()),
            ledger_remaining: ledger.map(Ledger::remaining),
            range_check,
            stages,
            total_epsilon: self.calibration.total_epsilon,
            basic_dpsgd_epsilon: self.calibration.basic_epsilon,
            ledger_notes: ledger.map(|l| l.notes().to_vec()).unwrap_or_default(),
            total_delta: std_delta + self.dpsgd_delta,
            candidates_lo: self.lo,
            candidates_hi: self.hi,
            grid_size: self.req.grid_size,
            seed: self.req.seed,
            reproducible: self.req.reproducible,
            clip_norm: sel.value,
            candidate_index: sel.index,
            at_range_end: sel.index + 1 == self.req.grid_size,
            steps: self.steps,
            batch_size: self.batch,
            q: self.q,
            noise_multiplier: self.z,
            accountant: self.calibration.label.clone(),
            accountant_kind: self.calibration.accountant,
        }
    }
}

fn norms_name(n: &NormsSource) -> String {
    match n {
        NormsSource::Lipschitz => "lipschitz".into(),
        NormsSource::Column(c) => format!("column {c}"),
        NormsSource::File(p) => format!("file {}", p.display()),
        NormsSource::Values(_) => "per_sample_norms".into(),
    }
}

/// The command named in the ledger's spend lines.
pub(super) fn command(req: &AdviceRequest) -> String {
    super::budget::ledger_command(req.reproducible, req.seed)
}

/// Options that cannot go together, and values outside their domain, before anything is read.
fn check_options(req: &AdviceRequest) -> Result<()> {
    let given = [
        (req.feature_ranges.is_some(), "--feature-ranges"),
        (req.public_scales.is_some(), "--public-scales"),
        (req.feature_bounds.is_some(), "--feature-bounds"),
        (req.std_share.is_some(), "--std-share"),
    ];
    if !req.standardize
        && let Some((_, f)) = given.iter().find(|(g, _)| *g)
    {
        return Err(Error::param(format!(
            "{f} transforms the features, but the request uses the raw features \
             (--no-standardize): drop one of them"
        )));
    }
    if req.feature_ranges.is_some()
        && let Some((_, f)) = given[1..].iter().find(|(g, _)| *g)
    {
        return Err(Error::param(format!(
            "--feature-ranges already scales every feature at no cost; {f} would replace it: \
             give one of them"
        )));
    }
    if let Some(e) = req.check_epsilon
        && !(e.is_finite() && e >= 0.0)
    {
        return Err(Error::param(format!(
            "--check-epsilon must be finite and >= 0 (0 skips the check), but is {e}"
        )));
    }
    if let Some(eta) = req.learning_rate {
        check_positive("--learning-rate", eta)?;
    }
    if let Some(s) = req.std_share {
        check_open("--std-share", s, 0.0, 1.0)?;
    }
    Ok(())
}

/// Every row of the data (no split yet), with the data's name and label column.
fn read_all(req: &AdviceRequest) -> Result<(String, String, Dataset)> {
    Ok(match &req.data {
        AdviceData::Csv { path, label } => {
            let csv = path.display().to_string();
            let all = CsvSpec::new(csv.clone(), label.clone()).read()?;
            (csv, label.clone(), all)
        }
        AdviceData::Memory { data, name } => (name.clone(), String::new(), data.clone()),
    })
}

/// `g` if every value is finite and >= 0.
pub(super) fn check_values(g: Vec<f64>) -> Result<Vec<f64>> {
    if let Some((i, v)) = g
        .iter()
        .enumerate()
        .find(|(_, v)| !(v.is_finite() && **v >= 0.0))
    {
        return Err(Error::data(format!(
            "per-sample norm of training row {} is {v}; norms must be finite and >= 0",
            i + 1
        )));
    }
    Ok(g)
}

/// The user's per-sample norms (a CSV column, a file, or values in memory), one per training
/// row (per-row values follow the hash split's `mask`), checked finite and >= 0; None for the
/// loss's own G_i. The plan reads them, so a bad norms input is refused before anything is
/// spent (no mechanism).
fn user_norms(
    req: &AdviceRequest,
    csv: &str,
    label: &str,
    all_n: usize,
    mask: &[bool],
) -> Result<Option<Vec<f64>>> {
    let per_row = |v: Vec<f64>, what: &str| -> Result<Vec<f64>> {
        if v.len() != all_n {
            return Err(Error::data(format!(
                "{what} has {} values but {csv} has {all_n} rows; give one norm per row",
                v.len(),
            )));
        }
        Ok(v.into_iter()
            .zip(mask)
            .filter_map(|(g, &m)| m.then_some(g))
            .collect())
    };
    let g = match &req.norms {
        NormsSource::Lipschitz => return Ok(None),
        NormsSource::Column(c) => {
            if !matches!(req.data, AdviceData::Csv { .. }) {
                return Err(Error::param(format!(
                    "--norms-column '{c}' names a CSV column, but the data are not a CSV"
                )));
            }
            if c == label {
                return Err(Error::param(format!(
                    "--norms-column '{c}' is the label column; name the column of per-sample norms"
                )));
            }
            let col = CsvSpec::new(csv.to_string(), c.clone())
                .read()
                .map_err(|e| Error::data(format!("--norms-column '{c}': {e}")))?;
            per_row(col.y, &format!("--norms-column '{c}'"))?
        }
        NormsSource::File(p) => per_row(read_norms_file(p)?, &format!("--norms {}", p.display()))?,
        NormsSource::Values(v) => per_row(v.clone(), "per_sample_norms")?,
    };
    check_values(g).map(Some)
}

/// p = m (d + 1), the parameters of the multinomial logistic loss DP-SGD trains, once the labels
/// are checked: class indices 0..m-1 with every class present, or the loss's error says what it
/// assumed. The check runs here, before the size check and before any mechanism, so a data set
/// with labels {1, 2} hears about its labels first.
///
/// Norms given alone (`per_sample_norms` from Python) come with placeholder rows that have no
/// labels to check.
fn model_params(req: &AdviceRequest, train: &Dataset) -> Result<usize> {
    let placeholder = matches!(
        (&req.data, &req.norms),
        (AdviceData::Memory { .. }, NormsSource::Values(_))
    );
    if !placeholder {
        LossSpec::Logistic { classes: None }.build(train)?;
    }
    let m = train.num_classes().unwrap_or(2).max(2);
    Ok(m * (train.d + 1))
}

/// DP-SGD's expected batch B and steps T for n training rows.
pub(super) fn batch_and_steps(req: &AdviceRequest, n: usize, csv: &str) -> Result<(f64, usize)> {
    let batch = req.batch_size.unwrap_or_else(|| default_batch(n));
    check_positive("--batch-size", batch)?;
    // An expected batch below one sample is no DP-SGD anyone runs, and its default T =
    // 30 n / B would overflow any count.
    if batch < 1.0 {
        return Err(Error::param(format!(
            "--batch-size {} must be >= 1 (the expected number of samples per step)",
            fmt_num(batch)
        )));
    }
    if batch > n as f64 {
        return Err(Error::param(format!(
            "--batch-size {batch} exceeds the {n} training rows of {csv}"
        )));
    }
    let steps = match (req.steps, req.epochs) {
        (Some(0), _) => return Err(Error::param("--steps must be >= 1")),
        (Some(t), _) => t,
        (None, Some(e)) => {
            check_positive("--epochs", e)?;
            // T = ceil(E n / B): E passes over the n training rows at expected batch B.
            let t =
                crate::limits::to_count("T = ceil(epochs n / B)", (e * n as f64 / batch).ceil())?;
            usize::try_from(t.max(1)).map_err(|_| {
                Error::param(format!(
                    "--epochs {e} gives T = {t} steps, which does not fit in a count"
                ))
            })?
        }
        (None, None) => {
            let per_epoch =
                crate::limits::to_count("steps per epoch n / B", (n as f64 / batch).round())?;
            usize::try_from(per_epoch.max(1))
                .ok()
                .and_then(|p| DEFAULT_EPOCHS.checked_mul(p))
                .ok_or_else(|| {
                    Error::param(format!(
                        "T = {DEFAULT_EPOCHS} epochs x {per_epoch} steps does not fit in a count; \
                         give --steps"
                    ))
                })?
        }
    };
    Ok((batch, steps))
}

/// The preprocessing stage's source for `d` features.
fn preprocessing(req: &AdviceRequest, d: usize) -> Result<Preprocessing> {
    if !req.standardize {
        return Ok(Preprocessing::None);
    }
    if let Some(r) = &req.feature_ranges {
        let (rows, what) = match r {
            PublicValues::File(p) => (read_ranges(p)?, format!("--feature-ranges {}", p.display())),
            PublicValues::Rows(_) => {
                let (rows, what) = r.rows("--feature-ranges", 2)?;
                (rows.into_iter().map(|v| (v[0], v[1])).collect(), what)
            }
        };
        if rows.len() != d {
            return Err(Error::data(format!(
                "{what} has {} ranges but the data have d = {d} features",
                rows.len()
            )));
        }
        return Ok(Preprocessing::Ranges(Preprocess::from_ranges(
            &rows,
            &format!("public ranges, {what}"),
        )?));
    }
    if let Some(p) = &req.public_scales {
        let (rows, what) = p.rows("--public-scales", 2)?;
        if rows.len() != d {
            return Err(Error::data(format!(
                "{what} has {} 'mean,scale' lines but the data have d = {d} features",
                rows.len()
            )));
        }
        return Ok(Preprocessing::PublicScales(Standardizer {
            mean: rows.iter().map(|r| r[0]).collect(),
            std: rows.iter().map(|r| r[1]).collect(),
        }));
    }
    let share = req.std_share.unwrap_or(DEFAULT_STD_SHARE);
    let bounds = match &req.feature_bounds {
        Some(p) => {
            let (rows, what) = p.rows("--feature-bounds", 1)?;
            if rows.len() != d {
                return Err(Error::data(format!(
                    "{what} has {} values but the data have d = {d} features",
                    rows.len()
                )));
            }
            Some(rows.into_iter().map(|r| r[0]).collect())
        }
        None => None,
    };
    Ok(Preprocessing::Private {
        epsilon: share * req.epsilon,
        delta: share * req.delta,
        bounds,
    })
}

/// RNMM's public candidate range, and whether it provably holds every G_i (public ranges: every
/// feature in [-1, 1], so G(x, y) = sqrt(2 (||x||^2 + 1)) lies in [sqrt 2, sqrt(2 (d + 1))]).
fn candidate_range(req: &AdviceRequest, pre: &Preprocessing, d: usize) -> Result<(f64, f64, bool)> {
    let form = LossSpec::Logistic { classes: None }
        .lipschitz_form()
        .ok_or_else(|| Error::param("the loss has no closed-form G(x, y)"))?;
    let ranges = matches!(pre, Preprocessing::Ranges(_));
    let (lo, hi, exact) = match (&req.norms, req.lo, req.hi) {
        (NormsSource::Lipschitz, lo, hi) => {
            let g0 = form.eval(&vec![0.0; d], 0.0);
            let g1 = form.eval(&vec![1.0; d], 0.0);
            // Standardized features: up to 3 G at ||x||^2 = d (the mean), as in the study; with
            // public ranges, G at the corner of the box is the largest possible value.
            let default_hi = if ranges { g1 } else { 3.0 * g1 };
            (
                lo.unwrap_or(g0),
                hi.unwrap_or(default_hi),
                ranges && lo.is_none_or(|l| l <= g0) && hi.is_none_or(|h| h >= g1),
            )
        }
        (_, Some(lo), Some(hi)) => (lo, hi, false),
        _ => {
            return Err(Error::param(
                "with --norms or --norms-column the public candidate range is unknown: give \
                 --lo and --hi (data-independent bounds on the norms)",
            ));
        }
    };
    check_positive("--lo", lo)?;
    if !(hi.is_finite() && hi > lo) {
        return Err(Error::param(format!(
            "--hi must be finite and > lo = {lo}, but is {hi}"
        )));
    }
    Ok((lo, hi, exact))
}

/// The ledger path a CSV's recommendation uses by default: `FILE.ledger.jsonl` beside it.
pub fn default_ledger(csv: &std::path::Path) -> PathBuf {
    let mut s = csv.as_os_str().to_owned();
    s.push(".ledger.jsonl");
    PathBuf::from(s)
}

/// The size check of [`super::small`] (DP-SGD's noise against the clipped gradients) with the
/// plan's budget split and composition rule.
#[allow(clippy::too_many_arguments)]
fn size_check(
    req: &AdviceRequest,
    csv: &str,
    kind: crate::privacy::AccountantKind,
    (n, params, steps, batch): (usize, usize, usize, f64),
    (z, dpsgd_epsilon, dpsgd_delta): (f64, f64, f64),
    (std_epsilon, std_delta): (f64, f64),
    (share, check_epsilon, rnmm_epsilon): (f64, f64, f64),
) -> Result<()> {
    let given = req.share.is_some();
    let budget_split = super::small::BudgetSplit {
        std_frac: std_epsilon / req.epsilon,
        share_frac: if given { share } else { 0.0 },
        check: check_epsilon,
        rnmm_fixed: if given { 0.0 } else { rnmm_epsilon },
    };
    let fits = |e: f64, q: f64, z: f64, t: usize| {
        super::budget::fits(kind, &budget_split, (e, req.delta, std_delta), (q, z, t))
    };
    super::small::check_size(&super::small::SizeInputs {
        epsilon: req.epsilon,
        batch_and_steps: &|n| batch_and_steps(req, n, csv),
        n,
        params,
        steps,
        batch,
        z,
        dpsgd_epsilon,
        dpsgd_delta,
        kind,
        split: budget_split,
        fits: &fits,
    })?;
    Ok(())
}
