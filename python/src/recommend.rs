//! `recommend_clip_norm`: `dpsgd-lab clipnorm recommend` on arrays, with the CLI's names and
//! defaults, built from the library's public pieces in the CLI's order (private
//! standardization, G_i of the loss, RNMM, calibration), with the same random streams.

use pyo3::prelude::*;

use dpsgd::clipnorm::default_batch;
use dpsgd::clipnorm::recommend::{
    DEFAULT_EPOCHS, DEFAULT_RNMM_EPSILON, MIN_NOISE_MULTIPLIER, logistic_lipschitz,
};
use dpsgd::data::split::Standardizer;
use dpsgd::error::{Error, Result, check_open, check_positive, fmt_num};
use dpsgd::loss::LossSpec;
use dpsgd::privacy::standardize::{
    DEFAULT_STD_SHARE, NOISY_WARNING, StdSource, private_standardize,
};
use dpsgd::privacy::{AccountantKind, RnmmConfig, calibrate, private_min_lipschitz};
use dpsgd::rng::{Purpose, stream};

use crate::{dataset, err, matrix, to_py, value_error, vector};

/// The public choices of one recommendation, as the CLI's flags name them.
struct Choices {
    epsilon: f64,
    delta: f64,
    share: Option<f64>,
    steps: Option<usize>,
    batch_size: Option<f64>,
    lo: Option<f64>,
    hi: Option<f64>,
    grid_size: usize,
    accountant: String,
    seed: u64,
}

/// How the features are standardized before G_i is computed (`clipnorm recommend
/// --standardize`, the default here): privately with `std_share` of (epsilon, delta) and
/// optional public bounds C_j on |x_j|, or with public means and scales at no cost.
struct Standardize {
    std_share: Option<f64>,
    feature_bounds: Option<Vec<f64>>,
    public_scales: Option<Standardizer>,
}

/// Where the G_i come from: the loss's G(x_i, y_i) on the (standardized) data, or the user's
/// per-sample norms.
enum Norms {
    Data(dpsgd::data::Dataset, Option<Standardize>),
    Given(Vec<f64>),
}

