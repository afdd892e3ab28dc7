//! Radial laws for r = G(x, y) (or for the sharp loss's weights a_i), with closed-form moments.
//!
//! Assumption 6.1 asks for (E[G(x, y)^k])^(1/k) <= G. Each law here is a base law X (Pareto,
//! Lomax, norm of a multivariate Student-t, chi, log-normal, Weibull, bounded uniform, point
//! mass) times a scale s chosen so that (E[r^k])^(1/k) = G holds *exactly* for the requested
//! (k, G): s = G / (E[X^k])^(1/k), computed in log space. A theorem's schedule can then use the
//! true G. k = infinity means uniform Lipschitzness (ess sup r = G) and needs a bounded law.
//!
//! Moments are `Option`s as in statrs: `None` where the moment is infinite (p >= tail index) or
//! not representable as an f64. Construction is where errors are reported: asking for k at or
//! beyond the tail index, or a scale whose samples could overflow, is an error, and sampling
//! never returns inf or NaN.

use rand::RngExt;
use rand_distr::{ChiSquared, Distribution, StandardNormal};
use serde::{Deserialize, Serialize};
use statrs::function::gamma::ln_gamma;

use crate::error::{Error, Result};
use crate::rng::SimRng;

/// ln(f64::MAX): the largest log a finite sample may have.
const LN_MAX: f64 = 709.782_712_893_384;
/// ln of the smallest positive normal f64: scales below it are reported, not flushed to zero.
const LN_MIN: f64 = -708.396_418_532_264_1;
/// 53 ln 2: U = 1 - random::<f64>() lies in [2^-53, 1], so -ln U <= 53 ln 2.
const LN_INV_UMIN: f64 = 36.736_800_569_677_1;
/// |z| for a standard normal exceeds 40 with probability about 1e-349, i.e. never in f64.
const Z_MAX: f64 = 40.0;

/// A law for a non-negative radius r: the seam between the generators and the laws.
pub trait RadialLaw {
    /// One draw of r (finite and >= 0).
    fn sample(&self, rng: &mut SimRng) -> f64;
    /// E[r^p] for p > 0, or `None` when it is infinite (p >= tail index) or overflows an f64.
    fn moment(&self, p: f64) -> Option<f64> {
        self.ln_moment(p).map(f64::exp).filter(|m| m.is_finite())
    }
    /// ln E[r^p] for p > 0, or `None` when E[r^p] is infinite.
    fn ln_moment(&self, p: f64) -> Option<f64>;
    /// The tail index: sup{p : E[r^p] < infinity}; infinity for light tails and bounded laws.
    fn tail_index(&self) -> f64;
    /// ess sup r, or `None` when the support is unbounded.
    fn sup(&self) -> Option<f64>;
}

