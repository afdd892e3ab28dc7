//! `dpsgd-lab lower-bound`: the facts of the Appendix L hard instance Q_v (Thms 6.6 / L.1, I.3)
//! for one or several n, e.g. to choose the parameters of a phi sweep.

use anyhow::{Result, bail};
use clap::Args;
use serde::Serialize;

use dpsgd_lab::limits;
use dpsgd_lab::lower_bound::checks::{
    ChernoffReport, FarPointReport, eq107_frequency, far_point_check,
};
use dpsgd_lab::lower_bound::packing::{PackingReport, lemma6_size};
use dpsgd_lab::lower_bound::{AppendixLSpec, OptimumKind, PackingSet};
use dpsgd_lab::rng::{Purpose, stream};

/// Packing sets up to this size are built and verified in full (O(|V|^2 d / 64)).
const MAX_VERIFIED: usize = 4096;

/// `lower-bound`.
#[derive(Debug, Args)]
pub struct LowerBoundArgs {
    /// Number(s) of samples n; one row per n.
    #[arg(long, num_args = 1.., required = true)]
    pub n: Vec<usize>,
    /// Dimension d (a positive multiple of 8).
    #[arg(long)]
    pub d: usize,
    /// Moment order k > 1 of Assumption 6.1 ("inf" = uniform Lipschitzness).
    #[arg(long)]
    pub k: f64,
    /// Privacy parameter epsilon.
    #[arg(long = "epsilon", visible_alias = "eps")]
    pub eps: f64,
    /// Privacy parameter delta < exp(-eps^2).
    #[arg(long)]
    pub delta: f64,
    /// The accountant constant nu of Eq. (1), for phi.
    #[arg(long, default_value_t = 1.0)]
    pub nu: f64,
    /// Index of v in the packing set.
    #[arg(long, default_value_t = 0)]
    pub codeword: usize,
    /// Seed of the packing set.
    #[arg(long, default_value_t = 0)]
    pub packing_seed: u64,
    /// Seed of the data draws (stream (seed, replicate, data)).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Data sets drawn to measure the Chernoff event of Eq. (107) and empty data sets.
    #[arg(long, default_value_t = 2000)]
    pub draws: usize,
    /// Print one JSON object on the last line.
    #[arg(long)]
    pub json: bool,
    /// Run even when the estimated work exceeds the limit.
    #[arg(long)]
    pub force: bool,
}

#[derive(Serialize)]
struct Row {
    n: usize,
    p: f64,
    phi: f64,
    eq130_scale: f64,
    xbar_norm: f64,
    f_star: f64,
    optimum: OptimumKind,
    chernoff: ChernoffReport,
    far_points: FarPointReport,
}

#[derive(Serialize)]
struct Out {
    d: usize,
    k: f64,
    epsilon: f64,
    delta: f64,
    nu: f64,
    expected_nonzero: f64,
    g: f64,
    v_norm: f64,
    packing: PackingReport,
    lemma6_size: Option<usize>,
    w_star: Vec<f64>,
    rows: Vec<Row>,
}

