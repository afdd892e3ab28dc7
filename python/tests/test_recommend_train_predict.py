"""recommend_clip_norm on arrays is `clipnorm recommend` (same defaults, same private
standardization, same numbers); train takes seed= without a config seed and returns w shaped as
the model; predict and accuracy agree with the model computed by hand in numpy."""
import math
import re
import warnings

import numpy as np
import pytest

import dpsgd_lab as dl

DATA = {"n": 800, "d": 5, "radial": {"k": 3.0, "g": 20.0, "law": {"family": "pareto", "alpha": 3.5}},
        "labels": {"kind": "multinomial", "classes": 3, "separable": True}}


@pytest.fixture(scope="module")
def xy():
    X, y = dl.generate(DATA, seed=2)
    # Shift and scale the features so that raw and standardized G_i differ a lot.
    return X * np.array([1.0, 10.0, 0.1, 3.0, 1.0]) + 5.0, y


def write_csv(path, X, y):
    header = ",".join([f"f{j}" for j in range(X.shape[1])] + ["label"])
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header=header, comments="",
               fmt="%.17g")


@pytest.mark.parametrize("standardize", [True, False])
def test_recommend_on_arrays_equals_the_cli_on_the_csv(cli, cli_text, tmp_path, xy, standardize):
    X, y = xy
    path = tmp_path / "d.csv"
    write_csv(path, X, y)
    flags = cli_text("clipnorm", "recommend", "--help")
    # Both in the research mode: by default each draws its noise from the OS and the two differ.
    args = ["clipnorm", "recommend", "--csv", path, "--label", "label", "--epsilon", 2,
            "--seed", 4, "--reproducible", "--json"]
    # Raw features: the default range [G(0), 3 G at ||x||^2 = d] misses these shifted rows
    # (the range check refuses), so the raw case gives a public range that covers them.
    bounds = {} if standardize else {"lo": 1.0, "hi": 1e4}
    for k, v in bounds.items():
        args += [f"--{k}", v]
    # The CLI's default may be either way (standardize by default, or only with the flag).
    if standardize and "--no-standardize" not in flags:
        args.append("--standardize")
    if not standardize and "--no-standardize" in flags:
        args.append("--no-standardize")
    rc, want, err = cli(*args)
    assert rc == 0, err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = dl.recommend_clip_norm(X, y, epsilon=2.0, seed=4, standardize=standardize,
                                     reproducible=True, **bounds)
    assert (got["standardization"] is not None) == standardize
    for k, v in got.items():
        # The CLI records in a ledger (the fixture gives each call its own); Python keeps none.
        if k in want and k not in ("ledger", "ledger_remaining", "ledger_notes"):
            assert v == want[k], k


def test_lo_hi_default_as_the_cli_and_standardize_is_the_default(xy):
    X, y = xy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = dl.recommend_clip_norm(X, y, epsilon=2.0)
    d = X.shape[1]
    # G(x) = sqrt(2 (||x||^2 + 1)) at x = 0, and 3 G at ||x||^2 = d (Appendix D).
    assert r["candidates_lo"] == pytest.approx(math.sqrt(2), rel=1e-15)
    assert r["candidates_hi"] == pytest.approx(3 * math.sqrt(2 * (d + 1)), rel=1e-15)
    s = r["standardization"]
    assert s is not None and s["method"] != "public"
    # The whole budget is accounted: standardization (0.1 eps) + range check (0.05) + RNMM
    # (0.3) + DP-SGD.
    assert s["epsilon"] == pytest.approx(0.2, rel=1e-12)
    # Composed (RDP, bisection on z to 1e-6): within the total, never above it.
    assert 2.0 * (1 - 1e-5) <= r["total_epsilon"] <= 2.0 * (1 + 1e-12)
    assert r["total_delta"] == pytest.approx(1e-5, rel=1e-12)
    assert r["n"] == 800 and r["d"] == d and r["batch_size"] == 80 and r["steps"] == 300
    # Public scales cost nothing and are used as given.
    pub = np.column_stack([X.mean(axis=0), X.std(axis=0)])
    r = dl.recommend_clip_norm(X, y, epsilon=2.0, public_scales=pub)
    assert r["standardization"]["epsilon"] == 0.0
    np.testing.assert_array_equal(r["standardization"]["mean"], pub[:, 0])
    assert r["basic_dpsgd_epsilon"] == pytest.approx(1.65, rel=1e-12)
    assert r["dpsgd_epsilon"] > 1.65


def test_recommend_input_errors(xy):
    X, y = xy
    norms = np.linalg.norm(X, axis=1)
    with pytest.raises(ValueError, match="per_sample_norms="):
        dl.recommend_clip_norm(norms, y, epsilon=2.0)
    with pytest.raises(ValueError, match="not both"):
        dl.recommend_clip_norm(X, y, epsilon=2.0, per_sample_norms=norms)
    with pytest.raises(ValueError, match="nothing to standardize"):
        dl.recommend_clip_norm(per_sample_norms=norms, epsilon=2.0, lo=1, hi=9, std_share=0.2)
    with pytest.raises(ValueError, match="need standardize=True"):
        dl.recommend_clip_norm(X, y, epsilon=2.0, standardize=False, std_share=0.2)
    with pytest.raises(ValueError, match=r"shape \(d, 2\)"):
        dl.recommend_clip_norm(X, y, epsilon=2.0, public_scales=np.ones((5, 3)))


