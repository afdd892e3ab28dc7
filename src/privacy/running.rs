//! The epsilon a run has spent so far, for `train`'s progress bar: by the accountant that reports
//! the run's epsilon, at the end of each epoch (n / b steps), equal at the last step to what
//! [`AccountantKind::accounted`] reports for the whole run.

use super::pld::PldAccountant;
use super::rdp::{RdpAccountant, RdpRunning};
use crate::dpsgd::AccountantKind;
use crate::error::Result;

/// The most PLD compositions a run's progress display makes (each costs about as much as the
/// final accounting, so they are spread over the epochs; RDP updates every epoch).
pub const MAX_PLD_UPDATES: usize = 16;

/// The epsilon after t of a run's steps at rate q, noise multiplier z and target delta.
#[derive(Debug, Clone)]
pub struct RunningEpsilon {
    kind: AccountantKind,
    q: f64,
    z: f64,
    delta: f64,
    /// The RDP accountant's one-step curve (RDP composes additively, so the epsilon after t
    /// steps costs one pass over the orders, not a recomputation of the curve).
    rdp: RdpRunning,
}

impl RunningEpsilon {
    /// The running epsilon of the Poisson-subsampled Gaussian at (q, z), reported at `delta` by
    /// `kind`.
    pub fn new(kind: AccountantKind, q: f64, z: f64, delta: f64) -> Result<Self> {
        Ok(Self {
            kind,
            q,
            z,
            delta,
            rdp: RdpAccountant::default().running(q, z)?,
        })
    }

    /// Epsilon after `steps` steps: RDP from the one-step curve; PLD by its upper bound of that
    /// many compositions (the RDP epsilon where the PLD cannot meet its tail budget, as
    /// [`AccountantKind::accounted`] reports it).
    pub fn at(&self, steps: usize) -> Result<f64> {
        match self.kind {
            AccountantKind::Rdp => self.rdp.epsilon(steps, self.delta),
            AccountantKind::Pld => Ok(PldAccountant::default()
                .upper_bound(self.q, steps, self.z, self.delta)?
                .epsilon),
        }
    }

    /// The steps after which a progress display shows the epsilon: the end of every epoch of
    /// `per_epoch` steps (for PLD, at most [`MAX_PLD_UPDATES`] of them, evenly spread) and the
    /// last step.
    pub fn checkpoints(&self, steps: usize, per_epoch: usize) -> Vec<usize> {
        let per_epoch = per_epoch.max(1);
        let epochs = steps / per_epoch;
        let every = match self.kind {
            AccountantKind::Rdp => 1,
            AccountantKind::Pld => epochs.div_ceil(MAX_PLD_UPDATES).max(1),
        };
        let mut v: Vec<usize> = (1..=epochs)
            .filter(|e| e % every == 0)
            .map(|e| e * per_epoch)
            .collect();
        if v.last() != Some(&steps) {
            v.push(steps);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The running epsilon at the last step is the whole run's epsilon, bit for bit for RDP (the
    /// same one-step values times T) and for PLD (the same composition), and it grows with t.
    #[test]
    fn the_last_value_is_the_runs_epsilon() {
        let (q, z, steps, delta) = (45.0 / 455.0, 4.4711, 300, 1e-5);
        for kind in [AccountantKind::Rdp, AccountantKind::Pld] {
            let r = RunningEpsilon::new(kind, q, z, delta).unwrap();
            let whole = kind.accounted(q, steps, z, delta).unwrap().epsilon;
            assert_eq!(r.at(steps).unwrap(), whole, "{kind}");
            let marks = r.checkpoints(steps, 10);
            assert_eq!(marks.last(), Some(&steps));
            let eps: Vec<f64> = marks.iter().map(|&t| r.at(t).unwrap()).collect();
            assert!(eps.windows(2).all(|w| w[0] <= w[1]), "{kind}: {eps:?}");
        }
    }

    /// RDP updates at every epoch end; PLD at no more than MAX_PLD_UPDATES (plus the last step).
    #[test]
    fn checkpoints_are_epoch_ends() {
        let rdp = RunningEpsilon::new(AccountantKind::Rdp, 0.1, 1.0, 1e-5).unwrap();
        assert_eq!(rdp.checkpoints(25, 10), vec![10, 20, 25]);
        assert_eq!(rdp.checkpoints(30, 10), vec![10, 20, 30]);
        let pld = RunningEpsilon {
            kind: AccountantKind::Pld,
            ..rdp
        };
        let marks = pld.checkpoints(1000 * 10, 10);
        assert!(marks.len() <= MAX_PLD_UPDATES + 1, "{}", marks.len());
        assert_eq!(marks.last(), Some(&10_000));
        assert!(marks.iter().all(|t| t % 10 == 0));
    }
}
