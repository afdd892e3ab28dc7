//! Public values a user supplies to `clipnorm recommend` (feature ranges, bounds, scales,
//! per-sample norms): files of numeric lines, or rows in memory.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Public per-feature values (bounds C_j, or "mean,scale" pairs): a file of lines, or rows in
/// memory.
#[derive(Debug, Clone)]
pub enum PublicValues {
    /// A file of numeric lines (blank lines and `#` comments skipped; a non-numeric first line
    /// is a header).
    File(PathBuf),
    /// One row per feature, in memory.
    Rows(Vec<Vec<f64>>),
}

impl PublicValues {
    /// The rows (each `width` finite values) and how errors name them (`flag FILE`, or the
    /// flag's name as a keyword for rows in memory).
    pub fn rows(&self, flag: &str, width: usize) -> Result<(Vec<Vec<f64>>, String)> {
        match self {
            PublicValues::File(p) => Ok((read_rows(p, width)?, format!("{flag} {}", p.display()))),
            PublicValues::Rows(r) => {
                let name = flag.trim_start_matches('-').replace('-', "_");
                if let Some(i) = r
                    .iter()
                    .position(|v| v.len() != width || !v.iter().all(|x| x.is_finite()))
                {
                    return Err(Error::data(format!(
                        "{name}, row {}: expected {width} finite values",
                        i + 1
                    )));
                }
                Ok((r.clone(), name))
            }
        }
    }
}

/// Reads one finite value per line (blank lines and `#` comments skipped; a non-numeric first
/// line is a header).
pub fn read_norms_file(path: &Path) -> Result<Vec<f64>> {
    Ok(read_rows(path, 1)?.into_iter().map(|v| v[0]).collect())
}

/// Reads a file of numeric lines, each with `width` comma-separated values (blank lines and `#`
/// comments skipped; a non-numeric first line is a header).
pub fn read_rows(path: &Path, width: usize) -> Result<Vec<Vec<f64>>> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(&name, e))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let vals: std::result::Result<Vec<f64>, _> =
            t.split(',').map(|f| f.trim().parse::<f64>()).collect();
        match vals {
            Ok(v) if v.len() == width && v.iter().all(|x| x.is_finite()) => out.push(v),
            Err(_) if out.is_empty() && i == 0 => {}
            _ => {
                let wanted = if width == 1 {
                    "a number (one finite value per line)".to_string()
                } else {
                    format!("{width} finite comma-separated numbers")
                };
                return Err(Error::data(format!(
                    "{name}, line {}: '{t}' is not {wanted}",
                    i + 1
                )));
            }
        }
    }
    Ok(out)
}
