//! The clip-norm law experiment (`cliplaw`) end to end at the shipped quick scale: the plateau
//! it reports is where the theory puts it, the noise meets the stated budget, the lower bound
//! is not beaten, and the runner's contracts (shards, merge, bad input) hold for sweeps too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dpsgd_lab::experiment::cliplaw::analysis::{CliplawSummary, Minimum};
use dpsgd_lab::experiment::cliplaw::{self, Arm};
use dpsgd_lab::experiment::{self, CellResult, RunOptions, Scale, Spec};
use dpsgd_lab::privacy::{AccountantKind, RdpAccountant, calibrate_noise};

use crate::common::{ROOT, assert_one_line_error, cli, tmpdir};

fn shipped(name: &str) -> PathBuf {
    Path::new(ROOT)
        .join("simulations/cliplaw")
        .join(format!("{name}.toml"))
}

/// Runs a shipped sweep at quick scale in a fresh folder (from the repository root, where the
/// CSV paths are relative to).
fn quick(name: &str) -> (Spec, BTreeMap<usize, CellResult>, CliplawSummary) {
    let spec = Spec::load(&shipped(name), Scale::Quick).unwrap();
    let out = tmpdir(&format!("cliplaw-{name}"));
    let cells = experiment::run(
        &spec,
        &RunOptions {
            out: out.clone(),
            resume: false,
            fresh: true,
            shard: None,
            progress: false,
            stop_after: None,
            force: false,
        },
    )
    .unwrap();
    let summary = cliplaw::finalize(&spec, &cells, &out, None).unwrap();
    (spec, cells, summary)
}

#[test]
fn every_shipped_sweep_validates_at_both_scales() {
    let dir = Path::new(ROOT).join("simulations/cliplaw");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            for scale in [Scale::Quick, Scale::Full] {
                let s = Spec::load(&p, scale).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                let cs = s.raw.clip_sweep.as_ref().expect("a sweep");
                assert!(cs.points >= cliplaw::MIN_POINTS);
            }
            n += 1;
        }
    }
    assert!(
        n >= 4,
        "the issue's instances: Appendix L, apart, symmetric, a real data set"
    );
}

/// On Q_v every nonzero sample is x = p^(-1/k) v (||v|| = sqrt(d/2) = 4, p = 2 phi / sqrt(nu)),
/// with gradient norm in [||x||, 3 ||x||] and exactly ||x|| inside the unit ball, where the run
/// starts (w0 = 0). So every tau <= ||x|| clips every sampled gradient and, with eta tau fixed
/// and common random numbers, gives the same run, while a tau above ||x|| does not: the
/// reported plateau edge must bracket ||x|| at every phi and k. Planted bug (arms keyed by
/// their own series index instead of their declared series): no plateau is found.
#[test]
fn appendix_l_plateau_edge_brackets_the_sample_norm() {
    let (_, _, s) = quick("cliplaw_appendix_l");
    for g in &s.groups {
        for c in &g.curves {
            let p = 2.0 * c.phi;
            let x = 4.0 * p.powf(-1.0 / g.k);
            let pl = c
                .plateau
                .unwrap_or_else(|| panic!("{} phi {}: no plateau", g.label, c.phi));
            assert!(
                pl.edge.0 <= x && x < pl.edge.1,
                "{} phi {}: edge {:?} does not bracket ||x|| = {x}",
                g.label,
                c.phi,
                pl.edge
            );
            // Clipping every sample is best here: the rest of the curve lies above.
            assert_eq!(c.minimum, Minimum::Plateau, "{} phi {}", g.label, c.phi);
        }
        // K.1's tau = G psi^(-1/(2k)) with psi = 1/T + phi^2 ~ 2 phi^2: slope -1/k (T is rounded
        // up to an integer, hence the 0.01).
        let e = g.tau_exponent.unwrap();
        assert!((e + 1.0 / g.k).abs() < 0.01, "{}: {e}", g.label);
        // Thm 6.6: no clip norm beats phi^(1 - 1/k).
        assert!(!g.beats_lower_bound, "{}: {:?}", g.label, g.risk_law);
    }
}

