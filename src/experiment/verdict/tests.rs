//! The verdict's unit tests, across its axes.

use super::super::fit::{Difference, Fit};
use super::super::results::{CellResult, ReplicateResult};
use super::informative::informative;
use super::*;

/// A spec summary whose series have `verdicts` (upper bounds, k = 2, nothing else set).
pub(crate) fn summary_with(verdicts: &[Verdict]) -> SpecSummary {
    let series = verdicts
        .iter()
        .enumerate()
        .map(|(i, v)| SeriesSummary {
            label: format!("k = {i}"),
            k: 2.0,
            role: Role::Upper,
            predicted: 0.5,
            sweep: None,
            decade: None,
            do_nothing_fit: None,
            control: None,
            is_control: false,
            max_ratio: None,
            min_ratio: None,
            bound_cells: (0, 0),
            violations: Vec::new(),
            c_range: (1.0, 1.0),
            tau_range: (1.0, 1.0),
            vacuity: None,
            do_nothing_ratio: None,
            clipped: None,
            clipped_mass: None,
            bias_share: None,
            do_nothing_difference: None,
            lambda_s_range: None,
            relax_phi: None,
            probability: None,
            epsilon_spent: None,
            verdict: v.clone(),
        })
        .collect();
    SpecSummary {
        spec: "s".into(),
        title: String::new(),
        theorem: "6.2".into(),
        schedule: "J.1".into(),
        scale: "quick".into(),
        risk: String::new(),
        series,
        notes: Vec::new(),
    }
}

fn f(lo: f64, hi: f64) -> Fit {
    Fit {
        slope: 0.5 * (lo + hi),
        intercept: 0.0,
        lo,
        hi,
        cells: 5,
        phi_range: (1e-3, 1e-2),
    }
}

#[test]
fn violations_name_exactly_the_violating_series() {
    let fine = upper_verdict(&Some(f(0.4, 0.6)), 0.5, Informative::Yes(0.3), None, None);
    let vac = upper_verdict(
        &Some(f(0.1, 0.2)),
        0.5,
        Informative::Vacuous(3.0),
        None,
        None,
    );
    assert!(violations(&[summary_with(&[fine.clone(), vac])]).is_empty());
    let bad = violations(&[summary_with(&[
        fine,
        Verdict::Violation(vec!["cell 3".into()]),
    ])]);
    assert_eq!(bad, vec!["s k = 1".to_string()]);
}

/// The review's asymmetry: a steep slope under a vacuous bound was "rate consistent"
/// (vacuity demoted only flat slopes). Ablation (b) was 0.50 [0.44, 0.55] against 0.5 with
/// bound / risk0 = 44.8: no rate may be stated.
#[test]
fn a_steep_slope_under_a_vacuous_bound_states_no_rate() {
    let steep = Some(f(0.44, 0.55));
    for inf in [Informative::Vacuous(44.8), Informative::NoBound(2, 5)] {
        let v = upper_verdict(&steep, 0.5, inf, None, None);
        let Verdict::Upper { rate, .. } = &v else {
            panic!("{v}")
        };
        assert_eq!(*rate, None, "{v}");
        assert!(v.to_string().starts_with("no rate claim"), "{v}");
    }
    // The same interval under an informative bound states the rate: consistent with the
    // schedule's exponent (no split: not a heavy-tail test).
    let v = upper_verdict(&steep, 0.5, Informative::Yes(0.4), None, None);
    assert!(
        v.to_string()
            .starts_with("consistent with the schedule's exponent"),
        "{v}"
    );
}

/// Rates come from the interval, not a tolerance: J.1 sharp k = 1.5 was 0.11 [0.09, 0.13]
/// against 0.2 and passed the old 0.1 tolerance.
#[test]
fn the_rate_is_read_from_the_interval() {
    let inf = Informative::Yes(0.5);
    let r = |lo, hi| match upper_verdict(&Some(f(lo, hi)), 0.2, inf, None, None) {
        Verdict::Upper { rate, .. } => rate.unwrap(),
        v => panic!("{v}"),
    };
    assert_eq!(r(0.09, 0.13), Rate::Slower);
    assert_eq!(r(0.15, 0.25), Rate::Attains);
    assert_eq!(r(0.21, 0.3), Rate::Faster);
    assert_eq!(upper_verdict(&None, 0.2, inf, None, None), Verdict::NoFit);
}

/// The do-nothing comparison reads the paired interval of the slope difference: contains 0
/// (half-width <= 0.1): "earns the same"; excludes 0: not, and a lower row says the difference.
#[test]
fn a_verdict_the_do_nothing_risk_earns_says_so() {
    let inf = Informative::Yes(0.5);
    let d = |lo: f64, hi: f64| {
        Some(Difference {
            value: 0.5 * (lo + hi),
            lo,
            hi,
        })
    };
    let v = upper_verdict(&Some(f(0.45, 0.55)), 0.5, inf, d(-0.02, 0.03), None);
    assert!(v.to_string().contains(DO_NOTHING), "{v}");
    let v = upper_verdict(&Some(f(0.45, 0.55)), 0.5, inf, d(0.3, 0.5), None);
    assert!(!v.to_string().contains("do-nothing"), "{v}");
    // Containing 0 but too wide to call the rates the same.
    let v = upper_verdict(&Some(f(0.45, 0.55)), 0.5, inf, d(-0.2, 0.15), None);
    assert!(!v.to_string().contains(DO_NOTHING), "{v}");
    let v = Verdict::Lower {
        rate: LowerRate::Matches,
        predicted: 0.5,
        c_hat: 0.3,
        do_nothing: DoNothing(d(-0.01, 0.02)),
    };
    assert!(v.to_string().contains(DO_NOTHING), "{v}");
}