@pytest.mark.parametrize("extra", [["--no-standardize"]])
def test_a_range_the_cli_refuses_raises_its_message(cli, keywords, root, extra):
    """breast_cancer at epsilon 2: raw features miss the standardized range, so the private
    range check refuses; Python raises ValueError with the CLI's message, word for word. The
    message carries the noisy count, so both run in the research mode (same seed, same count)."""
    path = root / "data" / "breast_cancer.csv"
    rc, _, err = cli("clipnorm", "recommend", "--csv", path, "--label", "target",
                     "--epsilon", 2, "--reproducible", *extra)
    assert rc == 2 and err.startswith("error: the candidate range"), err
    table = np.loadtxt(path, delimiter=",", skiprows=1)
    header = path.read_text().splitlines()[0].split(",")
    j = header.index("target")
    X, y = np.delete(table, j, axis=1), table[:, j]
    with pytest.raises(ValueError) as e, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dl.recommend_clip_norm(X, y, epsilon=2.0, standardize=not extra, reproducible=True)
    # The CLI's refusal also names what its ledger has left; Python (no ledger) says the rest.
    cli_msg, n = re.subn(r"; its ledger \S+ has epsilon [0-9.]+ left, so a retry on these rows "
                         r"needs --epsilon <= that\)$", ")", err.strip().removeprefix("error: "))
    assert n == 1, err
    assert str(e.value) == keywords(cli_msg)


def test_largest_candidate_warns():
    """All G_i above the range: every candidate has utility -1, the selection is uniform; the
    seed below selects the last candidate, and the CLI's note becomes a warning. (The range
    check, which would refuse this range, is skipped: check_epsilon=0.)"""
    norms = np.full(50, 1e3)
    hits = []
    for seed in range(200):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = dl.recommend_clip_norm(per_sample_norms=norms, epsilon=2.0, lo=1, hi=2,
                                       grid_size=4, seed=seed, steps=10, batch_size=5,
                                       check_epsilon=0, reproducible=True)
        assert r["at_range_end"] == any("largest candidate" in str(x.message) for x in w)
        assert any("not a private release" in str(x.message) for x in w)
        hits.append(r["at_range_end"])
    # Binomial(200, 1/4): mean 50, sd 6.1; these bounds are 4.9 sd away.
    assert 20 < sum(hits) < 80


CONFIG = {"loss": {"family": "logistic"},
          "dpsgd": {"steps": 40, "batch_size": 40, "learning_rate": 0.5, "clip_norm": 2.0,
                    "noise": {"kind": "multiplier", "z": 0.8}, "output": "last_iterate"}}


@pytest.mark.filterwarnings("ignore:reproducible")
def test_seed_argument_makes_the_config_seed_optional(xy, tmp_path):
    """seed= stands in for the config's seed. On arrays the seed replays the run only in the
    research mode (reproducible=True or the config's key); by default the run draws from the
    OS and two calls differ."""
    X, y = xy
    a = dl.train(X, y, config=CONFIG, seed=5, reproducible=True)
    b = dl.train(X, y, config={"seed": 5, "reproducible": True, **CONFIG})
    c = dl.train(X, y, config={"seed": 9, **CONFIG}, seed=5, reproducible=True)
    assert a["randomness"] == b["randomness"] == c["randomness"] == "seeded"
    for r in (b, c):
        np.testing.assert_array_equal(a["w_priv"], r["w_priv"])
        assert a["f_w_priv"] == r["f_w_priv"]
    d = dl.train(X, y, config=CONFIG, seed=5)
    assert d["randomness"] == "os" and d["f_w_priv"] != a["f_w_priv"]
    # A TOML file without a seed, and with [data]: the same.
    path = tmp_path / "noseed.toml"
    path.write_text('[data]\nsource = "generated"\nn = 300\nd = 4\n'
                    'labels = { kind = "multinomial", classes = 2, separable = true }\n'
                    '[loss]\nfamily = "logistic"\n[dpsgd]\nsteps = 20\nbatch_size = 30\n'
                    'learning_rate = 0.2\nclip_norm = 1.0\nnoise = { kind = "multiplier", z = 1.0 }\n')
    f = dl.train(config=str(path), seed=3)
    g = dl.train(config=str(_with_seed(path, tmp_path)))
    assert f["f_w_priv"] == g["f_w_priv"]
    with pytest.raises(ValueError, match=r"seed is missing: add `seed = <integer>` .* seed="):
        dl.train(X, y, config=CONFIG)


