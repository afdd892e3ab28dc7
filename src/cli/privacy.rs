//! `dpsgd-lab privacy epsilon|calibrate|zcdp`: privacy accounting for the Poisson-subsampled
//! Gaussian mechanism of Algorithm 1.

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use serde_json::json;

use dpsgd_lab::privacy::report::{EpsilonReport, json_num as num};
use dpsgd_lab::privacy::{AccountantKind, RdpAccountant, nu_eff, zcdp};

/// Privacy accounting: epsilon of a run, or the noise needed for a target.
#[derive(Debug, Args)]
pub struct PrivacyArgs {
    #[command(subcommand)]
    pub command: PrivacyCommand,
}

#[derive(Debug, Subcommand)]
pub enum PrivacyCommand {
    /// Epsilon spent by T steps at sampling rate q and noise multiplier z.
    Epsilon(EpsilonArgs),
    /// The smallest noise multiplier z reaching a target (epsilon, delta), and nu_eff.
    Calibrate(CalibrateArgs),
    /// Lemma L.2: (epsilon, delta)-DP -> (xi, rho)-zCDP (Bun and Steinke 2016, Lemma 22).
    Zcdp(ZcdpArgs),
}

#[derive(Debug, Args)]
pub struct EpsilonArgs {
    /// Noise multiplier z (noise std / clip norm on the sum of clipped gradients).
    #[arg(long = "noise-multiplier", visible_alias = "z")]
    pub z: f64,
    /// Poisson sampling rate q = b / n, in (0, 1].
    #[arg(long = "sample-rate", visible_alias = "q")]
    pub q: f64,
    /// Number of steps T.
    #[arg(long)]
    pub steps: usize,
    /// Target delta in (0, 1).
    #[arg(long)]
    pub delta: f64,
    /// rdp or pld (alias prv).
    #[arg(long, default_value = "rdp")]
    pub accountant: String,
    /// Print one JSON object as the last line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Target epsilon > 0.
    #[arg(long)]
    pub epsilon: f64,
    /// Target delta in (0, 1).
    #[arg(long)]
    pub delta: f64,
    /// Poisson sampling rate q = b / n, in (0, 1].
    #[arg(long = "sample-rate", visible_alias = "q")]
    pub q: f64,
    /// Number of steps T.
    #[arg(long)]
    pub steps: usize,
    /// rdp or pld (alias prv).
    #[arg(long, default_value = "rdp")]
    pub accountant: String,
    /// Print one JSON object as the last line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ZcdpArgs {
    /// epsilon > 0 of the (epsilon, delta)-DP guarantee.
    #[arg(long)]
    pub epsilon: f64,
    /// delta in (0, 1) of the (epsilon, delta)-DP guarantee.
    #[arg(long)]
    pub delta: f64,
    /// Print one JSON object (epsilon, delta, xi, rho) on the last line.
    #[arg(long)]
    pub json: bool,
}

/// Numbers in the readable form used everywhere.
fn f(x: f64) -> String {
    dpsgd_lab::error::fmt_num(x)
}

/// Runs a `privacy` subcommand.
pub fn run(args: &PrivacyArgs) -> Result<()> {
    match &args.command {
        PrivacyCommand::Epsilon(a) => epsilon(a),
        PrivacyCommand::Calibrate(a) => calibrate(a),
        PrivacyCommand::Zcdp(a) => {
            let (xi, rho) = zcdp::approx_dp_to_zcdp(a.epsilon, a.delta)?;
            if a.json {
                println!(
                    "{}",
                    json!({"epsilon": a.epsilon, "delta": a.delta, "xi": xi, "rho": rho})
                );
            } else {
                println!(
                    "({}, {})-DP implies ({}, {})-zCDP (Bun & Steinke 2016, Lemma 22)",
                    f(a.epsilon),
                    f(a.delta),
                    f(xi),
                    f(rho)
                );
            }
            Ok(())
        }
    }
}

fn epsilon(a: &EpsilonArgs) -> Result<()> {
    let kind = AccountantKind::parse(&a.accountant)?;
    let r = EpsilonReport::compute(kind, &RdpAccountant::default(), a.q, a.steps, a.z, a.delta)?;
    if a.json {
        println!("{}", r.to_json());
    } else {
        let detail = match (r.order, &r.pld) {
            (Some(ord), _) => format!("optimal RDP order {ord}"),
            (_, Some((p, lower))) => match p.grid {
                Some(g) => format!(
                    "PLD, discretization {}, error estimate {:.2e}; certified lower bound {}",
                    f(g.discretization),
                    p.error,
                    lower.map_or("none (no grid fits)".to_string(), f)
                ),
                None => format!(
                    "RDP fallback of the PLD accountant; PLD certified lower bound {}",
                    lower.map_or("none (no grid fits)".to_string(), f)
                ),
            },
            _ => String::new(),
        };
        println!(
            "epsilon = {} at delta = {} ({detail}) for q = {}, T = {}, z = {}",
            f(r.epsilon),
            f(a.delta),
            f(a.q),
            a.steps,
            f(a.z)
        );
        if let Some(nu) = r.nu_eff {
            println!("nu_eff = {}", f(nu));
        }
        if let Some(note) = r.pld.as_ref().and_then(|p| p.0.note.as_ref()) {
            println!("note: {note}");
        }
    }
    Ok(())
}

fn calibrate(a: &CalibrateArgs) -> Result<()> {
    let kind = AccountantKind::parse(&a.accountant)?;
    let start = std::time::Instant::now();
    let cal = dpsgd_lab::privacy::calibrate(kind, a.q, a.steps, a.epsilon, a.delta)?;
    let secs = start.elapsed().as_secs_f64();
    let (z, achieved) = (cal.z, cal.achieved.epsilon);
    let nu = nu_eff(z, a.q, a.steps, a.epsilon, a.delta)?;
    if !(nu.is_finite() && nu > 0.0 && achieved > 0.0) {
        if a.q < 1e-12 {
            bail!(
                "--q {} is too small: its epsilon is below the accountant's precision",
                f(a.q)
            );
        }
        bail!(
            "--epsilon {} is out of the accountant's range: z = {} already reaches epsilon = {} (nu_eff = {})",
            f(a.epsilon),
            f(z),
            f(achieved),
            f(nu)
        );
    }
    if a.json {
        println!(
            "{}",
            json!({
                "accountant": cal.achieved.label(),
                "rdp_fallback": cal.achieved.by != kind,
                "note": cal.achieved.note,
                "epsilon": a.epsilon,
                "epsilon_achieved": num(achieved),
                "delta": a.delta,
                "sample_rate": a.q,
                "steps": a.steps,
                "noise_multiplier": z,
                "nu_eff": nu,
                "seconds": secs,
            })
        );
    } else {
        println!(
            "noise multiplier z = {} reaches epsilon = {} <= {} at delta = {} ({}, q = {}, T = {}, {secs:.2} s)",
            f(z),
            f(achieved),
            f(a.epsilon),
            f(a.delta),
            cal.achieved.label(),
            f(a.q),
            a.steps
        );
        println!("nu_eff = {}", f(nu));
        if let Some(note) = &cal.achieved.note {
            println!("note: {note}");
        }
    }
    Ok(())
}