#[test]
fn informative_needs_every_decade_cell_below_one() {
    let cell = |bound: Option<f64>, risk0: f64| CellResult {
        cell: 0,
        series: 0,
        k: 2.0,
        phi_index: 0,
        phi: 0.1,
        n: 10,
        epsilon: 1.0,
        steps: 10,
        replicates: vec![ReplicateResult {
            risk: 0.1,
            bound,
            c: 1.0,
            tau: 1.0,
            eta: 1.0,
            f_star: 0.0,
            g: 1.0,
            risk0: Some(risk0),
            lambda_s: None,
            clipped: None,
            noise_multiplier: None,
            risk_avg: None,
            clipped_mass: None,
            risk_bias: None,
            risk_noise: None,
        }],
    };
    let (a, b, c) = (cell(Some(0.5), 1.0), cell(Some(2.0), 1.0), cell(None, 1.0));
    assert_eq!(informative(&[&a, &a], &[0, 1]), Informative::Yes(0.5));
    assert_eq!(informative(&[&a, &b], &[0, 1]), Informative::Vacuous(2.0));
    assert_eq!(informative(&[&a, &c], &[0, 1]), Informative::NoBound(1, 2));
}

/// Lower-bound verdicts are read from the interval with no tolerance, as the upper ones are:
/// the review's cases, L.1 k = 4's 0.71 [0.69, 0.74] and I.3 k = 2's control [0.43, 0.47], lie
/// below the lower exponent and must not read "contains" (a planted 0.05 tolerance, the old
/// band, calls both 'matches' and fails here).
#[test]
fn lower_verdicts_are_read_from_the_interval_with_no_tolerance() {
    assert_eq!(lower_verdict(&f(0.69, 0.74), 0.75), LowerRate::Slower);
    assert_eq!(lower_verdict(&f(0.43, 0.47), 0.5), LowerRate::Slower);
    assert_eq!(lower_verdict(&f(0.76, 0.8), 0.75), LowerRate::Faster);
    assert_eq!(lower_verdict(&f(0.96, 1.05), 1.0), LowerRate::Matches);
    assert_eq!(lower_verdict(&f(0.70, 0.75), 0.75), LowerRate::Matches);
    let v = Verdict::Lower {
        rate: lower_verdict(&f(0.69, 0.74), 0.75),
        predicted: 0.75,
        c_hat: 0.45,
        do_nothing: DoNothing(None),
    };
    let text = v.to_string();
    assert!(
        text.starts_with("rate slower than the lower exponent"),
        "{text}"
    );
    assert!(
        !text.contains("contains") && !text.contains("tight"),
        "{text}"
    );
}

/// An interval wider than +-0.1 states no rate, upper or lower: J.1 sharp k = inf's
/// 0.92 [0.67, 1.43] against 1 was printed "attains the bound's rate".
#[test]
fn an_interval_too_wide_states_no_rate() {
    let wide = f(0.67, 1.43);
    assert_eq!(Rate::classify(&wide, 1.0), Rate::TooWide);
    assert_eq!(lower_verdict(&wide, 1.0), LowerRate::TooWide);
    let same = Difference {
        value: 0.0,
        lo: -0.05,
        hi: 0.05,
    };
    let v = upper_verdict(&Some(wide), 1.0, Informative::Yes(0.04), Some(same), None);
    let text = v.to_string();
    assert!(text.starts_with("interval too wide for a rate"), "{text}");
    assert!(
        !text.contains("attains") && !text.contains("do-nothing"),
        "{text}"
    );
    assert_eq!(v.word(), "too wide for a rate");
    // Just under +-0.1 still earns a verdict.
    assert_eq!(Rate::classify(&f(0.91, 1.09), 1.0), Rate::Attains);
}

#[test]
fn relax_phi_extrapolates_the_power_law() {
    // lambda S = 0.01 phi^-1: reaches 3 at phi = 1/300.
    let ls: Vec<(f64, f64)> = [0.1, 0.03, 0.01].iter().map(|&p| (p, 0.01 / p)).collect();
    let p = relax_phi(&ls).unwrap();
    assert!((p - 1.0 / 300.0).abs() < 1e-12);
    // Already relaxed at the smallest phi: nothing to extrapolate.
    let ls: Vec<(f64, f64)> = [0.1, 0.01].iter().map(|&p| (p, 0.1 / p)).collect();
    assert_eq!(relax_phi(&ls), None);
}
