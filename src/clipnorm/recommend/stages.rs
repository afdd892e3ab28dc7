//! Stages 2-5 of `clipnorm recommend` (module doc of [`super`]): each private stage records its
//! spend in the ledger before its mechanism runs, then releases its output.

use super::budget::Stage;
pub use super::budget::ledger_command;
use super::plan::{AdvicePlan, Preprocessed, Preprocessing};
use super::{NormsSource, RangeCheck, range_check};
use crate::data::Dataset;
use crate::data::preprocess::Preprocess;
use crate::error::{Error, Result, fmt_num};
use crate::loss::{LossSpec, lipschitz_constants};
use crate::privacy::ledger::Ledger;
use crate::privacy::standardize::{PrivateStandardization, StdSource, private_standardize};
use crate::privacy::{RnmmConfig, RnmmOutput, private_min_lipschitz};
use crate::rng::{Purpose, ReleaseRng};

/// The randomness of mechanism `k` (0 RNMM, 1 standardization, 2 range check): the OS-keyed
/// CSPRNG, or with `--reproducible` the seeded stream (seed, k, mechanism) of the research mode.
fn mechanism_rng(plan: &AdvicePlan, k: u64) -> Result<ReleaseRng> {
    ReleaseRng::for_release(plan.req.reproducible, plan.req.seed, k, Purpose::Mechanism)
}

/// Runs a stage's mechanism through the ledger's odometer, if there is one: its planned spend
/// (with its curve) is checked and recorded under the lock before `run` runs.
fn invoke<T>(
    ledger: Option<&mut Ledger>,
    plan: &AdvicePlan,
    stage: Stage,
    run: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let Some(l) = ledger else {
        return run();
    };
    let spend = plan
        .stage_spends
        .iter()
        .find(|(s, _)| *s == stage)
        .map(|(_, s)| s.clone())
        .ok_or_else(|| Error::param(format!("the plan has no spend for {stage:?}")))?;
    l.invoke(&plan.data_id, spend, run)
}

/// Stage 2: the transform of the features, applied to `data` in place.
pub fn preprocess(
    plan: &AdvicePlan,
    data: &mut Dataset,
    ledger: Option<&mut Ledger>,
) -> Result<Preprocessed> {
    let out = match &plan.preprocessing {
        Preprocessing::None => Preprocessed::default(),
        Preprocessing::Ranges(p) => Preprocessed {
            preprocess: Some(p.clone()),
            ..Default::default()
        },
        Preprocessing::PublicScales(st) => {
            let ps = private_standardize(
                data,
                &StdSource::Public(st.clone()),
                &mut mechanism_rng(plan, 1)?,
            )?;
            Preprocessed {
                preprocess: Some(Preprocess {
                    source: "public means and scales".into(),
                    center: ps.mean.clone(),
                    scale: ps.scale.clone(),
                    clamp_min: None,
                    clamp_max: None,
                }),
                standardization: Some(ps),
                noisy_features: Vec::new(),
            }
        }
        Preprocessing::Private {
            epsilon,
            delta,
            bounds,
        } => {
            let ps = invoke(ledger, plan, Stage::Standardization, || {
                private_standardize(
                    data,
                    &StdSource::Private {
                        epsilon: *epsilon,
                        delta: *delta,
                        bounds: bounds.clone(),
                    },
                    &mut mechanism_rng(plan, 1)?,
                )
            })?;
            let (preprocess, noisy) = ps.preprocess();
            Preprocessed {
                preprocess: Some(preprocess),
                standardization: Some(ps),
                noisy_features: noisy,
            }
        }
    };
    if let Some(p) = &out.preprocess {
        p.apply(data)?;
    }
    Ok(out)
}

/// G_i = G(x_i, y_i) of the multinomial logistic loss (Appendix D) on `data` as given (already
/// transformed by the preprocessing stage).
pub fn logistic_lipschitz(data: &Dataset) -> Result<Vec<f64>> {
    let loss = LossSpec::Logistic { classes: None }.build(data)?;
    loss.check_data(data)?;
    lipschitz_constants(loss.as_ref(), data)
}

/// The per-sample values whose private minimum is selected, one per training row: the user's
/// norms as the plan read them, or the loss's G_i on `data` (no mechanism).
pub fn per_sample_values(plan: &AdvicePlan, data: &Dataset) -> Result<Vec<f64>> {
    match &plan.user_norms {
        Some(g) => Ok(g.clone()),
        None => super::plan::check_values(logistic_lipschitz(data)?),
    }
}

