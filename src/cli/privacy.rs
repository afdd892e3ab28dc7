//! `dpsgd-lab privacy epsilon|calibrate|zcdp`: privacy accounting for the Poisson-subsampled
//! Gaussian mechanism of Algorithm 1.

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use serde_json::json;

use dpsgd_lab::privacy::{AccountantKind, PldAccountant, RdpAccountant, nu_eff, zcdp};

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
    dpsgd_lab::limits::fmt_num(x)
}

/// A number as JSON: finite values as numbers, +-infinity as the strings "inf" / "-inf" (JSON
/// has no infinity; serde_json would write null), NaN ("not computed") as null.
fn num(x: f64) -> serde_json::Value {
    if x.is_finite() {
        json!(x)
    } else if x.is_nan() {
        serde_json::Value::Null
    } else if x > 0.0 {
        json!("inf")
    } else {
        json!("-inf")
    }
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
    let (eps, order, pld) = match kind {
        AccountantKind::Rdp => {
            let r = RdpAccountant::default().epsilon(a.q, a.steps, a.z, a.delta)?;
            (r.epsilon, Some(r.order), None)
        }
        AccountantKind::Pld => {
            let acc = PldAccountant::default();
            let r = acc.epsilon(a.q, a.steps, a.z, a.delta)?;
            // The certified lower bound (optimistic discretization), also where the upper bound
            // fell back to RDP; inputs were checked by `epsilon`, so an error here means that no
            // grid fits (printed as none).
            let lower = acc.epsilon_lower(a.q, a.steps, a.z, a.delta).ok();
            (r.epsilon, None, Some((r, lower)))
        }
    };
    let by = match &pld {
        Some((p, _)) if p.rdp_fallback => "rdp (fallback of pld)",
        _ => kind.as_str(),
    };
    let nu = if eps.is_finite() && eps > 0.0 && a.z > 0.0 {
        Some(nu_eff(a.z, a.q, a.steps, eps, a.delta)?)
    } else {
        None
    };
    if a.json {
        let mut o = json!({
            "accountant": by,
            "epsilon": num(eps),
            "delta": a.delta,
            "noise_multiplier": a.z,
            "sample_rate": a.q,
            "steps": a.steps,
            "nu_eff": nu,
        });
        if let Some(ord) = order {
            o["order"] = json!(ord);
        }
        if let Some((p, lower)) = &pld {
            // error is null where the RDP fallback was used, epsilon_lower where no grid fits.
            o["error"] = num(p.error);
            o["tail_error"] = num(p.tail_error);
            o["epsilon_lower"] = lower.map_or(serde_json::Value::Null, num);
            o["discretization"] = json!(p.grid.map(|g| g.discretization));
            o["rdp_fallback"] = json!(p.rdp_fallback);
            o["note"] = json!(p.note);
        }
        println!("{o}");
    } else {
        let detail = match (order, &pld) {
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
            f(eps),
            f(a.delta),
            f(a.q),
            a.steps,
            f(a.z)
        );
        if let Some(nu) = nu {
            println!("nu_eff = {}", f(nu));
        }
        if let Some(note) = pld.and_then(|p| p.0.note) {
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
