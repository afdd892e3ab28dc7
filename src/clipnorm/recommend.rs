//! `dpsgd-lab clipnorm recommend`: the paper's clip-norm advice as a one-liner. Remark 5.6
//! recommends tau = G_1 = min_i G_i; G_1 is private, so it is selected by RNMM (Report Noisy
//! Max over log-spaced candidates, pure eps_RNMM-DP, [`crate::privacy::private_min_lipschitz`])
//! with a stated share of the budget, exactly as the study's Table 3 arm does; DP-SGD gets the
//! rest (basic composition), and its noise multiplier is calibrated for the given steps and
//! batch size.
//!
//! The per-sample constants are G_i = G(x_i, y_i) from the loss's own
//! [`crate::loss::Loss::lipschitz`], or per-sample norms the user supplies (a CSV column or a
//! file with one value per row), e.g. measured gradient-norm bounds of another model.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::default_batch;
use crate::data::Dataset;
use crate::data::csv::CsvSpec;
use crate::error::{Error, Result, check_open, check_positive};
use crate::loss::{LossSpec, lipschitz_constants};
use crate::privacy::standardize::{
    DEFAULT_STD_SHARE, PrivateStandardization, StdSource, private_standardize,
};
use crate::privacy::{RnmmConfig, private_min_lipschitz};
use crate::rng::{Purpose, stream};

/// The study's RNMM budget (Table 3): the default when no share is given.
pub const DEFAULT_RNMM_EPSILON: f64 = 0.3;
/// The study's number of log-spaced candidates.
pub const DEFAULT_GRID_SIZE: usize = 200;
/// The study's epochs: the default number of steps is this many passes at the default batch.
pub const DEFAULT_EPOCHS: usize = 30;
/// Default epsilon of the range check (a Laplace count, [`range_check`]): small against the
/// budgets the tool is used with (2.5% of epsilon = 2), yet its noise scale 1 / 0.05 = 20 rows
/// is far below half of any data set the check can judge (n >= a few hundred).
pub const DEFAULT_CHECK_EPSILON: f64 = 0.05;

pub use crate::privacy::calibrate::MIN_NOISE_MULTIPLIER;

/// Where the per-sample values G_i come from.
#[derive(Debug, Clone, PartialEq)]
pub enum NormsSource {
    /// G(x_i, y_i) of the loss, in closed form.
    Lipschitz,
    /// A numeric column of the CSV.
    Column(String),
    /// A file with one value per CSV row.
    File(PathBuf),
    /// One value per row of the data, given in memory (before any split, as a file's).
    Values(Vec<f64>),
}

/// Where the private data set comes from.
#[derive(Debug, Clone)]
pub enum AdviceData {
    /// A CSV with a header row and numeric columns.
    Csv {
        /// Path of the CSV file.
        path: PathBuf,
        /// Name of the label column (class indices 0..m-1); every other column is a feature.
        label: String,
    },
    /// Features and labels in memory (e.g. arrays from Python).
    Memory {
        /// The data set (every row; a split is taken from it as from a CSV's rows).
        data: Dataset,
        /// Reported in place of the CSV path.
        name: String,
    },
}

/// Public per-feature values (bounds C_j, or "mean,scale" pairs): a file of lines, or rows in
/// memory.
#[derive(Debug, Clone)]
pub enum PublicValues {
    /// A file of numeric lines (blank lines and `#` comments skipped; a non-numeric first line
    /// is a header).
    File(PathBuf),
    /// One row per feature, in memory.
    Rows(Vec<Vec<f64>>),
}

