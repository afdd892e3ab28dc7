//! Rényi DP of the Poisson-subsampled Gaussian mechanism (Mironov, Talwar and Zhang 2019) and its
//! conversion to (epsilon, delta)-DP.
//!
//! One step of Algorithm 1 releases the sum of clipped gradients of a Poisson(q) batch plus
//! N(0, z^2 tau^2 I). For add/remove neighbours its RDP of order alpha is
//! log(A_alpha) / (alpha - 1) with A_alpha = E_{x ~ N(0, z^2)} [((1 - q) + q e^{(2x - 1)/(2 z^2)})^alpha]
//! (MTZ 2019, Sec. 3.3); RDP composes additively over the T steps.

use super::math::{log_add, log_erfc, log_sub};
use super::validate::{check_delta, check_q, check_steps, check_z};
use crate::error::{Error, Result};

/// Which RDP -> (epsilon, delta) conversion to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Conversion {
    /// Balle et al. 2020, Thm 21 (= Canonne, Kamath and Steinke 2020, Prop. 12; what dp_accounting
    /// and Opacus use): eps = rdp + log((alpha - 1)/alpha) - (log delta + log alpha)/(alpha - 1).
    #[default]
    Improved,
    /// Mironov 2017, Prop. 3: eps = rdp + log(1/delta)/(alpha - 1).
    Classic,
}

/// dp_accounting's default order grid: 1.1, 1.2, ..., 10.9, 11, 12, ..., 63, 128, 256, 512, 1024.
pub fn default_orders() -> Vec<f64> {
    let mut v: Vec<f64> = (11..110).map(|i| i as f64 / 10.0).collect();
    v.extend((11..64).map(|i| i as f64));
    v.extend([128.0, 256.0, 512.0, 1024.0]);
    v
}

#[cfg(test)]
/// log of the generalized binomial coefficient |C(alpha, i)| and its sign.
fn log_abs_binom(alpha: f64, i: u64) -> (f64, f64) {
    // C(alpha, i) = prod_{k=0}^{i-1} (alpha - k) / (k + 1): accumulated in logs with a sign, so
    // that the factors (alpha - k) < 0 for k > alpha flip the sign exactly.
    let mut log = 0.0;
    let mut sign = 1.0;
    for k in 0..i {
        let f = alpha - k as f64;
        if f == 0.0 {
            return (f64::NEG_INFINITY, 0.0);
        }
        if f < 0.0 {
            sign = -sign;
        }
        log += f.abs().ln() - ((k + 1) as f64).ln();
    }
    (log, sign)
}

/// log A_alpha for integer alpha >= 2, from the binomial expansion
/// A_alpha = sum_k C(alpha, k) (1 - q)^(alpha - k) q^k exp((k^2 - k) / (2 z^2)). The binomial
/// weights sum to 1, so A_alpha - 1 = sum_{k >= 2} C(alpha, k) (1 - q)^(alpha - k) q^k
/// expm1((k^2 - k) / (2 z^2)), a sum of positive terms: summing that (in logs) keeps full
/// relative precision when A_alpha - 1 is tiny (small q or large z), where summing A_alpha itself
/// would round A_alpha - 1 to 0 or below (and, past the clamp at 0, under-report the RDP).
fn log_a_minus_1_int(q: f64, z: f64, alpha: u64) -> f64 {
    let (lq, l1q) = (q.ln(), (-q).ln_1p());
    let inv = 0.5 / z / z;
    let mut acc = f64::NEG_INFINITY; // log(A - 1)
    let mut log_binom = ((alpha * (alpha - 1) / 2) as f64).ln(); // log C(alpha, 2)
    for k in 2..=alpha {
        if k > 2 {
            log_binom += ((alpha - k + 1) as f64).ln() - (k as f64).ln();
        }
        let kf = k as f64;
        let x = (kf * kf - kf) * inv;
        // log(expm1(x)), without overflow for large x.
        let log_em1 = if x > 40.0 {
            x + (-(-x).exp()).ln_1p()
        } else {
            x.exp_m1().ln()
        };
        let term = log_binom + kf * lq + (alpha - k) as f64 * l1q + log_em1;
        acc = log_add(acc, term);
    }
    acc
}

/// log A_alpha for integer alpha (see [`log_a_minus_1_int`]).
#[cfg(test)]
fn log_a_int(q: f64, z: f64, alpha: u64) -> f64 {
    log_add(0.0, log_a_minus_1_int(q, z, alpha))
}