/// The shape of a radial law before scaling. `family` tags it in TOML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "family", rename_all = "snake_case", deny_unknown_fields)]
pub enum LawSpec {
    /// Pareto(alpha, x_m = 1): P(X > x) = x^(-alpha) for x >= 1. Tail index alpha.
    Pareto {
        /// Tail exponent alpha > 0: E[X^p] is finite exactly for p < alpha.
        alpha: f64,
    },
    /// Lomax (Pareto II): P(X > x) = (1 + x)^(-alpha) for x >= 0. Tail index alpha.
    Lomax {
        /// Tail exponent alpha > 0: E[X^p] is finite exactly for p < alpha.
        alpha: f64,
    },
    /// ||t|| for t a `dim`-variate Student-t with `dof` degrees of freedom (identity scale).
    /// Tail index dof. `dim` defaults to the generator's d.
    StudentTNorm {
        /// Degrees of freedom nu > 0, which is also the tail index.
        dof: f64,
        /// Dimension of the Student-t vector (>= 1); omitted: the generator's d.
        dim: Option<usize>,
    },
    /// ||z|| for z ~ N(0, I_dim) (the chi law): Gaussian features. `dim` defaults to d.
    Chi {
        /// Dimension of the Gaussian vector, the chi law's degrees of freedom (>= 1); omitted:
        /// the generator's d.
        dim: Option<usize>,
    },
    /// exp(sigma Z), Z ~ N(0, 1). Every moment finite, support unbounded.
    LogNormal {
        /// Standard deviation sigma > 0 of ln X.
        sigma: f64,
    },
    /// Weibull with shape `shape` and unit scale: P(X > x) = exp(-x^shape).
    Weibull {
        /// Shape parameter > 0: below 1 the tail is heavier than exponential, above 1 lighter.
        shape: f64,
    },
    /// Uniform on [low, 1], 0 <= low < 1: bounded, so k = infinity is allowed.
    Uniform {
        /// Lower end of the support, in [0, 1); the upper end is 1.
        low: f64,
    },
    /// X = 1: every sample has the same r = G.
    PointMass,
    /// A light atom a (probability 1 - p) and a heavy atom h (probability p) that move with
    /// phi, for instance families where the clip norm binds: the heavy atom sits at
    /// h = tail G scale psi^(-exponent), psi = 1/T + phi^2 = 2 phi^2 at T = phi^-2 (so with
    /// `scale` and `exponent` of a theorem's tau(phi), h = tail x tau(phi)), and the light atom
    /// carries `balance` times the heavy atoms' mass, (1 - p) a = balance p h; p solves
    /// (1 - p) a^k + p h^k = G^k (Assumption 6.1 met with equality). See
    /// [`two_point_atoms`].
    TwoPoint {
        /// h / (G scale psi^(-exponent)): the heavy atom over the theorem's clip norm (> 0).
        tail: f64,
        /// The clip norm's constant factor over G (J.1 and I.1: gamma^(-1/k); K.1: 1).
        #[serde(default = "one")]
        scale: f64,
        /// The clip norm's exponent of psi (J.1: 1/(k+1); K.1 and I.1: 1/(2k)), >= 0.
        exponent: f64,
        /// (1 - p) a / (p h) > 0: the light atoms' share of the mean weight against the heavy
        /// atoms'.
        balance: f64,
        /// phi of Eq. (1), set by the experiment runner at each sweep point; omitted, the law
        /// is built at [`TWO_POINT_CHECK_PHI`] for validation only, and a generator refuses to
        /// draw from it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        phi: Option<f64>,
    },
}

fn one() -> f64 {
    1.0
}

/// The phi at which a `two_point` law without its sweep phi is built to validate a spec (a
/// generator never draws from it: [`LawSpec::two_point_phi_missing`]).
pub const TWO_POINT_CHECK_PHI: f64 = 0.01;

impl LawSpec {
    /// True for a `two_point` law whose phi has not been set (it can be validated, not drawn).
    pub fn two_point_phi_missing(&self) -> bool {
        matches!(self, LawSpec::TwoPoint { phi: None, .. })
    }

    /// Sets the sweep's phi of a `two_point` law (the runner's value wins); other laws do not
    /// depend on phi.
    pub fn set_phi(&mut self, value: f64) {
        if let LawSpec::TwoPoint { phi, .. } = self {
            *phi = Some(value);
        }
    }
}