impl PublicValues {
    /// The rows (each `width` finite values) and how errors name them (`flag FILE`, or the
    /// flag's name as a keyword for rows in memory).
    fn rows(&self, flag: &str, width: usize) -> Result<(Vec<Vec<f64>>, String)> {
        match self {
            PublicValues::File(p) => Ok((read_rows(p, width)?, format!("{flag} {}", p.display()))),
            PublicValues::Rows(r) => {
                let name = flag.trim_start_matches('-').replace('-', "_");
                if let Some(i) = r
                    .iter()
                    .position(|v| v.len() != width || !v.iter().all(|x| x.is_finite()))
                {
                    return Err(Error::data(format!(
                        "{name}, row {}: expected {width} finite values",
                        i + 1
                    )));
                }
                Ok((r.clone(), name))
            }
        }
    }
}

/// The inputs of `clipnorm recommend`: the data, the total budget, and the public choices of the
/// mechanisms (candidate range, steps, batch size, accountant, seed).
#[derive(Debug, Clone)]
pub struct AdviceRequest {
    /// The private data set: a CSV, or features and labels in memory.
    pub data: AdviceData,
    /// "logistic" or "softmax" (the same multinomial logistic loss).
    pub loss: String,
    /// Standardize the features before computing G_i, with parameters released by
    /// [`crate::privacy::standardize`]: a DP estimate with `std_share` of (epsilon, delta), or
    /// the public means and scales of `public_scales` (no cost).
    pub standardize: bool,
    /// Fraction of epsilon and of delta spent on standardization (default 0.1).
    pub std_share: Option<f64>,
    /// File of public per-feature bounds C_j on |x_j| (one per feature): the DP estimate then
    /// skips its private bounds.
    pub feature_bounds: Option<PublicValues>,
    /// File of public per-feature "mean,scale" lines: standardization at no privacy cost.
    pub public_scales: Option<PublicValues>,
    /// Total privacy budget epsilon, split by basic composition between standardization, RNMM
    /// and DP-SGD.
    pub epsilon: f64,
    /// Total delta in (0, 1), split between standardization and DP-SGD (RNMM is pure DP).
    pub delta: f64,
    /// Fraction of epsilon spent on RNMM (default: eps_RNMM = 0.3, as in the study).
    pub share: Option<f64>,
    /// DP-SGD iterations T the noise is calibrated for (default: [`DEFAULT_EPOCHS`] epochs of
    /// round(n / b) steps).
    pub steps: Option<usize>,
    /// Expected batch size b, so q = b / n (default: min(500, n / 10), as in the study).
    pub batch_size: Option<f64>,
    /// Where the per-sample values G_i whose private minimum is selected come from.
    pub norms: NormsSource,
    /// Public lower end of RNMM's candidate range (default for the loss's G_i: G at x = 0;
    /// required with user norms).
    pub lo: Option<f64>,
    /// Public upper end of the candidate range (default for the loss's G_i: 3 G at
    /// ||x||^2 = d; required with user norms).
    pub hi: Option<f64>,
    /// Number of log-spaced RNMM candidates on [lo, hi] (>= 2; the study uses
    /// [`DEFAULT_GRID_SIZE`]).
    pub grid_size: usize,
    /// Accountant that calibrates DP-SGD's noise multiplier: "rdp" or "pld".
    pub accountant: String,
    /// Base seed of the mechanisms' randomness (RNMM, the range check and the private
    /// standardization); the same seed gives the same recommendation.
    pub seed: u64,
    /// epsilon of the private range check ([`range_check`]; default [`DEFAULT_CHECK_EPSILON`]);
    /// 0 skips the check.
    pub check_epsilon: Option<f64>,
    /// Hold out this fraction of the rows as a test set (seeded by `split_seed`): every private
    /// statistic then uses the training part only, and n = n_train.
    pub test_fraction: Option<f64>,
    /// Seed of the train/test split (the `[data] split.seed` of the train config).
    pub split_seed: u64,
    /// DP-SGD epochs E: T = ceil(E n / B) (an alternative to `steps`).
    pub epochs: Option<f64>,
}

