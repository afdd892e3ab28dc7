//! The heavy-tail binding families: the `two_point` weight law (Assumption 6.1 met with equality, its
//! heavy atom at tail x tau(phi)) and the sharp-loss generator that moves its heavy rows to their
//! own center. Fixed seeds; each tolerance is derived next to it.

use dpsgd_lab::config::exact_lipschitz_k_norm;
use dpsgd_lab::data::generator::{Direction, GeneratorSpec, LabelModel};
use dpsgd_lab::data::radial::{LawSpec, RadialLaw, RadialSpec, two_point_atoms};
use dpsgd_lab::loss::LossSpec;
use dpsgd_lab::rng::{Purpose, stream};
use rand::RngExt;

/// The spec files' parameters (tail = k/(k-1), balance a quarter of the way from 1/tail to 1),
/// with a J.1-like exponent 1/(k+1) and a K.1-like one 1/(2k), at two phi.
fn cases() -> Vec<(f64, f64, f64, f64, f64, f64, f64)> {
    let mut out = Vec::new();
    for k in [1.5, 2.0, 3.0, 5.0] {
        let tail = k / (k - 1.0);
        let balance = 1.0 / tail + 0.25 * (1.0 - 1.0 / tail);
        for (scale, exponent) in [(0.9f64.powf(-1.0 / k), 1.0 / (k + 1.0)), (1.0, 0.5 / k)] {
            for phi in [0.1, 0.002] {
                out.push((k, tail, scale, exponent, balance, phi, 1.7));
            }
        }
    }
    out
}

/// Assumption 6.1 with equality: (1 - p) a^k + p h^k = G^k; the heavy atom at
/// tail G scale psi^(-exponent) with psi = 2 phi^2; (1 - p) a = balance p h. All three are
/// closed-form identities of the bisection's root, so they hold to rounding: 1e-12 relative
/// (the bisection stops at the last bit of p, and a^k, h^k carry a few ulps each).
#[test]
fn two_point_atoms_meet_assumption_6_1_with_equality() {
    for (k, tail, scale, exponent, balance, phi, g) in cases() {
        let (p, a, h) = two_point_atoms((tail, scale, exponent, balance), k, g, phi).unwrap();
        let what = format!("k = {k}, phi = {phi}, exponent = {exponent}");
        let moment = (1.0 - p) * a.powf(k) + p * h.powf(k);
        assert!(
            (moment / g.powf(k) - 1.0).abs() < 1e-12,
            "{what}: E a^k = {moment} != G^k"
        );
        let want_h = tail * scale * g * (2.0 * phi * phi).powf(-exponent);
        assert!(
            (h / want_h - 1.0).abs() < 1e-12,
            "{what}: h = {h}, want {want_h}"
        );
        let light = (1.0 - p) * a;
        assert!(
            (light / (balance * p * h) - 1.0).abs() < 1e-12,
            "{what}: light mass {light} != balance p h"
        );
        assert!(0.0 < p && a < h, "{what}: p = {p}, a = {a}, h = {h}");
        // The built law: its scale is the light atom, its closed-form k-norm is G, and the
        // heavy threshold separates the atoms.
        let law = RadialSpec {
            k,
            g,
            law: LawSpec::TwoPoint {
                tail,
                scale,
                exponent,
                balance,
                phi: Some(phi),
            },
        }
        .build(1)
        .unwrap();
        assert!(
            (law.scale() / a - 1.0).abs() < 1e-12,
            "{what}: scale {}",
            law.scale()
        );
        assert!((law.k_norm() / g - 1.0).abs() < 1e-12, "{what}");
        let cut = law.heavy_threshold().unwrap();
        assert!(a < cut && cut < h, "{what}: threshold {cut}");
    }
    // Out of range: a tail so low that the light atom would reach the heavy one, and k = inf.
    assert!(two_point_atoms((0.01, 1.0, 0.0, 0.5), 2.0, 1.0, 0.1).is_err());
    assert!(two_point_atoms((2.0, 1.0, 0.25, 0.6), f64::INFINITY, 1.0, 0.1).is_err());
}

