//! The Python module `dpsgd_lab`: dpsgd-lab's accountants, the theorems' schedules and bounds,
//! the data generators, the Appendix L instance, the private clip norm and Algorithm 1, with
//! numpy arrays in and out. Every function calls the same library code as the `dpsgd-lab` CLI,
//! so results are bit for bit the CLI's; errors raise `ValueError` with the CLI's message; long
//! calls release the GIL.

mod audit;
mod config;
mod model;
mod recommend;
mod train;

use std::path::PathBuf;

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyList};

use dpsgd::data::Dataset;
use dpsgd::data::summary::LipschitzSummary;
use dpsgd::experiment::{self, RunOptions, Scale, Spec, report};
use dpsgd::loss::lipschitz_constants;
use dpsgd::lower_bound::AppendixLSpec;
use dpsgd::privacy::{self, AccountantKind, RdpAccountant, RnmmConfig};
use dpsgd::rng::{Purpose, ReleaseRng, stream};
use dpsgd::theory::phi::PhiInputs;
use dpsgd::theory::schedules::lower::hypothesis_warnings;
use dpsgd::theory::schedules::{TheoremId, TheoryParams, prescribe_listing_missing};

use config::{generator_spec, loss_or_logistic};

/// A library error as the CLI prints it (`error: {e:#}` without the prefix) as a ValueError,
/// with the CLI's flags named as this module's keywords (`--std-share` reads `std_share`).
fn err<E: Into<anyhow::Error>>(e: E) -> PyErr {
    let e: anyhow::Error = e.into();
    PyValueError::new_err(keyword_names(&format!("{e:#}").replace('\n', " ")))
}

/// `text` with every CLI flag `--name-part` written as the Python keyword `name_part`
/// (`--no-standardize` as `standardize=False`).
fn keyword_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("--") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let len = after
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
            .unwrap_or(after.len());
        let name = after[..len].trim_end_matches('-');
        if name.starts_with(|c: char| c.is_ascii_lowercase()) {
            match name.strip_prefix("no-") {
                Some(n) => out.push_str(&format!("{}=False", n.replace('-', "_"))),
                None => out.push_str(&name.replace('-', "_")),
            }
            rest = &after[name.len()..];
        } else {
            out.push_str("--");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// (q, T) from the CLI's two forms of a run's length: `sample_rate` and `steps`, or `epochs`,
/// `batch_size` and `n` (q = B / N, T = ceil(E N / B), as `privacy epsilon --epochs`).
fn run_shape(
    sample_rate: Option<f64>,
    steps: Option<usize>,
    epochs: Option<f64>,
    batch_size: Option<usize>,
    n: Option<usize>,
) -> PyResult<(f64, usize)> {
    match (sample_rate, steps, epochs, batch_size, n) {
        (Some(q), Some(t), None, None, None) => Ok((q, t)),
        (None, None, Some(e), Some(b), Some(n)) => privacy::steps_from_epochs(e, b, n).map_err(err),
        _ => Err(value_error(
            "give sample_rate and steps, or epochs, batch_size and n (q = batch_size / n, \
             steps = ceil(epochs n / batch_size))",
        )),
    }
}

/// The epochs form's inputs in a details dict, as the CLI's `--json` adds them.
fn add_epochs(o: &mut serde_json::Value, e: Option<f64>, b: Option<usize>, n: Option<usize>) {
    if let (Some(e), Some(b), Some(n)) = (e, b, n) {
        o["epochs"] = serde_json::json!(e);
        o["batch_size"] = serde_json::json!(b);
        o["n"] = serde_json::json!(n);
    }
}

/// The `phase` keyword's entries: the CLI's "q=Q,z=Z,steps=T" strings or (q, z, steps) tuples.
fn phases(list: &[Bound<'_, PyAny>]) -> PyResult<Vec<privacy::Phase>> {
    list.iter()
        .map(|p| {
            if let Ok(s) = p.extract::<String>() {
                s.parse::<privacy::Phase>().map_err(err)
            } else if let Ok((q, z, steps)) = p.extract::<(f64, f64, usize)>() {
                Ok(privacy::Phase { q, z, steps })
            } else {
                Err(value_error(format!(
                    "phase entries are \"q=Q,z=Z,steps=T\" strings or (q, z, steps) tuples, not {p}"
                )))
            }
        })
        .collect()
}

/// Refuses a Python sequence `x` (keyword `name`) of more than `cap` items before any is read
/// (their count is the work of the call).
fn check_len(x: &Bound<'_, PyAny>, name: &str, cap: usize) -> PyResult<()> {
    let len = x
        .len()
        .map_err(|_| value_error(format!("{name} must be a list")))?;
    if len > cap {
        return Err(value_error(format!(
            "{name} has {len} entries, more than the {cap} one account takes; give fewer"
        )));
    }
    Ok(())
}

/// A ValueError of this module's own, CLI flags named as keywords (see [`keyword_names`]).
fn value_error(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(keyword_names(&msg.into()))
}

/// Any serializable result as plain Python objects (dicts, lists, floats), through JSON as the
/// CLI's `--json` prints it.
fn to_py<'py, T: serde::Serialize>(py: Python<'py>, v: &T) -> PyResult<Bound<'py, PyAny>> {
    let s = serde_json::to_string(v).map_err(err)?;
    py.import("json")?.call_method1("loads", (s,))
}

