//! The science of one replicate: the sweep point (n, epsilon, phi) of Eq. (1), the data set, the
//! exact reference, the start w0, the theorem's schedule (with the spec's clip rule), DP-SGD, and
//! the risk at pre-drawn iterates. The run loop that schedules replicates is in `runner.rs`.

use super::measure::{RUN_TAG, measure_runs, risk_at};
use super::results::ReplicateResult;
use super::solver::{self, Reference};
use super::spec::{ClipRule, FreeConstant, HeavyShift, Spec, StartSpec, Vary};
use super::theorem::{gradient_risk, schedule_theorem};
use crate::config::{DataSpec, exact_lipschitz_k_norm};
use crate::data::Dataset;
use crate::dpsgd::{DpSgd, Init, Projection};
use crate::error::{Error, Result};
use crate::linalg::norm2;
use crate::loss::{Loss, LossSpec, mean_value, per_sample_lipschitz};
use crate::rng::{Purpose, derive_seed, stream};
use crate::stats::quantile;
use crate::theory::bounds;
use crate::theory::phi::{PhiInputs, phi as phi_of};
use crate::theory::{ClipNorm, RunSchedule, TheoremId, TheoryParams, prescribe_with_clip};

/// Stream tag of a series' data set (`Purpose::Other`); part of the results' random streams.
const DATA_TAG: u64 = 0xda7a;

/// (n, epsilon, phi) of grid point `pi`.
#[derive(Debug, Clone, Copy)]
pub struct SweepPoint {
    /// n.
    pub n: usize,
    /// epsilon.
    pub epsilon: f64,
    /// phi of Eq. (1) at (n, epsilon).
    pub phi: f64,
}

/// Eq. (1) at grid point `pi`: epsilon solved at the generator's n, or n rounded up at fixed
/// epsilon (phi recomputed, so phi <= the grid value).
pub fn sweep_point(spec: &Spec, pi: usize) -> Result<SweepPoint> {
    let target = spec.phis[pi];
    let pr = &spec.raw.privacy;
    let d = spec.dim()? as f64;
    let (n, epsilon) = match spec.raw.sweep.vary {
        Vary::Epsilon => {
            let n = spec.base_n()?;
            (
                n,
                crate::theory::phi::epsilon_for_phi(target, n as f64, d, pr.delta, pr.nu)?,
            )
        }
        Vary::N => {
            let eps = pr.epsilon.expect("validated");
            let n = crate::theory::phi::n_for_phi(target, d, eps, pr.delta, pr.nu)?;
            let n = crate::theory::schedules::round_steps(n) as usize;
            (n, eps)
        }
    };
    let phi = phi_of(&PhiInputs {
        n: n as f64,
        d,
        epsilon,
        delta: pr.delta,
        nu: pr.nu,
    })?;
    Ok(SweepPoint { n, epsilon, phi })
}

/// The data set of (series s, grid point, replicate r) at n.
pub fn build_data(spec: &Spec, s: usize, n: usize, r: usize) -> Result<Dataset> {
    build_data_at(spec, s, (n, None), r)
}

/// [`build_data`] at the grid point's phi too, for a generator whose law moves with phi
/// (`two_point`; with `phi = None` such a law is refused).
pub fn build_data_at(
    spec: &Spec,
    s: usize,
    (n, phi): (usize, Option<f64>),
    r: usize,
) -> Result<Dataset> {
    let mut ds = spec.series_data(s, (spec.raw.sweep.vary == Vary::N).then_some(n))?;
    if let (DataSpec::Generated(g), Some(phi)) = (&mut ds, phi) {
        g.set_sweep_phi(phi);
    }
    // A control draws from its series' data stream (a common random number where the two
    // generators consume the stream alike).
    let ss = spec.series[s].stream_series(s);
    let base = derive_seed(spec.raw.seed, ss as u64, Purpose::Other(DATA_TAG));
    let rep = if spec.raw.fresh_data { r as u64 } else { 0 };
    let mut data = ds.build(&mut stream(base, rep, Purpose::Data))?;
    if let Some(h) = spec.series[s].heavy_shift {
        heavy_shift(&mut data, h);
    }
    Ok(data)
}

fn heavy_shift(data: &mut Dataset, h: HeavyShift) {
    let mut w = data.y.clone();
    w.sort_by(f64::total_cmp);
    let cut = w[((h.quantile * data.n as f64) as usize).min(data.n - 1)];
    for i in 0..data.n {
        if data.y[i] >= cut {
            data.x[i * data.d] += h.offset;
        }
    }
}

