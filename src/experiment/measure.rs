//! What one replicate measures on its runs: the risk at K pre-drawn stratified iterates, the
//! clipped fraction and mass, the time-averaged risk where a probability statement reads it,
//! and the risk split (each run again without noise and without clipping, on its own streams).
//! The replicate's problem and schedule are in `replicate.rs`.

use std::ops::ControlFlow;

use rand::RngExt;

use super::spec::Spec;
use super::theorem::gradient_risk;
use crate::data::Dataset;
use crate::dpsgd::{DpSgd, StepPart, Stepper};
use crate::error::Result;
use crate::loss::{Loss, mean_grad, mean_value};
use crate::rng::{Purpose, derive_seed, stream};

/// Stream tag of a replicate's DP-SGD runs (`Purpose::Other`).
pub(super) const RUN_TAG: u64 = 0x2a11;
/// Stream tag of the draw of the K evaluated iterates (`Purpose::Other`).
const ITER_TAG: u64 = 0x17e2;
/// Stream tag of the draw in each stratum of the time-averaged risk (`Purpose::Other`).
const AVG_TAG: u64 = 0x7a3e;

/// The K steps at which replicate `r`'s run is observed: one uniform draw in each stratum
/// [j T / K, (j + 1) T / K) of 0..T (stratified sampling of the random output index t_hat of
/// Algorithm 1), from fractions drawn once per (series, replicate, run), so every phi of a
/// series observes its runs at the same fractions of T (common random numbers).
pub fn stratified_steps(fractions: &[f64], steps: usize) -> Vec<usize> {
    let k = fractions.len() as f64;
    fractions
        .iter()
        .enumerate()
        .map(|(j, u)| (((j as f64 + u) / k * steps as f64) as usize).min(steps - 1))
        .collect()
}

/// A replicate's measurements over its runs (means over the `runs_per_data` runs).
pub(super) struct Measured {
    /// The risk at K stratified iterates.
    pub(super) risk: f64,
    /// The clipped fraction over the steps up to the last of the K iterates.
    pub(super) clipped: f64,
    /// The clipped gradient mass over the same steps ([`Observed::mass`]).
    pub(super) clipped_mass: f64,
    /// The time-averaged risk on dyadic strata (only where `time_average` was asked).
    pub(super) risk_avg: Option<f64>,
    /// The risk split (bias-only risk, noise-only risk) at the same K iterates, where asked.
    pub(super) split: Option<(f64, f64)>,
}

/// The replicate's risk and clipped fraction: the mean over its `runs_per_data` runs of the risk
/// at K stratified iterates (pre-drawn from the run's own stream) and of the clipped fraction
/// and mass; with `time_average`, also each run's time-averaged risk on the dyadic strata of
/// [`super::time_average`], observed in the same run (their steps drawn from a stream of their
/// own, so the K iterates, the risk and the clipped fraction are those of a run without them).
///
/// With `split`, the risk split on common random numbers: each run again as its bias-only and
/// its noise-only twin ([`StepPart`]), on the run's own streams (seed, replicate) and observed
/// at the run's own K iterates, so that risk = risk_noise + (clipping's effect) with the same
/// batches and the same z_t: the bias share of `verify`'s table is
/// (risk - risk_noise) / risk (`verdict::split`). Where the full run clipped no sample before
/// its last observed step, its noise-only twin is that run, bit for bit (every factor of Eq. (2)
/// is exactly 1 either way, and the sampling and noise streams are the same), so its risk is
/// reused instead of run again.
pub(super) fn measure_runs(
    spec: &Spec,
    alg: &DpSgd,
    (loss, f_star, data): (&dyn Loss, f64, &Dataset),
    (seed, r, time_average, split): (u64, usize, bool, bool),
    gbuf: &mut [f64],
) -> Result<Measured> {
    let runs = spec.raw.runs_per_data;
    let grad_risk = gradient_risk(spec.raw.theorem);
    let steps = alg.config().steps;
    let (mut total, mut clipped, mut total_avg) = (0.0, 0.0, 0.0);
    let mut mass = 0.0;
    let (mut bias, mut noise) = (0.0, 0.0);
    for run_idx in 0..runs {
        // Run 0 keeps the single-run streams (replicate index r); further runs on the same data
        // set take their own streams.
        let rs = if run_idx == 0 {
            seed
        } else {
            derive_seed(seed, run_idx as u64, Purpose::Other(RUN_TAG))
        };
        let mut pick = stream(rs, r as u64, Purpose::Other(ITER_TAG));
        let fractions: Vec<f64> = (0..spec.iterates).map(|_| pick.random::<f64>()).collect();
        let at = stratified_steps(&fractions, steps);
        let strata = if time_average {
            let mut u = stream(rs, r as u64, Purpose::Other(AVG_TAG));
            super::time_average::dyadic_strata(steps, || u.random::<f64>())
        } else {
            Vec::new()
        };
        let (mut acc, mut acc_avg) = (0.0, 0.0);
        let obs = observe_both(
            alg,
            (loss, data),
            (rs, r as u64),
            (&at, &strata),
            |w, kind| {
                let v = risk_at(loss, data, w, f_star, grad_risk, gbuf);
                match kind {
                    None => acc += v,
                    Some(weight) => acc_avg += weight * v,
                }
            },
        )?;
        clipped += obs.fraction;
        mass += obs.mass();
        let k = spec.iterates as f64;
        total += acc / k;
        total_avg += acc_avg;
        if split {
            let mut risk = |w: &[f64]| risk_at(loss, data, w, f_star, grad_risk, gbuf);
            bias += part_risk(
                alg,
                (loss, data),
                (rs, r as u64),
                &at,
                StepPart::BiasOnly,
                &mut risk,
            )? / k;
            noise += if obs.clipped == 0 {
                acc / k
            } else {
                part_risk(
                    alg,
                    (loss, data),
                    (rs, r as u64),
                    &at,
                    StepPart::NoiseOnly,
                    &mut risk,
                )? / k
            };
        }
    }
    let n = runs as f64;
    Ok(Measured {
        risk: total / n,
        clipped: clipped / n,
        clipped_mass: mass / n,
        risk_avg: time_average.then_some(total_avg / n),
        split: split.then_some((bias / n, noise / n)),
    })
}

