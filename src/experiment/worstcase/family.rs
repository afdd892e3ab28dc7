//! The instance family a worst-case search moves through: a data set for the weighted sharp loss
//! f(w) = (1/n) sum_i a_i ||w - c_i|| (Appendix E; per-sample Lipschitz constant G_i = a_i), made
//! of `m` point-mass components, each a share of the n rows at one centre c_j in R^d with one
//! weight a_j. The parameters are unconstrained reals (the optimizer's space):
//!
//! - m weight logits: shares pi = softmax, rounded to row counts by largest remainder; a share
//!   may go down to one row, so a tail of probability p ~ 1/n (Appendix L's p ∝ phi) is
//!   reachable;
//! - m log-magnitudes: a_j = exp(.), then every a_i is rescaled by one factor so that
//!   Assumption 6.1's moment holds with equality, (mean_i a_i^k)^(1/k) = G_emp (max_i a_i =
//!   G_emp at k = inf), the level the theorem's proof needs of the data set (see
//!   [`moment_level`]);
//! - m d-dimensional centres.
//!
//! D0 = ||w0 - w*|| is the spec's `constants.dist0` for every instance (the run places w0), so
//! the bound's constants do not move with the instance except Assumption 6.4's D for K.1,
//! computed per instance.

use serde::{Deserialize, Serialize};

use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::theory::TheoremId;

/// Relative slack of the moment check: the rescaled moment equals G_emp up to rounding.
pub const MOMENT_SLACK: f64 = 1e-12;

/// Anything that turns a parameter vector into a data set (the search only sees this).
pub trait InstanceFamily: Sync {
    /// Number of free parameters.
    fn dim(&self) -> usize;
    /// The data set at parameters `theta`.
    fn build(&self, theta: &[f64]) -> Result<Dataset>;
}

/// The point-mass mixture family of the weighted sharp loss.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharpMixture {
    /// Rows n.
    pub n: usize,
    /// Dimension d of the centres.
    pub d: usize,
    /// Components m.
    pub m: usize,
    /// Tail index k of Assumption 6.1 (inf: bounded).
    pub k: f64,
    /// The moment level G_emp the weights are rescaled to.
    pub g_emp: f64,
}

/// Assumption 6.1's level that the proof of `theorem` needs of the data set itself: J.1 (and
/// 6.2) proceed on the event mean_i G_i^k <= G^k / gamma (Markov, before Eq. 70); K.1 (and 6.5)
/// on mean_i G_i^k <= 4 G^k (before Eq. 88). At k = inf every G_i <= G. Returns G_emp, the
/// largest (mean_i G_i^k)^(1/k) of a data set in the class.
pub fn moment_level(theorem: TheoremId, g: f64, k: f64, gamma: Option<f64>) -> Result<f64> {
    if k.is_infinite() {
        return Ok(g);
    }
    match theorem.full_version() {
        TheoremId::J1 => {
            let gamma = gamma.ok_or_else(|| {
                Error::Config(
                    "a J.1 search needs constants.gamma (the level G gamma^(-1/k))".into(),
                )
            })?;
            Ok(g * gamma.powf(-1.0 / k))
        }
        TheoremId::K1 => Ok(g * 4f64.powf(1.0 / k)),
        t => Err(Error::Config(format!(
            "the worst-case search has no instance family for Thm {} (searched: 6.2 / J.1, 6.5 / K.1)",
            t.label()
        ))),
    }
}

/// (mean_i a_i^k)^(1/k), or max_i a_i at k = inf.
pub fn moment(a: &[f64], k: f64) -> f64 {
    if k.is_infinite() {
        return a.iter().cloned().fold(0.0, f64::max);
    }
    (a.iter().map(|v| v.powf(k)).sum::<f64>() / a.len() as f64).powf(1.0 / k)
}

/// Refuses a data set outside Assumption 6.1 at level `g_emp`: called on every instance the
/// search proposes, before it is run.
pub fn check_moment(a: &[f64], k: f64, g_emp: f64) -> Result<()> {
    let m = moment(a, k);
    if m.is_nan() || m > g_emp * (1.0 + MOMENT_SLACK) {
        return Err(Error::Numerical(format!(
            "a proposed instance breaks Assumption 6.1: (mean G_i^k)^(1/k) = {m} > G_emp = {g_emp} (k = {k})"
        )));
    }
    Ok(())
}