/// G of Assumption 6.1 (the bound on the k-th moment of the per-sample Lipschitz constants) for
/// series `s`: given in the spec, or the generator's exact k-norm.
pub fn moment_bound_g(spec: &Spec, s: usize) -> Result<f64> {
    if let Some(g) = spec.raw.constants.g {
        return Ok(g);
    }
    match spec.series_data(s, None)? {
        DataSpec::Generated(g) => exact_lipschitz_k_norm(&g, &spec.raw.loss)?.ok_or_else(|| {
            Error::Config("the generator cannot give G for this loss and k; set constants.g".into())
        }),
        // Eq. (100): G = 3 ||v||.
        DataSpec::AppendixL(a) => a.g(),
        _ => Err(Error::Config("set constants.g for this data source".into())),
    }
}

/// Everything a replicate needs to prescribe its DP-SGD schedule, before the free constant C is
/// chosen: the schedule's theorem, its problem constants and the sweep point. (Not the clip-norm
/// study's `clipnorm::train::Setup`.)
struct ScheduleInputs {
    sched: TheoremId,
    params: TheoryParams,
    point: SweepPoint,
}

impl ScheduleInputs {
    /// The prescription at free constant `c` under the clip rule `clip`.
    fn prescription(&self, c: f64, clip: ClipNorm) -> Result<crate::theory::Prescription> {
        let mut p = self.params.clone();
        p.c = Some(c);
        prescribe_with_clip(self.sched, self.point.phi, &p, clip)
    }

    /// C minimizing the bound (golden section on log C over [1e-4, 1e4] x dist0).
    fn optimal_c(&self) -> Result<f64> {
        let d0 = self.params.dist0.unwrap_or(1.0).max(1e-12);
        let bound = |lc: f64| -> Result<Option<f64>> {
            Ok(self.prescription(lc.exp(), ClipNorm::Theorem)?.bound)
        };
        if bound(d0.ln())?.is_none() {
            // No bound (a missing problem constant): C minimizing the D0^2/C + 2C part.
            return Ok(d0 / 2f64.sqrt());
        }
        // 80 golden-section steps over C in [1e-4 D0, 1e4 D0] on a log scale; C is the final
        // bracket's midpoint.
        let bracket = crate::optimize::golden_section(
            |lc| Ok::<_, Error>(bound(lc)?.unwrap_or(f64::INFINITY)),
            (1e-4 * d0).ln(),
            (1e4 * d0).ln(),
            80,
        )?;
        Ok(bracket.midpoint().exp())
    }
}

/// Refuses a dist0 the run cannot represent: w0 = w* + dist0 u rounding back to w* (the run would
/// start at the optimum and measure nothing), or a loss at w0 that overflows.
fn check_start(loss: &dyn Loss, data: &Dataset, w_star: &[f64], w0: &[f64], d0: f64) -> Result<()> {
    let dist = crate::error::fmt_num(d0);
    if w0 == w_star {
        return Err(Error::Config(format!(
            "constants.dist0 = {dist} is below the floating-point resolution of w*: w0 = w* + dist0 u rounds to w*; use a larger dist0"
        )));
    }
    let f0 = mean_value(loss, w0, data);
    if !f0.is_finite() {
        return Err(Error::Config(format!(
            "constants.dist0 = {dist}: the loss at w0 = w* + dist0 u is {f0}; use a smaller dist0"
        )));
    }
    Ok(())
}

pub use super::measure::stratified_steps;

/// One replicate: data, exact reference, w0 at distance dist0, schedule, DP-SGD, risk at K
/// stratified iterates. Returns the replicate and T.
///
/// Common random numbers: the run's streams (Poisson sampling, the standard-normal noise that
/// sigma scales, the iterate fractions) derive from (seed, series, replicate), not from the
/// cell, so replicate r sees the same draws at every phi of its series, and a control sees its
/// series' draws.
pub fn run_replicate(
    spec: &Spec,
    c: usize,
    point: &SweepPoint,
    r: usize,
) -> Result<(ReplicateResult, u64)> {
    let (s, _) = spec.cell(c);
    let data = build_data_at(spec, s, (point.n, Some(point.phi)), r)?;
    let seed = derive_seed(
        spec.raw.seed,
        spec.series[s].stream_series(s) as u64,
        Purpose::Other(RUN_TAG),
    );
    run_measured(spec, (c, r), point, &data, seed, spec.measures_split())
}