/// log(log(1 + e^x)) without underflow for very negative x (where it is x) or overflow.
fn log_log1p_exp(x: f64) -> f64 {
    if x < -30.0 {
        // log(1 + u) = u (1 - u/2 + ...), u = e^x < 1e-13.
        x + (-0.5 * x.exp()).ln_1p()
    } else if x > 30.0 {
        (x + (-x).exp().ln_1p()).ln()
    } else {
        x.exp().ln_1p().ln()
    }
}

/// log A_alpha for fractional alpha > 1 by MTZ 2019 Sec. 3.3: A = A_0 + A_1, the integrals over
/// x <= z0 and x > z0, each an infinite series in the generalized binomial coefficients
/// C(alpha, i), which change sign for i > alpha. The terms are summed with their signs in log
/// space (dp_accounting 0.6 adds |terms|, an upper bound; see paper_refs/privacy.md).
fn log_a_frac(q: f64, z: f64, alpha: f64) -> Result<f64> {
    let (lq, l1q) = (q.ln(), (-q).ln_1p());
    let z0 = z * z * (1.0 / q - 1.0).ln() + 0.5;
    let s2 = std::f64::consts::SQRT_2 * z;
    // Positive and negative parts of each half, in logs.
    let (mut p0, mut n0, mut p1, mut n1) = (
        f64::NEG_INFINITY,
        f64::NEG_INFINITY,
        f64::NEG_INFINITY,
        f64::NEG_INFINITY,
    );
    let (mut last0, mut last1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    // log |C(alpha, i)| and its sign, updated by C(alpha, i+1) = C(alpha, i) (alpha - i)/(i + 1).
    let (mut lc, mut sign) = (0.0f64, 1.0f64);
    for i in 0..100_000u64 {
        let fi = i as f64;
        if i > 0 {
            let f = alpha - (fi - 1.0);
            if f == 0.0 {
                // alpha is an integer and the series terminates: C(alpha, i) = 0 from here on.
                sign = 0.0;
                lc = f64::NEG_INFINITY;
            } else if sign != 0.0 {
                if f < 0.0 {
                    sign = -sign;
                }
                lc += f.abs().ln() - fi.ln();
            }
        }
        let j = alpha - fi;
        let t0 = lc + fi * lq + j * l1q;
        let t1 = lc + j * lq + fi * l1q;
        let e0 = 0.5f64.ln() + log_erfc((fi - z0) / s2);
        let e1 = 0.5f64.ln() + log_erfc((z0 - j) / s2);
        let s0 = t0 + (fi * fi - fi) / (2.0 * z * z) + e0;
        let s1 = t1 + (j * j - j) / (2.0 * z * z) + e1;
        if sign > 0.0 {
            p0 = log_add(p0, s0);
            p1 = log_add(p1, s1);
        } else if sign < 0.0 {
            n0 = log_add(n0, s0);
            n1 = log_add(n1, s1);
        }
        let total = log_add(p0, p1);
        if sign == 0.0
            || (i > alpha.ceil() as u64 && s0 < last0 && s1 < last1 && s0.max(s1) < total - 36.0)
        {
            let pos = log_add(p0, p1);
            let neg = log_add(n0, n1);
            let log_a = log_sub(pos, neg);
            // A = e^pos - e^neg carries a rounding error of ~1e-15 e^pos; where A - 1 is not
            // far above it (tiny q, large z), log A has no correct digits and could under-report
            // the RDP, so the order is given up (the integer orders, summed without cancellation,
            // remain).
            let reliable = log_a.exp_m1().ln() > pos + 1e-9f64.ln();
            if !reliable {
                return Err(Error::Numerical(format!(
                    "RDP series at order {alpha} (q = {q}, z = {z}) cancelled below its rounding error"
                )));
            }
            return Ok(log_a);
        }
        last0 = s0;
        last1 = s1;
    }
    Err(Error::Numerical(format!(
        "RDP series at order {alpha} (q = {q}, z = {z}) did not converge"
    )))
}

/// RDP of order `alpha` > 1 of one step of the Poisson(q)-subsampled Gaussian with noise
/// multiplier z > 0 (z = 0 is an error: no noise, no privacy); q = 1 gives alpha / (2 z^2).
pub fn rdp_subsampled_gaussian(q: f64, z: f64, alpha: f64) -> Result<f64> {
    let lr = log_rdp(q, z, alpha)?;
    Ok(if q == 1.0 {
        alpha * (0.5 / z / z)
    } else {
        lr.exp()
    })
}

/// T times the one-step RDP: the plain product where the one-step value is a normal double,
/// formed in logs only where it would underflow.
fn composed(q: f64, z: f64, alpha: f64, steps: usize) -> Result<f64> {
    Ok(composed_from_log(log_rdp(q, z, alpha)?, q, z, alpha, steps))
}

/// [`composed`] from the one-step log RDP `lr` (RDP composes additively: T rdp_1(alpha)).
fn composed_from_log(lr: f64, q: f64, z: f64, alpha: f64, steps: usize) -> f64 {
    let t = steps as f64;
    conservative(if q == 1.0 {
        t * (alpha * (0.5 / z / z))
    } else if lr > -690.0 {
        t * lr.exp()
    } else {
        (t.ln() + lr).exp()
    })
}

/// log of [`rdp_subsampled_gaussian`], kept in logs so that T times a one-step RDP below the
/// smallest double (tiny q, huge T) is not rounded to 0 before the multiplication.
fn log_rdp(q: f64, z: f64, alpha: f64) -> Result<f64> {
    check_q(q)?;
    check_z(z)?;
    if !(alpha.is_finite() && alpha > 1.0) {
        return Err(Error::param(format!(
            "RDP order alpha must be finite and > 1, but is {alpha}"
        )));
    }
    // Never optimistic: 1/(2 z^2) overflows to +inf for z < ~1e-154 (z^2 underflows), and the
    // expansions below would then form 0 * inf = NaN and collapse to 0 ("perfect privacy").
    // Without representable noise there is no privacy: the RDP is +inf.
    let inv_2z2 = 0.5 / z / z;
    if !inv_2z2.is_finite() {
        return Ok(f64::INFINITY);
    }
    let log_am1 = (alpha - 1.0).ln();
    if q == 1.0 {
        return Ok(conservative(alpha.ln() + inv_2z2.ln()));
    }
    let log_log_a = if alpha.fract() == 0.0 && alpha <= 1e6 {
        log_log1p_exp(log_a_minus_1_int(q, z, alpha as u64))
    } else {
        log_a_frac(q, z, alpha)?.max(0.0).ln()
    };
    Ok(conservative(log_log_a - log_am1))
}

/// A NaN RDP value (an undefined intermediate) is replaced by +inf, the only safe upper bound.
fn conservative(rdp: f64) -> f64 {
    if rdp.is_nan() { f64::INFINITY } else { rdp }
}

/// (epsilon, optimal order) from RDP values `rdp[k]` at `orders[k]` and a target delta.
/// Orders with a non-finite epsilon are skipped; all infinite gives (inf, NaN).
pub fn rdp_to_epsilon(orders: &[f64], rdp: &[f64], delta: f64, conv: Conversion) -> (f64, f64) {
    let mut best = (f64::INFINITY, f64::NAN);
    for (&a, &r) in orders.iter().zip(rdp) {
        if r.is_nan() {
            // Unknown RDP at this order: skip it (the minimum over the rest is still an upper
            // bound); all skipped gives +inf.
            continue;
        }
        // delta >= sqrt(1 - e^{-r}) >= TV distance: (0, delta)-DP (dp_accounting's rule), with
        // 1e-9 relative margin for the rounding of r; r = 0 means r < 5e-324 (the curve is
        // formed in logs, see [`RdpAccountant::rdp_curve`]).
        let shortcut = if r > 0.0 {
            delta * delta + (-r).exp_m1() * (1.0 + 1e-9) > 0.0
        } else {
            delta > 1e-161
        };
        let eps = if shortcut {
            0.0
        } else {
            match conv {
                Conversion::Improved => r + (-1.0 / a).ln_1p() - (delta.ln() + a.ln()) / (a - 1.0),
                Conversion::Classic => r + (1.0 / delta).ln() / (a - 1.0),
            }
        };
        if eps < best.0 {
            best = (eps, a);
        }
    }
    (best.0.max(0.0), best.1)
}

/// The RDP accountant for T steps of the Poisson-subsampled Gaussian mechanism.
#[derive(Debug, Clone)]
pub struct RdpAccountant {
    /// Rényi orders alpha > 1 at which the RDP curve is evaluated; epsilon is its minimum over
    /// them (default: [`default_orders`]).
    pub orders: Vec<f64>,
    /// The formula turning RDP at one order into (epsilon, delta) (default: Balle et al. 2020).
    pub conversion: Conversion,
}

impl Default for RdpAccountant {
    fn default() -> Self {
        Self {
            orders: default_orders(),
            conversion: Conversion::Improved,
        }
    }
}

/// Epsilon with the order that attains it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RdpEpsilon {
    /// The smallest epsilon over the orders at the target delta (an upper bound on the true
    /// epsilon; inf when every order is infinite).
    pub epsilon: f64,
    /// The Renyi order alpha that attains it (NaN when every order is infinite).
    pub order: f64,
}

