//! A run as the user states it: T steps at rate q from epochs, batch size and data set size
//! (Opacus' inputs), and runs made of phases with different (q, z, T) composed in one account
//! (dp_accounting's `ComposedDpEvent` of `SelfComposedDpEvent`s).

use super::rdp::{RdpAccountant, RdpEpsilon, rdp_to_epsilon};
use super::validate::{check_delta, check_q, check_steps, check_z};
use crate::error::{Error, Result, fmt_num};

/// Largest number of steps a run given by epochs may have: beyond it T would be a count no run
/// reaches (and f64 no longer holds it exactly).
pub const MAX_STEPS_FROM_EPOCHS: f64 = 1e15;

/// Poisson sampling rate and steps of `epochs` passes over `n` samples at expected batch size
/// `batch_size`: q = B / N and T = ceil(E N / B) (Opacus' `get_noise_multiplier` inputs; a pass
/// is N / B steps in expectation). Names the bad input otherwise.
pub fn steps_from_epochs(epochs: f64, batch_size: usize, n: usize) -> Result<(f64, usize)> {
    if !(epochs.is_finite() && epochs > 0.0) {
        return Err(Error::param(format!(
            "--epochs must be positive and finite, but is {}",
            fmt_num(epochs)
        )));
    }
    if n == 0 {
        return Err(Error::param("--n (the data set size) must be at least 1"));
    }
    if batch_size == 0 || batch_size > n {
        return Err(Error::param(format!(
            "--batch-size must lie in 1..=--n ({n}), but is {batch_size}"
        )));
    }
    let q = batch_size as f64 / n as f64;
    let t = (epochs * n as f64 / batch_size as f64).ceil();
    if t > MAX_STEPS_FROM_EPOCHS {
        return Err(Error::param(format!(
            "--epochs {} --batch-size {batch_size} --n {n} give T = ceil(E N / B) = {} steps, more than {}",
            fmt_num(epochs),
            fmt_num(t),
            fmt_num(MAX_STEPS_FROM_EPOCHS)
        )));
    }
    Ok((q, (t as usize).max(1)))
}

/// One phase of a run: `steps` steps at sampling rate q and noise multiplier z.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phase {
    /// Poisson sampling rate q in (0, 1].
    pub q: f64,
    /// Noise multiplier z > 0.
    pub z: f64,
    /// Steps T >= 1.
    pub steps: usize,
}

impl Phase {
    /// Checks q, z and T.
    pub fn check(&self) -> Result<()> {
        check_q(self.q)?;
        check_z(self.z)?;
        check_steps(self.steps)?;
        Ok(())
    }
}

/// Most distinct (q, z) phases the PLD composes (each distinct phase is its own discretized PLD on
/// the common grid, so the cost grows with their number; 100 distinct phases took 26 s against
/// 0.04 s for one). Identical phases are merged first ([`merge_identical`]); RDP has no limit.
pub const MAX_PLD_PHASES: usize = 32;

/// The phases with identical (q, z) merged into one (their steps added): the same composition,
/// since composition does not depend on the order of the mechanisms, in the order each (q, z)
/// first appears. An error where the steps' sum does not fit a count.
pub fn merge_identical(phases: &[Phase]) -> Result<Vec<Phase>> {
    let mut out: Vec<Phase> = Vec::new();
    for p in phases {
        match out
            .iter_mut()
            .find(|o| o.q.to_bits() == p.q.to_bits() && o.z.to_bits() == p.z.to_bits())
        {
            Some(o) => {
                o.steps = o.steps.checked_add(p.steps).ok_or_else(|| {
                    Error::param("the phases' steps add up to more than a count can hold")
                })?;
            }
            None => out.push(*p),
        }
    }
    Ok(out)
}

impl std::str::FromStr for Phase {
    type Err = Error;

    /// `q=0.01,z=1.0,steps=1000` (keys in any order, each exactly once; `sample-rate` and
    /// `noise-multiplier` are accepted for q and z).
    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: String| {
            Error::param(format!(
                "--phase '{s}': {why} (write q=0.01,z=1.0,steps=1000)"
            ))
        };
        let (mut q, mut z, mut steps) = (None, None, None);
        for part in s.split(',') {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| bad(format!("'{part}' is not key=value")))?;
            let (k, v) = (k.trim(), v.trim());
            let num = || {
                v.parse::<f64>()
                    .map_err(|_| bad(format!("{k} = '{v}' is not a number")))
            };
            let slot = match k {
                "q" | "sample-rate" | "sample_rate" => &mut q,
                "z" | "noise-multiplier" | "noise_multiplier" => &mut z,
                "steps" | "T" => {
                    let t = v
                        .parse::<usize>()
                        .map_err(|_| bad(format!("steps = '{v}' is not a whole number")))?;
                    if steps.replace(t).is_some() {
                        return Err(bad("steps given twice".into()));
                    }
                    continue;
                }
                _ => return Err(bad(format!("unknown key '{k}'"))),
            };
            if slot.replace(num()?).is_some() {
                return Err(bad(format!("{k} given twice")));
            }
        }
        let missing = |name: &str| bad(format!("{name} is missing"));
        let phase = Phase {
            q: q.ok_or_else(|| missing("q"))?,
            z: z.ok_or_else(|| missing("z"))?,
            steps: steps.ok_or_else(|| missing("steps"))?,
        };
        phase.check().map_err(|e| bad(e.to_string()))?;
        Ok(phase)
    }
}

