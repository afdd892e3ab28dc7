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
//! H.1's alpha(tau) and Delta(w*), and N.1's L and f(w0) - f*, computed per instance. For
//! Thm I.1 the centres are squashed into the ball of radius R - D0 (R the spec's radius), so that
//! w* (in their convex hull) and w0 lie in W.
//!
//! [`RegressionMixture`] is the same for a linear-model loss with G(x, y) = (a / b) ||x||
//! (robust regression, Huber): per component a share of the rows at one feature vector x_j
//! (a log-magnitude and a direction) with one label y_j; the magnitudes are rescaled so that the
//! moment holds with equality, as above. It serves Thm 6.8 / N.1 (robust regression is L-smooth
//! and nonconvex) and Thm 6.2 / J.1 over Huber regression (convex).
//!
//! [`LogisticMixture`] is the same for binary logistic regression (G(x, y) = ||x||, labels
//! +-1): per component a share of the rows at one feature vector x_j, split between the labels
//! +1 and -1 by a fraction of its own, with at least one row of each (so every component holds
//! at least two rows): with both labels at every x_j, f is coercive on the span of the x_j and
//! f* is attained (separable data would have no minimizer). It decodes to twice as many
//! point masses (x_j, +1) and (x_j, -1).

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
    /// Thm I.1: every centre lies strictly inside the ball of this radius (R - D0).
    #[serde(default)]
    pub max_centre: Option<f64>,
    /// Thm I.1 with the minimizer on the boundary of W (radius R; overrides `max_centre`): every
    /// centre has first coordinate in (R, 3R) and the others in (-2R, 2R) ([`boundary_centre`]),
    /// so the centres' convex hull, which holds the unconstrained minimizer, lies outside W and
    /// the constrained minimizer w*_W lies on its boundary. At parameters 0 every centre is
    /// (2R, 0, ..., 0): one point mass, whose w*_W = (R, 0, ..., 0).
    #[serde(default)]
    pub boundary: Option<f64>,
}

/// The point-mass mixture family of a linear-model loss with G(x, y) = lip ||x||.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegressionMixture {
    /// Rows n.
    pub n: usize,
    /// Dimension d of the features.
    pub d: usize,
    /// Components m.
    pub m: usize,
    /// Tail index k of Assumption 6.1 (inf: bounded).
    pub k: f64,
    /// The moment level G_emp the magnitudes are rescaled to.
    pub g_emp: f64,
    /// The loss's G(x, y) / ||x|| (a / b of its `LipschitzForm::Linear`).
    pub lip: f64,
}

/// The point-mass mixture family of binary logistic regression (G(x, y) = ||x||), both labels
/// at every feature vector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogisticMixture {
    /// Rows n (at least 2 per component).
    pub n: usize,
    /// Dimension d of the features.
    pub d: usize,
    /// Components m (distinct feature vectors).
    pub m: usize,
    /// Tail index k of Assumption 6.1 (inf: bounded).
    pub k: f64,
    /// The moment level G_emp the magnitudes are rescaled to.
    pub g_emp: f64,
}

/// A searched family: the sharp, the regression or the logistic mixture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Family {
    /// [`SharpMixture`].
    Sharp(SharpMixture),
    /// [`RegressionMixture`].
    Regression(RegressionMixture),
    /// [`LogisticMixture`].
    Logistic(LogisticMixture),
}

impl Family {
    /// The decoded components at `theta` (moment enforced).
    pub fn components(&self, theta: &[f64]) -> Result<Components> {
        match self {
            Family::Sharp(f) => f.components(theta),
            Family::Regression(f) => f.components(theta),
            Family::Logistic(f) => f.components(theta),
        }
    }
    /// Dimension d of the data.
    pub fn d(&self) -> usize {
        match self {
            Family::Sharp(f) => f.d,
            Family::Regression(f) => f.d,
            Family::Logistic(f) => f.d,
        }
    }
}

impl InstanceFamily for Family {
    fn dim(&self) -> usize {
        match self {
            Family::Sharp(f) => f.dim(),
            Family::Regression(f) => f.dim(),
            Family::Logistic(f) => f.dim(),
        }
    }
    fn build(&self, theta: &[f64]) -> Result<Dataset> {
        self.components(theta)?.dataset(self.d())
    }
}

