//! The paper's clip-norm advice head to head with what practitioners use instead:
//! adaptive quantile clipping (Andrew et al. 2021), automatic clipping (Bu et al. 2023), the
//! common default tau = 1, and the best fixed tau in hindsight (the oracle). Every method spends
//! the same total (epsilon, delta):
//!
//! - fixed tau (default, oracle) and automatic clipping: T Poisson-subsampled Gaussian steps
//!   with noise multiplier z calibrated to (epsilon, delta) (automatic clipping's sensitivity
//!   is 1, so its noise sd on the sum is z);
//! - paper: RNMM's pure eps_RNMM, then DP-SGD calibrated to (epsilon - eps_RNMM, delta) (basic
//!   composition);
//! - adaptive: each step releases the clipped sum with noise sd sigma_grad C_t and the centred
//!   unclipped count with noise sd sigma_b; Andrew et al.'s Theorem 1 makes this one Gaussian
//!   mechanism with noise multiplier z, z^-2 = sigma_grad^-2 + (2 sigma_b)^-2, so z is
//!   calibrated to (epsilon, delta) and sigma_grad = (z^-2 - (2 sigma_b)^-2)^(-1/2)
//!   ([`adaptive_noise_split`]). The count takes the share z^2 / (2 sigma_b)^2 of the step's
//!   privacy ([`adaptive_count_share`]); a second arm fixes that share instead of sigma_b
//!   ([`count_noise_for_share`]).
//!
//! eta is tuned over the same grid for every method, with the same runs and common random
//! numbers (batches and gradient noise of run r are shared by all methods).

use serde::{Deserialize, Serialize};

use super::config::MethodsSpec;
use super::grid::{Cell, CellKind, TauPoint, fmt_tau};
use super::train::{Adaptive, Rule};
use crate::error::{Error, Result};

/// Andrew et al. (2021), Theorem 1, solved for the gradient noise: the noise multiplier
/// sigma_grad of the clipped sum such that, with count noise sigma_b, one step is a Gaussian
/// mechanism with noise multiplier z: sigma_grad = (z^-2 - (2 sigma_b)^-2)^(-1/2). Exists only
/// when 2 sigma_b > z (the count alone must not already spend the step's budget).
pub fn adaptive_noise_split(z: f64, sigma_b: f64) -> Result<f64> {
    if !(z > 0.0 && z.is_finite() && sigma_b > 0.0 && sigma_b.is_finite()) {
        return Err(Error::param(format!(
            "adaptive clipping needs a finite noise multiplier z > 0 and count noise sigma_b > 0, \
             but z = {z}, sigma_b = {sigma_b}"
        )));
    }
    let r = z.powi(-2) - (2.0 * sigma_b).powi(-2);
    if r <= 0.0 {
        return Err(Error::param(format!(
            "adaptive clipping: count noise sigma_b = {sigma_b:.4} is too small for noise \
             multiplier z = {z:.4}; the split sigma_grad = (z^-2 - (2 sigma_b)^-2)^(-1/2) needs \
             2 sigma_b > z (use a larger batch or count noise)"
        )));
    }
    Ok(r.powf(-0.5))
}

/// The share of one adaptive step's privacy that the released count takes (Andrew et al. 2021,
/// Theorem 1): the step is one Gaussian mechanism with z^-2 = sigma_grad^-2 + (2 sigma_b)^-2,
/// i.e. the two releases' squared Gaussian-DP parameters mu^2 = z^-2 add, and the count's part
/// is (2 sigma_b)^-2 / z^-2 = z^2 / (2 sigma_b)^2. A value >= 1 means the count alone spends
/// the step's budget and [`adaptive_noise_split`] has no solution.
pub fn adaptive_count_share(z: f64, sigma_b: f64) -> f64 {
    (z / (2.0 * sigma_b)).powi(2)
}