impl RdpAccountant {
    /// The RDP curve of phases run one after the other: RDP composes additively, so at every
    /// order it is the sum of each phase's T_i rdp_1(alpha; q_i, z_i) (Mironov 2017, Prop. 1;
    /// what dp_accounting's RDP accountant does with a `ComposedDpEvent`).
    pub fn rdp_curve_phases(&self, phases: &[Phase]) -> Result<Vec<f64>> {
        let mut sum = vec![0.0; self.orders.len()];
        for p in phases {
            p.check()?;
            for (s, r) in sum.iter_mut().zip(self.rdp_curve(p.q, p.steps, p.z)?) {
                *s += r;
            }
        }
        Ok(sum)
    }

    /// (epsilon, order) of phases run one after the other, at target delta: the composed curve
    /// of [`RdpAccountant::rdp_curve_phases`] converted as in [`RdpAccountant::epsilon`].
    pub fn epsilon_phases(&self, phases: &[Phase], delta: f64) -> Result<RdpEpsilon> {
        check_delta(delta)?;
        if phases.is_empty() {
            return Err(Error::param("give at least one phase"));
        }
        let curve = self.rdp_curve_phases(phases)?;
        let (epsilon, order) = rdp_to_epsilon(&self.orders, &curve, delta, self.conversion);
        Ok(RdpEpsilon { epsilon, order })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Opacus' example: 30 epochs of batch 256 over 60000 samples; 7031.25 rounds up.
    #[test]
    fn epochs_give_q_and_ceil_steps() {
        let (q, t) = steps_from_epochs(30.0, 256, 60_000).unwrap();
        assert_eq!(q, 256.0 / 60_000.0);
        assert_eq!(t, 7032);
        assert_eq!(steps_from_epochs(3.0, 30, 300).unwrap().1, 30);
        assert!(steps_from_epochs(1.0, 0, 10).is_err());
        assert!(steps_from_epochs(1.0, 11, 10).is_err());
        assert!(steps_from_epochs(f64::NAN, 1, 10).is_err());
        assert!(steps_from_epochs(1e300, 1, 10).is_err());
    }

    #[test]
    fn phases_parse_and_name_what_is_wrong() {
        let p: Phase = "q=0.01, z=1.0,steps=1000".parse().unwrap();
        assert_eq!(
            p,
            Phase {
                q: 0.01,
                z: 1.0,
                steps: 1000
            }
        );
        for (bad, needle) in [
            ("q=0.01,z=1", "steps is missing"),
            ("q=0.01,z=1,steps=10,q=0.2", "q given twice"),
            ("q=2,z=1,steps=10", "sampling rate q"),
            ("q=0.1,z=1,steps=1.5", "whole number"),
            ("q=0.1,s=1,steps=1", "unknown key 's'"),
        ] {
            let e = bad.parse::<Phase>().unwrap_err().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    /// Two phases of T/2 steps equal one of T (RDP is linear in T: exact up to rounding), and
    /// two different phases give the hand-summed curve T1 rdp(q1, z1) + T2 rdp(q2, z2) at the
    /// integer order 2, where rdp_1(2) = log(1 + q^2 (e^{1/z^2} - 1)) (MTZ 2019, Sec. 3.3).
    /// 4000 identical phases are one phase of 4000 x T steps (the PLD then composes once);
    /// distinct ones stay apart, in first-seen order.
    #[test]
    fn identical_phases_merge() {
        let a = Phase {
            q: 0.01,
            z: 1.0,
            steps: 10,
        };
        let b = Phase {
            q: 0.02,
            z: 1.0,
            steps: 5,
        };
        let many: Vec<Phase> = (0..4000).map(|i| if i % 2 == 0 { a } else { b }).collect();
        let m = merge_identical(&many).unwrap();
        assert_eq!(
            m,
            vec![Phase { steps: 20_000, ..a }, Phase { steps: 10_000, ..b }]
        );
    }

    #[test]
    fn phases_compose_additively() {
        let acc = RdpAccountant::default();
        let one = acc.epsilon(0.01, 10_000, 1.0, 1e-5).unwrap();
        let half = Phase {
            q: 0.01,
            z: 1.0,
            steps: 5_000,
        };
        let two = acc.epsilon_phases(&[half, half], 1e-5).unwrap();
        assert!(
            (one.epsilon - two.epsilon).abs() <= 1e-12 * one.epsilon,
            "{one:?} vs {two:?}"
        );
        let (a, b) = (
            Phase {
                q: 0.01,
                z: 1.0,
                steps: 1000,
            },
            Phase {
                q: 0.02,
                z: 0.8,
                steps: 500,
            },
        );
        let two_orders = RdpAccountant {
            orders: vec![2.0],
            ..RdpAccountant::default()
        };
        let curve = two_orders.rdp_curve_phases(&[a, b]).unwrap();
        let rdp2 = |p: Phase| (p.q * p.q * ((1.0 / (p.z * p.z)).exp() - 1.0)).ln_1p();
        let hand = 1000.0 * rdp2(a) + 500.0 * rdp2(b);
        assert!(
            (curve[0] - hand).abs() <= 1e-12 * hand,
            "{} vs {hand}",
            curve[0]
        );
    }
}