impl RdpAccountant {
    /// RDP curve of `steps` compositions: steps * rdp_1(alpha) at every order. A fractional
    /// order whose MTZ series does not converge within 10^5 terms (large z with q near 1/2, where
    /// the terms decay only polynomially) is excluded by setting it to +inf, as dp_accounting
    /// does; minimizing over fewer orders still gives an upper bound.
    pub fn rdp_curve(&self, q: f64, steps: usize, z: f64) -> Result<Vec<f64>> {
        check_steps(steps)?;
        self.orders
            .iter()
            .map(|&a| match composed(q, z, a, steps) {
                Ok(r) => Ok(r),
                Err(Error::Numerical(_)) => Ok(f64::INFINITY),
                Err(e) => Err(e),
            })
            .collect()
    }

    /// (epsilon, order) after `steps` steps at rate q and noise multiplier z, for target delta.
    pub fn epsilon(&self, q: f64, steps: usize, z: f64, delta: f64) -> Result<RdpEpsilon> {
        check_delta(delta)?;
        let curve = self.rdp_curve(q, steps, z)?;
        let (epsilon, order) = rdp_to_epsilon(&self.orders, &curve, delta, self.conversion);
        Ok(RdpEpsilon { epsilon, order })
    }

    /// The one-step curve at rate q and noise multiplier z, kept so that the epsilon after any
    /// number of steps costs one pass over the orders ([`RdpRunning::epsilon`]), equal bit for
    /// bit to [`RdpAccountant::epsilon`] at that number of steps.
    pub fn running(&self, q: f64, z: f64) -> Result<RdpRunning> {
        let log_one_step = self
            .orders
            .iter()
            .map(|&a| match log_rdp(q, z, a) {
                Ok(r) => Ok(Some(r)),
                Err(Error::Numerical(_)) => Ok(None),
                Err(e) => Err(e),
            })
            .collect::<Result<_>>()?;
        Ok(RdpRunning {
            accountant: self.clone(),
            q,
            z,
            log_one_step,
        })
    }
}

