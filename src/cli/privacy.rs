//! `dpsgd-lab privacy epsilon|calibrate|zcdp`: privacy accounting for the Poisson-subsampled
//! Gaussian mechanism of Algorithm 1.

use anyhow::{Result, bail};
use clap::{ArgGroup, Args, Subcommand};
use serde_json::json;

use dpsgd_lab::privacy::report::{EpsilonReport, json_num as num};
use dpsgd_lab::privacy::{AccountantKind, Phase, RdpAccountant, nu_eff, steps_from_epochs, zcdp};

/// The delta of every privacy command that takes one, unless given (as `clipnorm recommend`,
/// `audit` and `train`).
const DEFAULT_DELTA: &str = "1e-5";

/// Privacy accounting: epsilon of a run, or the noise needed for a target.
#[derive(Debug, Args)]
pub struct PrivacyArgs {
    #[command(subcommand)]
    pub command: PrivacyCommand,
}

#[derive(Debug, Subcommand)]
pub enum PrivacyCommand {
    /// Epsilon spent by T steps at sampling rate q and noise multiplier z (q and T also from
    /// epochs, batch size and n), or by phases with different (q, z, T) composed.
    Epsilon(EpsilonArgs),
    /// The smallest noise multiplier z reaching a target (epsilon, delta), and nu_eff.
    Calibrate(CalibrateArgs),
    /// Lemma L.2: (epsilon, delta)-DP -> (xi, rho)-zCDP (Bun and Steinke 2016, Lemma 22).
    Zcdp(ZcdpArgs),
}

/// How long the run is: `--sample-rate Q --steps T`, or `--epochs E --batch-size B --n N`
/// (q = B / N, T = ceil(E N / B)).
#[derive(Debug, Args)]
#[group(skip)]
pub struct RunShape {
    /// Poisson sampling rate q = b / n, in (0, 1] (with --steps).
    #[arg(
        long = "sample-rate",
        visible_alias = "q",
        group = "form",
        requires = "steps"
    )]
    pub q: Option<f64>,
    /// Number of steps T (with --sample-rate).
    #[arg(long, requires = "q", visible_alias = "T")]
    pub steps: Option<usize>,
    /// Epochs E, instead of --sample-rate/--steps: T = ceil(E N / B) (with --batch-size, --n).
    #[arg(long, group = "form", requires_all = ["batch_size", "n"])]
    pub epochs: Option<f64>,
    /// Expected batch size B (with --epochs): q = B / N.
    #[arg(long, requires = "epochs")]
    pub batch_size: Option<usize>,
    /// Data set size N (with --epochs).
    #[arg(long, requires = "epochs")]
    pub n: Option<usize>,
}

impl RunShape {
    /// The epochs form's inputs in a `--json` object (nothing for --sample-rate/--steps).
    fn add_json(&self, o: &mut serde_json::Value) {
        if let (Some(e), Some(b), Some(n)) = (self.epochs, self.batch_size, self.n) {
            o["epochs"] = json!(e);
            o["batch_size"] = json!(b);
            o["n"] = json!(n);
        }
    }

    /// (q, T), and for the epochs form the line that says how they were derived.
    fn resolve(&self) -> Result<(f64, usize, Option<String>)> {
        match (self.q, self.steps, self.epochs, self.batch_size, self.n) {
            (Some(q), Some(t), ..) => Ok((q, t, None)),
            (_, _, Some(e), Some(b), Some(n)) => {
                let (q, t) = steps_from_epochs(e, b, n)?;
                let line = format!(
                    "--epochs {} --batch-size {b} --n {n}: q = B / N = {}, T = ceil(E N / B) = {t}",
                    f(e),
                    f(q)
                );
                Ok((q, t, Some(line)))
            }
            // clap's groups require one complete form.
            _ => bail!("give --sample-rate and --steps, or --epochs, --batch-size and --n"),
        }
    }
}

/// A warning on stderr when delta >= 1/n: at that delta, "releasing one whole row at random"
/// is (0, delta)-DP, so the guarantee says little (take delta well below 1/n).
fn warn_delta(delta: f64, n: Option<usize>) {
    if let Some(n) = n
        && delta >= 1.0 / n as f64
    {
        eprintln!(
            "warning: delta = {} >= 1/n = {}: a mechanism that publishes one random row outright \
             meets this delta, so the guarantee says little; take delta well below 1/n",
            f(delta),
            f(1.0 / n as f64)
        );
    }
}

/// Epsilon of a run: one phase (q, T, z), or several `--phase` composed in one account.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("form").required(true)))]
pub struct EpsilonArgs {
    /// Noise multiplier z (noise std / clip norm on the sum of clipped gradients).
    #[arg(
        long = "noise-multiplier",
        visible_alias = "z",
        required_unless_present = "phase",
        conflicts_with = "phase"
    )]
    pub z: Option<f64>,
    #[command(flatten)]
    pub shape: RunShape,
    /// A phase q=Q,z=Z,steps=T of a run whose phases differ (repeatable; composed in order,
    /// instead of --noise-multiplier and the run's length).
    #[arg(long, group = "form", value_name = "q=Q,z=Z,steps=T")]
    pub phase: Vec<String>,
    /// Target delta in (0, 1).
    #[arg(long, default_value = DEFAULT_DELTA)]
    pub delta: f64,
    /// rdp or pld (alias prv).
    #[arg(long, default_value = "rdp")]
    pub accountant: String,
    /// Print one JSON object as the last line.
    #[arg(long)]
    pub json: bool,
}