/// Float64 copies of its input array that a call holds at once at its peak (the conversion,
/// the data set built from it, a split's, a transform's and a sort's working copies), for the
/// up-front memory check ([`check_array_memory`]). Measured as the peak resident memory over
/// the input's float64 size, on a broadcast view (which holds no memory of its own) of
/// 400000 x 50 (python/tests/test_limits.py): per_sample_lipschitz 1.07, describe 1.10, train
/// 1.14, predict and accuracy 1.06, private_min_lipschitz 2.02, recommend_clip_norm 5.16 with
/// X and y, 13.14 with per_sample_norms; each rounded up to the next integer and one more.
pub(crate) mod copies {
    /// A data set (X, y) as [`super::dataset`] builds it, for the calls that use it once.
    pub const DATASET: f64 = 2.0;
    /// private_min_lipschitz's G_i (the vector and its sorted copy).
    pub const RNMM: f64 = 3.0;
    /// recommend_clip_norm's X (its rows as read, the training part, the transformed copy).
    pub const RECOMMEND_X: f64 = 6.0;
    /// recommend_clip_norm's per_sample_norms (the values, the zero rows standing in for X,
    /// their training part, the split values and the sorted ones).
    pub const RECOMMEND_NORMS: f64 = 14.0;
}

/// Refuses, before anything is converted or copied, an array whose `copies` float64 copies
/// ([`copies`]) do not fit in memory ([`dpsgd::limits::check_memory`]): its element count is
/// read from its `size` (numpy arrays and their views, e.g. `np.broadcast_to`, which hold one
/// element for all). Array-likes without a `size` (lists) are already in memory as Python
/// objects larger than their copy.
pub(crate) fn check_array_memory(x: &Bound<'_, PyAny>, name: &str, copies: f64) -> PyResult<()> {
    let Some(elements) = x.getattr("size").ok().and_then(|s| s.extract::<f64>().ok()) else {
        return Ok(());
    };
    let shape = x.getattr("shape").map_or("?".into(), |s| s.to_string());
    dpsgd::limits::check_memory(&format!("{name} of shape {shape}"), 8.0 * copies * elements)
        .map_err(err)
}

/// Features as an (n, d) float64 matrix, row-major, from any array-like (any dtype, any strides).
fn matrix(py: Python<'_>, x: &Bound<'_, PyAny>, name: &str) -> PyResult<(Vec<f64>, usize, usize)> {
    check_array_memory(x, name, 1.0)?;
    let np = py.import("numpy")?;
    let kw = PyDict::new(py);
    kw.set_item("dtype", "float64")?;
    let a = np.call_method("asarray", (x,), Some(&kw))?;
    let a: PyReadonlyArray2<f64> = a.extract().map_err(|_| {
        value_error(format!(
            "{name} must be a 2-D array (n samples x d features), but has shape {}",
            a.getattr("shape").map_or("?".into(), |s| s.to_string())
        ))
    })?;
    let v = a.as_array();
    let (n, d) = v.dim();
    Ok((v.iter().copied().collect(), n, d))
}