/// The RDP epsilon of a run as it goes: T steps cost T times one step's RDP at every order.
#[derive(Debug, Clone)]
pub struct RdpRunning {
    accountant: RdpAccountant,
    q: f64,
    z: f64,
    /// log of one step's RDP at each order; None where its series does not converge (+inf, as
    /// in [`RdpAccountant::rdp_curve`]).
    log_one_step: Vec<Option<f64>>,
}

impl RdpRunning {
    /// Epsilon after `steps` steps at target delta (what [`RdpAccountant::epsilon`] returns).
    pub fn epsilon(&self, steps: usize, delta: f64) -> Result<f64> {
        check_steps(steps)?;
        check_delta(delta)?;
        let a = &self.accountant;
        let curve: Vec<f64> = a
            .orders
            .iter()
            .zip(&self.log_one_step)
            .map(|(&alpha, lr)| {
                lr.map_or(f64::INFINITY, |lr| {
                    composed_from_log(lr, self.q, self.z, alpha, steps)
                })
            })
            .collect();
        Ok(rdp_to_epsilon(&a.orders, &curve, delta, a.conversion).0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_orders_match_dp_accounting_grid() {
        let o = default_orders();
        assert_eq!(o.len(), 99 + 53 + 4);
        assert_eq!(o[0], 1.1);
        assert_eq!(o[98], 10.9);
        assert_eq!(o[99], 11.0);
        assert_eq!(*o.last().unwrap(), 1024.0);
    }

    #[test]
    fn fractional_series_agrees_with_integer_expansion_at_integer_orders() {
        // The MTZ series is exact for any alpha, so at an integer order it must reproduce the
        // finite binomial sum; 1e-9 relative allows for the 36-nat truncation and rounding.
        for &(q, z, a) in &[(0.01, 1.1, 5u64), (0.1, 0.8, 12), (0.001, 3.0, 40)] {
            let int = log_a_int(q, z, a);
            let frac = log_a_frac(q, z, a as f64).unwrap();
            assert!(
                ((int - frac) / int).abs() < 1e-9,
                "q={q} z={z} a={a}: {int} vs {frac}"
            );
        }
    }

    #[test]
    fn binomial_sign_flips_past_alpha() {
        // C(2.5, 3) = 2.5*1.5*0.5/6 > 0, C(2.5, 4) = C(2.5,3) * (-0.5)/4 < 0.
        assert_eq!(log_abs_binom(2.5, 3).1, 1.0);
        assert_eq!(log_abs_binom(2.5, 4).1, -1.0);
        assert!((log_abs_binom(2.5, 3).0 - (0.3125f64).ln()).abs() < 1e-14);
    }
}
