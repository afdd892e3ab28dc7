//! The cluster path's documentation cannot drift from what is tested: the Slurm job array of
//! docs/cluster.md is `scripts/verify-array.sbatch` verbatim, the file `scripts/slurm-test.sh` submits to
//! a real Slurm.

use std::path::Path;

fn read(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn readme_shows_the_sbatch_script_verbatim() {
    let script = read("scripts/verify-array.sbatch");
    let readme = read("docs/cluster.md");
    assert!(script.starts_with("#!/bin/bash\n#SBATCH "), "{script}");
    let block = format!("```sh\n{script}```\n");
    assert_eq!(
        readme.matches(&block).count(),
        1,
        "docs/cluster.md must show scripts/verify-array.sbatch verbatim, once, as a ```sh block:\n{block}"
    );
    // The test submits that file, unchanged.
    let test = read("scripts/slurm-test.sh");
    assert!(
        test.contains(" scripts/verify-array.sbatch)"),
        "slurm-test.sh must submit the file"
    );
}
