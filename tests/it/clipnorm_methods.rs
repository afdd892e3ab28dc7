//! Issue 16: the clip-norm methods compared with the paper's advice. Every method spends
//! exactly the study's total (epsilon, delta) by the accountant (plus RNMM's pure epsilon where
//! used); adaptive clipping's noise split (Andrew et al. 2021, Theorem 1) and update, and
//! automatic clipping's per-sample factor (Bu et al. 2023), against hand-computed values; the
//! study with methods runs end to end in quick mode, bit-identically for any thread count.

use std::path::PathBuf;

use dpsgd_lab::clipnorm::grid::Group;
use dpsgd_lab::clipnorm::methods::{Method, MethodPlan};
use dpsgd_lab::clipnorm::train::{Adaptive, Rule};
use dpsgd_lab::clipnorm::{
    RunOptions, Study, StudyConfig, StudyOutcome, adaptive_count_share, adaptive_effective_z,
    adaptive_noise_split, count_noise_for_share, run_study,
};
use dpsgd_lab::config::from_toml_str;
use dpsgd_lab::data::Dataset;
use dpsgd_lab::linalg::{axpy, norm2};
use dpsgd_lab::loss::{Loss, PerSampleBound, Scratch, SoftmaxLoss, TanhNet};
use dpsgd_lab::privacy::AccountantKind;
use dpsgd_lab::rng::{Purpose, stream};
use rand_distr::{Distribution, StandardNormal};

const TINY: &str = r#"
name = "tiny_methods"
seed = 5
test_fraction = 0.25

[data]
source = "generated"
n = 400
d = 5
labels = { kind = "multinomial", classes = 3, separable = true }

[train]
batch_size = 50
epochs = 30
epsilons = [2.0, 4.0]

[rnmm]
epsilon = 0.3
grid_size = 50

[methods]
adaptive_count_share = 0.1

[quick]
epochs = 5
runs = 2
learning_rates = [0.1, 1.0]
"#;

fn tiny() -> Study {
    let cfg: StudyConfig = from_toml_str(TINY, "tiny_methods").unwrap();
    cfg.into_study(true).unwrap()
}

fn tmpdir(name: &str) -> PathBuf {
    crate::common::tmpdir(&format!("clipnorm-methods-{name}"))
}

fn run(threads: usize, figure: bool) -> (StudyOutcome, PathBuf) {
    let out = tmpdir(&format!("t{threads}-{figure}"));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let o = pool.install(|| {
        run_study(
            &tiny(),
            &RunOptions {
                out: out.clone(),
                resume: false,
                fresh: false,
                figure,
            },
        )
        .unwrap()
    });
    (o, out)
}

/// |a / b - 1| <= 1e-6: the issue's tolerance on the total epsilon spent.
fn assert_rel(a: f64, b: f64, what: &str) {
    assert!(
        (a / b - 1.0).abs() <= 1e-6,
        "{what}: spent {a} vs budget {b}"
    );
}