/// The atoms of [`LawSpec::TwoPoint`] at (k, G, phi): (p, a, h) with
/// h = tail G scale (2 phi^2)^(-exponent), (1 - p) a = balance p h and
/// (1 - p) a^k + p h^k = G^k (Assumption 6.1 with equality). In units of G, p is the root in
/// (0, 1) of F(p) = p H^k + balance^k H^k p^k (1 - p)^(1-k) - 1 with H = h / G, which increases
/// from -1 to +inf: bisection to the last bit. Errors when k is not finite, a parameter is out of
/// range, or the light atom would not lie below the heavy one (p >= 1 / (1 + balance)).
pub fn two_point_atoms(
    (tail, scale, exponent, balance): (f64, f64, f64, f64),
    k: f64,
    g: f64,
    phi: f64,
) -> Result<(f64, f64, f64)> {
    use crate::error::{check_open, check_positive};
    if !k.is_finite() {
        return Err(Error::param(
            "a two_point law has a tail: it needs a finite k (use point_mass for k = inf)",
        ));
    }
    check_positive("two_point tail", tail)?;
    check_positive("two_point scale", scale)?;
    check_positive("two_point balance", balance)?;
    check_positive("radial G", g)?;
    check_open("two_point phi", phi, 0.0, 1.0)?;
    if !(exponent.is_finite() && exponent >= 0.0) {
        return Err(Error::param(format!(
            "two_point exponent must be >= 0 and finite, but is {exponent}"
        )));
    }
    let psi = 2.0 * phi * phi;
    let big_h = tail * scale * psi.powf(-exponent);
    let f = |p: f64| -> f64 {
        big_h.powf(k) * p + (balance * big_h).powf(k) * p.powf(k) * (1.0 - p).powf(1.0 - k) - 1.0
    };
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let p = 0.5 * (lo + hi);
    if !(p > 0.0 && p * (1.0 + balance) < 1.0) {
        return Err(Error::param(format!(
            "two_point at k = {k}, phi = {phi}: the heavy atom h = {:.4e} G gives p = {p:.4e},              and the light atom a = balance p h / (1 - p) would not lie below h              (needs p < 1 / (1 + balance)): raise tail or lower balance",
            big_h
        )));
    }
    let h = g * big_h;
    let a = balance * p * h / (1.0 - p);
    Ok((p, a, h))
}

/// A radial law with its moment condition: (E[r^k])^(1/k) = g exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RadialSpec {
    /// Moment order k > 0 of Assumption 6.1; `inf` (TOML `inf`) for ess sup r = g.
    pub k: f64,
    /// The bound G of Assumption 6.1, met with equality: (E[r^k])^(1/k) = G (ess sup r = G
    /// for k = infinity).
    pub g: f64,
    /// The base law X, before it is scaled to meet (k, G).
    pub law: LawSpec,
}

impl RadialSpec {
    /// Validates and scales the law; `default_dim` fills `dim` of the norm laws.
    pub fn build(&self, default_dim: usize) -> Result<Radial> {
        let base = match &self.law {
            LawSpec::TwoPoint {
                tail,
                scale,
                exponent,
                balance,
                phi,
            } => {
                let phi = phi.unwrap_or(TWO_POINT_CHECK_PHI);
                let (p, a, h) =
                    two_point_atoms((*tail, *scale, *exponent, *balance), self.k, self.g, phi)?;
                Base::TwoPoint { p, ratio: h / a }
            }
            law => Base::new(law, default_dim)?,
        };
        Radial::new(base, self.k, self.g)
    }
}

/// A validated base law X (unit scale).
#[derive(Debug, Clone, PartialEq)]
pub enum Base {
    /// Pareto with x_m = 1: P(X > x) = x^(-alpha) for x >= 1.
    Pareto {
        /// Tail exponent alpha > 0 (the tail index).
        alpha: f64,
    },
    /// Lomax (Pareto II): P(X > x) = (1 + x)^(-alpha) for x >= 0.
    Lomax {
        /// Tail exponent alpha > 0 (the tail index).
        alpha: f64,
    },
    /// Norm of a `dim`-variate Student-t vector with identity scale.
    StudentTNorm {
        /// Degrees of freedom nu > 0 (the tail index).
        dof: f64,
        /// Dimension of the vector (>= 1, default already filled in).
        dim: usize,
    },
    /// Norm of z ~ N(0, I_dim), the chi law.
    Chi {
        /// Dimension of the Gaussian vector (>= 1, default already filled in).
        dim: usize,
    },
    /// exp(sigma Z) with Z ~ N(0, 1).
    LogNormal {
        /// Standard deviation sigma > 0 of ln X.
        sigma: f64,
    },
    /// Weibull with unit scale: P(X > x) = exp(-x^shape).
    Weibull {
        /// Shape parameter > 0.
        shape: f64,
    },
    /// Uniform on [low, 1].
    Uniform {
        /// Lower end of the support, in [0, 1).
        low: f64,
    },
    /// X = 1 with probability one.
    PointMass,
    /// X = 1 with probability 1 - p, X = ratio with probability p (the atoms of
    /// [`LawSpec::TwoPoint`] over the light one).
    TwoPoint {
        /// P(X = ratio), in (0, 1).
        p: f64,
        /// The heavy atom over the light one, > 1.
        ratio: f64,
    },
}