/// A vector as float64 from any array-like.
fn vector(py: Python<'_>, x: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<f64>> {
    check_array_memory(x, name, 1.0)?;
    let np = py.import("numpy")?;
    let kw = PyDict::new(py);
    kw.set_item("dtype", "float64")?;
    let a = np.call_method("asarray", (x,), Some(&kw))?;
    let a: PyReadonlyArray1<f64> = a.extract().map_err(|_| {
        value_error(format!(
            "{name} must be a 1-D array, but has shape {}",
            a.getattr("shape").map_or("?".into(), |s| s.to_string())
        ))
    })?;
    Ok(a.as_array().iter().copied().collect())
}

/// (X, y) as a data set; checks finiteness and shapes as the CSV loader does.
fn dataset(py: Python<'_>, x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>) -> PyResult<Dataset> {
    check_array_memory(x, "X", copies::DATASET)?;
    let (xs, n, d) = matrix(py, x, "X")?;
    let ys = vector(py, y, "y")?;
    if ys.len() != n {
        return Err(value_error(format!(
            "data: dimension mismatch: X has {n} rows but y has {} entries",
            ys.len()
        )));
    }
    Dataset::new(xs, ys, d).map_err(err)
}

fn x_y<'py>(py: Python<'py>, data: &Dataset) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let x = Array2::from_shape_vec((data.n, data.d), data.x.clone())
        .map_err(err)?
        .into_pyarray(py)
        .into_any();
    let y = data.y.clone().into_pyarray(py).into_any();
    Ok((x, y))
}

/// epsilon(sample_rate=None, steps=None, noise_multiplier=None, delta=1e-5, accountant="rdp",
///         details=False, orders=None, epochs=None, batch_size=None, n=None, phase=None)
///
/// The epsilon spent by `steps` compositions of the Poisson-subsampled Gaussian mechanism with
/// sampling rate q (`sample_rate`, the CLI's `--sample-rate`) and noise multiplier z
/// (Algorithm 1), at `delta` (default 1e-5, as `train` and `clipnorm recommend`): RDP
/// (Mironov et al. 2019, with the conversion of Balle et al. 2020) or the PLD accountant
/// (Koskela et al.; Doroshenko et al. 2022). As the CLI: `epochs`, `batch_size` and `n` instead
/// of `sample_rate` and `steps` (q = B / N, T = ceil(E N / B)); or `phase`, a list of
/// "q=Q,z=Z,steps=T" strings or (q, z, steps) tuples composed in one account, instead of
/// `noise_multiplier` and the run's length. `orders` replaces the RDP accountant's Renyi
/// orders (default: dp_accounting's grid 1.1..10.9, 11..63, 128..1024). With `details=True`,
/// the dict `dpsgd-lab privacy epsilon --json` prints.
#[pyfunction]
#[pyo3(signature = (sample_rate = None, steps = None, noise_multiplier = None, delta = 1e-5,
    accountant = "rdp", details = false, orders = None, epochs = None, batch_size = None,
    n = None, phase = None))]
