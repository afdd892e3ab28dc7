//! dpsgd-lab: the theory of DP-SGD under generalized Lipschitzness, made executable.
//!
//! Implements "Beyond Uniform Lipschitz Condition in Differentially Private Optimization":
//! Algorithm 1 ([`dpsgd`]) and its empirical privacy audit ([`audit`]), the loss families with per-sample Lipschitz constants ([`loss`]),
//! data sets ([`data`]), privacy accounting ([`privacy`]) and the theorems ([`theory`]).
//!
//! # Use from Rust
//!
//! Algorithm 1 on a data set in memory, with the noise calibrated to a target (epsilon, delta)
//! by the RDP accountant, and the epsilon the run spent:
//!
//! ```
//! use dpsgd_lab::data::Dataset;
//! use dpsgd_lab::dpsgd::{AccountantKind, DpSgd, DpSgdConfig, NoiseSpec, StepSchedule};
//! use dpsgd_lab::loss::{HuberLoss, mean_value};
//!
//! // n = 200 samples of y = 2 x with d = 1 feature.
//! let x: Vec<f64> = (0..200).map(|i| i as f64 / 100.0 - 1.0).collect();
//! let y: Vec<f64> = x.iter().map(|v| 2.0 * v).collect();
//! let data = Dataset::new(x, y, 1)?;
//! let loss = HuberLoss::new(1, 1.0)?;
//!
//! // T = 500 steps, expected batch b = 20, eta = 0.1, clip norm tau = 1.
//! let noise = NoiseSpec::Target { epsilon: 2.0, delta: 1e-5, accountant: AccountantKind::Rdp };
//! let cfg = DpSgdConfig::new(
//!     500,
//!     20.0,
//!     StepSchedule::Constant(0.1),
//!     StepSchedule::Constant(1.0),
//!     noise,
//! );
//! let alg = DpSgd::new(cfg, data.n, Some(&AccountantKind::Rdp))?;
//! let out = alg.run(&loss, &data, 7, 0)?; // (seed, replicate): the run is a pure function of them
//!
//! let z = alg.noise().multiplier;
//! let spent = AccountantKind::Rdp.epsilon(20.0 / 200.0, 500, z, 1e-5)?;
//! assert!(spent <= 2.0);
//! assert!(mean_value(&loss, &out.w_priv, &data) < mean_value(&loss, &[0.0], &data));
//! # Ok::<(), dpsgd_lab::Error>(())
//! ```
//!
//! # Layers
//!
//! Each module uses only modules on its own row's left or on rows below it; there is no cycle.
//! `tests/tidy.rs` checks both against the imports.
//!
//! ```text
//! cli, main                      the command line (src/cli, src/main.rs)
//! experiment, clipnorm, audit,   Monte Carlo verification; the clip-norm study; privacy audit;
//!   pipeline                       the private recipe measured end to end
//! model, config, train           a flat parameter vector as a classifier; run configurations
//!                                  and data sources, assembled from below; one `train` run
//!                                  (CLI and Python share it)
//! theory, lower_bound            the theorems' schedules and bounds; the Appendix L instance
//! dpsgd -> privacy               Algorithm 1; accountants (fill dpsgd's Calibrator seam)
//! loss, data, plot               per-sample losses; generators, CSV, summaries; figures
//! error, rng, linalg, stats,     errors, seeded streams, GEMM, solves and vector math, the
//!   fingerprint, dataset,          quantile, a stable hash, the plain data set, k = inf in serde,
//!   k_serde, limits, optimize,     up-front memory and work estimates, golden-section search,
//!   results_file, format           the keyed, hashed, locked results file of long runs, how
//!                                    reports print numbers
//! ```

// Every unsafe block states why it is sound (code-review.md section 4).
#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod audit;
pub mod clipnorm;
pub mod config;
pub mod data;
pub mod dataset;
pub mod dpsgd;
pub mod error;
pub mod experiment;
pub(crate) mod fingerprint;
pub mod format;
pub(crate) mod k_serde;
pub mod limits;
pub mod linalg;
pub mod loss;
pub mod lower_bound;
pub mod model;
pub(crate) mod optimize;
pub mod pipeline;
pub mod plot;
pub mod privacy;
pub mod results_file;
pub mod rng;
pub mod stats;
#[cfg(test)]
mod test_dir;
pub mod theory;
pub mod train;

pub use error::{Error, Result};