#[test]
fn every_method_spends_exactly_the_total_budget() {
    let (o, _) = run(2, false);
    let t = &o.table;
    let study = tiny();
    let spec = study.cfg.methods.clone().unwrap();
    let q = t.batch / t.n_train as f64;
    let steps = t.epochs * t.steps_per_epoch;
    let acc = AccountantKind::parse(&t.accountant).unwrap();
    let eps_of = |z: f64| acc.epsilon(q, steps, z, t.delta).unwrap();
    let zs: Vec<f64> = t.columns.iter().map(|c| c.z).collect();
    let plan = MethodPlan::new(&spec, t.batch, &zs, &t.taus);
    let cells = plan.cells(1, 1);
    for (e, col) in t.columns.iter().enumerate() {
        let eps = col.epsilon;
        // Fixed tau (default tau = 1, every grid tau, hence the oracle): z on sensitivity tau.
        assert_rel(eps_of(col.z), eps, "fixed tau / oracle");
        // Paper: RNMM's pure epsilon plus DP-SGD's epsilon at the remaining budget.
        let r = col.rnmm.as_ref().unwrap();
        assert_rel(0.3 + eps_of(r.z), eps, "paper (RNMM + DP-SGD)");
        assert!((r.dpsgd_epsilon - (eps - 0.3)).abs() < 1e-12);
        // Every record of a fixed-tau method trained with its column's z.
        for rec in o.records.values().filter(|r| r.eps_idx == Some(e)) {
            match rec.group {
                Group::Private
                | Group::DefaultTau
                | Group::Automatic
                | Group::Adaptive
                | Group::AdaptiveShare => {
                    assert_eq!(rec.z, col.z, "{}", rec.key)
                }
                Group::Rnmm => assert_eq!(rec.z, r.z),
                Group::Baseline => unreachable!(),
            }
        }
        // Automatic and adaptive: the noise their training loop actually adds.
        let mut seen = (0, 0, 0);
        for c in cells.iter().filter(|c| c.kind.eps_idx() == Some(e)) {
            match (c.kind.group(), plan.rule(c, col.z)) {
                (Group::Automatic, Some(Rule::Automatic { gamma, z })) => {
                    // Noise sd z on a sum of per-sample terms of norm < 1.
                    let sens = PerSampleBound::Normalize(gamma).sensitivity();
                    assert_eq!(sens, 1.0);
                    assert_rel(eps_of(z / sens), eps, "automatic clipping");
                    seen.0 += 1;
                }
                (Group::Adaptive, Some(Rule::Adaptive(a))) => {
                    // Theorem 1: (sigma_grad, sigma_b) is one Gaussian mechanism with z_eff.
                    let z_eff = adaptive_effective_z(a.sigma_grad, a.sigma_b);
                    assert_rel(eps_of(z_eff), eps, "adaptive clipping");
                    assert!((a.sigma_b - t.batch / 20.0).abs() < 1e-12);
                    seen.1 += 1;
                }
                (Group::AdaptiveShare, Some(Rule::Adaptive(a))) => {
                    // The count-share arm: the same theorem, and the count takes 10 %.
                    let z_eff = adaptive_effective_z(a.sigma_grad, a.sigma_b);
                    assert_rel(eps_of(z_eff), eps, "adaptive clipping, count share");
                    let share = adaptive_count_share(z_eff, a.sigma_b);
                    assert!((share - 0.1).abs() < 1e-12, "count share {share}");
                    seen.2 += 1;
                }
                (Group::DefaultTau, None) => {}
                (g, r) => panic!("unexpected cell {g:?} with rule {r:?}"),
            }
        }
        assert_eq!(
            seen,
            (1, 2, 2),
            "one automatic, two adaptive and two count-share cells per epsilon"
        );
    }
}

#[test]
fn adaptive_split_matches_hand_computed_values_and_refuses_a_small_count_noise() {
    // z = 2, sigma_b = 5: (1/4 - 1/100)^(-1/2) = 0.24^(-1/2) = 2.041241452319315.
    let s = adaptive_noise_split(2.0, 5.0).unwrap();
    assert!((s - 2.041_241_452_319_315).abs() < 1e-14, "{s}");
    // z = 3.865 (digits at eps = 2), sigma_b = 143 / 20 = 7.15:
    // (1/14.938225 - 1/204.49)^(-1/2) = 4.0162... (hand: 0.0669423 - 0.0048902 = 0.0620521).
    let s = adaptive_noise_split(3.865, 7.15).unwrap();
    let hand = (1.0 / (3.865f64 * 3.865) - 1.0 / (14.3f64 * 14.3)).powf(-0.5);
    assert!((s - hand).abs() < 1e-12 && (s - 4.0144).abs() < 1e-3, "{s}");
    // The inverse gives z back.
    assert!((adaptive_effective_z(s, 7.15) - 3.865).abs() < 1e-12);
    // 2 sigma_b must exceed z: wine's b = 14 gives sigma_b = 0.7 against z = 3.83.
    for (z, sb) in [(3.83, 0.7), (2.0, 1.0)] {
        let e = adaptive_noise_split(z, sb).unwrap_err().to_string();
        assert!(
            e.contains("too small") && e.contains("2 sigma_b > z"),
            "{e}"
        );
    }
    assert!(adaptive_noise_split(0.0, 1.0).is_err());
    assert!(adaptive_noise_split(1.0, f64::NAN).is_err());
}

