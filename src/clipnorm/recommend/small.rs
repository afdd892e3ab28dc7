//! The plan's size check: a data set too small for the requested privacy is refused before any
//! mechanism runs, with what would be needed (a larger epsilon, or more rows).
//!
//! The rule, from the plan's own quantities (n rows, p = m (d + 1) parameters, expected batch B,
//! steps T, and the noise multiplier z calibrated for DP-SGD's share of the budget):
//!
//! r = z sqrt(p / T) / B >= 1 refuses.
//!
//! Why: each of Algorithm 1's T steps adds the clipped mean gradient (norm <= tau) and Gaussian
//! noise N(0, (z tau / B)^2 I_p) (norm about z tau sqrt(p) / B). Over the run the clipped parts
//! add up to at most T tau, the noise parts to a Gaussian of norm about sqrt(T p) z tau / B: r is
//! their ratio, whatever tau is. At r >= 1 the noise DP-SGD adds is at least as large as the
//! furthest the gradients could move the model, so the run is noise, and a recommendation would
//! only spend the budget on it. The same r is the noise term of the convex bound behind the step
//! size (stage 5): D G_eff / sqrt(T) with G_eff^2 = tau^2 (1 + p z^2 / B^2) has noise part
//! D tau r. Under Poisson subsampling z is about c q sqrt(T) / epsilon with q = B / n, so
//! r ~ c sqrt(p) / (n epsilon), private ERM's sqrt(p) / (n epsilon): the check is about n and
//! epsilon, not about the choice of B or T.
//!
//! A second rule covers the range check (stage 3), when it is planned: its Laplace count
//! c + Lap(1 / eps_check) refuses when it exceeds n / 2, so a range that holds every value is
//! refused (and one that holds none accepted) with probability exp(-eps_check n / 2) / 2. Above
//! 5% the check cannot judge n rows, and its refusal would blame the candidate range for what is
//! the data set's size: eps_check n < 2 ln 10 refuses, here, with the same words.
//!
//! Two more rules refuse a stage whose share of the budget is so small that its output is noise
//! (e.g. `--share 1e-300`), before any of them runs. Both ask the same question: can the stage's
//! release tell any two data sets of n rows apart at all? When the total variation between the
//! release's distributions on any two of them is below 5% ([`NOISE_TV`]), no test on it beats
//! a coin by more than 5%: it is noise, whatever the data, and the stage is refused.
//! - RNMM (stage 4), the exponential mechanism P(j) ∝ exp(eps u_j / 2): u_j = -|N_j - k| moves
//!   by at most n between any two data sets of n rows, so every P(j) moves by a factor of at
//!   most e^(eps n) (numerator and normaliser e^(eps n / 2) each), and the total variation is at
//!   most tanh(eps n / 2): eps_RNMM n < 2 atanh(0.05) = 0.1001 refuses.
//! - the private standardization (stage 2), rho-zCDP in all (bounds and sums): any two data
//!   sets of n rows are 2n add/remove steps apart, so their releases are (2n)^2 rho-zCDP close
//!   (group privacy, Bun & Steinke 2016, Prop. 1.9), within KL divergence 4 n^2 rho, hence
//!   within total variation n sqrt(2 rho) (Pinsker): n sqrt(2 rho) < 0.05 refuses.
//!
//! These are floors, not advice: a stage above them may still be mostly noise (the
//! standardization then falls back feature by feature to its private bound's scale).
//!
//! Privacy: r and the hints are functions of n, d, m and the request's public parameters only
//! (docs/recommend.md, "What is public": n, d and the number of classes are treated as public,
//! as q = B / n and T already are); no private statistic of the rows is used, so the refusal
//! reveals nothing that the plan's printed q, T and z do not.

use crate::error::{Error, Result, fmt_num};
use crate::privacy::AccountantKind;
use crate::privacy::calibrate::MIN_NOISE_MULTIPLIER;

/// The largest number of rows the "more rows" hint searches.
const MAX_ROWS: usize = 1_000_000_000_000;

/// r = z sqrt(p / T) / B: the noise DP-SGD adds over T steps against the largest distance its
/// clipped gradients can cover (module doc). The plan refuses at r >= 1.
pub fn noise_ratio(z: f64, params: usize, steps: usize, batch: f64) -> f64 {
    z * (params as f64 / steps as f64).sqrt() / batch
}

/// The largest z with r < 1 at (p, T, B): z* = B sqrt(T / p) (r = 1 there).
fn z_limit(params: usize, steps: usize, batch: f64) -> f64 {
    batch * (steps as f64 / params as f64).sqrt()
}