/// Cell `c`'s replicate on the data set `data`, with the run streams of (`seed`, replicate `r`)
/// (run 0 takes stream r of `seed`; further runs on the data set derive their own seeds from
/// it). `run_replicate` passes its series' run seed; a search over data sets passes its own
/// seeds, the same for every candidate (common random numbers).
///
/// Stages: the problem (loss, exact reference, start, feasible set), the theorem's constants
/// for this data set, the prescription (C, clip rule, schedule), DP-SGD's configuration (noise
/// calibrated for a clip-norm sweep), then the runs measured at their pre-drawn iterates.
pub fn run_on_data(
    spec: &Spec,
    c: usize,
    point: &SweepPoint,
    data: &Dataset,
    seed: u64,
    r: usize,
) -> Result<(ReplicateResult, u64)> {
    run_measured(spec, (c, r), point, data, seed, false)
}

/// [`run_on_data`], with the risk split ([`measure_runs`]) where `split`.
fn run_measured(
    spec: &Spec,
    (c, r): (usize, usize),
    point: &SweepPoint,
    data: &Dataset,
    seed: u64,
    split: bool,
) -> Result<(ReplicateResult, u64)> {
    let (s, _) = spec.cell(c);
    let raw = &spec.raw;
    let problem = Problem::new(spec, data)?;
    let g = moment_bound_g(spec, spec.series[s].data_series(s))?;
    let gi = per_sample_lipschitz(problem.loss.as_ref(), data);
    let params = theory_params(spec, (c, r), point, &problem, data, gi.as_deref(), g)?;
    let setup = ScheduleInputs {
        sched: schedule_theorem(raw.theorem),
        params,
        point: *point,
    };
    let (cst, clip) = free_constant_and_clip(spec, s, &setup, gi.as_deref())?;
    let pres = setup.prescription(cst, clip)?;
    let (mut cfg, noise_multiplier) = dpsgd_config(spec, point, &pres, problem.projection)?;
    let bound = match clip {
        ClipNorm::Fixed(_) => None,
        ClipNorm::Theorem if raw.theorem.is_lower_bound() => {
            lower_bound_value(spec, s, g, point.phi)?
        }
        ClipNorm::Theorem => pres.bound,
    };
    let steps = cfg.steps;
    let RunSchedule { tau, eta, .. } = pres.run_schedule()?;
    let lambda_s = solver::lambda_min_at_optimum(
        &raw.loss,
        problem.loss.as_ref(),
        data,
        &problem.reference.w_star,
    )
    .map(|l| l * eta * steps as f64);
    let grad_risk = gradient_risk(raw.theorem);
    let mut gbuf = vec![0.0; problem.loss.param_dim()];
    let risk0 = risk_at(
        problem.loss.as_ref(),
        data,
        &problem.w0,
        problem.reference.f_star,
        grad_risk,
        &mut gbuf,
    );
    cfg.init = Init::Point {
        w: problem.w0.clone(),
    };
    let alg = DpSgd::new(cfg, data.n, None)?;
    let (_, pi) = spec.cell(c);
    let time_average = super::probability::probability_point(spec, s) == Some(pi);
    let m = measure_runs(
        spec,
        &alg,
        (problem.loss.as_ref(), problem.reference.f_star, data),
        (seed, r, time_average, split),
        &mut gbuf,
    )?;
    Ok((
        ReplicateResult {
            risk: m.risk,
            risk0: Some(risk0),
            clipped: Some(m.clipped),
            risk_avg: m.risk_avg,
            clipped_mass: Some(m.clipped_mass),
            risk_bias: m.split.map(|x| x.0),
            risk_noise: m.split.map(|x| x.1),
            noise_multiplier,
            lambda_s,
            bound,
            c: cst,
            tau,
            eta,
            f_star: problem.reference.f_star,
            g,
        },
        steps as u64,
    ))
}

/// The optimization problem of one data set: the loss, its exact minimizer, the start w0 at
/// distance d0 and the feasible set.
struct Problem {
    loss: Box<dyn Loss>,
    reference: Reference,
    w0: Vec<f64>,
    d0: f64,
    projection: Projection,
}

