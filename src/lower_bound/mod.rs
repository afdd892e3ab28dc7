//! The hard instance of the lower bounds, Thm 6.6 / L.1 (W = R^d) and Thm I.3 (unit ball):
//! the packing set V (Lemma 6 of Acharya et al. 2021), the distribution Q_v, the closed-form
//! empirical minimizer of the loss of Eq. (97), and numerical checks of Eqs. (100), (107),
//! (110)-(111).
//!
//! - [`packing`]: V in {0,1}^d, weight d/2, pairwise Hamming distance >= d/8, verified;
//! - [`instance`]: Q_v, its sampler, p, G = 3||v||, (w*, f*) on any data set;
//! - [`checks`]: Assumption 6.1, far-point growth, Chernoff-event frequency.
//!
//! `paper_refs/lower_bound.md` maps each equation to its function and test, and gives the
//! parameters of a phi sweep on this instance.

pub mod checks;
pub mod instance;
pub mod packing;

pub use instance::{AppendixLSpec, Domain, Optimum, OptimumKind, QvInstance, empirical_optimum};
pub use packing::PackingSet;
