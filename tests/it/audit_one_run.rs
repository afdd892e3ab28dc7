//! The one-run audit (`audit-run`): its bounds against independently computed values, the
//! coverage of its 1 - beta statement on mechanisms whose epsilon is known exactly, and the
//! planted bugs it catches in one training run.

use dpsgd_lab::audit::Fault;
use dpsgd_lab::audit::one_run::bounds::{
    Analysis, ApproxDp, Gdp, InverseBlowUp, choose_k, fdp_epsilon_lb_approx_dp, fdp_mu_lb,
    fdp_pld_lb, fdp_rejects, gdp_epsilon, guess, pld_profile, steinke_epsilon_lb, steinke_p_value,
};
use dpsgd_lab::audit::one_run::{OneRunConfig, OneRunReport, run_one_run};
use dpsgd_lab::config::{TrainConfig, from_toml_str};
use dpsgd_lab::rng::{Purpose, stream};
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};

use crate::common::{assert_check_failed, assert_one_line_error, cli, tmpdir};

/// A logistic-regression `train` config on n generated rows: q = b / n, T steps, the noise
/// calibrated by the PLD accountant to (epsilon, 1e-5).
fn train_config(n: usize, q: f64, steps: usize, epsilon: f64) -> TrainConfig {
    let text = format!(
        "seed = 3\n[data]\nsource = \"generated\"\nn = {n}\nd = 5\n\
         labels = {{ kind = \"multinomial\", classes = 2, separable = true }}\n\
         [loss]\nfamily = \"logistic\"\n[dpsgd]\nsteps = {steps}\nbatch_size = {}\n\
         learning_rate = 0.5\nclip_norm = 1.0\noutput = \"last_iterate\"\n\
         noise = {{ kind = \"target\", epsilon = {epsilon}, delta = 1e-5, accountant = \"pld\" }}\n",
        q * n as f64
    );
    from_toml_str(&text, "test.toml").unwrap()
}

fn one_run(train: TrainConfig, m: usize, seed: u64, fault: Fault) -> OneRunReport {
    run_one_run(&OneRunConfig {
        train,
        canaries: m,
        seed,
        delta: None,
        confidence: 0.95,
        force: false,
        fault,
    })
    .unwrap()
}

/// The (epsilon, delta) p-value and epsilon_lb, and the f-DP mu_lb, against exact-arithmetic
/// values of `scripts/one_run_reference.py` (mpmath, 50 digits, written from the papers'
/// statements and sharing no code with the crate; output pasted here). Tolerances: the p-value
/// is a sum of log-gamma terms in f64, relative error ~1e-12 per term; the bisections stop at
/// 1e-9 (Rust) and 1e-12 / 1e-10 (reference), so 2e-9 bounds their difference.
#[test]
fn bounds_match_exact_reference_values() {
    let p = [
        ((1000, 100, 69, 0.4, 1e-5), 0.038_822_893_171_367_42),
        ((1000, 100, 80, 1.0, 1e-5), 0.073_009_115_949_177_73),
        ((100, 20, 18, 1.5, 0.0), 0.265_691_576_832_038),
        ((10000, 1000, 700, 0.8, 1e-6), 0.25876516007955834),
        ((1000, 200, 136, 0.5, 1e-5), 0.05388261306561917),
    ];
    for ((m, r, v, e, d), want) in p {
        let got = steinke_p_value(m, r, v, e, d);
        assert!(
            (got / want - 1.0).abs() < 1e-9,
            "p({m},{r},{v},{e},{d}) = {got}, want {want}"
        );
    }
    let e = [
        ((1000, 100, 69, 1e-5), 0.425204643987342),
        ((1000, 100, 90, 1e-5), 1.62614348069567),
        ((100, 20, 18, 0.0), 0.931509722794033),
        ((10000, 1000, 700, 1e-6), 0.731740449418083),
        ((1000, 1000, 800, 1e-5), 1.25398409423454),
    ];
    for ((m, r, v, d), want) in e {
        let got = steinke_epsilon_lb(m, r, v, d, 0.05);
        assert!(
            (got - want).abs() < 2e-9,
            "eps_lb({m},{r},{v},{d}) = {got}, want {want}"
        );
    }
    let mu = [
        ((1000, 200, 136), 0.209985297915),
        ((1000, 100, 90), 0.60250360737),
        ((10000, 1000, 700), 0.265427094564),
        ((1000, 1000, 800), 0.575552998707),
    ];
    for ((m, k, c), want) in mu {
        let got = fdp_mu_lb(m, k, c, 0.05);
        assert!(
            (got - want).abs() < 2e-9,
            "mu_lb({m},{k},{c}) = {got}, want {want}"
        );
    }
}