/// The count noise that gives the count the share `share` in (0, 1) of the step's privacy
/// ([`adaptive_count_share`] solved for sigma_b): (2 sigma_b)^-2 = share z^-2, so
/// sigma_b = z / (2 sqrt(share)); the gradient then gets sigma_grad = z / sqrt(1 - share)
/// from [`adaptive_noise_split`].
pub fn count_noise_for_share(z: f64, share: f64) -> Result<f64> {
    if !(z > 0.0 && z.is_finite() && share > 0.0 && share < 1.0) {
        return Err(Error::param(format!(
            "adaptive clipping's count share needs z > 0 finite and a share in (0, 1), but \
             z = {z}, share = {share}"
        )));
    }
    Ok(z / (2.0 * share.sqrt()))
}

/// A share in (0, 1) as a percentage: one decimal from 1 %, two below ("73.0 %", "0.22 %").
pub fn fmt_share(share: f64) -> String {
    let p = 100.0 * share;
    if p >= 1.0 {
        format!("{p:.1} %")
    } else {
        format!("{p:.2} %")
    }
}

/// The inverse of [`adaptive_noise_split`]: the single noise multiplier z with
/// z^-2 = sigma_grad^-2 + (2 sigma_b)^-2 that one adaptive step is equivalent to.
pub fn adaptive_effective_z(sigma_grad: f64, sigma_b: f64) -> f64 {
    (sigma_grad.powi(-2) + (2.0 * sigma_b).powi(-2)).powf(-0.5)
}

/// A compared method.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Method {
    /// tau = private G_1 by RNMM (Remark 5.6, Table 3).
    Paper,
    /// Adaptive quantile clipping at target quantile gamma.
    Adaptive {
        /// Target fraction gamma in (0, 1) of per-sample gradients left unclipped.
        quantile: f64,
    },
    /// Adaptive quantile clipping whose count noise takes the share `share` of each step's
    /// privacy ([`count_noise_for_share`]).
    AdaptiveShare {
        /// Target fraction gamma in (0, 1) of per-sample gradients left unclipped.
        quantile: f64,
        /// The count's share in (0, 1) of each step's privacy.
        share: f64,
    },
    /// Automatic clipping g / (||g|| + gamma).
    Automatic {
        /// Stability constant gamma > 0 in g / (||g|| + gamma).
        gamma: f64,
    },
    /// A fixed default tau.
    DefaultTau {
        /// The fixed clip norm tau (1 in Opacus's tutorials).
        tau: f64,
    },
    /// The best fixed tau of the grid in hindsight.
    Oracle,
}

impl Method {
    /// The table's row label.
    pub fn label(&self) -> String {
        match self {
            Method::Paper => "paper: τ = private G_1 (RNMM)".into(),
            Method::Adaptive { quantile } => format!("adaptive quantile, γ = {quantile}"),
            Method::AdaptiveShare { quantile, share } => format!(
                "adaptive quantile, γ = {quantile}, count {}",
                fmt_share(*share)
            ),
            Method::Automatic { gamma } => format!("automatic, g/(‖g‖+{gamma})"),
            Method::DefaultTau { tau } => format!("default τ = {}", fmt_tau(*tau)),
            Method::Oracle => "oracle: best fixed τ (hindsight)".into(),
        }
    }
    /// A short label for the figure's axis.
    pub fn short_label(&self) -> String {
        match self {
            Method::Paper => "paper (RNMM G_1)".into(),
            Method::Adaptive { quantile } => format!("adaptive γ={quantile}"),
            Method::AdaptiveShare { quantile, share } => {
                format!("adaptive γ={quantile}, {} %", (1e6 * share).round() / 1e4)
            }
            Method::Automatic { .. } => "automatic".into(),
            Method::DefaultTau { tau } => format!("τ = {}", fmt_tau(*tau)),
            Method::Oracle => "oracle τ".into(),
        }
    }
}

