//! The shipped configs and `verify`, end to end: every `simulations/*.toml` parses and passes its
//! library's validation at both scales (a spec that only fails under `verify --full` is caught
//! here, in seconds), and `verify --specs DIR --only NAME` runs a tiny spec to a table, a report
//! and exit code 0, or, when a series breaks its explicit bound, to a VIOLATION and exit code 1.

use std::path::Path;

use dpsgd_lab::clipnorm::StudyConfig;
use dpsgd_lab::config::{TrainConfig, from_toml_str, load_toml};
use dpsgd_lab::data::generator::GeneratorSpec;
use dpsgd_lab::experiment::{Scale, Spec};

use crate::common::{self, ROOT, assert_check_failed, assert_one_line_error, cli};

/// What kind of config a shipped file is, as the CLI would read it.
#[derive(Debug, PartialEq)]
enum Kind {
    /// An experiment spec (`run`, `verify`): it has a `[sweep]` table.
    Spec,
    /// A clip-norm study (`clipnorm --config`).
    Study,
    /// A train config (`train --config`).
    Train,
    /// A data generator (`data describe --generator`).
    Generator,
}

/// Validates one shipped file at both scales; returns its kind, or what is wrong.
fn validate(path: &Path) -> Result<Kind, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let e = |e: dpsgd_lab::Error| e.to_string();
    if text.lines().any(|l| l.trim() == "[sweep]") {
        for scale in [Scale::Quick, Scale::Full] {
            let spec = Spec::load(path, scale).map_err(e)?;
            spec.dim().map_err(e)?;
            for s in 0..spec.series.len() {
                spec.series_data(s, None).map_err(e)?;
            }
            if spec.phis.is_empty() || spec.replicates == 0 || spec.iterates == 0 {
                return Err(format!("{scale:?}: an empty sweep"));
            }
        }
        return Ok(Kind::Spec);
    }
    if name.starts_with("clipnorm_") {
        for quick in [true, false] {
            let cfg: StudyConfig = from_toml_str(&text, &name).map_err(e)?;
            cfg.into_study(quick).map_err(e)?;
        }
        return Ok(Kind::Study);
    }
    if let Ok(cfg) = load_toml::<TrainConfig>(path) {
        cfg.dpsgd.noise.validate().map_err(e)?;
        return Ok(Kind::Train);
    }
    let g: GeneratorSpec = load_toml(path)
        .map_err(|err| format!("neither a spec, a study, a train config nor a generator: {err}"))?;
    g.check().map_err(e)?;
    Ok(Kind::Generator)
}

