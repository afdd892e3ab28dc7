//! What one release guarantees, in the form the ledger composes, and the composition itself.
//!
//! Each release is recorded with its privacy curve ([`Guarantee`]) beside the (epsilon, delta)
//! its command printed. The ledger composes the curves in Rényi DP (Mironov 2017, Prop. 1: RDP of
//! a fixed order adds up under composition) and converts once, at the budget's delta (Balle et al.
//! 2020, Thm 21), instead of adding the stages' epsilons. Basic composition (Dwork & Roth 2014,
//! Thm 3.16: the epsilons and the deltas add) stays as a second valid bound; the ledger uses the
//! smaller of the two ([`compose`]). A release known only by (epsilon, delta) (an older ledger's
//! line, a PLD-accounted run) enters both by basic composition.
//!
//! Adaptivity: both bounds hold for a sequence of mechanisms fixed in advance (the recipe's
//! stages, one train run). When later spends are chosen after seeing earlier releases, basic
//! composition remains a valid privacy filter (Rogers, Roth, Ullman & Vadhan 2016); an RDP filter
//! is valid at a fixed order (Feldman & Zrnic 2021), and minimizing over orders after the fact is
//! not covered by that theorem (docs/recommend.md, "What the ledger promises").

use serde::{Deserialize, Serialize};

use super::rdp::{Conversion, RdpAccountant, rdp_to_epsilon};
use crate::error::{Error, Result};

/// The privacy curve of one release.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Guarantee {
    /// Pure epsilon-DP (the range check's Laplace count): RDP(alpha) <= min(epsilon,
    /// alpha epsilon^2 / 2) (Bun & Steinke 2016, Prop. 3.3: epsilon-DP is epsilon^2/2-zCDP; and
    /// D_alpha <= D_inf = epsilon).
    Pure {
        /// epsilon.
        epsilon: f64,
    },
    /// The exponential mechanism at epsilon (RNMM with Gumbel noise, or sampled exactly): it has
    /// bounded range epsilon, hence is epsilon^2/8-zCDP (Cesar & Rogers 2021, Lemma 3.2) and
    /// epsilon-DP: RDP(alpha) <= min(epsilon, alpha epsilon^2 / 8).
    ExponentialMechanism {
        /// epsilon.
        epsilon: f64,
    },
    /// rho-zCDP (the private standardization): RDP(alpha) <= alpha rho (Bun & Steinke 2016,
    /// Def. 1.1).
    Zcdp {
        /// rho.
        rho: f64,
    },
    /// `steps` steps of the Poisson-subsampled Gaussian mechanism at rate q with noise multiplier
    /// z (DP-SGD): the RDP curve of [`RdpAccountant::rdp_curve`] (Mironov, Talwar & Zhang 2019).
    SubsampledGaussian {
        /// Sampling rate q.
        q: f64,
        /// Noise multiplier z.
        z: f64,
        /// Steps T.
        steps: usize,
    },
    /// Only (epsilon, delta)-DP is known: composed by basic composition.
    Approx {
        /// epsilon.
        epsilon: f64,
        /// delta.
        delta: f64,
    },
}

impl Guarantee {
    /// Refuses a curve with a negative, NaN or infinite parameter (a hand-edited ledger).
    pub fn check(&self) -> Result<()> {
        let ok = |v: f64| v.is_finite() && v >= 0.0;
        let good = match *self {
            Guarantee::Pure { epsilon } | Guarantee::ExponentialMechanism { epsilon } => {
                ok(epsilon)
            }
            Guarantee::Zcdp { rho } => ok(rho),
            Guarantee::SubsampledGaussian { q, z, steps } => {
                q.is_finite() && q > 0.0 && q <= 1.0 && z.is_finite() && z > 0.0 && steps >= 1
            }
            Guarantee::Approx { epsilon, delta } => ok(epsilon) && ok(delta) && delta < 1.0,
        };
        if good {
            Ok(())
        } else {
            Err(Error::data(format!("invalid privacy curve {self:?}")))
        }
    }

    /// The RDP curve at `orders` (None for [`Guarantee::Approx`], which has none).
    pub fn rdp(&self, orders: &[f64]) -> Result<Option<Vec<f64>>> {
        Ok(Some(match *self {
            Guarantee::Pure { epsilon } => orders
                .iter()
                .map(|a| epsilon.min(a * epsilon * epsilon / 2.0))
                .collect(),
            Guarantee::ExponentialMechanism { epsilon } => orders
                .iter()
                .map(|a| epsilon.min(a * epsilon * epsilon / 8.0))
                .collect(),
            Guarantee::Zcdp { rho } => orders.iter().map(|a| a * rho).collect(),
            Guarantee::SubsampledGaussian { q, z, steps } => RdpAccountant {
                orders: orders.to_vec(),
                conversion: Conversion::Improved,
            }
            .rdp_curve(q, steps, z)?,
            Guarantee::Approx { .. } => return Ok(None),
        }))
    }
}

/// One release as the composition sees it: its curve and the (epsilon, delta) its command stated
/// for it alone (the basic-composition bound uses those).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Release {
    /// The curve.
    pub guarantee: Guarantee,
    /// The release's own epsilon at `delta` (an upper bound, as its accountant computed it).
    pub epsilon: f64,
    /// The delta of that statement.
    pub delta: f64,
}

