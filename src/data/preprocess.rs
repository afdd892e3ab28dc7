//! The per-row transform a private pipeline applies before training: clamp each feature into
//! [min_j, max_j], then x_j -> (x_j - center_j) / scale_j. Its parameters are public (a data
//! set's documented ranges) or a DP release (the private standardization), so applying it to
//! every row is post-processing and each row's transform depends on that row alone: adding or
//! removing a row changes no other row's transformed value, and sensitivity arguments made on
//! the transformed rows (RNMM's count, DP-SGD's clipped sums) hold unchanged.
//!
//! With documented ranges the map is x -> (clamp(x, min, max) - (min + max) / 2) / ((max - min)
//! / 2), into [-1, 1]^d: the clamp matters because documented ranges are rounded (breast_cancer's
//! "mean smoothness" is documented from 0.053, and the data go down to 0.05263).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Dataset;
use crate::error::{Error, Result};

/// Clamp, centre and scale, per feature (a train config's `[preprocess]` table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preprocess {
    /// Where the parameters come from (shown in the output; not used in the transform).
    #[serde(default)]
    pub source: String,
    /// Per-feature centres, subtracted after the clamp.
    pub center: Vec<f64>,
    /// Per-feature scales (> 0), divided by after centring.
    pub scale: Vec<f64>,
    /// Per-feature lower ends of the clamp (None: no lower clamp).
    #[serde(default)]
    pub clamp_min: Option<Vec<f64>>,
    /// Per-feature upper ends of the clamp (None: no upper clamp).
    #[serde(default)]
    pub clamp_max: Option<Vec<f64>>,
}

impl Preprocess {
    /// The map of public ranges [min_j, max_j] into [-1, 1] (module doc). A feature documented
    /// as constant (min = max) is centred at that value with scale 1.
    pub fn from_ranges(ranges: &[(f64, f64)], source: &str) -> Result<Self> {
        for (j, &(lo, hi)) in ranges.iter().enumerate() {
            if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                return Err(Error::data(format!(
                    "{source}: feature {}: range [{lo}, {hi}] must be finite with min <= max",
                    j + 1
                )));
            }
        }
        let p = Preprocess {
            source: source.to_string(),
            center: ranges.iter().map(|(lo, hi)| 0.5 * (lo + hi)).collect(),
            scale: ranges
                .iter()
                .map(|(lo, hi)| if hi > lo { 0.5 * (hi - lo) } else { 1.0 })
                .collect(),
            clamp_min: Some(ranges.iter().map(|r| r.0).collect()),
            clamp_max: Some(ranges.iter().map(|r| r.1).collect()),
        };
        p.check(ranges.len())?;
        Ok(p)
    }

    /// Refuses parameters that do not fit `d` features or are not finite (a NaN centre would
    /// train on NaN features), and scales <= 0.
    pub fn check(&self, d: usize) -> Result<()> {
        let what = if self.source.is_empty() {
            "[preprocess]".to_string()
        } else {
            format!("[preprocess] ({})", self.source)
        };
        let lens = [
            ("center", Some(&self.center)),
            ("scale", Some(&self.scale)),
            ("clamp_min", self.clamp_min.as_ref()),
            ("clamp_max", self.clamp_max.as_ref()),
        ];
        for (key, v) in lens {
            let Some(v) = v else { continue };
            if v.len() != d {
                return Err(Error::param(format!(
                    "{what} {key} has {} entries, but the data have d = {d} features",
                    v.len()
                )));
            }
            if let Some(x) = v.iter().find(|x| !x.is_finite()) {
                return Err(Error::param(format!(
                    "{what} {key} has the entry {x}; every entry must be finite"
                )));
            }
        }
        if let Some(s) = self.scale.iter().find(|s| **s <= 0.0) {
            return Err(Error::param(format!(
                "{what} scale has the entry {s}; scales must be > 0"
            )));
        }
        if let (Some(lo), Some(hi)) = (&self.clamp_min, &self.clamp_max)
            && let Some(j) = (0..d).find(|&j| lo[j] > hi[j])
        {
            return Err(Error::param(format!(
                "{what} feature {}: clamp_min {} > clamp_max {}",
                j + 1,
                lo[j],
                hi[j]
            )));
        }
        Ok(())
    }

    /// Transforms every row of `data` in place (after [`Preprocess::check`]).
    pub fn apply(&self, data: &mut Dataset) -> Result<()> {
        self.check(data.d)?;
        let d = data.d;
        for row in data.x.chunks_exact_mut(d) {
            for (j, v) in row.iter_mut().enumerate() {
                let mut x = *v;
                if let Some(lo) = &self.clamp_min {
                    x = x.max(lo[j]);
                }
                if let Some(hi) = &self.clamp_max {
                    x = x.min(hi[j]);
                }
                *v = (x - self.center[j]) / self.scale[j];
            }
        }
        Ok(())
    }
}

/// Reads a ranges file: a header (e.g. `feature,min,max`), then one line per feature in the data's
/// column order, `name,min,max` or `min,max` (blank lines and `#` comments skipped).
pub fn read_ranges(path: &Path) -> Result<Vec<(f64, f64)>> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(&name, e))?;
    let mut out = Vec::new();
    let mut header_seen = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = t.split(',').map(str::trim).collect();
        let nums: Vec<Option<f64>> = fields.iter().map(|f| f.parse::<f64>().ok()).collect();
        let k = fields.len();
        let parsed = match (k, nums.get(k.wrapping_sub(2)), nums.last()) {
            (2.., Some(Some(lo)), Some(Some(hi))) => Some((*lo, *hi)),
            _ => None,
        };
        match parsed {
            Some(r) => out.push(r),
            None if !header_seen && out.is_empty() => header_seen = true,
            None => {
                return Err(Error::data(format!(
                    "{name}, line {}: '{t}' is not 'min,max' or 'name,min,max'",
                    i + 1
                )));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ranges map into [-1, 1] with the clamp, per row: a value below the documented minimum
    /// lands on -1, not below it, and a row's transform does not depend on the other rows.
    #[test]
    fn ranges_map_into_the_unit_box_with_the_clamp() {
        let p = Preprocess::from_ranges(&[(0.0, 16.0), (0.053, 0.163), (2.0, 2.0)], "t").unwrap();
        let mut a =
            Dataset::new(vec![16.0, 0.05263, 2.0, 0.0, 0.108, 5.0], vec![0.0; 2], 3).unwrap();
        p.apply(&mut a).unwrap();
        assert_eq!(a.x[0], 1.0);
        assert!((a.x[1] + 1.0).abs() < 1e-12, "{}", a.x[1]);
        assert_eq!(a.x[2], 0.0);
        assert_eq!(a.x[3], -1.0);
        assert!((a.x[4] - 0.0).abs() < 1e-12);
        assert_eq!(a.x[5], 0.0);
    }

    #[test]
    fn non_finite_or_mismatched_parameters_are_refused() {
        let ok = Preprocess::from_ranges(&[(0.0, 1.0)], "t").unwrap();
        let mut bad = ok.clone();
        bad.center[0] = f64::NAN;
        assert!(bad.check(1).is_err());
        let mut bad = ok.clone();
        bad.scale[0] = 0.0;
        assert!(bad.check(1).is_err());
        assert!(ok.check(2).is_err());
        assert!(Preprocess::from_ranges(&[(1.0, 0.0)], "t").is_err());
    }
}