#[allow(clippy::too_many_arguments)]
fn epsilon<'py>(
    py: Python<'py>,
    sample_rate: Option<f64>,
    steps: Option<usize>,
    noise_multiplier: Option<f64>,
    delta: f64,
    accountant: &str,
    details: bool,
    orders: Option<Bound<'py, PyAny>>,
    epochs: Option<f64>,
    batch_size: Option<usize>,
    n: Option<usize>,
    phase: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let kind = AccountantKind::parse(accountant).map_err(err)?;
    let rdp = match (orders, kind) {
        (None, _) => RdpAccountant::default(),
        (Some(o), AccountantKind::Rdp) => {
            check_len(&o, "orders", dpsgd::limits::MAX_RDP_LIST)?;
            let o: Vec<f64> = o.extract()?;
            if o.is_empty() {
                return Err(value_error(
                    "orders must be a non-empty list of Renyi orders > 1, but is empty",
                ));
            }
            if let Some((i, a)) = o
                .iter()
                .enumerate()
                .find(|(_, a)| !(a.is_finite() && **a > 1.0))
            {
                return Err(value_error(format!(
                    "orders must be Renyi orders > 1, but orders[{i}] is {}",
                    dpsgd::error::fmt_num(*a)
                )));
            }
            RdpAccountant {
                orders: o,
                ..RdpAccountant::default()
            }
        }
        (Some(_), AccountantKind::Pld) => {
            return Err(value_error("orders apply to the rdp accountant only"));
        }
    };
    let run = match (phase, noise_multiplier) {
        (Some(p), None) if [sample_rate, epochs].iter().all(Option::is_none) => {
            check_len(&p, "phase", dpsgd::limits::MAX_RDP_LIST)?;
            phases(&p.extract::<Vec<Bound<'py, PyAny>>>()?)?
        }
        (Some(_), _) => {
            return Err(value_error(
                "phase replaces noise_multiplier and the run's length (sample_rate and steps, \
                 or epochs, batch_size and n): give one or the other",
            ));
        }
        (None, Some(z)) => {
            let (q, steps) = run_shape(sample_rate, steps, epochs, batch_size, n)?;
            vec![privacy::Phase { q, z, steps }]
        }
        (None, None) => return Err(value_error("give noise_multiplier (or phase)")),
    };
    // The RDP curve is computed for either accountant (the PLD's fallback and its claim).
    dpsgd::limits::check_rdp_work(&rdp.orders, run.len()).map_err(err)?;
    let r = py
        .detach(|| privacy::report::EpsilonReport::compute_phases(kind, &rdp, &run, delta))
        .map_err(err)?;
    if !details {
        return Ok(PyFloat::new(py, r.epsilon).into_any());
    }
    // The CLI's `privacy epsilon --json` object, built by the same code.
    let mut o = r.to_json();
    add_epochs(&mut o, epochs, batch_size, n);
    to_py(py, &o)
}

/// calibrate(sample_rate=None, steps=None, epsilon=None, delta=1e-5, accountant="rdp",
///           details=False, epochs=None, batch_size=None, n=None)
///
/// The smallest noise multiplier z whose `steps` Poisson-subsampled Gaussian steps at rate
/// q = `sample_rate` spend at most (epsilon, delta) by the accountant; as the CLI, `epochs`,
/// `batch_size` and `n` instead of `sample_rate` and `steps`. With `details=True`, the dict of
/// `dpsgd-lab privacy calibrate --json` (epsilon_achieved, nu_eff of Thm 3.4) without timing.
#[pyfunction]
#[pyo3(signature = (sample_rate = None, steps = None, epsilon = None, delta = 1e-5,
    accountant = "rdp", details = false, epochs = None, batch_size = None, n = None))]
#[allow(clippy::too_many_arguments)]
fn calibrate<'py>(
    py: Python<'py>,
    sample_rate: Option<f64>,
    steps: Option<usize>,
    epsilon: Option<f64>,
    delta: f64,
    accountant: &str,
    details: bool,
    epochs: Option<f64>,
    batch_size: Option<usize>,
    n: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let epsilon = epsilon.ok_or_else(|| value_error("give epsilon, the target epsilon > 0"))?;
    let (q, steps) = run_shape(sample_rate, steps, epochs, batch_size, n)?;
    let kind = AccountantKind::parse(accountant).map_err(err)?;
    let cal = py
        .detach(|| privacy::calibrate(kind, q, steps, epsilon, delta))
        .map_err(err)?;
    let z = cal.z;
    if !details {
        return Ok(PyFloat::new(py, z).into_any());
    }
    let achieved = cal.achieved.epsilon;
    let nu = privacy::nu_eff(z, q, steps, epsilon, delta).map_err(err)?;
    let mut o = serde_json::json!({
        "accountant": cal.achieved.label(),
        "rdp_fallback": cal.achieved.by != kind,
        "note": cal.achieved.note,
        "epsilon": epsilon,
        "epsilon_achieved": achieved,
        "delta": delta,
        "sample_rate": q,
        "steps": steps,
        "noise_multiplier": z,
        "nu_eff": nu,
    });
    add_epochs(&mut o, epochs, batch_size, n);
    to_py(py, &o)
}

