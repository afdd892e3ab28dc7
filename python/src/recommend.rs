//! `recommend_clip_norm`: `dpsgd-lab clipnorm recommend` on arrays, with the CLI's names and
//! defaults: the arguments become the library's [`AdviceRequest`] and
//! [`dpsgd::clipnorm::recommend::recommend`] does the work, as for the CLI (same checks, same
//! refusals, same randomness (the OS's by default, seeded with reproducible=True), same budget
//! split).

use pyo3::prelude::*;

use dpsgd::clipnorm::recommend::{AdviceData, AdviceRequest, NormsSource, PublicValues, recommend};
use dpsgd::data::Dataset;
use dpsgd::privacy::standardize::NOISY_WARNING;

use crate::{check_array_memory, copies, dataset, err, matrix, to_py, value_error, vector};

/// recommend_clip_norm(X=None, y=None, *, epsilon, delta=1e-5, per_sample_norms=None,
///                     loss="logistic", share=None, steps=None, batch_size=None, lo=None,
///                     hi=None, grid_size=200, accountant="rdp", seed=0, standardize=True,
///                     std_share=None, feature_bounds=None, public_scales=None,
///                     test_fraction=None, split_seed=None, epochs=None, check_epsilon=None,
///                     feature_ranges=None, ledger=None, learning_rate=None,
///                     reproducible=False)
///
/// `dpsgd-lab clipnorm recommend` on arrays, with its flags' names and defaults: tau = G_1 =
/// min_i G_i (Remark 5.6) selected privately by RNMM (Section 5.2, Table 3) with `share` of
/// epsilon (default eps_RNMM = 0.3) on the public range [lo, hi] (default for the loss's G_i
/// of X: G at x = 0 to 3 G at ||x||^2 = d), after a private range check (`check_epsilon`, a
/// Laplace count; 0 skips it) that refuses a range missing the data; DP-SGD's noise
/// multiplier is calibrated to the rest for `steps` (or `epochs`; default 30 epochs) at
/// `batch_size` (default min(500, n / 10)). With X, y the features are first standardized by
/// the CLI's private standardization (`std_share` of epsilon and delta, default 0.1; or
/// `public_scales` (d, 2) means and scales at no cost; `feature_bounds` public bounds on
/// |x_j|), unless standardize=False. `test_fraction` holds out rows (shuffled by `split_seed`,
/// default `seed`) that no private statistic sees. With `per_sample_norms` (one norm per
/// sample, e.g. measured gradient norms) instead of X, y, nothing is standardized and lo, hi
/// are required. Returns the CLI's `--json` object (less `csv` and `label`); its notes (e.g.
/// the largest candidate selected) are also issued as warnings; a refusal of the CLI raises
/// ValueError with its message. The mechanisms' noise comes from the operating system's random
/// source, so `seed` keys only the split; reproducible=True is the research mode (the noise
/// follows `seed`, "reproducible" is true in the result): NOT a private release.
#[pyfunction]
#[pyo3(signature = (x = None, y = None, *, epsilon, delta = 1e-5,
    per_sample_norms = None, loss = "logistic", share = None, steps = None, batch_size = None,
    lo = None, hi = None, grid_size = 200, accountant = "rdp", seed = 0,
    standardize = true, std_share = None, feature_bounds = None, public_scales = None,
    test_fraction = None, split_seed = None, epochs = None,
    check_epsilon = None, feature_ranges = None, ledger = None, learning_rate = None,
    reproducible = false))]
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
    test_fraction: Option<f64>,
    split_seed: Option<u64>,
    epochs: Option<f64>,
    check_epsilon: Option<f64>,
    feature_ranges: Option<&Bound<'py, PyAny>>,
    ledger: Option<String>,
    learning_rate: Option<f64>,
    reproducible: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let feature_ranges = pairs(py, feature_ranges, "feature_ranges", "min, max")?;
    let std_given = std_share.is_some()
        || feature_bounds.is_some()
        || public_scales.is_some()
        || feature_ranges.is_some();
    if std_share.is_some() && public_scales.is_some() {
        return Err(value_error(
            "give std_share or public_scales, not both (public scales cost nothing)",
        ));
    }
    let (data, norms, standardize) = match (x, y, per_sample_norms) {
        (Some(x), Some(y), None) => {
            if x.getattr("ndim")
                .is_ok_and(|n| n.extract::<usize>().is_ok_and(|n| n == 1))
            {
                return Err(value_error(
                    "X must be a 2-D array (n samples x d features); per-sample norms go in \
                     per_sample_norms=",
                ));
            }
            if !standardize && std_given {
                return Err(value_error(
                    "std_share, feature_bounds and public_scales need standardize=True",
                ));
            }
            check_array_memory(x, "X", copies::RECOMMEND_X)?;
            let data = AdviceData::Memory {
                data: dataset(py, x, y)?,
                name: "X".into(),
            };
            (data, NormsSource::Lipschitz, standardize)
        }
        (None, None, Some(g)) => {
            if std_given {
                return Err(value_error(
                    "std_share, feature_bounds and public_scales standardize X; with \
                     per_sample_norms there is nothing to standardize",
                ));
            }
            check_array_memory(g, "per_sample_norms", copies::RECOMMEND_NORMS)?;
            let g = vector(py, g, "per_sample_norms")?;
            if g.is_empty() {
                return Err(value_error(
                    "per_sample_norms is empty: give one norm per sample",
                ));
            }
            // The rows carry no features: one zero column stands in for them (d is reported
            // as None).
            let n = g.len();
            let rows = Dataset::new(vec![0.0; n], vec![0.0; n], 1).map_err(err)?;
            let data = AdviceData::Memory {
                data: rows,
                name: "per_sample_norms".into(),
            };
            (data, NormsSource::Values(g), false)
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
    let public_scales = pairs(py, public_scales, "public_scales", "mean, scale")?;
    let feature_bounds = match feature_bounds {
        Some(b) => Some(PublicValues::Rows(
            vector(py, b, "feature_bounds")?
                .into_iter()
                .map(|c| vec![c])
                .collect(),
        )),
        None => None,
    };
    let features = matches!(norms, NormsSource::Lipschitz);
    let req = AdviceRequest {
        data,
        loss: loss.to_string(),
        standardize,
        std_share,
        feature_bounds,
        public_scales,
        epsilon,
        delta,
        share,
        steps,
        batch_size,
        norms,
        lo,
        hi,
        grid_size,
        accountant: dpsgd::privacy::AccountantKind::parse(accountant).map_err(err)?,
        seed,
        reproducible,
        check_epsilon,
        test_fraction,
        split_seed: split_seed.unwrap_or(seed),
        epochs,
        feature_ranges,
        ledger: ledger.map(std::path::PathBuf::from),
        learning_rate,
    };
    let advice = py.detach(|| recommend(&req)).map_err(err)?;
    // The CLI's notes, as warnings.
    let mut notes = Vec::new();
    if reproducible {
        notes.push(format!(
            "reproducible=True: the mechanisms' noise follows seed {seed}, so anyone who knows \
             the seed can replay it: {}",
            dpsgd::rng::NOT_PRIVATE
        ));
    }
    if let Some(s) = advice
        .standardization
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
    if advice.at_range_end {
        notes.push(
            "the largest candidate was selected; the range may be too narrow for these data \
             (standardize the features, or raise hi)"
                .to_string(),
        );
    }
    let warnings = py.import("warnings")?;
    for n in notes {
        warnings.call_method1("warn", (n,))?;
    }
    let out = to_py(py, &advice)?;
    out.del_item("csv")?;
    out.del_item("label")?;
    if !features {
        out.set_item("d", py.None())?;
    }
    Ok(out)
}

/// A (d, 2) array of public per-feature pairs (`what` names the columns) as rows, or None.
fn pairs<'py>(
    py: Python<'py>,
    a: Option<&Bound<'py, PyAny>>,
    name: &str,
    what: &str,
) -> PyResult<Option<PublicValues>> {
    let Some(a) = a else { return Ok(None) };
    let (v, rows, cols) = matrix(py, a, name)?;
    if cols != 2 {
        return Err(value_error(format!(
            "{name} must have shape (d, 2) ({what} per feature), but has ({rows}, {cols})"
        )));
    }
    Ok(Some(PublicValues::Rows(
        v.chunks(2).map(<[f64]>::to_vec).collect(),
    )))
}
