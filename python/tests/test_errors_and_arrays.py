"""Bad input raises ValueError with the CLI's message (the text after `error: `); arrays come
back as float64 numpy arrays of the right shape, and any array-like goes in."""
import numpy as np
import pytest

import dpsgd_lab as dl


def cli_message(cli, *args):
    rc, _, err = cli(*args)
    assert rc == 2, err
    assert err.startswith("error: ") and "\n" not in err
    return err[len("error: "):]


@pytest.mark.parametrize("args,call", [
    (("privacy", "epsilon", "--q", 0.01, "--z", 1.1, "--steps", 100, "--delta", 2.0),
     lambda: dl.epsilon(0.01, 100, 1.1, 2.0)),
    (("privacy", "epsilon", "--q", 1.5, "--z", 1.1, "--steps", 100, "--delta", 1e-5),
     lambda: dl.epsilon(1.5, 100, 1.1, 1e-5)),
    (("privacy", "epsilon", "--q", 0.01, "--z", 0, "--steps", 100, "--delta", 1e-5),
     lambda: dl.epsilon(0.01, 100, 0.0, 1e-5)),
    (("privacy", "epsilon", "--q", 0.01, "--z", 1.1, "--steps", 100, "--delta", 1e-5,
      "--accountant", "moments"),
     lambda: dl.epsilon(0.01, 100, 1.1, 1e-5, accountant="moments")),
    (("privacy", "calibrate", "--q", 0.01, "--steps", 100, "--epsilon=-1", "--delta", 1e-5),
     lambda: dl.calibrate(0.01, 100, -1.0, 1e-5)),
    (("privacy", "zcdp", "--epsilon", 1, "--delta", 0),
     lambda: dl.zcdp(1.0, 0.0)),
    (("theory", "schedule", "--theorem", "Z.9", "--phi", 0.1),
     lambda: dl.schedule("Z.9", phi=0.1)),
    (("theory", "schedule", "--theorem", "6.2", "--phi", 0.01, "--k", 3, "--G", 1),
     lambda: dl.schedule("6.2", phi=0.01, k=3, G=1)),
    (("theory", "schedule", "--theorem", "J.1"),
     lambda: dl.schedule("J.1")),
    (("theory", "schedule", "--theorem", "J.1", "--phi", 1.5),
     lambda: dl.schedule("J.1", phi=1.5)),
    (("theory", "phi", "--n", 100, "--d", 10, "--eps", 1, "--delta", 1e-5, "--nu=-1"),
     lambda: dl.phi(100, 10, 1.0, 1e-5, -1.0)),
])
def test_errors_are_the_clis(cli, keywords, args, call):
    want = keywords(cli_message(cli, *args))
    with pytest.raises(ValueError) as e:
        call()
    assert str(e.value) == want


BAD_CONFIGS = {
    "unknown_key": 'seed = 1\nbogus = 2\n',
    "b_gt_n": None,
    "bad_epsilon": None,
}

BASE = """seed = 1
[data]
source = "generated"
n = 50
d = 3
labels = {{ kind = "multinomial", classes = 2, separable = true }}
[loss]
family = "logistic"
[dpsgd]
steps = 10
batch_size = {b}
learning_rate = 0.1
clip_norm = 1.0
noise = {{ kind = "theorem34", nu = 1.0, epsilon = {eps}, delta = 1e-5 }}
{extra}
"""


@pytest.mark.parametrize("text", [
    BASE.format(b=100, eps=1.0, extra=""),
    BASE.format(b=10, eps=-1.0, extra=""),
    BASE.format(b=10, eps=1.0, extra="bogus = 3"),
    BASE.format(b=10, eps=1.0, extra="").replace("logistic", "no_such_loss"),
])
def test_train_config_errors_are_the_clis(cli, tmp_path, text):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    want = cli_message(cli, "train", "--config", path)
    with pytest.raises(ValueError) as e:
        dl.train(config=str(path))
    assert str(e.value) == want


def test_missing_file_is_the_clis(cli, tmp_path):
    path = tmp_path / "absent.toml"
    want = cli_message(cli, "train", "--config", path)
    with pytest.raises(ValueError) as e:
        dl.train(config=str(path))
    assert str(e.value) == want