/// The CLI's `recommend` (src/clipnorm/recommend.rs) on in-memory data: the same checks,
/// defaults, streams and basic composition (Dwork & Roth 2014, Thm 3.16), as a JSON object with
/// the CLI's `--json` keys (less `csv` and `label`).
fn recommend(c: &Choices, norms: Norms) -> Result<(serde_json::Value, Vec<String>)> {
    check_positive("epsilon", c.epsilon)?;
    check_open("delta", c.delta, 0.0, 1.0)?;
    let share = match c.share {
        Some(s) => check_open("share", s, 0.0, 1.0)?,
        None if c.epsilon > DEFAULT_RNMM_EPSILON => DEFAULT_RNMM_EPSILON / c.epsilon,
        None => {
            return Err(Error::param(format!(
                "epsilon = {} leaves nothing for DP-SGD after the default RNMM budget \
                 {DEFAULT_RNMM_EPSILON}; give share (a fraction of epsilon in (0, 1))",
                fmt_num(c.epsilon)
            )));
        }
    };
    if c.grid_size < 2 {
        return Err(Error::param(format!(
            "grid_size must be >= 2, but is {}",
            c.grid_size
        )));
    }
    let mut notes = Vec::new();
    let (g, n, d, standardization, source) = match norms {
        Norms::Data(mut data, std) => {
            // Released first (stream 1), then everything runs on the transformed data.
            let ps = match std {
                Some(s) => {
                    let source = match s.public_scales {
                        Some(st) => StdSource::Public(st),
                        None => {
                            let f = match s.std_share {
                                Some(f) => check_open("std_share", f, 0.0, 1.0)?,
                                None => DEFAULT_STD_SHARE,
                            };
                            StdSource::Private {
                                epsilon: f * c.epsilon,
                                delta: f * c.delta,
                                bounds: s.feature_bounds,
                            }
                        }
                    };
                    let ps = private_standardize(
                        &data,
                        &source,
                        &mut stream(c.seed, 1, Purpose::Mechanism),
                    )?;
                    ps.standardizer().apply(&mut data)?;
                    Some(ps)
                }
                None => None,
            };
            let g = logistic_lipschitz(&data)?;
            (g, data.n, Some(data.d), ps, "lipschitz")
        }
        Norms::Given(g) => {
            if g.is_empty() {
                return Err(Error::data(
                    "per_sample_norms is empty: give one norm per sample",
                ));
            }
            let n = g.len();
            (g, n, None, None, "per_sample_norms")
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
    // The public candidate range, as the CLI fills it in for the loss's G_i: G at x = 0 (no
    // G_i is smaller) up to 3 G at ||x||^2 = d (the mean of standardized features).
    let (lo, hi) = match (d, c.lo, c.hi) {
        (_, Some(lo), Some(hi)) => (lo, hi),
        (Some(d), lo, hi) => {
            let form = LossSpec::Logistic { classes: None }
                .lipschitz_form()
                .ok_or_else(|| Error::param("the loss has no closed-form G(x, y)"))?;
            (
                lo.unwrap_or_else(|| form.eval(&vec![0.0; d], 0.0)),
                hi.unwrap_or_else(|| 3.0 * form.eval(&vec![1.0; d], 0.0)),
            )
        }
        (None, _, _) => {
            return Err(Error::param(
                "with per_sample_norms the public candidate range is unknown: give lo and hi \
                 (data-independent bounds on the norms)",
            ));
        }
    };
    let rnmm_epsilon = share * c.epsilon;
    let rc = RnmmConfig {
        epsilon: rnmm_epsilon,
        lo,
        hi,
        grid_size: c.grid_size,
        target_count: 1,
    };
    let sel = private_min_lipschitz(&g, &rc, &mut stream(c.seed, 0, Purpose::Mechanism))?;
    let batch = check_positive(
        "batch_size",
        c.batch_size.unwrap_or_else(|| default_batch(n)),
    )?;
    if !(1.0..=n as f64).contains(&batch) {
        return Err(Error::param(format!(
            "batch_size = {} must be in [1, n = {n}] (the expected number of samples per step)",
            fmt_num(batch)
        )));
    }
    let steps = match c.steps {
        Some(0) => return Err(Error::param("steps must be >= 1")),
        Some(t) => t,
        // 30 epochs of round(n / B) steps, as the CLI (B >= 1, so this fits).
        None => DEFAULT_EPOCHS * ((n as f64 / batch).round() as usize).max(1),
    };
    let q = batch / n as f64;
    let (std_epsilon, std_delta) = standardization
        .as_ref()
        .map_or((0.0, 0.0), |s| (s.epsilon, s.delta));
    let dpsgd_epsilon = c.epsilon - std_epsilon - rnmm_epsilon;
    let dpsgd_delta = c.delta - std_delta;
    if !(dpsgd_epsilon > 0.0 && dpsgd_delta > 0.0) {
        return Err(Error::param(format!(
            "epsilon = {} leaves {dpsgd_epsilon} for DP-SGD after standardization \
             ({std_epsilon}) and RNMM ({rnmm_epsilon}); lower std_share or share",
            fmt_num(c.epsilon)
        )));
    }
    let cal = calibrate(
        AccountantKind::parse(&c.accountant)?,
        q,
        steps,
        dpsgd_epsilon,
        dpsgd_delta,
    )?;
    let z = cal.z;
    if !(z.is_finite() && z >= MIN_NOISE_MULTIPLIER) {
        return Err(Error::param(format!(
            "epsilon = {} is out of the accountant's range: DP-SGD's share {} is met by z = {} \
             (no noise worth the name); lower epsilon",
            fmt_num(c.epsilon),
            fmt_num(dpsgd_epsilon),
            fmt_num(z)
        )));
    }
    if let Some(s) = standardization
        .as_ref()
        .filter(|s| s.relative_noise() > NOISY_WARNING)
    {
        notes.push(format!(
            "the private means and scales are mostly noise here (noise sd / noisy count = \
             {:.2} of each feature's bound); give public_scales or feature_bounds, or raise \
             std_share",
            s.relative_noise()
        ));
    }
    let at_range_end = sel.index + 1 == c.grid_size;
    if at_range_end {
        notes.push(
            "the largest candidate was selected; the range may be too narrow for these data \
             (standardize the features, or raise hi)"
                .into(),
        );
    }
    let json = serde_json::json!({
        "n": n,
        "d": d,
        "loss": "logistic",
        "norms_source": source,
        "epsilon": c.epsilon,
        "delta": c.delta,
        "rnmm_epsilon": rnmm_epsilon,
        "share": share,
        "dpsgd_epsilon": dpsgd_epsilon,
        "dpsgd_delta": dpsgd_delta,
        "standardization": standardization.clone(),
        "total_epsilon": std_epsilon + rnmm_epsilon + dpsgd_epsilon,
        "total_delta": std_delta + dpsgd_delta,
        "candidates_lo": lo,
        "candidates_hi": hi,
        "grid_size": c.grid_size,
        "seed": c.seed,
        "clip_norm": sel.value,
        "candidate_index": sel.index,
        "at_range_end": at_range_end,
        "steps": steps,
        "batch_size": batch,
        "q": q,
        "noise_multiplier": z,
        "accountant": cal.achieved.label(),
    });
    Ok((json, notes))
}

/// recommend_clip_norm(X=None, y=None, *, epsilon, delta=1e-5, per_sample_norms=None,
///                     loss="logistic", share=None, steps=None, batch_size=None, lo=None,
///                     hi=None, grid_size=200, accountant="rdp", seed=0, standardize=True,
///                     std_share=None, feature_bounds=None, public_scales=None)
///
/// `dpsgd-lab clipnorm recommend` on arrays, with its flags' names and defaults: tau = G_1 =
/// min_i G_i (Remark 5.6) selected privately by RNMM (Section 5.2, Table 3) with `share` of
/// epsilon (default eps_RNMM = 0.3) on the public range [lo, hi] (default for the loss's G_i
/// of X: G at x = 0 to 3 G at ||x||^2 = d), then DP-SGD's noise multiplier calibrated to the
/// rest for `steps` steps (default 30 epochs) at `batch_size` (default min(500, n / 10)).
/// With X, y the features are first standardized by the CLI's private standardization
/// (`std_share` of epsilon and delta, default 0.1; or `public_scales` (d, 2) means and scales
/// at no cost; `feature_bounds` public bounds on |x_j|), unless standardize=False. With
/// `per_sample_norms` (one norm per sample, e.g. measured gradient norms) instead of X, y,
/// nothing is standardized and lo, hi are required. Returns the CLI's `--json` object; its
/// notes (e.g. the largest candidate selected) are also issued as warnings.
#[pyfunction]
#[pyo3(signature = (x = None, y = None, *, epsilon, delta = 1e-5,
    per_sample_norms = None, loss = "logistic", share = None, steps = None, batch_size = None,
    lo = None, hi = None, grid_size = 200, accountant = "rdp", seed = 0,
    standardize = true, std_share = None, feature_bounds = None, public_scales = None))]
