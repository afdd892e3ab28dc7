//! The trained models' losses, initial points and test-set predictions.

use crate::data::Dataset;
use crate::dpsgd::Init;
use crate::error::Result;
use crate::linalg::dot;
use crate::loss::{Loss, SoftmaxLoss, TanhNet};

use super::config::ModelSpec;

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