/// The generator: every weight is one of the two atoms, heavy rows sit at heavy_center and light
/// rows at center (spread 0), the empirical k-th moment matches G^k within 4 standard errors (the
/// SE from the closed form, sqrt((E a^2k - G^2k) / n): a correct law fails with probability 6e-5),
/// the heavy fraction matches p within 4 SE (sqrt(p (1 - p) / n)), and the sharp loss's gradient
/// at random points has norm exactly a_i (G_i = a_i, Appendix E; 1e-12 relative for the rounding
/// of a (w - c) / |w - c|), so (E G_i^k)^(1/k) = G is the loss's Assumption 6.1 constant.
#[test]
fn two_point_sharp_family_is_inside_assumption_6_1() {
    let (k, g, phi) = (2.0, 1.3, 0.01);
    let law_spec = LawSpec::TwoPoint {
        tail: 2.0,
        scale: 1.0,
        exponent: 0.25,
        balance: 0.625,
        phi: Some(phi),
    };
    let spec = GeneratorSpec {
        n: 200_000,
        d: 2,
        radial: Some(RadialSpec {
            k,
            g,
            law: law_spec.clone(),
        }),
        direction: Direction::Sphere,
        labels: LabelModel::SharpCenters {
            spread: 0.0,
            center: Some(vec![0.5, -0.25]),
            heavy_center: Some(vec![0.0, 1.0]),
        },
    };
    let (p, a, h) = two_point_atoms((2.0, 1.0, 0.25, 0.625), k, g, phi).unwrap();
    let data = spec.generate(&mut stream(5757, 0, Purpose::Data)).unwrap();
    let built = spec.radial_law().unwrap();
    // The draws are scale x 1 and scale x ratio: the atoms a and h up to the scale's rounding.
    let cut = built.heavy_threshold().unwrap();
    let n = data.n as f64;
    let mut heavy = 0usize;
    for i in 0..data.n {
        let (row, w) = (data.row(i), data.y[i]);
        if w > cut {
            heavy += 1;
            assert!(
                (w / h - 1.0).abs() < 1e-12,
                "row {i}: heavy weight {w} != h = {h}"
            );
            assert_eq!(row, &[0.0, 1.0], "heavy row {i} is not at heavy_center");
        } else {
            assert!(
                (w / a - 1.0).abs() < 1e-12,
                "row {i}: light weight {w} != a = {a}"
            );
            assert_eq!(row, &[0.5, -0.25], "light row {i} is not at center");
        }
    }
    let se_p = (p * (1.0 - p) / n).sqrt();
    assert!(
        (heavy as f64 / n - p).abs() <= 4.0 * se_p,
        "heavy fraction {} vs p = {p} (4 SE = {})",
        heavy as f64 / n,
        4.0 * se_p
    );
    let law = spec.check().unwrap();
    let emp = data.y.iter().map(|w| w.powf(k)).sum::<f64>() / n;
    let se = ((law.moment(2.0 * k).unwrap() - g.powf(2.0 * k)) / n).sqrt();
    assert!(
        (emp - g.powf(k)).abs() <= 4.0 * se,
        "mean a^k = {emp} vs G^k = {} (4 SE = {})",
        g.powf(k),
        4.0 * se
    );
    assert_eq!(
        exact_lipschitz_k_norm(&spec, &LossSpec::Sharp).unwrap(),
        Some(g)
    );
    let loss = LossSpec::Sharp.build(&data).unwrap();
    let mut rng = stream(5758, 0, Purpose::Other(1));
    let mut grad = [0.0; 2];
    for t in 0..2000 {
        let i = rng.random_range(0..data.n);
        let w = [
            4.0 * rng.random::<f64>() - 2.0,
            4.0 * rng.random::<f64>() - 2.0,
        ];
        loss.grad(&w, data.row(i), data.y[i], &mut grad);
        let norm = (grad[0] * grad[0] + grad[1] * grad[1]).sqrt();
        assert!(
            (norm / data.y[i] - 1.0).abs() < 1e-12,
            "draw {t}: |grad f_{i}| = {norm} != a_i = {}",
            data.y[i]
        );
        assert_eq!(loss.lipschitz(data.row(i), data.y[i]), Some(data.y[i]));
    }
    // The bounded-data control (point mass): no heavy atom, every row at center.
    let mut control = spec.clone();
    control.radial.as_mut().unwrap().law = LawSpec::PointMass;
    let c = control
        .generate(&mut stream(5757, 0, Purpose::Data))
        .unwrap();
    assert!((0..c.n).all(|i| c.row(i) == [0.5, -0.25] && c.y[i] == g));
    // Without its sweep phi the law validates but refuses to draw.
    let mut bare = spec;
    bare.radial.as_mut().unwrap().law = LawSpec::TwoPoint {
        tail: 2.0,
        scale: 1.0,
        exponent: 0.25,
        balance: 0.625,
        phi: None,
    };
    assert!(bare.check().is_ok());
    let e = bare.generate(&mut stream(1, 0, Purpose::Data)).unwrap_err();
    assert!(e.to_string().contains("moves with phi"), "{e}");
}

/// Every spec of `simulations/heavy/` validates at both scales, and at its quick grid's largest
/// phi one replicate of its heavy series (T = 101) puts the heavy atom at tail x the run's own
/// tau: h / tau = tail up to the runner's rounding of T (psi = 1/T + phi^2 against 2 phi^2 at
/// T = round(phi^-2), a relative 1e-2 at most at T = 101, to the power exponent <= 0.4), and
/// clips (clipped fraction > 0); its control has no row above tau.
#[test]
fn heavy_specs_put_their_tail_at_the_theorems_clip_norm() {
    use dpsgd_lab::experiment::replicate::{build_data_at, run_replicate, sweep_point};
    use dpsgd_lab::experiment::{Scale, Spec};
    let dir = std::path::Path::new(crate::common::ROOT).join("simulations/heavy");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        Spec::load(&path, Scale::Full).unwrap();
        let spec = Spec::load(&path, Scale::Quick).unwrap();
        let name = spec.raw.name.clone();
        let Some(LawSpec::TwoPoint { tail, .. }) = spec.series[0].law.clone() else {
            panic!("{name}: series 0 has no two_point law");
        };
        let point = sweep_point(&spec, 0).unwrap();
        let (rep, _) = run_replicate(&spec, 0, &point, 0).unwrap();
        let data = build_data_at(&spec, 0, (point.n, Some(point.phi)), 0).unwrap();
        let h = data.y.iter().cloned().fold(0.0f64, f64::max);
        assert!(
            (h / rep.tau / tail - 1.0).abs() < 1e-2,
            "{name}: h = {h}, tau = {}, h / tau = {} != tail = {tail}",
            rep.tau,
            h / rep.tau
        );
        assert!(rep.clipped.unwrap() > 0.0, "{name}: nothing clipped");
        let c = spec.control(0).unwrap();
        let control = build_data_at(&spec, c, (point.n, Some(point.phi)), 0).unwrap();
        assert!(
            control.y.iter().all(|&a| a < rep.tau),
            "{name}: control clips"
        );
        seen += 1;
    }
    assert_eq!(seen, 12, "simulations/heavy/ holds 12 specs");
}