#[test]
fn count_share_matches_hand_computed_values() {
    // breast_cancer at eps = 2 (b = 45, sigma_b = 45 / 20 = 2.25, z = 3.845):
    // z^2 / (2 sigma_b)^2 = 14.784025 / 20.25 = 0.730075...
    let s = adaptive_count_share(3.845, 2.25);
    assert!(
        (s - 14.784_025 / 20.25).abs() < 1e-12 && (s - 0.7301).abs() < 1e-4,
        "{s}"
    );
    // ... and the gradient noise it leaves: (3.845^-2 - 4.5^-2)^(-1/2) = z / sqrt(1 - s) = 7.40.
    let sg = adaptive_noise_split(3.845, 2.25).unwrap();
    assert!((sg - 3.845 / (1.0 - s).sqrt()).abs() < 1e-12 && (sg - 7.40).abs() < 5e-3);
    // digits at eps = 2 (b = 143, sigma_b = 7.15, z = 3.865): 14.938225 / 204.49 = 0.07305.
    let s = adaptive_count_share(3.865, 7.15);
    assert!((s - 0.073_051).abs() < 1e-6, "{s}");
    // wine (sigma_b = 0.7, z = 3.834): the count alone would take 3.834^2 / 1.96 = 7.5 > 1.
    assert!(adaptive_count_share(3.834, 0.7) > 7.4);
    // Share 10 %: sigma_b = z / (2 sqrt 0.1) = 3.845 / 0.632456 = 6.0795; sigma_grad =
    // z / sqrt 0.9 = 4.0530; Theorem 1 gives z back.
    let sb = count_noise_for_share(3.845, 0.1).unwrap();
    assert!((sb - 3.845 / (2.0 * 0.1f64.sqrt())).abs() < 1e-12 && (sb - 6.0795).abs() < 1e-4);
    assert!((adaptive_count_share(3.845, sb) - 0.1).abs() < 1e-12);
    let sg = adaptive_noise_split(3.845, sb).unwrap();
    assert!((sg - 4.0530).abs() < 1e-4, "{sg}");
    assert!((adaptive_effective_z(sg, sb) - 3.845).abs() < 1e-12);
    for (z, share) in [(1.0, 0.0), (1.0, 1.0), (0.0, 0.1), (f64::NAN, 0.1)] {
        assert!(count_noise_for_share(z, share).is_err(), "{z} {share}");
    }
}

#[test]
fn adaptive_update_is_the_geometric_rule_on_the_centred_private_fraction() {
    let a = Adaptive {
        quantile: 0.5,
        lr: 0.2,
        initial: 0.1,
        sigma_b: 2.0,
        sigma_grad: 1.0,
    };
    // 30 of 40 sampled unclipped, b = 40, no noise: b~ = (30 - 20)/40 + 1/2 = 0.75,
    // C' = C exp(-0.2 (0.75 - 0.5)) = C e^-0.05.
    let c = a.next_clip(2.0, 30, 40, 40.0, 0.0);
    assert!((c - 2.0 * (-0.05f64).exp()).abs() < 1e-15, "{c}");
    // Noise xi = 1 adds sigma_b / b = 0.05 to b~: C e^(-0.2 * 0.3).
    let c = a.next_clip(2.0, 30, 40, 40.0, 1.0);
    assert!((c - 2.0 * (-0.06f64).exp()).abs() < 1e-15, "{c}");
    // A realized batch of 44 (E|S| = 40) with 22 unclipped: b~ = 0 / 40 + 1/2 = 1/2, C unchanged.
    assert!((a.next_clip(2.0, 22, 44, 40.0, 0.0) - 2.0).abs() < 1e-15);
    // The private fraction is unbiased: with every norm unclipped, b~ averages 1 over the
    // noise (sd sigma_b / b = 0.05; 4000 draws: 4 standard errors = 0.0032).
    let mut rng = stream(1, 0, Purpose::Other(7));
    let k = 4000;
    let mean: f64 = (0..k)
        .map(|_| {
            let xi: f64 = StandardNormal.sample(&mut rng);
            let c1 = a.next_clip(1.0, 40, 40, 40.0, xi);
            // Invert the update: b~ = 0.5 - ln(C'/C) / 0.2.
            0.5 - c1.ln() / 0.2
        })
        .sum::<f64>()
        / k as f64;
    assert!(
        (mean - 1.0).abs() < 4.0 * 0.05 / (k as f64).sqrt(),
        "{mean}"
    );
}

/// A small data set with `m` classes, standard normal features scaled by `scale`.
fn data(n: usize, d: usize, m: usize, scale: f64) -> Dataset {
    let mut rng = stream(3, m as u64, Purpose::Data);
    let x: Vec<f64> = (0..n * d)
        .map(|_| {
            scale * {
                let v: f64 = StandardNormal.sample(&mut rng);
                v
            }
        })
        .collect();
    let y: Vec<f64> = (0..n).map(|i| (i % m) as f64).collect();
    assert_eq!(y.len(), n);
    Dataset::new(x, y, d).unwrap()
}

