//! The empirical audit catches broken mechanisms and passes the shipped one.
//!
//! Each broken variant ([`Fault`], reachable only from code) must give epsilon_lb above the
//! claimed epsilon with 95% confidence, at sizes that run in about a second. The shipped
//! mechanism must not, at the stricter level 99.9%, over several seeds: a 95% bound would exceed
//! a tight claim in about 5% of audits by design. The Gaussian-DP route is checked only at q = 1,
//! where the statistic is exactly Gaussian and the route is valid; with subsampling it is an
//! approximation and only the Clopper-Pearson threshold route certifies.

use dpsgd_lab::audit::{AuditConfig, AuditReport, Fault, run_audit};
use dpsgd_lab::privacy::{AccountantKind, calibrate_noise};

fn config(q: f64, steps: usize, epsilon: f64, trials: usize, seed: u64) -> AuditConfig {
    let delta = 1e-5;
    AuditConfig {
        q,
        steps,
        z: calibrate_noise(AccountantKind::Pld, q, steps, epsilon, delta).unwrap(),
        delta,
        trials,
        seed,
        n: 20,
        d: 3,
        confidence: 0.95,
        force: false,
        fault: Fault::None,
    }
}

fn audit(mut cfg: AuditConfig, fault: Fault) -> AuditReport {
    cfg.fault = fault;
    run_audit(&cfg).unwrap()
}

#[test]
fn audit_catches_half_noise() {
    // q = 1: the true mu doubles (about 0.27 -> 0.54 at claimed epsilon 1).
    let r = audit(config(1.0, 10, 1.0, 4000, 1), Fault::HalfNoise);
    assert!(
        r.every_iterate.epsilon_lb_gdp > r.epsilon_claimed,
        "{:?}",
        r.every_iterate
    );
}

#[test]
fn audit_catches_disabled_clipping() {
    // The canary's gradient (norm 10 tau) goes in unclipped: sensitivity x10.
    let r = audit(config(1.0, 10, 1.0, 4000, 2), Fault::NoClipping);
    for t in [&r.every_iterate, &r.final_iterate] {
        assert!(t.epsilon_lb > r.epsilon_claimed, "{t:?}");
        assert!(t.epsilon_lb_gdp > r.epsilon_claimed, "{t:?}");
    }
}

#[test]
fn audit_catches_doubled_sampling_rate() {
    // Claimed q = 1/2, run at q = 1: the threshold route (valid with subsampling) must exceed.
    let r = audit(config(0.5, 10, 2.0, 50_000, 3), Fault::DoubleRate);
    assert!(
        r.every_iterate.epsilon_lb > r.epsilon_claimed,
        "{:?} claimed {}",
        r.every_iterate,
        r.epsilon_claimed
    );
}

#[test]
fn audit_of_the_shipped_mechanism_stays_below_the_claim() {
    for seed in 10..15 {
        let mut c = config(1.0, 10, 1.0, 4000, seed);
        c.confidence = 0.999;
        let r = run_audit(&c).unwrap();
        for t in [&r.every_iterate, &r.final_iterate] {
            assert!(t.epsilon_lb <= r.epsilon_claimed, "seed {seed}: {t:?}");
            assert!(t.epsilon_lb_gdp <= r.epsilon_claimed, "seed {seed}: {t:?}");
        }
        // The size at which the doubled rate is caught.
        let mut c = config(0.5, 10, 2.0, 50_000, seed);
        c.confidence = 0.999;
        let r = run_audit(&c).unwrap();
        for t in [&r.every_iterate, &r.final_iterate] {
            assert!(t.epsilon_lb <= r.epsilon_claimed, "seed {seed}: {t:?}");
        }
    }
}

#[test]
fn audit_is_thread_count_independent() {
    let c = config(0.5, 20, 2.0, 200, 7);
    let a = run_audit(&c).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let b = pool.install(|| run_audit(&c).unwrap());
    assert_eq!(a.every_iterate.epsilon_lb, b.every_iterate.epsilon_lb);
    assert_eq!(a.final_iterate.mu_lb, b.final_iterate.mu_lb);
    assert_eq!(a.every_iterate.threshold, b.every_iterate.threshold);
}

#[test]
fn audit_cli_json_last_line_and_errors() {
    let bin = env!("CARGO_BIN_EXE_dpsgd-lab");
    let out = std::process::Command::new(bin)
        .args([
            "audit",
            "--q",
            "1",
            "--steps",
            "2",
            "--epsilon",
            "2",
            "--trials",
            "200",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let last = stdout.lines().last().unwrap();
    let v: serde_json::Value = serde_json::from_str(last).unwrap();
    assert!(v["every_iterate"]["epsilon_lb_gdp"].as_f64().is_some());
    assert!(v.get("fault").is_none(), "the CLI never runs a fault");
    for bad in [
        vec!["audit", "--q", "1.5", "--steps", "2", "--epsilon", "2"],
        vec![
            "audit",
            "--q",
            "1",
            "--steps",
            "2",
            "--epsilon",
            "2",
            "--trials",
            "3",
        ],
        vec![
            "audit",
            "--q",
            "1",
            "--steps",
            "2",
            "--epsilon",
            "2",
            "--confidence",
            "1",
        ],
    ] {
        let out = std::process::Command::new(bin).args(&bad).output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(
            err.starts_with("error:") && err.trim().lines().count() == 1,
            "{err}"
        );
    }
}
