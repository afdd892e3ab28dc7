//! CSV loading: a header row, one label column chosen by name, every other column a feature.

use serde::{Deserialize, Serialize};

use super::Dataset;
use crate::error::{Error, Result};

/// A CSV data source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CsvSpec {
    /// Path of the file.
    pub path: String,
    /// Name of the label column.
    pub label: String,
}

impl CsvSpec {
    /// Reads the file; errors name the line and column of the first bad value.
    pub fn load(&self) -> Result<Dataset> {
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
            .position(|h| h == self.label)
            .ok_or_else(|| {
                Error::data(format!(
                    "{}: no column named '{}' (columns: {})",
                    self.path,
                    self.label,
                    headers.iter().collect::<Vec<_>>().join(", ")
                ))
            })?;
        let width = headers.len();
        let d = width - 1;
        let mut x = Vec::new();
        let mut y = Vec::new();
        for (r, rec) in rdr.records().enumerate() {
            let line = r + 2;
            let rec = rec.map_err(|e| Error::data(format!("{}:{line}: {e}", self.path)))?;
            if rec.len() != width {
                return Err(Error::data(format!(
                    "{}:{line}: ragged row with {} fields, the header has {width}",
                    self.path,
                    rec.len()
                )));
            }
            for (c, field) in rec.iter().enumerate() {
                let v: f64 = field.trim().parse().map_err(|_| {
                    Error::data(format!(
                        "{}:{line}: column '{}' holds '{field}', which is not a number",
                        self.path, &headers[c]
                    ))
                })?;
                if !v.is_finite() {
                    return Err(Error::data(format!(
                        "{}:{line}: column '{}' is {v} (NaN and infinite values are not allowed)",
                        self.path, &headers[c]
                    )));
                }
                if c == label_col {
                    y.push(v);
                } else {
                    x.push(v);
                }
            }
        }
        Dataset::new(x, y, d).map_err(|e| Error::data(format!("{}: {e}", self.path)))
    }
}