/// sum_i g_i / (||g_i|| + gamma) from materialized per-sample gradients.
fn by_hand(loss: &dyn Loss, w: &[f64], data: &Dataset, batch: &[usize], gamma: f64) -> Vec<f64> {
    let p = loss.param_dim();
    let mut out = vec![0.0; p];
    let mut g = vec![0.0; p];
    for &i in batch {
        loss.grad(w, data.row(i), data.y[i], &mut g);
        let n = norm2(&g);
        // Each normalized term has norm n / (n + gamma) < 1 = the sensitivity.
        assert!(n / (n + gamma) < 1.0);
        axpy(1.0 / (n + gamma), &g, &mut out);
    }
    out
}

#[test]
fn automatic_clipping_factor_matches_materialized_gradients_on_every_fast_path() {
    let b = PerSampleBound::Normalize(0.01);
    assert!((b.factor(0.99) - 1.0).abs() < 1e-15);
    assert!((b.factor(4.99) - 0.2).abs() < 1e-15);
    assert_eq!(PerSampleBound::Clip(3.0).factor(6.0), 0.5);
    assert_eq!(PerSampleBound::Clip(3.0).factor(2.0), 1.0);
    // Softmax: m = 3 (direct path), m = 7 (matrix-product path), m = 10 with a large d (the
    // split-batch path); small and large gradients (x scale 0.01 gives norms below 1, where
    // the factor exceeds 1). Tanh network: the layer-wise ghost norms.
    let cases: Vec<(Box<dyn Loss>, Dataset)> = vec![
        (Box::new(SoftmaxLoss::new(4, 3)), data(30, 4, 3, 1.0)),
        (Box::new(SoftmaxLoss::new(4, 3)), data(30, 4, 3, 0.01)),
        (Box::new(SoftmaxLoss::new(6, 7)), data(30, 6, 7, 2.0)),
        (Box::new(SoftmaxLoss::new(500, 10)), data(40, 500, 10, 1.0)),
        (
            Box::new(TanhNet::new(5, 8, 3, None).unwrap()),
            data(30, 5, 3, 1.0),
        ),
    ];
    for (k, (loss, d)) in cases.iter().enumerate() {
        let p = loss.param_dim();
        let mut rng = stream(9, k as u64, Purpose::Init);
        let w: Vec<f64> = (0..p)
            .map(|_| {
                0.3 * {
                    let v: f64 = StandardNormal.sample(&mut rng);
                    v
                }
            })
            .collect();
        let batch: Vec<usize> = (0..d.n).step_by(2).chain([1, 3]).collect();
        let want = by_hand(loss.as_ref(), &w, d, &batch, 0.01);
        let mut got = vec![f64::NAN; p];
        let st = loss.bounded_grad_sum(&w, d.into(), &batch, b, &mut got, &mut Scratch::default());
        assert_eq!(st.count, batch.len());
        let scale = norm2(&want).max(1e-300);
        let err = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(err <= 1e-12 * scale.max(1.0), "case {k}: max error {err}");
        // Clipping through the same entry point is the clipped sum.
        let mut c1 = vec![0.0; p];
        let mut c2 = vec![0.0; p];
        loss.bounded_grad_sum(
            &w,
            d.into(),
            &batch,
            PerSampleBound::Clip(0.5),
            &mut c1,
            &mut Scratch::default(),
        );
        loss.clipped_grad_sum(&w, d, &batch, 0.5, &mut c2, &mut Scratch::default());
        assert_eq!(c1, c2, "case {k}");
    }
}

