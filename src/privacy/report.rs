//! The answer of `privacy epsilon` (CLI and Python alike): epsilon by the requested accountant,
//! the accountant that actually produced it (RDP where the PLD fell back), the PLD's certified
//! lower bound, nu_eff of Thm 3.4, and one JSON form of all of it, so that the two front ends
//! cannot drift apart.

use serde_json::{Value, json};

use super::{AccountantKind, Phase, PldAccountant, PldEpsilon, RdpAccountant, nu_eff};
use crate::error::Result;

/// Epsilon of `steps` Poisson-subsampled Gaussian steps, with everything printed beside it.
#[derive(Debug, Clone)]
pub struct EpsilonReport {
    /// The accountant asked for.
    pub requested: AccountantKind,
    /// Upper bound on epsilon at `delta`.
    pub epsilon: f64,
    /// The optimal Renyi order (RDP accountant only).
    pub order: Option<f64>,
    /// The PLD's answer (PLD only), with its certified lower bound (None where no grid fits).
    pub pld: Option<(PldEpsilon, Option<f64>)>,
    /// nu of Thm 3.4 that makes its epsilon equal `epsilon` (None where epsilon is 0 or inf).
    pub nu_eff: Option<f64>,
    /// Sampling rate q (NaN for several phases).
    pub q: f64,
    /// Steps T (in all, for several phases).
    pub steps: usize,
    /// Noise multiplier z (NaN for several phases).
    pub z: f64,
    /// Target delta.
    pub delta: f64,
    /// The phases accounted (one for a plain run).
    pub phases: Vec<Phase>,
}

impl EpsilonReport {
    /// Runs the accountant `kind` (`rdp` with its orders) at (q, T, z, delta).
    pub fn compute(
        kind: AccountantKind,
        rdp: &RdpAccountant,
        q: f64,
        steps: usize,
        z: f64,
        delta: f64,
    ) -> Result<Self> {
        Self::compute_phases(kind, rdp, &[Phase { q, z, steps }], delta)
    }

    /// Runs the accountant `kind` on phases with different (q, z, T) run one after the other
    /// (RDP: the curves added order by order; PLD: the phases' PLDs composed). With more than
    /// one phase, `q` and `z` are NaN, `steps` is the total and there is no nu_eff.
    pub fn compute_phases(
        kind: AccountantKind,
        rdp: &RdpAccountant,
        phases: &[Phase],
        delta: f64,
    ) -> Result<Self> {
        let (epsilon, order, pld) = match kind {
            AccountantKind::Rdp => {
                let r = rdp.epsilon_phases(phases, delta)?;
                (r.epsilon, Some(r.order), None)
            }
            AccountantKind::Pld => {
                let acc = PldAccountant::default();
                let r = acc.epsilon_phases(phases, delta)?;
                // The certified lower bound (optimistic discretization), also where the upper
                // bound fell back to RDP; the inputs were checked by `epsilon`, so an error here
                // means that no grid fits (reported as none).
                let lower = acc.epsilon_lower_phases(phases, delta).ok();
                (r.epsilon, None, Some((r, lower)))
            }
        };
        let steps = phases.iter().map(|p| p.steps).sum();
        let (q, z) = match phases {
            [p] => (p.q, p.z),
            _ => (f64::NAN, f64::NAN),
        };
        let nu_eff = if epsilon.is_finite() && epsilon > 0.0 && z > 0.0 {
            Some(nu_eff(z, q, steps, epsilon, delta)?)
        } else {
            None
        };
        Ok(Self {
            requested: kind,
            epsilon,
            order,
            pld,
            nu_eff,
            q,
            steps,
            z,
            delta,
            phases: phases.to_vec(),
        })
    }

    /// The accountant whose number `epsilon` is: "rdp", "pld" or "rdp (fallback of pld)".
    pub fn accountant(&self) -> &'static str {
        match &self.pld {
            Some((p, _)) if p.rdp_fallback => "rdp (fallback of pld)",
            _ => self.requested.as_str(),
        }
    }

    /// The `--json` object (and Python's `details=True` dict): +-infinity as the strings
    /// "inf" / "-inf" (JSON has none), a value not computed as null.
    pub fn to_json(&self) -> Value {
        let mut o = json!({
            "accountant": self.accountant(),
            "epsilon": json_num(self.epsilon),
            "delta": self.delta,
            "noise_multiplier": self.z,
            "sample_rate": self.q,
            "steps": self.steps,
            "nu_eff": self.nu_eff,
        });
        if self.phases.len() > 1 {
            let ph: Vec<Value> = self
                .phases
                .iter()
                .map(|p| json!({"sample_rate": p.q, "noise_multiplier": p.z, "steps": p.steps}))
                .collect();
            o["phases"] = json!(ph);
            o["sample_rate"] = Value::Null;
            o["noise_multiplier"] = Value::Null;
        }
        if let Some(ord) = self.order {
            o["order"] = json!(ord);
        }
        if let Some((p, lower)) = &self.pld {
            // error is null where the RDP fallback was used, epsilon_lower where no grid fits.
            o["error"] = json_num(p.error);
            o["tail_error"] = json_num(p.tail_error);
            o["epsilon_upper"] = json_num(self.epsilon);
            o["epsilon_lower"] = lower.map_or(Value::Null, json_num);
            o["discretization"] = json!(p.grid.map(|g| g.discretization));
            o["rdp_fallback"] = json!(p.rdp_fallback);
            o["note"] = json!(p.note);
        }
        o
    }
}

/// A number as JSON: finite values as numbers, +-infinity as the strings "inf" / "-inf" (JSON
/// has no infinity; serde_json would write null), NaN ("not computed") as null.
pub fn json_num(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else if x.is_nan() {
        Value::Null
    } else if x > 0.0 {
        json!("inf")
    } else {
        json!("-inf")
    }
}