def _with_seed(path, tmp_path):
    p = tmp_path / "seed3.toml"
    p.write_text("seed = 3\n" + path.read_text())
    return p


def test_config_errors_have_one_prefix(xy):
    X, y = xy
    bad = {"seed": 1, **CONFIG, "dpsgd": {**CONFIG["dpsgd"], "bogus": 1}}
    with pytest.raises(ValueError) as e:
        dl.train(X, y, config=bad)
    msg = str(e.value)
    assert msg.startswith("config: ") and msg.count("config") == 1 and "bogus" in msg, msg
    with pytest.raises(ValueError) as e:
        dl.train(X, y, config=CONFIG | {"dpsgd": {"steps": 10}}, seed=1)
    assert str(e.value).startswith("config: ") and "config: config" not in str(e.value)
    with pytest.raises(ValueError) as e:
        dl.generate({"n": 10, "d": 2, "bogus": 1})
    assert "config: config" not in str(e.value) and "bogus" in str(e.value)
    # A loss dict: the key path, no line of a TOML the user never wrote.
    with pytest.raises(ValueError) as e:
        dl.per_sample_lipschitz(X, y, loss={"family": "nope"})
    assert str(e.value).startswith("config: loss: unknown variant `nope`"), str(e.value)


def softmax_predict(W, X):
    return (X @ W[:, :-1].T + W[:, -1]).argmax(axis=1)


def test_predict_and_accuracy_match_the_model_by_hand(xy):
    X, y = xy
    r = dl.train(X, y, config=CONFIG, seed=1)
    W = r["w_priv"]
    assert W.shape == (3, 6)  # m classes x (d features + bias)
    pred = dl.predict(W, X)
    assert pred.dtype == np.int64 and pred.shape == (800,)
    np.testing.assert_array_equal(pred, softmax_predict(W, X))
    acc = dl.accuracy(W, X, y)
    assert acc == np.mean(softmax_predict(W, X) == y)
    assert acc > 0.5  # separable labels, 3 classes: well above chance 1/3
    # The flat layout (as the CLI's JSON) and an explicit class count give the same.
    np.testing.assert_array_equal(dl.predict(W.ravel(), X, loss={"family": "logistic",
                                                              "classes": 3}), pred)
    with pytest.raises(ValueError, match="parameters"):
        dl.predict(W.ravel()[:-1], X)
    with pytest.raises(ValueError, match="parameters"):
        dl.predict(W, X, loss={"family": "logistic", "classes": 4})


def test_predict_tanh_net_and_huber():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    h, m = 4, 3
    W1, W2 = rng.normal(size=(h, 4)), rng.normal(size=(m, h + 1))
    w = np.concatenate([W1.ravel(), W2.ravel()])
    a = np.tanh(X @ W1[:, :-1].T + W1[:, -1])
    want = (a @ W2[:, :-1].T + W2[:, -1]).argmax(axis=1)
    np.testing.assert_array_equal(dl.predict(w, X, loss={"family": "tanh_net", "hidden": h}), want)
    wh = rng.normal(size=3)
    got = dl.predict(wh, X, loss="huber")
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, X @ wh, rtol=1e-14)
    with pytest.raises(ValueError, match="classification"):
        dl.accuracy(wh, X, np.zeros(50), loss="huber")
    with pytest.raises(ValueError, match="no predictive model"):
        dl.predict(wh, X, loss="sharp")


def test_feature_ranges_from_arrays_equal_the_cli_file(cli, root):
    """The recipe's public ranges given as an array equal the CLI's --feature-ranges file: the
    same hash split, transform, tau, step size and budget, bit for bit (tau is RNMM's draw, so
    both in the research mode)."""
    path = root / "data" / "breast_cancer.csv"
    ranges_file = root / "data" / "breast_cancer.ranges.csv"
    rc, want, err = cli("clipnorm", "recommend", "--csv", path, "--label", "target",
                        "--epsilon", 2, "--feature-ranges", ranges_file, "--test-fraction", 0.2,
                        "--epochs", 30, "--seed", 3, "--reproducible", "--json")
    assert rc == 0, err
    table = np.loadtxt(path, delimiter=",", skiprows=1)
    header = path.read_text().splitlines()[0].split(",")
    j = header.index("target")
    X, y = np.delete(table, j, axis=1), table[:, j]
    ranges = np.loadtxt(ranges_file, delimiter=",", skiprows=1, usecols=(1, 2))
    with pytest.warns(UserWarning, match="not a private release"):
        got = dl.recommend_clip_norm(X, y, epsilon=2.0, feature_ranges=ranges,
                                     test_fraction=0.2, epochs=30, seed=3, reproducible=True)
    for k in ("clip_norm", "learning_rate", "noise_multiplier", "steps", "batch_size", "n",
              "n_test", "stages", "split"):
        assert got[k] == want[k], k
    assert got["preprocess"]["center"] == want["preprocess"]["center"]
    assert got["preprocess"]["scale"] == want["preprocess"]["scale"]
