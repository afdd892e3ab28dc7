//! A bias indicator for the binding families (`simulations/heavy/`), until `verify`
//! reports its own risk split: every replicate of every cell is run three times on common random
//! numbers (the same data set, Poisson batches, standard normals and observed iterates as
//! `verify`'s run of that replicate):
//!
//! - full: DP-SGD with the theorem's schedule (T, tau, eta, Thm 3.4's sigma_n), as `verify` runs
//!   it (its risk is `verify`'s, replicate by replicate);
//! - bias only: the same run with sigma_n = 0 (clipping, no noise);
//! - noise only: the same run with the same sigma_n and no clipping (tau = 1e12 on the clip, the
//!   noise's standard deviation kept).
//!
//! It prints, per cell, the means over replicates with 95% normal half-widths (1.96 sd / sqrt R)
//! of: the full risk, the do-nothing risk risk0 = f(w0) - f*, the bias-only and noise-only
//! risks, the bias indicator (full - noise only) / full (the share of the risk the clipping
//! adds, paired per replicate), and the clipped fraction of the sampled gradients. Results are a
//! pure function of (spec, scale, seed): no thread or time enters.
//!
//! Supported: the sharp-loss specs of `simulations/heavy/` (Thm J.1, K.1, I.1 schedules with a
//! given C; K.1's D, which only its bound uses, is not computed here).
//!
//! Run: `cargo run --release --example heavy_split -- simulations/heavy/heavy_k1_k2.toml [full]`.

use std::ops::ControlFlow;
use std::path::Path;

use dpsgd_lab::Result;
use dpsgd_lab::config::DataSpec;
use dpsgd_lab::dpsgd::{DpSgd, DpSgdConfig, Init, NoiseSpec, Projection, StepSchedule};
use dpsgd_lab::error::Error;
use dpsgd_lab::experiment::replicate::{
    build_data_at, moment_bound_g, stratified_steps, sweep_point,
};
use dpsgd_lab::experiment::spec::FreeConstant;
use dpsgd_lab::experiment::theorem::schedule_theorem;
use dpsgd_lab::experiment::{Scale, Spec};
use dpsgd_lab::loss::mean_value;
use dpsgd_lab::rng::{Purpose, derive_seed, stream};
use dpsgd_lab::theory::phi::PhiInputs;
use dpsgd_lab::theory::{ClipNorm, TheoryParams, prescribe_with_clip};
use rand::RngExt;

/// `replicate.rs`'s stream tags of a replicate's runs and of its observed iterates (private
/// there; the same values, so the full run is `verify`'s).
const RUN_TAG: u64 = 0x2a11;
const ITER_TAG: u64 = 0x17e2;
/// The clip norm of the noise-only run: above every weight the families draw (at most about
/// 1e3 G), so no gradient is clipped.
const NO_CLIP: f64 = 1e12;

/// One replicate's measurements.
struct Split {
    full: f64,
    bias_only: f64,
    noise_only: f64,
    risk0: f64,
    clipped: f64,
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args
        .first()
        .ok_or_else(|| Error::param("usage: heavy_split SPEC.toml [quick|full]"))?;
    let scale = match args.get(1).map(String::as_str) {
        Some("full") => Scale::Full,
        _ => Scale::Quick,
    };
    let spec = Spec::load(Path::new(path), scale)?;
    println!(
        "{} ({scale:?}): means over {} replicates, 95% half-widths",
        spec.raw.name, spec.replicates
    );
    println!(
        "series | phi | n | T | tau | risk (full) | risk0 | bias only | noise only | (full - noise only) / full | clipped"
    );
    for s in 0..spec.series.len() {
        for pi in 0..spec.phis.len() {
            let reps = (0..spec.replicates)
                .map(|r| replicate(&spec, s, pi, r))
                .collect::<Result<Vec<_>>>()?;
            let point = sweep_point(&spec, pi)?;
            let (steps, tau) = schedule(&spec, s, pi)?;
            let col = |f: &dyn Fn(&Split) -> f64| mean_hw(&reps.iter().map(f).collect::<Vec<_>>());
            let share = col(&|x| (x.full - x.noise_only) / x.full);
            println!(
                "{} | {:.4} | {} | {steps} | {tau:.3} | {} | {} | {} | {} | {} | {}",
                spec.label(s),
                point.phi,
                point.n,
                fmt(col(&|x| x.full)),
                fmt(col(&|x| x.risk0)),
                fmt(col(&|x| x.bias_only)),
                fmt(col(&|x| x.noise_only)),
                fmt(share),
                fmt(col(&|x| x.clipped)),
            );
        }
    }
    Ok(())
}

fn fmt((m, h): (f64, f64)) -> String {
    format!("{m:.4e} +- {h:.1e}")
}

/// Mean and 95% normal half-width 1.96 sd / sqrt(R).
fn mean_hw(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, 1.96 * (var / n).sqrt())
}

/// The theorem's (T, tau) at grid point `pi` (independent of the data set for J.1, K.1, I.1).
fn schedule(spec: &Spec, s: usize, pi: usize) -> Result<(u64, f64)> {
    let point = sweep_point(spec, pi)?;
    let pres = prescribe_with_clip(
        schedule_theorem(spec.raw.theorem),
        point.phi,
        &params(spec, s, spec.raw.constants.dist0)?,
        ClipNorm::Theorem,
    )?;
    let rs = pres.run_schedule()?;
    Ok((rs.steps, rs.tau))
}

