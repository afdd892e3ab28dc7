//! Predictions and accuracy of a trained model from its flat parameter vector, through the
//! [`Loss`] trait's public API (the library's `train` reports risks, not predictions).

use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use dpsgd::data::Dataset;
use dpsgd::error::{Error, Result};
use dpsgd::linalg::dot;
use dpsgd::loss::{Loss, LossSpec};

use crate::config::loss_or_logistic;
use crate::{dataset, err, matrix, vector};

/// The shape (rows, columns) of the logistic loss's parameters W in R^{m x (d+1)}, stored
/// row-major (row j = class j's weights, its last entry the bias; Eq. (7), Appendix D), for a
/// parameter vector of length `p` on `d` features; None for the other losses, whose parameters
/// stay flat (huber, robust, sharp, appendix_l: w in R^d; tanh_net: W1 in R^{h x (d+1)} then W2
/// in R^{m x (h+1)}, both row-major, bias last).
pub fn model_shape(loss: &LossSpec, d: usize, p: usize) -> Option<(usize, usize)> {
    match loss {
        LossSpec::Logistic { .. } if p.is_multiple_of(d + 1) => Some((p / (d + 1), d + 1)),
        _ => None,
    }
}

/// What a loss predicts: a class for the multinomial ones, a real value for linear regression.
enum Model {
    /// The class c minimizing l(w, x, c), i.e. the most probable class of the model's softmax
    /// output (Eq. 7 for logistic, Appendix C for tanh_net); ties go to the smallest c.
    Classes(Box<dyn Loss>, usize),
    /// <w, x>: the y minimizing l(w, x, y) = phi(<w, x> - y) for huber and robust.
    Linear,
}

/// The number of classes m of a multinomial loss whose parameter vector has `p` entries on `d`
/// features: p = m (d + 1) (logistic) or h (d + 1) + m (h + 1) (tanh_net).
fn classes_from_len(loss: &LossSpec, d: usize, p: usize) -> Result<usize> {
    let (fixed, per_class) = match loss {
        LossSpec::TanhNet { hidden, .. } => (hidden * (d + 1), hidden + 1),
        _ => (0, d + 1),
    };
    match p.checked_sub(fixed) {
        Some(r) if r % per_class == 0 && r / per_class >= 2 => Ok(r / per_class),
        _ => Err(Error::param(format!(
            "w has {p} parameters, which is no {} model on d = {d} features",
            loss_name(loss)
        ))),
    }
}

fn loss_name(loss: &LossSpec) -> &'static str {
    match loss {
        LossSpec::Logistic { .. } => "logistic",
        LossSpec::BinaryLogistic => "binary_logistic",
        LossSpec::Huber { .. } => "huber",
        LossSpec::Sharp => "sharp",
        LossSpec::AppendixL => "appendix_l",
        LossSpec::Robust => "robust",
        LossSpec::TanhNet { .. } => "tanh_net",
    }
}

fn model(loss: &LossSpec, w: &[f64], data: &Dataset) -> Result<Model> {
    let spec = match loss {
        LossSpec::Huber { .. } | LossSpec::Robust => {
            if w.len() != data.d {
                return Err(Error::param(format!(
                    "w has {} parameters but a {} model on d = {} features has d",
                    w.len(),
                    loss_name(loss),
                    data.d
                )));
            }
            return Ok(Model::Linear);
        }
        LossSpec::Sharp | LossSpec::AppendixL | LossSpec::BinaryLogistic => {
            return Err(Error::param(format!(
                "the {} loss is no predictive model: predict and accuracy take logistic or \
                 tanh_net (classes), huber or robust (regression)",
                loss_name(loss)
            )));
        }
        LossSpec::Logistic { classes } => LossSpec::Logistic {
            classes: Some(classes.map_or_else(|| classes_from_len(loss, data.d, w.len()), Ok)?),
        },
        LossSpec::TanhNet {
            hidden,
            classes,
            radius,
        } => LossSpec::TanhNet {
            hidden: *hidden,
            classes: Some(classes.map_or_else(|| classes_from_len(loss, data.d, w.len()), Ok)?),
            radius: *radius,
        },
    };
    let m = match spec {
        LossSpec::Logistic { classes: Some(m) }
        | LossSpec::TanhNet {
            classes: Some(m), ..
        } => m,
        _ => unreachable!("classes set above"),
    };
    let built = spec.build(data)?;
    if built.param_dim() != w.len() {
        return Err(Error::param(format!(
            "w has {} parameters but a {} model with {m} classes on d = {} features has {}",
            w.len(),
            loss_name(loss),
            data.d,
            built.param_dim()
        )));
    }
    Ok(Model::Classes(built, m))
}