/// The smallest z reaching a target (epsilon, delta) over a run.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("form").required(true)))]
pub struct CalibrateArgs {
    /// Target epsilon > 0.
    #[arg(long, visible_alias = "eps")]
    pub epsilon: f64,
    /// Target delta in (0, 1).
    #[arg(long, default_value = DEFAULT_DELTA)]
    pub delta: f64,
    #[command(flatten)]
    pub shape: RunShape,
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
    #[arg(long, visible_alias = "eps")]
    pub epsilon: f64,
    /// delta in (0, 1) of the (epsilon, delta)-DP guarantee.
    #[arg(long, default_value = DEFAULT_DELTA)]
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
    warn_delta(a.delta, a.shape.n);
    let (phases, derived) = if a.phase.is_empty() {
        let (q, steps, derived) = a.shape.resolve()?;
        let z = a.z.unwrap_or(f64::NAN);
        (vec![Phase { q, z, steps }], derived)
    } else {
        let phases = a
            .phase
            .iter()
            .map(|s| s.parse::<Phase>())
            .collect::<std::result::Result<Vec<_>, _>>()?;
        (phases, None)
    };
    let r = EpsilonReport::compute_phases(kind, &RdpAccountant::default(), &phases, a.delta)?;
    if a.json {
        let mut o = r.to_json();
        a.shape.add_json(&mut o);
        println!("{o}");
        return Ok(());
    }
    if let Some(line) = &derived {
        println!("{line}");
    }
    let (how, detail) = match (r.order, &r.pld) {
        (Some(ord), _) => ("RDP".to_string(), format!("optimal RDP order {ord}")),
        (_, Some((p, lower))) => {
            let lower_text = lower.map_or("none (no PLD grid fits)".to_string(), f);
            match p.grid {
                // A lower bound of 0 says nothing: say why instead of printing it.
                Some(g) if lower.is_some_and(|l| l <= 0.0) => (
                    "PLD upper; no informative lower bound".to_string(),
                    format!(
                        "PLD discretization h = {}, error estimate {:.2e}; the certified lower \
                         bound rounds every step's loss down to the grid, which costs up to \
                         T h / 2 = {} here, more than epsilon itself, so it is 0",
                        f(g.discretization),
                        p.error,
                        f(r.steps as f64 * g.discretization / 2.0)
                    ),
                ),
                Some(g) => (
                    format!("PLD upper; certified lower {lower_text}"),
                    format!(
                        "PLD discretization h = {}, error estimate {:.2e}; the lower bound rounds \
                         every step's loss down to the grid, so it lies about T h / 2 = {} below the true epsilon",
                        f(g.discretization),
                        p.error,
                        f(r.steps as f64 * g.discretization / 2.0)
                    ),
                ),
                None => (
                    format!("RDP fallback of the PLD accountant; PLD certified lower {lower_text}"),
                    String::new(),
                ),
            }
        }
        _ => (String::new(), String::new()),
    };
    let run = match phases.as_slice() {
        [p] => format!("q = {}, T = {}, z = {}", f(p.q), p.steps, f(p.z)),
        _ => {
            // Identical phases compose as one (their steps added): list the distinct ones.
            let merged = dpsgd_lab::privacy::phases::merge_identical(&phases)?;
            let mut list: Vec<String> = merged
                .iter()
                .take(8)
                .map(|p| format!("(q = {}, z = {}, T = {})", f(p.q), f(p.z), p.steps))
                .collect();
            if merged.len() > 8 {
                list.push(format!("... {} more", merged.len() - 8));
            }
            format!(
                "{} phases composed ({} distinct), T = {} in all: {}",
                phases.len(),
                merged.len(),
                r.steps,
                list.join(", ")
            )
        }
    };
    println!(
        "epsilon = {} ({how}) at delta = {} for {run}",
        f(r.epsilon),
        f(a.delta)
    );
    if !detail.is_empty() {
        println!("{detail}");
    }
    if let Some(nu) = r.nu_eff {
        println!("nu_eff = {}", f(nu));
    }
    if let Some(note) = r.pld.as_ref().and_then(|p| p.0.note.as_ref()) {
        println!("note: {note}");
    }
    Ok(())
}

fn calibrate(a: &CalibrateArgs) -> Result<()> {
    let kind = AccountantKind::parse(&a.accountant)?;
    warn_delta(a.delta, a.shape.n);
    let (q, steps, derived) = a.shape.resolve()?;
    let start = std::time::Instant::now();
    let cal = dpsgd_lab::privacy::calibrate(kind, q, steps, a.epsilon, a.delta)?;
    let secs = start.elapsed().as_secs_f64();
    let (z, achieved) = (cal.z, cal.achieved.epsilon);
    let nu = nu_eff(z, q, steps, a.epsilon, a.delta)?;
    if !(nu.is_finite() && nu > 0.0 && achieved > 0.0) {
        if q < 1e-12 {
            bail!(
                "--q {} is too small: its epsilon is below the accountant's precision",
                f(q)
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
        let mut o = json!({
                "accountant": cal.achieved.label(),
                "rdp_fallback": cal.achieved.by != kind,
                "note": cal.achieved.note,
                "epsilon": a.epsilon,
                "epsilon_achieved": num(achieved),
                "delta": a.delta,
                "sample_rate": q,
                "steps": steps,
                "noise_multiplier": z,
                "nu_eff": nu,
                "seconds": secs,
        });
        a.shape.add_json(&mut o);
        println!("{o}");
    } else {
        if let Some(line) = derived {
            println!("{line}");
        }
        println!(
            "noise multiplier z = {} reaches epsilon = {} <= {} at delta = {} ({}, q = {}, T = {}, {secs:.2} s)",
            f(z),
            f(achieved),
            f(a.epsilon),
            f(a.delta),
            cal.achieved.label(),
            f(q),
            steps
        );
        println!("nu_eff = {}", f(nu));
        if let Some(note) = &cal.achieved.note {
            println!("note: {note}");
        }
    }
    Ok(())
}