/// Exceedances over `seeds` audits of a bound at level beta must be at most the binomial
/// mean plus 4 standard deviations of Binomial(seeds, beta) (a rate above beta shows there).
fn exceedance_limit(seeds: usize, beta: f64) -> usize {
    let n = seeds as f64;
    (n * beta + 4.0 * (n * beta * (1.0 - beta)).sqrt()).floor() as usize
}

/// Randomized response on the inclusion bits (each reported truly with probability
/// e^eps / (1 + e^eps)) is exactly eps-DP with delta = 0, and the (epsilon, 0) bound with all m
/// guesses is then the exact binomial tail: over 1000 seeds the 95% bound exceeds eps in at most
/// 5% of them (within 4 sd). The f-DP analysis against the (eps, 0) curve holds too. The test can
/// fail: the same bound computed at level 0.15 (a mislevelled bound) exceeds the limit.
#[test]
fn coverage_on_randomized_response() {
    let (m, eps, beta, seeds): (usize, f64, f64, usize) = (200, 1.0, 0.05, 1000);
    let p = 1.0 / (1.0 + (-eps).exp());
    let (mut ed, mut fdp, mut wrong) = (0, 0, 0);
    for s in 0..seeds {
        let mut rng = stream(77, s as u64, Purpose::Other(1));
        let correct = (0..m).filter(|_| rng.random::<f64>() < p).count();
        ed += usize::from(steinke_epsilon_lb(m, m, correct, 0.0, beta) > eps);
        wrong += usize::from(steinke_epsilon_lb(m, m, correct, 0.0, 3.0 * beta) > eps);
        fdp += usize::from(fdp_epsilon_lb_approx_dp(m, m, correct, 0.0, beta) > eps);
    }
    let limit = exceedance_limit(seeds, beta);
    eprintln!(
        "randomized response: exceedances {ed} / {fdp} (mislevelled {wrong}) of {seeds}, limit {limit}"
    );
    assert!(
        ed <= limit,
        "(eps, delta): {ed} of {seeds} exceed, limit {limit}"
    );
    assert!(fdp <= limit, "f-DP: {fdp} of {seeds} exceed, limit {limit}");
    assert!(
        wrong > limit,
        "a bound at level 0.15 exceeds only {wrong} times: the test is blind"
    );
}

/// The Gaussian mechanism on the inclusion bits (score mu S_i + N(0, 1)) is exactly mu-GDP, so
/// its epsilon at delta is known: over 200 seeds with m = 1000 canaries and the audit's own
/// guess rule, both analyses exceed it (and the f-DP one exceeds mu) in at most beta of the
/// seeds within 4 sd.
#[test]
fn coverage_on_the_gaussian_mechanism() {
    let (m, mu, delta, beta, seeds) = (1000, 1.0, 1e-5, 0.05, 200);
    let truth = gdp_epsilon(mu, delta).unwrap();
    let k_ed = choose_k(m, mu, delta, beta, Analysis::EpsDelta);
    let k_f = choose_k(m, mu, delta, beta, Analysis::Fdp);
    let (mut ed, mut fdp) = (0, 0);
    for s in 0..seeds {
        let mut rng = stream(78, s as u64, Purpose::Other(2));
        let inc: Vec<bool> = (0..m).map(|_| rng.random::<bool>()).collect();
        let scores: Vec<f64> = inc
            .iter()
            .map(|&b| {
                let n: f64 = StandardNormal.sample(&mut rng);
                if b { mu + n } else { n }
            })
            .collect();
        let (r, v) = guess(&scores, &inc, k_ed);
        ed += usize::from(steinke_epsilon_lb(m, r, v, delta, beta) > truth);
        let (r, v) = guess(&scores, &inc, k_f);
        fdp += usize::from(fdp_mu_lb(m, r, v, beta) > mu);
    }
    let limit = exceedance_limit(seeds, beta);
    eprintln!("Gaussian mechanism: exceedances {ed} / {fdp} of {seeds}, limit {limit}");
    assert!(
        ed <= limit,
        "(eps, delta): {ed} of {seeds} exceed eps {truth}, limit {limit}"
    );
    assert!(
        fdp <= limit,
        "f-DP: {fdp} of {seeds} exceed mu {mu}, limit {limit}"
    );
}

