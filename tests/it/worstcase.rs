//! The worst-case search (`worstcase`): the quick scale end to end through the CLI, and the
//! validations of the search itself: a planted family whose optimum is known in closed form is
//! reached, the re-estimate runs on streams the search never used, and an instance outside
//! Assumption 6.1 is caught when the search proposes it.

use std::path::{Path, PathBuf};

use dpsgd_lab::dataset::Dataset;
use dpsgd_lab::error::Result;
use dpsgd_lab::experiment::search_table::Objective;
use dpsgd_lab::experiment::worstcase::family::{Family, InstanceFamily};
use dpsgd_lab::experiment::worstcase::report::{ClipStatus, summarize};
use dpsgd_lab::experiment::worstcase::search::{self, Budget, Phase, stream_seeds};
use dpsgd_lab::experiment::worstcase::{self, WorstCell, cell_setup};
use dpsgd_lab::experiment::{Scale, Spec};

use crate::common::{ROOT, cli, tmpdir};

fn shipped(name: &str) -> PathBuf {
    Path::new(ROOT)
        .join("simulations/worstcase")
        .join(format!("{name}.toml"))
}

fn j1() -> Spec {
    Spec::load(&shipped("worstcase_j1_sharp"), Scale::Quick).unwrap()
}

/// Every shipped search spec.
const SPECS: [&str; 8] = [
    "worstcase_h1_sharp",
    "worstcase_i1_boundary",
    "worstcase_i1_sharp",
    "worstcase_j1_huber",
    "worstcase_j1_logistic",
    "worstcase_j1_sharp",
    "worstcase_k1_sharp",
    "worstcase_n1_robust",
];

/// `dpsgd-lab worstcase` at quick scale: every cell of every shipped spec is searched, every
/// found instance meets Assumption 6.1 at its level (checked through the loss's own G(x, y)),
/// the report and both figures of each spec are written, the re-estimate of a cell is
/// reproduced exactly on the re-estimate streams and by none of the search's replicates (the
/// reported numbers are not the search's), and for the sharp loss (||grad f_i|| = G_i) a cell
/// whose tau is at or above the worst instance's largest G_i has no clipped gradient.
#[test]
fn quick_scale_end_to_end() {
    let out = tmpdir("worstcase-quick");
    let o = cli([
        "worstcase",
        "--out",
        out.to_str().unwrap(),
        "--report",
        out.join("copy.md").to_str().unwrap(),
    ]);
    assert!(o.success(), "{}", o.stderr);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    // `worstcase` twice in a row: exit 0, every cell of every spec reused, the same report.
    let again = cli([
        "worstcase",
        "--out",
        out.to_str().unwrap(),
        "--report",
        out.join("copy.md").to_str().unwrap(),
    ]);
    assert!(again.success(), "{}", again.stderr);
    assert_eq!(
        again.stderr.matches("reusing").count(),
        SPECS.len(),
        "{}",
        again.stderr
    );
    assert_eq!(
        std::fs::read_to_string(out.join("report.md")).unwrap(),
        report
    );
    assert!(report.contains("What this search can and cannot show"));
    assert!(
        report.contains("Worst Thm 6.8 / N.1 rate found"),
        "{report}"
    );
    for name in SPECS {
        for fig in ["worst", "instances"] {
            for ext in ["png", "svg"] {
                let p = out.join(format!("plots/{name}_{fig}.{ext}"));
                assert!(p.exists(), "{}", p.display());
            }
        }
        let spec = Spec::load(&shipped(name), Scale::Quick).unwrap();
        let text = std::fs::read_to_string(out.join(name).join("results.jsonl")).unwrap();
        let cells: Vec<WorstCell> = text
            .lines()
            .skip(1)
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(cells.len(), spec.cells());
        for w in &cells {
            let data = w.instance.dataset(spec.dim().unwrap()).unwrap();
            assert_eq!(data.n, w.n);
            let (ctx, _) = cell_setup(&spec, w.cell).unwrap();
            ctx.check(&data).unwrap();
        }
        let map = cells.iter().map(|w| (w.cell, w.clone())).collect();
        let summary = summarize(&spec, &map);
        for r in summary.groups.iter().flat_map(|g| &g.rows) {
            if w_sharp(&spec) && ClipStatus::of(r) != ClipStatus::CanBindAtWorst {
                assert_eq!(
                    r.clipped, 0.0,
                    "{name} phi {}: clipped above max G_i",
                    r.phi
                );
            }
        }
        // The last cell: rerun its instance on both kinds of streams.
        let w = cells.last().unwrap();
        let (ctx, _) = cell_setup(&spec, w.cell).unwrap();
        let data = w.instance.dataset(spec.dim().unwrap()).unwrap();
        let r = w.reestimate.risk.len();
        let again = ctx.measure(&data, Phase::Reestimate, r).unwrap();
        assert_eq!(again.risk, w.reestimate.risk, "{name}: not reproducible");
        let searched = ctx.measure(&data, Phase::Search, r).unwrap();
        for v in &w.reestimate.risk {
            assert!(
                !searched.risk.contains(v),
                "{name}: a re-estimate replicate equals a search replicate"
            );
        }
    }
}

