//! Fixtures shared by the integration tests: the one helper that runs the binary
//! ([`cli`], [`cli_capped`]), the one statement of the CLI's error contract
//! ([`assert_one_line_error`]), fresh temporary folders ([`tmpdir`]) and a tiny spec.

use std::ffi::OsStr;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_dpsgd-lab");
/// The repository root; every child runs with it as its working directory.
pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A guard against a hung child, not a speed limit: a child still running after this long is
/// killed and the run is reported as hung (exit code `None`). Nothing here asserts how long a
/// run took; the bound only keeps a hang from stalling `cargo test` forever.
const WATCHDOG: Duration = Duration::from_secs(900);

/// What a run of the binary printed and how it ended.
#[derive(Debug)]
pub struct CliOutput {
    /// The exit code; `None` if the child was killed by a signal (or by the watchdog).
    pub code: Option<i32>,
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
}

impl CliOutput {
    /// The last line of stdout parsed as JSON (the CLI's `--json` contract); panics with the
    /// output if there is none.
    pub fn last_json(&self) -> serde_json::Value {
        let last = self.stdout.trim_end().lines().last().unwrap_or("");
        serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("last line is not JSON ({e}): {self:?}"))
    }

    /// Exit code 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// Runs the binary with `args` from the repository root and captures both streams.
pub fn cli<I, S>(args: I) -> CliOutput
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let mut cmd = Command::new(BIN);
    cmd.args(&args);
    // A recommendation records its spends in the data set's ledger (by default beside the CSV,
    // shared by every test): each test run gets a fresh ledger of its own unless it names one.
    if args.len() >= 2
        && args[0] == "clipnorm"
        && args[1] == "recommend"
        && !args.iter().any(|a| a == "--ledger")
    {
        cmd.arg("--ledger").arg(fresh_ledger());
    }
    capture(cmd)
}

/// A ledger path no other call uses (in a fresh [`tmpdir`] of its own; the file is not created).
pub fn fresh_ledger() -> PathBuf {
    tmpdir("ledger").join("ledger.jsonl")
}

/// As [`cli`], under a 4 GB address-space limit (`ulimit -v`), so a missing memory estimate shows
/// up as an abort instead of a swapping machine. `exec` keeps the binary the shell's own pid.
pub fn cli_capped<I, S>(args: I) -> CliOutput
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -v 4000000; exec \"$0\" \"$@\"")
        .arg(BIN)
        .args(args);
    capture(cmd)
}

/// Spawns `cmd` and drains stdout and stderr on two threads while it runs, so a child that
/// prints more than a pipe holds cannot block (the two streams reach end of file when the child
/// exits). The [`WATCHDOG`] only kills; the child is never reaped before the kill, so the kill
/// cannot reach a reused pid.
fn capture(mut cmd: Command) -> CliOutput {
    let mut child: Child = cmd
        .current_dir(ROOT)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the binary");
    let (tx, rx) = mpsc::channel();
    let drain = |pipe: Option<Box<dyn Read + Send>>, which: usize| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                p.read_to_end(&mut bytes).ok();
            }
            tx.send((which, bytes)).ok();
        })
    };
    let t_out = drain(child.stdout.take().map(|p| Box::new(p) as _), 0);
    let t_err = drain(child.stderr.take().map(|p| Box::new(p) as _), 1);
    drop(tx);
    let deadline = Instant::now() + WATCHDOG;
    let mut streams = [Vec::new(), Vec::new()];
    let mut hung = false;
    for _ in 0..2 {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((which, bytes)) => streams[which] = bytes,
            Err(_) => {
                hung = true;
                child.kill().ok();
                break;
            }
        }
    }
    let status = child.wait().expect("wait for the binary");
    if hung {
        // The kill closed the pipes: collect what the child printed before it.
        for (which, bytes) in rx.iter() {
            streams[which] = bytes;
        }
    }
    t_out.join().ok();
    t_err.join().ok();
    let [out, err] = streams;
    let mut stderr = String::from_utf8_lossy(&err).into_owned();
    if hung {
        stderr.push_str(&format!(
            "\n[test watchdog: killed, still running after {WATCHDOG:?}]"
        ));
    }
    CliOutput {
        code: if hung { None } else { status.code() },
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr,
    }
}

/// The last line of clap's usage errors.
pub const CLAP_HINT: &str = "For more information, try '--help'.";

/// The CLI's contract for bad input: exit code 2, one error starting `error: ` and containing
/// `needle`, and no panic or backtrace. An error of the program is exactly one line; a usage
/// error is clap's standard message: the `error: ` line, its context (the missing arguments, a
/// tip, the usage line) and [`CLAP_HINT`] last. `Err` says what broke it.
pub fn one_line_error(out: &CliOutput, needle: &str) -> Result<(), String> {
    let err = &out.stderr;
    let lines: Vec<&str> = err.lines().collect();
    let one = if lines.last() == Some(&CLAP_HINT) {
        lines.iter().filter(|l| l.starts_with("error")).count() == 1
    } else {
        lines.len() == 1
    };
    let ok = out.code == Some(2)
        && one
        && lines[0].starts_with("error: ")
        && err.contains(needle)
        && !err.contains("panicked")
        && !err.contains("RUST_BACKTRACE")
        && !err.contains("stack backtrace");
    if ok {
        Ok(())
    } else {
        Err(format!(
            "exit {:?}, stderr {err:?} (wants exit 2 and one `error: ` line, or clap's usage message, containing {needle:?})",
            out.code
        ))
    }
}

