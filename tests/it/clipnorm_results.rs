//! The clip-norm study's results file (`results_quick.jsonl`, on `dpsgd_lab::results_file`): a
//! rerun without `--resume` is refused and leaves the file alone, a crash while the file is
//! rewritten loses no finished run, a corrupt middle line is refused naming file and line, and a
//! second writer is refused while a live process holds the lock.

use std::path::{Path, PathBuf};
use std::process::Command;

use dpsgd_lab::clipnorm::{RunOptions, StudyOutcome, run_study};
use dpsgd_lab::results_file;

use super::clipnorm::{TINY, opts, tiny, tmpdir};

/// A finished quick study in a fresh folder: (folder, results file, outcome, file bytes).
fn finished(name: &str) -> (PathBuf, PathBuf, StudyOutcome, String) {
    let out = tmpdir(name);
    let first = run_study(&tiny(true), &opts(out.clone(), false, false)).unwrap();
    let path = out.join("results_quick.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    (out, path, first, text)
}

fn resume(out: &Path) -> dpsgd_lab::error::Result<StudyOutcome> {
    run_study(&tiny(true), &opts(out.to_path_buf(), true, false))
}

/// A rerun of a finished study reuses every finished run (same fingerprint) and trains none, the
/// file unchanged; a changed study config of the same name starts over; `--fresh` always does.
#[test]
fn a_rerun_reuses_the_finished_runs_and_a_changed_config_starts_over() {
    let (out, path, first, text) = finished("rerun");
    assert!(first.executed > 0);
    let again = run_study(&tiny(true), &opts(out.clone(), false, false)).unwrap();
    assert_eq!((again.executed, again.reused), (0, first.executed));
    assert_eq!(again.records, first.records);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    assert!(
        !out.join("results_quick.jsonl.lock").exists(),
        "lock released"
    );
    // --fresh starts over (and trains every run again).
    let fresh = RunOptions {
        fresh: true,
        ..opts(out.clone(), false, false)
    };
    let again = run_study(&tiny(true), &fresh).unwrap();
    assert_eq!((again.executed, again.reused), (first.executed, 0));
    assert_eq!(again.records, first.records);
    // A changed config (another seed): --resume refuses it and keeps the file; a plain rerun
    // starts over.
    let mut changed = tiny(true);
    changed.cfg.seed += 1;
    let err = run_study(&changed, &opts(out.clone(), true, false))
        .unwrap_err()
        .to_string();
    assert!(err.contains("--fresh") && !err.contains('\n'), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    let restarted = run_study(&changed, &opts(out.clone(), false, false)).unwrap();
    assert_eq!((restarted.executed, restarted.reused), (first.executed, 0));
}

/// A real crash in the middle of the resume's rewrite: the binary resumes under a file-size limit
/// (RLIMIT_FSIZE) of half the results file, so the kernel kills it with SIGXFSZ in the middle
/// of writing the rewritten file, at a byte offset and not a moment (no timing involved). The
/// rewrite goes to a temporary file and is renamed only when complete, so the results file must
/// be exactly as before and every finished run must be reused afterwards. A rewrite in place
/// (truncate, then write) dies with half a file.
#[cfg(unix)]
#[test]
fn a_crash_during_the_rewrite_loses_no_finished_run() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let (out, path, first, text) = finished("crash");
    let config = out.join("tiny.toml");
    std::fs::write(&config, TINY).unwrap();
    let limit = (text.len() / 2) as libc::rlim_t;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dpsgd-lab"));
    cmd.args(["clipnorm", "--quick", "--resume", "--no-figure", "--config"])
        .arg(&config)
        .arg("--out")
        .arg(&out);
    // SAFETY: the closure runs in the forked child before exec and only calls setrlimit, which
    // is async-signal-safe; it touches no memory shared with the parent.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let status = cmd.output().unwrap().status;
    assert_eq!(
        status.signal(),
        Some(libc::SIGXFSZ),
        "the resume was killed mid-write: {status:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "the results file survived the crash unchanged"
    );
    // The dead process's lock is stale: the next resume takes it over and reuses every run.
    let again = resume(&out).unwrap();
    assert_eq!((again.executed, again.reused), (0, first.executed));
    assert_eq!(again.records, first.records);
}

#[test]
fn a_corrupt_middle_line_is_refused_naming_file_and_line() {
    let (out, path, _, text) = finished("corrupt");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > 6);
    // Valid JSON with one accuracy changed: only the line's hash can tell.
    let edited_line = lines[4].replacen("\"acc_last\":", "\"acc_last\":1", 1);
    assert_ne!(edited_line, lines[4]);
    for (bad, why) in [
        (edited_line.as_str(), "does not match its hash"),
        ("{not json", "not a run line"),
    ] {
        let mut edited: Vec<&str> = lines.clone();
        edited[4] = bad;
        let edited = edited.join("\n") + "\n";
        std::fs::write(&path, &edited).unwrap();
        let err = resume(&out).unwrap_err().to_string();
        let at = format!("{}:5: ", path.display());
        assert!(err.contains(&at) && err.contains(why), "{err}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            edited,
            "file left as it was"
        );
    }
}

#[test]
fn a_second_writer_is_refused_while_the_lock_is_live() {
    let (out, path, _, text) = finished("lock");
    let lock = out.join("results_quick.jsonl.lock");
    // Another live process holds the lock (a child: its pid and start time).
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    std::fs::write(&lock, results_file::lock_text(child.id())).unwrap();
    let err = resume(&out).unwrap_err().to_string();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(err.contains("being written by another"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    std::fs::remove_file(&lock).unwrap();
    // This process holds it (a concurrent study in the same process): refused too.
    let held = results_file::lock(&path).unwrap();
    let err = resume(&out).unwrap_err().to_string();
    assert!(err.contains("being written by another"), "{err}");
    drop(held);
    assert!(resume(&out).is_ok());
}
