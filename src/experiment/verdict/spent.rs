//! The privacy a lower-bound series actually spends. Its runs use Thm 3.4's noise with the spec's
//! nu, which no accountant calibrated: Thm 6.6 (and I.3) assume an (epsilon, delta)-DP algorithm,
//! and that premise holds only where an accountant's epsilon of each cell's (q, T, z, delta) is
//! at most the nominal epsilon the cell was swept at.

use serde::Serialize;

use super::super::results::CellResult;
use crate::dpsgd::theorem_3_4_sigma;
use crate::error::Result;
use crate::privacy::{PldAccountant, RdpAccountant};

/// The epsilon a series' cells spend, against the nominal epsilon of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spent {
    /// Range over the cells of the nominal epsilon (the sweep's; Thm 3.4's input).
    pub nominal: (f64, f64),
    /// Range over the cells of the RDP accountant's epsilon (an upper bound).
    pub rdp: (f64, f64),
    /// Range over the cells of the PLD accountant's epsilon (an upper bound, tighter than the
    /// RDP's), where it met its tail budget in every cell.
    pub pld: Option<(f64, f64)>,
}

impl Spent {
    /// True when some cell spends more than its nominal epsilon (by the tightest accountant
    /// that ran), so that an (epsilon, delta) premise at the nominal epsilon does not hold.
    pub fn exceeds(&self) -> bool {
        let (lo, _) = self.nominal;
        self.pld.unwrap_or(self.rdp).1 > lo * (1.0 + 1e-9)
    }

    /// "epsilon spent 1.35..1.38 by RDP (1.21..1.23 by PLD) at nominal epsilon 1".
    pub fn words(&self) -> String {
        let r = |(a, b): (f64, f64)| {
            if format!("{a:.2}") == format!("{b:.2}") {
                format!("{a:.2}")
            } else {
                format!("{a:.2}..{b:.2}")
            }
        };
        let nominal = if self.nominal.0 == self.nominal.1 {
            crate::error::fmt_num(self.nominal.0)
        } else {
            r(self.nominal)
        };
        let pld = self
            .pld
            .map_or(String::new(), |p| format!(" ({} by PLD)", r(p)));
        format!(
            "epsilon spent {} by RDP{pld} at nominal epsilon {nominal}",
            r(self.rdp)
        )
    }
}

/// One cell's Poisson rate and noise multiplier under Thm 3.4's noise: q = b / n and
/// z = sigma_n b / tau = sqrt(nu T log(1/delta)) b / (n epsilon) (Thm 3.4; the clip norm tau
/// cancels).
pub fn thm34_rate_and_multiplier(
    b: f64,
    nu: f64,
    delta: f64,
    (n, steps, epsilon): (usize, usize, f64),
) -> (f64, f64) {
    let q = b / n as f64;
    (q, theorem_3_4_sigma(nu, steps, delta, 1.0, n, epsilon) * b)
}

/// The epsilon spent by `cells` (each at its own n, T and nominal epsilon) with batch size b and
/// Thm 3.4's noise at nu, by the RDP accountant and, where it meets its tail budget in every
/// cell, the PLD accountant.
pub fn spent(cells: &[&CellResult], b: f64, nu: f64, delta: f64) -> Result<Option<Spent>> {
    if cells.is_empty() {
        return Ok(None);
    }
    let (rdp, pld) = (RdpAccountant::default(), PldAccountant::default());
    let mut nominal = Vec::new();
    let mut by_rdp = Vec::new();
    let mut by_pld = Some(Vec::new());
    for c in cells {
        let steps = c.steps as usize;
        let (q, z) = thm34_rate_and_multiplier(b, nu, delta, (c.n, steps, c.epsilon));
        nominal.push(c.epsilon);
        by_rdp.push(rdp.epsilon(q, steps, z, delta)?.epsilon);
        let p = pld.upper_bound(q, steps, z, delta)?;
        match (&mut by_pld, p.rdp_fallback) {
            (Some(v), false) => v.push(p.epsilon),
            _ => by_pld = None,
        }
    }
    let range = |v: &[f64]| super::cells::range(v.iter().copied());
    Ok(Some(Spent {
        nominal: range(&nominal),
        rdp: range(&by_rdp),
        pld: by_pld.as_deref().map(range),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(n: usize, steps: u64) -> CellResult {
        CellResult {
            cell: 0,
            series: 0,
            k: 1.5,
            phi_index: 0,
            phi: 0.0,
            n,
            epsilon: 1.0,
            steps,
            replicates: Vec::new(),
        }
    }

    /// L.1's quick cells at phi = 0.02 and 0.002 (b = 10, nu = 1, delta = 1e-5, epsilon = 1:
    /// n = 960, T = 2502; n = 9598, T = 250050) against dp_accounting 0.6, computed independently
    /// (z = q sqrt(nu T log(1/delta)) / epsilon in Python; RdpAccountant with its default
    /// orders, PLDAccountant at discretization 1e-4): RDP 1.3652727 and 1.3288815, PLD 1.2455837
    /// and 1.2206990. Tolerances: the RDP here sums the fractional orders' series exactly where
    /// dp_accounting sums |terms|, so it may be lower but never above (1e-9 for rounding); at
    /// these q the two agree to 1e-6 (allowed 1e-5). The PLD is an upper bound on the same grid
    /// h = 1e-4: measured within 1e-6 of dp_accounting's, allowed 1e-4 (a few grid steps).
    #[test]
    fn lower_bound_cells_spend_what_dp_accounting_says() {
        let cells = [cell(960, 2502), cell(9598, 250_050)];
        let refs: Vec<&CellResult> = cells.iter().collect();
        let s = spent(&refs, 10.0, 1.0, 1e-5).unwrap().unwrap();
        assert_eq!(s.nominal, (1.0, 1.0));
        let (rdp_lo, rdp_hi) = (1.328881504852824, 1.3652727081672933);
        for (got, want) in [(s.rdp.0, rdp_lo), (s.rdp.1, rdp_hi)] {
            assert!(
                got <= want + 1e-9 && got > want - 1e-5,
                "RDP {got} vs {want}"
            );
        }
        let pld = s.pld.expect("the PLD meets its tail budget here");
        for (got, want) in [(pld.0, 1.2206989900775793), (pld.1, 1.2455836612450597)] {
            assert!((got - want).abs() < 1e-4, "PLD {got} vs {want}");
        }
        assert!(s.exceeds());
        assert_eq!(
            s.words(),
            "epsilon spent 1.33..1.37 by RDP (1.22..1.25 by PLD) at nominal epsilon 1"
        );
    }

    /// Enough noise spends at most the nominal epsilon: Thm 3.4 at nu = 3 (z sqrt(3) times
    /// nu = 1's, where RDP's epsilon is at most 1.37) holds the premise.
    #[test]
    fn enough_noise_holds_the_premise() {
        let cells = [cell(960, 2502), cell(9598, 250_050)];
        let refs: Vec<&CellResult> = cells.iter().collect();
        let s = spent(&refs, 10.0, 3.0, 1e-5).unwrap().unwrap();
        assert!(s.rdp.1 < 1.0 && !s.exceeds(), "{s:?}");
    }
}