/// nu_eff(noise_multiplier, sample_rate, steps, epsilon, delta=1e-5)
///
/// nu_eff = (z epsilon / (q sqrt(T log(1/delta))))^2: the constant nu of Thm 3.4 that a run
/// with noise multiplier z at sampling rate q actually has (so that phi of Eq. (1) can be
/// computed for it).
#[pyfunction]
#[pyo3(signature = (noise_multiplier, sample_rate, steps, epsilon, delta = 1e-5))]
fn nu_eff(
    noise_multiplier: f64,
    sample_rate: f64,
    steps: usize,
    epsilon: f64,
    delta: f64,
) -> PyResult<f64> {
    privacy::nu_eff(noise_multiplier, sample_rate, steps, epsilon, delta).map_err(err)
}

/// zcdp(epsilon, delta) -> (xi, rho)
///
/// Lemma L.2: an (epsilon, delta)-DP mechanism is (xi, rho)-zCDP (Bun and Steinke 2016,
/// Lemma 22).
#[pyfunction]
fn zcdp(epsilon: f64, delta: f64) -> PyResult<(f64, f64)> {
    privacy::zcdp::approx_dp_to_zcdp(epsilon, delta).map_err(err)
}

/// phi(n, d, epsilon, delta, nu)
///
/// Eq. (1): phi = sqrt(nu d log(1/delta)) / (n epsilon), the privacy-to-data ratio every rate
/// of the paper is stated in.
#[pyfunction]
fn phi(n: f64, d: f64, epsilon: f64, delta: f64, nu: f64) -> PyResult<f64> {
    dpsgd::theory::phi::phi(&PhiInputs {
        n,
        d,
        epsilon,
        delta,
        nu,
    })
    .map_err(err)
}

/// The keyword arguments of `schedule`, as the CLI's flags name them.
const SCHEDULE_KEYS: &[&str] = &[
    "phi", "n", "d", "epsilon", "delta", "nu", "k", "G", "gamma", "C", "dist0", "D_W", "D", "L",
    "f_gap", "G_n", "alpha", "Delta", "tau", "T", "c_lower",
];

/// schedule(theorem, **params)
///
/// A theorem's schedule (T, tau, eta), its explicit bound with the terms, the probability it
/// holds with and the predicted exponent of phi, exactly as `dpsgd-lab theory schedule --json`.
/// Give `phi` or all of n, d, epsilon, delta, nu (Eq. 1); the other parameters as the CLI's
/// flags: k (float or "inf"), G, gamma, C, dist0, D_W, D, L, f_gap, G_n, alpha, Delta, tau, T,
/// c_lower.
#[pyfunction]
#[pyo3(signature = (theorem, **params))]
fn schedule<'py>(
    py: Python<'py>,
    theorem: &str,
    params: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let mut vals = std::collections::BTreeMap::<String, f64>::new();
    if let Some(p) = params {
        for (k, v) in p.iter() {
            let key: String = k.extract()?;
            if !SCHEDULE_KEYS.contains(&key.as_str()) {
                return Err(value_error(format!(
                    "unknown parameter '{key}': use {}",
                    SCHEDULE_KEYS.join(", ")
                )));
            }
            if v.is_none() {
                continue;
            }
            let x: f64 = match v.extract::<String>() {
                Ok(s) => s
                    .trim()
                    .parse()
                    .map_err(|_| value_error(format!("{key} must be a number, but is '{s}'")))?,
                Err(_) => v
                    .extract()
                    .map_err(|_| value_error(format!("{key} must be a number, but is {v}")))?,
            };
            vals.insert(key, x);
        }
    }
    let g = |k: &str| vals.get(k).copied();
    let id: TheoremId = theorem.parse().map_err(err)?;
    let any_given = ["n", "d", "epsilon", "delta", "nu"]
        .iter()
        .any(|k| vals.contains_key(*k));
    let inputs = match (g("n"), g("d"), g("epsilon"), g("delta"), g("nu")) {
        (Some(n), Some(d), Some(epsilon), Some(delta), Some(nu)) => Some(PhiInputs {
            n,
            d,
            epsilon,
            delta,
            nu,
        }),
        _ => None,
    };
    let phi_v = match (g("phi"), inputs) {
        (Some(_), _) if any_given => {
            return Err(value_error(
                "give either --phi or all of --n --d --epsilon --delta --nu, not both",
            ));
        }
        (Some(v), None) => v,
        (None, Some(p)) => dpsgd::theory::phi::phi(&p).map_err(err)?,
        _ => {
            return Err(value_error(
                "phi is missing: give --phi, or all of --n --d --epsilon --delta --nu (Eq. 1)",
            ));
        }
    };
    // The keywords are the library's input names (TheoryParams::NAMES).
    let mut params = TheoryParams::default();
    for name in TheoryParams::NAMES {
        if let Some(slot) = params.slot(name) {
            *slot = g(name);
        }
    }
    let mut p = prescribe_listing_missing(id, phi_v, &params).map_err(err)?;
    if let Some(inp) = &inputs {
        p.notes.extend(hypothesis_warnings(id, inp));
    }
    let out = to_py(py, &p)?;
    out.set_item("phi_inputs", to_py(py, &inputs)?)?;
    Ok(out)
}

