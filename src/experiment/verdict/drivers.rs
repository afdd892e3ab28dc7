//! The drivers axis: what moves the risk along the sweep (lambda_min S and its relaxation).

use super::super::fit;
use super::super::notes::RELAXED;
use super::super::results::CellResult;
use super::cells::cell_mean;

/// (phi, mean lambda_min S) of the cells where a Hessian exists.
pub(super) fn lambda_s_by_phi(cs: &[&CellResult]) -> Vec<(f64, f64)> {
    cs.iter()
        .filter_map(|c| Some((c.phi, cell_mean(c, |r| r.lambda_s)?)))
        .collect()
}

/// The phi at which lambda_min S would reach `RELAXED`, extrapolating the OLS power law of
/// lambda_min S in phi over `(phi, mean lambda_min S)`; None when it is reached already at the
/// smallest phi, or lambda_min S does not grow as phi shrinks.
pub fn relax_phi(ls: &[(f64, f64)]) -> Option<f64> {
    let pos: Vec<&(f64, f64)> = ls.iter().filter(|p| p.1 > 0.0).collect();
    let smallest = pos.iter().min_by(|a, b| a.0.total_cmp(&b.0))?;
    if smallest.1 >= RELAXED {
        return None;
    }
    let x: Vec<f64> = pos.iter().map(|p| p.0.ln()).collect();
    let y: Vec<f64> = pos.iter().map(|p| p.1.ln()).collect();
    let (b, a) = fit::ols(&x, &y)?;
    (b < 0.0).then(|| ((RELAXED.ln() - a) / b).exp())
}
