//! Exact non-private solvers for f* = min_w f(w): the reference of the optimization risk.
//!
//! - weighted sharp loss f(w) = (1/n) sum a_i ||w - c_i||: weighted Weiszfeld (the weighted
//!   geometric median), with Vardi-Zhang's correction at a center;
//! - Appendix L loss: the closed form w* = x_bar/||x_bar||, f* = -||x_bar|| (Eq. 101);
//! - smooth losses (Huber, robust regression, softmax): damped Newton with a Hessian by central
//!   differences of the analytic gradient (p is small in the experiments).

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::loss::{Loss, LossSpec, dot, mean_grad, mean_value, norm2};

/// A minimizer and the minimum, with the optimality residual that certifies it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// w*.
    pub w_star: Vec<f64>,
    /// f(w*).
    pub f_star: f64,
    /// The optimality residual: ||grad f(w*)|| (smooth), or the distance of 0 from the
    /// subdifferential (sharp), 0 for a closed form.
    pub residual: f64,
}

/// The exact solver for `spec` on `data`.
pub fn solve(spec: &LossSpec, loss: &dyn Loss, data: &Dataset) -> Result<Reference> {
    match spec {
        LossSpec::Sharp => weighted_geometric_median(data, 1e-13, 100_000),
        LossSpec::AppendixL => Ok(appendix_l(data)),
        LossSpec::Huber { .. } | LossSpec::Robust | LossSpec::Logistic { .. } => {
            newton(loss, data, &vec![0.0; loss.param_dim()], 1e-10, 500)
        }
        LossSpec::TanhNet { .. } => Err(Error::param(
            "the tanh network has no exact solver; use a convex or robust-regression loss",
        )),
    }
}

/// Eq. (101): w* = x_bar / ||x_bar||, f* = -||x_bar|| for f(w) = -w.x_bar + 2 m (||w|| - 1)_+
/// (m = mean ||x_i|| >= ||x_bar||, so the penalty never pays outside the unit ball). On the
/// all-zero data set every point of the unit ball is a minimizer: w* = 0, f* = 0.
pub fn appendix_l(data: &Dataset) -> Reference {
    let mut xbar = vec![0.0; data.d];
    for i in 0..data.n {
        crate::loss::axpy(1.0 / data.n as f64, data.row(i), &mut xbar);
    }
    let nx = norm2(&xbar);
    if nx == 0.0 {
        return Reference {
            w_star: vec![0.0; data.d],
            f_star: 0.0,
            residual: 0.0,
        };
    }
    Reference {
        w_star: xbar.iter().map(|v| v / nx).collect(),
        f_star: -nx,
        residual: 0.0,
    }
}

/// The distance of 0 from the subdifferential of f(w) = (1/n) sum a_i ||w - c_i|| at w:
/// max(0, ||sum_{w != c_i} a_i (w - c_i)/||w - c_i|| || - sum_{w = c_i} a_i) / n.
pub fn sharp_residual(data: &Dataset, w: &[f64]) -> f64 {
    let mut g = vec![0.0; data.d];
    let mut at = 0.0;
    for i in 0..data.n {
        let c = data.row(i);
        let r = dist(w, c);
        if r == 0.0 {
            at += data.y[i];
        } else {
            for (gk, (wk, ck)) in g.iter_mut().zip(w.iter().zip(c)) {
                *gk += data.y[i] * (wk - ck) / r;
            }
        }
    }
    ((norm2(&g) - at) / data.n as f64).max(0.0)
}

fn dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

