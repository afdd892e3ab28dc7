//! Tests across the theorems: exponents, k = inf limits, validation, the DP-SGD config and
//! the slopes of the bounds. Each theorem's hand-computed values are tested in its own file.

use super::*;

pub(super) fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-300)
}

pub(super) fn base() -> TheoryParams {
    TheoryParams {
        k: Some(3.0),
        g: Some(1.0),
        gamma: Some(0.5),
        c: Some(1.0),
        dist0: Some(1.0),
        ..Default::default()
    }
}

#[test]
fn exponents_match_the_paper() {
    let k = 3.0;
    assert_eq!(TheoremId::T5_4.phi_exponent(k), 1.0);
    assert!(rel(TheoremId::I1.phi_exponent(k), 2.0 / 3.0) < 1e-15);
    assert!(rel(TheoremId::J1.phi_exponent(k), 0.5) < 1e-15);
    assert!(rel(TheoremId::K1.phi_exponent(k), 2.0 / 3.0) < 1e-15);
    assert!(rel(TheoremId::N1.phi_exponent(k), 0.8) < 1e-15);
    assert!(rel(TheoremId::L1.phi_exponent(k), 2.0 / 3.0) < 1e-15);
    assert!(rel(TheoremId::I3.phi_exponent(k), 2.0 / 3.0) < 1e-15);
    for id in TheoremId::ALL {
        assert_eq!(id.phi_exponent(f64::INFINITY), 1.0, "{id}: Corollary 6.7");
    }
}

/// Corollary 6.7: k = inf is the limit of each finite-k prescription.
#[test]
fn k_infinity_is_the_limit() {
    let mk = |k: f64| TheoryParams {
        k: Some(k),
        g: Some(1.5),
        gamma: Some(0.3),
        c: Some(0.7),
        dist0: Some(2.0),
        d_w: Some(4.0),
        d_sharp: Some(1.0),
        l: Some(2.0),
        f_gap: Some(1.0),
        c_lower: Some(0.1),
        ..Default::default()
    };
    for id in [
        TheoremId::I1,
        TheoremId::J1,
        TheoremId::K1,
        TheoremId::N1,
        TheoremId::L1,
    ] {
        let inf = prescribe(id, 0.01, &mk(f64::INFINITY)).unwrap();
        let big = prescribe(id, 0.01, &mk(1e9)).unwrap();
        assert!(rel(big.bound.unwrap(), inf.bound.unwrap()) < 1e-6, "{id}");
        // Upper bounds prescribe tau at every k; the lower bound (L.1) prescribes none.
        match (big.tau, inf.tau) {
            (Some(a), Some(b)) => assert!(rel(a, b) < 1e-6, "{id}"),
            (None, None) => assert!(id.is_lower_bound(), "{id}: no tau"),
            other => panic!("{id}: tau at k = 1e9 and k = inf: {other:?}"),
        }
        assert_eq!(inf.phi_exponent, 1.0);
    }
    // J.1 at k = inf, explicitly: tau = G, bound = G{(1/2)(D0^2/C + 4C) sqrt(psi) + (D0+C) psi}.
    let r = prescribe(TheoremId::J1, 0.01, &mk(f64::INFINITY)).unwrap();
    let ps = 2e-4f64;
    assert!(rel(r.tau.unwrap(), 1.5) < 1e-15);
    let want = 1.5 * (0.5 * (4.0 / 0.7 + 2.8) * ps.sqrt() + 2.7 * ps);
    assert!(rel(r.bound.unwrap(), want) < 1e-12);
    assert_eq!(r.probability, 1.0);
}

#[test]
fn bad_parameters_are_errors_naming_the_value() {
    let mut p = base();
    p.k = Some(1.0);
    let e = prescribe(TheoremId::J1, 0.01, &p).unwrap_err().to_string();
    assert!(e.contains("k must be > 1") && e.contains("1"), "{e}");
    p = base();
    p.gamma = Some(1.5);
    assert!(
        prescribe(TheoremId::J1, 0.01, &p)
            .unwrap_err()
            .to_string()
            .contains("1.5")
    );
    let e = prescribe(TheoremId::J1, 1.2, &base())
        .unwrap_err()
        .to_string();
    assert!(e.contains("phi") && e.contains("1.2"), "{e}");
    p = base();
    p.steps = Some(50.0);
    assert!(
        prescribe(TheoremId::T6_2, 0.01, &p)
            .unwrap_err()
            .to_string()
            .contains("fixes T")
    );
    assert!("Q.7".parse::<TheoremId>().is_err());
    assert_eq!("j.1".parse::<TheoremId>().unwrap(), TheoremId::J1);
}