/// What the methods other than the grid and RNMM train, per epsilon.
#[derive(Debug, Clone)]
pub struct MethodPlan {
    /// The `[methods]` settings of the study's config.
    pub spec: MethodsSpec,
    /// Count noise sigma_b = adaptive_count_noise x b.
    pub sigma_b: f64,
    /// Per epsilon: the adaptive gradient noise multiplier sigma_grad, or why the split does
    /// not exist.
    pub adaptive_sigma: Vec<std::result::Result<f64, String>>,
    /// Per epsilon, the count-share arm's (sigma_b, sigma_grad) = (z / (2 sqrt(s)),
    /// z / sqrt(1 - s)); empty without `adaptive_count_share`.
    pub share_split: Vec<(f64, f64)>,
    /// The grid index of the default tau, when the grid holds it (its cells are reused).
    pub default_in_grid: Option<usize>,
}

impl MethodPlan {
    /// The plan for expected batch `batch`, noise multipliers `zs` (one per epsilon) and the
    /// clip-norm grid.
    pub fn new(spec: &MethodsSpec, batch: f64, zs: &[f64], taus: &[TauPoint]) -> Self {
        let sigma_b = spec.adaptive_count_noise * batch;
        MethodPlan {
            spec: spec.clone(),
            sigma_b,
            adaptive_sigma: zs
                .iter()
                .map(|&z| adaptive_noise_split(z, sigma_b).map_err(|e| e.to_string()))
                .collect(),
            share_split: spec.adaptive_count_share.map_or_else(Vec::new, |share| {
                zs.iter()
                    .map(|&z| {
                        let sb = count_noise_for_share(z, share).expect("share checked in (0, 1)");
                        (
                            sb,
                            adaptive_noise_split(z, sb).expect("share < 1 leaves a split"),
                        )
                    })
                    .collect()
            }),
            default_in_grid: taus.iter().position(|t| t.tau == spec.default_tau),
        }
    }

    /// The cells to train, in a fixed order.
    pub fn cells(&self, n_eta: usize, runs: usize) -> Vec<Cell> {
        let mut out = Vec::new();
        let mut push = |kind: CellKind| {
            for eta_idx in 0..n_eta {
                for run in 0..runs {
                    out.push(Cell { kind, eta_idx, run });
                }
            }
        };
        for (eps, sg) in self.adaptive_sigma.iter().enumerate() {
            if self.default_in_grid.is_none() {
                push(CellKind::DefaultTau { eps });
            }
            if sg.is_ok() {
                for quantile in 0..self.spec.adaptive_quantiles.len() {
                    push(CellKind::Adaptive { eps, quantile });
                }
            }
            if !self.share_split.is_empty() {
                for quantile in 0..self.spec.adaptive_quantiles.len() {
                    push(CellKind::AdaptiveShare { eps, quantile });
                }
            }
            if self.spec.automatic {
                push(CellKind::Automatic { eps });
            }
        }
        out
    }

    /// The rule of an adaptive or automatic cell at noise multiplier `z` (None for a cell of
    /// another group).
    pub fn rule(&self, c: &Cell, z: f64) -> Option<Rule> {
        let adaptive = |quantile: usize, (sigma_b, sigma_grad): (f64, f64)| {
            Some(Rule::Adaptive(Adaptive {
                quantile: self.spec.adaptive_quantiles[quantile],
                lr: self.spec.adaptive_lr,
                initial: self.spec.adaptive_initial,
                sigma_b,
                sigma_grad,
            }))
        };
        match c.kind {
            CellKind::Adaptive { eps, quantile } => adaptive(
                quantile,
                (
                    self.sigma_b,
                    *self.adaptive_sigma[eps].as_ref().expect("split exists"),
                ),
            ),
            CellKind::AdaptiveShare { eps, quantile } => adaptive(quantile, self.share_split[eps]),
            CellKind::Automatic { .. } => Some(Rule::Automatic {
                gamma: self.spec.automatic_gamma,
                z,
            }),
            _ => None,
        }
    }
}
