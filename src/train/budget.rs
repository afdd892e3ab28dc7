//! A train run's spend in the `[privacy]` ledger: the rows the ledger guards, the command line
//! it records, and DP-SGD's release checked and recorded through the odometer.

use super::{BudgetReport, PrivacyReport};
use crate::config::{DataSpec, TrainConfig};
use crate::error::{Error, Result};
use crate::rng::{Purpose, stream};

/// The ledger's command line for a `train` run: with the reproducible mode, its seed and that
/// it is not a private release.
pub(super) fn ledger_command(secure: bool, seed: u64) -> String {
    if secure {
        "train".to_string()
    } else {
        format!(
            "train --seed {seed} --reproducible ({})",
            crate::rng::NOT_PRIVATE
        )
    }
}

/// The budget check against the `[privacy]` ledger, through its odometer: DP-SGD's release,
/// (q, z, T) with the accountant's (epsilon, delta) for it alone, composed with what the ledger
/// records (RDP composition, or basic where smaller; [`crate::privacy::ledger`]) must fit the
/// budget; the spend is then recorded before any training, so a rerun counts again.
pub(super) fn check_budget(
    mut ledger: crate::privacy::ledger::Ledger,
    data: &crate::privacy::ledger::DataId,
    report: Option<&PrivacyReport>,
    (q, z, steps): (f64, f64, usize),
    command: &str,
) -> Result<BudgetReport> {
    let (eps, delta) = match report {
        Some(p) => (p.epsilon_spent, p.delta),
        None => {
            return Err(Error::param(
                "[privacy] names a ledger but [dpsgd] adds no noise (an infinite epsilon); give \
                 [dpsgd] noise = { kind = \"target\", ... }",
            ));
        }
    };
    let (total_eps, total_delta) = ledger.budget();
    let (before_eps, before_delta) = ledger.spent();
    let spend = crate::privacy::ledger::Spend::with_curve(
        command,
        "DP-SGD (Poisson-subsampled Gaussian)",
        (eps, delta),
        crate::privacy::ledger::Guarantee::SubsampledGaussian { q, z, steps },
    );
    ledger.invoke(data, spend, || Ok(()))?;
    let (after_eps, after_delta) = ledger.spent();
    Ok(BudgetReport {
        epsilon: total_eps,
        delta: total_delta,
        spent_before_epsilon: before_eps,
        spent_before_delta: before_delta,
        dpsgd_epsilon: eps,
        dpsgd_delta: delta,
        total_epsilon: after_eps,
        total_delta: after_delta,
        notes: ledger.notes().to_vec(),
    })
}

/// The rows a `[privacy]` ledger guards for a config: every row of its CSV as read (before the
/// split and any transform), or the data set built.
pub fn ledger_rows(cfg: &TrainConfig) -> Result<crate::privacy::ledger::DataId> {
    use crate::privacy::ledger::DataId;
    Ok(match &cfg.data {
        DataSpec::Csv(c) => DataId::of(&c.path, &c.read()?),
        other => DataId::of(
            "generated data",
            &other.build(&mut stream(cfg.seed, cfg.replicate, Purpose::Data))?,
        ),
    })
}