/// Stage 3: the range check (when planned). A range that misses the data stops the command
/// here, before RNMM's selection is released; the advice names only options the user has not
/// already given.
pub fn range_check_stage(
    plan: &AdvicePlan,
    g: &[f64],
    pre: &Preprocessed,
    mut ledger: Option<&mut Ledger>,
) -> Result<Option<RangeCheck>> {
    if plan.check_epsilon == 0.0 {
        return Ok(None);
    }
    let rc = invoke(ledger.as_deref_mut(), plan, Stage::RangeCheck, || {
        range_check(
            g,
            plan.lo,
            plan.hi,
            plan.check_epsilon,
            &mut mechanism_rng(plan, 2)?,
        )
    })?;
    if !rc.misses() {
        return Ok(Some(rc));
    }
    let req = &plan.req;
    let fix = match (&req.norms, &plan.preprocessing) {
        (NormsSource::Lipschitz, Preprocessing::None) => {
            "scale the features (drop --no-standardize; --feature-ranges if public ranges are \
             known), or give --lo and --hi that cover the G_i"
                .to_string()
        }
        (NormsSource::Lipschitz, Preprocessing::Private { bounds, .. }) => {
            let noise = pre
                .standardization
                .as_ref()
                .map_or(0.0, PrivateStandardization::relative_noise);
            let bounds_hint = if bounds.is_some() {
                "raise --std-share or --epsilon"
            } else {
                "give --feature-bounds, or raise --std-share or --epsilon"
            };
            format!(
                "the private standardization is noisy at this budget (noise sd / noisy count = \
                 {noise:.2}): give public ranges with --feature-ranges (no cost), or {bounds_hint}"
            )
        }
        _ => "give --lo and --hi that cover the per-sample values".to_string(),
    };
    Err(Error::param(format!(
        "the candidate range [{:.4}, {:.4}] misses the data: a private count (eps = {}) puts \
         about {:.0} of the {} values outside it, so RNMM would select noise; {fix} (this run \
         spent epsilon {} on it{})",
        plan.lo,
        plan.hi,
        fmt_num(plan.check_epsilon),
        rc.noisy_outside.clamp(0.0, rc.n as f64),
        rc.n,
        fmt_num(plan.check_epsilon + pre.standardization.as_ref().map_or(0.0, |s| s.epsilon)),
        ledger.map_or(String::new(), |l| format!(
            "; its ledger {} has epsilon {} left, so a retry on these rows needs --epsilon <= that",
            l.path().display(),
            fmt_num(l.remaining().0)
        ))
    )))
}

/// Stage 4: RNMM's private minimum of the G_i on the public candidates.
pub fn select(plan: &AdvicePlan, g: &[f64], ledger: Option<&mut Ledger>) -> Result<RnmmOutput> {
    let rc = RnmmConfig {
        epsilon: plan.rnmm_epsilon,
        lo: plan.lo,
        hi: plan.hi,
        grid_size: plan.req.grid_size,
        target_count: 1,
    };
    invoke(ledger, plan, Stage::Rnmm, || {
        private_min_lipschitz(g, &rc, &mut mechanism_rng(plan, 0)?)
    })
}

/// Stage 5: DP-SGD's step size from public quantities and the released tau (no cost):
/// eta = D / (G_eff sqrt(T)), the constant step that minimizes the convex SGD bound
/// D^2 / (2 eta T) + eta G_eff^2 / 2 (Nemirovski, Juditsky, Lan & Shapiro 2009, Sec. 2.2; the
/// paper's eta = C / (T tau) psi^(-1/2) before Eq. 42 has the same form at its own T). Here
/// G_eff^2 = tau^2 (1 + p z^2 / B^2) bounds the second moment of Algorithm 1's step direction
/// (the clipped mean, norm <= tau, plus N(0, (z tau / B)^2 I_p) noise), and D = sqrt(p), a
/// public guess of ||w*|| for weights of order 1 per parameter on features scaled to [-1, 1].
pub fn step_size(params: usize, tau: f64, z: f64, batch: f64, steps: usize) -> f64 {
    let p = params as f64;
    let g_eff = tau * (1.0 + p * z * z / (batch * batch)).sqrt();
    p.sqrt() / (g_eff * (steps as f64).sqrt())
}
