//! Synthetic data generators.
//!
//! Minimal first version: isotropic Gaussian features with a teacher for the labels. The data
//! issue replaces the feature law by radial laws with exactly known moments (Assumption 6.1).

use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use super::Dataset;
use crate::error::{Error, Result};
use crate::rng::SimRng;

/// How labels are made from features.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LabelModel {
    /// y = argmax_j <w_j, x> for a Gaussian teacher (separable, interpolation holds), or y drawn
    /// from softmax(<w_j, x>) when `separable` is false.
    Multinomial { classes: usize, separable: bool },
    /// y = <w_star, x> + N(0, noise_std^2), w_star ~ N(0, I/d).
    Regression { noise_std: f64 },
    /// Sharp-loss data: the row is the center w_i* ~ N(0, spread^2 I) and the label is a_i = 1.
    SharpCenters { spread: f64 },
}

/// A synthetic data set: x ~ N(0, scale^2 I_d), labels by `labels`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorSpec {
    /// Number of samples.
    pub n: usize,
    /// Number of features.
    pub d: usize,
    /// Feature scale.
    #[serde(default = "one")]
    pub scale: f64,
    /// Label model.
    pub labels: LabelModel,
}

fn one() -> f64 {
    1.0
}

impl GeneratorSpec {
    /// Draws the data set from the data stream `rng`.
    pub fn generate(&self, rng: &mut SimRng) -> Result<Dataset> {
        if self.n == 0 || self.d == 0 {
            return Err(Error::param(format!(
                "generator needs n >= 1 and d >= 1, but n = {} and d = {}",
                self.n, self.d
            )));
        }
        crate::error::check_positive("generator scale", self.scale)?;
        let (n, d) = (self.n, self.d);
        let mut x = vec![0.0; n * d];
        for v in x.iter_mut() {
            let z: f64 = StandardNormal.sample(rng);
            *v = self.scale * z;
        }
        let y = match &self.labels {
            LabelModel::Multinomial { classes, separable } => {
                if *classes < 2 {
                    return Err(Error::param(format!(
                        "multinomial labels need at least 2 classes, but classes = {classes}"
                    )));
                }
                let m = *classes;
                let teacher: Vec<f64> = (0..m * d).map(|_| StandardNormal.sample(rng)).collect();
                let mut logits = vec![0.0; m];
                (0..n)
                    .map(|i| {
                        let xi = &x[i * d..(i + 1) * d];
                        for j in 0..m {
                            logits[j] = dot(&teacher[j * d..(j + 1) * d], xi);
                        }
                        let label = if *separable {
                            argmax(&logits)
                        } else {
                            sample_softmax(&logits, rng)
                        };
                        label as f64
                    })
                    .collect()
            }
            LabelModel::Regression { noise_std } => {
                if !(noise_std.is_finite() && *noise_std >= 0.0) {
                    return Err(Error::param(format!(
                        "regression noise_std must be >= 0 and finite, but is {noise_std}"
                    )));
                }
                let s = 1.0 / (d as f64).sqrt();
                let w: Vec<f64> = (0..d)
                    .map(|_| {
                        s * {
                            let z: f64 = StandardNormal.sample(rng);
                            z
                        }
                    })
                    .collect();
                (0..n)
                    .map(|i| {
                        let e: f64 = StandardNormal.sample(rng);
                        dot(&w, &x[i * d..(i + 1) * d]) + noise_std * e
                    })
                    .collect()
            }
            LabelModel::SharpCenters { spread } => {
                crate::error::check_positive("sharp_centers spread", *spread)?;
                for v in x.iter_mut() {
                    *v *= spread / self.scale;
                }
                vec![1.0; n]
            }
        };
        Dataset::new(x, y, d)
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(u, v)| u * v).sum()
}

fn argmax(v: &[f64]) -> usize {
    let mut best = 0;
    for (j, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = j;
        }
    }
    best
}

fn sample_softmax(logits: &[f64], rng: &mut SimRng) -> usize {
    let mx = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let total: f64 = logits.iter().map(|l| (l - mx).exp()).sum();
    let mut u: f64 = rng.random::<f64>() * total;
    for (j, l) in logits.iter().enumerate() {
        u -= (l - mx).exp();
        if u <= 0.0 {
            return j;
        }
    }
    logits.len() - 1
}
