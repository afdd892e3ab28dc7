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
    /// Seed of the split (the split is a pure function of the data and this seed).
    pub seed: u64,
    /// How rows are assigned to a side (default: `shuffle`, the study's protocol).
    #[serde(default)]
    pub method: SplitMethod,
}

/// How a split assigns rows to the training and the test part.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SplitMethod {
    /// A seeded Fisher-Yates shuffle of the row indices, round(test_fraction n) test rows.
    /// Adding one row reshuffles every row, so a DP guarantee under add/remove neighbours does
    /// not survive it: for the non-private protocol (the clip-norm study) only.
    #[default]
    Shuffle,
    /// Each row's side is a keyed hash of that row's content and the seed alone
    /// ([`row_in_test`]): adding or removing one row changes no other row's side, so the split
    /// keeps add/remove neighbours neighbours (what a private pipeline needs).
    Hash,
}

/// Whether a row with features `x` and label `y` goes to the test part of a hash split: the
/// FNV-1a hash of (seed, the row's f64 bits), mixed by SplitMix64's finalizer into a uniform
/// u in [0, 1), is below `test_fraction`. It depends on the row and the public seed only (equal
/// rows go to the same side).
pub fn row_in_test(x: &[f64], y: f64, seed: u64, test_fraction: f64) -> bool {
    let mut bytes = Vec::with_capacity(8 * (x.len() + 2));
    bytes.extend_from_slice(&seed.to_le_bytes());
    for v in x.iter().chain(std::iter::once(&y)) {
        // +0.0 and -0.0 are one value: one side.
        let v = if *v == 0.0 { 0.0f64 } else { *v };
        bytes.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    let h = crate::rng::mix64(crate::fingerprint::fnv1a64(&bytes));
    let u = (h >> 11) as f64 / (1u64 << 53) as f64;
    u < test_fraction
}

impl SplitSpec {
    /// (train, test) of `data` by this spec's method (the shuffle draws from
    /// `rng::stream(seed, 0, Split)`).
    pub fn apply(&self, data: &Dataset) -> Result<(Dataset, Dataset)> {
        match self.method {
            SplitMethod::Shuffle => data.train_test_split(
                self.test_fraction,
                &mut crate::rng::stream(self.seed, 0, crate::rng::Purpose::Split),
            ),
            SplitMethod::Hash => data.hash_split(self.test_fraction, self.seed),
        }
    }

    /// The training-side flags of `data`'s rows (true: training), in row order.
    pub fn train_mask(&self, data: &Dataset) -> Result<Vec<bool>> {
        match self.method {
            SplitMethod::Hash => {
                check_open("test_fraction", self.test_fraction, 0.0, 1.0)?;
                Ok((0..data.n)
                    .map(|i| !row_in_test(data.row(i), data.y[i], self.seed, self.test_fraction))
                    .collect())
            }
            SplitMethod::Shuffle => Err(Error::param(
                "per-row values can follow a hash split only (split method = \"hash\")",
            )),
        }
    }
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

    /// The hash split of [`SplitMethod::Hash`]: row i is a test row iff [`row_in_test`]; the
    /// rows keep their order within each part. Both parts must be non-empty.
    pub fn hash_split(&self, test_fraction: f64, seed: u64) -> Result<(Dataset, Dataset)> {
        check_open("test_fraction", test_fraction, 0.0, 1.0)?;
        let (test, train): (Vec<usize>, Vec<usize>) =
            (0..self.n).partition(|&i| row_in_test(self.row(i), self.y[i], seed, test_fraction));
        if test.is_empty() || train.is_empty() {
            return Err(Error::param(format!(
                "the hash split with test_fraction = {test_fraction} of n = {} rows leaves {} \
                 test and {} training rows; both parts need at least one",
                self.n,
                test.len(),
                train.len()
            )));
        }
        Ok((self.subset(&train)?, self.subset(&test)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The property a private pipeline needs (add/remove neighbours stay neighbours after the
    /// split): appending one row to a data set leaves every other row on its side, at three
    /// sizes and 20 seeds. Planted bug: the seeded shuffle moves dozens of rows (caught below).
    #[test]
    fn appending_a_row_moves_no_other_row_between_the_parts() {
        let mut rng = crate::rng::stream(9, 0, crate::rng::Purpose::Data);
        for n in [178usize, 569, 1797] {
            let d = 4;
            let x: Vec<f64> = (0..n * d)
                .map(|_| rand::RngExt::random::<f64>(&mut rng))
                .collect();
            let y: Vec<f64> = (0..n).map(|i| (i % 3) as f64).collect();
            let a = Dataset::new(x.clone(), y.clone(), d).unwrap();
            let mut x2 = x;
            x2.extend_from_slice(&[0.5, 0.25, 0.125, 2.0]);
            let mut y2 = y;
            y2.push(1.0);
            let b = Dataset::new(x2, y2, d).unwrap();
            for seed in 0..20 {
                for method in [SplitMethod::Hash, SplitMethod::Shuffle] {
                    let spec = SplitSpec {
                        test_fraction: 0.2,
                        seed,
                        method,
                    };
                    let side = |data: &Dataset| -> Vec<bool> {
                        let (_, test) = spec.apply(data).unwrap();
                        (0..n)
                            .map(|i| {
                                (0..test.n).any(|t| test.row(t) == a.row(i) && test.y[t] == a.y[i])
                            })
                            .collect()
                    };
                    let moved = side(&a)
                        .iter()
                        .zip(side(&b))
                        .filter(|(p, q)| **p != *q)
                        .count();
                    match method {
                        SplitMethod::Hash => assert_eq!(moved, 0, "n {n} seed {seed}"),
                        SplitMethod::Shuffle => assert!(moved > 0, "n {n} seed {seed}"),
                    }
                }
            }
        }
    }

    /// The hash split holds out about test_fraction of the rows: at n = 2000, fraction 0.2, the
    /// test size is Binomial(2000, 0.2) (sd 17.9), within 4 sd of 400 for each of 10 seeds.
    #[test]
    fn the_hash_split_holds_out_the_requested_fraction() {
        let n = 2000;
        let data = Dataset::new((0..n).map(|i| i as f64).collect(), vec![0.0; n], 1).unwrap();
        let sd = (n as f64 * 0.2 * 0.8).sqrt();
        for seed in 0..10 {
            let (_, test) = data.hash_split(0.2, seed).unwrap();
            assert!(
                (test.n as f64 - 400.0).abs() <= 4.0 * sd,
                "seed {seed}: {}",
                test.n
            );
        }
    }
}
