"""One vocabulary: every Python keyword that is also a CLI option has the CLI's long flag name
('-' -> '_'), and the CLI's default where the CLI has one (read from `--help`)."""
import inspect
import re

import numpy as np
import pytest

import dpsgd_lab as dl

# Python-only parameters (no CLI counterpart): arrays in place of files, and result shapes.
PYTHON_ONLY = {"x", "y", "per_sample_norms", "details", "orders"}

CASES = [
    (dl.epsilon, ("privacy", "epsilon")),
    (dl.calibrate, ("privacy", "calibrate")),
    (dl.recommend_clip_norm, ("clipnorm", "recommend")),
    (dl.train, ("train",)),
    (dl.audit_run, ("audit-run",)),
]


def cli_options(help_text):
    """{flag name with '_': default text or None} from clap's `--help` (short or long form)."""
    blocks = re.split(r"\n(?=\s+(?:-\w, )?--[a-z])", help_text)
    out = {}
    for b in blocks:
        m = re.match(r"\s+(?:-\w, )?--([a-z][a-z-]*)", b)
        if m:
            d = re.search(r"\[default: ([^\]]*)\]", b)
            out[m.group(1).replace("-", "_")] = d.group(1) if d else None
    return out


def same_default(py, cli):
    if isinstance(py, bool) or py is None:
        return False
    if isinstance(py, (int, float)):
        return float(py) == float(cli)
    return str(py) == cli


@pytest.mark.parametrize("func,sub", CASES, ids=lambda c: c if isinstance(c, str) else None)
def test_python_keywords_are_the_cli_flags_with_the_cli_defaults(cli_text, func, sub):
    flags = cli_options(cli_text(*sub, "--help"))
    params = inspect.signature(func).parameters
    for name, p in params.items():
        if name in PYTHON_ONLY:
            continue
        # A boolean the CLI turns off with --no-NAME is NAME=True here.
        assert name in flags or f"no_{name}" in flags, (
            f"{func.__name__}({name}=...) is not a flag of `dpsgd-lab {' '.join(sub)}`: "
            f"{sorted(flags)}")
        default = flags.get(name)
        if default is not None:
            assert same_default(p.default, default), (
                f"{func.__name__}({name}={p.default!r}) but the CLI defaults --{name} to "
                f"{default}")


def test_delta_defaults_to_1e_5_everywhere():
    for f in (dl.epsilon, dl.calibrate, dl.nu_eff, dl.recommend_clip_norm, dl.train):
        assert inspect.signature(f).parameters["delta"].default == 1e-5, f.__name__
    assert dl.epsilon(0.01, 1000, 1.1) == dl.epsilon(0.01, 1000, 1.1, 1e-5)
    assert dl.calibrate(0.01, 1000, 2.0) == dl.calibrate(0.01, 1000, 2.0, 1e-5)


def test_old_names_are_gone():
    """`q` (now sample_rate) and `rnmm_epsilon` (now share, a fraction as the CLI's --share)."""
    assert dl.epsilon(sample_rate=0.01, steps=1000, noise_multiplier=1.1) == \
        dl.epsilon(0.01, 1000, 1.1)
    assert dl.calibrate(sample_rate=0.01, steps=1000, epsilon=2.0) == dl.calibrate(0.01, 1000, 2.0)
    assert dl.nu_eff(noise_multiplier=1.0, sample_rate=0.01, steps=1000, epsilon=2.0) == \
        dl.nu_eff(1.0, 0.01, 1000, 2.0, 1e-5)
    with pytest.raises(TypeError, match="'q'"):
        dl.epsilon(q=0.01, steps=1000, noise_multiplier=1.1)
    with pytest.raises(TypeError, match="rnmm_epsilon"):
        dl.recommend_clip_norm(per_sample_norms=[1.0, 2.0], epsilon=2.0, lo=1.0, hi=3.0,
                               rnmm_epsilon=0.3)
    with pytest.raises(TypeError, match="sample_rate"):
        dl.recommend_clip_norm(per_sample_norms=[1.0, 2.0], epsilon=2.0, lo=1.0, hi=3.0,
                               sample_rate=0.5)


