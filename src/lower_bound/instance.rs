//! The hard distribution Q_v of the proof of Thm L.1 and its empirical minimizer.
//!
//! x = 0 with probability 1 - p and x = p^(-1/k) v with probability p, where
//! p = 2 sqrt(d log(1/delta)) / (n epsilon) < 1/2 and v is a codeword of the packing set
//! ([`super::packing`]), so ||v|| = sqrt(d/2). Eq. (96): E\[x\] = p^(1-1/k) v and
//! E ||x||^k = ||v||^k, hence Assumption 6.1 holds with G = 3 ||v|| (Eq. 100).
//!
//! The expected number of nonzero samples is n p = 2 sqrt(d log(1/delta)) / epsilon, which does
//! not depend on n: sweeping phi by n keeps the data sets equally informative, and n p must be
//! in the tens or most data sets are (nearly) empty (see `paper_refs/lower_bound.md`).

use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::packing::PackingSet;
use crate::dataset::Dataset;
use crate::dpsgd::Projection;
use crate::error::{Error, Result, check_open, check_positive};
use crate::linalg::{axpy, dot, norm2};
use crate::rng::SimRng;

/// The `appendix_l` data source: n draws from Q_v, v = codeword `codeword` of the packing set
/// generated from `packing_seed` (so v is the same in every replicate; only the data stream
/// varies).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppendixLSpec {
    /// Number of samples n.
    pub n: usize,
    /// Dimension d, a positive multiple of 8 (Lemma 6 needs d/2 and d/8 integral).
    pub d: usize,
    /// Moment order k > 1 of Assumption 6.1, a number or "inf" (TOML `inf` also works);
    /// k = inf gives x = v w.p. p.
    #[serde(with = "crate::k_serde")]
    pub k: f64,
    /// Privacy parameter epsilon > 0 (enters only through p).
    pub epsilon: f64,
    /// Privacy parameter delta in (0, exp(-epsilon^2)) (Thm L.1's hypothesis).
    pub delta: f64,
    /// Index of v in the packing set (default 0).
    #[serde(default)]
    pub codeword: usize,
    /// Seed of the packing set (default 0); independent of the run's data seed.
    #[serde(default)]
    pub packing_seed: u64,
    /// The bounded-data control (set by `verify` on a control series, default false): every
    /// sample is x = v, so every G_i = 3||v|| = G (Eq. 100) and there is no tail.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub constant: bool,
}

impl AppendixLSpec {
    /// Validates the spec and builds the instance (generating the packing set up to `codeword`).
    pub fn instance(&self) -> Result<QvInstance> {
        let set = PackingSet::generate(self.d, self.codeword + 1, self.packing_seed)?;
        let v = set.codeword(self.codeword)?;
        let mut inst = QvInstance::new(self.n, self.k, self.epsilon, self.delta, v)?;
        inst.constant = self.constant;
        Ok(inst)
    }

    /// G = 3||v|| = 3 sqrt(d/2) (Eq. 100), the G of the schedules, after validating the spec.
    pub fn g(&self) -> Result<f64> {
        Ok(self.instance()?.g())
    }

    /// One data set of n draws from Q_v, from the data stream `rng`.
    pub fn build(&self, rng: &mut SimRng) -> Result<Dataset> {
        Ok(self.instance()?.sample(rng))
    }
}

/// p = 2 sqrt(d log(1/delta)) / (n epsilon) (proof of Thm L.1), after validating its inputs;
/// errors if p >= 1/2, naming p and the smallest n that fixes it.
pub fn eq96_p(n: usize, d: usize, epsilon: f64, delta: f64) -> Result<f64> {
    check_positive("epsilon", epsilon)?;
    check_open("delta", delta, 0.0, 1.0)?;
    if n == 0 || d == 0 {
        return Err(Error::param(format!(
            "n and d must be at least 1, but n = {n} and d = {d}"
        )));
    }
    let np = 2.0 * (d as f64 * (1.0 / delta).ln()).sqrt() / epsilon;
    let p = np / n as f64;
    if p.is_nan() || p >= 0.5 {
        return Err(Error::param(format!(
            "Q_v needs p = 2 sqrt(d log(1/delta)) / (n epsilon) < 1/2, but p = {p} \
             (n = {n}, d = {d}, epsilon = {epsilon}, delta = {delta}); use n > {}",
            (2.0 * np).floor() as u64
        )));
    }
    Ok(p)
}

/// The parameter domain: Thm L.1 / 6.6 (W = R^d) or Thm I.3 (W = unit ball).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    /// W = R^d (Thm L.1, Thm 6.6).
    #[default]
    Unconstrained,
    /// W = {||w|| <= 1} (Thm I.3, Appendix M).
    UnitBall,
}

impl Domain {
    /// The projection Algorithm 1 uses on this domain.
    pub fn projection(self) -> Projection {
        match self {
            Domain::Unconstrained => Projection::None,
            Domain::UnitBall => Projection::L2Ball { radius: 1.0 },
        }
    }
}

