//! The theorems as code: phi (Eq. 1), each theorem's schedule and explicit bound, alpha(tau)
//! and Delta(w*) (Definitions 5.3 and 5.2), and a geometric-median solver for Appendix E.
//!
//! `paper_refs/theorems.md` maps every theorem and equation to its function and its test.

pub mod alpha;
pub mod bounds;
pub mod geometric_median;
pub mod phi;
pub mod schedules;

pub use alpha::{
    AlphaEstimate, AlphaOptions, alpha_finite, delta_star, estimate_alpha, estimate_alpha_curve,
    per_sample_minima,
};
pub use phi::{PhiInputs, epsilon_for_phi, n_for_phi, phi, psi};
pub use schedules::{
    BoundKind, ClipNorm, Prescription, RunSchedule, Schedule, TheoremId, TheoryParams, prescribe,
    prescribe_with_clip,
};
