//! `StepSchedule`: the power decay v_t = initial / (t + 1)^power, its validation, and the
//! deserializer's messages for values that are not a schedule.

use dpsgd_lab::config::from_toml_str;
use dpsgd_lab::dpsgd::StepSchedule;

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Wrap {
    lr: StepSchedule,
}

fn parse(value: &str) -> Result<StepSchedule, String> {
    from_toml_str::<Wrap>(&format!("lr = {value}\n"), "schedule.toml")
        .map(|w| w.lr)
        .map_err(|e| e.to_string())
}

#[test]
fn power_schedule_decays_as_initial_over_t_plus_1_to_the_power() {
    let s = parse("{ initial = 2.0, power = 0.5 }").unwrap();
    assert_eq!(
        s,
        StepSchedule::Power {
            initial: 2.0,
            power: 0.5
        }
    );
    // (t + 1)^0.5 is exact at perfect squares, so these values are exact.
    assert_eq!(s.at(0), 2.0);
    assert_eq!(s.at(3), 1.0);
    assert_eq!(s.at(15), 0.5);
    // Elsewhere within one rounding of each operation of the definition.
    for t in [1usize, 7, 99, 12_345] {
        let want = 2.0 / ((t + 1) as f64).sqrt();
        assert!(
            (s.at(t) - want).abs() <= 4.0 * f64::EPSILON * want,
            "t = {t}"
        );
    }
    // Decreasing, so its maximum over any horizon is v_0.
    assert!((1..1000).all(|t| s.at(t) < s.at(t - 1)));
    assert_eq!(s.max_over(1000), 2.0);
    // power = 0 is the constant schedule; power = 1 is initial / (t + 1).
    let flat = StepSchedule::Power {
        initial: 0.3,
        power: 0.0,
    };
    assert!((0..50).all(|t| flat.at(t) == 0.3));
    let harmonic = StepSchedule::Power {
        initial: 1.0,
        power: 1.0,
    };
    assert_eq!(harmonic.at(4), 0.2);
    assert!(s.validate("learning_rate", 100).is_ok());
}

#[test]
fn power_schedule_validation_names_the_bad_parameter() {
    for (initial, power) in [
        (0.0, 0.5),
        (-1.0, 0.5),
        (f64::NAN, 0.5),
        (1.0, -0.5),
        (1.0, f64::INFINITY),
    ] {
        let e = StepSchedule::Power { initial, power }
            .validate("clip_norm", 10)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("clip_norm power schedule needs initial > 0 and power >= 0")
                && e.contains(&format!("initial = {initial}, power = {power}")),
            "{e}"
        );
    }
}

#[test]
fn values_that_are_not_a_schedule_get_the_accepted_forms() {
    let forms = "expected a number (e.g. 0.5), { values = [...] } or { initial = .., power = .. }";
    let e = parse("\"fast\"").unwrap_err();
    assert!(
        e.contains("\"fast\" is not a schedule") && e.contains(forms),
        "{e}"
    );
    for bad in [
        "[0.1, 0.2]",
        "{ initial = 1.0 }",
        "{ power = 0.5, initial = \"x\" }",
        "true",
    ] {
        let e = parse(bad).unwrap_err();
        assert!(
            e.contains("not a schedule") && e.contains(forms),
            "{bad}: {e}"
        );
    }
    // The three accepted forms.
    assert_eq!(parse("0.5").unwrap(), StepSchedule::Constant(0.5));
    assert_eq!(
        parse("{ values = [0.1, 0.2] }").unwrap(),
        StepSchedule::Values {
            values: vec![0.1, 0.2]
        }
    );
    assert!(matches!(
        parse("{ initial = 1.0, power = 1.0 }").unwrap(),
        StepSchedule::Power { .. }
    ));
}