/// The schedule's constants: k, G, gamma, D0, D_W and the spec's C (I.1: C = D_W).
fn params(spec: &Spec, s: usize, d0: f64) -> Result<TheoryParams> {
    let d_w = spec.raw.radius.map(|r| 2.0 * r);
    let is_i1 =
        schedule_theorem(spec.raw.theorem).full_version() == dpsgd_lab::theory::TheoremId::I1;
    // Thm I.1 has no free C: its eta is the convex formula with C = D_W (before Eq. 58).
    let c = match (is_i1, spec.raw.constants.c) {
        (true, _) => d_w.unwrap_or(f64::NAN),
        (false, FreeConstant::Value(v)) => v,
        (false, FreeConstant::Rule(_)) => {
            return Err(Error::Config(
                "heavy_split needs a given constants.c (the families fix C)".into(),
            ));
        }
    };
    Ok(TheoryParams {
        k: Some(spec.series[s].k),
        g: Some(moment_bound_g(spec, spec.series[s].data_series(s))?),
        gamma: spec.raw.constants.gamma,
        dist0: Some(d0),
        d_w,
        c: Some(c),
        ..Default::default()
    })
}

fn replicate(spec: &Spec, s: usize, pi: usize, r: usize) -> Result<Split> {
    if !matches!(spec.raw.data, DataSpec::Generated(_)) {
        return Err(Error::Config("heavy_split runs generated data only".into()));
    }
    let point = sweep_point(spec, pi)?;
    let data = build_data_at(spec, s, (point.n, Some(point.phi)), r)?;
    let loss = spec.raw.loss.build(&data)?;
    let reference = dpsgd_lab::experiment::solver::solve(&spec.raw.loss, loss.as_ref(), &data)?;
    let d0 = spec.raw.constants.dist0;
    let u = 1.0 / (data.d as f64).sqrt();
    let w0: Vec<f64> = reference.w_star.iter().map(|w| w + d0 * u).collect();
    let projection = match spec.raw.radius {
        Some(radius) => Projection::L2Ball { radius },
        None => Projection::None,
    };
    let pres = prescribe_with_clip(
        schedule_theorem(spec.raw.theorem),
        point.phi,
        &params(spec, s, d0)?,
        ClipNorm::Theorem,
    )?;
    let pr = &spec.raw.privacy;
    let mut cfg = pres.dpsgd_config(
        &PhiInputs {
            n: point.n as f64,
            d: data.d as f64,
            epsilon: point.epsilon,
            delta: pr.delta,
            nu: pr.nu,
        },
        spec.raw.batch_size,
        projection,
    )?;
    cfg.init = Init::Point { w: w0.clone() };
    let rs = pres.run_schedule()?;
    let b = spec.raw.batch_size;
    // Thm 3.4: sigma_n = sqrt(nu T log(1/delta)) tau / (n epsilon), i.e. z = b sigma_n / tau.
    let z = b * (pr.nu * rs.steps as f64 * (1.0 / pr.delta).ln()).sqrt()
        / (point.n as f64 * point.epsilon);
    let with = |tau: f64, z: f64| -> DpSgdConfig {
        let mut c = cfg.clone();
        c.clip_norm = StepSchedule::Constant(tau);
        c.noise = NoiseSpec::Multiplier { z };
        c
    };
    let seed = derive_seed(
        spec.raw.seed,
        spec.series[s].stream_series(s) as u64,
        Purpose::Other(RUN_TAG),
    );
    let mut pick = stream(seed, r as u64, Purpose::Other(ITER_TAG));
    let fractions: Vec<f64> = (0..spec.iterates).map(|_| pick.random::<f64>()).collect();
    let at = stratified_steps(&fractions, cfg.steps);
    let f_star = reference.f_star;
    let run = |c: DpSgdConfig| -> Result<(f64, f64)> {
        let alg = DpSgd::new(c, data.n, None)?;
        let last = *at.last().expect("iterates >= 1");
        let (mut acc, mut i, mut clipped) = (0.0, 0, 0.0);
        alg.run_stepped(
            loss.as_ref(),
            &data,
            seed,
            r as u64,
            |st, t, w| {
                st.step(t, w);
                if t + 1 == last && st.sampled > 0 {
                    clipped = st.clipped as f64 / st.sampled as f64;
                }
            },
            |t, w| {
                while i < at.len() && at[i] == t {
                    acc += mean_value(loss.as_ref(), w, &data) - f_star;
                    i += 1;
                }
                if i == at.len() {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        )?;
        Ok((acc / at.len() as f64, clipped))
    };
    let (full, clipped) = run(cfg.clone())?;
    let (bias_only, _) = run(with(rs.tau, 0.0))?;
    let (noise_only, _) = run(with(NO_CLIP, z * rs.tau / NO_CLIP))?;
    Ok(Split {
        full,
        bias_only,
        noise_only,
        risk0: mean_value(loss.as_ref(), &w0, &data) - f_star,
        clipped,
    })
}
