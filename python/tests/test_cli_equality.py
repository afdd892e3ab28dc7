"""`train`, `schedule`, `generate`, `describe` and `phi` from Python equal the CLI's `--json`
output bit for bit (every float compared with ==, after JSON's exact round trip)."""
import tomllib

import numpy as np
import pytest

import dpsgd_lab as dl

GENERATED = """
seed = {seed}
[data]
source = "generated"
n = 600
d = 6
labels = {{ kind = "multinomial", classes = 3, separable = true }}
[data.radial]
k = 3.0
g = 2.0
law = {{ family = "pareto", alpha = 3.5 }}
[loss]
{loss}
[dpsgd]
steps = 120
batch_size = 30
learning_rate = 0.2
clip_norm = 1.0
noise = {noise}
{extra}
"""

CONFIGS = {
    "theorem34": dict(seed=7, loss='family = "logistic"',
                      noise='{ kind = "theorem34", nu = 1.0, epsilon = 2.0, delta = 1e-5 }',
                      extra='output = "random_iterate"'),
    "target_pld": dict(seed=11, loss='family = "logistic"',
                       noise='{ kind = "target", epsilon = 1.0, delta = 1e-5, accountant = "pld" }',
                       extra='projection = { kind = "l2_ball", radius = 5.0 }\noutput = "last_iterate"'),
    "multiplier_huber": dict(seed=3, loss='family = "huber"\nc = 0.5',
                             noise='{ kind = "multiplier", z = 1.3 }',
                             extra='output = "average_iterate"'),
}


def summary_without_time(d):
    d = dict(d)
    d.pop("wall_time_s")
    for k in ("w_priv", "w_last", "w_avg"):
        d.pop(k, None)
    return d


def write(tmp_path, name, text):
    p = tmp_path / f"{name}.toml"
    p.write_text(text)
    return p


def config_text(name):
    c = CONFIGS[name]
    return GENERATED.format(**c)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_train_equals_cli(cli, tmp_path, name):
    text = config_text(name)
    path = write(tmp_path, name, text)
    rc, want, err = cli("train", "--config", path, "--json")
    assert rc == 0, err
    want.pop("wall_time_s")
    # The config as a dict, and as a path.
    got = dl.train(config=tomllib.loads(text))
    assert summary_without_time(got) == want
    assert summary_without_time(dl.train(config=str(path))) == want
    # The iterates have the parameter count and give the reported risk's run.
    # Logistic: (m, d + 1) = (3 classes, 6 features + bias); huber: flat, d entries.
    shape = (3, 7) if "logistic" in text else (want["params"],)
    assert got["w_priv"].shape == shape and got["w_priv"].dtype == np.float64
    assert got["w_priv"].size == want["params"]


def test_train_seed_override_equals_cli(cli, tmp_path):
    text = config_text("theorem34")
    path = write(tmp_path, "c", text)
    rc, want, _ = cli("train", "--config", path, "--json", "--seed", 99, "--accountant", "pld")
    assert rc == 0
    want.pop("wall_time_s")
    got = dl.train(config=tomllib.loads(text), seed=99, accountant="pld")
    assert summary_without_time(got) == want
    assert want["privacy"]["accountant"] == "pld"


@pytest.mark.parametrize("layout", ["c", "fortran", "strided"])
def test_train_on_arrays_equals_cli(cli, tmp_path, layout):
    """generate() draws the data train draws (replicate 0); train(X, y, config without [data])
    on them, in any memory layout, is the CLI's run. The CLI's run on generated data is a
    simulation (seeded); arrays are a user's data, drawn from the OS unless reproducible=True,
    so the equality holds in the research mode."""
    text = config_text("theorem34")
    path = write(tmp_path, "c", text)
    rc, want, _ = cli("train", "--config", path, "--json")
    assert rc == 0
    want.pop("wall_time_s")
    cfg = tomllib.loads(text)
    X, y = dl.generate(str(path))
    assert X.dtype == np.float64 and X.flags["C_CONTIGUOUS"] and X.shape == (600, 6)
    assert y.shape == (600,)
    if layout == "fortran":
        X = np.asfortranarray(X)
        assert not X.flags["C_CONTIGUOUS"]
    elif layout == "strided":
        big = np.zeros((X.shape[0], 2 * X.shape[1]))
        big[:, ::2] = X
        X = big[:, ::2]
        assert not X.flags["C_CONTIGUOUS"] and not X.flags["F_CONTIGUOUS"]
    del cfg["data"]
    assert want["randomness"] == "seeded"
    got = dl.train(X, y, config=cfg, reproducible=True)
    assert summary_without_time(got) == want


def test_generate_equals_cli_csv(cli, tmp_path):
    text = config_text("multiplier_huber")
    path = write(tmp_path, "g", text)
    out = tmp_path / "g.csv"
    rc, rep, _ = cli("data", "generate", "--generator", path, "--seed", 5, "--out", out, "--json")
    assert rc == 0
    X, y = dl.generate(str(path), seed=5)
    table = np.loadtxt(out, delimiter=",", skiprows=1)
    header = out.read_text().splitlines()[0].split(",")
    t = header.index("target")
    np.testing.assert_array_equal(np.delete(table, t, axis=1), X)
    np.testing.assert_array_equal(table[:, t], y)
    # The dict form of the same spec draws the same data.
    spec = tomllib.loads(text)["data"]
    del spec["source"]
    X2, y2 = dl.generate(spec, seed=5)
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)