/// Which minimizers f_v has on a given data set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OptimumKind {
    /// x_bar != 0: the unique minimizer x_bar/||x_bar|| (Eq. 105), on either domain.
    Unique,
    /// x_bar = 0 but some x_i != 0 (impossible under Q_v, possible for general data): f =
    /// 2 mean||x_i|| max(||w|| - 1, 0), minimized by the whole unit ball, f* = 0.
    UnitBall,
    /// Every x_i = 0 (the empty data set of Q_v, probability (1-p)^n): f = 0, every point
    /// minimizes, f* = 0, and every algorithm has zero risk.
    Everywhere,
}

/// A minimizer and the minimum of f(w) = (1/n) sum_i l(w, x_i) with l of Eq. (97).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Optimum {
    /// A minimizer: x_bar/||x_bar|| when unique; otherwise the given representative (which
    /// lies in the unit ball, so it minimizes in every degenerate case).
    pub w_star: Vec<f64>,
    /// f* = -||x_bar|| (0 in the degenerate cases).
    pub f_star: f64,
    /// ||x_bar||, the scale of every growth bound (Eqs. 106, 110, 124).
    pub xbar_norm: f64,
    /// Whether the minimizer is unique.
    pub kind: OptimumKind,
}

/// The closed-form empirical minimizer of Eq. (97) on any data set (not only Q_v samples),
/// with `representative` (||.|| <= 1) returned as w* when the minimizer is not unique.
///
/// f(w) = -<w, x_bar> + 2 m q(w) with m = mean ||x_i|| >= ||x_bar|| and q(w) = max(||w||-1, 0).
/// On ||w|| <= 1, Cauchy-Schwarz gives f >= -||x_bar||, attained at x_bar/||x_bar||; outside,
/// f(w) + ||x_bar|| >= (2m - ||x_bar||)(||w|| - 1) > 0 (Eqs. 101-104). The same point is the
/// minimizer over the unit ball (Thm I.3), so both domains share the answer.
pub fn empirical_optimum(data: &Dataset, representative: &[f64]) -> Optimum {
    let d = data.d;
    // x_bar = sum_i x_i / n, accumulated as sum_i (1/n) x_i.
    let mut xbar = vec![0.0; d];
    let mut any_nonzero = false;
    for i in 0..data.n {
        let x = data.row(i);
        any_nonzero |= x.iter().any(|&v| v != 0.0);
        axpy(1.0 / data.n as f64, x, &mut xbar);
    }
    let nx = norm2(&xbar);
    if nx > 0.0 {
        Optimum {
            w_star: xbar.iter().map(|s| s / nx).collect(),
            f_star: -nx,
            xbar_norm: nx,
            kind: OptimumKind::Unique,
        }
    } else {
        Optimum {
            w_star: representative.to_vec(),
            f_star: 0.0,
            xbar_norm: 0.0,
            kind: if any_nonzero {
                OptimumKind::UnitBall
            } else {
                OptimumKind::Everywhere
            },
        }
    }
}

/// A validated Q_v: every field is consistent (p < 1/2, k > 1, delta < exp(-epsilon^2)).
#[derive(Debug, Clone, PartialEq)]
pub struct QvInstance {
    n: usize,
    k: f64,
    epsilon: f64,
    delta: f64,
    p: f64,
    /// p^(-1/k) (1 at k = inf).
    scale: f64,
    v: Vec<f64>,
    v_norm: f64,
    /// The bounded control: [`Self::sample`] returns x = v for every sample.
    constant: bool,
}

impl QvInstance {
    /// Q_v for a given nonzero v (a packing codeword in the theorem; any v is accepted here).
    pub fn new(n: usize, k: f64, epsilon: f64, delta: f64, v: Vec<f64>) -> Result<Self> {
        if k.is_nan() || k <= 1.0 {
            return Err(Error::param(format!(
                "moment order k must be > 1 (or inf) for Assumption 6.1, but is {k}"
            )));
        }
        let p = eq96_p(n, v.len(), epsilon, delta)?;
        let bound = (-epsilon * epsilon).exp();
        if delta >= bound {
            return Err(Error::param(format!(
                "Thm L.1 needs delta < exp(-epsilon^2) = {bound}, but delta = {delta} \
                 (epsilon = {epsilon}); lower delta or epsilon"
            )));
        }
        let v_norm = norm2(&v);
        if !(v_norm > 0.0 && v_norm.is_finite()) {
            return Err(Error::param(format!(
                "v must be nonzero and finite, but ||v|| = {v_norm}"
            )));
        }
        Ok(QvInstance {
            n,
            k,
            epsilon,
            delta,
            p,
            scale: p.powf(-1.0 / k),
            v,
            v_norm,
            constant: false,
        })
    }

