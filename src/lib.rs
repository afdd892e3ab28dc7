//! dpsgd-lab: the theory of DP-SGD under generalized Lipschitzness, made executable.
//!
//! Implements "Beyond Uniform Lipschitz Condition in Differentially Private Optimization":
//! Algorithm 1 ([`dpsgd`]) and its empirical privacy audit ([`audit`]), the loss families with per-sample Lipschitz constants ([`loss`]),
//! data sets ([`data`]), privacy accounting ([`privacy`]) and the theorems ([`theory`]).
//!
//! # Layers
//!
//! Each module uses only modules on its own row's left or on rows below it; there is no cycle.
//!
//! ```text
//! cli, main                      the command line (src/cli, src/main.rs)
//! experiment, clipnorm, audit    Monte Carlo verification; the clip-norm study; privacy audit
//! config, train                  run configurations and data sources, assembled from below;
//!                                  one `train` run (CLI and Python share it)
//! theory, lower_bound            the theorems' schedules and bounds; the Appendix L instance
//! dpsgd -> privacy               Algorithm 1; accountants (fill dpsgd's Calibrator seam)
//! loss, data, plot               per-sample losses; generators, CSV, summaries; figures
//! rng, error, linalg, stats,     seeded streams, errors, GEMM and solves, the quantile,
//!   fingerprint, dataset,          a stable hash, the plain data set, k = inf in serde,
//!   k_serde, limits                up-front memory and work estimates
//! ```

pub mod audit;
pub mod clipnorm;
pub mod config;
pub mod data;
pub mod dataset;
pub mod dpsgd;
pub mod error;
pub mod experiment;
pub mod fingerprint;
pub mod k_serde;
pub mod limits;
pub mod linalg;
pub mod loss;
pub mod lower_bound;
pub mod plot;
pub mod privacy;
pub mod results_file;
pub mod rng;
pub mod stats;
pub mod theory;
pub mod train;

pub use error::{Error, Result};