/// Assumption 6.1's level that the proof of `theorem` needs of the data set itself: J.1 (and
/// 6.2), I.1 and N.1 (and 6.8) proceed on the event G_Z^k = mean_i G_i^k <= G^k / gamma
/// (Markov: before Eq. 70, after Eq. 55, before Eq. 146); K.1 (and 6.5) on mean_i G_i^k <= 4 G^k
/// (before Eq. 88). At k = inf every G_i <= G. Thm 5.4 / H.1 has no moment assumption: its bound
/// scales with G_n = max_i G_i, so its family fixes G_n = G (k = inf; OR / bound does not move
/// when every G_i is scaled by one factor). Returns G_emp, the largest (mean_i G_i^k)^(1/k) of a
/// data set in the class.
pub fn moment_level(theorem: TheoremId, g: f64, k: f64, gamma: Option<f64>) -> Result<f64> {
    let full = theorem.full_version();
    if full == TheoremId::H1 && !k.is_infinite() {
        return Err(Error::Config(
            "Thm 5.4 / H.1 has no moment assumption: its search fixes G_n = max_i G_i = G, so its series set k = \"inf\"".into(),
        ));
    }
    if k.is_infinite() {
        return Ok(g);
    }
    match full {
        TheoremId::J1 | TheoremId::I1 | TheoremId::N1 => {
            let gamma = gamma.ok_or_else(|| {
                Error::Config(format!(
                    "a Thm {} search needs constants.gamma (the level G gamma^(-1/k))",
                    full.label()
                ))
            })?;
            Ok(g * gamma.powf(-1.0 / k))
        }
        TheoremId::K1 => Ok(g * 4f64.powf(1.0 / k)),
        t => Err(Error::Config(format!(
            "the worst-case search has no instance family for Thm {} (searched: 5.4 / H.1, 6.2 / J.1, 6.5 / K.1, I.1, 6.8 / N.1)",
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
pub fn softmax(u: &[f64]) -> Vec<f64> {
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
    /// Centres (the feature vectors x_j of a regression mixture), one d-vector per component.
    pub centre: Vec<Vec<f64>>,
    /// Labels y_j of a regression mixture (None: the sharp loss, whose label is the weight).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<Vec<f64>>,
}

impl SharpMixture {
    /// The decoded components at `theta` (moment enforced).
    pub fn components(&self, theta: &[f64]) -> Result<Components> {
        let (m, d) = (self.m, self.d);
        check_theta(theta, self.dim())?;
        let rows = allocate(&softmax(&theta[..m]), self.n);
        // Magnitudes in log space, clamped so that exp stays finite.
        let mut weight: Vec<f64> = theta[m..2 * m]
            .iter()
            .map(|v| v.clamp(-30.0, 30.0).exp())
            .collect();
        let scale = self.g_emp / moment(&per_row(&rows, &weight), self.k);
        for a in &mut weight {
            *a *= scale;
        }
        let centre = (0..m)
            .map(|j| {
                let u = &theta[2 * m + j * d..2 * m + (j + 1) * d];
                match (self.boundary, self.max_centre) {
                    (Some(r), _) => boundary_centre(u, r),
                    (None, Some(r)) => squash(u, r),
                    (None, None) => u.to_vec(),
                }
            })
            .collect();
        Ok(Components {
            rows,
            weight,
            centre,
            label: None,
        })
    }
}

/// A search point of the family's dimension with finite coordinates, or the error that says not.
fn check_theta(theta: &[f64], dim: usize) -> Result<()> {
    if theta.len() != dim {
        return Err(Error::param(format!(
            "the family has {dim} parameters, but {} were given",
            theta.len()
        )));
    }
    if theta.iter().any(|v| !v.is_finite()) {
        return Err(Error::Numerical("a non-finite search parameter".into()));
    }
    Ok(())
}

/// u mapped into the open ball of radius r: r u / sqrt(1 + ||u||^2).
fn squash(u: &[f64], r: f64) -> Vec<f64> {
    let s = r / (1.0 + u.iter().map(|v| v * v).sum::<f64>()).sqrt();
    u.iter().map(|v| v * s).collect()
}

/// u mapped beyond the ball of radius r along the first axis: (r (2 + tanh u_0), 2 r tanh u_1,
/// ...), first coordinate in (r, 3r).
pub fn boundary_centre(u: &[f64], r: f64) -> Vec<f64> {
    u.iter()
        .enumerate()
        .map(|(i, v)| {
            if i == 0 {
                r * (2.0 + v.tanh())
            } else {
                2.0 * r * v.tanh()
            }
        })
        .collect()
}

/// The row-wise G_i of per-component values (G_j repeated over its rows).
fn per_row(rows: &[usize], g: &[f64]) -> Vec<f64> {
    rows.iter()
        .zip(g)
        .flat_map(|(&r, &a)| std::iter::repeat_n(a, r))
        .collect()
}

impl RegressionMixture {
    /// The decoded components at `theta` (moment enforced): shares, then x_j = s e^(t_j)
    /// u_j / ||u_j|| (u_j = 0: the first axis) with one factor s for all, then labels.
    pub fn components(&self, theta: &[f64]) -> Result<Components> {
        let m = self.m;
        check_theta(theta, self.dim())?;
        self.components_with_rows(theta, allocate(&softmax(&theta[..m]), self.n))
    }

    /// [`RegressionMixture::components`] with the row counts given (the moment is enforced over
    /// these rows).
    fn components_with_rows(&self, theta: &[f64], rows: Vec<usize>) -> Result<Components> {
        let (m, d) = (self.m, self.d);
        let mags: Vec<f64> = theta[m..2 * m]
            .iter()
            .map(|v| v.clamp(-30.0, 30.0).exp())
            .collect();
        let scale = self.g_emp / moment(&per_row(&rows, &mags), self.k);
        let mut centre = Vec::with_capacity(m);
        for (j, &mag) in mags.iter().enumerate() {
            let u = &theta[2 * m + j * d..2 * m + (j + 1) * d];
            let len = u.iter().map(|v| v * v).sum::<f64>().sqrt();
            let x: Vec<f64> = if len > 0.0 {
                u.iter().map(|v| v / len * mag * scale / self.lip).collect()
            } else {
                (0..d)
                    .map(|i| if i == 0 { mag * scale / self.lip } else { 0.0 })
                    .collect()
            };
            centre.push(x);
        }
        let weight = mags.iter().map(|a| a * scale).collect();
        let label = theta[(2 + d) * m..].to_vec();
        Ok(Components {
            rows,
            weight,
            centre,
            label: Some(label),
        })
    }

    /// Number of free parameters.
    pub fn dim(&self) -> usize {
        self.m * (3 + self.d)
    }
}

impl LogisticMixture {
    /// The decoded components at `theta` (moment enforced): shares (every component raised to
    /// two rows, taken from the largest), magnitudes and directions as
    /// [`RegressionMixture::components`] with lip = 1, then per component the share of label +1,
    /// sigmoid(q_j) of its rows rounded and kept in [1, r_j - 1]. Returns 2m point masses: the
    /// +1 rows of component j at index 2j, its -1 rows at 2j + 1.
    pub fn components(&self, theta: &[f64]) -> Result<Components> {
        let (m, d) = (self.m, self.d);
        check_theta(theta, self.dim())?;
        if self.n < 2 * m {
            return Err(Error::param(format!(
                "a logistic mixture of {m} components needs n >= {}, but n = {}",
                2 * m,
                self.n
            )));
        }
        let mut rows = allocate(&softmax(&theta[..m]), self.n);
        while let Some(j) = rows.iter().position(|&r| r < 2) {
            let top = (0..m)
                .max_by_key(|&i| (rows[i], usize::MAX - i))
                .unwrap_or(0);
            rows[top] -= 1;
            rows[j] += 1;
        }
        let reg = RegressionMixture {
            n: self.n,
            d,
            m,
            k: self.k,
            g_emp: self.g_emp,
            lip: 1.0,
        };
        let base = reg.components_with_rows(theta, rows.clone())?;
        let q = &theta[(2 + d) * m..];
        let mut out = Components {
            rows: Vec::with_capacity(2 * m),
            weight: Vec::with_capacity(2 * m),
            centre: Vec::with_capacity(2 * m),
            label: Some(Vec::with_capacity(2 * m)),
        };
        for j in 0..m {
            let r = rows[j];
            let pos = ((r as f64) / (1.0 + (-q[j].clamp(-30.0, 30.0)).exp())).round() as usize;
            let pos = pos.clamp(1, r - 1);
            for (count, y) in [(pos, 1.0), (r - pos, -1.0)] {
                out.rows.push(count);
                out.weight.push(base.weight[j]);
                out.centre.push(base.centre[j].clone());
                if let Some(l) = out.label.as_mut() {
                    l.push(y);
                }
            }
        }
        Ok(out)
    }

    /// Number of free parameters (as [`RegressionMixture`]: the labels become label shares).
    pub fn dim(&self) -> usize {
        self.m * (3 + self.d)
    }
}

impl InstanceFamily for LogisticMixture {
    fn dim(&self) -> usize {
        LogisticMixture::dim(self)
    }
    fn build(&self, theta: &[f64]) -> Result<Dataset> {
        self.components(theta)?.dataset(self.d)
    }
}

impl Components {
    /// The data set: rows in component order, x = centre, y = weight (the sharp loss) or the
    /// component's label (a regression mixture).
    pub fn dataset(&self, d: usize) -> Result<Dataset> {
        let mut x = Vec::new();
        let mut y = Vec::new();
        for (j, ((&r, &a), c)) in self
            .rows
            .iter()
            .zip(&self.weight)
            .zip(&self.centre)
            .enumerate()
        {
            let yj = self.label.as_ref().map_or(a, |l| l[j]);
            for _ in 0..r {
                x.extend_from_slice(c);
                y.push(yj);
            }
        }
        Dataset::new(x, y, d)
    }

    /// The bounded control: the same shares, centres (directions) and labels with every G_i = G
    /// (the sharp loss: weight G; a regression mixture: x_j rescaled to G(x_j) = G).
    pub fn control(&self, g: f64) -> Components {
        let mut c = self.clone();
        if c.label.is_some() {
            for (x, &a) in c.centre.iter_mut().zip(&self.weight) {
                x.iter_mut().for_each(|v| *v *= g / a);
            }
        }
        c.weight.iter_mut().for_each(|a| *a = g);
        c
    }
}

impl InstanceFamily for RegressionMixture {
    fn dim(&self) -> usize {
        RegressionMixture::dim(self)
    }
    fn build(&self, theta: &[f64]) -> Result<Dataset> {
        self.components(theta)?.dataset(self.d)
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
                max_centre: None,
                boundary: None,
            };
            let theta: Vec<f64> = (0..fam.dim()).map(|i| ((i * 7) % 5) as f64 - 2.0).collect();
            let data = fam.build(&theta).unwrap();
            assert_eq!(data.n, 97);
            let m = moment(&data.y, k);
            assert!((m / 1.7 - 1.0).abs() < MOMENT_SLACK, "{m}");
            check_moment(&data.y, k, 1.7).unwrap();
        }
    }

    /// The regression mixture meets the moment with equality too, measured through robust
    /// regression's own G(x, y) = ||x|| / sqrt 2 (not the family's decoding), and its bounded
    /// control has every G_i = G with the labels and directions kept.
    #[test]
    fn regression_mixture_meets_the_moment_through_the_loss() {
        use crate::loss::LossSpec;
        let form = LossSpec::Robust.lipschitz_form().unwrap();
        for &k in &[2.0, 4.0, f64::INFINITY] {
            let fam = RegressionMixture {
                n: 50,
                d: 3,
                m: 3,
                k,
                g_emp: 1.3,
                lip: 1.0 / 2f64.sqrt(),
            };
            let theta: Vec<f64> = (0..fam.dim()).map(|i| ((i * 5) % 7) as f64 - 3.0).collect();
            let c = fam.components(&theta).unwrap();
            let data = c.dataset(3).unwrap();
            let gi: Vec<f64> = (0..data.n)
                .map(|i| form.eval(data.row(i), data.y[i]))
                .collect();
            assert!((moment(&gi, k) / 1.3 - 1.0).abs() < MOMENT_SLACK, "k = {k}");
            assert_eq!(c.label.as_deref(), Some(&theta[15..]));
            let ctl = c.control(1.0).dataset(3).unwrap();
            for i in 0..ctl.n {
                assert!((form.eval(ctl.row(i), ctl.y[i]) - 1.0).abs() < 1e-12);
                assert_eq!(ctl.y[i], data.y[i]);
            }
        }
    }

    /// I.1's centres stay inside the ball of radius R - D0 whatever the parameters.
    #[test]
    fn constrained_centres_stay_inside_the_ball() {
        let fam = SharpMixture {
            n: 20,
            d: 2,
            m: 2,
            k: 2.0,
            g_emp: 1.0,
            max_centre: Some(2.0),
            boundary: None,
        };
        let theta = vec![0.0, 0.0, 0.0, 0.0, 1e6, -1e6, 3.0, 0.5];
        let c = fam.components(&theta).unwrap();
        for x in &c.centre {
            assert!(x.iter().map(|v| v * v).sum::<f64>().sqrt() < 2.0);
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
            max_centre: None,
            boundary: None,
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