def test_the_stubs_name_the_same_parameters(root):
    """python/dpsgd_lab.pyi's signatures list the module's parameters, in order."""
    text = (root / "python" / "dpsgd_lab.pyi").read_text()
    for name in ("epsilon", "calibrate", "nu_eff", "recommend_clip_norm", "train", "predict",
                 "accuracy", "audit_run", "private_min_lipschitz"):
        sigs = re.findall(rf"^def {name}\((.*?)\)\s*(?:->[^:]*)?:", text, re.S | re.M)
        assert sigs, name
        want = [p for p in inspect.signature(getattr(dl, name)).parameters]
        for s in sigs:
            while re.search(r"\[[^\[\]]*\]", s):  # drop subscripts: Literal["a", "b"]
                s = re.sub(r"\[[^\[\]]*\]", "", s)
            got = [p.split(":")[0].split("=")[0].strip() for p in s.split(",")]
            got = [g for g in got if g and g not in ("*", "/")]
            assert got == want, (name, got, want)


# CLI flags with no keyword of their own: the output format and help.
CLI_ONLY = {"json", "help"}


@pytest.mark.parametrize("func,sub", CASES[:2], ids=["epsilon", "calibrate"])
def test_every_cli_flag_has_its_keyword(cli_text, func, sub):
    """The other direction: each flag of `privacy epsilon` / `privacy calibrate` (epochs,
    batch_size, n, phase included) is a keyword of the Python function."""
    params = inspect.signature(func).parameters
    missing = [f for f in cli_options(cli_text(*sub, "--help"))
               if f not in CLI_ONLY and f not in params]
    assert not missing, f"{func.__name__} lacks the keywords {missing} of `dpsgd-lab {' '.join(sub)}`"


def test_epochs_and_phases_equal_the_cli():
    want = dl.epsilon(sample_rate=256 / 60000, steps=7032, noise_multiplier=1.1)
    assert dl.epsilon(epochs=30, batch_size=256, n=60000, noise_multiplier=1.1) == want
    z = dl.calibrate(epochs=30, batch_size=256, n=60000, epsilon=2.0)
    assert z == dl.calibrate(sample_rate=256 / 60000, steps=7032, epsilon=2.0)
    two = dl.epsilon(phase=["q=0.01,z=1.0,steps=1000", (0.02, 0.8, 500)])
    assert two == dl.epsilon(phase=[(0.01, 1.0, 1000), "q=0.02,z=0.8,steps=500"])
    assert two > dl.epsilon(0.01, 1000, 1.0)
    with pytest.raises(ValueError, match="sample_rate and steps, or epochs, batch_size and n"):
        dl.epsilon(epochs=30, batch_size=256, noise_multiplier=1.1)
    with pytest.raises(ValueError, match="phase replaces noise_multiplier"):
        dl.epsilon(0.01, 1000, 1.0, phase=["q=0.01,z=1.0,steps=1000"])


def test_value_errors_use_keyword_names():
    """The library's messages name CLI flags; Python's ValueError names keywords."""
    with pytest.raises(ValueError) as e:
        dl.epsilon(epochs=0.5, batch_size=256, n=100, noise_multiplier=1.1)
    assert "--" not in str(e.value), str(e.value)
    with pytest.raises(ValueError) as e:
        dl.recommend_clip_norm(np.ones((20, 2)), np.zeros(20), epsilon=2.0, std_share=2.0)
    assert "std_share" in str(e.value) and "--std-share" not in str(e.value), str(e.value)


def test_missing_theorem_inputs_are_named_by_keyword_all_at_once(cli_text):
    """A schedule without its problem constants names every missing one at once: the CLI by
    flag (--k --G ...), Python by keyword (k, G, ...), from one typed library error."""
    with pytest.raises(ValueError) as e:
        dl.schedule("J.1", phi=0.01)
    msg = str(e.value)
    assert "--" not in msg, msg
    names = msg.split(" needs ")[1].split(", which")[0].split(", ")
    assert {"k", "G", "gamma", "C"} <= set(names), msg