/// per_sample_lipschitz(X, y, loss="logistic")
///
/// The per-sample Lipschitz constants G_i = G(x_i, y_i) of Section 3 (the sup over w of
/// ||grad l(w; x_i, y_i)||; e.g. sqrt(2 (||x||^2 + 1)) for softmax), one per row of X.
#[pyfunction]
#[pyo3(signature = (x, y, loss = None))]
fn per_sample_lipschitz<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    loss: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let data = dataset(py, x, y)?;
    let spec = loss_or_logistic(py, loss)?;
    let g = py
        .detach(|| -> dpsgd::Result<Vec<f64>> {
            let loss = spec.build(&data)?;
            lipschitz_constants(loss.as_ref(), &data)
        })
        .map_err(err)?;
    Ok(g.into_pyarray(py))
}

/// describe(X, y, loss="logistic", k=2.0)
///
/// The spread of the G_i as `dpsgd-lab data describe` reports it: min, the percentiles
/// 0/10/20/40/80/100 (Section 5's clip norms), max, mean, G_Z^k = mean G_i^k (Assumption 6.1)
/// and a Hill estimate of the tail index.
#[pyfunction]
#[pyo3(signature = (x, y, loss = None, k = 2.0))]
fn describe<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    loss: Option<&Bound<'py, PyAny>>,
    k: f64,
) -> PyResult<Bound<'py, PyAny>> {
    let data = dataset(py, x, y)?;
    let spec = loss_or_logistic(py, loss)?;
    let s = py
        .detach(|| -> dpsgd::Result<LipschitzSummary> {
            let loss = spec.build(&data)?;
            let g = lipschitz_constants(loss.as_ref(), &data)?;
            LipschitzSummary::from_values(loss.name(), &data, &g, k)
        })
        .map_err(err)?;
    to_py(py, &s)
}

/// generate(spec, seed=None) -> (X, y)
///
/// Draws a synthetic data set from a generator spec (a dict with the TOML's keys n, d, radial,
/// direction, labels; or a TOML path, also a train config with a generated [data]); the same
/// data `dpsgd-lab data generate` and `train` (replicate 0) draw for this seed. The radial laws
/// are the heavy-tailed families of Section 6 (Assumption 6.1 with moment order k).
#[pyfunction]
#[pyo3(signature = (spec, seed = None))]
fn generate<'py>(
    py: Python<'py>,
    spec: &Bound<'py, PyAny>,
    seed: Option<u64>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let (spec, file_seed) = generator_spec(spec)?;
    let seed = seed.or(file_seed).unwrap_or(0);
    let data = py
        .detach(|| spec.generate(&mut stream(seed, 0, Purpose::Data)))
        .map_err(err)?;
    x_y(py, &data)
}

