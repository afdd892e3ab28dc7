//! Predictions and accuracy of a trained parameter vector (classification losses).

use super::Accuracy;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::loss::LossSpec;
use crate::model::Model;

/// Predicted classes argmax_j of the logits for the rows of `x` (row-major, `d` features each).
///
/// Weight layout (flat `w`, as `train` returns w_priv): for the logistic (softmax) loss, W in
/// R^{m x (d+1)} row-major, row j = class j's weights with its bias last, so w has m (d + 1)
/// entries; for `tanh_net` with h hidden units, W1 in R^{h x (d+1)} row-major (bias last) then
/// W2 in R^{m x (h+1)} row-major (bias last). m is read off the length of w. Errors for a loss
/// that does not classify, a length that fits no layout, or a non-finite w (a diverged run).
pub fn predict(loss: &LossSpec, w: &[f64], x: &[f64], d: usize) -> Result<Vec<usize>> {
    if d == 0 || !x.len().is_multiple_of(d) {
        return Err(Error::param(format!(
            "x has {} values, not a whole number of rows of d = {d} features",
            x.len()
        )));
    }
    let Some(model) = Model::for_weights(loss, w.len(), d)? else {
        return Err(Error::param(format!(
            "the {loss:?} loss does not classify; predict needs logistic or tanh_net"
        )));
    };
    let mut buf = Vec::new();
    x.chunks(d)
        .map(|row| {
            model.predict(w, row, &mut buf).ok_or_else(|| {
                Error::param("w or x has a non-finite value (a diverged run?): no prediction")
            })
        })
        .collect()
}

/// Fraction of `data`'s rows whose label predict gives (a diverged, non-finite w scores 0);
/// weight layout as in [`predict`].
pub fn accuracy(loss: &LossSpec, w: &[f64], data: &Dataset) -> Result<f64> {
    let Some(model) = Model::for_weights(loss, w.len(), data.d)? else {
        return Err(Error::param(format!(
            "the {loss:?} loss does not classify; accuracy needs logistic or tanh_net"
        )));
    };
    Ok(model.accuracy(w, data))
}

/// Train and test accuracy of w for a classification loss; None for other losses.
pub(super) fn classification_accuracy(
    loss: &LossSpec,
    w: &[f64],
    data: &Dataset,
    test: Option<&Dataset>,
) -> Result<Option<Accuracy>> {
    if Model::for_weights(loss, w.len(), data.d)?.is_none() {
        return Ok(None);
    }
    Ok(Some(Accuracy {
        train: accuracy(loss, w, data)?,
        test: test.map(|t| accuracy(loss, w, t)).transpose()?,
        n_train: data.n,
        n_test: test.map_or(0, |t| t.n),
    }))
}