/// The recommendation (every field a public value or a DP output; no raw statistic of the
/// data such as the true G_1 is reported).
#[derive(Debug, Clone, Serialize)]
pub struct ClipNormAdvice {
    /// Path of the data set, as given (or the name of data given in memory).
    pub csv: String,
    /// Name of the label column (empty for data given in memory).
    pub label: String,
    /// Rows the private statistics and DP-SGD use (the training part with a split; public: the
    /// sampling rate q = b / n uses it).
    pub n: usize,
    /// The train/test split (None: every row is used).
    pub split: Option<crate::data::split::SplitSpec>,
    /// Rows held out for testing (0 without a split).
    pub n_test: usize,
    /// Number of features (columns other than the label).
    pub d: usize,
    /// The loss name as requested ("logistic" or "softmax").
    pub loss: String,
    /// `lipschitz`, `column <name>`, `file <path>` or `per_sample_norms` (values in memory).
    pub norms_source: String,
    /// Total privacy budget epsilon requested.
    pub epsilon: f64,
    /// Total delta requested.
    pub delta: f64,
    /// eps_RNMM = share x epsilon.
    pub rnmm_epsilon: f64,
    /// Fraction of epsilon spent on RNMM (the given one, or 0.3 / epsilon by default).
    pub share: f64,
    /// epsilon - eps_std - eps_RNMM, DP-SGD's budget.
    pub dpsgd_epsilon: f64,
    /// delta - delta_std, DP-SGD's delta.
    pub dpsgd_delta: f64,
    /// The released standardization (None without --standardize); its epsilon and delta are
    /// eps_std and delta_std.
    pub standardization: Option<PrivateStandardization>,
    /// The private range check (spent before RNMM).
    pub range_check: Option<RangeCheck>,
    /// eps_std + eps_check + eps_RNMM + eps_DP-SGD (basic composition): equals epsilon.
    pub total_epsilon: f64,
    /// delta_std + delta_DP-SGD: equals delta.
    pub total_delta: f64,
    /// Public lower end of the RNMM candidates (the first candidate).
    pub candidates_lo: f64,
    /// Public upper end of the RNMM candidates (the last candidate).
    pub candidates_hi: f64,
    /// Number of log-spaced candidates on [candidates_lo, candidates_hi].
    pub grid_size: usize,
    /// Base seed the mechanisms were run with.
    pub seed: u64,
    /// The recommended clip norm tau (the selected candidate).
    pub clip_norm: f64,
    /// Index j (from 0) of the selected candidate c_j = lo (hi / lo)^(j / (grid_size - 1)).
    pub candidate_index: usize,
    /// The selection is the largest candidate: the range may be too narrow.
    pub at_range_end: bool,
    /// DP-SGD iterations T the noise multiplier is calibrated for.
    pub steps: usize,
    /// Expected batch size b of DP-SGD's Poisson sampling.
    pub batch_size: f64,
    /// q = B / n.
    pub q: f64,
    /// z calibrated for (dpsgd_epsilon, delta) over `steps` steps at rate q.
    pub noise_multiplier: f64,
    /// The accountant whose number z is: "rdp", "pld", or "rdp (fallback of pld)".
    pub accountant: String,
}

/// The private check that RNMM's public candidate range [lo, hi] covers the data, so that a
/// range that misses every G_i (raw features against the standardized default range) is reported
/// instead of selecting pure noise.
#[derive(Debug, Clone, Serialize)]
pub struct RangeCheck {
    /// epsilon of the Laplace count (pure DP).
    pub epsilon: f64,
    /// #{i : G_i < lo or G_i > hi} + Lap(1 / epsilon): a DP output.
    pub noisy_outside: f64,
    /// Rows counted (public).
    pub n: usize,
}

impl RangeCheck {
    /// The noisy count says most G_i lie outside [lo, hi]: noisy_outside > n / 2.
    pub fn misses(&self) -> bool {
        self.noisy_outside > self.n as f64 / 2.0
    }
}

