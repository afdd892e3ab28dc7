//! Seeded train/test splits and standardization (statistics from the training part only).

use serde::{Deserialize, Serialize};

use super::Dataset;
use crate::error::{Error, Result, check_open};
use crate::rng::SimRng;

/// A train/test split request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SplitSpec {
    /// Fraction of the samples held out for testing, in (0, 1).
    pub test_fraction: f64,
    /// Seed of the shuffle (the split is a pure function of the data and this seed).
    pub seed: u64,
}

/// Per-feature mean and standard deviation, estimated on one data set and applied to others.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Standardizer {
    /// Per-feature means mean_j, subtracted from x_ij.
    pub mean: Vec<f64>,
    /// Column standard deviations (population, 1/n); constant columns get 1 so that they are
    /// only centered.
    pub std: Vec<f64>,
}

impl Standardizer {
    /// Column statistics of `data`.
    pub fn fit(data: &Dataset) -> Self {
        let (n, d) = (data.n as f64, data.d);
        let mut mean = vec![0.0; d];
        for i in 0..data.n {
            for (m, v) in mean.iter_mut().zip(data.row(i)) {
                *m += v;
            }
        }
        mean.iter_mut().for_each(|m| *m /= n);
        let mut var = vec![0.0; d];
        for i in 0..data.n {
            for ((s, v), m) in var.iter_mut().zip(data.row(i)).zip(&mean) {
                *s += (v - m) * (v - m);
            }
        }
        let std = var
            .into_iter()
            .map(|s| {
                let sd = (s / n).sqrt();
                if sd > 0.0 { sd } else { 1.0 }
            })
            .collect();
        Standardizer { mean, std }
    }

    /// x_ij <- (x_ij - mean_j) / std_j.
    pub fn apply(&self, data: &mut Dataset) -> Result<()> {
        if data.d != self.mean.len() {
            return Err(Error::data(format!(
                "standardizer fitted on d = {} features applied to d = {}",
                self.mean.len(),
                data.d
            )));
        }
        for row in data.x.chunks_exact_mut(data.d) {
            for ((v, m), s) in row.iter_mut().zip(&self.mean).zip(&self.std) {
                *v = (*v - m) / s;
            }
        }
        Ok(())
    }
}

impl Dataset {
    /// The samples at `idx`, in that order.
    pub fn subset(&self, idx: &[usize]) -> Result<Dataset> {
        let mut x = Vec::with_capacity(idx.len() * self.d);
        let mut y = Vec::with_capacity(idx.len());
        for &i in idx {
            x.extend_from_slice(self.row(i));
            y.push(self.y[i]);
        }
        Dataset::new(x, y, self.d)
    }

    /// A uniformly random split into (train, test) with round(test_fraction n) test samples
    /// (at least 1 in each part), drawn by a Fisher-Yates shuffle from `rng`.
    pub fn train_test_split(
        &self,
        test_fraction: f64,
        rng: &mut SimRng,
    ) -> Result<(Dataset, Dataset)> {
        check_open("test_fraction", test_fraction, 0.0, 1.0)?;
        let n = self.n;
        let n_test = (test_fraction * n as f64).round() as usize;
        if n_test == 0 || n_test >= n {
            return Err(Error::param(format!(
                "test_fraction = {test_fraction} of n = {n} samples leaves {n_test} test and {} \
                 training samples; both parts need at least one",
                n - n_test.min(n)
            )));
        }
        let mut idx: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = rand::RngExt::random_range(rng, 0..=i);
            idx.swap(i, j);
        }
        let (test, train) = idx.split_at(n_test);
        Ok((self.subset(train)?, self.subset(test)?))
    }
}