/// The bounded control (every a_i = G = 1): every tau < 1 clips every sample and gives the
/// same run, tau = max G_i = 1 is the same run too (factor tau / ||g|| = 1), so the uniform /
/// best ratio is 1 and the edge brackets 1 at every phi: tau* does not move with phi.
#[test]
fn bounded_control_plateau_sits_at_g() {
    let (_, _, s) = quick("cliplaw_sharp_symmetric");
    let g = s.groups.iter().find(|g| g.k.is_infinite()).unwrap();
    for c in &g.curves {
        let pl = c.plateau.expect("a plateau");
        assert!(pl.edge.0 <= 1.0 && 1.0 < pl.edge.1, "{:?}", pl.edge);
        assert!((c.uniform_tau - 1.0).abs() < 1e-12);
        assert!((c.ratio.value - 1.0).abs() < 1e-6, "{:?}", c.ratio);
    }
}

/// Every arm's noise multiplier is the accountant's calibration for its cell (q = b/n, T,
/// epsilon, delta), and the RDP epsilon at that z meets the cell's epsilon: the sweep is
/// (epsilon, delta)-DP as stated, so Thm 6.6 applies.
#[test]
fn noise_is_calibrated_to_the_stated_budget() {
    let (spec, cells, _) = quick("cliplaw_sharp_apart");
    let delta = spec.raw.privacy.delta;
    let mut checked = 0;
    for c in cells.values() {
        let arm = spec.series[c.series].sweep.unwrap().arm;
        if !matches!(arm, Arm::Grid(0) | Arm::Uniform | Arm::Schedule) {
            continue;
        }
        let q = spec.raw.batch_size / c.n as f64;
        let z = c.replicates[0].noise_multiplier.expect("a calibrated z");
        let want =
            calibrate_noise(AccountantKind::Rdp, q, c.steps as usize, c.epsilon, delta).unwrap();
        assert_eq!(z, want);
        let eps = RdpAccountant::default()
            .epsilon(q, c.steps as usize, z, delta)
            .unwrap()
            .epsilon;
        assert!(eps <= c.epsilon * (1.0 + 1e-9), "{eps} > {}", c.epsilon);
        checked += 1;
    }
    assert!(checked >= 9);
}