/// How the total epsilon is split, as the plan splits it: DP-SGD gets
/// epsilon (1 - std_frac - share_frac) - check - rnmm_fixed.
#[derive(Debug, Clone, Copy)]
pub struct BudgetSplit {
    /// Fraction of epsilon the private standardization takes (0 without it).
    pub std_frac: f64,
    /// Fraction of epsilon RNMM takes (a given --share; 0 with the default fixed eps_RNMM).
    pub share_frac: f64,
    /// epsilon of the range check (fixed).
    pub check: f64,
    /// The default fixed eps_RNMM (0 with a given --share).
    pub rnmm_fixed: f64,
}

impl BudgetSplit {
    /// The stages' epsilons at a total `epsilon`: (standardization, RNMM).
    pub fn at(&self, epsilon: f64) -> (f64, f64) {
        (
            self.std_frac * epsilon,
            self.share_frac * epsilon + self.rnmm_fixed,
        )
    }
}

/// The range check's chance of a wrong verdict that the second rule accepts (module doc).
pub const RANGE_CHECK_ERROR: f64 = 0.05;

/// Refuses when the range check (epsilon `check_epsilon`, 0: not planned) would err with
/// probability above [`RANGE_CHECK_ERROR`] on `n` rows: exp(-eps n / 2) / 2 > 0.05, i.e.
/// eps n < 2 ln 10 (module doc).
pub fn check_range_check_size(n: usize, check_epsilon: f64, epsilon: f64) -> Result<()> {
    let need = 2.0 * (0.5 / RANGE_CHECK_ERROR).ln();
    if check_epsilon == 0.0 || check_epsilon * n as f64 >= need {
        return Ok(());
    }
    let p_wrong = 0.5 * (-check_epsilon * n as f64 / 2.0).exp();
    Err(Error::param(format!(
        "the data set is too small for the requested privacy: with n = {n} training rows, the \
         range check's private count (eps = {}, noise scale {} rows) misjudges the candidate \
         range with probability {p_wrong:.2} (more than {RANGE_CHECK_ERROR}); it needs \
         --check-epsilon >= {} (spent from --epsilon {}), public --feature-ranges (no check), \
         or n >= {} rows",
        fmt_num(check_epsilon),
        fmt_num(1.0 / check_epsilon),
        fmt_num(ceil_sig(need / n as f64, 3)),
        fmt_num(epsilon),
        (need / check_epsilon).floor() as usize + 1
    )))
}

/// Refuses RNMM at an epsilon whose release tells no two data sets of n rows apart (module
/// doc): tanh(eps_RNMM n / 2) < [`NOISE_TV`], with the share that would do (`epsilon` the total).
pub fn check_rnmm_size(n: usize, rnmm_epsilon: f64, epsilon: f64) -> Result<()> {
    let tv = (rnmm_epsilon * n as f64 / 2.0).tanh();
    if tv >= NOISE_TV {
        return Ok(());
    }
    let need = 2.0 * NOISE_TV.atanh() / n as f64;
    Err(Error::param(format!(
        "RNMM's epsilon {} is too small for n = {n} training rows: any two data sets of n rows \
         give selections within total variation tanh(eps n / 2) = {} < {NOISE_TV}, so its pick \
         would be noise; it needs eps_RNMM >= {} (--share >= {} of --epsilon {})",
        fmt_num(rnmm_epsilon),
        fmt_num(tv),
        fmt_num(ceil_sig(need, 3)),
        fmt_num(ceil_sig(need / epsilon, 3)),
        fmt_num(epsilon)
    )))
}

/// The total variation between any two data sets' releases below which a stage's output is
/// called noise (module doc).
pub const NOISE_TV: f64 = 0.05;

