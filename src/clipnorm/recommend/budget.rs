//! The plan's budget under composition: each stage's privacy curve, and DP-SGD's noise
//! calibrated so that all stages together meet the request's (epsilon, delta).
//!
//! The stages used to split epsilon by basic composition (the epsilons add). Each stage has a
//! Rényi curve ([`Guarantee`]): the private standardization is rho-zCDP, the range check's
//! Laplace count epsilon-DP, RNMM an exponential mechanism (epsilon^2/8-zCDP, Cesar & Rogers
//! 2021), DP-SGD a subsampled Gaussian. Their RDP composition (Mironov 2017, Prop. 1), converted
//! once at the request's delta (Balle et al. 2020, Thm 21), leaves DP-SGD more than the basic
//! split does: for RNMM at 0.3 and a total of 1, DP-SGD's noise is that of epsilon 0.78 alone
//! rather than 0.70. The plan takes the smaller noise multiplier of the two rules (both valid);
//! the ledger composes the recorded curves the same way ([`crate::privacy::ledger`]).

use super::{AdviceRequest, DEFAULT_CHECK_EPSILON, DEFAULT_RNMM_EPSILON};
use crate::error::{Error, Result, check_open, check_positive, fmt_num};
use crate::privacy::calibrate::Z_MAX;
use crate::privacy::ledger::{Guarantee, Release, Spend, compose};
use crate::privacy::{AccountantKind, RdpAccountant};
use crate::rng::NOT_PRIVATE;

/// The command as the ledger records it: with `--reproducible`, its seed and that it is not a
/// private release.
pub fn ledger_command(reproducible: bool, seed: u64) -> String {
    if reproducible {
        format!("clipnorm recommend --seed {seed} --reproducible ({NOT_PRIVATE})")
    } else {
        "clipnorm recommend".to_string()
    }
}

/// A private stage of the plan before DP-SGD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The private standardization.
    Standardization,
    /// The range check.
    RangeCheck,
    /// RNMM's selection.
    Rnmm,
}

/// The planned spends of the stages before DP-SGD, in their order (std: the private
/// standardization's (epsilon, delta), zero when not run).
pub fn stage_spends(
    command: &str,
    (std_epsilon, std_delta): (f64, f64),
    check_epsilon: f64,
    rnmm_epsilon: f64,
) -> Vec<(Stage, Spend)> {
    let mut v = Vec::new();
    if std_epsilon > 0.0 {
        v.push((
            Stage::Standardization,
            Spend::with_curve(
                command,
                STD_MECHANISM,
                (std_epsilon, std_delta),
                Guarantee::Zcdp {
                    rho: crate::privacy::standardize::rho_for(std_epsilon, std_delta),
                },
            ),
        ));
    }
    if check_epsilon > 0.0 {
        v.push((
            Stage::RangeCheck,
            Spend::with_curve(
                command,
                CHECK_MECHANISM,
                (check_epsilon, 0.0),
                Guarantee::Pure {
                    epsilon: check_epsilon,
                },
            ),
        ));
    }
    v.push((
        Stage::Rnmm,
        Spend::with_curve(
            command,
            RNMM_MECHANISM,
            (rnmm_epsilon, 0.0),
            Guarantee::ExponentialMechanism {
                epsilon: rnmm_epsilon,
            },
        ),
    ));
    v
}

/// The ledger's name of the private standardization.
pub const STD_MECHANISM: &str =
    "private standardization (exponential mechanism + Gaussian sums, zCDP)";
/// The ledger's name of the range check.
pub const CHECK_MECHANISM: &str = "range check (Laplace count, pure DP)";
/// The ledger's name of RNMM.
pub const RNMM_MECHANISM: &str = "RNMM (Report Noisy Max, pure DP)";

