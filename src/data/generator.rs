//! Synthetic data whose per-sample Lipschitz constants have an exactly known k-th moment.
//!
//! Features are x = r u: the radius r = ||x|| is drawn from a [`RadialSpec`] (so that
//! (E ||x||^k)^(1/k) = G exactly, Assumption 6.1) and the direction u is uniform on the unit
//! sphere, or the normalized direction of an anisotropic Gaussian. What the generator controls
//! is therefore ||x||; each loss states G(x, y) as a function of it
//! (`loss::LipschitzForm`), which gives the exact (E G^k)^(1/k) from the radial law's
//! (E r^k)^(1/k) ([`GeneratorSpec::controlled_moment`]). With `labels = sharp_centers` the radial law is the law of the weights a_i instead, and the
//! rows are the centers w_i* = center + spread z, z ~ N(0, I_d).

use rand::RngExt;
use rand_distr::{Distribution, StandardNormal, StudentT};
use serde::{Deserialize, Serialize};

use super::Dataset;
use super::radial::{LawSpec, Radial, RadialLaw, RadialSpec};
use crate::error::{Error, Result, check_positive};
use crate::rng::SimRng;

/// The exactly known moment (E r^k)^(1/k) = g of what a generator draws (see
/// [`GeneratorSpec::controlled_moment`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ControlledMoment {
    /// The moment order k (may be infinite).
    pub k: f64,
    /// The moment bound G of Assumption 6.1: (E r^k)^(1/k) = G exactly.
    pub g: f64,
    /// r is the label (the sharp loss's weight a_i), not ||x||.
    pub r_is_label: bool,
}

/// How labels are made from features.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LabelModel {
    /// A teacher W with rows w_j ~ N(0, I_d / d). `separable = true`: y = argmax_j <w_j, x>,
    /// linearly separable, so interpolation (Assumption 5.5) holds for logistic regression.
    /// `separable = false`: y ~ softmax(<w_j, x> / temperature), no interpolation.
    Multinomial {
        /// Number of classes m >= 2 (labels 0..m-1), one teacher row w_j each.
        classes: usize,
        /// true: the label is the teacher's argmax (separable); false: it is sampled from the
        /// teacher's softmax.
        separable: bool,
        /// Softmax temperature > 0 of the non-separable labels (higher: noisier); default 1.
        #[serde(default = "one")]
        temperature: f64,
    },
    /// y = <w_star, x> + noise_std * e with w_star ~ N(0, I_d / d) and e ~ N(0, 1), or e a
    /// Student-t with `noise_dof` degrees of freedom (heavy-tailed noise) when given.
    Regression {
        /// Scale >= 0 of the label noise e (its standard deviation when e is Gaussian).
        noise_std: f64,
        /// Degrees of freedom > 0 of a Student-t noise e; omitted: Gaussian noise.
        #[serde(default)]
        noise_dof: Option<f64>,
    },
    /// Sharp-loss data: row i is the center w_i* = center + spread z (z ~ N(0, I_d), center
    /// defaults to 0) and the label is the weight a_i, drawn from the radial law.
    SharpCenters {
        /// Standard deviation >= 0 of the centers w_i* around `center`, per coordinate.
        spread: f64,
        /// The common center (d coordinates, finite); omitted: the origin.
        #[serde(default)]
        center: Option<Vec<f64>>,
        /// With a `two_point` weight law: the center of the rows that drew the heavy atom
        /// (heavy_center + spread z; d coordinates, finite). Clipping caps exactly these rows'
        /// weights, so placing them apart makes the clipping bias move the minimizer. Omitted,
        /// or with any other law (a bounded-data control's point mass): every row uses
        /// `center`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        heavy_center: Option<Vec<f64>>,
    },
}

/// The law of the direction u = x / ||x||.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Direction {
    /// Uniform on the unit sphere S^(d-1): u = z / ||z||, z ~ N(0, I_d).
    #[default]
    Sphere,
    /// u = D z / ||D z|| with D = diag(scales) (length d): concentrated on the large scales.
    Anisotropic {
        /// The diagonal of D: d positive per-coordinate scales.
        scales: Vec<f64>,
    },
}

/// A synthetic data set: x = r u with r from `radial`, u from `direction`, labels by `labels`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorSpec {
    /// Number of samples n to draw (>= 1).
    pub n: usize,
    /// Feature dimension d (>= 1); x in R^d.
    pub d: usize,
    /// Law of r = ||x|| (of a_i for `sharp_centers`). Default: Gaussian features x ~ N(0, I_d),
    /// i.e. r ~ chi_d, written as chi with (E r^2)^(1/2) = sqrt(d); for `sharp_centers`, a_i = 1.
    #[serde(default)]
    pub radial: Option<RadialSpec>,
    /// Law of the direction u = x / ||x|| (default: uniform on the sphere).
    #[serde(default)]
    pub direction: Direction,
    /// How labels y are made from the features (or, for `sharp_centers`, what the rows are).
    pub labels: LabelModel,
}

