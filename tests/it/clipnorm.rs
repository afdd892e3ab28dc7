//! The clip-norm study (Section 5.2, Figure 1, Tables 3-7) end to end on a tiny synthetic set:
//! quick mode writes the table and the figure, results do not depend on the thread count, a
//! resumed study repeats no finished cell, and the recommendation logic on a hand-made table.

use std::path::PathBuf;

use crate::common::{assert_one_line_error, cli};

use dpsgd_lab::clipnorm::config::{BelowMode, ClipSpec};
use dpsgd_lab::clipnorm::grid::tau_grid;
use dpsgd_lab::clipnorm::table::recommend;
use dpsgd_lab::clipnorm::{
    Entry, EpsColumn, RunOptions, RunRecord, Study, StudyConfig, StudyTable, TauPoint, run_study,
};
use dpsgd_lab::config::from_toml_str;

pub const TINY: &str = r#"
name = "tiny"
seed = 11
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

[theory]
gd_iters = 50
alpha_starts = 2
alpha_iters = 20

[quick]
epochs = 6
runs = 2
learning_rates = [0.1, 1.0]
"#;

pub fn tiny(quick: bool) -> Study {
    let cfg: StudyConfig = from_toml_str(TINY, "tiny").unwrap();
    cfg.into_study(quick).unwrap()
}

pub fn tmpdir(name: &str) -> PathBuf {
    crate::common::tmpdir(&format!("clipnorm-{name}"))
}

pub fn opts(out: PathBuf, resume: bool, figure: bool) -> RunOptions {
    RunOptions {
        out,
        resume,
        fresh: false,
        figure,
    }
}

#[test]
fn quick_study_writes_table_figure_and_recommendations() {
    let out = tmpdir("quick");
    let o = run_study(&tiny(true), &opts(out.clone(), false, true)).unwrap();
    // 2 eps x taus x 2 etas x 2 runs + RNMM 2 x 2 x 2 + baseline 2 x 2.
    let n_tau = o.table.taus.len();
    assert_eq!(o.executed, 2 * n_tau * 2 * 2 + 8 + 4);
    assert_eq!(o.reused, 0);
    assert_eq!(o.recommendations.len(), 2);
    // The grid: 0.1 and 1 lie below G_1 >= sqrt 2, then the six percentiles.
    assert!(o.table.taus.iter().filter(|t| t.pct.is_some()).count() == 6);
    assert!(o.table.taus[0].tau == 0.1 && o.table.taus[0].le_g1 == Some(true));
    let md = std::fs::read_to_string(out.join("clipnorm_tiny_quick.md")).unwrap();
    for needle in [
        "| τ = 0.1 |",
        "(0th pctl.)",
        "(100th pctl.)",
        "Non-private baseline",
        "w/ RNMM",
        "Delta(w*)",
        "Recommendations:",
        "claim",
    ] {
        assert!(md.contains(needle), "table lacks {needle:?}:\n{md}");
    }
    let png = std::fs::metadata(out.join("clipnorm_tiny_quick.png")).unwrap();
    assert!(png.len() > 5_000, "PNG is only {} bytes", png.len());
    // Axis labels, tick labels and the legend are in the figure (SVG keeps its text).
    let svg = std::fs::read_to_string(out.join("clipnorm_tiny_quick.svg")).unwrap();
    for needle in [
        "test accuracy (%)",
        "clip norm",
        "100%",
        "ε = 2",
        "non-private",
    ] {
        assert!(svg.contains(needle), "figure lacks {needle:?}");
    }
    // Every accuracy is a probability; the non-private baseline learns the separable set.
    for r in o.records.values() {
        assert!(r.acc.iter().all(|a| (0.0..=1.0).contains(a)));
        assert_eq!(r.acc.len(), 6);
    }
    assert!(o.table.baseline.as_ref().unwrap().mean > 0.8);
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let out = tmpdir(&format!("threads{threads}"));
        pool.install(|| run_study(&tiny(true), &opts(out, false, false)).unwrap())
    };
    let a = run(1);
    let b = run(3);
    assert_eq!(a.records.len(), b.records.len());
    // Bit-identical records and tables.
    assert_eq!(a.records, b.records);
    assert_eq!(a.table, b.table);
    assert_eq!(
        serde_json::to_string(&a.recommendations).unwrap(),
        serde_json::to_string(&b.recommendations).unwrap()
    );
}

