//! Issue 13: results files cannot be silently corrupted. Every cell line carries the spec's
//! fingerprint and a hash of the cell; `--resume` refuses an edited line; a lock file keeps two
//! processes out of one results file; rewrites leave no temporary files behind.

use std::path::{Path, PathBuf};

use crate::common;

use dpsgd_lab::experiment::results;
use dpsgd_lab::experiment::runner::{self, RunOptions};
use dpsgd_lab::experiment::{ExperimentSpec, Scale, Spec};

fn tiny() -> Spec {
    let raw: ExperimentSpec = toml::from_str(&common::tiny_spec("tiny_results")).unwrap();
    Spec::new(raw, Scale::Quick).unwrap()
}

fn tmp(name: &str) -> PathBuf {
    common::tmpdir(&format!("results-{name}"))
}

fn opts(out: &Path, resume: bool) -> RunOptions {
    RunOptions {
        out: out.to_path_buf(),
        resume,
        fresh: false,
        shard: None,
        progress: false,
        stop_after: None,
        force: false,
    }
}

#[test]
fn an_edited_middle_line_is_refused_on_resume() {
    let spec = tiny();
    let dir = tmp("edited");
    runner::run(&spec, &opts(&dir, false)).unwrap();
    let path = dir.join("results.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // 3 cells of the k = 2 series and 3 of its bounded-data control.
    assert_eq!(lines.len(), 7, "header + 6 cells");
    // Valid JSON, plausible, but not what was computed: one risk changed.
    let mut v: serde_json::Value = serde_json::from_str(lines[2]).unwrap();
    let r = v["replicates"][0]["risk"].as_f64().unwrap();
    v["replicates"][0]["risk"] = serde_json::json!(r * 4.0);
    let edited = [lines[0], lines[1], &v.to_string(), lines[3]].join("\n") + "\n";
    std::fs::write(&path, edited).unwrap();
    let e = runner::run(&spec, &opts(&dir, true))
        .unwrap_err()
        .to_string();
    assert!(e.contains("results.jsonl:3") && e.contains("hash"), "{e}");
    // The unedited file resumes with nothing to do and reads back every cell.
    std::fs::write(&path, &text).unwrap();
    assert_eq!(runner::run(&spec, &opts(&dir, true)).unwrap().len(), 6);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_line_from_another_spec_is_refused() {
    let spec = tiny();
    let dir = tmp("foreign");
    runner::run(&spec, &opts(&dir, false)).unwrap();
    let path = dir.join("results.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let head = results::header(&spec);
    let forged = text.replace(
        &format!("\"spec\":\"{}\"", head.fingerprint),
        "\"spec\":\"0\"",
    );
    // The header has the key "fingerprint", not "spec" with this value: only cell lines change.
    assert_ne!(forged, text);
    std::fs::write(&path, forged).unwrap();
    let e = results::read_results(&path, &head).unwrap_err().to_string();
    assert!(e.contains("results.jsonl:2"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_live_lock_refuses_a_second_writer_and_a_stale_one_is_taken_over() {
    let spec = tiny();
    let dir = tmp("lock");
    let lock = dir.join("results.jsonl.lock");
    // A live child process holds the lock (its pid and start time): "being written".
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    std::fs::write(&lock, results::lock_text(child.id())).unwrap();
    let e = runner::run(&spec, &opts(&dir, false))
        .unwrap_err()
        .to_string();
    assert!(e.contains("another dpsgd-lab process"), "{e}");
    assert!(
        !dir.join("results.jsonl").exists(),
        "nothing written while locked"
    );
    // The same live pid with another start time: the pid was recycled, the lock is stale.
    let start = results::start_time(child.id()).unwrap();
    std::fs::write(&lock, format!("{} {}", child.id(), start + 1)).unwrap();
    runner::run(&spec, &opts(&dir, false)).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    // Our own pid, when this process does not hold the lock, and pids 0 and -1: stale.
    for text in [std::process::id().to_string(), "0".into(), "-1".into()] {
        std::fs::write(&lock, &text).unwrap();
        runner::run(&spec, &opts(&dir, true)).unwrap();
        assert!(!lock.exists(), "lock {text:?} taken over and released");
    }
    // A lock this process holds is live.
    let held = results::lock(&dir.join("results.jsonl")).unwrap();
    let e = runner::run(&spec, &opts(&dir, true))
        .unwrap_err()
        .to_string();
    assert!(e.contains("another dpsgd-lab process"), "{e}");
    drop(held);
    std::fs::remove_file(dir.join("results.jsonl")).unwrap();
    // A pid above Linux's pid_max (2^22) belongs to no process: a stale lock.
    std::fs::write(&lock, "999999999").unwrap();
    runner::run(&spec, &opts(&dir, false)).unwrap();
    assert!(!lock.exists(), "the lock is released when the run ends");
    // Every rewrite went through a temporary file that is gone now.
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A line that is not JSON in the middle of the file is an error naming the file and line; the
/// same text as the last line is a torn write, dropped (its cell runs again).
#[test]
fn a_corrupt_middle_line_is_an_error_and_a_torn_last_line_is_dropped() {
    let spec = tiny();
    let dir = tmp("corrupt");
    runner::run(&spec, &opts(&dir, false)).unwrap();
    let path = dir.join("results.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let head = results::header(&spec);
    let middle = [lines[0], lines[1], "{\"cell\": 1, torn", lines[3]].join("\n") + "\n";
    std::fs::write(&path, middle).unwrap();
    let e = results::read_results(&path, &head).unwrap_err().to_string();
    assert!(
        e.contains("results.jsonl:3") && e.contains("not a cell line"),
        "{e}"
    );
    let last = [lines[0], lines[1], lines[2], "{\"cell\": 2, to"].join("\n") + "\n";
    std::fs::write(&path, last).unwrap();
    assert_eq!(results::read_results(&path, &head).unwrap().len(), 2);
    std::fs::remove_dir_all(&dir).ok();
}