fn one() -> f64 {
    1.0
}

impl GeneratorSpec {
    /// The radial law in effect (the default filled in), validated and scaled.
    pub fn radial_law(&self) -> Result<Radial> {
        self.effective_radial().build(self.d)
    }

    fn effective_radial(&self) -> RadialSpec {
        match (&self.radial, &self.labels) {
            (Some(r), _) => r.clone(),
            (None, LabelModel::SharpCenters { .. }) => RadialSpec {
                k: f64::INFINITY,
                g: 1.0,
                law: LawSpec::PointMass,
            },
            (None, _) => RadialSpec {
                k: 2.0,
                g: (self.d as f64).sqrt(),
                law: LawSpec::Chi { dim: None },
            },
        }
    }

    /// Validates everything that does not need randomness; returns the scaled radial law.
    pub fn check(&self) -> Result<Radial> {
        if self.n == 0 || self.d == 0 {
            return Err(Error::param(format!(
                "generator needs n >= 1 and d >= 1, but n = {} and d = {}",
                self.n, self.d
            )));
        }
        if let Direction::Anisotropic { scales } = &self.direction {
            if scales.len() != self.d {
                return Err(Error::param(format!(
                    "anisotropic direction needs d = {} scales, but has {}",
                    self.d,
                    scales.len()
                )));
            }
            for (j, s) in scales.iter().enumerate() {
                check_positive(&format!("anisotropic scales[{j}]"), *s)?;
            }
        }
        match &self.labels {
            LabelModel::Multinomial {
                classes,
                temperature,
                ..
            } => {
                if *classes < 2 {
                    return Err(Error::param(format!(
                        "multinomial labels need at least 2 classes, but classes = {classes}"
                    )));
                }
                check_positive("multinomial temperature", *temperature)?;
            }
            LabelModel::Regression {
                noise_std,
                noise_dof,
            } => {
                if !(noise_std.is_finite() && *noise_std >= 0.0) {
                    return Err(Error::param(format!(
                        "regression noise_std must be >= 0 and finite, but is {noise_std}"
                    )));
                }
                if let Some(nu) = noise_dof {
                    check_positive("regression noise_dof", *nu)?;
                }
            }
            LabelModel::SharpCenters {
                spread,
                center,
                heavy_center,
            } => {
                if let Some(c) = heavy_center {
                    check_center("heavy_center", c, self.d)?;
                }
                if !(spread.is_finite() && *spread >= 0.0) {
                    return Err(Error::param(format!(
                        "sharp_centers spread must be >= 0 and finite, but is {spread}"
                    )));
                }
                if let Some(c) = center {
                    check_center("center", c, self.d)?;
                }
            }
        }
        self.radial_law()
    }

    /// The moment of Assumption 6.1 that this generator fixes exactly: (k, g) with
    /// (E r^k)^(1/k) = g, and whether r is the label (the sharp loss's weights a_i, with
    /// `labels = sharp_centers`) rather than ||x||. A loss's
    /// `loss::LipschitzForm::k_norm` turns it into the moment of G(x, y).
    pub fn controlled_moment(&self) -> Result<ControlledMoment> {
        let law = self.check()?;
        Ok(ControlledMoment {
            k: law.k(),
            g: law.g(),
            r_is_label: matches!(self.labels, LabelModel::SharpCenters { .. }),
        })
    }

    /// Sets the sweep's phi of Eq. (1) in a `two_point` radial law (the experiment runner calls
    /// this at each sweep point; every other law ignores it).
    pub fn set_sweep_phi(&mut self, phi: f64) {
        if let Some(r) = &mut self.radial {
            r.law.set_phi(phi);
        }
    }