/// Asserts [`one_line_error`].
#[track_caller]
pub fn assert_one_line_error(out: &CliOutput, needle: &str) {
    if let Err(e) = one_line_error(out, needle) {
        panic!("{e}");
    }
}

/// The CLI's contract for a check that ran and failed (a VIOLATION, a beaten lower bound, an
/// audit above its claim): exit code 1 and, after the outputs, one stderr line starting
/// `check failed: ` that contains `needle`.
#[track_caller]
pub fn assert_check_failed(out: &CliOutput, needle: &str) {
    let last = out.stderr.lines().last().unwrap_or_default();
    assert!(
        out.code == Some(1)
            && last.starts_with("check failed: ")
            && last.contains(needle)
            && !out.stderr.contains("error: ")
            && !out.stderr.contains("panicked"),
        "exit {:?}, stderr {:?} (wants exit 1 and a last line `check failed: ` containing {needle:?})",
        out.code,
        out.stderr
    );
}

/// A fresh, empty folder under the system's temporary folder, unique to this call: the name is
/// `dpsgd-lab-test-PID-K-NAME` with K counting this process's calls, and the folder is created
/// exclusively (a leftover of the same name, from an earlier process with this pid, is skipped,
/// never removed). Two tests passing the same `name`, or two copies of the suite running side by
/// side, get two folders; nothing here deletes a path another test may be using.
pub fn tmpdir(name: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    loop {
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("dpsgd-lab-test-{}-{k}-{name}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return dir,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => panic!("create {}: {e}", dir.display()),
        }
    }
}

/// A tiny Thm 6.5 spec (three phi points, a few replicates: seconds to run) named `name`, for
/// end-to-end tests of the runner, its results files and the config fuzz test.
pub fn tiny_spec(name: &str) -> String {
    format!("\nname = \"{name}\"\n{TINY_BODY}")
}

const TINY_BODY: &str = r#"theorem = "6.5"
seed = 3
loss = { family = "sharp" }
batch_size = 5.0

[data]
source = "generated"
n = 60
d = 3
radial = { k = 2.0, g = 1.0, law = { family = "pareto", alpha = 2.5 } }
labels = { kind = "sharp_centers", spread = 1.0 }

[privacy]
nu = 1.0
delta = 1e-5

[sweep]
vary = "epsilon"

[constants]
dist0 = 1.0

[quick]
phi_max = 0.3
phi_min = 0.1
points = 3
replicates = 3
iterates = 4
bootstrap = 50

[full]
phi_max = 0.3
phi_min = 0.03
points = 4
replicates = 4
iterates = 4

[[series]]
k = 2.0
"#;

/// The helper's own guarantees: a child that writes far more than a pipe buffer (64 KiB) to both
/// streams before exiting completes (a helper that read the pipes only after the exit would
/// deadlock here), and the contract check rejects each way of breaking the contract.
#[test]
fn capture_drains_both_streams_and_the_contract_check_can_fail() {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("head -c 1000000 /dev/zero | tr '\\0' o; head -c 1000000 /dev/zero | tr '\\0' e >&2; exit 2");
    let out = capture(cmd);
    assert_eq!(out.code, Some(2));
    assert_eq!((out.stdout.len(), out.stderr.len()), (1_000_000, 1_000_000));
    let mk = |code, stderr: &str| CliOutput {
        code: Some(code),
        stdout: String::new(),
        stderr: stderr.to_string(),
    };
    assert!(one_line_error(&mk(2, "error: bad x\n"), "bad x").is_ok());
    for (code, stderr, needle) in [
        (1, "error: bad x\n", "bad x"),
        (2, "error: bad x\nmore\n", "bad x"),
        (2, "warning: bad x\n", "bad x"),
        (2, "error: bad x\n", "bad y"),
        (2, "error: thread 'main' panicked at bad x\n", "bad x"),
        (2, "", ""),
    ] {
        assert!(
            one_line_error(&mk(code, stderr), needle).is_err(),
            "{code} {stderr:?}"
        );
    }
}

/// Two tests asking [`tmpdir`] for one name (the two `cliplaw` tests that ran one sweep each did)
/// get two folders, and the second call leaves the first's files alone.
#[test]
fn tmpdir_gives_each_call_its_own_folder_and_removes_nothing() {
    let a = tmpdir("same");
    std::fs::write(a.join("kept"), "x").unwrap();
    let b = tmpdir("same");
    assert_ne!(a, b);
    assert!(
        a.join("kept").exists(),
        "the second call removed the first's file"
    );
    assert_ne!(fresh_ledger(), fresh_ledger());
    std::fs::remove_dir_all(&a).unwrap();
    std::fs::remove_dir_all(&b).unwrap();
}