/// The (epsilon, delta) a list of releases composes to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Composed {
    /// The smaller of the two bounds below (at `delta`).
    pub epsilon: f64,
    /// The delta of that statement.
    pub delta: f64,
    /// RDP composition of the curves converted at the budget's delta less the Approx deltas,
    /// plus the Approx epsilons (inf when that delta is <= 0).
    pub rdp_epsilon: f64,
    /// Basic composition: the sum of the stated epsilons (inf when their deltas exceed the
    /// budget's delta).
    pub basic_epsilon: f64,
    /// Sum of the stated deltas.
    pub basic_delta: f64,
}

/// Composes `releases` at the budget's `delta` (module doc): the smaller of the RDP bound and the
/// basic bound, each an upper bound on the composition's epsilon at a delta <= `delta`.
pub fn compose(releases: &[Release], delta: f64) -> Result<Composed> {
    let orders = super::rdp::default_orders();
    let mut total = vec![0.0; orders.len()];
    let (mut approx_eps, mut approx_delta) = (0.0, 0.0);
    let mut any_curve = false;
    let (mut basic_eps, mut basic_delta) = (0.0, 0.0);
    for r in releases {
        r.guarantee.check()?;
        basic_eps += r.epsilon;
        basic_delta += r.delta;
        match r.guarantee.rdp(&orders)? {
            Some(curve) => {
                any_curve = true;
                for (t, c) in total.iter_mut().zip(curve) {
                    *t += c;
                }
            }
            None => {
                approx_eps += r.epsilon;
                approx_delta += r.delta;
            }
        }
    }
    let rdp_delta = delta - approx_delta;
    let rdp_epsilon = if !any_curve {
        if approx_delta <= delta * (1.0 + 1e-12) {
            approx_eps
        } else {
            f64::INFINITY
        }
    } else if rdp_delta > 0.0 {
        rdp_to_epsilon(&orders, &total, rdp_delta, Conversion::Improved).0 + approx_eps
    } else {
        f64::INFINITY
    };
    let basic_epsilon = if basic_delta <= delta * (1.0 + 1e-12) {
        basic_eps
    } else {
        f64::INFINITY
    };
    Ok(Composed {
        epsilon: rdp_epsilon.min(basic_epsilon),
        delta,
        rdp_epsilon,
        basic_epsilon,
        basic_delta,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(g: Guarantee, epsilon: f64, delta: f64) -> Release {
        Release {
            guarantee: g,
            epsilon,
            delta,
        }
    }

    /// Pure spends alone compose to their sum (basic is the smaller bound there), never more.
    #[test]
    fn pure_spends_compose_to_their_sum() {
        let c = compose(
            &[
                rel(Guarantee::Pure { epsilon: 0.05 }, 0.05, 0.0),
                rel(Guarantee::ExponentialMechanism { epsilon: 0.3 }, 0.3, 0.0),
            ],
            1e-5,
        )
        .unwrap();
        assert!((c.epsilon - 0.35).abs() < 1e-12, "{c:?}");
    }

    /// rho-zCDP alone converts as the RDP conversion of alpha rho: never above Bun & Steinke's
    /// rho + 2 sqrt(rho ln(1/delta)) (the conversion used to be the weaker one).
    #[test]
    fn zcdp_converts_no_worse_than_bun_steinke() {
        let (rho, delta) = (0.05, 1e-5);
        let c = compose(&[rel(Guarantee::Zcdp { rho }, 10.0, 0.0)], delta).unwrap();
        let bs = rho + 2.0 * (rho * (1.0f64 / delta).ln()).sqrt();
        assert!(c.rdp_epsilon <= bs, "{} > {bs}", c.rdp_epsilon);
        assert!(c.rdp_epsilon > 0.5 * bs);
    }

    /// An Approx release's delta comes off the delta the curves convert at, and its epsilon adds.
    #[test]
    fn approx_releases_enter_by_basic_composition() {
        let g = Guarantee::Zcdp { rho: 0.01 };
        let alone = compose(&[rel(g, 10.0, 0.0)], 1e-5).unwrap().rdp_epsilon;
        let both = compose(
            &[
                rel(g, 10.0, 0.0),
                rel(
                    Guarantee::Approx {
                        epsilon: 0.2,
                        delta: 5e-6,
                    },
                    0.2,
                    5e-6,
                ),
            ],
            1e-5,
        )
        .unwrap()
        .rdp_epsilon;
        let at_half = compose(&[rel(g, 10.0, 0.0)], 5e-6).unwrap().rdp_epsilon;
        assert!(
            (both - (at_half + 0.2)).abs() < 1e-12,
            "{both} vs {at_half} + 0.2"
        );
        assert!(both > alone + 0.2);
        // Deltas that exceed the budget's leave no valid statement.
        let over = compose(
            &[rel(
                Guarantee::Approx {
                    epsilon: 0.2,
                    delta: 2e-5,
                },
                0.2,
                2e-5,
            )],
            1e-5,
        )
        .unwrap();
        assert!(over.epsilon.is_infinite());
    }

    /// A subsampled Gaussian's curve alone gives the RDP accountant's epsilon, bit for bit.
    #[test]
    fn dpsgd_alone_is_the_rdp_accountants_epsilon() {
        let (q, z, steps, delta) = (0.01, 1.1, 1000, 1e-5);
        let acc = RdpAccountant::default()
            .epsilon(q, steps, z, delta)
            .unwrap();
        let c = compose(
            &[rel(
                Guarantee::SubsampledGaussian { q, z, steps },
                acc.epsilon,
                delta,
            )],
            delta,
        )
        .unwrap();
        assert_eq!(c.rdp_epsilon, acc.epsilon);
    }
}
