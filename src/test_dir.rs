//! Fresh folders for the unit tests (compiled for tests only): the one place in `src/` that names
//! the system's temporary folder (`tests/tidy.rs` refuses any other), so no two tests, and no
//! two copies of the suite running side by side, share or remove each other's path.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh, empty folder unique to this call: `dpsgd-lab-unit-PID-K-NAME` under the system's
/// temporary folder, K counting this process's calls, created exclusively (a leftover of the same
/// name from an earlier process with this pid is skipped, never removed).
pub(crate) fn tmpdir(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    loop {
        let k = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("dpsgd-lab-unit-{}-{k}-{name}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return dir,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => panic!("create {}: {e}", dir.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tmpdir;

    #[test]
    fn two_calls_with_one_name_get_two_folders_and_neither_is_emptied() {
        let a = tmpdir("same");
        std::fs::write(a.join("kept"), "x").unwrap();
        let b = tmpdir("same");
        assert_ne!(a, b);
        assert!(
            a.join("kept").exists(),
            "the second call removed the first's file"
        );
        std::fs::remove_dir_all(&a).unwrap();
        std::fs::remove_dir_all(&b).unwrap();
    }
}