/// Runs `lower-bound`.
pub fn run(a: &LowerBoundArgs) -> Result<()> {
    if a.n.is_empty() {
        bail!("give at least one --n");
    }
    if !(a.nu.is_finite() && a.nu > 0.0) {
        bail!("--nu must be positive and finite, but is {}", a.nu);
    }
    let n_max = a.n.iter().copied().max().unwrap_or(0) as f64;
    limits::check_memory(
        &format!("--n {} --d {}", n_max, a.d),
        8.0 * (n_max + 2.0) * (a.d as f64 + 2.0),
    )?;
    limits::check_work(
        &format!("--draws {} --n {} --d {}", a.draws, n_max, a.d),
        a.draws as f64 * (n_max + 1.0) * (a.d as f64 + 1.0) * a.n.len() as f64,
        a.force,
    )?;
    // Verify the packing set at the size Lemma 6 guarantees when that is affordable.
    let lemma6 = lemma6_size(a.d);
    let size = lemma6
        .filter(|&s| s <= MAX_VERIFIED)
        .unwrap_or(0)
        .max(a.codeword + 1);
    let packing = PackingSet::generate(a.d, size, a.packing_seed)?.verify(false)?;
    let mut rows = Vec::new();
    let mut first = None;
    for (j, &n) in a.n.iter().enumerate() {
        let spec = AppendixLSpec {
            n,
            d: a.d,
            k: a.k,
            epsilon: a.eps,
            delta: a.delta,
            codeword: a.codeword,
            packing_seed: a.packing_seed,
            constant: false,
        };
        let q = spec.instance()?;
        let mut rng = stream(a.seed, j as u64, Purpose::Data);
        let data = q.sample(&mut rng);
        let opt = q.optimum(&data);
        let mut check_rng = stream(a.seed, j as u64, Purpose::Other(0x6c62));
        let far = far_point_check(&q, &data, 200, 20.0, &mut check_rng);
        let chernoff = eq107_frequency(&q, a.draws, &mut check_rng)?;
        rows.push(Row {
            n,
            p: q.p(),
            phi: q.phi(a.nu),
            eq130_scale: q.eq130_scale(),
            xbar_norm: opt.xbar_norm,
            f_star: opt.f_star,
            optimum: opt.kind,
            chernoff,
            far_points: far,
        });
        first.get_or_insert(q);
    }
    let q = first.expect("at least one n");
    let out = Out {
        d: a.d,
        k: a.k,
        epsilon: a.eps,
        delta: a.delta,
        nu: a.nu,
        expected_nonzero: q.expected_nonzero(),
        g: q.g(),
        v_norm: norm(q.v()),
        packing,
        lemma6_size: lemma6,
        w_star: q.w_star(),
        rows,
    };
    print_human(&out);
    if a.json {
        println!("{}", super::json::to_string(&out)?);
    }
    Ok(())
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

fn print_human(o: &Out) {
    println!(
        "Q_v of Thm L.1: d = {}, k = {}, eps = {}, delta = {:e}, nu = {}",
        o.d, o.k, o.epsilon, o.delta, o.nu
    );
    println!(
        "packing set: |V| = {} built and verified (Lemma 6 guarantees 2^(7d/128) = {}), weight {}, \
         min Hamming distance {} (>= d/8 = {})",
        o.packing.size,
        o.lemma6_size
            .map_or("> usize".to_string(), |s| s.to_string()),
        o.packing.min_weight,
        o.packing.min_distance,
        o.d / 8
    );
    println!(
        "||v|| = {:.6}, G = 3||v|| = {:.6} (Eq. 100), w* = v/||v|| (Eq. 105), n p = {:.4} for every n",
        o.v_norm, o.g, o.expected_nonzero
    );
    println!(
        "{:>10} {:>11} {:>11} {:>13} {:>11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "n",
        "p",
        "phi",
        "p^(1-1/k)|v|",
        "f*",
        "mean m",
        "P(E107)",
        "binom",
        "chernoff",
        "empty",
        "(1-p)^n"
    );
    for r in &o.rows {
        let c = &r.chernoff;
        println!(
            "{:>10} {:>11.4e} {:>11.4e} {:>13.4e} {:>11.4e} {:>9.3} {:>9.4} {:>9.4} {:>9.4} {:>9.4} {:>9.2e}",
            r.n,
            r.p,
            r.phi,
            r.eq130_scale,
            r.f_star,
            c.mean_nonzero,
            c.event_frequency,
            c.binomial_probability,
            c.chernoff_bound,
            c.empty_frequency,
            c.empty_probability
        );
        if r.far_points.min_ratio_eq110 < 1.0 - 1e-9
            || (r.far_points.eq107_event && r.far_points.min_ratio_eq111 < 1.0 - 1e-9)
        {
            println!("  WARNING: far-point check failed: {:?}", r.far_points);
        }
    }
}