/// Row counts of shares `pi` over n rows: floor, then the remainder to the largest fractional
/// parts (ties to the lower index).
pub fn allocate(pi: &[f64], n: usize) -> Vec<usize> {
    let raw: Vec<f64> = pi.iter().map(|p| p * n as f64).collect();
    let mut counts: Vec<usize> = raw.iter().map(|r| r.floor() as usize).collect();
    let left = n.saturating_sub(counts.iter().sum());
    let mut order: Vec<usize> = (0..pi.len()).collect();
    order.sort_by(|&i, &j| (raw[j] - raw[j].floor()).total_cmp(&(raw[i] - raw[i].floor())));
    for &i in order.iter().take(left) {
        counts[i] += 1;
    }
    counts
}

/// Softmax of `u` (shifted by its maximum).
fn softmax(u: &[f64]) -> Vec<f64> {
    let top = u.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = u.iter().map(|v| (v - top).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

/// One decoded instance: per component its rows, weight a_j and centre.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Components {
    /// Rows per component.
    pub rows: Vec<usize>,
    /// Weight a_j = G_i of the component's rows (after the moment rescaling).
    pub weight: Vec<f64>,
    /// Centres, one d-vector per component.
    pub centre: Vec<Vec<f64>>,
}

impl SharpMixture {
    /// The decoded components at `theta` (moment enforced).
    pub fn components(&self, theta: &[f64]) -> Result<Components> {
        let (m, d) = (self.m, self.d);
        if theta.len() != self.dim() {
            return Err(Error::param(format!(
                "the family has {} parameters, but {} were given",
                self.dim(),
                theta.len()
            )));
        }
        if theta.iter().any(|v| !v.is_finite()) {
            return Err(Error::Numerical("a non-finite search parameter".into()));
        }
        let rows = allocate(&softmax(&theta[..m]), self.n);
        // Magnitudes in log space, clamped so that exp stays finite.
        let mut weight: Vec<f64> = theta[m..2 * m]
            .iter()
            .map(|v| v.clamp(-30.0, 30.0).exp())
            .collect();
        let per_row: Vec<f64> = rows
            .iter()
            .zip(&weight)
            .flat_map(|(&r, &a)| std::iter::repeat_n(a, r))
            .collect();
        let scale = self.g_emp / moment(&per_row, self.k);
        for a in &mut weight {
            *a *= scale;
        }
        let centre = (0..m)
            .map(|j| theta[2 * m + j * d..2 * m + (j + 1) * d].to_vec())
            .collect();
        Ok(Components {
            rows,
            weight,
            centre,
        })
    }
}

impl Components {
    /// The data set: rows in component order, x = centre, y = weight.
    pub fn dataset(&self, d: usize) -> Result<Dataset> {
        let mut x = Vec::new();
        let mut y = Vec::new();
        for ((&r, &a), c) in self.rows.iter().zip(&self.weight).zip(&self.centre) {
            for _ in 0..r {
                x.extend_from_slice(c);
                y.push(a);
            }
        }
        Dataset::new(x, y, d)
    }
}

impl InstanceFamily for SharpMixture {
    fn dim(&self) -> usize {
        self.m * (2 + self.d)
    }
    fn build(&self, theta: &[f64]) -> Result<Dataset> {
        self.components(theta)?.dataset(self.d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every instance of the family meets the moment with equality, whatever the parameters
    /// (checked with the independent `moment`); at k = inf the largest weight is G_emp.
    #[test]
    fn rescaling_meets_the_moment_exactly() {
        for &k in &[1.5, 3.0, f64::INFINITY] {
            let fam = SharpMixture {
                n: 97,
                d: 3,
                m: 3,
                k,
                g_emp: 1.7,
            };
            let theta: Vec<f64> = (0..fam.dim()).map(|i| ((i * 7) % 5) as f64 - 2.0).collect();
            let data = fam.build(&theta).unwrap();
            assert_eq!(data.n, 97);
            let m = moment(&data.y, k);
            assert!((m / 1.7 - 1.0).abs() < MOMENT_SLACK, "{m}");
            check_moment(&data.y, k, 1.7).unwrap();
        }
    }

    /// A share can shrink to a single row (a tail of probability 1/n is reachable).
    #[test]
    fn a_tail_of_one_row_is_reachable() {
        let fam = SharpMixture {
            n: 400,
            d: 2,
            m: 2,
            k: 3.0,
            g_emp: 1.0,
        };
        let mut theta = vec![0.0; fam.dim()];
        theta[1] = -(399f64).ln(); // pi_2 = 1/400
        let c = fam.components(&theta).unwrap();
        assert_eq!(c.rows, vec![399, 1]);
    }

    /// The check refuses a moment above the level (planted: weights 1% too large).
    #[test]
    fn check_moment_catches_a_violation() {
        let a = vec![1.01; 10];
        assert!(check_moment(&a, 2.0, 1.0).is_err());
        assert!(check_moment(&a, f64::INFINITY, 1.0).is_err());
        assert!(check_moment(&[1.0; 10], 2.0, 1.0).is_ok());
    }
}