/// Weighted Weiszfeld from the weighted centroid, with Vardi-Zhang's step at a center; stops
/// when a step moves less than `tol` (relative to the data's scale).
pub fn weighted_geometric_median(data: &Dataset, tol: f64, max_iter: usize) -> Result<Reference> {
    let (n, d) = (data.n, data.d);
    let wsum: f64 = data.y.iter().sum();
    if wsum <= 0.0 {
        // Every weight zero: f = 0 everywhere.
        return Ok(Reference {
            w_star: vec![0.0; d],
            f_star: 0.0,
            residual: 0.0,
        });
    }
    let mut w = vec![0.0; d];
    for i in 0..n {
        crate::loss::axpy(data.y[i] / wsum, data.row(i), &mut w);
    }
    let scale = (0..n).map(|i| norm2(data.row(i))).fold(1.0, f64::max);
    let mut num = vec![0.0; d];
    let mut r_vec = vec![0.0; d];
    for _ in 0..max_iter {
        num.fill(0.0);
        r_vec.fill(0.0);
        let (mut den, mut eta) = (0.0, 0.0);
        for i in 0..n {
            let (c, a) = (data.row(i), data.y[i]);
            if a == 0.0 {
                continue;
            }
            let r = dist(&w, c);
            if r == 0.0 {
                eta += a;
                continue;
            }
            den += a / r;
            for k in 0..d {
                num[k] += a * c[k] / r;
                r_vec[k] += a * (c[k] - w[k]) / r;
            }
        }
        if den == 0.0 {
            break;
        }
        let t: Vec<f64> = num.iter().map(|v| v / den).collect();
        let next = if eta == 0.0 {
            t
        } else {
            // Vardi-Zhang: w+ = (1 - eta/||R||)_+ T + min(1, eta/||R||) w.
            let rn = norm2(&r_vec);
            if rn <= eta {
                break; // w is a center and 0 is in the subdifferential
            }
            let s = eta / rn;
            t.iter()
                .zip(&w)
                .map(|(tk, wk)| (1.0 - s) * tk + s * wk)
                .collect()
        };
        let step = dist(&next, &w);
        w = next;
        if step <= tol * scale {
            break;
        }
    }
    let loss = crate::loss::SharpLoss::new(d);
    Ok(Reference {
        f_star: mean_value(&loss, &w, data),
        residual: sharp_residual(data, &w),
        w_star: w,
    })
}

/// Damped Newton with a central-difference Hessian of the analytic mean gradient, a
/// Levenberg shift when the Hessian is not positive definite, and Armijo backtracking.
/// Converges when ||grad f|| <= `tol` (1 + |f|); an error otherwise.
pub fn newton(
    loss: &dyn Loss,
    data: &Dataset,
    w0: &[f64],
    tol: f64,
    max_iter: usize,
) -> Result<Reference> {
    let p = w0.len();
    let mut w = w0.to_vec();
    let mut g = vec![0.0; p];
    let mut gp = vec![0.0; p];
    let mut gm = vec![0.0; p];
    let mut f = mean_value(loss, &w, data);
    for _ in 0..max_iter {
        mean_grad(loss, &w, data, &mut g);
        let gn = norm2(&g);
        if gn <= tol * (1.0 + f.abs()) {
            return Ok(Reference {
                w_star: w,
                f_star: f,
                residual: gn,
            });
        }
        // Hessian by central differences (symmetrized).
        let h = 1e-5 * (1.0 + norm2(&w));
        let mut hess = nalgebra::DMatrix::<f64>::zeros(p, p);
        let mut wp = w.clone();
        for j in 0..p {
            wp[j] = w[j] + h;
            mean_grad(loss, &wp, data, &mut gp);
            wp[j] = w[j] - h;
            mean_grad(loss, &wp, data, &mut gm);
            wp[j] = w[j];
            for i in 0..p {
                hess[(i, j)] = (gp[i] - gm[i]) / (2.0 * h);
            }
        }
        let hess = (&hess + hess.transpose()) * 0.5;
        let gv = nalgebra::DVector::from_column_slice(&g);
        let mut shift = 0.0;
        let dir = loop {
            let m = &hess + nalgebra::DMatrix::<f64>::identity(p, p) * shift;
            if let Some(ch) = m.cholesky() {
                break ch.solve(&gv);
            }
            shift = if shift == 0.0 {
                1e-8 * (1.0 + gn)
            } else {
                shift * 10.0
            };
            if shift > 1e12 {
                return Err(Error::Numerical("Newton: Hessian shift diverged".into()));
            }
        };
        let slope = dot(&g, dir.as_slice());
        let mut step = 1.0;
        let mut accepted = false;
        for _ in 0..60 {
            let trial: Vec<f64> = w
                .iter()
                .zip(dir.iter())
                .map(|(a, b)| a - step * b)
                .collect();
            let ft = mean_value(loss, &trial, data);
            if ft <= f - 1e-4 * step * slope || (ft <= f && step < 1e-6) {
                w = trial;
                f = ft;
                accepted = true;
                break;
            }
            step *= 0.5;
        }
        if !accepted {
            // No descent left at machine precision: w is optimal to rounding.
            mean_grad(loss, &w, data, &mut g);
            let gn = norm2(&g);
            if gn <= 1e-7 * (1.0 + f.abs()) {
                return Ok(Reference {
                    w_star: w,
                    f_star: f,
                    residual: gn,
                });
            }
            return Err(Error::Numerical(format!(
                "Newton stalled with ||grad f|| = {gn:e} (is the minimizer finite?)"
            )));
        }
    }
    mean_grad(loss, &w, data, &mut g);
    Err(Error::Numerical(format!(
        "Newton did not converge in {max_iter} iterations: ||grad f|| = {:e} at f = {f} (is the minimizer finite?)",
        norm2(&g)
    )))
}
