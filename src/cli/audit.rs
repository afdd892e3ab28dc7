//! `dpsgd-lab audit`: an empirical lower bound on the epsilon of Algorithm 1 as implemented.

use anyhow::Result;
use clap::Args;

use dpsgd_lab::audit::{AuditConfig, AuditReport, Fault, ThreatResult, run_audit};
use dpsgd_lab::privacy::calibrate::MIN_NOISE_MULTIPLIER;
use dpsgd_lab::privacy::{AccountantKind, calibrate_noise};

/// Arguments of `audit` (its help text is the subcommand's doc comment in main.rs).
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Poisson sampling rate q = b / n, in (0, 1].
    #[arg(long = "sample-rate", visible_alias = "q")]
    pub q: f64,
    /// Number of DP-SGD steps T per trial.
    #[arg(long, visible_alias = "T")]
    pub steps: usize,
    /// Claimed epsilon: the noise multiplier is calibrated to it with --accountant.
    #[arg(
        long,
        visible_alias = "eps",
        conflicts_with = "z",
        required_unless_present = "z"
    )]
    pub epsilon: Option<f64>,
    /// Noise multiplier z instead of --epsilon.
    #[arg(long = "noise-multiplier", visible_alias = "z")]
    pub z: Option<f64>,
    /// delta of the claim and of the lower bounds, in (0, 1).
    #[arg(long, default_value = "1e-5")]
    pub delta: f64,
    /// Accountant that calibrates z from --epsilon: pld (tight) or rdp.
    #[arg(long, default_value = "pld")]
    pub accountant: String,
    /// Trials R per side (each a full DP-SGD run); half choose thresholds, half certify.
    #[arg(long, default_value_t = 10_000)]
    pub trials: usize,
    /// Confidence level of the lower bounds.
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,
    /// Samples in D besides the canary (default: 10 at q = 1, 1000 otherwise).
    #[arg(long)]
    pub n: Option<usize>,
    /// Features, including the canary's coordinate.
    #[arg(long, default_value_t = 3)]
    pub d: usize,
    /// Base seed; trial i of side s uses streams derived from (seed, 2 i + s).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print one JSON object as the last line.
    #[arg(long)]
    pub json: bool,
    /// Run even when the estimated work (2 x trials x steps x (b + 1) x d) exceeds the limit.
    #[arg(long)]
    pub force: bool,
}

/// Runs `audit`.
pub fn run(a: &AuditArgs) -> Result<()> {
    let z = match (a.z, a.epsilon) {
        (Some(z), _) => z,
        (None, Some(eps)) => calibrate_noise(
            AccountantKind::parse(&a.accountant)?,
            a.q,
            a.steps,
            eps,
            a.delta,
        )?,
        (None, None) => anyhow::bail!("give --epsilon or --noise-multiplier"),
    };
    if a.z.is_none() && !(z.is_finite() && z >= MIN_NOISE_MULTIPLIER) {
        anyhow::bail!(
            "--epsilon {} is out of the accountant's range: it is met by z = {} (no noise worth \
             the name); lower --epsilon",
            dpsgd_lab::error::fmt_num(a.epsilon.unwrap_or(f64::NAN)),
            dpsgd_lab::error::fmt_num(z)
        );
    }
    let n = a.n.unwrap_or(if a.q == 1.0 { 10 } else { 1000 });
    let cfg = AuditConfig {
        q: a.q,
        steps: a.steps,
        z,
        delta: a.delta,
        trials: a.trials,
        seed: a.seed,
        n,
        d: a.d,
        confidence: a.confidence,
        force: a.force,
        fault: Fault::None,
    };
    let r = run_audit(&cfg)?;
    print_report(&r);
    if a.json {
        println!("{}", super::json::to_string(&r)?);
    }
    Ok(())
}

fn print_report(r: &AuditReport) {
    println!(
        "audit of DP-SGD: q = {}, T = {}, z = {:.6}, delta = {:e}; {} trials per side ({} certify), {:.1} s",
        r.sample_rate,
        r.steps,
        r.noise_multiplier,
        r.delta,
        r.trials,
        r.certifying_trials,
        r.wall_time_s
    );
    println!(
        "claimed epsilon: RDP {:.4}, PLD {:.4} (ratios below are against {:.4})",
        r.epsilon_rdp, r.epsilon_pld, r.epsilon_claimed
    );
    let conf = 100.0 * r.confidence;
    let gdp_note = if r.gdp_exact {
        "exact at q = 1"
    } else {
        "a CLT approximation with subsampling, not a certificate"
    };
    let line = |name: &str, t: &ThreatResult| {
        println!(
            "{name:<15} epsilon_lb = {:.4} (ratio {:.3}, threshold route, {conf}% confidence, {} certifying trials per side; FPR {:.2e} <= {:.2e}, FNR {:.3} <= {:.3})",
            t.epsilon_lb, t.ratio, r.certifying_trials, t.fpr, t.fpr_upper, t.fnr, t.fnr_upper
        );
        println!(
            "{:<15} epsilon_lb = {:.4} (ratio {:.3}, Gaussian-DP route, mu >= {:.4} (estimate {:.4}), {conf}% confidence, all {} trials per side; {gdp_note})",
            "", t.epsilon_lb_gdp, t.ratio_gdp, t.mu_lb, t.mu_hat, r.trials
        );
    };
    line("every iterate:", &r.every_iterate);
    line("final iterate:", &r.final_iterate);
}