/// Refuses the private standardization at (eps_std, delta_std) on `n` rows when its release
/// tells no two data sets of n rows apart (module doc): n sqrt(2 rho) < [`NOISE_TV`], rho =
/// rho_for(eps_std, delta_std). `epsilon` is the total, for the hint: the share s at which
/// rho_for(s epsilon, s delta) reaches the limit (delta_std = s delta moves with it).
pub fn check_standardization_size(
    n: usize,
    (std_epsilon, std_delta): (f64, f64),
    epsilon: f64,
) -> Result<()> {
    use crate::privacy::standardize::rho_for;
    let tv = |rho: f64| n as f64 * (2.0 * rho).sqrt();
    let rho = rho_for(std_epsilon, std_delta);
    if tv(rho) >= NOISE_TV {
        return Ok(());
    }
    let share = std_epsilon / epsilon;
    let delta = std_delta / share;
    let enough = |s: f64| tv(rho_for(s * epsilon, s * delta)) >= NOISE_TV;
    let hint = if enough(1.0 - 1e-9) {
        // Bisection on log s: rho_for grows with s (in epsilon and in delta).
        let (mut lo, mut hi) = (share.max(f64::MIN_POSITIVE).ln(), 0.0f64);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if enough(mid.exp()) {
                hi = mid
            } else {
                lo = mid
            }
        }
        format!("--std-share >= {}", fmt_num(ceil_sig(hi.exp(), 3)))
    } else {
        format!("more than --epsilon {}", fmt_num(epsilon))
    };
    Err(Error::param(format!(
        "the private standardization's epsilon {} is too small for n = {n} training rows: any \
         two data sets of n rows give releases within total variation n sqrt(2 rho) = {} < \
         {NOISE_TV} (rho = {}), so its means and scales would be noise; it needs {hint}, or \
         public --feature-ranges or --public-scales (no cost)",
        fmt_num(std_epsilon),
        fmt_num(tv(rho)),
        fmt_num(rho)
    )))
}

/// What the check needs from the plan.
#[derive(Clone)]
pub struct SizeInputs<'a> {
    /// The requested total epsilon.
    pub epsilon: f64,
    /// (B, T) for n training rows, as the plan derives them from the request (given values,
    /// or the defaults that follow n).
    pub batch_and_steps: &'a dyn Fn(usize) -> Result<(f64, usize)>,
    /// Training rows.
    pub n: usize,
    /// Model parameters p = m (d + 1).
    pub params: usize,
    /// Planned steps T.
    pub steps: usize,
    /// Planned expected batch B.
    pub batch: f64,
    /// The calibrated noise multiplier.
    pub z: f64,
    /// DP-SGD's epsilon and delta.
    pub dpsgd_epsilon: f64,
    /// DP-SGD's delta.
    pub dpsgd_delta: f64,
    /// The accountant that calibrated z.
    pub kind: AccountantKind,
    /// The budget split, to turn DP-SGD's needed epsilon into a total.
    pub split: BudgetSplit,
    /// Whether DP-SGD at (q, z, T) fits a total epsilon beside the stages the plan would run at
    /// that total ([`super::budget::fits`]: the plan's own rule, RDP composition or basic split).
    pub fits: &'a dyn Fn(f64, f64, f64, usize) -> Result<bool>,
}

/// Refuses when r >= 1 (module doc), in one line: n, the epsilon, r, and what would do.
pub fn check_size(s: &SizeInputs) -> Result<()> {
    let r = noise_ratio(s.z, s.params, s.steps, s.batch);
    if r < 1.0 {
        return Ok(());
    }
    let eps_hint = match needed_total(s)? {
        Some(e) => format!(
            "--epsilon >= {} with these {} rows",
            fmt_num(ceil_sig(e, 3)),
            s.n
        ),
        None => format!("no --epsilon reaches it with {} rows", s.n),
    };
    let n_hint = match needed_rows(s)? {
        Some(n) => format!("n >= {n} rows at --epsilon {}", fmt_num(s.epsilon)),
        None => format!("more than {MAX_ROWS} rows"),
    };
    Err(Error::param(format!(
        "the data set is too small for the requested privacy: with n = {} training rows, \
         --epsilon {} leaves DP-SGD epsilon {}, whose noise outweighs the clipped gradients \
         (r = z sqrt(p / T) / B = {:.3} >= 1 at z = {:.4}, p = {}, T = {}, B = {}); it needs {} \
         or {}",
        s.n,
        fmt_num(s.epsilon),
        fmt_num(s.dpsgd_epsilon),
        r,
        s.z,
        s.params,
        s.steps,
        fmt_num(s.batch),
        eps_hint,
        n_hint
    )))
}

/// Whether DP-SGD at z* (r = 1) fits the total `epsilon` with `n` rows, the batch and steps
/// following n as the request's; None when z* is below what any budget calibrates to.
fn fits_at(s: &SizeInputs, epsilon: f64, n: usize) -> Result<Option<bool>> {
    let (batch, steps) = (s.batch_and_steps)(n)?;
    let z_star = z_limit(s.params, steps, batch);
    if z_star < MIN_NOISE_MULTIPLIER {
        return Ok(None);
    }
    Ok(Some((s.fits)(epsilon, batch / n as f64, z_star, steps)?))
}