#[allow(clippy::too_many_arguments)]
pub fn recommend_clip_norm<'py>(
    py: Python<'py>,
    x: Option<&Bound<'py, PyAny>>,
    y: Option<&Bound<'py, PyAny>>,
    epsilon: f64,
    delta: f64,
    per_sample_norms: Option<&Bound<'py, PyAny>>,
    loss: &str,
    share: Option<f64>,
    steps: Option<usize>,
    batch_size: Option<f64>,
    lo: Option<f64>,
    hi: Option<f64>,
    grid_size: usize,
    accountant: &str,
    seed: u64,
    standardize: bool,
    std_share: Option<f64>,
    feature_bounds: Option<&Bound<'py, PyAny>>,
    public_scales: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    if !matches!(loss, "logistic" | "softmax") {
        return Err(value_error(format!(
            "loss must be logistic or softmax (the multinomial logistic loss), but is '{loss}'"
        )));
    }
    let std_given = std_share.is_some() || feature_bounds.is_some() || public_scales.is_some();
    if std_share.is_some() && public_scales.is_some() {
        return Err(value_error(
            "give std_share or public_scales, not both (public scales cost nothing)",
        ));
    }
    let norms = match (x, y, per_sample_norms) {
        (Some(x), Some(y), None) => {
            if x.getattr("ndim")
                .is_ok_and(|n| n.extract::<usize>().is_ok_and(|n| n == 1))
            {
                return Err(value_error(
                    "X must be a 2-D array (n samples x d features); per-sample norms go in \
                     per_sample_norms=",
                ));
            }
            let data = dataset(py, x, y)?;
            let std = if standardize {
                let public_scales = match public_scales {
                    Some(p) => {
                        let (v, rows, cols) = matrix(py, p, "public_scales")?;
                        if cols != 2 {
                            return Err(value_error(format!(
                                "public_scales must have shape (d, 2) (mean, scale per \
                                 feature), but has ({rows}, {cols})"
                            )));
                        }
                        Some(Standardizer {
                            mean: v.iter().step_by(2).copied().collect(),
                            std: v.iter().skip(1).step_by(2).copied().collect(),
                        })
                    }
                    None => None,
                };
                let feature_bounds = match feature_bounds {
                    Some(b) => {
                        let b = vector(py, b, "feature_bounds")?;
                        if b.len() != data.d {
                            return Err(value_error(format!(
                                "feature_bounds has {} values but X has d = {} features",
                                b.len(),
                                data.d
                            )));
                        }
                        Some(b)
                    }
                    None => None,
                };
                Some(Standardize {
                    std_share,
                    feature_bounds,
                    public_scales,
                })
            } else if std_given {
                return Err(value_error(
                    "std_share, feature_bounds and public_scales need standardize=True",
                ));
            } else {
                None
            };
            Norms::Data(data, std)
        }
        (None, None, Some(g)) => {
            if std_given {
                return Err(value_error(
                    "std_share, feature_bounds and public_scales standardize X; with \
                     per_sample_norms there is nothing to standardize",
                ));
            }
            Norms::Given(vector(py, g, "per_sample_norms")?)
        }
        (None, None, None) => {
            return Err(value_error(
                "give the data as X, y (G_i of the loss), or per_sample_norms with lo and hi",
            ));
        }
        (_, _, Some(_)) => {
            return Err(value_error("give X, y or per_sample_norms, not both"));
        }
        _ => return Err(value_error("give both X and y, or neither")),
    };
    let choices = Choices {
        epsilon,
        delta,
        share,
        steps,
        batch_size,
        lo,
        hi,
        grid_size,
        accountant: accountant.to_string(),
        seed,
    };
    let (json, notes) = py.detach(|| recommend(&choices, norms)).map_err(err)?;
    let warnings = py.import("warnings")?;
    for n in notes {
        warnings.call_method1("warn", (n,))?;
    }
    let out = to_py(py, &json)?;
    out.set_item("loss", loss)?;
    Ok(out)
}
