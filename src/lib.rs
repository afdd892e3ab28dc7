//! dpsgd-lab: the theory of DP-SGD under generalized Lipschitzness, made executable.
//!
//! Implements "Beyond Uniform Lipschitz Condition in Differentially Private Optimization":
//! Algorithm 1 ([`dpsgd`]) and its empirical privacy audit ([`audit`]), the loss families with per-sample Lipschitz constants ([`loss`]),
//! data sets ([`data`]), privacy accounting ([`privacy`]) and the theorems ([`theory`]).

pub mod audit;
pub mod clipnorm;
pub mod config;
pub mod data;
pub mod dpsgd;
pub mod error;
pub mod experiment;
pub mod linalg;
pub mod loss;
pub mod lower_bound;
pub mod plot;
pub mod privacy;
pub mod rng;
pub mod theory;

pub use error::{Error, Result};