/// Shards merged give byte for byte what one run writes, and `cliplaw` writes its report and
/// three figures (PNG and SVG) per sweep.
#[test]
fn sharded_sweep_merges_to_the_unsharded_summary() {
    let spec = shipped("cliplaw_appendix_l");
    let spec = spec.to_str().unwrap();
    let dir = tmpdir("cliplaw-shards");
    let one = dir.join("one");
    let sh = dir.join("sharded");
    let o = one.to_str().unwrap();
    let s = sh.to_str().unwrap();
    assert!(cli(["run", spec, "--out", o, "--quiet"]).success());
    // `run` twice in a row: the rerun reuses every cell (one line says so) and writes the same.
    let files = ["results.jsonl", "summary.json", "report.md"];
    let written: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(one.join(f)).unwrap())
        .collect();
    let again = cli(["run", spec, "--out", o, "--quiet"]);
    assert!(again.success(), "{again:?}");
    assert_eq!(
        again.stderr.matches("reusing").count(),
        1,
        "{}",
        again.stderr
    );
    for (f, w) in files.iter().zip(&written) {
        assert_eq!(&std::fs::read(one.join(f)).unwrap(), w, "rerun changed {f}");
    }
    for i in ["1/2", "2/2"] {
        let r = cli(["run", spec, "--out", s, "--quiet", "--shard", i]);
        assert!(r.success(), "{r:?}");
    }
    let m = cli(["merge", spec, "--out", s]);
    assert!(m.success(), "{m:?}");
    for f in ["results.jsonl", "summary.json", "report.md"] {
        assert_eq!(
            std::fs::read(one.join(f)).unwrap(),
            std::fs::read(sh.join(f)).unwrap(),
            "{f}"
        );
    }
    let all = dir.join("all");
    let r = cli([
        "cliplaw",
        "--only",
        "appendix_l",
        "--out",
        all.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(r.success(), "{r:?}");
    assert!(r.stdout.contains("lower bound"), "{}", r.stdout);
    // The default output fits 120 columns (these rows ran to 190), states the exponents' unit,
    // and `--wide` prints the same words with every row whole.
    // (The `wrote` line holds the folder this test named, a long temporary path.)
    let wide: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.chars().count() > 120 && !l.starts_with("wrote "))
        .collect();
    assert!(wide.is_empty(), "lines over 120 columns: {wide:?}");
    assert!(r.stdout.contains("slopes against phi"), "{}", r.stdout);
    let w = cli([
        "cliplaw",
        "--only",
        "appendix_l",
        "--out",
        all.to_str().unwrap(),
        "--quiet",
        "--wide",
    ]);
    assert!(w.success(), "{w:?}");
    assert!(
        w.stdout.lines().any(|l| l.chars().count() > 120),
        "{}",
        w.stdout
    );
    let words = |t: &str| -> Vec<String> {
        t.lines()
            .take_while(|l| !l.starts_with("wrote "))
            .flat_map(str::split_whitespace)
            .map(str::to_string)
            .collect()
    };
    assert_eq!(words(&w.stdout), words(&r.stdout));
    // Verdicts in words, not enum names.
    for name in ["Agrees", "Differs", "TooWide", "NoPrediction"] {
        assert!(!r.stdout.contains(name), "{name}: {}", r.stdout);
    }
    for kind in ["curves", "tau", "risk"] {
        for ext in ["png", "svg"] {
            let f = all.join(format!("plots/cliplaw_appendix_l_{kind}.{ext}"));
            assert!(
                std::fs::metadata(&f).unwrap().len() > 1000,
                "{}",
                f.display()
            );
        }
    }
    assert!(all.join("report.md").exists());
    // `cliplaw` twice in a row: exit 0, the same table, every cell reused.
    let again = cli([
        "cliplaw",
        "--only",
        "appendix_l",
        "--out",
        all.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(again.success(), "{again:?}");
    assert!(again.stderr.contains("reusing"), "{}", again.stderr);
    let table = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with("wrote "))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(table(&again.stdout), table(&r.stdout));
}

/// A coarse grid, and a huge one (`points = 1e8` aborted on a 9 GB allocation), are one clear
/// error each, before any work.
#[test]
fn a_coarse_or_huge_grid_is_one_clear_error() {
    for points in ["5", "100000000"] {
        let text = std::fs::read_to_string(shipped("cliplaw_sharp_symmetric"))
            .unwrap()
            .replace("points = 49", &format!("points = {points}"));
        let dir = tmpdir(&format!("cliplaw-bad-{points}"));
        let f = dir.join("bad.toml");
        std::fs::write(&f, text).unwrap();
        let out = cli(["run", f.to_str().unwrap(), "--out", dir.to_str().unwrap()]);
        assert_one_line_error(&out, "clip_sweep.points must be in 12..=1000");
    }
}

/// The central contrast at the quick scale. With the heavy samples' centers apart (the
/// clipping bias does not cancel) the best clip norm is interior and grows as phi shrinks: at
/// k = 1.5 and 2, tau* at the smallest phi lies above tau* at the largest, their 95% paired
/// bootstrap intervals disjoint, and clipping at max G_i costs risk (the ratio's interval lies
/// above 1). With symmetric tails the best is the clip-everything plateau at every phi for
/// k = 2 and 3 (the edge does not move). Planted bug (clipping made a no-op in the per-sample
/// factor): the apart curves lose their interior minimum and this test fails.
#[test]
fn biased_heavy_tails_move_tau_star_and_symmetric_ones_do_not() {
    let (_, _, apart) = quick("cliplaw_sharp_apart");
    for k in [1.5, 2.0] {
        let g = apart.groups.iter().find(|g| g.k == k).unwrap();
        let (first, last) = (&g.curves[0], g.curves.last().unwrap());
        assert!(first.phi > last.phi);
        let (
            Minimum::Interior {
                tau: t0, hi: h0, ..
            },
            Minimum::Interior {
                tau: t1, lo: l1, ..
            },
        ) = (first.minimum, last.minimum)
        else {
            panic!("k = {k}: {:?} / {:?}", first.minimum, last.minimum);
        };
        assert!(
            t1 > t0 && l1 > h0,
            "k = {k}: tau* {t0} (hi {h0}) -> {t1} (lo {l1})"
        );
        for c in &g.curves {
            assert!(c.ratio.lo > 1.0, "k = {k}, phi {}: {:?}", c.phi, c.ratio);
        }
    }
    let (_, _, sym) = quick("cliplaw_sharp_symmetric");
    for k in [2.0, 3.0] {
        let g = sym.groups.iter().find(|g| g.k == k).unwrap();
        let edges: Vec<_> = g
            .curves
            .iter()
            .map(|c| {
                assert_eq!(c.minimum, Minimum::Plateau, "k = {k}, phi {}", c.phi);
                c.plateau.unwrap().edge
            })
            .collect();
        assert!(edges.windows(2).all(|w| w[0] == w[1]), "k = {k}: {edges:?}");
    }
}