#[test]
fn resume_repeats_no_cell() {
    let out = tmpdir("resume");
    let first = run_study(&tiny(true), &opts(out.clone(), false, false)).unwrap();
    let total = first.executed;
    let again = run_study(&tiny(true), &opts(out.clone(), true, false)).unwrap();
    assert_eq!(again.executed, 0);
    assert_eq!(again.reused, total);
    assert_eq!(again.records, first.records);
    // Interrupted: keep the header and 10 records, then a torn line.
    let path = out.join("results_quick.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut kept: Vec<&str> = text.lines().take(11).collect();
    let torn = &text.lines().nth(11).unwrap()[..40];
    kept.push(torn);
    std::fs::write(&path, kept.join("\n")).unwrap();
    let resumed = run_study(&tiny(true), &opts(out.clone(), true, false)).unwrap();
    assert_eq!(resumed.reused, 10);
    assert_eq!(resumed.executed, total - 10);
    assert_eq!(resumed.records, first.records);
    // The file now holds every cell exactly once.
    let lines = std::fs::read_to_string(&path).unwrap();
    let keys: Vec<String> = lines
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<RunRecord>(l).unwrap().key)
        .collect();
    let mut uniq = keys.clone();
    uniq.sort();
    uniq.dedup();
    assert_eq!(uniq.len(), keys.len());
    assert_eq!(keys.len(), total);
    // A corrupt middle line is not a crash artefact: resume refuses it, naming the file and
    // line, instead of silently rerunning (or losing) that cell; the file is left as it was.
    let text = std::fs::read_to_string(&path).unwrap();
    let mut edited: Vec<String> = text.lines().map(str::to_string).collect();
    edited[5] = "{not json".into();
    let edited = edited.join("\n") + "\n";
    std::fs::write(&path, &edited).unwrap();
    let err = run_study(&tiny(true), &opts(out.clone(), true, false)).unwrap_err();
    assert!(err.to_string().contains(":6: not a run line"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), edited);
    std::fs::write(&path, &text).unwrap();
    // A different configuration refuses the file instead of mixing results.
    let mut other = tiny(true);
    other.cfg.seed += 1;
    let err = run_study(&other, &opts(out, true, false)).unwrap_err();
    assert!(err.to_string().contains("different study"), "{err}");
}

fn entry(mean: f64, sd: f64) -> Option<Entry> {
    Some(Entry {
        mean,
        sd,
        eta: 0.1,
        runs: 3,
        diverged: 0,
    })
}

fn tau(t: f64, pct: Option<f64>, g1: Option<f64>) -> TauPoint {
    TauPoint {
        tau: t,
        pct,
        le_g1: g1.map(|g| t <= g),
    }
}

fn hand_table(g1: Option<f64>, columns: Vec<(f64, Vec<Option<Entry>>)>) -> StudyTable {
    let pcts = [None, Some(0.0), Some(50.0), Some(100.0)];
    let vals = [1.0, 5.0, 8.0, 20.0];
    StudyTable {
        name: "hand".into(),
        model: "softmax regression".into(),
        n_train: 100,
        n_test: 20,
        d: 3,
        classes: 2,
        batch: 10.0,
        steps_per_epoch: 10,
        epochs: 10,
        runs: 3,
        delta: 1e-5,
        accountant: "rdp".into(),
        learning_rates: vec![0.1],
        g_percentiles: None,
        g1,
        gn: g1.map(|_| 20.0),
        taus: vals
            .iter()
            .zip(pcts)
            .map(|(&v, p)| tau(v, if g1.is_some() { p } else { None }, g1))
            .collect(),
        columns: columns
            .into_iter()
            .map(|(epsilon, entries)| EpsColumn {
                epsilon,
                z: 1.0,
                entries,
                rnmm: None,
            })
            .collect(),
        baseline: None,
        theory: None,
    }
}

#[test]
fn recommendation_logic_on_a_hand_made_table() {
    let t = hand_table(
        Some(5.0),
        vec![
            // Holds: best <= G_1 is tau = 5 (G_1) at 0.90 vs best > G_1 0.85.
            (
                2.0,
                vec![
                    entry(0.88, 0.01),
                    entry(0.90, 0.01),
                    entry(0.85, 0.02),
                    entry(0.60, 0.01),
                ],
            ),
            // Fails: tau = 8 (50th pctl.) wins by 3 points, beyond the standard deviations.
            (
                4.0,
                vec![
                    entry(0.80, 0.01),
                    entry(0.82, 0.01),
                    entry(0.85, 0.01),
                    entry(0.70, 0.01),
                ],
            ),
            // Holds within noise: 0.5 point gap, sd 2 points.
            (
                6.0,
                vec![
                    entry(0.80, 0.02),
                    entry(0.905, 0.02),
                    entry(0.90, 0.02),
                    entry(0.89, 0.02),
                ],
            ),
            // A missing cell: no recommendation.
            (
                8.0,
                vec![entry(0.8, 0.0), None, entry(0.8, 0.0), entry(0.8, 0.0)],
            ),
        ],
    );
    let r = recommend(&t);
    assert_eq!(r.len(), 3);
    assert_eq!((r[0].best, r[0].claim_holds), (1, Some(true)));
    assert!((r[0].gap_points.unwrap() - 5.0).abs() < 1e-9);
    assert!((r[0].g1_minus_gn_points.unwrap() - 30.0).abs() < 1e-9);
    assert_eq!(r[0].within_noise, Some(false));
    assert!(r[0].line.contains("HOLDS by +5.00 points"), "{}", r[0].line);
    assert_eq!((r[1].best, r[1].claim_holds), (2, Some(false)));
    assert!((r[1].gap_points.unwrap() + 3.0).abs() < 1e-9);
    assert!(r[1].line.contains("FAILS by -3.00 points"), "{}", r[1].line);
    assert_eq!(r[2].claim_holds, Some(true));
    assert_eq!(r[2].within_noise, Some(true));
    assert!(r[2].line.contains("within one standard deviation"));
    // Without G_i (the tanh network): no claim, smallest vs largest tau.
    let t = hand_table(
        None,
        vec![(
            2.0,
            vec![
                entry(0.7, 0.0),
                entry(0.75, 0.0),
                entry(0.6, 0.0),
                entry(0.5, 0.0),
            ],
        )],
    );
    let r = recommend(&t);
    assert_eq!(r[0].claim_holds, None);
    assert_eq!(r[0].best, 1);
    assert!((r[0].smallest_minus_largest_points - 20.0).abs() < 1e-9);
    assert!(
        r[0].line
            .contains("smallest tau (1) vs largest tau (20): +20.00 points")
    );
}