fn w_sharp(spec: &Spec) -> bool {
    matches!(spec.raw.loss, dpsgd_lab::loss::LossSpec::Sharp)
}

/// The three phases draw their noise and sampling streams from disjoint seeds, for as many
/// replicates as a full-scale run uses.
#[test]
fn reestimate_streams_are_disjoint_from_the_search() {
    let base = j1().raw.seed;
    let s = stream_seeds(base, Phase::Search, 64);
    let e = stream_seeds(base, Phase::Reestimate, 256);
    let c = stream_seeds(base, Phase::Recheck, 1024);
    for x in &e {
        assert!(!s.contains(x), "a re-estimate stream is a search stream");
    }
    for x in &c {
        assert!(
            !s.contains(x) && !e.contains(x),
            "a re-check stream is reused"
        );
    }
}

/// The family with its parameters shifted by a fixed offset, so that the search's neutral start
/// (all parameters 0) becomes `offset` (not the optimum; in worstcase_qv.rs, Q_v's corner).
pub(crate) struct Shifted {
    pub(crate) inner: Family,
    pub(crate) offset: Vec<f64>,
}

impl InstanceFamily for Shifted {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn build(&self, theta: &[f64]) -> Result<Dataset> {
        let t: Vec<f64> = theta.iter().zip(&self.offset).map(|(a, b)| a + b).collect();
        self.inner.build(&t)
    }
}

/// A planted easy family with a closed-form optimum: the do-nothing risk f(w0) - f* of the
/// weighted sharp loss is at most mean_i a_i ||w0 - w*|| (triangle inequality) <= G_emp D0
/// (power mean under the moment), with equality when every a_i is equal and the centres
/// coincide; so the supremum of risk0 / (G D0) over the family is G_emp / G. The search, started
/// well below it, gets within 1% and never above it.
#[test]
fn planted_family_reaches_its_closed_form_optimum() {
    let spec = j1();
    let (ctx, fam) = cell_setup(&spec, 0).unwrap();
    let optimum = ctx.g_emp * spec.raw.constants.dist0 / ctx.gd0;
    // Start: unequal weights, the heavier weight on a centre placed beyond the other one along
    // the direction of w0 - w*, where it pulls f(w0) - f* down.
    let offset: Vec<f64> = (0..fam.dim())
        .map(|i| [0.3, 0.0, -1.0, 0.5, 0.0, 0.0, 3.0, 3.0][i % 8])
        .collect();
    let shifted = Shifted { inner: fam, offset };
    let start = shifted.build(&vec![0.0; shifted.dim()]).unwrap();
    let v0 = ctx
        .value(
            &ctx.measure(&start, Phase::Search, 1).unwrap(),
            Objective::DoNothingOverGd0,
        )
        .unwrap();
    assert!(
        v0 < 0.9 * optimum,
        "the start {v0} is already near {optimum}"
    );
    let budget = Budget {
        restarts: 2,
        iterations: 150,
        replicates: 1,
        spread: 1.0,
    };
    let found = search::search(&ctx, &shifted, Objective::DoNothingOverGd0, &budget).unwrap();
    assert!(
        found.search_value >= 0.99 * optimum,
        "found {} of the optimum {optimum} (start {v0})",
        found.search_value
    );
    assert!(found.search_value <= optimum * (1.0 + 1e-9));
}

