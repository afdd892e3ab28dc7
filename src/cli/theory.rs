//! `dpsgd-lab theory ...`: the theorems' schedules and bounds, and phi (Eq. 1).

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use serde::Serialize;

use dpsgd_lab::config::TrainConfig;
use dpsgd_lab::dpsgd::{DpSgdConfig, Projection};
use dpsgd_lab::rng::{Purpose, stream};
use dpsgd_lab::theory::alpha::{
    AlphaEstimate, AlphaOptions, estimate_alpha_curve, per_sample_minima,
};
use dpsgd_lab::theory::phi::{PhiInputs, epsilon_for_phi, n_for_phi, phi};
use dpsgd_lab::theory::schedules::lower::hypothesis_warnings;
use dpsgd_lab::theory::schedules::{
    BoundKind, Prescription, TheoremId, TheoryParams, prescribe_listing_missing,
};

/// Theorems as code: phi, schedules (T, tau, eta), explicit bounds and exponents.
#[derive(Debug, Args)]
pub struct TheoryArgs {
    #[command(subcommand)]
    pub command: TheoryCommand,
}

#[derive(Debug, Subcommand)]
pub enum TheoryCommand {
    /// A theorem's schedule (T, tau, eta), its explicit bound, probability and phi exponent.
    Schedule(Box<ScheduleArgs>),
    /// phi of Eq. (1) from (n, d, eps, delta, nu), or the n or eps that give a target phi.
    Phi(PhiArgs),
    /// An upper estimate of alpha(tau) (Definition 5.3) for a config's data set and loss.
    Alpha(AlphaArgs),
}

/// `theory alpha`.
#[derive(Debug, Args)]
pub struct AlphaArgs {
    /// Experiment config (TOML) whose [data] and [loss] are used (its [dpsgd] is ignored).
    #[arg(long)]
    pub config: PathBuf,
    /// Clip norm tau in (0, G_n]; several may be given.
    #[arg(long, num_args = 1.., required = true)]
    pub tau: Vec<f64>,
    /// Starting points of the minimization.
    #[arg(long, default_value_t = 32)]
    pub starts: usize,
    /// Gradient steps per start.
    #[arg(long, default_value_t = 200)]
    pub iters: usize,
    /// Standard deviation of the starting points.
    #[arg(long, default_value_t = 3.0)]
    pub init_scale: f64,
    /// Print one JSON object on the last line.
    #[arg(long)]
    pub json: bool,
}

/// Where phi comes from: given, or Eq. (1) from (n, d, eps, delta, nu).
#[derive(Debug, Args)]
pub struct PrivacyArgs {
    /// Number of samples n.
    #[arg(long)]
    pub n: Option<f64>,
    /// Dimension d.
    #[arg(long)]
    pub d: Option<f64>,
    /// Privacy epsilon.
    #[arg(long = "epsilon", visible_alias = "eps")]
    pub eps: Option<f64>,
    /// Privacy delta.
    #[arg(long)]
    pub delta: Option<f64>,
    /// The absolute constant nu of Thm 3.4 (no default: the paper gives no value).
    #[arg(long)]
    pub nu: Option<f64>,
}

/// `theory schedule`.
#[derive(Debug, Args)]
pub struct ScheduleArgs {
    /// Theorem: 5.4, H.1, I.1, 6.2, J.1, 6.5, K.1, 6.8, N.1, 6.6, L.1 or I.3.
    #[arg(long)]
    pub theorem: String,
    /// phi of Eq. (1) (alternatively give --n --d --epsilon --delta --nu).
    #[arg(long)]
    pub phi: Option<f64>,
    #[command(flatten)]
    pub privacy: PrivacyArgs,
    /// Moment order k > 1 of Assumption 6.1 ("inf" = uniform Lipschitzness).
    #[arg(long)]
    pub k: Option<f64>,
    /// G of Assumption 6.1.
    #[arg(long = "G")]
    pub g: Option<f64>,
    /// Confidence gamma in (0, 1) (I.1, J.1, N.1).
    #[arg(long)]
    pub gamma: Option<f64>,
    /// The constant C > 0 of eta (H.1, J.1, K.1, N.1).
    #[arg(long = "C")]
    pub c: Option<f64>,
    /// ||w0 - w*||.
    #[arg(long)]
    pub dist0: Option<f64>,
    /// Diameter D_W of the constraint set (I.1).
    #[arg(long = "D-W")]
    pub d_w: Option<f64>,
    /// D of Assumption 6.4 (K.1).
    #[arg(long = "D")]
    pub d_sharp: Option<f64>,
    /// Smoothness constant L (N.1).
    #[arg(long = "L")]
    pub l: Option<f64>,
    /// f(w0) - min f (N.1).
    #[arg(long)]
    pub f_gap: Option<f64>,
    /// G_n, the largest per-sample Lipschitz constant (H.1).
    #[arg(long = "G-n")]
    pub g_n: Option<f64>,
    /// alpha(tau) of Definition 5.3 (H.1).
    #[arg(long)]
    pub alpha: Option<f64>,
    /// Delta(w*) of Definition 5.2 (H.1).
    #[arg(long = "Delta")]
    pub delta_star: Option<f64>,
    /// Clip norm tau (H.1 holds for any tau in (0, G_n]).
    #[arg(long)]
    pub tau: Option<f64>,
    /// Number of steps T (full Appendix versions only).
    #[arg(long, visible_alias = "T")]
    pub steps: Option<f64>,
    /// The unstated Omega(.) constant of the lower bounds L.1 / I.3.
    #[arg(long)]
    pub c_lower: Option<f64>,
    /// Also print a ready-to-run [dpsgd] TOML table for `dpsgd-lab train` with this expected
    /// batch size b (needs --n --d --epsilon --delta --nu, so that the noise matches phi).
    #[arg(long)]
    pub dpsgd_toml: Option<f64>,
    /// Print one JSON object on the last line.
    #[arg(long)]
    pub json: bool,
}

