"""Shared fixtures: the repository root and the `dpsgd-lab` binary the CLI-equality tests run.

The binary is found, never built: $DPSGD_LAB_BIN, else target/release/dpsgd-lab, else
target/debug/dpsgd-lab. Without one, the tests that compare with the CLI are skipped with a
message saying how to provide it (a release build takes minutes, so pytest does not start one
unannounced); the other tests run.
"""
import tempfile
import json
import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

NO_BINARY = (
    "no dpsgd-lab binary: the CLI-equality tests are skipped. Build it with "
    "`cargo build --release` (a few minutes) or point DPSGD_LAB_BIN at one"
)


def find_binary(env=None, root=ROOT):
    """$DPSGD_LAB_BIN (which must exist), else target/release/dpsgd-lab, else
    target/debug/dpsgd-lab (as `cargo test` builds it), else None."""
    env = os.environ if env is None else env
    given = env.get("DPSGD_LAB_BIN")
    if given:
        p = pathlib.Path(given)
        if not p.is_file():
            raise pytest.UsageError(f"DPSGD_LAB_BIN={given} is not a file")
        return p
    for profile in ("release", "debug"):
        p = root / "target" / profile / "dpsgd-lab"
        if p.is_file():
            return p
    return None


def _binary():
    exe = find_binary()
    if exe is None:
        pytest.skip(NO_BINARY)
    return exe


_LEDGERS = iter(range(10**9))


def _fresh_ledger(args):
    """A recommendation records its spends in the data set's ledger (by default beside the CSV,
    shared by every test): each call gets a fresh ledger of its own unless it names one."""
    args = list(args)
    if args[:2] == ["clipnorm", "recommend"] and "--ledger" not in args:
        path = pathlib.Path(tempfile.gettempdir()) / f"dpsgd-py-ledger-{os.getpid()}-{next(_LEDGERS)}.jsonl"
        path.unlink(missing_ok=True)
        args += ["--ledger", path]
    return args


@pytest.fixture(scope="session")
def cli():
    """Runs `dpsgd-lab ARGS`; returns (exit code, last stdout line parsed as JSON or None,
    stderr)."""
    exe = _binary()

    def run(*args):
        p = subprocess.run([str(exe), *map(str, _fresh_ledger(args))], cwd=ROOT,
                           capture_output=True, text=True)
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
        p = subprocess.run([str(exe), *map(str, _fresh_ledger(args))], cwd=ROOT,
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return p.stdout

    return run


@pytest.fixture
def keywords():
    """The CLI's message as Python raises it: each flag `--name-part` as the keyword
    `name_part` (`--no-name` as `name=False`)."""
    def named(msg):
        def one(m):
            name = m.group(1).rstrip("-")
            if name.startswith("no-"):
                return name[3:].replace("-", "_") + "=False" + m.group(1)[len(name):]
            return name.replace("-", "_") + m.group(1)[len(name):]
        # A missing input (Error::Missing): the CLI lists its flags as one command line
        # ("needs --gamma --C"), Python the keywords comma-separated ("needs gamma, C").
        if "not given" in msg:
            msg = re.sub(r"(--[A-Za-z][A-Za-z0-9-]*) (?=--)", r"\1, ", msg)
        return re.sub(r"--([A-Za-z][A-Za-z0-9-]*)", one, msg)
    return named
