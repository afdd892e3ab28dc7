//! A flat parameter vector as a classifier: the models' losses, initial points, weight layout
//! and predictions. Shared by `train` and the clip-norm study, so it sits below both.

use serde::{Deserialize, Serialize};

use crate::data::Dataset;
use crate::dpsgd::Init;
use crate::error::{Error, Result};
use crate::linalg::dot;
use crate::loss::{Loss, LossSpec, SoftmaxLoss, TanhNet};

/// Which model is trained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ModelSpec {
    /// Multinomial logistic regression (a softmax layer), Section 5.2; w_0 = 0.
    #[default]
    Softmax,
    /// The two-layer tanh network of Appendix C; w_0 ~ N(0, init_scale^2 / fan_in) per layer
    /// (approximated by one scale: init_scale / sqrt(d + 1)).
    TanhNet {
        /// Hidden units h.
        hidden: usize,
        /// Scale of the initial weights before the 1 / sqrt(d + 1) fan-in factor (default 1).
        #[serde(default = "one")]
        init_scale: f64,
    },
}

fn one() -> f64 {
    1.0
}

/// A model: its loss and how it classifies.
pub struct Model {
    spec: ModelSpec,
    d: usize,
    m: usize,
    loss: Box<dyn Loss>,
}

impl Model {
    /// The model for `d` features and `m` classes.
    pub fn new(spec: &ModelSpec, d: usize, m: usize) -> Result<Self> {
        let loss: Box<dyn Loss> = match spec {
            ModelSpec::Softmax => Box::new(SoftmaxLoss::new(d, m)),
            ModelSpec::TanhNet { hidden, .. } => Box::new(TanhNet::new(d, *hidden, m, None)?),
        };
        Ok(Model {
            spec: spec.clone(),
            d,
            m,
            loss,
        })
    }

    /// The classifier of a `train` loss whose flat parameters have `w_len` entries on `d`
    /// features, its class count m read off the weight layout (see `train::predict`); None for a
    /// loss that does not classify. The network's init scale is irrelevant here (no init).
    pub fn for_weights(loss: &LossSpec, w_len: usize, d: usize) -> Result<Option<Model>> {
        let (spec, fixed, per_class) = match loss {
            LossSpec::Logistic { .. } => (ModelSpec::Softmax, 0, d + 1),
            LossSpec::TanhNet { hidden, .. } => (
                ModelSpec::TanhNet {
                    hidden: *hidden,
                    init_scale: 1.0,
                },
                hidden * (d + 1),
                hidden + 1,
            ),
            _ => return Ok(None),
        };
        let rest = w_len.checked_sub(fixed).unwrap_or(usize::MAX);
        if rest == usize::MAX || !rest.is_multiple_of(per_class) || rest / per_class < 2 {
            return Err(Error::param(format!(
                "w has {w_len} entries, which is not the layout of the loss on d = {d} features \
                 ({fixed} + m x {per_class} for m >= 2 classes)"
            )));
        }
        Model::new(&spec, d, rest / per_class).map(Some)
    }

    /// The loss.
    pub fn loss(&self) -> &dyn Loss {
        self.loss.as_ref()
    }

    /// w_0: zeros for the (convex) softmax layer; small Gaussian weights for the network, whose
    /// zero point is a saddle with identical hidden units.
    pub fn init(&self) -> Init {
        match &self.spec {
            ModelSpec::Softmax => Init::Zeros,
            ModelSpec::TanhNet { init_scale, .. } => Init::Gaussian {
                scale: init_scale / ((self.d + 1) as f64).sqrt(),
            },
        }
    }

    /// argmax_j of the logits at x, or None if a logit is not finite (a diverged run).
    pub fn predict(&self, w: &[f64], x: &[f64], hidden_buf: &mut Vec<f64>) -> Option<usize> {
        let d = self.d;
        let argmax = |z: &mut dyn Iterator<Item = f64>| -> Option<usize> {
            let mut best = (f64::NEG_INFINITY, None);
            for (j, v) in z.enumerate() {
                if !v.is_finite() {
                    return None;
                }
                if best.1.is_none() || v > best.0 {
                    best = (v, Some(j));
                }
            }
            best.1
        };
        match &self.spec {
            ModelSpec::Softmax => {
                let dd = d + 1;
                argmax(&mut (0..self.m).map(|j| {
                    let wj = &w[j * dd..(j + 1) * dd];
                    dot(&wj[..d], x) + wj[d]
                }))
            }
            ModelSpec::TanhNet { hidden, .. } => {
                let h = *hidden;
                let (w1, w2) = w.split_at(h * (d + 1));
                hidden_buf.clear();
                hidden_buf.extend((0..h).map(|k| {
                    let row = &w1[k * (d + 1)..(k + 1) * (d + 1)];
                    (dot(&row[..d], x) + row[d]).tanh()
                }));
                let a = &hidden_buf[..];
                argmax(&mut (0..self.m).map(|j| {
                    let row = &w2[j * (h + 1)..(j + 1) * (h + 1)];
                    dot(&row[..h], a) + row[h]
                }))
            }
        }
    }

    /// Fraction of `data` classified correctly (a diverged model scores 0).
    pub fn accuracy(&self, w: &[f64], data: &Dataset) -> f64 {
        if w.iter().any(|v| !v.is_finite()) {
            return 0.0;
        }
        let mut buf = Vec::new();
        let correct = (0..data.n)
            .filter(|&i| self.predict(w, data.row(i), &mut buf) == Some(data.y[i] as usize))
            .count();
        correct as f64 / data.n as f64
    }
}
