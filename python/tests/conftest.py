"""Shared fixtures: the repository root and the `dpsgd-lab` binary the CLI-equality tests run."""
import json
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _binary():
    """$DPSGD_LAB_BIN, else target/release/dpsgd-lab, else target/debug/dpsgd-lab (built by
    `cargo test`), else build the release binary with cargo."""
    env = os.environ.get("DPSGD_LAB_BIN")
    if env:
        return pathlib.Path(env)
    for profile in ("release", "debug"):
        p = ROOT / "target" / profile / "dpsgd-lab"
        if p.exists():
            return p
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.skip("no dpsgd-lab binary and no cargo to build it")
    subprocess.run([cargo, "build", "--release", "--bin", "dpsgd-lab"], cwd=ROOT, check=True)
    return ROOT / "target" / "release" / "dpsgd-lab"


@pytest.fixture(scope="session")
def cli():
    """Runs `dpsgd-lab ARGS`; returns (exit code, last stdout line parsed as JSON or None,
    stderr)."""
    exe = _binary()

    def run(*args):
        p = subprocess.run([str(exe), *map(str, args)], cwd=ROOT, capture_output=True, text=True)
        lines = p.stdout.strip().splitlines()
        out = json.loads(lines[-1]) if p.returncode == 0 and lines else None
        return p.returncode, out, p.stderr.strip()

    return run


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def cli_text():
    """Runs `dpsgd-lab ARGS` and returns its human-readable stdout (exit code 0 required)."""
    exe = _binary()

    def run(*args):
        p = subprocess.run([str(exe), *map(str, args)], cwd=ROOT, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return p.stdout

    return run
