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
}

/// The inputs of `clipnorm recommend`: the data, the total budget, and the public choices of the
/// mechanisms (candidate range, steps, batch size, accountant, seed).
#[derive(Debug, Clone)]
pub struct AdviceRequest {
    /// The private data set: a CSV with a header row and numeric columns.
    pub csv: PathBuf,
    /// Name of the label column (class indices 0..m-1); every other column is a feature.
    pub label: String,
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
    pub feature_bounds: Option<PathBuf>,
    /// File of public per-feature "mean,scale" lines: standardization at no privacy cost.
    pub public_scales: Option<PathBuf>,
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
    /// Base seed of the mechanisms' randomness (RNMM and the private standardization); the same
    /// seed gives the same recommendation.
    pub seed: u64,
}

/// The recommendation (every field a public value or a DP output; no raw statistic of the
/// data such as the true G_1 is reported).
#[derive(Debug, Clone, Serialize)]
pub struct ClipNormAdvice {
    /// Path of the data set, as given.
    pub csv: String,
    /// Name of the label column.
    pub label: String,
    /// Rows of the data set (public: the sampling rate q = b / n uses it).
    pub n: usize,
    /// Number of features (columns other than the label).
    pub d: usize,
    /// The loss name as requested ("logistic" or "softmax").
    pub loss: String,
    /// `lipschitz`, `column <name>` or `file <path>`.
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
    /// eps_std + eps_RNMM + eps_DP-SGD (basic composition): equals epsilon.
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
        let rows = read_rows(p, 2)?;
        if rows.len() != d {
            return Err(Error::data(format!(
                "--public-scales {} has {} 'mean,scale' lines but the data have d = {d} features",
                p.display(),
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
            let rows = read_rows(p, 1)?;
            if rows.len() != d {
                return Err(Error::data(format!(
                    "--feature-bounds {} has {} values but the data have d = {d} features",
                    p.display(),
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
    let csv = req.csv.display().to_string();
    let spec = CsvSpec {
        path: csv.clone(),
        label: req.label.clone(),
        split: None,
        standardize: false,
    };
    let mut data = spec.load()?;
    if !req.standardize && (req.public_scales.is_some() || req.feature_bounds.is_some()) {
        return Err(Error::param(
            "--public-scales and --feature-bounds need --standardize",
        ));
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
    let loss_spec = LossSpec::Logistic { classes: None };
    let form = loss_spec
        .lipschitz_form()
        .ok_or_else(|| Error::param("the loss has no closed-form G(x, y)"))?;
    let n = data.n;
    let (g, source) = match &req.norms {
        NormsSource::Lipschitz => (logistic_lipschitz(&data)?, "lipschitz".to_string()),
        NormsSource::Column(c) => {
            if c == &req.label {
                return Err(Error::param(format!(
                    "--norms-column '{c}' is the label column; name the column of per-sample norms"
                )));
            }
            let col = CsvSpec::new(csv.clone(), c.clone())
                .load()
                .map_err(|e| Error::data(format!("--norms-column '{c}': {e}")))?;
            (col.y, format!("column {c}"))
        }
        NormsSource::File(p) => {
            let v = read_norms_file(p)?;
            if v.len() != n {
                return Err(Error::data(format!(
                    "--norms {} has {} values but {csv} has {n} rows; give one norm per row",
                    p.display(),
                    v.len()
                )));
            }
            (v, format!("file {}", p.display()))
        }
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
    let rnmm_epsilon = share * req.epsilon;
    let rc = RnmmConfig {
        epsilon: rnmm_epsilon,
        lo,
        hi,
        grid_size: req.grid_size,
        target_count: 1,
    };
    let sel = private_min_lipschitz(&g, &rc, &mut stream(req.seed, 0, Purpose::Mechanism))?;
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
    let steps = match req.steps {
        Some(0) => return Err(Error::param("--steps must be >= 1")),
        Some(t) => t,
        None => {
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
    let q = batch / n as f64;
    // Basic composition (Dwork & Roth 2014, Theorem 3.16): standardization (eps_std, delta_std),
    // RNMM (eps_RNMM, 0), DP-SGD (eps - eps_std - eps_RNMM, delta - delta_std).
    let dpsgd_epsilon = req.epsilon - std_epsilon - rnmm_epsilon;
    let dpsgd_delta = req.delta - std_delta;
    if !(dpsgd_epsilon > 0.0 && dpsgd_delta > 0.0) {
        return Err(Error::param(format!(
            "--epsilon {} leaves {dpsgd_epsilon} for DP-SGD after standardization ({std_epsilon}) \
             and RNMM ({rnmm_epsilon}); lower --std-share or --share",
            req.epsilon
        )));
    }
    // The calibration names the accountant whose number it is (RDP where the PLD fell back).
    let calibration = crate::privacy::calibrate::calibrate(
        crate::privacy::AccountantKind::parse(&req.accountant)?,
        q,
        steps,
        dpsgd_epsilon,
        dpsgd_delta,
    )?;
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
        label: req.label.clone(),
        n,
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
        total_epsilon: std_epsilon + rnmm_epsilon + dpsgd_epsilon,
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