/// End to end through DP-SGD at q = 1, where the run is exactly mu-GDP with mu = sqrt(T) / z and
/// the PLD claim is its epsilon: over 200 seeds (m = 200 canaries, T = 10, n = 20), neither
/// analysis of any threat model exceeds the claim in more than beta of the seeds (within 4 sd).
#[test]
fn coverage_of_the_shipped_mechanism_end_to_end() {
    let seeds = 200;
    let mut train = train_config(20, 1.0, 10, 4.0);
    // Calibrate once: the runs then use the same z without a calibration each.
    let z = one_run(train.clone(), 200, 999, Fault::None).noise_multiplier;
    train.dpsgd.noise = dpsgd_lab::dpsgd::NoiseSpec::Multiplier { z };
    let mut over = [0usize; 2];
    for s in 0..seeds {
        let r = one_run(train.clone(), 200, 1000 + s, Fault::None);
        assert!(r.fdp_exact);
        let any = |f: &dyn Fn(&dpsgd_lab::audit::one_run::ThreatBound) -> f64| {
            r.threats.iter().any(|t| f(t) > r.epsilon_claimed)
        };
        over[0] += usize::from(any(&|t| t.eps_delta.epsilon_lb));
        over[1] += usize::from(any(&|t| t.fdp.epsilon_lb));
    }
    // Three threat models per seed: a union bound at 3 beta.
    let limit = exceedance_limit(seeds as usize, 0.15);
    eprintln!("end to end: exceedances {over:?} of {seeds}, limit {limit}");
    assert!(
        over[0] <= limit && over[1] <= limit,
        "{over:?} of {seeds}, limit {limit}"
    );
}

/// The f-DP test rejects less as the hypothesis gets weaker (g falls with mu), and an
/// (eps, delta) curve with larger eps is rejected less: the monotonicity the bisections need.
#[test]
fn fdp_rejection_is_monotone_in_the_hypothesis() {
    let (m, k, c) = (1000, 200, 150);
    let flips = |f: &dyn Fn(f64) -> bool| {
        let v: Vec<bool> = (0..200).map(|i| f(i as f64 * 0.02)).collect();
        v.windows(2).filter(|w| w[0] != w[1]).count()
    };
    assert_eq!(flips(&|mu| fdp_rejects(&Gdp(mu), m, k, c, 0.05)), 1);
    assert_eq!(
        flips(&|e| fdp_rejects(
            &ApproxDp {
                eps: e,
                delta: 1e-5
            },
            m,
            k,
            c,
            0.05
        )),
        1
    );
}

/// Each planted bug is caught in one run: epsilon_lb above the claim at 95% confidence, on
/// seeds 1-3. Sizes (q = 1 unless stated, T = 100, claim epsilon 2 at delta 1e-5):
/// - clipping off (the Dirac canary contributes 10 tau): m = 1000, both analyses;
/// - noise x 0.5: the f-DP analysis at m = 1000; the (epsilon, delta) one needs m = 10^4;
/// - sampling at 2q while accounting q (q = 0.5 claimed, run at 1): the f-DP analysis (against
///   the PLD accountant's curves) at m = 1000 (epsilon_lb 2.37-2.70 on these seeds), the
///   (epsilon, delta) one at m = 10^4.
#[test]
fn planted_bugs_are_caught() {
    // (fault, q, m, the (epsilon, delta) analysis must catch it, the f-DP one must)
    let cases = [
        (Fault::NoClipping, 1.0, 1000, true, true),
        (Fault::HalfNoise, 1.0, 1000, false, true),
        (Fault::HalfNoise, 1.0, 10_000, true, true),
        (Fault::DoubleRate, 0.5, 1000, false, true),
        (Fault::DoubleRate, 0.5, 10_000, true, true),
    ];
    for seed in 1..=3 {
        for (fault, q, m, ed, fdp) in cases {
            let r = one_run(train_config(100, q, 100, 2.0), m, seed, fault);
            let t = &r.threats[0];
            let claim = r.epsilon_claimed;
            assert!(
                !ed || t.eps_delta.epsilon_lb > claim,
                "{fault:?} m {m}: {t:?}"
            );
            assert!(!fdp || t.fdp.epsilon_lb > claim, "{fault:?} m {m}: {t:?}");
        }
    }
}