/// The smallest total epsilon at which the plan's calibrated z reaches z* with these rows (a
/// larger one gives r < 1), by doubling then bisection to relative 1e-6; None when no epsilon
/// up to 1e6 does.
fn needed_total(s: &SizeInputs) -> Result<Option<f64>> {
    let (mut lo, mut hi) = (0.0, s.epsilon.max(1e-3));
    loop {
        match fits_at(s, hi, s.n)? {
            None => return Ok(None),
            Some(true) => break,
            Some(false) if hi > 1e6 => return Ok(None),
            Some(false) => (lo, hi) = (hi, 2.0 * hi),
        }
    }
    while hi - lo > 1e-6 * hi {
        let mid = 0.5 * (lo + hi);
        if fits_at(s, mid, s.n)? == Some(true) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(Some(hi))
}

/// The smallest n' > n at which DP-SGD's epsilon meets r < 1 (the batch and steps follow n' as
/// the request's defaults or given values do), by doubling then bisection; r falls as n grows
/// (q = B / n falls at fixed B and T, and the default B = n / 10 grows z* with n).
fn needed_rows(s: &SizeInputs) -> Result<Option<usize>> {
    let ok = |n: usize| -> bool { matches!(fits_at(s, s.epsilon, n), Ok(Some(true))) };
    let (mut lo, mut hi) = (s.n, s.n.max(1) * 2);
    while !ok(hi) {
        if hi >= MAX_ROWS {
            return Ok(None);
        }
        lo = hi;
        hi = (hi * 2).min(MAX_ROWS);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) { hi = mid } else { lo = mid }
    }
    Ok(Some(hi))
}

/// x rounded up to `digits` significant digits (a printed bound that still holds).
fn ceil_sig(x: f64, digits: i32) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return x;
    }
    let scale = 10f64.powi(digits - 1 - x.log10().floor() as i32);
    (x * scale).ceil() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_is_one_at_the_limit() {
        let z = z_limit(42, 300, 17.0);
        assert!((noise_ratio(z, 42, 300, 17.0) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn range_check_rule_has_its_boundary_at_2_ln_10() {
        // 2 ln 10 / 0.05 = 92.1: 92 rows are refused, 93 are not.
        assert!(check_range_check_size(92, 0.05, 2.0).is_err());
        assert!(check_range_check_size(93, 0.05, 2.0).is_ok());
        assert!(check_range_check_size(5, 0.0, 2.0).is_ok());
        let msg = check_range_check_size(29, 0.05, 2.0)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("--check-epsilon >= 0.159") && msg.contains("n >= 93 rows"),
            "{msg}"
        );
    }

    #[test]
    fn rnmm_rule_has_its_boundary_at_2_atanh_005_over_n() {
        // 2 atanh(0.05) = 0.100083: on 569 rows eps_RNMM 1.7589e-4 is the boundary.
        assert!(check_rnmm_size(569, 1.758e-4, 2.0).is_err());
        assert!(check_rnmm_size(569, 1.759e-4, 2.0).is_ok());
        // The study's 0.3 on the 29 rows of recommend_small's tiny set is far above it.
        assert!(check_rnmm_size(29, 0.3, 2.0).is_ok());
        let msg = check_rnmm_size(569, 2e-300, 2.0).unwrap_err().to_string();
        assert!(
            msg.contains("eps_RNMM >= 0.000176") && msg.contains("--share >= 8.800000e-5"),
            "{msg}"
        );
    }

    #[test]
    fn standardization_rule_refuses_below_its_total_variation_and_its_hint_suffices() {
        use crate::privacy::standardize::rho_for;
        let (n, eps, delta) = (178, 2.0, 1e-5);
        // The boundary n sqrt(2 rho) = 0.05 itself, through rho_for at the share s.
        let tv = |s: f64| n as f64 * (2.0 * rho_for(s * eps, s * delta)).sqrt();
        let msg = check_standardization_size(n, (1e-300 * eps, 1e-300 * delta), eps)
            .unwrap_err()
            .to_string();
        let hint: f64 = msg
            .split("--std-share >= ")
            .nth(1)
            .and_then(|t| t.split(',').next())
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("{msg}"));
        assert!(tv(hint) >= NOISE_TV && tv(0.99 * hint) < NOISE_TV, "{hint}");
        assert!(check_standardization_size(n, (hint * eps, hint * delta), eps).is_ok());
        let s = 0.99 * hint;
        assert!(check_standardization_size(n, (s * eps, s * delta), eps).is_err());
        // The default share (0.1) on 178 rows is far above it.
        assert!(check_standardization_size(n, (0.2, 1e-6), eps).is_ok());
    }

    #[test]
    fn ceil_keeps_three_digits_and_rounds_up() {
        assert_eq!(ceil_sig(3.2101, 3), 3.22);
        assert_eq!(ceil_sig(0.0123401, 3), 0.0124);
        assert_eq!(ceil_sig(2.0, 3), 2.0);
    }
}