/// Draws U uniform on (0, 1]: never 0, so ln U and U^(-1/alpha) are finite.
#[inline]
fn open_uniform(rng: &mut SimRng) -> f64 {
    1.0 - rng.random::<f64>()
}

fn positive_dim(name: &str, dim: Option<usize>, default_dim: usize) -> Result<usize> {
    let m = dim.unwrap_or(default_dim);
    if m == 0 {
        return Err(Error::param(format!(
            "{name} dim must be at least 1, but is 0"
        )));
    }
    Ok(m)
}

impl Base {
    /// Validates the spec's parameters (each error names the bad value).
    pub fn new(spec: &LawSpec, default_dim: usize) -> Result<Self> {
        use crate::error::{check_open, check_positive};
        Ok(match spec {
            LawSpec::Pareto { alpha } => Base::Pareto {
                alpha: check_positive("pareto alpha", *alpha)?,
            },
            LawSpec::Lomax { alpha } => Base::Lomax {
                alpha: check_positive("lomax alpha", *alpha)?,
            },
            LawSpec::StudentTNorm { dof, dim } => Base::StudentTNorm {
                dof: check_positive("student_t_norm dof", *dof)?,
                dim: positive_dim("student_t_norm", *dim, default_dim)?,
            },
            LawSpec::Chi { dim } => Base::Chi {
                dim: positive_dim("chi", *dim, default_dim)?,
            },
            LawSpec::LogNormal { sigma } => Base::LogNormal {
                sigma: check_positive("log_normal sigma", *sigma)?,
            },
            LawSpec::Weibull { shape } => Base::Weibull {
                shape: check_positive("weibull shape", *shape)?,
            },
            LawSpec::Uniform { low } => {
                if *low != 0.0 {
                    check_open("uniform low", *low, 0.0, 1.0)?;
                }
                Base::Uniform { low: *low }
            }
            LawSpec::PointMass => Base::PointMass,
            LawSpec::TwoPoint { .. } => {
                return Err(Error::param(
                    "a two_point law needs (k, G, phi): build it through RadialSpec::build",
                ));
            }
        })
    }

    /// A short name with parameters, for messages and summaries.
    pub fn describe(&self) -> String {
        match self {
            Base::Pareto { alpha } => format!("pareto(alpha = {alpha})"),
            Base::Lomax { alpha } => format!("lomax(alpha = {alpha})"),
            Base::StudentTNorm { dof, dim } => format!("student_t_norm(dof = {dof}, dim = {dim})"),
            Base::Chi { dim } => format!("chi(dim = {dim})"),
            Base::LogNormal { sigma } => format!("log_normal(sigma = {sigma})"),
            Base::Weibull { shape } => format!("weibull(shape = {shape})"),
            Base::Uniform { low } => format!("uniform(low = {low}, high = 1)"),
            Base::PointMass => "point_mass".to_string(),
            Base::TwoPoint { p, ratio } => format!("two_point(p = {p:.6e}, ratio = {ratio:.6e})"),
        }
    }

    /// sup{p : E[X^p] < infinity}.
    pub fn tail_index(&self) -> f64 {
        match self {
            Base::Pareto { alpha } | Base::Lomax { alpha } => *alpha,
            Base::StudentTNorm { dof, .. } => *dof,
            _ => f64::INFINITY,
        }
    }

    /// ess sup X for the bounded laws.
    pub fn sup(&self) -> Option<f64> {
        match self {
            Base::Uniform { .. } | Base::PointMass => Some(1.0),
            Base::TwoPoint { ratio, .. } => Some(*ratio),
            _ => None,
        }
    }