/// private_min_lipschitz(G, epsilon, lo, hi, seed=0, grid_size=200, target_count=1,
///                       reproducible=False)
///
/// The private minimum of the G_i (RNMM, Section 5.2, Table 3): Report Noisy Max with
/// Gumbel(2/epsilon) noise over log-spaced candidates on the public range [lo, hi], utility
/// -|#{G_i <= c_j} - target_count|; pure epsilon-DP (the exponential mechanism). Returns
/// {"value", "index", "epsilon"}. The noise comes from the operating system's random source;
/// with reproducible=True it is the stream (seed, 0, mechanism), which anyone who knows the seed
/// can replay: NOT a private release (a warning says so).
#[pyfunction]
#[pyo3(signature = (g, epsilon, lo, hi, seed = 0, grid_size = 200, target_count = 1,
    reproducible = false))]
#[allow(clippy::too_many_arguments)]
fn private_min_lipschitz<'py>(
    py: Python<'py>,
    g: &Bound<'py, PyAny>,
    epsilon: f64,
    lo: f64,
    hi: f64,
    seed: u64,
    grid_size: usize,
    target_count: usize,
    reproducible: bool,
) -> PyResult<Bound<'py, PyAny>> {
    check_array_memory(g, "G", copies::RNMM)?;
    let g = vector(py, g, "G")?;
    if reproducible {
        py.import("warnings")?.call_method1(
            "warn",
            (format!(
                "reproducible=True: the noise follows seed {seed}: {}",
                dpsgd::rng::NOT_PRIVATE
            ),),
        )?;
    }
    let cfg = RnmmConfig {
        epsilon,
        lo,
        hi,
        grid_size,
        target_count,
    };
    let o = py
        .detach(|| {
            let mut rng = ReleaseRng::for_release(reproducible, seed, 0, Purpose::Mechanism)?;
            privacy::private_min_lipschitz(&g, &cfg, &mut rng)
        })
        .map_err(err)?;
    to_py(
        py,
        &serde_json::json!({"value": o.value, "index": o.index, "epsilon": o.epsilon}),
    )
}

/// lower_bound_instance(n, d, k, epsilon, delta, nu=1.0, seed=0, codeword=0, packing_seed=0)
///
/// One data set from the hard distribution Q_v of Thm L.1 (Appendix L): x = v / p^(1/k) with
/// probability p = 2 sqrt(d log(1/delta)) / (n epsilon) (Eq. 96), else 0, v a codeword of the
/// packing set (Lemma 6), G = 3 ||v|| (Eq. 100); and the closed-form empirical optimum w*,
/// f* (Eq. 105). The data are the stream (seed, 0, data), as `train` draws them.
#[pyfunction]
#[pyo3(signature = (n, d, k, epsilon, delta, nu = 1.0, seed = 0, codeword = 0, packing_seed = 0))]
#[allow(clippy::too_many_arguments)]
fn lower_bound_instance<'py>(
    py: Python<'py>,
    n: usize,
    d: usize,
    k: f64,
    epsilon: f64,
    delta: f64,
    nu: f64,
    seed: u64,
    codeword: usize,
    packing_seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let spec = AppendixLSpec {
        n,
        d,
        k,
        epsilon,
        delta,
        codeword,
        packing_seed,
        constant: false,
    };
    // The CLI's estimate (`lower-bound`): the data set and its optimum, refused before
    // allocating, so that a large n or d raises instead of aborting the interpreter.
    dpsgd::limits::check_memory(
        &format!("n = {n}, d = {d}"),
        8.0 * (n as f64 + 2.0) * (d as f64 + 2.0),
    )
    .map_err(err)?;
    let (q, data) = py
        .detach(|| -> dpsgd::Result<_> {
            let q = spec.instance()?;
            let data = q.sample(&mut stream(seed, 0, Purpose::Data));
            Ok((q, data))
        })
        .map_err(err)?;
    let opt = q.optimum(&data);
    let (x, y) = x_y(py, &data)?;
    let out = PyDict::new(py);
    out.set_item("X", x)?;
    out.set_item("y", y)?;
    out.set_item("w_star", opt.w_star.clone().into_pyarray(py))?;
    out.set_item("f_star", opt.f_star)?;
    out.set_item("xbar_norm", opt.xbar_norm)?;
    out.set_item("optimum", to_py(py, &opt.kind)?)?;
    out.set_item("p", q.p())?;
    out.set_item("phi", q.phi(nu))?;
    out.set_item("G", q.g())?;
    out.set_item("v", q.v().to_vec().into_pyarray(py))?;
    out.set_item("w_star_population", q.w_star().into_pyarray(py))?;
    Ok(out)
}