#[test]
fn tau_grid_below_values_absolute_and_offset() {
    let g: Vec<f64> = (0..101).map(|i| 7.0 + i as f64 * 0.1).collect();
    let abs = tau_grid(Some(&g), &ClipSpec::default());
    let v: Vec<f64> = abs.iter().map(|t| t.tau).collect();
    // 0.1, 1, 5 < G_1 = 7 are kept, 10 is not; then the six percentiles.
    assert_eq!(v[..4], [0.1, 1.0, 5.0, 7.0]);
    assert_eq!(v.len(), 9);
    assert!((v[8] - 17.0).abs() < 1e-12);
    let off = tau_grid(
        Some(&g),
        &ClipSpec {
            below_mode: BelowMode::Offset,
            ..ClipSpec::default()
        },
    );
    let v: Vec<f64> = off.iter().map(|t| t.tau).collect();
    // G_1 - {0.1, 1, 5} (G_1 - 10 < 0 is dropped).
    assert!((v[0] - 2.0).abs() < 1e-12 && (v[1] - 6.0).abs() < 1e-12);
    assert!((v[2] - 6.9).abs() < 1e-12);
    assert_eq!(v.len(), 9);
    let fixed = tau_grid(
        None,
        &ClipSpec {
            values: Some(vec![3.0, 1.0]),
            ..ClipSpec::default()
        },
    );
    assert_eq!(fixed.iter().map(|t| t.tau).collect::<Vec<_>>(), [1.0, 3.0]);
    assert!(fixed.iter().all(|t| t.le_g1.is_none() && t.pct.is_none()));
}

#[test]
fn invalid_configs_name_the_bad_value() {
    let bad = |edit: &str| {
        let text = format!("{TINY}\n{edit}");
        let cfg: Result<StudyConfig, _> = from_toml_str(&text, "tiny");
        match cfg {
            Err(e) => e.to_string(),
            Ok(c) => c.into_study(false).unwrap_err().to_string(),
        }
    };
    assert!(bad("[model]\nkind = \"tanh_net\"\nhidden = 8").contains("clip.values"));
    assert!(bad("[clip]\npercentiles = [0, 150]").contains("150"));
    let cfg: StudyConfig =
        from_toml_str(&TINY.replace("epsilon = 0.3", "epsilon = 2.5"), "t").unwrap();
    assert!(
        cfg.into_study(false)
            .unwrap_err()
            .to_string()
            .contains("leaves nothing")
    );
}

#[test]
fn cli_json_last_line_and_one_line_errors() {
    let dir = tmpdir("cli");
    let cfg = dir.join("tiny.toml");
    std::fs::write(&cfg, TINY).unwrap();
    let (cfg_s, out_s) = (
        cfg.display().to_string(),
        dir.join("out").display().to_string(),
    );
    let out = cli([
        "clipnorm",
        "--config",
        &cfg_s,
        "--quick",
        "--no-figure",
        "--json",
        "--out",
        &out_s,
    ]);
    assert!(out.success(), "{out:?}");
    let last = out.last_json();
    assert_eq!(last["recommendations"].as_array().unwrap().len(), 2);
    assert!(last["executed"].as_u64().unwrap() > 0);
    // A bad value: exit code 2 and one error line naming it.
    std::fs::write(
        &cfg,
        TINY.replace("test_fraction = 0.25", "test_fraction = 1.5"),
    )
    .unwrap();
    let out = cli(["clipnorm", "--config", &cfg_s]);
    assert_one_line_error(&out, "test_fraction");
    assert_one_line_error(&out, "1.5");
}