    /// Number of samples n.
    pub fn n(&self) -> usize {
        self.n
    }
    /// Dimension d.
    pub fn d(&self) -> usize {
        self.v.len()
    }
    /// Moment order k.
    pub fn k(&self) -> f64 {
        self.k
    }
    /// (epsilon, delta).
    pub fn privacy(&self) -> (f64, f64) {
        (self.epsilon, self.delta)
    }
    /// p = P(x != 0).
    pub fn p(&self) -> f64 {
        self.p
    }
    /// n p = 2 sqrt(d log(1/delta)) / epsilon: the expected number of nonzero samples.
    pub fn expected_nonzero(&self) -> f64 {
        self.n as f64 * self.p
    }
    /// (1 - p)^n: the probability of the all-zero data set.
    pub fn empty_probability(&self) -> f64 {
        (self.n as f64 * (-self.p).ln_1p()).exp()
    }
    /// The codeword v.
    pub fn v(&self) -> &[f64] {
        &self.v
    }
    /// The nonzero support point p^(-1/k) v.
    pub fn support_point(&self) -> Vec<f64> {
        self.v.iter().map(|vk| self.scale * vk).collect()
    }
    /// p^(-1/k).
    pub fn scale(&self) -> f64 {
        self.scale
    }
    /// Eq. (100): G = 3 ||v|| (= 3 sqrt(d/2) for a codeword), the constant of Assumption 6.1
    /// for l of Eq. (97) on R^d; this is the G of the Thm 6.5 / K.1 and I.1 schedules.
    pub fn g(&self) -> f64 {
        3.0 * self.v_norm
    }
    /// On the unit ball (Thm I.3) the gradient is -x, so ||v|| is the tight constant there;
    /// `g()` = 3||v|| remains valid (and matches `AppendixLLoss::lipschitz`).
    pub fn g_ball(&self) -> f64 {
        self.v_norm
    }
    /// phi of Eq. (1) with the accountant constant nu: phi = sqrt(nu) p / 2.
    pub fn phi(&self, nu: f64) -> f64 {
        nu.sqrt() * self.p / 2.0
    }
    /// The population minimizer w*_v = v/||v|| (Eq. 105); also the empirical one whenever a
    /// sample is nonzero.
    pub fn w_star(&self) -> Vec<f64> {
        self.v.iter().map(|vk| vk / self.v_norm).collect()
    }
    /// ||E x|| = p^(1-1/k) ||v|| (Eq. 96).
    pub fn mean_norm(&self) -> f64 {
        self.p * self.scale * self.v_norm
    }
    /// The Chernoff event threshold of Eq. (107): ||x_bar|| >= p^(1-1/k) ||v|| / 2.
    pub fn eq107_threshold(&self) -> f64 {
        self.mean_norm() / 2.0
    }
    /// The scale of the lower bound, Eq. (130): p^(1-1/k) ||v|| =
    /// (2 sqrt(d log(1/delta))/(n eps))^(1-1/k) G/3; the risk of any (eps, delta)-DP algorithm
    /// is Omega of this (for some v in the packing set).
    pub fn eq130_scale(&self) -> f64 {
        self.mean_norm()
    }

    /// Whether one draw is nonzero. Both samplers below consume the stream through this
    /// function only, so they see the same nonzero pattern for the same seed.
    #[inline]
    fn draw_nonzero(&self, rng: &mut SimRng) -> bool {
        rng.random::<f64>() < self.p
    }

    /// n i.i.d. draws from Q_v (labels 0, ignored by the loss).
    pub fn sample(&self, rng: &mut SimRng) -> Dataset {
        let d = self.d();
        let mut x = vec![0.0; self.n * d];
        let point = self.support_point();
        for row in x.chunks_exact_mut(d) {
            if self.constant {
                row.copy_from_slice(&self.v);
            } else if self.draw_nonzero(rng) {
                row.copy_from_slice(&point);
            }
        }
        Dataset {
            n: self.n,
            d,
            x,
            y: vec![0.0; self.n],
        }
    }

    /// The number of nonzero samples in a draw of n from Q_v, without materializing it: the
    /// same stream consumption as [`Self::sample`], so `sample` on the same seed has exactly
    /// this many nonzero rows. ||x_bar|| = (m/n) p^(-1/k) ||v||.
    pub fn sample_nonzero_count(&self, rng: &mut SimRng) -> usize {
        (0..self.n).filter(|_| self.draw_nonzero(rng)).count()
    }

    /// ||x_bar|| for a data set with m nonzero samples.
    pub fn xbar_norm_for_count(&self, m: usize) -> f64 {
        m as f64 / self.n as f64 * self.scale * self.v_norm
    }

    /// (w*, f*) for a data set (from Q_v or not). Degenerate data sets get w* = v/||v||, the
    /// population minimizer, which lies in the unit ball and so minimizes there too.
    pub fn optimum(&self, data: &Dataset) -> Optimum {
        empirical_optimum(data, &self.w_star())
    }

    /// f_v(w) = -<w, x_bar> + 2 ||x_bar|| max(||w|| - 1, 0) (Eq. 99) from ||x_bar|| alone:
    /// under Q_v, x_bar = ||x_bar|| w*_v.
    pub fn eq99_value(&self, xbar_norm: f64, w: &[f64]) -> f64 {
        let ws = self.w_star();
        -xbar_norm * dot(w, &ws) + 2.0 * xbar_norm * (norm2(w) - 1.0).max(0.0)
    }
}