def data(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.integers(0, 2, size=n).astype(np.float64)


def test_array_errors():
    X, y = data()
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN|finite"):
        dl.per_sample_lipschitz(Xn, y)
    with pytest.raises(ValueError, match="dimension mismatch"):
        dl.per_sample_lipschitz(X, y[:-1])
    with pytest.raises(ValueError, match="2-D"):
        dl.per_sample_lipschitz(X[:, 0], y)
    with pytest.raises(ValueError, match="1-D"):
        dl.private_min_lipschitz(X, 0.3, 1.0, 10.0)
    with pytest.raises(ValueError, match="not both"):
        dl.train(X, y, config={"seed": 1, "data": {"source": "generated"}})
    with pytest.raises(ValueError, match="both X and y"):
        dl.train(X, config={"seed": 1})
    with pytest.raises(ValueError, match="unknown parameter 'gama'"):
        dl.schedule("J.1", phi=0.01, gama=0.1)


def test_any_array_like_and_layout_gives_the_same_float64_result():
    X, y = data()
    g = dl.per_sample_lipschitz(X, y)
    assert g.dtype == np.float64 and g.shape == (40,) and g.flags["C_CONTIGUOUS"]
    # Softmax/logistic G(x, y) = sqrt(2 (||x||^2 + 1)) is a function of ||x|| only (Section 5).
    np.testing.assert_array_equal(dl.per_sample_lipschitz(np.asfortranarray(X), y), g)
    np.testing.assert_array_equal(dl.per_sample_lipschitz(X.tolist(), y.tolist()), g)
    big = np.zeros((80, 6))
    big[::2, ::2] = X
    np.testing.assert_array_equal(dl.per_sample_lipschitz(big[::2, ::2], y), g)
    np.testing.assert_array_equal(dl.per_sample_lipschitz(X, y.astype(np.int64)), g)
    Xi = np.arange(120, dtype=np.int32).reshape(40, 3)
    np.testing.assert_array_equal(dl.per_sample_lipschitz(Xi, y),
                                  dl.per_sample_lipschitz(Xi.astype(np.float64), y))


def test_generate_and_lower_bound_arrays():
    X, y = dl.generate({"n": 30, "d": 4, "labels": {"kind": "multinomial", "classes": 2, "separable": False}}, seed=1)
    assert X.shape == (30, 4) and y.shape == (30,)
    assert X.dtype == np.float64 and y.dtype == np.float64 and X.flags["C_CONTIGUOUS"]
    inst = dl.lower_bound_instance(500, 8, 2.0, 1.0, 1e-5)
    for k in ("X", "y", "w_star", "v", "w_star_population"):
        assert inst[k].dtype == np.float64
    assert inst["w_star"].shape == (8,)


def test_train_returns_iterates_as_arrays():
    X, y = data(200, 4)
    cfg = {"seed": 3, "loss": {"family": "logistic"},
           "dpsgd": {"steps": 20, "batch_size": 20, "learning_rate": 0.1, "clip_norm": 1.0,
                     "noise": {"kind": "multiplier", "z": 1.0}}}
    r = dl.train(X, y, config=cfg)
    for k in ("w_priv", "w_last", "w_avg"):
        # Logistic on d = 4 features, 2 classes: W is (m, d + 1), bias last.
        assert r[k].dtype == np.float64 and r[k].shape == (2, 5) and r[k].size == r["params"]
    assert 0 <= r["clipped_fraction"] <= 1
    assert r["privacy"]["epsilon_spent"] > 0
    # numpy scalars in the config are the numbers they hold.
    cfg2 = {**cfg, "dpsgd": {**cfg["dpsgd"], "steps": np.int64(20), "learning_rate": np.float64(0.1)}}
    # Arrays are a user's data: the run draws from the OS, so only the research mode replays.
    assert r["randomness"] == "os"
    r = dl.train(X, y, config=cfg, reproducible=True)
    r2 = dl.train(X, y, config=cfg2, reproducible=True)
    assert r["randomness"] == r2["randomness"] == "seeded"
    assert r2["f_w_priv"] == r["f_w_priv"]


@pytest.mark.parametrize("norms", [[], [1.0, -0.5, 2.0], [1.0, float("nan")]])
def test_recommend_clip_norm_refuses_empty_or_negative_norms(norms):
    with pytest.raises(ValueError):
        dl.recommend_clip_norm(per_sample_norms=norms, epsilon=2.0, lo=0.1, hi=10.0)


def test_huge_grid_and_instance_raise_instead_of_aborting():
    with pytest.raises(ValueError, match="grid_size"):
        dl.private_min_lipschitz([1.0, 2.0], 1.0, 0.1, 10.0, grid_size=10**15)
    with pytest.raises(ValueError, match="memory"):
        dl.lower_bound_instance(10**12, 10**6, 2.0, 1.0, 1e-5)