/// The Laplace mechanism on c = #{i : G_i < lo or G_i > hi}: c + Lap(1 / epsilon) is pure
/// epsilon-DP (Dwork & Roth 2014, Theorem 3.6), since adding or removing one row changes c by
/// at most 1 (each G_i depends on its own row only; with standardization, on the row and the
/// already released public parameters). Lap(b) is drawn by inversion: -b sgn(u) ln(1 - 2|u|)
/// with u uniform on (-1/2, 1/2).
pub fn range_check(
    g: &[f64],
    lo: f64,
    hi: f64,
    epsilon: f64,
    rng: &mut crate::rng::SimRng,
) -> Result<RangeCheck> {
    check_positive("--check-epsilon", epsilon)?;
    let count = g.iter().filter(|&&v| v < lo || v > hi).count() as f64;
    let u: f64 = rand::RngExt::random::<f64>(rng) - 0.5;
    let noise = -u.signum() * (1.0 - 2.0 * u.abs()).max(f64::MIN_POSITIVE).ln() / epsilon;
    Ok(RangeCheck {
        epsilon,
        noisy_outside: count + noise,
        n: g.len(),
    })
}

/// Splits per-row values with the same seeded shuffle [`CsvSpec::load_split`] uses (the
/// shuffle depends only on the row count and the seed), keeping the training part.
fn training_part(values: Vec<f64>, split: &crate::data::split::SplitSpec) -> Result<Vec<f64>> {
    let n = values.len();
    let all = Dataset::new(vec![0.0; n], values, 1)?;
    let (train, _) = all.train_test_split(
        split.test_fraction,
        &mut stream(split.seed, 0, crate::rng::Purpose::Split),
    )?;
    Ok(train.y)
}

/// Reads one finite value per line (blank lines and `#` comments skipped; a non-numeric first
/// line is a header).
fn read_norms_file(path: &Path) -> Result<Vec<f64>> {
    Ok(read_rows(path, 1)?.into_iter().map(|v| v[0]).collect())
}

/// Reads a file of numeric lines, each with `width` comma-separated values (blank lines and `#`
/// comments skipped; a non-numeric first line is a header).
fn read_rows(path: &Path, width: usize) -> Result<Vec<Vec<f64>>> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(&name, e))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let vals: std::result::Result<Vec<f64>, _> =
            t.split(',').map(|f| f.trim().parse::<f64>()).collect();
        match vals {
            Ok(v) if v.len() == width && v.iter().all(|x| x.is_finite()) => out.push(v),
            Err(_) if out.is_empty() && i == 0 => {}
            _ => {
                let wanted = if width == 1 {
                    "a number (one finite value per line)".to_string()
                } else {
                    format!("{width} finite comma-separated numbers")
                };
                return Err(Error::data(format!(
                    "{name}, line {}: '{t}' is not {wanted}",
                    i + 1
                )));
            }
        }
    }
    Ok(out)
}

/// The standardization source of `req` for data with `d` features, and the share of
/// (epsilon, delta) it takes.
fn std_source(req: &AdviceRequest, d: usize) -> Result<(StdSource, f64)> {
    if let Some(p) = &req.public_scales {
        let (rows, what) = p.rows("--public-scales", 2)?;
        if rows.len() != d {
            return Err(Error::data(format!(
                "{what} has {} 'mean,scale' lines but the data have d = {d} features",
                rows.len()
            )));
        }
        let st = crate::data::split::Standardizer {
            mean: rows.iter().map(|r| r[0]).collect(),
            std: rows.iter().map(|r| r[1]).collect(),
        };
        return Ok((StdSource::Public(st), 0.0));
    }
    let share = match req.std_share {
        Some(s) => check_open("--std-share", s, 0.0, 1.0)?,
        None => DEFAULT_STD_SHARE,
    };
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
    Ok((
        StdSource::Private {
            epsilon: share * req.epsilon,
            delta: share * req.delta,
            bounds,
        },
        share,
    ))
}

/// G_i = G(x_i, y_i) of the multinomial logistic loss (Appendix D) on `data` as given (already
/// standardized when the recommendation standardizes).
pub fn logistic_lipschitz(data: &Dataset) -> Result<Vec<f64>> {
    let loss = LossSpec::Logistic { classes: None }.build(data)?;
    loss.check_data(data)?;
    lipschitz_constants(loss.as_ref(), data)
}