impl Problem {
    /// w0 = w* + dist0 (1, ..., 1)/sqrt(p), or 0 (then d0 = ||w*||); W = the ball of the
    /// spec's radius, which must hold w* and w0.
    ///
    /// Thm I.1 with the sharp loss and a minimizer outside W (a case that was refused before):
    /// w* is the constrained minimizer w*_W on the boundary ([`solver::sharp_on_ball`]), and
    /// where w* + dist0 u leaves W the start moves radially inwards, w0 = w* (1 - dist0 / R),
    /// still at distance dist0 from w*.
    fn new(spec: &Spec, data: &Dataset) -> Result<Problem> {
        let raw = &spec.raw;
        let loss = raw.loss.build(data)?;
        let reference = match (raw.radius, &raw.loss) {
            (Some(rad), LossSpec::Sharp) => solver::sharp_on_ball(data, rad, 1e-13, 100_000)?,
            _ => solver::solve(&raw.loss, loss.as_ref(), data)?,
        };
        let p = loss.param_dim();
        let u = 1.0 / (p as f64).sqrt();
        let (mut w0, d0) = match raw.constants.w0 {
            Some(StartSpec::Zero) => (vec![0.0; p], norm2(&reference.w_star)),
            _ => {
                let d0 = raw.constants.dist0;
                (reference.w_star.iter().map(|w| w + d0 * u).collect(), d0)
            }
        };
        if let (Some(rad), LossSpec::Sharp, None | Some(StartSpec::Offset)) =
            (raw.radius, &raw.loss, raw.constants.w0)
            && norm2(&w0) > rad * (1.0 + 1e-12)
            && norm2(&reference.w_star) >= rad * (1.0 - 1e-9)
            && d0 < rad
        {
            w0 = reference
                .w_star
                .iter()
                .map(|w| w * (1.0 - d0 / rad))
                .collect();
        }
        if raw.constants.w0 != Some(StartSpec::Zero) {
            check_start(loss.as_ref(), data, &reference.w_star, &w0, d0)?;
        }
        let projection = match raw.radius {
            Some(rad) => {
                // w* may lie on the boundary (the Appendix L minimizer is a unit vector).
                let slack = rad * (1.0 + 1e-12);
                if norm2(&reference.w_star) > slack || norm2(&w0) > slack {
                    return Err(Error::Config(format!(
                        "W = ball of radius {rad} must contain w* (||w*|| = {:.4}) and w0 (||w0|| = {:.4}); enlarge radius or shrink dist0",
                        norm2(&reference.w_star),
                        norm2(&w0)
                    )));
                }
                Projection::L2Ball { radius: rad }
            }
            None => Projection::None,
        };
        Ok(Problem {
            loss,
            reference,
            w0,
            d0,
            projection,
        })
    }
}

/// The constants the theorem's schedule and bound need from this data set: k, G, gamma, D0,
/// D_W for all; H.1's tau (from the clip rule), Delta(w*) and alpha(tau) (Defs 5.2, 5.3); K.1's
/// sharp-growth radius D (Assumption 6.4); N.1's smoothness L and f(w0) - f*.
fn theory_params(
    spec: &Spec,
    (c, r): (usize, usize),
    point: &SweepPoint,
    problem: &Problem,
    data: &Dataset,
    gi: Option<&[f64]>,
    g: f64,
) -> Result<TheoryParams> {
    let raw = &spec.raw;
    let (s, _) = spec.cell(c);
    let ser = &spec.series[s];
    let loss = problem.loss.as_ref();
    let reference = &problem.reference;
    let mut params = TheoryParams {
        k: Some(ser.k),
        g: Some(g),
        gamma: raw.constants.gamma,
        dist0: Some(problem.d0),
        d_w: raw.radius.map(|r| 2.0 * r),
        ..Default::default()
    };
    match schedule_theorem(raw.theorem).full_version() {
        TheoremId::H1 => {
            let gi = gi.ok_or_else(|| Error::Config("Thm H.1 needs per-sample G_i".into()))?;
            let g_n = gi.iter().cloned().fold(0.0, f64::max);
            let tau = match ser.clip {
                ClipRule::Theorem => g_n,
                ClipRule::Quantile(q) => quantile(gi, q),
                ClipRule::Fixed(t) => t.min(g_n),
            };
            let fi = crate::theory::alpha::per_sample_minima(&raw.loss, loss, data)?;
            let delta = crate::theory::alpha::delta_star(loss, data, &reference.w_star, &fi)?;
            let alpha = crate::theory::estimate_alpha(
                loss,
                data,
                &fi,
                tau,
                &crate::theory::AlphaOptions {
                    starts: 8,
                    iters: 60,
                    init_scale: 3.0,
                    seed: derive_seed(raw.seed, c as u64, Purpose::Other(0xa1fa)) ^ r as u64,
                },
            )?;
            params.k = None;
            params.g_n = Some(g_n);
            params.tau = Some(tau);
            params.delta_star = Some(delta.max(0.0));
            params.alpha = Some(alpha.value.max(1.0));
        }
        TheoremId::K1 => {
            params.d_sharp = sharp_growth_radius(&raw.loss, data, reference, ser.k, g, point.phi);
        }
        TheoremId::N1 => {
            let l = (0..data.n)
                .map(|i| loss.smoothness(data.row(i), data.y[i]))
                .sum::<Option<f64>>()
                .map(|v| v / data.n as f64)
                .ok_or_else(|| Error::Config("Thm N.1 needs per-sample smoothness".into()))?;
            params.l = Some(l);
            params.f_gap = Some((mean_value(loss, &problem.w0, data) - reference.f_star).max(0.0));
        }
        _ => {}
    }
    Ok(params)
}

