//! Privacy accounting for the Poisson-subsampled Gaussian mechanism of Algorithm 1: an RDP
//! accountant ([`rdp`]), a tight PLD accountant ([`pld`]), noise calibration and the effective nu
//! of Theorem 3.4 ([`calibrate()`]), the private minimum of the per-sample Lipschitz constants used
//! as the clip norm in Section 5.2 ([`min_lipschitz`]), runs given by epochs or made of phases
//! ([`phases`]), the analytic Gaussian mechanism
//! ([`gaussian`]), the epsilon of a run as it goes ([`running`]) and the (eps, delta)-DP -> zCDP conversion of Lemma L.2 ([`zcdp`]).
//! Derivations and sources: paper_refs/privacy.md.

pub mod bound_selection;
pub mod calibrate;
pub mod exact;
mod fft;
pub mod gaussian;
pub mod guarantee;
pub mod ledger;
mod math;
pub mod min_lipschitz;
pub mod phases;
pub mod pld;
pub mod rdp;
pub mod report;
pub mod running;
pub mod standardize;
mod validate;
pub mod zcdp;

pub use calibrate::{AccountantKind, Accounted, Calibration, calibrate, calibrate_noise, nu_eff};
pub use min_lipschitz::{RnmmConfig, RnmmOutput, private_min_lipschitz};
pub use phases::{Phase, steps_from_epochs};
pub use pld::{PLD_MEMORY_BOUND, PldAccountant, PldEpsilon, PldGrid, PldUpper, TAIL_SHARE};
pub use rdp::{Conversion, RdpAccountant, RdpEpsilon};

pub(crate) use math::subsampled_gaussian_loss;

use crate::dpsgd::Calibrator;
use crate::error::Result;

impl Calibrator for AccountantKind {
    fn noise_multiplier(&self, q: f64, steps: usize, epsilon: f64, delta: f64) -> Result<f64> {
        calibrate_noise(*self, q, steps, epsilon, delta)
    }
    fn name(&self) -> &'static str {
        self.as_str()
    }
}