/// The shipped mechanism at the planted-bug sizes is not flagged by either analysis on the same
/// seeds (what the fault tests catch is the fault; the f-DP analysis certifies at q < 1 too).
#[test]
fn the_shipped_mechanism_passes_at_the_planted_bug_sizes() {
    for seed in 1..=3 {
        for (q, m) in [(1.0, 1000), (1.0, 10_000), (0.5, 1000), (0.5, 10_000)] {
            let r = one_run(train_config(100, q, 100, 2.0), m, seed, Fault::None);
            for t in &r.threats {
                assert!(
                    t.eps_delta.epsilon_lb < r.epsilon_claimed,
                    "q {q} m {m}: {t:?}"
                );
                assert!(t.fdp.epsilon_lb < r.epsilon_claimed, "q {q} m {m}: {t:?}");
            }
        }
    }
}

/// Bad input to `audit-run` gives one `error:` line and a non-zero exit, never a panic; a good
/// call prints the claim and a JSON last line that is the same for the same seed.
#[test]
fn audit_run_cli_refuses_bad_input_and_is_reproducible() {
    let cfg = "simulations/audit/one_run_q1.toml";
    for (bad, needle) in [
        (vec!["--config", "no/such.toml"], "no/such.toml"),
        (
            vec!["--config", cfg, "--canaries", "1"],
            "at least 2 canaries",
        ),
        (vec!["--config", cfg, "--confidence", "1"], "confidence"),
        (vec!["--config", cfg, "--delta", "0"], "delta"),
    ] {
        let mut args = vec!["audit-run"];
        args.extend(bad);
        assert_one_line_error(&cli(args), needle);
    }
    let run = || {
        let out = cli([
            "audit-run",
            "--config",
            cfg,
            "--canaries",
            "100",
            "--seed",
            "4",
            "--json",
        ]);
        assert!(out.success(), "{}", out.stderr);
        assert!(
            out.stdout.contains("claimed epsilon: RDP"),
            "{}",
            out.stdout
        );
        let last = out.stdout.lines().last().unwrap().to_string();
        let mut v: serde_json::Value = serde_json::from_str(&last).unwrap();
        v.as_object_mut().unwrap().remove("wall_time_s");
        v
    };
    assert_eq!(run(), run());
}

