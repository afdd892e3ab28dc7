//! CSV loading: a header row, one label column chosen by name, every other column a feature;
//! an optional seeded train/test split and standardization.

use serde::{Deserialize, Serialize};

use super::Dataset;
use super::split::{SplitSpec, Standardizer};
use crate::error::{Error, Result};

/// A CSV data source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CsvSpec {
    /// Path of the CSV file: a header row, then one numeric row per sample.
    pub path: String,
    /// Header name of the label column; every other column is a feature.
    pub label: String,
    /// Hold out a seeded test part; [`CsvSpec::load`] then returns the training part only.
    #[serde(default)]
    pub split: Option<SplitSpec>,
    /// Standardize every feature to mean 0 and variance 1, with the statistics of the training
    /// part (so no test information leaks into training). These statistics are NOT private: a
    /// DP guarantee of training on the result does not cover them (`train` says so; the
    /// private alternative is [`crate::privacy::standardize`]).
    #[serde(default)]
    pub standardize: bool,
}

impl CsvSpec {
    /// A spec that reads `path` with label column `label`, no split, no standardization.
    pub fn new(path: impl Into<String>, label: impl Into<String>) -> Self {
        CsvSpec {
            path: path.into(),
            label: label.into(),
            split: None,
            standardize: false,
        }
    }

    /// The training data: the whole file, or its training part when `split` is set.
    pub fn load(&self) -> Result<Dataset> {
        Ok(self.load_split()?.0)
    }

    /// (train, test): test is `None` without a split. Standardization is fitted on train.
    pub fn load_split(&self) -> Result<(Dataset, Option<Dataset>)> {
        let all = self.read()?;
        let (mut train, mut test) = match &self.split {
            Some(s) => {
                let (a, b) = s.apply(&all)?;
                (a, Some(b))
            }
            None => (all, None),
        };
        if self.standardize {
            let st = Standardizer::fit(&train);
            st.apply(&mut train)?;
            if let Some(t) = test.as_mut() {
                st.apply(t)?;
            }
        }
        Ok((train, test))
    }

    /// Reads the whole file; errors name the file, the line and the column of the first bad
    /// value.
    pub fn read(&self) -> Result<Dataset> {
        let file = std::fs::File::open(&self.path).map_err(|e| Error::io(&self.path, e))?;
        let mut rdr = ::csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(true)
            .from_reader(file);
        let headers = rdr
            .headers()
            .map_err(|e| Error::data(format!("{}: cannot read the header: {e}", self.path)))?
            .clone();
        let label_col = headers
            .iter()
            .position(|h| h.trim() == self.label)
            .ok_or_else(|| {
                Error::data(format!(
                    "{}: no label column named '{}' in the header (columns: {})",
                    self.path,
                    self.label,
                    headers.iter().collect::<Vec<_>>().join(", ")
                ))
            })?;
        // Two columns of one name would make one of them silently a feature (a leaked label).
        for (j, h) in headers.iter().enumerate() {
            if headers.iter().take(j).any(|g| g.trim() == h.trim()) {
                return Err(Error::data(format!(
                    "{}: the header names column '{}' twice; column names must be unique",
                    self.path,
                    h.trim()
                )));
            }
        }
        let width = headers.len();
        if width < 2 {
            return Err(Error::data(format!(
                "{}: the header has only the label column '{}'; at least one feature is needed",
                self.path, self.label
            )));
        }
        let d = width - 1;
        let mut x = Vec::new();
        let mut y = Vec::new();
        for rec in rdr.records() {
            let rec = rec.map_err(|e| Error::data(format!("{}: {e}", self.path)))?;
            let line = rec.position().map_or(0, |p| p.line());
            if rec.len() != width {
                return Err(Error::data(format!(
                    "{}:{line}: ragged row with {} fields, but the header has {width}",
                    self.path,
                    rec.len()
                )));
            }
            for (c, field) in rec.iter().enumerate() {
                let parsed: Option<f64> = field.trim().parse().ok();
                let v = match parsed {
                    Some(v) if v.is_finite() => v,
                    Some(v) => {
                        return Err(Error::data(format!(
                            "{}:{line}: column '{}' is {v} (NaN and infinite values are not \
                             allowed)",
                            self.path, &headers[c]
                        )));
                    }
                    None if c == label_col => {
                        return Err(Error::data(format!(
                            "{}:{line}: label column '{}' holds '{field}', which is not numeric \
                             (labels must be class indices 0..m-1 or real responses)",
                            self.path, &headers[c]
                        )));
                    }
                    None => {
                        return Err(Error::data(format!(
                            "{}:{line}: column '{}' holds '{field}', which is not a number",
                            self.path, &headers[c]
                        )));
                    }
                };
                if c == label_col {
                    y.push(v);
                } else {
                    x.push(v);
                }
            }
        }
        Dataset::new(x, y, d).map_err(|e| match e {
            Error::Data(m) => Error::data(format!("{}: {m}", self.path)),
            e => e,
        })
    }
}