    /// ln E[X^p] for p > 0 in closed form; `None` for p >= tail index.
    pub fn ln_moment(&self, p: f64) -> Option<f64> {
        if p.is_nan() || p <= 0.0 || p >= self.tail_index() {
            return None;
        }
        if p.is_infinite() {
            return None;
        }
        let lm = match self {
            // int_1^inf x^p alpha x^(-alpha-1) dx = alpha / (alpha - p).
            Base::Pareto { alpha } => (alpha / (alpha - p)).ln(),
            // E[X^p] = Gamma(p + 1) Gamma(alpha - p) / Gamma(alpha) (a Beta integral).
            Base::Lomax { alpha } => ln_gamma(p + 1.0) + ln_gamma(alpha - p) - ln_gamma(*alpha),
            // ||t||^2 = chi2_m / (chi2_nu / nu) with independent numerator and denominator, so
            // E||t||^p = nu^(p/2) E[chi2_m^(p/2)] E[chi2_nu^(-p/2)]
            //          = nu^(p/2) Gamma((m+p)/2) / Gamma(m/2) * Gamma((nu-p)/2) / Gamma(nu/2).
            Base::StudentTNorm { dof, dim } => {
                let m = *dim as f64;
                0.5 * p * dof.ln() + ln_gamma(0.5 * (m + p)) - ln_gamma(0.5 * m)
                    + ln_gamma(0.5 * (dof - p))
                    - ln_gamma(0.5 * dof)
            }
            // E||z||^p = 2^(p/2) Gamma((m+p)/2) / Gamma(m/2).
            Base::Chi { dim } => {
                let m = *dim as f64;
                0.5 * p * std::f64::consts::LN_2 + ln_gamma(0.5 * (m + p)) - ln_gamma(0.5 * m)
            }
            // The normal's moment generating function at p sigma.
            Base::LogNormal { sigma } => 0.5 * p * p * sigma * sigma,
            // E[X^p] = Gamma(1 + p / shape).
            Base::Weibull { shape } => ln_gamma(1.0 + p / shape),
            // (1 - low^(p+1)) / ((p + 1)(1 - low)).
            Base::Uniform { low } => {
                (-(low.powf(p + 1.0))).ln_1p() - (p + 1.0).ln() - (-low).ln_1p()
            }
            Base::PointMass => 0.0,
            // E[X^p] = (1 - q) + q ratio^p, q = P(X = ratio).
            Base::TwoPoint { p: q, ratio } => (q * ratio.powf(p) + (1.0 - q)).ln(),
        };
        lm.is_finite().then_some(lm)
    }

    /// ln((E[X^k])^(1/k)); k = infinity gives ln ess sup X.
    fn ln_k_norm(&self, k: f64) -> Option<f64> {
        if k.is_infinite() {
            self.sup().map(f64::ln)
        } else {
            self.ln_moment(k).map(|m| m / k)
        }
    }

    /// An upper bound on ln X over every value the sampler can produce (finite precision
    /// inputs), or `None` when the sampler has no such bound (Student-t norm).
    fn ln_sample_bound(&self) -> Option<f64> {
        match self {
            // X = U^(-1/alpha) and U >= 2^-53; Lomax subtracts 1.
            Base::Pareto { alpha } | Base::Lomax { alpha } => Some(LN_INV_UMIN / alpha),
            Base::Chi { dim } => Some(0.5 * (*dim as f64).ln() + Z_MAX.ln()),
            Base::LogNormal { sigma } => Some(sigma * Z_MAX),
            // X = (-ln U)^(1/shape).
            Base::Weibull { shape } => Some(LN_INV_UMIN.ln() / shape),
            Base::Uniform { .. } | Base::PointMass => Some(0.0),
            Base::TwoPoint { ratio, .. } => Some(ratio.ln()),
            Base::StudentTNorm { .. } => None,
        }
    }

    /// One draw of X (possibly inf for the Student-t norm; the caller rejects it).
    fn sample_raw(&self, rng: &mut SimRng) -> f64 {
        match self {
            Base::Pareto { alpha } => open_uniform(rng).powf(-1.0 / alpha),
            Base::Lomax { alpha } => open_uniform(rng).powf(-1.0 / alpha) - 1.0,
            Base::StudentTNorm { dof, dim } => {
                let num = chi_squared_int(*dim, rng);
                let den = ChiSquared::new(*dof)
                    .expect("dof validated positive")
                    .sample(rng);
                (dof * num / den).sqrt()
            }
            Base::Chi { dim } => chi_squared_int(*dim, rng).sqrt(),
            Base::LogNormal { sigma } => {
                let z: f64 = StandardNormal.sample(rng);
                (sigma * z).exp()
            }
            Base::Weibull { shape } => (-open_uniform(rng).ln()).powf(1.0 / shape),
            Base::Uniform { low } => low + (1.0 - low) * rng.random::<f64>(),
            Base::PointMass => 1.0,
            Base::TwoPoint { p, ratio } => {
                if rng.random::<f64>() < *p {
                    *ratio
                } else {
                    1.0
                }
            }
        }
    }
}

