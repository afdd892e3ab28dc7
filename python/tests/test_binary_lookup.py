"""pytest finds the CLI binary or skips the CLI-equality tests with instructions; it never
builds it (a release build takes minutes)."""
import pathlib
import subprocess
import sys

import pytest

from conftest import NO_BINARY, find_binary


def fake_root(tmp_path, profiles):
    for p in profiles:
        exe = tmp_path / "target" / p / "dpsgd-lab"
        exe.parent.mkdir(parents=True)
        exe.write_text("")
    return tmp_path


def test_env_variable_wins(tmp_path):
    root = fake_root(tmp_path, ["release", "debug"])
    other = tmp_path / "elsewhere"
    other.write_text("")
    assert find_binary({"DPSGD_LAB_BIN": str(other)}, root) == other


def test_release_before_debug_and_none_without_either(tmp_path):
    assert find_binary({}, fake_root(tmp_path / "a", ["release", "debug"])) == \
        tmp_path / "a" / "target" / "release" / "dpsgd-lab"
    assert find_binary({}, fake_root(tmp_path / "b", ["debug"])) == \
        tmp_path / "b" / "target" / "debug" / "dpsgd-lab"
    assert find_binary({}, fake_root(tmp_path / "c", [])) is None


def test_a_missing_env_binary_is_an_error_not_a_build(tmp_path):
    with pytest.raises(pytest.UsageError, match="DPSGD_LAB_BIN"):
        find_binary({"DPSGD_LAB_BIN": str(tmp_path / "absent")}, tmp_path)


def test_without_a_binary_the_cli_tests_skip_with_instructions(tmp_path):
    """A copy of the suite's conftest and one CLI test, in a tree with no target/: the test is
    skipped (not failed, not built) and the skip reason says how to provide the binary."""
    here = pathlib.Path(__file__).resolve().parent
    tests = tmp_path / "python" / "tests"
    tests.mkdir(parents=True)
    (tests / "conftest.py").write_text((here / "conftest.py").read_text())
    (tests / "test_one.py").write_text("def test_uses_cli(cli):\n    assert False\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "DPSGD_LAB_BIN"}
    p = subprocess.run([sys.executable, "-m", "pytest", "-rs", "-p", "no:cacheprovider",
                        str(tests)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 skipped" in p.stdout
    assert "cargo build --release" in p.stdout and "DPSGD_LAB_BIN" in p.stdout
    assert not (tmp_path / "target").exists()
    assert NO_BINARY.split(":")[0] in p.stdout