/// `theory phi`.
#[derive(Debug, Args)]
pub struct PhiArgs {
    #[command(flatten)]
    pub privacy: PrivacyArgs,
    /// Target phi: with it, leave out exactly one of --n or --epsilon, which is solved for.
    #[arg(long)]
    pub phi: Option<f64>,
    /// Print one JSON object on the last line.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &TheoryArgs) -> Result<()> {
    match &args.command {
        TheoryCommand::Schedule(a) => schedule(a),
        TheoryCommand::Phi(a) => phi_cmd(a),
        TheoryCommand::Alpha(a) => alpha_cmd(a),
    }
}

fn full_inputs(p: &PrivacyArgs) -> Option<PhiInputs> {
    Some(PhiInputs {
        n: p.n?,
        d: p.d?,
        epsilon: p.eps?,
        delta: p.delta?,
        nu: p.nu?,
    })
}

fn any_given(p: &PrivacyArgs) -> bool {
    p.n.is_some() || p.d.is_some() || p.eps.is_some() || p.delta.is_some() || p.nu.is_some()
}

#[derive(Serialize)]
struct ScheduleOut<'a> {
    #[serde(flatten)]
    prescription: &'a Prescription,
    phi_inputs: Option<PhiInputs>,
}

fn schedule(a: &ScheduleArgs) -> Result<()> {
    let id: TheoremId = a.theorem.parse()?;
    let inputs = full_inputs(&a.privacy);
    let phi_v = match (a.phi, inputs) {
        (Some(_), _) if any_given(&a.privacy) => {
            bail!("give either --phi or all of --n --d --epsilon --delta --nu, not both")
        }
        (Some(v), None) => v,
        (None, Some(p)) => phi(&p)?,
        (None, None) => {
            bail!("phi is missing: give --phi, or all of --n --d --epsilon --delta --nu (Eq. 1)")
        }
        (Some(_), Some(_)) => unreachable!(),
    };
    let params = TheoryParams {
        k: a.k,
        g: a.g,
        gamma: a.gamma,
        c: a.c,
        dist0: a.dist0,
        d_w: a.d_w,
        d_sharp: a.d_sharp,
        l: a.l,
        f_gap: a.f_gap,
        g_n: a.g_n,
        alpha: a.alpha,
        delta_star: a.delta_star,
        tau: a.tau,
        steps: a.steps,
        c_lower: a.c_lower,
    };
    let mut p = prescribe_listing_missing(id, phi_v, &params).map_err(flags_for_missing)?;
    if let Some(inp) = &inputs {
        p.notes.extend(hypothesis_warnings(id, inp));
    }
    print_prescription(&p);
    if let Some(b) = a.dpsgd_toml {
        let Some(inp) = inputs else {
            bail!("--dpsgd-toml needs --n --d --epsilon --delta --nu (the noise must match phi)");
        };
        let projection = match (id.full_version(), a.d_w) {
            (TheoremId::I1, Some(dw)) => Projection::L2Ball { radius: dw / 2.0 },
            _ => Projection::None,
        };
        #[derive(Serialize)]
        struct Table {
            dpsgd: DpSgdConfig,
        }
        let cfg = p.dpsgd_config(&inp, b, projection)?;
        println!(
            "# Algorithm 1 as Thm {} prescribes (paste into a train config):",
            p.theorem
        );
        print!("{}", toml::to_string(&Table { dpsgd: cfg })?);
    }
    if a.json {
        println!(
            "{}",
            super::json::to_string(&ScheduleOut {
                prescription: &p,
                phi_inputs: inputs,
            })?
        );
    }
    Ok(())
}