/// ||z||^2 for z ~ N(0, I_m), summed directly so that it is exactly the squared norm of a
/// Gaussian vector (what x = r u with Gaussian features would give).
fn chi_squared_int(m: usize, rng: &mut SimRng) -> f64 {
    (0..m)
        .map(|_| {
            let z: f64 = StandardNormal.sample(rng);
            z * z
        })
        .sum()
}

/// A scaled radial law r = s X with (E[r^k])^(1/k) = G exactly.
#[derive(Debug, Clone, PartialEq)]
pub struct Radial {
    base: Base,
    k: f64,
    g: f64,
    ln_scale: f64,
    scale: f64,
}

impl Radial {
    /// Scales `base` so that (E[r^k])^(1/k) = g. Errors: g not positive and finite, k not
    /// positive, k >= tail index (infinite k-th moment), k = infinity for an unbounded law, and
    /// scales whose samples could overflow an f64.
    pub fn new(base: Base, k: f64, g: f64) -> Result<Self> {
        crate::error::check_positive("radial G", g)?;
        if k.is_nan() || k <= 0.0 {
            return Err(Error::param(format!(
                "moment order k must be positive (or inf), but is {k}"
            )));
        }
        let name = base.describe();
        let tail = base.tail_index();
        if tail.is_finite() && k >= tail {
            return Err(Error::param(format!(
                "the k-th moment of {name} is infinite for k >= {tail}, but k = {k}: ask for \
                 k < {tail} or use a lighter-tailed law"
            )));
        }
        let ln_norm = base.ln_k_norm(k).ok_or_else(|| {
            if k.is_infinite() {
                Error::param(format!(
                    "k = inf (uniform Lipschitzness) needs a bounded law, but {name} has \
                     unbounded support: use uniform or point_mass, or a finite k"
                ))
            } else {
                Error::Numerical(format!(
                    "E[X^k] of {name} at k = {k} is not representable as an f64"
                ))
            }
        })?;
        let ln_scale = g.ln() - ln_norm;
        if !(LN_MIN..=LN_MAX).contains(&ln_scale) {
            return Err(Error::Numerical(format!(
                "scaling {name} to (E r^{k})^(1/{k}) = {g} needs a scale exp({ln_scale:.1}), \
                 outside the f64 range"
            )));
        }
        if let Some(b) = base.ln_sample_bound()
            && ln_scale + b > LN_MAX
        {
            return Err(Error::Numerical(format!(
                "{name} scaled to G = {g} can produce samples up to exp({:.1}), which overflows \
                 an f64: use a larger tail index or a smaller G",
                ln_scale + b
            )));
        }
        Ok(Radial {
            base,
            k,
            g,
            ln_scale,
            // g e^(-ln_norm) rather than e^(ln_scale): exact (= g) for the bounded laws.
            scale: g * (-ln_norm).exp(),
        })
    }