/// run_spec(path, full=False, out=None)
///
/// Runs one experiment spec (a Monte Carlo rate check, as `dpsgd-lab run SPEC`) and returns the
/// verify table rows: spec, theorem, series, the predicted exponent of phi, the fitted slopes
/// with 95% intervals, the bound check and the verdict. Outputs (results.jsonl, summary.json,
/// report.md, plots) go to `out` (default: a fresh temporary folder).
#[pyfunction]
#[pyo3(signature = (path, full = false, out = None))]
fn run_spec<'py>(
    py: Python<'py>,
    path: PathBuf,
    full: bool,
    out: Option<PathBuf>,
) -> PyResult<Bound<'py, PyList>> {
    let scale = if full { Scale::Full } else { Scale::Quick };
    let spec = Spec::load(&path, scale).map_err(err)?;
    let out = match out {
        Some(o) => o,
        None => {
            let tmp = py
                .import("tempfile")?
                .call_method1("mkdtemp", ("dpsgd-lab-",))?;
            tmp.extract::<PathBuf>()?
        }
    };
    let rows = py
        .detach(|| -> anyhow::Result<_> {
            let cells = experiment::run(
                &spec,
                &RunOptions {
                    out: out.clone(),
                    resume: false,
                    fresh: true,
                    shard: None,
                    progress: false,
                    stop_after: None,
                    force: false,
                },
            )
            .map_err(|e| anyhow::Error::from(e).context(format!("spec {}", path.display())))?;
            let s = experiment::finalize(&spec, &cells, &out, None)?;
            Ok(report::table_rows(&s))
        })
        .map_err(err)?;
    let list = PyList::empty(py);
    for r in rows {
        let d = PyDict::new(py);
        for (h, c) in report::TABLE_HEADER.iter().zip(r.iter()) {
            d.set_item(*h, c)?;
        }
        list.append(d)?;
    }
    Ok(list)
}

/// dpsgd-lab from Python: the accountants, the theorems' schedules and bounds, the heavy-tailed
/// generators, the Appendix L instance, the private clip norm and Algorithm 1.
#[pymodule]
#[pyo3(name = "dpsgd_lab")]
fn dpsgd_lab_py(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(epsilon, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(nu_eff, m)?)?;
    m.add_function(wrap_pyfunction!(zcdp, m)?)?;
    m.add_function(wrap_pyfunction!(phi, m)?)?;
    m.add_function(wrap_pyfunction!(schedule, m)?)?;
    m.add_function(wrap_pyfunction!(per_sample_lipschitz, m)?)?;
    m.add_function(wrap_pyfunction!(describe, m)?)?;
    m.add_function(wrap_pyfunction!(generate, m)?)?;
    m.add_function(wrap_pyfunction!(private_min_lipschitz, m)?)?;
    m.add_function(wrap_pyfunction!(recommend::recommend_clip_norm, m)?)?;
    m.add_function(wrap_pyfunction!(lower_bound_instance, m)?)?;
    m.add_function(wrap_pyfunction!(train::train_py, m)?)?;
    m.add_function(wrap_pyfunction!(model::predict_py, m)?)?;
    m.add_function(wrap_pyfunction!(model::accuracy_py, m)?)?;
    m.add_function(wrap_pyfunction!(run_spec, m)?)?;
    m.add_function(wrap_pyfunction!(audit::audit_run, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