fn print_prescription(p: &Prescription) {
    let kind = match p.kind {
        BoundKind::Upper => "upper bound",
        BoundKind::Lower => "lower bound",
    };
    let via = if p.full_version != p.theorem {
        format!(" (via full version Thm {})", p.full_version)
    } else {
        String::new()
    };
    println!("Thm {}{via}: {kind} on {}", p.theorem, p.risk);
    println!("  phi = {:.6e}, k = {}", p.phi, p.k);
    if let (Some(t), Some(tf), Some(ps)) = (p.steps, p.steps_formula, p.psi) {
        println!("  T   = {t} (formula: {tf:.6}), psi = 1/T + phi^2 = {ps:.6e}");
    }
    if let Some(tau) = p.tau {
        println!("  tau = {tau:.6e}");
    }
    if let Some(eta) = p.eta {
        println!("  eta = {eta:.6e}");
    }
    match p.bound {
        Some(b) if p.kind == BoundKind::Lower => {
            println!("  bound = {b:.6e} (for the worst data distribution of the hard instance)");
            for t in &p.terms {
                println!("    {:.6e}  {}", t.value, t.name);
            }
        }
        Some(b) => {
            println!(
                "  bound = {b:.6e}, holding with probability >= {} over the data set",
                p.probability
            );
            for t in &p.terms {
                println!("    {:.6e}  {}", t.value, t.name);
            }
        }
        None => println!("  bound: not evaluated; also give {}", p.missing.join(", ")),
    }
    println!("  predicted exponent of phi: {}", p.phi_exponent);
    for n in &p.notes {
        println!("  note: {n}");
    }
}

#[derive(Serialize)]
struct PhiOut {
    phi: f64,
    n: f64,
    d: f64,
    epsilon: f64,
    delta: f64,
    nu: f64,
    solved_for: &'static str,
}

fn phi_cmd(a: &PhiArgs) -> Result<()> {
    let p = &a.privacy;
    let (Some(d), Some(delta), Some(nu)) = (p.d, p.delta, p.nu) else {
        bail!("theory phi needs --d, --delta and --nu");
    };
    let out = match (a.phi, p.n, p.eps) {
        (None, Some(n), Some(eps)) => PhiOut {
            phi: phi(&PhiInputs {
                n,
                d,
                epsilon: eps,
                delta,
                nu,
            })?,
            n,
            d,
            epsilon: eps,
            delta,
            nu,
            solved_for: "phi",
        },
        (Some(t), None, Some(eps)) => PhiOut {
            phi: t,
            n: n_for_phi(t, d, eps, delta, nu)?,
            d,
            epsilon: eps,
            delta,
            nu,
            solved_for: "n",
        },
        (Some(t), Some(n), None) => PhiOut {
            phi: t,
            n,
            d,
            epsilon: epsilon_for_phi(t, n, d, delta, nu)?,
            delta,
            nu,
            solved_for: "epsilon",
        },
        _ => bail!(
            "give --n and --epsilon (to compute phi), or --phi with exactly one of --n / --epsilon \
             (to solve for the other)"
        ),
    };
    match out.solved_for {
        "phi" => println!(
            "phi = sqrt(nu d log(1/delta)) / (n eps) = {:.6e}  (Eq. 1)",
            out.phi
        ),
        "n" => println!(
            "n = sqrt(nu d log(1/delta)) / (phi eps) = {:.6}  (Eq. 1; use n >= {} for phi <= {})",
            out.n,
            out.n.ceil(),
            out.phi
        ),
        _ => println!(
            "eps = sqrt(nu d log(1/delta)) / (n phi) = {:.6}  (Eq. 1)",
            out.epsilon
        ),
    }
    if a.json {
        println!("{}", super::json::to_string(&out)?);
    }
    Ok(())
}

#[derive(Serialize)]
struct AlphaOut {
    loss: String,
    n: usize,
    estimates: Vec<AlphaEstimate>,
}

fn alpha_cmd(a: &AlphaArgs) -> Result<()> {
    let cfg = TrainConfig::load(&a.config)?;
    let data = cfg
        .data
        .build(&mut stream(cfg.seed, cfg.replicate, Purpose::Data))?;
    let loss = cfg.loss.build(&data)?;
    let f_star = per_sample_minima(&cfg.loss, loss.as_ref(), &data)?;
    let opts = AlphaOptions {
        starts: a.starts,
        iters: a.iters,
        init_scale: a.init_scale,
        seed: cfg.seed,
    };
    let estimates = estimate_alpha_curve(loss.as_ref(), &data, &f_star, &a.tau, &opts)?;
    for e in &estimates {
        let tau = e.tau;
        println!(
            "alpha({tau}) <= {:.6}  (upper estimate of the infimum of Definition 5.3; \
             G_1 = {:.4}, G_n = {:.4}, {} starts, {} evaluations)",
            e.value, e.g_1, e.g_n, e.starts, e.evaluations
        );
    }
    if a.json {
        println!(
            "{}",
            super::json::to_string(&AlphaOut {
                loss: loss.name().to_string(),
                n: data.n,
                estimates,
            })?
        );
    }
    Ok(())
}

/// The library names a missing input as the paper does (k, G, D_W); the CLI names its flag
/// (`--k --G --D-W`), so the message says what to type.
fn flags_for_missing(e: dpsgd_lab::Error) -> anyhow::Error {
    match e {
        dpsgd_lab::Error::Missing { what, names } => anyhow::anyhow!(
            "{what} needs {}, which {} not given",
            names
                .iter()
                .map(|n| format!("--{}", n.replace('_', "-")))
                .collect::<Vec<_>>()
                .join(" "),
            if names.len() == 1 { "was" } else { "were" }
        ),
        e => e.into(),
    }
}