    /// The unit-scale base law X (r = s X).
    pub fn base(&self) -> &Base {
        &self.base
    }
    /// The moment order k of the condition (E[r^k])^(1/k) = G.
    pub fn k(&self) -> f64 {
        self.k
    }
    /// The moment bound G of Assumption 6.1 that the scale was chosen to meet exactly.
    pub fn g(&self) -> f64 {
        self.g
    }
    /// The scale s with r = s X.
    pub fn scale(&self) -> f64 {
        self.scale
    }
    /// (E[r^k])^(1/k) from the closed form (equal to G up to rounding).
    pub fn k_norm(&self) -> f64 {
        (self.ln_scale + self.base.ln_k_norm(self.k).expect("checked in new")).exp()
    }
    /// A short description with parameters.
    pub fn describe(&self) -> String {
        let cond = if self.k.is_finite() {
            format!("(E r^{k})^(1/{k}) = {g}", k = self.k, g = self.g)
        } else {
            format!("ess sup r = {}", self.g)
        };
        format!(
            "{} scaled by {:.6e} so that {cond}",
            self.base.describe(),
            self.scale
        )
    }
    /// For a two-point law, the midpoint between its atoms: draws above it are the heavy atom
    /// (the rows a generator may move to a heavy center); `None` for every other law.
    pub fn heavy_threshold(&self) -> Option<f64> {
        match self.base {
            Base::TwoPoint { ratio, .. } => Some(self.scale * 0.5 * (1.0 + ratio)),
            _ => None,
        }
    }
    /// n independent draws.
    pub fn sample_n(&self, n: usize, rng: &mut SimRng) -> Vec<f64> {
        (0..n).map(|_| self.sample(rng)).collect()
    }
    /// One unchecked draw, scale times the base law's draw: `None` when it is not finite, the
    /// case [`RadialLaw::sample`] rejects and redraws. Exposed so tests can count rejections
    /// instead of looping on them.
    pub fn try_sample(&self, rng: &mut SimRng) -> Option<f64> {
        Some(self.scale * self.base.sample_raw(rng)).filter(|r| r.is_finite())
    }
}

impl RadialLaw for Radial {
    fn sample(&self, rng: &mut SimRng) -> f64 {
        // Rejection of non-finite draws: `new` bounds every sampler but the Student-t norm's,
        // whose draw is infinite only when chi2_dof underflows to 0 (probability < 1e-300 for
        // any dof that passes k < dof with k > 0.5); the loop keeps the "never inf/NaN" promise.
        loop {
            if let Some(r) = self.try_sample(rng) {
                return r;
            }
        }
    }
    fn ln_moment(&self, p: f64) -> Option<f64> {
        self.base.ln_moment(p).map(|m| p * self.ln_scale + m)
    }
    fn tail_index(&self) -> f64 {
        self.base.tail_index()
    }
    fn sup(&self) -> Option<f64> {
        self.base.sup().map(|s| s * self.scale)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn law(spec: LawSpec, k: f64, g: f64) -> Result<Radial> {
        RadialSpec { k, g, law: spec }.build(5)
    }

    #[test]
    fn k_at_or_beyond_tail_index_is_an_error() {
        let e = law(LawSpec::Pareto { alpha: 2.0 }, 2.0, 1.0).unwrap_err();
        assert!(e.to_string().contains("infinite for k >= 2"), "{e}");
        assert!(law(LawSpec::Lomax { alpha: 3.0 }, 4.0, 1.0).is_err());
        let e = law(LawSpec::LogNormal { sigma: 1.0 }, f64::INFINITY, 1.0).unwrap_err();
        assert!(e.to_string().contains("bounded law"), "{e}");
    }

    #[test]
    fn point_mass_and_uniform_allow_k_infinity() {
        let r = law(LawSpec::Uniform { low: 0.5 }, f64::INFINITY, 3.0).unwrap();
        // The scale goes through exp(ln G - ln sup X): exact up to a few ulps.
        assert!((r.sup().unwrap() - 3.0).abs() < 1e-14);
        let r = law(LawSpec::PointMass, f64::INFINITY, 2.0).unwrap();
        assert!((r.moment(3.0).unwrap() - 8.0).abs() < 1e-13);
    }

    #[test]
    fn overflowing_scale_is_an_error() {
        // alpha = 0.06: U^(-1/alpha) reaches 2^(53/0.06) = exp(612); with G = 1e100 it overflows.
        let e = law(LawSpec::Pareto { alpha: 0.06 }, 0.05, 1e100).unwrap_err();
        assert!(e.to_string().contains("overflows"), "{e}");
        let e = law(LawSpec::LogNormal { sigma: 30.0 }, 1.0, 1.0).unwrap_err();
        assert!(e.to_string().contains("overflow"), "{e}");
    }
}