    /// Draws the data set from the data stream `rng`.
    pub fn generate(&self, rng: &mut SimRng) -> Result<Dataset> {
        if self
            .radial
            .as_ref()
            .is_some_and(|r| r.law.two_point_phi_missing())
        {
            return Err(Error::Config(
                "a two_point radial law moves with phi: give its phi (the experiment runner sets it at \
                 each sweep point)"
                    .into(),
            ));
        }
        let law = self.check()?;
        let (n, d) = (self.n, self.d);
        let m = match &self.labels {
            LabelModel::Multinomial { classes, .. } => *classes as f64,
            _ => 0.0,
        };
        crate::limits::check_memory(
            &format!("[data] n = {n}, d = {d}, classes = {m}"),
            // x and y, the per-sample constants, and one more copy of the rows (the train/test
            // split or standardization copies them): the peak, not just the first allocation.
            8.0 * (n as f64 * (2.0 * d as f64 + 3.0) + m * (d as f64 + 1.0)),
        )?;
        let mut x = vec![0.0; n * d];
        let y = match &self.labels {
            LabelModel::Multinomial {
                classes,
                separable,
                temperature,
            } => {
                let m = *classes;
                let teacher = gaussian_vec(m * d, 1.0 / (d as f64).sqrt(), rng);
                let mut logits = vec![0.0; m];
                let mut y = Vec::with_capacity(n);
                for xi in x.chunks_exact_mut(d) {
                    self.draw_features(&law, xi, rng);
                    for (j, l) in logits.iter_mut().enumerate() {
                        *l = dot(&teacher[j * d..(j + 1) * d], xi) / temperature;
                    }
                    let label = if *separable {
                        argmax(&logits)
                    } else {
                        sample_softmax(&logits, rng)
                    };
                    y.push(label as f64);
                }
                y
            }
            LabelModel::Regression {
                noise_std,
                noise_dof,
            } => {
                let w = gaussian_vec(d, 1.0 / (d as f64).sqrt(), rng);
                let t = noise_dof.map(|nu| StudentT::new(nu).expect("dof validated positive"));
                let mut y = Vec::with_capacity(n);
                for xi in x.chunks_exact_mut(d) {
                    self.draw_features(&law, xi, rng);
                    let e: f64 = match &t {
                        Some(t) => t.sample(rng),
                        None => StandardNormal.sample(rng),
                    };
                    y.push(dot(&w, xi) + noise_std * e);
                }
                y
            }
            LabelModel::SharpCenters {
                spread,
                center,
                heavy_center,
            } => {
                let base = |j: usize| center.as_ref().map_or(0.0, |c| c[j]);
                // Rows move to heavy_center only where the law has a heavy atom (two_point).
                let heavy = heavy_center.as_ref().zip(law.heavy_threshold());
                let mut y = Vec::with_capacity(n);
                for xi in x.chunks_exact_mut(d) {
                    for (j, v) in xi.iter_mut().enumerate() {
                        let z: f64 = StandardNormal.sample(rng);
                        *v = base(j) + spread * z;
                    }
                    // The weight is drawn after the center (the stream order of the data sets
                    // without heavy_center), and a heavy row's center is moved afterwards.
                    let a = law.sample(rng);
                    if let Some((hc, cut)) = heavy
                        && a > cut
                    {
                        for (j, v) in xi.iter_mut().enumerate() {
                            *v += hc[j] - base(j);
                        }
                    }
                    y.push(a);
                }
                y
            }
        };
        Dataset::new(x, y, d).map_err(|e| Error::Numerical(format!("generator produced {e}")))
    }

    /// Writes x = r u into `out`.
    fn draw_features(&self, law: &Radial, out: &mut [f64], rng: &mut SimRng) {
        let r = law.sample(rng);
        sample_direction(&self.direction, out, rng);
        out.iter_mut().for_each(|v| *v *= r);
    }
}

/// A sharp_centers center (`what` names it): d finite coordinates.
fn check_center(what: &str, c: &[f64], d: usize) -> Result<()> {
    if c.len() != d {
        return Err(Error::param(format!(
            "sharp_centers {what} needs d = {d} coordinates, but has {}",
            c.len()
        )));
    }
    if let Some(j) = c.iter().position(|v| !v.is_finite()) {
        return Err(Error::param(format!(
            "sharp_centers {what}[{j}] is {}, but must be finite",
            c[j]
        )));
    }
    Ok(())
}

/// Writes a unit vector u into `out`: uniform on the sphere (z / ||z|| is rotation invariant)
/// or the anisotropic direction D z / ||D z||. Redraws z in the probability-zero event z = 0.
pub fn sample_direction(dir: &Direction, out: &mut [f64], rng: &mut SimRng) {
    loop {
        for (j, v) in out.iter_mut().enumerate() {
            let z: f64 = StandardNormal.sample(rng);
            *v = match dir {
                Direction::Sphere => z,
                Direction::Anisotropic { scales } => scales[j] * z,
            };
        }
        let norm = dot(out, out).sqrt();
        if norm > 0.0 && norm.is_finite() {
            out.iter_mut().for_each(|v| *v /= norm);
            return;
        }
    }
}

fn gaussian_vec(len: usize, sd: f64, rng: &mut SimRng) -> Vec<f64> {
    (0..len)
        .map(|_| {
            let z: f64 = StandardNormal.sample(rng);
            sd * z
        })
        .collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(u, v)| u * v).sum()
}

fn argmax(v: &[f64]) -> usize {
    let mut best = 0;
    for (j, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = j;
        }
    }
    best
}

fn sample_softmax(logits: &[f64], rng: &mut SimRng) -> usize {
    let mx = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let total: f64 = logits.iter().map(|l| (l - mx).exp()).sum();
    let mut u: f64 = rng.random::<f64>() * total;
    for (j, l) in logits.iter().enumerate() {
        u -= (l - mx).exp();
        if u <= 0.0 {
            return j;
        }
    }
    logits.len() - 1
}