def test_describe_equals_cli(cli, tmp_path):
    text = config_text("theorem34")
    path = write(tmp_path, "d", text)
    rc, want, _ = cli("data", "describe", "--generator", path, "--k", 2, "--json")
    assert rc == 0
    X, y = dl.generate(str(path))
    got = dl.describe(X, y, loss="logistic", k=2.0)
    assert got == want["summary"]
    g = dl.per_sample_lipschitz(X, y)
    assert g.shape == (600,) and g.dtype == np.float64
    assert g.min() == want["summary"]["min"] and g.max() == want["summary"]["max"]


SCHEDULES = [
    ("J.1", dict(k=3, G=1, phi=0.01, gamma=0.1, C=1, dist0=1),
     "--theorem J.1 --k 3 --G 1 --phi 0.01 --gamma 0.1 --C 1 --dist0 1"),
    ("6.2", dict(k=3, G=1, n=10000, d=10, epsilon=1, delta=1e-5, nu=1, gamma=0.1, C=1, dist0=1),
     "--theorem 6.2 --k 3 --G 1 --n 10000 --d 10 --eps 1 --delta 1e-5 --nu 1 --gamma 0.1 --C 1 "
     "--dist0 1"),
    ("H.1", dict(phi=0.01, G_n=5, alpha=2, Delta=0.1, tau=1, C=1, dist0=1),
     "--theorem H.1 --phi 0.01 --G-n 5 --alpha 2 --Delta 0.1 --tau 1 --C 1 --dist0 1"),
    ("K.1", dict(k=4, G=1, D=1, C=1, phi=0.01), "--theorem K.1 --k 4 --G 1 --D 1 --C 1 --phi 0.01"),
    ("N.1", dict(k=3, G=1, L=1, f_gap=1, C=1, gamma=0.1, phi=0.01),
     "--theorem N.1 --k 3 --G 1 --L 1 --f-gap 1 --C 1 --gamma 0.1 --phi 0.01"),
    ("I.1", dict(k="inf", G=1, D_W=2, gamma=0.1, phi=0.01),
     "--theorem I.1 --k inf --G 1 --D-W 2 --gamma 0.1 --phi 0.01"),
    ("I.1", dict(k=float("inf"), G=1, D_W=2, gamma=0.1, phi=0.01, T=500),
     "--theorem I.1 --k inf --G 1 --D-W 2 --gamma 0.1 --phi 0.01 --T 500"),
    ("L.1", dict(k=2, G=1, n=100, d=8, epsilon=1, delta=0.5, nu=1, c_lower=1),
     "--theorem L.1 --k 2 --G 1 --n 100 --d 8 --eps 1 --delta 0.5 --nu 1 --c-lower 1"),
]


@pytest.mark.parametrize("theorem,params,flags", SCHEDULES)
def test_schedule_equals_cli(cli, theorem, params, flags):
    rc, want, err = cli("theory", "schedule", *flags.split(), "--json")
    assert rc == 0, err
    got = dl.schedule(theorem, **params)
    assert got == want
    # The fields are there.
    for k in ("steps", "tau", "eta", "bound", "terms", "probability", "phi_exponent"):
        assert k in got


def test_lower_bound_warnings_reach_python():
    got = dl.schedule("L.1", k=2, G=1, n=100, d=8, epsilon=1, delta=0.5, nu=1, c_lower=1)
    assert any("hypothesis fails" in n for n in got["notes"])


def test_phi_equals_cli(cli):
    rc, want, _ = cli("theory", "phi", "--n", 10000, "--d", 10, "--eps", 1, "--delta", 1e-5,
                      "--nu", 1, "--json")
    assert rc == 0
    assert dl.phi(10000, 10, 1.0, 1e-5, 1.0) == want["phi"]


def test_lower_bound_instance_equals_train_data_and_cli(cli):
    """The instance's data are the appendix_l source's data; w*, f* are the CLI's (Eq. 105)."""
    inst = dl.lower_bound_instance(2000, 16, 3.0, 1.0, 1e-5, seed=4)
    rc, want, _ = cli("lower-bound", "--n", 2000, "--d", 16, "--k", 3, "--eps", 1, "--delta",
                      1e-5, "--seed", 4, "--draws", 10, "--json")
    assert rc == 0
    assert inst["X"].shape == (2000, 16) and inst["y"].shape == (2000,)
    assert inst["p"] == want["rows"][0]["p"]
    assert inst["f_star"] == want["rows"][0]["f_star"]
    assert inst["G"] == want["g"]
    np.testing.assert_array_equal(inst["w_star_population"], want["w_star"])
    # Nonzero rows are v / p^(1/k) (Appendix L), and there are about n p of them.
    nz = np.abs(inst["X"]).sum(axis=1) > 0
    assert nz.sum() > 0
    np.testing.assert_allclose(inst["X"][nz][0], inst["v"] / inst["p"] ** (1 / 3), rtol=1e-12)
