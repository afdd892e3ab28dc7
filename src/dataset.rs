//! The plain data set: a row-major feature matrix with one label per sample.
//!
//! It sits at the bottom of the crate so that losses, generators, Algorithm 1 and the theory
//! can all use it without depending on each other.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// n samples of d features, row-major, with one label per sample.
///
/// The label's meaning belongs to the loss: a class index (stored as an exact integer) for
/// multinomial losses, a response for regression, a weight a_i for the sharp loss.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    /// Number of samples.
    pub n: usize,
    /// Number of features.
    pub d: usize,
    /// Features, row-major: sample i is `x[i*d..(i+1)*d]`.
    pub x: Vec<f64>,
    /// Labels.
    pub y: Vec<f64>,
}

impl Dataset {
    /// Builds a data set, rejecting ragged shapes and non-finite values.
    pub fn new(x: Vec<f64>, y: Vec<f64>, d: usize) -> Result<Self> {
        if d == 0 {
            return Err(Error::data("the number of features d must be at least 1"));
        }
        if !x.len().is_multiple_of(d) {
            return Err(Error::data(format!(
                "feature buffer of length {} is not a multiple of d = {d}",
                x.len()
            )));
        }
        let n = x.len() / d;
        if y.len() != n {
            return Err(Error::data(format!(
                "dimension mismatch: {n} feature rows but {} labels",
                y.len()
            )));
        }
        if n == 0 {
            return Err(Error::data("the data set is empty"));
        }
        if let Some(k) = x.iter().position(|v| !v.is_finite()) {
            return Err(Error::data(format!(
                "feature {} of sample {} is {} (NaN and infinite values are not allowed)",
                k % d,
                k / d,
                x[k]
            )));
        }
        // Every loss works with ||x||^2 (G(x, y), clipping): a row whose squared norm overflows
        // would train on infinities. One check here serves every command.
        if let Some(i) = x
            .chunks_exact(d)
            .position(|r| !r.iter().map(|v| v * v).sum::<f64>().is_finite())
        {
            return Err(Error::data(format!(
                "the feature norm ||x|| of sample {i} overflows (largest |feature| {:e}); rescale the features",
                x[i * d..(i + 1) * d]
                    .iter()
                    .fold(0.0f64, |m, v| m.max(v.abs()))
            )));
        }
        if let Some(i) = y.iter().position(|v| !v.is_finite()) {
            return Err(Error::data(format!(
                "label of sample {i} is {} (NaN and infinite values are not allowed)",
                y[i]
            )));
        }
        Ok(Dataset { n, d, x, y })
    }

    /// Features of sample i.
    #[inline]
    pub fn row(&self, i: usize) -> &[f64] {
        &self.x[i * self.d..(i + 1) * self.d]
    }

    /// Number of classes if the labels are class indices 0..m-1 (exact non-negative integers).
    pub fn num_classes(&self) -> Option<usize> {
        let mut m = 0usize;
        for &v in &self.y {
            if v < 0.0 || v.fract() != 0.0 || v > 1e9 {
                return None;
            }
            m = m.max(v as usize + 1);
        }
        Some(m)
    }

    /// The smallest class of 0..m-1 that no label takes, if any (labels must be class
    /// indices); memory O(n), whatever m is.
    pub fn first_absent_class(&self, m: usize) -> Option<usize> {
        let mut labels: Vec<usize> = self.y.iter().map(|&v| v as usize).collect();
        labels.sort_unstable();
        labels.dedup();
        (0..m)
            .zip(labels.iter().chain(std::iter::repeat(&usize::MAX)))
            .find_map(|(c, &l)| (c != l).then_some(c))
    }
}

impl Dataset {
    /// Writes the data set as CSV: a header `x0, ..., x{d-1}, target`, then one row per sample.
    /// Numbers are written in Rust's shortest round-trip form, so reading back is exact.
    pub fn write_csv(&self, path: &str) -> Result<()> {
        let io = |e: std::io::Error| Error::io(path, e);
        let file = std::fs::File::create(path).map_err(io)?;
        let mut w = ::csv::Writer::from_writer(std::io::BufWriter::new(file));
        let csv_err = |e: ::csv::Error| Error::data(format!("{path}: cannot write: {e}"));
        let mut header: Vec<String> = (0..self.d).map(|j| format!("x{j}")).collect();
        header.push("target".to_string());
        w.write_record(&header).map_err(csv_err)?;
        let mut rec: Vec<String> = Vec::with_capacity(self.d + 1);
        for i in 0..self.n {
            rec.clear();
            rec.extend(self.row(i).iter().map(|v| v.to_string()));
            rec.push(self.y[i].to_string());
            w.write_record(&rec).map_err(csv_err)?;
        }
        w.flush().map_err(io)
    }
}
