//! Data sets: a plain row-major feature matrix with labels, built from a generator or a CSV file.
//!
//! - [`radial`]: laws for r = G(x, y) with exactly known k-th moment (Assumption 6.1);
//! - [`generator`]: x = r u with teacher labels;
//! - [`csv`] and [`split`]: real data, seeded train/test splits, standardization;
//! - [`preprocess`]: the public per-row transform a train config carries (clamp, centre, scale);
//! - [`summary`]: the spread of the G_i (Tables 4 to 7) and Hill's tail-index estimate.

pub mod csv;
pub mod generator;
pub mod preprocess;
pub mod radial;
pub mod split;
pub mod summary;

pub use crate::dataset::Dataset;