#[test]
fn dpsgd_config_carries_the_schedule_and_checks_phi() {
    let inp = PhiInputs {
        n: 20_000.0,
        d: 5.0,
        epsilon: 2.0,
        delta: 1e-5,
        nu: 1.0,
    };
    let ph = phi_of(&inp).unwrap();
    let r = prescribe(TheoremId::J1, ph, &base()).unwrap();
    let cfg = r.dpsgd_config(&inp, 64.0, Projection::None).unwrap();
    assert_eq!(cfg.steps as u64, r.steps.unwrap());
    assert_eq!(cfg.clip_norm, StepSchedule::Constant(r.tau.unwrap()));
    assert_eq!(cfg.learning_rate, StepSchedule::Constant(r.eta.unwrap()));
    let alg = crate::dpsgd::DpSgd::new(cfg, 20_000, None);
    assert!(alg.is_ok(), "{:?}", alg.err());
    let mut other = inp;
    other.epsilon = 3.0;
    assert!(
        r.dpsgd_config(&other, 64.0, Projection::None)
            .unwrap_err()
            .to_string()
            .contains("phi")
    );
    assert!(r.dpsgd_config(&inp, 0.5, Projection::None).is_err());
}

/// The log-log slope of each bound in phi (main-text T) tends to the predicted exponent.
/// H.1 with Delta(w*) = 0 (term (B) does not vanish with phi); J.1's second term is
/// phi^(2e), so its slope is e plus an exactly computable correction of order phi^e.
#[test]
fn bound_slopes_match_predicted_exponents() {
    let p = |k: f64| TheoryParams {
        k: Some(k),
        g: Some(1.3),
        gamma: Some(0.2),
        c: Some(0.8),
        dist0: Some(1.5),
        d_w: Some(2.0),
        d_sharp: Some(0.5),
        l: Some(3.0),
        f_gap: Some(2.0),
        g_n: Some(4.0),
        alpha: Some(1.7),
        delta_star: Some(0.0),
        tau: Some(1.0),
        c_lower: Some(0.05),
        steps: None,
    };
    for k in [1.5, 2.0, 3.0, 7.0, f64::INFINITY] {
        for id in [
            TheoremId::T5_4,
            TheoremId::I1,
            TheoremId::T6_2,
            TheoremId::T6_5,
            TheoremId::T6_8,
            TheoremId::T6_6,
            TheoremId::I3,
        ] {
            // T = phi^-2 is an exact integer at phi = 1e-3 and 1e-4; 1/(3 phi^2) is not,
            // and its rounding changes psi by ~1e-7 relative: far below the tolerance.
            let (a, b) = (1e-3, 1e-4);
            let (ra, rb) = (
                prescribe(id, a, &p(k)).unwrap(),
                prescribe(id, b, &p(k)).unwrap(),
            );
            let slope = (ra.bound.unwrap() / rb.bound.unwrap()).ln() / (a / b).ln();
            let e = id.phi_exponent(k);
            // J.1: bound = t1 (1 + t2/t1) with t1 ~ phi^e and t2/t1 ~ phi^e, so the slope
            // is exactly e + ln((1 + r_a)/(1 + r_b)) / ln(a/b), r = t2/t1.
            let want = if id == TheoremId::T6_2 {
                let r = |x: &Prescription| x.terms[1].value / x.terms[0].value;
                e + ((1.0 + r(&ra)) / (1.0 + r(&rb))).ln() / (a / b).ln()
            } else {
                e
            };
            assert!(
                (slope - want).abs() < 1e-6,
                "{id} at k = {k}: slope {slope}, exponent {e}, expected {want}"
            );
        }
    }
}

#[test]
fn round_steps_keeps_exact_integers() {
    assert_eq!(round_steps(1.0 / (0.01f64 * 0.01)), 10_000);
    assert_eq!(round_steps(3333.3333), 3334);
}

/// A fixed clip norm (the ablation) keeps T and psi, takes tau as given, applies the theorem's
/// eta formula at that tau (bit for bit the formula the runner used to apply after the fact), and
/// has no bound; the theorem's clip rule is unchanged.
#[test]
fn fixed_clip_norm_applies_the_eta_formula_at_that_tau() {
    let p = TheoryParams {
        l: Some(2.0),
        f_gap: Some(1.0),
        ..base()
    };
    for id in [TheoremId::J1, TheoremId::K1, TheoremId::N1] {
        let theorem = prescribe(id, 0.01, &p).unwrap();
        let fixed = prescribe_with_clip(id, 0.01, &p, ClipNorm::Fixed(0.3)).unwrap();
        let s = fixed.run_schedule().unwrap();
        let t = s.steps as f64;
        let eta = if id == TheoremId::N1 {
            bounds::n1_eta(1.0, t, 0.3, 2.0, s.psi)
        } else {
            bounds::eta_convex(1.0, t, 0.3, s.psi)
        };
        assert_eq!(
            (fixed.steps, fixed.psi),
            (theorem.steps, theorem.psi),
            "{id}"
        );
        assert_eq!((s.tau, s.eta.to_bits()), (0.3, eta.to_bits()), "{id}");
        assert_eq!(fixed.bound, None, "{id}");
        assert_ne!(theorem.tau, Some(0.3), "{id}");
        let again = prescribe_with_clip(id, 0.01, &p, ClipNorm::Theorem).unwrap();
        assert_eq!(again, theorem, "{id}");
    }
    // A lower bound prescribes no schedule: an error, not a panic.
    let lower = prescribe(TheoremId::L1, 0.01, &base()).unwrap();
    assert!(lower.run_schedule().is_err());
}
