//! Exact non-private solvers for f* = min_w f(w): the reference of the optimization risk.
//!
//! - weighted sharp loss f(w) = (1/n) sum a_i ||w - c_i||: weighted Weiszfeld (the weighted
//!   geometric median), with Vardi-Zhang's correction at a center;
//! - Appendix L loss: the closed form w* = x_bar/||x_bar||, f* = -||x_bar|| (Eq. 101);
//! - smooth losses (Huber, robust regression, softmax, binary logistic): damped Newton with a
//!   Hessian by central differences of the analytic gradient (p is small in the experiments);
//! - the weighted sharp loss on a ball (Thm I.1, minimizer on the boundary): projected
//!   Weiszfeld ([`sharp_on_ball`]).

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::linalg;
use crate::linalg::{dist, dot, norm2};
use crate::loss::{Loss, LossSpec, mean_grad, mean_value};
use crate::lower_bound::empirical_optimum;
use crate::theory::geometric_median;

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
        LossSpec::Huber { .. }
        | LossSpec::Robust
        | LossSpec::Logistic { .. }
        | LossSpec::BinaryLogistic => newton(loss, data, &vec![0.0; loss.param_dim()], 1e-10, 500),
        LossSpec::TanhNet { .. } => Err(Error::param(
            "the tanh network has no exact solver; use a convex or robust-regression loss",
        )),
    }
}