/// `audit-run` on a config in another folder whose `[data] path` is relative to that folder
/// (as `train` reads it): the shipped mechanism exits 0, and each planted bug (hidden flag
/// `--plant-fault`) exits 1 with a `check failed:` line naming the bound above the claim. Sizes:
/// breast_cancer (569 rows), q = 0.4, T = 100, claim epsilon 2 at delta 1e-5, m = 10^4, seed 1
/// (the (epsilon, delta) analysis catches all three there; the f-DP one is not counted at q < 1).
#[test]
fn audit_run_reads_paths_from_the_config_folder_and_exits_1_on_a_caught_bug() {
    let dir = tmpdir("audit-run-rel");
    std::fs::copy("data/breast_cancer.csv", dir.join("bc.csv")).unwrap();
    let cfg = dir.join("c.toml");
    std::fs::write(
        &cfg,
        "seed = 1\n[data]\nsource = \"csv\"\npath = \"bc.csv\"\nlabel = \"target\"\n\
         [loss]\nfamily = \"logistic\"\n[dpsgd]\nsteps = 100\nbatch_size = 227\n\
         learning_rate = 0.1\nclip_norm = 1.0\noutput = \"last_iterate\"\n\
         noise = { kind = \"target\", epsilon = 2.0, delta = 1e-5, accountant = \"pld\" }\n",
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap();
    let run = |fault: Option<&str>| {
        let mut args = vec![
            "audit-run",
            "--config",
            cfg,
            "--canaries",
            "10000",
            "--seed",
            "1",
        ];
        if let Some(f) = fault {
            args.extend(["--plant-fault", f]);
        }
        cli(args)
    };
    let clean = run(None);
    assert!(clean.success(), "exit {:?}: {}", clean.code, clean.stderr);
    for f in ["half-noise", "no-clipping", "double-rate"] {
        assert_check_failed(&run(Some(f)), "exceeds the claimed epsilon");
    }
}

/// The f-DP analysis' PLD curve (the accountant's upper privacy profile as a trade-off curve)
/// against closed forms. At q = 1, T = 100, z = 20 DP-SGD is exactly mu-GDP (mu = 0.5): the
/// profile's g lies below the Gaussian g (it is valid) and within 2e-3 of it (eps grid 0.02 and
/// the PLD's discretization), and the epsilon_lb it gives at (m 1000, 200 guesses, 142 correct)
/// is within 1% of the Gaussian analysis'. At T = 1, q = 0.3, z = 1 the exact curve of the
/// subsampled Gaussian is computed from Phi alone (threshold tests: P0 = N(0, 1),
/// P1 = (1 - q) N(0, 1) + q N(1, 1); g is the smaller of the two orders); the profile's g lies
/// below it (1e-9 slack) and within 1e-2 (measured 6.7e-3: one step's loss is spread wide, so
/// the eps grid's 0.02 spacing costs more than at q = 1).
#[test]
fn the_pld_curve_matches_closed_forms() {
    let n = statrs::distribution::Normal::standard();
    use statrs::distribution::ContinuousCDF;
    let ys: Vec<f64> = (1..200).map(|i| i as f64 / 200.0).collect();
    let pld = pld_profile(1.0, 100, 20.0).unwrap();
    let gdp = Gdp(10.0 / 20.0);
    let gap = ys
        .iter()
        .map(|&y| {
            let (a, b) = (pld.g(y), gdp.g(y));
            assert!(a <= b + 1e-9, "y {y}: PLD {a} above Gaussian {b}");
            b - a
        })
        .fold(0.0, f64::max);
    eprintln!("q = 1: largest gap PLD below Gaussian {gap:e}");
    assert!(gap < 2e-3, "{gap}");
    let (_, e_pld) = fdp_pld_lb((1000, 200, 142, 0.05), (1.0, 100, 20.0, 1e-5)).unwrap();
    let e_gdp = gdp_epsilon(fdp_mu_lb(1000, 200, 142, 0.05), 1e-5).unwrap();
    eprintln!("epsilon_lb: PLD curve {e_pld}, Gaussian {e_gdp}");
    assert!((e_pld / e_gdp - 1.0).abs() < 0.01, "{e_pld} {e_gdp}");
    let (q, z) = (0.3, 1.0);
    let exact = |y: f64| {
        // P1 = y on {x > t}: least P0 = Q(t / z); solve (1 - q) Q(t) + q Q(t - 1) = y by bisection.
        let (mut lo, mut hi) = (-40.0, 40.0);
        for _ in 0..200 {
            let t: f64 = 0.5 * (lo + hi);
            let p1 = (1.0 - q) * n.cdf(-t / z) + q * n.cdf(-(t - 1.0) / z);
            if p1 > y { lo = t } else { hi = t }
        }
        let g1 = n.cdf(-0.5 * (lo + hi) / z);
        // P0 = y on {x < t}: least P1 = (1 - q) y + q Phi(Phi^{-1}(y) - 1 / z).
        let g0 = (1.0 - q) * y + q * n.cdf(n.inverse_cdf(y) - 1.0 / z);
        g1.min(g0)
    };
    let sub = pld_profile(q, 1, z).unwrap();
    let gap = ys
        .iter()
        .map(|&y| {
            let (a, b) = (sub.g(y), exact(y));
            assert!(a <= b + 1e-9, "y {y}: PLD {a} above exact {b}");
            b - a
        })
        .fold(0.0, f64::max);
    eprintln!("q = 0.3, T = 1: largest gap PLD below exact {gap:e}");
    assert!(gap < 1e-2, "{gap}");
}