/// DP-SGD's calibrated noise under the plan's composition.
#[derive(Debug, Clone, PartialEq)]
pub struct ComposedCalibration {
    /// The noise multiplier.
    pub z: f64,
    /// DP-SGD's own epsilon at `delta` (what `train` calibrates back to z).
    pub epsilon: f64,
    /// The delta of that statement: the request's delta less the standardization's.
    pub delta: f64,
    /// The accountant of `epsilon` ("rdp" when the RDP composition gave the smaller z).
    pub accountant: AccountantKind,
    /// The label to print beside z.
    pub label: String,
    /// What basic composition would have left DP-SGD (epsilon at `delta`).
    pub basic_epsilon: f64,
    /// The composition of every stage and DP-SGD at the request's delta (<= the request's epsilon).
    pub total_epsilon: f64,
}

/// DP-SGD's release at (q, z, steps) as a planned spend with its own `epsilon` at `delta`.
pub fn dpsgd_spend(command: &str, q: f64, z: f64, steps: usize, epsilon: f64, delta: f64) -> Spend {
    Spend::with_curve(
        command,
        "DP-SGD (Poisson-subsampled Gaussian)",
        (epsilon, delta),
        Guarantee::SubsampledGaussian { q, z, steps },
    )
}

/// The smallest z with RDP-composition(stages, DP-SGD(q, z, steps)) <= epsilon at `total_delta`
/// (bisection on log z to relative 1e-6, rounded up); compared with the basic split's z
/// (`basic_epsilon`, `delta` by `kind`), the smaller is kept (module doc).
#[allow(clippy::too_many_arguments)]
pub fn calibrate_composed(
    kind: AccountantKind,
    stages: &[(Stage, Spend)],
    (q, steps): (f64, usize),
    (epsilon, total_delta): (f64, f64),
    (basic_epsilon, delta): (f64, f64),
) -> Result<ComposedCalibration> {
    let fixed: Vec<Release> = stages.iter().map(|(_, s)| s.release()).collect();
    let composed = |z: f64| -> Result<f64> {
        let mut all = fixed.clone();
        all.push(Release {
            guarantee: Guarantee::SubsampledGaussian { q, z, steps },
            epsilon: f64::INFINITY,
            delta: 0.0,
        });
        Ok(compose(&all, total_delta)?.rdp_epsilon)
    };
    let basic = crate::privacy::calibrate::calibrate(kind, q, steps, basic_epsilon, delta)?;
    let (mut lo, mut hi) = (1e-6_f64, Z_MAX);
    let z_rdp = if composed(hi)? > epsilon {
        f64::INFINITY
    } else {
        while hi / lo > 1.0 + 1e-6 {
            let mid = (lo * hi).sqrt();
            if composed(mid)? <= epsilon {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    };
    if z_rdp < basic.z {
        let own = RdpAccountant::default()
            .epsilon(q, steps, z_rdp, delta)?
            .epsilon;
        Ok(ComposedCalibration {
            z: z_rdp,
            epsilon: own,
            delta,
            accountant: AccountantKind::Rdp,
            label: "rdp (stages composed in RDP)".into(),
            basic_epsilon,
            total_epsilon: composed(z_rdp)?,
        })
    } else if basic.z.is_finite() {
        let mut all = fixed.clone();
        all.push(dpsgd_spend("", q, basic.z, steps, basic.achieved.epsilon, delta).release());
        Ok(ComposedCalibration {
            z: basic.z,
            epsilon: basic.achieved.epsilon,
            delta,
            accountant: kind,
            label: basic.achieved.label(),
            basic_epsilon,
            total_epsilon: compose(&all, total_delta)?.epsilon,
        })
    } else {
        Err(Error::param(format!(
            "no noise multiplier up to {} meets epsilon {} for DP-SGD",
            fmt_num(Z_MAX),
            fmt_num(epsilon)
        )))
    }
}

/// Whether DP-SGD at (q, z, steps) fits the total `epsilon` (at the request's `delta`) beside
/// the stages the plan runs at that total (`split`; the standardization's delta `std_delta`):
/// by the basic split (DP-SGD's own epsilon by `kind` at delta - std_delta within what the
/// stages leave) or by the RDP composition of them all, as [`calibrate_composed`] allows.
pub fn fits(
    kind: AccountantKind,
    split: &super::small::BudgetSplit,
    (epsilon, delta, std_delta): (f64, f64, f64),
    (q, z, steps): (f64, f64, usize),
) -> Result<bool> {
    let (std_epsilon, rnmm) = split.at(epsilon);
    let left = epsilon - std_epsilon - split.check - rnmm;
    let stages = stage_spends("", (std_epsilon, std_delta), split.check, rnmm);
    let own = kind.epsilon(q, steps, z, delta - std_delta)?;
    if left > 0.0 && own <= left {
        return Ok(true);
    }
    let mut all: Vec<Release> = stages.iter().map(|(_, s)| s.release()).collect();
    all.push(Release {
        guarantee: Guarantee::SubsampledGaussian { q, z, steps },
        epsilon: f64::INFINITY,
        delta: 0.0,
    });
    Ok(compose(&all, delta)?.rdp_epsilon <= epsilon)
}

/// epsilon of the range check: the given one (0: not run), none for an exact range (it covers
/// every G_i: there is nothing to check), else the default.
pub(super) fn range_check_epsilon(req: &AdviceRequest, exact_range: bool) -> Result<f64> {
    Ok(match req.check_epsilon {
        Some(e) if e != 0.0 => check_positive("--check-epsilon", e)?,
        Some(_) => 0.0,
        None if exact_range => 0.0,
        None => DEFAULT_CHECK_EPSILON,
    })
}

/// DP-SGD's (epsilon, delta): what the preprocessing (`std`), the range check and RNMM leave;
/// refused when nothing is left.
pub(super) fn dpsgd_budget(
    req: &AdviceRequest,
    (std_epsilon, std_delta): (f64, f64),
    check_epsilon: f64,
    rnmm_epsilon: f64,
) -> Result<(f64, f64)> {
    let dpsgd_epsilon = req.epsilon - std_epsilon - check_epsilon - rnmm_epsilon;
    let dpsgd_delta = req.delta - std_delta;
    if !(dpsgd_epsilon > 0.0 && dpsgd_delta > 0.0) {
        return Err(Error::param(format!(
            "--epsilon {} leaves {} for DP-SGD after the preprocessing ({}), the range check \
             ({}) and RNMM ({}); lower --std-share, --check-epsilon or --share",
            fmt_num(req.epsilon),
            fmt_num(dpsgd_epsilon),
            fmt_num(std_epsilon),
            fmt_num(check_epsilon),
            fmt_num(rnmm_epsilon)
        )));
    }
    Ok((dpsgd_epsilon, dpsgd_delta))
}

/// The fraction of epsilon RNMM gets: the given share, or eps_RNMM = 0.3.
pub(super) fn rnmm_share(req: &AdviceRequest) -> Result<f64> {
    match req.share {
        Some(s) => check_open("--share", s, 0.0, 1.0),
        None if req.epsilon > DEFAULT_RNMM_EPSILON => Ok(DEFAULT_RNMM_EPSILON / req.epsilon),
        None => Err(Error::param(format!(
            "--epsilon {} leaves nothing for DP-SGD after the default RNMM budget \
             {DEFAULT_RNMM_EPSILON}; give --share (a fraction of epsilon in (0, 1))",
            req.epsilon
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RNMM at 0.3 beside DP-SGD: composed in RDP, DP-SGD's noise is that of more than 0.75 alone
    /// at totals of 1 (and more than 1.85 and 3.9 at 2 and 4), where basic composition leaves
    /// 0.7 (1.7, 3.7); the composition never exceeds the total.
    #[test]
    fn the_rdp_composition_leaves_dpsgd_more_than_basic() {
        let (q, steps, delta) = (256.0 / 60000.0, 7031, 1e-5);
        for (total, floor) in [(1.0, 0.75), (2.0, 1.85), (4.0, 3.9)] {
            let stages = stage_spends("t", (0.0, 0.0), 0.0, 0.3);
            let c = calibrate_composed(
                AccountantKind::Rdp,
                &stages,
                (q, steps),
                (total, delta),
                (total - 0.3, delta),
            )
            .unwrap();
            assert!(
                c.epsilon >= floor,
                "total {total}: DP-SGD alone {}",
                c.epsilon
            );
            assert!(c.total_epsilon <= total, "{c:?}");
            assert!(c.basic_epsilon < c.epsilon);
        }
    }
}