#[test]
fn every_shipped_config_validates_at_both_scales() {
    let mut seen = Vec::new();
    let mut failures = Vec::new();
    let dir = Path::new(ROOT).join("simulations");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    for f in &files {
        match validate(f) {
            Ok(kind) => seen.push(kind),
            Err(e) => failures.push(format!("{}: {e}", f.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Every kind is present, so a classification that stopped working would be noticed.
    for kind in [Kind::Spec, Kind::Study, Kind::Train, Kind::Generator] {
        assert!(seen.contains(&kind), "no shipped {kind:?} among {files:?}");
    }
    assert!(seen.iter().filter(|k| **k == Kind::Spec).count() >= 10);
}

/// The tiny spec of `common` under `name`, with `from` replaced by `to` (which must occur).
fn write_spec(dir: &Path, name: &str, from: &str, to: &str) {
    let text = common::tiny_spec(name);
    assert!(text.contains(from), "the tiny spec has no {from:?}");
    std::fs::write(dir.join(format!("{name}.toml")), text.replacen(from, to, 1)).unwrap();
}

/// Two specs in one folder: `tiny_ok`, and `tiny_bad_g`, whose `constants.g = 1e-3` understates
/// the data's G = (E ||x||^2)^(1/2) = 1 (its radial law) a thousandfold. Assumption 6.1 then
/// fails, the runner takes the spec's word for G, and Thm 6.5's bound, linear in G, comes out
/// below the observed risk in every cell: an honest planted VIOLATION, made through a config
/// knob of the spec and not through the code.
fn verify_folder(name: &str) -> std::path::PathBuf {
    let dir = common::tmpdir(name);
    let specs = dir.join("specs");
    std::fs::create_dir_all(&specs).unwrap();
    write_spec(&specs, "tiny_ok", "dist0 = 1.0", "dist0 = 1.0");
    write_spec(&specs, "tiny_bad_g", "dist0 = 1.0", "dist0 = 1.0\ng = 1e-3");
    dir
}

fn verify(dir: &Path, only: &str, out: &str) -> common::CliOutput {
    let (specs, out) = (dir.join("specs"), dir.join(out));
    cli([
        "verify".as_ref(),
        "--specs".as_ref(),
        specs.as_os_str(),
        "--only".as_ref(),
        only.as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
        "--quiet".as_ref(),
        "--json".as_ref(),
    ])
}

/// `verify` run twice in a row exits 0 both times: the rerun reuses every finished cell (its
/// fingerprint matches), says so in one line, computes nothing (the results file is unchanged)
/// and prints the same summaries. A changed spec of the same name starts over (one line says
/// so); `--resume` refuses the changed spec instead, and `--fresh` always starts over. A folder
/// of another spec is the one case refused (exit 2) without `--fresh`.
#[test]
fn verify_twice_in_a_row_reuses_the_finished_cells() {
    let dir = verify_folder("verify-rerun");
    let first = verify(&dir, "tiny_ok", "out");
    assert!(first.success(), "{first:?}");
    let cells = dir.join("out/tiny_ok/results.jsonl");
    let before = std::fs::read_to_string(&cells).unwrap();
    let again = verify(&dir, "tiny_ok", "out");
    assert!(again.success(), "{again:?}");
    assert_eq!(again.last_json(), first.last_json());
    let said: Vec<&str> = again
        .stderr
        .lines()
        .filter(|l| l.contains("reusing"))
        .collect();
    assert_eq!(said.len(), 1, "{}", again.stderr);
    let finished = before.lines().skip(1).count();
    assert!(finished > 0);
    assert!(
        said[0].contains(&format!("reusing {finished} finished cells")),
        "{}",
        said[0]
    );
    assert_eq!(std::fs::read_to_string(&cells).unwrap(), before);
    for flag in ["--resume", "--fresh"] {
        let o = cli([
            "verify",
            "--specs",
            dir.join("specs").to_str().unwrap(),
            "--only",
            "tiny_ok",
            "--out",
            dir.join("out").to_str().unwrap(),
            "--quiet",
            "--json",
            flag,
        ]);
        assert!(o.success(), "{flag}: {o:?}");
        assert_eq!(o.last_json(), first.last_json(), "{flag}");
        assert_eq!(
            o.stderr.contains("reusing"),
            flag == "--resume",
            "{flag}: {}",
            o.stderr
        );
    }
    // The spec changed (another seed): --resume refuses, a plain rerun starts over.
    write_spec(&dir.join("specs"), "tiny_ok", "seed = 3", "seed = 4");
    let resumed = cli([
        "verify",
        "--specs",
        dir.join("specs").to_str().unwrap(),
        "--only",
        "tiny_ok",
        "--out",
        dir.join("out").to_str().unwrap(),
        "--quiet",
        "--resume",
    ]);
    assert_one_line_error(&resumed, "--fresh");
    assert_eq!(std::fs::read_to_string(&cells).unwrap(), before);
    let changed = verify(&dir, "tiny_ok", "out");
    assert!(changed.success(), "{changed:?}");
    assert!(
        changed.stderr.contains("starting over"),
        "{}",
        changed.stderr
    );
    assert_ne!(std::fs::read_to_string(&cells).unwrap(), before);
    // Another spec's results in the folder: refused, one line naming --fresh; nothing changed.
    let stranger = dir.join("out/tiny_bad_g");
    std::fs::create_dir_all(&stranger).unwrap();
    let moved = std::fs::read_to_string(&cells).unwrap();
    std::fs::write(stranger.join("results.jsonl"), &moved).unwrap();
    let refused = verify(&dir, "tiny_bad_g", "out");
    assert_one_line_error(&refused, "--fresh");
    assert_eq!(
        std::fs::read_to_string(stranger.join("results.jsonl")).unwrap(),
        moved
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn verify_runs_one_tiny_spec_end_to_end() {
    let dir = verify_folder("verify-ok");
    let out = verify(&dir, "tiny_ok", "out");
    assert!(out.success(), "{out:?}");
    let v = out.last_json();
    let summaries = v.as_array().unwrap();
    assert_eq!(summaries.len(), 1, "--only selects one spec: {v}");
    assert_eq!(summaries[0]["spec"], "tiny_ok");
    let verdict = summaries[0]["series"][0]["verdict"].as_str().unwrap();
    assert!(!verdict.contains("VIOLATION"), "{verdict}");
    let report = std::fs::read_to_string(dir.join("out/report-only-tiny_ok.md")).unwrap();
    assert!(
        report.contains("tiny_ok") && !report.contains("tiny_bad_g"),
        "{report}"
    );
    assert!(dir.join("out/tiny_ok/summary.json").exists());
    assert!(!dir.join("out/tiny_bad_g").exists());
    std::fs::remove_dir_all(&dir).ok();
}

/// `verify --only NAME` writes its own report-only-NAME.md and leaves the combined report.md
/// of an earlier full run as it was (it used to overwrite it with the one selected spec).
#[test]
fn verify_only_keeps_the_combined_report() {
    let dir = verify_folder("verify-only-keeps");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let combined = "# the combined report of an earlier full run\n";
    std::fs::write(out.join("report.md"), combined).unwrap();
    let run = verify(&dir, "tiny_ok", "out");
    assert!(run.success(), "{run:?}");
    assert_eq!(
        std::fs::read_to_string(out.join("report.md")).unwrap(),
        combined
    );
    let own = std::fs::read_to_string(out.join("report-only-tiny_ok.md")).unwrap();
    assert!(own.contains("`verify --only tiny_ok`"), "{own}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The terminal's default table fits 120 columns and ends with the one-line summary; `--wide`
/// prints the full table (its verdict column in words).
#[test]
fn verify_prints_a_compact_table_and_a_one_line_summary() {
    let dir = verify_folder("verify-compact");
    let (specs, out) = (dir.join("specs"), dir.join("out"));
    let run = |wide: bool| {
        let mut a = vec![
            "verify".as_ref(),
            "--specs".as_ref(),
            specs.as_os_str(),
            "--only".as_ref(),
            "tiny_ok".as_ref(),
            "--out".as_ref(),
            out.as_os_str(),
            "--quiet".as_ref(),
        ];
        if wide {
            // The second run reports the first run's cells.
            a.push("--wide".as_ref());
            a.push("--resume".as_ref());
        }
        cli(a)
    };
    let compact = run(false);
    assert!(compact.success(), "{compact:?}");
    for l in compact
        .stdout
        .lines()
        .take_while(|l| !l.starts_with("wrote "))
    {
        assert!(
            l.chars().count() <= 120,
            "{} columns: {l}",
            l.chars().count()
        );
    }
    // The summary follows the `wrote` line, wrapped to 120 columns: read it as one line.
    let last = compact
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("wrote "))
        .skip(1)
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        last.contains(" series: bound held ") && last.contains("VIOLATED 0, SHORT 0"),
        "{last}"
    );
    let wide = run(true);
    assert!(wide.success(), "{wide:?}");
    assert!(
        wide.stdout.contains("P(OR <= bound) [95% CP] vs theorem"),
        "{}",
        wide.stdout
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn verify_exits_1_on_a_planted_violation() {
    let dir = verify_folder("verify-bad");
    let out = verify(&dir, "tiny_bad_g", "out");
    // The table and report are written first, then one line names the series; exit 1 (a failed
    // check), not 2 (bad input).
    assert_check_failed(&out, "VIOLATION");
    assert_check_failed(&out, "tiny_bad_g k = 2");
    let v = out.last_json();
    let verdict = v[0]["series"][0]["verdict"].as_str().unwrap();
    assert!(verdict.starts_with("VIOLATION: cell 0"), "{verdict}");
    let report = std::fs::read_to_string(dir.join("out/report-only-tiny_bad_g.md")).unwrap();
    assert!(report.contains("VIOLATION"), "{report}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Issue verify-3: every series with k < inf and the theorem's clip rule, in every shipped spec,
/// has its bounded-data control, and the control's data set has every per-sample Lipschitz
/// constant G_i equal to the G its schedule uses (checked on the built data, replicate 0, at the
/// largest phi of the quick scale).
#[test]
fn every_heavy_series_has_a_bounded_control_with_constant_g_i() {
    use dpsgd_lab::experiment::replicate::{build_data, moment_bound_g, sweep_point};
    use dpsgd_lab::experiment::spec::ClipRule;
    use dpsgd_lab::loss::per_sample_lipschitz;
    let dir = Path::new(ROOT).join("simulations");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        // Top-level specs only: the clip-norm sweeps in simulations/cliplaw/ carry their bounded
        // control as a series of their own (tests/it/cliplaw.rs).
        if path.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        if !text.lines().any(|l| l.trim() == "[sweep]") {
            continue;
        }
        let spec = Spec::load(&path, Scale::Quick).unwrap();
        let name = &spec.raw.name;
        for (s, ser) in spec.series.iter().enumerate() {
            let heavy = ser.k.is_finite()
                && ser.control_of.is_none()
                && !matches!(ser.clip, ClipRule::Fixed(_));
            if !heavy {
                continue;
            }
            let c = spec
                .control(s)
                .unwrap_or_else(|| panic!("{name} series {s} has no control"));
            let point = sweep_point(&spec, 0).unwrap();
            let data = build_data(&spec, c, point.n, 0).unwrap();
            let loss = spec.raw.loss.build(&data).unwrap();
            let gi = per_sample_lipschitz(loss.as_ref(), &data).unwrap();
            let (lo, hi) = gi
                .iter()
                .fold((f64::INFINITY, 0.0f64), |(a, b), &g| (a.min(g), b.max(g)));
            // Constant and equal to the schedule's G up to rounding (relative 1e-9); the heavy
            // series' own G_i are not constant.
            let g = moment_bound_g(&spec, s).unwrap();
            assert!(
                (hi - g).abs() <= 1e-9 * g && (lo - g).abs() <= 1e-9 * g,
                "{name} control {c}: G_i in [{lo}, {hi}], G = {g}"
            );
            let heavy_data = build_data(&spec, s, point.n, 0).unwrap();
            let gh = per_sample_lipschitz(loss.as_ref(), &heavy_data).unwrap();
            let spread = gh.iter().cloned().fold(0.0f64, f64::max)
                - gh.iter().cloned().fold(f64::INFINITY, f64::min);
            assert!(spread > 1e-6, "{name} series {s}: its G_i are constant too");
            checked += 1;
        }
    }
    assert!(checked >= 25, "only {checked} heavy series checked");
}