/// Predictions of the model with parameters `w` (flat, in the loss's layout, see
/// [`model_shape`]) for the rows of `data` (its labels are not used): for logistic and
/// tanh_net the class argmin_c l(w, x, c) as 0..m-1, m from the loss spec or from the length
/// of `w`; for huber and robust <w, x>. Returns the predictions and whether they are classes.
pub fn predict(loss: &LossSpec, w: &[f64], data: &Dataset) -> Result<(Vec<f64>, bool)> {
    if let Some(v) = w.iter().find(|v| !v.is_finite()) {
        return Err(Error::param(format!(
            "w has the entry {v}; parameters must be finite"
        )));
    }
    Ok(match model(loss, w, data)? {
        Model::Linear => ((0..data.n).map(|i| dot(w, data.row(i))).collect(), false),
        Model::Classes(l, m) => {
            let best = |x: &[f64]| {
                let (mut c, mut v) = (0, l.value(w, x, 0.0));
                for j in 1..m {
                    let vj = l.value(w, x, j as f64);
                    if vj < v {
                        (c, v) = (j, vj);
                    }
                }
                c as f64
            };
            ((0..data.n).map(|i| best(data.row(i))).collect(), true)
        }
    })
}

/// The fraction of rows of `data` whose predicted class ([`predict`]) is the label; an error
/// for the regression losses.
pub fn accuracy(loss: &LossSpec, w: &[f64], data: &Dataset) -> Result<f64> {
    let (pred, classes) = predict(loss, w, data)?;
    if !classes {
        return Err(Error::param(format!(
            "accuracy needs a classification loss (logistic or tanh_net), not {}",
            loss_name(loss)
        )));
    }
    let hits = pred.iter().zip(&data.y).filter(|(p, y)| p == y).count();
    Ok(hits as f64 / data.n as f64)
}

/// Parameters as a flat float64 vector in row-major order, from any array-like of any shape
/// (e.g. the (m, d + 1) matrix `train` returns for the logistic loss).
fn params(py: Python<'_>, w: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
    let np = py.import("numpy")?;
    let kw = PyDict::new(py);
    kw.set_item("dtype", "float64")?;
    let a = np.call_method("asarray", (w,), Some(&kw))?;
    vector(py, &a.call_method0("ravel")?, "w")
}

/// predict(w, X, loss="logistic")
///
/// The predictions of the model with parameters w (as `train` returns them, e.g. w_priv) for
/// the rows of X: for the logistic and tanh_net losses the most probable class 0..m-1 of the
/// model (the class c minimizing l(w, x, c); Eq. 7, Appendix C) as int64, m from the loss or
/// from w's size; for huber and robust the real prediction <w, x> as float64.
#[pyfunction]
#[pyo3(name = "predict", signature = (w, x, loss = None))]
pub fn predict_py<'py>(
    py: Python<'py>,
    w: &Bound<'py, PyAny>,
    x: &Bound<'py, PyAny>,
    loss: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let w = params(py, w)?;
    let (xs, n, d) = matrix(py, x, "X")?;
    let data = Dataset::new(xs, vec![0.0; n], d).map_err(err)?;
    let spec = loss_or_logistic(py, loss)?;
    let (pred, classes) = py.detach(|| predict(&spec, &w, &data)).map_err(err)?;
    if classes {
        let c: Vec<i64> = pred.iter().map(|&c| c as i64).collect();
        return Ok(c.into_pyarray(py).into_any());
    }
    Ok(pred.into_pyarray(py).into_any())
}

/// accuracy(w, X, y, loss="logistic")
///
/// The fraction of rows of X whose predicted class (`predict`) equals the label in y, for a
/// classification loss (logistic, tanh_net).
#[pyfunction]
#[pyo3(name = "accuracy", signature = (w, x, y, loss = None))]
pub fn accuracy_py<'py>(
    py: Python<'py>,
    w: &Bound<'py, PyAny>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    loss: Option<&Bound<'py, PyAny>>,
) -> PyResult<f64> {
    let w = params(py, w)?;
    let data = dataset(py, x, y)?;
    let spec = loss_or_logistic(py, loss)?;
    py.detach(|| accuracy(&spec, &w, &data)).map_err(err)
}