/// The recommendation for `req`.
pub fn recommend(req: &AdviceRequest) -> Result<ClipNormAdvice> {
    check_positive("--epsilon", req.epsilon)?;
    check_open("--delta", req.delta, 0.0, 1.0)?;
    if !matches!(req.loss.as_str(), "logistic" | "softmax") {
        return Err(Error::param(format!(
            "--loss must be logistic or softmax (the multinomial logistic loss), but is '{}'",
            req.loss
        )));
    }
    let share = match req.share {
        Some(s) => check_open("--share", s, 0.0, 1.0)?,
        None if req.epsilon > DEFAULT_RNMM_EPSILON => DEFAULT_RNMM_EPSILON / req.epsilon,
        None => {
            return Err(Error::param(format!(
                "--epsilon {} leaves nothing for DP-SGD after the default RNMM budget \
                 {DEFAULT_RNMM_EPSILON}; give --share (a fraction of epsilon in (0, 1))",
                req.epsilon
            )));
        }
    };
    if req.grid_size < 2 {
        return Err(Error::param(format!(
            "--grid-size must be >= 2, but is {}",
            req.grid_size
        )));
    }
    // RNMM's own memory check, before any mechanism spends budget.
    crate::limits::check_memory(
        &format!("RNMM grid_size = {}", req.grid_size),
        24.0 * req.grid_size as f64,
    )?;
    let (csv, label) = match &req.data {
        AdviceData::Csv { path, label } => (path.display().to_string(), label.clone()),
        AdviceData::Memory { name, .. } => (name.clone(), String::new()),
    };
    let split = match req.test_fraction {
        Some(f) => Some(crate::data::split::SplitSpec {
            test_fraction: check_open("--test-fraction", f, 0.0, 1.0)?,
            seed: req.split_seed,
        }),
        None => None,
    };
    // Every private statistic below uses the training part only: the test part stays unseen.
    let (mut data, test) = match &req.data {
        AdviceData::Csv { .. } => CsvSpec {
            path: csv.clone(),
            label: label.clone(),
            split: split.clone(),
            standardize: false,
        }
        .load_split()?,
        // The same seeded shuffle as `CsvSpec::load_split`.
        AdviceData::Memory { data, .. } => match &split {
            Some(s) => {
                let (a, b) =
                    data.train_test_split(s.test_fraction, &mut stream(s.seed, 0, Purpose::Split))?;
                (a, Some(b))
            }
            None => (data.clone(), None),
        },
    };
    let n_test = test.map_or(0, |t| t.n);
    // Every public parameter is checked before any mechanism runs (and spends budget).
    let n = data.n;
    let kind = crate::privacy::AccountantKind::parse(&req.accountant)?;
    let batch = req.batch_size.unwrap_or_else(|| default_batch(n));
    check_positive("--batch-size", batch)?;
    // An expected batch below one sample is no DP-SGD anyone runs, and its default T =
    // 30 n / B would overflow any count.
    if batch < 1.0 {
        return Err(Error::param(format!(
            "--batch-size {} must be >= 1 (the expected number of samples per step)",
            crate::error::fmt_num(batch)
        )));
    }
    if batch > n as f64 {
        return Err(Error::param(format!(
            "--batch-size {batch} exceeds the {n} rows of {csv}"
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
                        "T = {DEFAULT_EPOCHS} epochs x {per_epoch} steps does not fit in a count; give --steps"
                    ))
                })?
        }
    };
    if !req.standardize && (req.public_scales.is_some() || req.feature_bounds.is_some()) {
        return Err(Error::param(
            "--public-scales and --feature-bounds need --standardize",
        ));
    }
    let loss_spec = LossSpec::Logistic { classes: None };
    let form = loss_spec
        .lipschitz_form()
        .ok_or_else(|| Error::param("the loss has no closed-form G(x, y)"))?;
    // The candidate range must be public. For the loss's own G_i: G at x = 0 (no G_i is
    // smaller) up to 3 G at ||x||^2 = d (the mean of standardized features), as in the study.
    let (lo, hi) = match (&req.norms, req.lo, req.hi) {
        (_, Some(lo), Some(hi)) => (lo, hi),
        (NormsSource::Lipschitz, lo, hi) => (
            lo.unwrap_or_else(|| form.eval(&vec![0.0; data.d], 0.0)),
            hi.unwrap_or_else(|| 3.0 * form.eval(&vec![1.0; data.d], 0.0)),
        ),
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
    let check_epsilon = req.check_epsilon.unwrap_or(DEFAULT_CHECK_EPSILON);
    if check_epsilon != 0.0 {
        check_positive("--check-epsilon", check_epsilon)?;
    }
    // Standardization is released first (its own stream), then everything below runs on data
    // transformed by the released parameters: RNMM's utility keeps sensitivity 1.
    let standardization = if req.standardize {
        let (source, _) = std_source(req, data.d)?;
        let ps = private_standardize(&data, &source, &mut stream(req.seed, 1, Purpose::Mechanism))?;
        ps.standardizer().apply(&mut data)?;
        Some(ps)
    } else {
        None
    };
    let (std_epsilon, std_delta) = standardization
        .as_ref()
        .map_or((0.0, 0.0), |s| (s.epsilon, s.delta));
    // One value per row of the data (before the split), of which the training part is kept.
    let per_row = |v: Vec<f64>, what: &str| -> Result<Vec<f64>> {
        let rows = n + n_test;
        if v.len() != rows {
            return Err(Error::data(format!(
                "{what} has {} values but {csv} has {rows} rows; give one norm per row",
                v.len()
            )));
        }
        match &split {
            Some(sp) => training_part(v, sp),
            None => Ok(v),
        }
    };
    let (g, source) = match &req.norms {
        NormsSource::Lipschitz => (logistic_lipschitz(&data)?, "lipschitz".to_string()),
        NormsSource::Column(c) => {
            if !matches!(req.data, AdviceData::Csv { .. }) {
                return Err(Error::param(format!(
                    "--norms-column '{c}' names a CSV column, but the data are not a CSV"
                )));
            }
            if c == &label {
                return Err(Error::param(format!(
                    "--norms-column '{c}' is the label column; name the column of per-sample norms"
                )));
            }
            let col = CsvSpec {
                split: split.clone(),
                ..CsvSpec::new(csv.clone(), c.clone())
            }
            .load()
            .map_err(|e| Error::data(format!("--norms-column '{c}': {e}")))?;
            (col.y, format!("column {c}"))
        }
        NormsSource::File(p) => (
            per_row(read_norms_file(p)?, &format!("--norms {}", p.display()))?,
            format!("file {}", p.display()),
        ),
        NormsSource::Values(v) => (
            per_row(v.clone(), "per_sample_norms")?,
            "per_sample_norms".to_string(),
        ),
    };
    if let Some((i, v)) = g
        .iter()
        .enumerate()
        .find(|(_, v)| !(v.is_finite() && **v >= 0.0))
    {
        return Err(Error::data(format!(
            "per-sample norm of row {} is {v}; norms must be finite and >= 0",
            i + 1
        )));
    }
    // The range check runs before RNMM, so a range that misses the data stops the command
    // before the selection is released.
    let range_check = if check_epsilon == 0.0 {
        None
    } else {
        let rc = range_check(
            &g,
            lo,
            hi,
            check_epsilon,
            &mut stream(req.seed, 2, Purpose::Mechanism),
        )?;
        if rc.misses() {
            let noisy_std = standardization
                .as_ref()
                .map(|s| s.relative_noise())
                .filter(|r| *r > crate::privacy::standardize::NOISY_WARNING);
            let fix = match (&req.norms, noisy_std) {
                (NormsSource::Lipschitz, _) if !req.standardize => {
                    "standardize the features (drop --no-standardize), or give --lo and --hi \
                     that cover the G_i"
                        .to_string()
                }
                (_, Some(r)) => format!(
                    "the private standardization is mostly noise at this budget (noise sd / \
                     noisy count = {r:.2}): give --public-scales or --feature-bounds, or raise \
                     --std-share or --epsilon"
                ),
                _ => "give --lo and --hi that cover the per-sample values".to_string(),
            };
            return Err(Error::param(format!(
                "the candidate range [{lo:.4}, {hi:.4}] misses the data: a private count \
                 (eps = {}) puts about {:.0} of the {} values outside it, so RNMM would select \
                 noise; {fix}",
                crate::error::fmt_num(check_epsilon),
                rc.noisy_outside.max(0.0),
                rc.n
            )));
        }
        Some(rc)
    };
    let check_eps = range_check.as_ref().map_or(0.0, |c| c.epsilon);
    let rnmm_epsilon = share * req.epsilon;
    let rc = RnmmConfig {
        epsilon: rnmm_epsilon,
        lo,
        hi,
        grid_size: req.grid_size,
        target_count: 1,
    };
    let sel = private_min_lipschitz(&g, &rc, &mut stream(req.seed, 0, Purpose::Mechanism))?;
    let q = batch / n as f64;
    // Basic composition (Dwork & Roth 2014, Theorem 3.16): standardization (eps_std, delta_std),
    // range check (eps_check, 0), RNMM (eps_RNMM, 0), DP-SGD (the rest).
    let dpsgd_epsilon = req.epsilon - std_epsilon - check_eps - rnmm_epsilon;
    let dpsgd_delta = req.delta - std_delta;
    if !(dpsgd_epsilon > 0.0 && dpsgd_delta > 0.0) {
        return Err(Error::param(format!(
            "--epsilon {} leaves {dpsgd_epsilon} for DP-SGD after standardization ({std_epsilon}), \
             the range check ({check_eps}) and RNMM ({rnmm_epsilon}); lower --std-share, \
             --check-epsilon or --share",
            req.epsilon
        )));
    }
    // The calibration names the accountant whose number it is (RDP where the PLD fell back).
    let calibration =
        crate::privacy::calibrate::calibrate(kind, q, steps, dpsgd_epsilon, dpsgd_delta)?;
    let z = calibration.z;
    // The calibration stops searching below z = 1e-6 (`calibrate_noise`) and returns the end of
    // its bracket: a z this small means the budget is met by no noise worth the name, and would
    // print as z = 0.0000.
    if !(z.is_finite() && z >= MIN_NOISE_MULTIPLIER) {
        return Err(Error::param(format!(
            "--epsilon {} is out of the accountant's range: DP-SGD's share {} is met by z = {} \
             (no noise worth the name); lower --epsilon",
            crate::error::fmt_num(req.epsilon),
            crate::error::fmt_num(dpsgd_epsilon),
            crate::error::fmt_num(z)
        )));
    }
    Ok(ClipNormAdvice {
        csv,
        label,
        n,
        split,
        n_test,
        d: data.d,
        loss: req.loss.clone(),
        norms_source: source,
        epsilon: req.epsilon,
        delta: req.delta,
        rnmm_epsilon,
        share,
        dpsgd_epsilon,
        dpsgd_delta,
        standardization,
        range_check,
        total_epsilon: std_epsilon + check_eps + rnmm_epsilon + dpsgd_epsilon,
        total_delta: std_delta + dpsgd_delta,
        candidates_lo: lo,
        candidates_hi: hi,
        grid_size: req.grid_size,
        seed: req.seed,
        clip_norm: sel.value,
        candidate_index: sel.index,
        at_range_end: sel.index + 1 == req.grid_size,
        steps,
        batch_size: batch,
        q,
        noise_multiplier: z,
        accountant: calibration.achieved.label(),
    })
}