/// The free constant C of eta (given, or the bound's minimizer; I.1 has none: C = D_W) and the
/// clip norm of series `s`: the theorem's, or for an ablation a fixed tau with the theorem's eta
/// formula at that tau (and no bound). H.1 holds for any tau, so its rule is inside the theorem.
fn free_constant_and_clip(
    spec: &Spec,
    s: usize,
    setup: &ScheduleInputs,
    gi: Option<&[f64]>,
) -> Result<(f64, ClipNorm)> {
    let theorem = setup.sched.full_version();
    let cst = match (theorem, spec.raw.constants.c) {
        // Thm I.1 has no free C: its eta is the convex formula with C = D_W (before Eq. 58).
        (TheoremId::I1, _) => setup.params.d_w.unwrap_or(f64::NAN),
        (_, FreeConstant::Value(v)) => v,
        (_, FreeConstant::Rule(_)) => setup.optimal_c()?,
    };
    let clip = match spec.series[s].clip {
        ClipRule::Fixed(t) if theorem != TheoremId::H1 => ClipNorm::Fixed(t),
        ClipRule::Quantile(q) if theorem != TheoremId::H1 => {
            ClipNorm::Fixed(quantile(gi.unwrap_or(&[1.0]), q))
        }
        _ => ClipNorm::Theorem,
    };
    Ok((cst, clip))
}

/// DP-SGD's configuration at the sweep point (Thm 3.4's noise), and for a clip-norm sweep the
/// noise multiplier calibrated to (epsilon, delta) by its accountant instead (Thm 3.4 with
/// nu = 1 is not shown to be (epsilon, delta)-DP), so that Thm 6.6 applies to every arm.
fn dpsgd_config(
    spec: &Spec,
    point: &SweepPoint,
    pres: &crate::theory::Prescription,
    projection: Projection,
) -> Result<(crate::dpsgd::DpSgdConfig, Option<f64>)> {
    let raw = &spec.raw;
    let b = raw.batch_size;
    if b > point.n as f64 {
        return Err(Error::param(format!(
            "batch_size = {b} exceeds the number of samples n = {} at phi = {}",
            point.n, point.phi
        )));
    }
    let mut cfg = pres.dpsgd_config(
        &PhiInputs {
            n: point.n as f64,
            d: spec.dim()? as f64,
            epsilon: point.epsilon,
            delta: raw.privacy.delta,
            nu: raw.privacy.nu,
        },
        b,
        projection,
    )?;
    let noise_multiplier = match &raw.clip_sweep {
        Some(cs) => {
            let z = crate::privacy::calibrate::calibrated_z(
                cs.accountant,
                b / point.n as f64,
                cfg.steps,
                point.epsilon,
                raw.privacy.delta,
            )?;
            cfg.noise = crate::dpsgd::NoiseSpec::Multiplier { z };
            Some(z)
        }
        None => None,
    };
    Ok((cfg, noise_multiplier))
}

/// Assumption 6.4's D for the weighted sharp loss: with a_bar = mean a_i and
/// s = 16 phi^(1-1/k) G, f(w) - f* >= a_bar ||w - w*|| - 2 f* > s ||w - w*|| whenever
/// ||w - w*|| > D = 2 f* / (a_bar - s). If s >= a_bar no D exists (f - f* <= a_bar ||w - w*||),
/// so Thm K.1 does not apply: None.
pub fn sharp_growth_radius(
    spec: &LossSpec,
    data: &Dataset,
    reference: &Reference,
    k: f64,
    g: f64,
    phi: f64,
) -> Option<f64> {
    if !matches!(spec, LossSpec::Sharp) {
        return None;
    }
    let a_bar = data.y.iter().sum::<f64>() / data.n as f64;
    let s = 16.0 * phi.powf(1.0 - 1.0 / k) * g;
    (s < a_bar).then(|| 2.0 * reference.f_star / (a_bar - s))
}

fn lower_bound_value(spec: &Spec, s: usize, g: f64, phi: f64) -> Result<Option<f64>> {
    let k = spec.series[s].k;
    Ok(spec
        .raw
        .constants
        .c_lower
        .map(|cl| bounds::total(&bounds::lower_bound(cl, g, k, phi))))
}