/// A family that leaves Assumption 6.1 (weights 1% above the level) wherever its first
/// parameter exceeds 0.5, which the search's initial simplex proposes: the search stops with the
/// moment error. Without the plant the same search succeeds.
struct Leaky {
    inner: Family,
    plant: bool,
}

impl InstanceFamily for Leaky {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn build(&self, theta: &[f64]) -> Result<Dataset> {
        let mut d = self.inner.build(theta)?;
        if self.plant && theta[0] > 0.5 {
            match self.inner {
                // The sharp loss: G_i = a_i, the label.
                Family::Sharp(_) => d.y.iter_mut().for_each(|a| *a *= 1.01),
                // Robust, Huber and binary logistic regression: G_i = lip ||x_i||.
                Family::Regression(_) | Family::Logistic(_) => {
                    d.x.iter_mut().for_each(|v| *v *= 1.01)
                }
            }
        }
        Ok(d)
    }
}

#[test]
fn a_planted_moment_violation_is_caught() {
    for name in [
        "worstcase_j1_sharp",
        "worstcase_n1_robust",
        "worstcase_j1_huber",
        "worstcase_j1_logistic",
    ] {
        planted_violation(&Spec::load(&shipped(name), Scale::Quick).unwrap());
    }
}

fn planted_violation(spec: &Spec) {
    let (ctx, fam) = cell_setup(spec, 0).unwrap();
    let budget = Budget {
        restarts: 1,
        iterations: 3,
        replicates: 1,
        spread: 1.0,
    };
    let leaky = Leaky {
        inner: fam.clone(),
        plant: true,
    };
    let err = search::search(&ctx, &leaky, Objective::OrOverGd0, &budget).unwrap_err();
    assert!(err.to_string().contains("Assumption 6.1"), "{err}");
    let clean = Leaky {
        inner: fam,
        plant: false,
    };
    search::search(&ctx, &clean, Objective::OrOverGd0, &budget).unwrap();
}

/// A spec whose [search] table cannot run is one clear error.
#[test]
fn a_search_spec_without_g_is_refused() {
    let mut spec = j1();
    spec.raw.constants.g = None;
    let err = worstcase::search_table(&spec).unwrap_err();
    assert!(err.to_string().contains("constants.g"), "{err}");
}

/// The instance a violation writes out is a spec that `run` reruns: its CSV holds the found
/// instance row for row (n rows, the weights as labels), the spec validates at both scales, and
/// `dpsgd-lab run` runs it.
#[test]
fn a_violating_instance_is_written_as_a_run_spec() {
    let spec = j1();
    let (ctx, fam) = cell_setup(&spec, 0).unwrap();
    let theta: Vec<f64> = (0..fam.dim()).map(|i| 0.3 * i as f64 - 1.0).collect();
    let instance = fam.components(&theta).unwrap();
    let data = instance.dataset(fam.d()).unwrap();
    let measured = ctx.measure(&data, Phase::Reestimate, 2).unwrap();
    let w = WorstCell {
        cell: 0,
        series: 0,
        k: ctx.k,
        phi: ctx.point.phi,
        n: ctx.point.n,
        epsilon: ctx.point.epsilon,
        g: 1.0,
        g_emp: ctx.g_emp,
        gd0: ctx.gd0,
        found: search::Found {
            theta,
            search_value: 0.0,
            restart_values: vec![],
            evaluations: 0,
        },
        instance,
        reestimate: measured.clone(),
        control: measured.clone(),
        recheck: Some(measured),
    };
    let dir = tmpdir("worstcase-violation");
    let path = worstcase::write_violation(&spec, &w, &dir).unwrap();
    for scale in [Scale::Quick, Scale::Full] {
        let rerun = Spec::load(&path, scale).unwrap();
        assert!(rerun.raw.search.is_none());
        assert_eq!(rerun.series.len(), 1);
        assert_eq!(rerun.base_n().unwrap(), data.n);
    }
    let csv = std::fs::read_to_string(path.with_extension("csv")).unwrap();
    let labels: Vec<f64> = csv
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(labels, data.y);
    let o = cli([
        "run",
        path.to_str().unwrap(),
        "--out",
        dir.join("rerun").to_str().unwrap(),
    ]);
    assert!(o.success(), "{}", o.stderr);
}