/// What a run's observer read off its stepper after the steps before the last of the K iterates
/// (as a run observed at them alone).
#[derive(Debug, Clone, Copy, Default)]
struct Observed {
    /// Of the samples drawn, clipped.
    clipped: usize,
    /// clipped / sampled (0 when none were drawn).
    fraction: f64,
    /// sum of ||g_i|| over the samples drawn.
    norm_sum: f64,
    /// sum of (||g_i|| - tau_t)_+ over them.
    excess: f64,
}

impl Observed {
    /// The clipped gradient mass sum_i (||g_i|| - tau_t)_+ / sum_i ||g_i|| over every per-sample
    /// gradient drawn (the mass Eq. (2) removes, as a fraction of the mass before clipping); 0
    /// where every gradient was 0.
    fn mass(&self) -> f64 {
        if self.norm_sum > 0.0 {
            self.excess / self.norm_sum
        } else {
            0.0
        }
    }
}

/// One run of `part` ([`StepPart`]) on the streams (seed, replicate), observed at the sorted
/// steps `at` and stopped after the last: the sum over `at` of `risk(w_t)`.
fn part_risk(
    alg: &DpSgd,
    (loss, data): (&dyn Loss, &Dataset),
    (seed, replicate): (u64, u64),
    at: &[usize],
    part: StepPart,
    risk: &mut impl FnMut(&[f64]) -> f64,
) -> Result<f64> {
    let mut acc = 0.0;
    run_observed(
        alg,
        (loss, data),
        (seed, replicate),
        (at, &[]),
        |st, t, w| {
            st.step_part(t, w, part);
        },
        |w, _| acc += risk(w),
    )?;
    Ok(acc)
}

/// One run observed at the K stratified steps `at` (`observe(w, None)`, in their order) and at
/// the weighted `strata` (`observe(w, Some(weight))`), stopped after the last step of either;
/// returns the clipped fraction and mass over the steps before the last of `at` (as a run
/// observed at `at` alone).
fn observe_both(
    alg: &DpSgd,
    (loss, data): (&dyn Loss, &Dataset),
    (seed, replicate): (u64, u64),
    (at, strata): (&[usize], &[(usize, f64)]),
    observe: impl FnMut(&[f64], Option<f64>),
) -> Result<Observed> {
    let last = at.last().copied().unwrap_or(0);
    let read = |st: &Stepper<'_>| Observed {
        clipped: st.clipped,
        fraction: if st.sampled == 0 {
            0.0
        } else {
            st.clipped as f64 / st.sampled as f64
        },
        norm_sum: st.norm_sum,
        excess: st.excess,
    };
    let mut seen = Observed::default();
    run_observed(
        alg,
        (loss, data),
        (seed, replicate),
        (at, strata),
        |st, t, w| {
            st.step(t, w);
            if t + 1 == last {
                seen = read(st);
            }
        },
        observe,
    )?;
    Ok(seen)
}

/// One run on the streams (seed, replicate), each step taken by `step`, observed at the sorted
/// steps `at` (`observe(w, None)`) and at the weighted `strata` (`observe(w, Some(weight))`),
/// stopped after the last step of either.
fn run_observed(
    alg: &DpSgd,
    (loss, data): (&dyn Loss, &Dataset),
    (seed, replicate): (u64, u64),
    (at, strata): (&[usize], &[(usize, f64)]),
    step: impl FnMut(&mut Stepper<'_>, usize, &mut [f64]),
    mut observe: impl FnMut(&[f64], Option<f64>),
) -> Result<()> {
    let (mut i, mut j) = (0, 0);
    alg.run_stepped(loss, data, seed, replicate, step, |t, w| {
        while i < at.len() && at[i] == t {
            observe(w, None);
            i += 1;
        }
        while j < strata.len() && strata[j].0 == t {
            observe(w, Some(strata[j].1));
            j += 1;
        }
        if i == at.len() && j == strata.len() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })?;
    Ok(())
}

/// The risk at w: f(w) - f* (convex), or ||grad f(w)||^2 (nonconvex, `grad_risk`).
pub(super) fn risk_at(
    loss: &dyn Loss,
    data: &Dataset,
    w: &[f64],
    f_star: f64,
    grad_risk: bool,
    g: &mut [f64],
) -> f64 {
    if grad_risk {
        mean_grad(loss, w, data, g);
        crate::linalg::dot(g, g)
    } else {
        mean_value(loss, w, data) - f_star
    }
}