#[test]
fn study_with_methods_writes_the_comparison_and_is_thread_count_independent() {
    let (a, out) = run(1, true);
    let (b, _) = run(3, false);
    assert_eq!(a.records, b.records);
    assert_eq!(a.methods, b.methods);
    let m = a.methods.as_ref().unwrap();
    let kinds: Vec<Method> = m.rows.iter().map(|r| r.method).collect();
    assert_eq!(
        kinds,
        vec![
            Method::Paper,
            Method::Adaptive { quantile: 0.1 },
            Method::Adaptive { quantile: 0.5 },
            Method::AdaptiveShare {
                quantile: 0.1,
                share: 0.1
            },
            Method::AdaptiveShare {
                quantile: 0.5,
                share: 0.1
            },
            Method::Automatic { gamma: 0.01 },
            Method::DefaultTau { tau: 1.0 },
            Method::Oracle,
        ]
    );
    // tau = 1 lies below G_1 >= sqrt 2, so the grid holds it and its cells are reused.
    assert!(a.records.values().all(|r| r.group != Group::DefaultTau));
    let d = &m.rows[6];
    for (e, c) in d.cells.iter().enumerate() {
        let t = a.table.taus.iter().position(|t| t.tau == 1.0).unwrap();
        assert_eq!(c.entry, a.table.columns[e].entries[t]);
    }
    // Every row has an entry per epsilon; the winner is a deployable method.
    for r in &m.rows {
        assert!(r.cells.iter().all(|c| c.entry.is_some()), "{:?}", r.method);
    }
    assert_eq!(m.winners.len(), 2);
    assert!(
        m.winners
            .iter()
            .all(|w| m.rows[w.row].method != Method::Oracle)
    );
    // Adaptive runs record their final clip norm; the rest do not.
    for r in a.records.values() {
        assert_eq!(
            r.final_clip.is_some(),
            matches!(r.group, Group::Adaptive | Group::AdaptiveShare),
            "{}",
            r.key
        );
    }
    let md = std::fs::read_to_string(out.join("clipnorm_tiny_methods_methods_quick.md")).unwrap();
    for needle in [
        "adaptive quantile, γ = 0.5",
        "automatic",
        "oracle",
        "**",
        "σ_grad",
        "adaptive quantile, γ = 0.5, count 10.0 %",
        "z²/(2σ_b)² = ",
        "the count takes 10.0 % of each step's privacy (σ_b = z/(2√0.1))",
        "Winners:",
    ] {
        assert!(md.contains(needle), "comparison lacks {needle:?}:\n{md}");
    }
    let svg = std::fs::read_to_string(out.join("clipnorm_tiny_methods_methods_quick.svg")).unwrap();
    assert!(svg.contains("adaptive γ=0.1") && svg.contains("test accuracy (%)"));
}

#[test]
fn a_batch_too_small_for_the_count_noise_leaves_adaptive_out_with_the_reason() {
    // b = 4: sigma_b = 0.2, 2 sigma_b = 0.4 < z at eps = 2 and 4.
    let text = TINY.replace("batch_size = 50", "batch_size = 4");
    let cfg: StudyConfig = from_toml_str(&text, "small_batch").unwrap();
    let out = tmpdir("small");
    let o = run_study(
        &cfg.into_study(true).unwrap(),
        &RunOptions {
            out,
            resume: false,
            fresh: false,
            figure: false,
        },
    )
    .unwrap();
    assert!(o.records.values().all(|r| r.group != Group::Adaptive));
    let m = o.methods.unwrap();
    let ad = &m.rows[1];
    assert!(ad.cells.iter().all(|c| c.entry.is_none()));
    assert!(
        ad.cells[0].note.contains("too small") && ad.cells[0].note.contains("would take"),
        "{}",
        ad.cells[0].note
    );
    // The count-share arm exists at any batch size: it runs where the b/20 split does not.
    let sh = &m.rows[3];
    assert!(matches!(sh.method, Method::AdaptiveShare { .. }));
    assert!(sh.cells.iter().all(|c| c.entry.is_some()));
    assert!(o.records.values().any(|r| r.group == Group::AdaptiveShare));
}

#[test]
fn small_clip_norms_print_with_three_significant_digits() {
    use dpsgd_lab::clipnorm::grid::fmt_tau;
    // Adaptive clipping's final C can be far below the grid's 0.1 (the old formatting printed
    // 0.006 as "06" and 0.0004 as "0.").
    for (t, s) in [
        (0.006, "0.006"),
        (0.000_612_3, "0.000612"),
        (0.0004, "0.0004"),
        (0.0612, "0.0612"),
        (0.1, "0.1"),
        (0.134, "0.134"),
        (6.612, "6.61"),
        (17.7, "17.7"),
        (5.0, "5"),
    ] {
        assert_eq!(fmt_tau(t), s, "{t}");
    }
}

#[test]
fn a_count_share_outside_the_open_unit_interval_is_refused_by_the_config() {
    for bad in ["0.0", "1.0", "1.5", "-0.1"] {
        let text = TINY.replace(
            "adaptive_count_share = 0.1",
            &format!("adaptive_count_share = {bad}"),
        );
        let e = from_toml_str::<StudyConfig>(&text, "bad_share")
            .and_then(|c| c.into_study(false))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("methods.adaptive_count_share must lie in (0, 1)"),
            "{bad}: {e}"
        );
    }
}