/// A family that contains a known hard case: for Thm 5.4 / H.1 and Thm I.1 at k = inf, the
/// sharp Lipschitz instance f(w) = G ||w - c|| (every row at one centre with G_i = G; the
/// classical instance on which the subgradient method's G D0 / sqrt(T) is attained), which the
/// sharp mixture holds at parameters 0; for I.1 with the minimizer on the boundary
/// (worstcase_i1_boundary), the same point mass at c = (2R, 0) outside W, whose constrained
/// minimizer (R, 0) has a gradient of norm G (the constrained case at k = inf). The family is
/// shifted so that the search starts at two separate centres with unequal weights (a smaller
/// OR / bound); on the same search streams (common random numbers) the search must reach at
/// least the known instance's OR / bound.
#[test]
fn the_search_reaches_the_sharp_lipschitz_instance() {
    // (spec, a cell at k = inf)
    for (name, cell) in [
        ("worstcase_h1_sharp", 1),
        ("worstcase_i1_sharp", 3),
        ("worstcase_i1_boundary", 3),
    ] {
        let spec = Spec::load(&shipped(name), Scale::Quick).unwrap();
        let (ctx, fam) = cell_setup(&spec, cell).unwrap();
        assert!(ctx.k.is_infinite(), "{name}: cell {cell} is not at k = inf");
        let reps = 2;
        let value = |data: &Dataset| {
            ctx.value(
                &ctx.measure(data, Phase::Search, reps).unwrap(),
                Objective::OrOverBound,
            )
            .unwrap()
        };
        let known_data = fam.build(&vec![0.0; fam.dim()]).unwrap();
        assert!(known_data.y.iter().all(|&a| a == ctx.g_emp));
        let known = value(&known_data);
        // Starts, the first one below the known instance taken (on the boundary, two centres
        // along the first axis already do worse than the single point mass).
        let offsets = [
            [0.0, 0.0, 0.0, -1.0, 0.8, 0.0, -0.8, 0.0],
            [0.0, 0.0, 0.0, -1.0, 0.0, 1.5, 0.0, -1.5],
            [0.0, 0.0, -2.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0, 3.0, 0.0, 3.0, 0.0],
            [0.0, 0.0, 0.0, 0.0, -3.0, 0.0, -3.0, 0.0],
        ];
        let shift = |o: &[f64; 8]| Shifted {
            inner: fam.clone(),
            offset: (0..fam.dim()).map(|i| o[i % 8]).collect(),
        };
        let (shifted, start) = offsets
            .iter()
            .map(|o| {
                let s = shift(o);
                let v = value(&s.build(&vec![0.0; s.dim()]).unwrap());
                (s, v)
            })
            .find(|(_, v)| *v < known)
            .unwrap_or_else(|| panic!("{name}: no start below the known {known}"));
        let budget = Budget {
            restarts: 3,
            iterations: 150,
            replicates: reps,
            spread: 1.0,
        };
        let found = search::search(&ctx, &shifted, Objective::OrOverBound, &budget).unwrap();
        assert!(
            found.search_value >= known,
            "{name}: found {} below the known instance's {known} (start {start})",
            found.search_value
        );
    }
}