/// Eq. (101): the closed-form minimizer of the Appendix L loss ([`empirical_optimum`]); on the
/// all-zero data set every point of the unit ball is a minimizer and w* = 0 is reported.
pub fn appendix_l(data: &Dataset) -> Reference {
    let opt = empirical_optimum(data, &vec![0.0; data.d]);
    Reference {
        w_star: opt.w_star,
        f_star: opt.f_star,
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

/// The sharp loss's exact reference: the weighted geometric median of the centers c_i with
/// weights a_i (the labels), by the crate's one Weiszfeld solver, stopping when a step moves less
/// than `tol` (relative to the data's scale).
pub fn weighted_geometric_median(data: &Dataset, tol: f64, max_iter: usize) -> Result<Reference> {
    let w = geometric_median::weighted_geometric_median(&data.x, data.d, &data.y, tol, max_iter)?.w;
    let loss = crate::loss::SharpLoss::new(data.d);
    Ok(Reference {
        f_star: mean_value(&loss, &w, data),
        residual: sharp_residual(data, &w),
        w_star: w,
    })
}

/// Thm I.1's reference on W = the ball of radius `radius` for the weighted sharp loss: the
/// constrained minimizer w*_W = argmin_{||w|| <= R} f(w) and f* = f(w*_W) (the risk of Eq. (60)
/// is f(w) - min_W f). The unconstrained weighted geometric median when it lies in W; otherwise
/// w*_W is on the boundary and is found by the projected Weiszfeld iteration
/// w <- Proj_W(sum_i (a_i / r_i) c_i / sum_i (a_i / r_i)), r_i = ||w - c_i||: each step minimizes
/// Weiszfeld's quadratic majorizer of f over W, so f decreases monotonically (an MM scheme;
/// one loop, where a bisection on the KKT multiplier would nest one solve per multiplier).
/// The residual certifies the KKT condition 0 in grad f(w) + lambda w, lambda >= 0:
/// ||grad f(w) + lambda_+ w|| with lambda_+ = max(0, -<grad f(w), w>) / R^2.
pub fn sharp_on_ball(data: &Dataset, radius: f64, tol: f64, max_iter: usize) -> Result<Reference> {
    let free = weighted_geometric_median(data, tol, max_iter)?;
    // Inside W (to the slack the run's own check allows): the unconstrained answer, unchanged.
    if norm2(&free.w_star) <= radius * (1.0 + 1e-12) {
        return Ok(free);
    }
    let d = data.d;
    let project = |w: &mut Vec<f64>| {
        let r = norm2(w);
        if r > radius {
            w.iter_mut().for_each(|v| *v *= radius / r);
        }
    };
    let mut w = free.w_star.clone();
    project(&mut w);
    let scale = 1.0 + (0..data.n).map(|i| norm2(data.row(i))).fold(0.0, f64::max);
    for _ in 0..max_iter {
        let mut s = vec![0.0; d];
        let mut total = 0.0;
        let mut at_centre = false;
        for i in 0..data.n {
            let c = data.row(i);
            let r = dist(&w, c);
            if r <= 1e-15 * scale {
                at_centre = true;
                continue;
            }
            let q = data.y[i] / r;
            total += q;
            s.iter_mut().zip(c).for_each(|(sk, ck)| *sk += q * ck);
        }
        if at_centre || total == 0.0 {
            // w*_W is a centre (its weight outweighs the rest): the iteration stops there.
            break;
        }
        let mut next: Vec<f64> = s.iter().map(|v| v / total).collect();
        project(&mut next);
        let step = dist(&next, &w);
        w = next;
        if step <= tol * scale {
            break;
        }
    }
    let loss = crate::loss::SharpLoss::new(d);
    let mut g = vec![0.0; d];
    mean_grad(&loss, &w, data, &mut g);
    let lambda = (-dot(&g, &w)).max(0.0) / (radius * radius);
    let residual = norm2(
        &g.iter()
            .zip(&w)
            .map(|(a, b)| a + lambda * b)
            .collect::<Vec<_>>(),
    );
    Ok(Reference {
        f_star: mean_value(&loss, &w, data),
        residual,
        w_star: w,
    })
}

/// The Hessian of f at w by central differences of the analytic mean gradient (symmetrized,
/// p x p row-major).
pub fn hessian(loss: &dyn Loss, data: &Dataset, w: &[f64]) -> Vec<f64> {
    let p = w.len();
    hessian_with(loss, data, w, &mut vec![0.0; p], &mut vec![0.0; p])
}

fn hessian_with(
    loss: &dyn Loss,
    data: &Dataset,
    w: &[f64],
    gp: &mut [f64],
    gm: &mut [f64],
) -> Vec<f64> {
    let p = w.len();
    let h = 1e-5 * (1.0 + norm2(w));
    let mut hess = vec![0.0; p * p]; // column j = (grad(w + h e_j) - grad(w - h e_j)) / 2h
    let mut wp = w.to_vec();
    for j in 0..p {
        wp[j] = w[j] + h;
        mean_grad(loss, &wp, data, gp);
        wp[j] = w[j] - h;
        mean_grad(loss, &wp, data, gm);
        wp[j] = w[j];
        for i in 0..p {
            hess[i * p + j] = (gp[i] - gm[i]) / (2.0 * h);
        }
    }
    linalg::symmetrized(&hess, p)
}

/// lambda_min of f's Hessian at w*, for the losses with one (the smooth ones); None for the
/// sharp and Appendix L losses (not twice differentiable at w*).
pub fn lambda_min_at_optimum(
    spec: &LossSpec,
    loss: &dyn Loss,
    data: &Dataset,
    w_star: &[f64],
) -> Option<f64> {
    match spec {
        LossSpec::Huber { .. }
        | LossSpec::Robust
        | LossSpec::Logistic { .. }
        | LossSpec::BinaryLogistic => {
            let p = w_star.len();
            Some(linalg::min_eigenvalue_symmetric(
                &hessian(loss, data, w_star),
                p,
            ))
        }
        _ => None,
    }
}

/// Relative decrease of f below which a Newton step counts as not moving f (a few ulps of f).
const REL_DECREASE: f64 = 1e-14;
/// Gradient norm (relative to 1 + |f|) accepted when no step moves f any more.
const STALL_GRAD: f64 = 1e-6;

/// Damped Newton with a central-difference Hessian of the analytic mean gradient, a
/// Levenberg shift when the Hessian is not positive definite, and Armijo backtracking.
/// Converges when ||grad f|| <= `tol` (1 + |f|), or when f can no longer decrease by more than
/// its rounding (Newton decrement or the accepted step below `REL_DECREASE` (1 + |f|)) with
/// ||grad f|| <= `STALL_GRAD` (1 + |f|); an error otherwise.
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
        let hess = hessian_with(loss, data, &w, &mut gp, &mut gm);
        let mut shift = 0.0;
        let dir = loop {
            if let Some(dir) = linalg::cholesky_solve_shifted(&hess, p, shift, &g) {
                break dir;
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
        let slope = dot(&g, &dir);
        // Relative-decrease stopping rule: the Newton decrement lambda^2 = g^T H^-1 g predicts a
        // decrease lambda^2 / 2; once that is below rounding of f, no step can move f.
        // (A true Newton step only: with a Levenberg shift the decrement says nothing.)
        if shift == 0.0 && 0.5 * slope <= REL_DECREASE * (1.0 + f.abs()) {
            return Ok(Reference {
                w_star: w,
                f_star: f,
                residual: gn,
            });
        }
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
                if f - ft <= REL_DECREASE * (1.0 + f.abs()) {
                    // The step does not move f: treat it as no descent (the branch below).
                    break;
                }
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
            if gn <= STALL_GRAD * (1.0 + f.abs()) {
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
