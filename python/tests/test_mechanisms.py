"""RNMM (private minimum of the G_i), the clip-norm recommendation, run_spec, and the GIL."""
import math
import threading
import time

import numpy as np
import pytest

import dpsgd_lab as dl


def exact_rnmm_probabilities(g, eps, lo, hi, m, k=1):
    """P(j) ∝ exp(eps u_j / 2), u_j = -|#{G_i <= c_j} - k|, c_j = lo (hi/lo)^(j/(m-1))."""
    c = lo * (hi / lo) ** (np.arange(m) / (m - 1))
    n_j = np.searchsorted(np.sort(g), c, side="right")
    u = -np.abs(n_j - k)
    w = np.exp(eps * (u - u.max()) / 2)
    return c, w / w.sum()


@pytest.mark.filterwarnings("ignore:reproducible=True")
def test_rnmm_selection_frequencies_match_the_exponential_mechanism():
    g = np.array([1.7, 2.2, 2.9, 4.0, 6.5, 9.0])
    eps, lo, hi, m = 2.0, 1.0, 10.0, 12
    c, p = exact_rnmm_probabilities(g, eps, lo, hi, m)
    draws = 4000
    counts = np.zeros(m)
    for s in range(draws):
        # The research mode: fixed seeds, so the test is deterministic (the default draws from
        # the OS; the sampler is the same).
        o = dl.private_min_lipschitz(g, eps, lo, hi, seed=s, grid_size=m, reproducible=True)
        assert o["value"] == c[o["index"]] or math.isclose(o["value"], c[o["index"]], rel_tol=1e-14)
        assert o["epsilon"] == eps
        counts[o["index"]] += 1
    # Each frequency within 4 standard errors sqrt(p (1 - p) / draws) of its exact probability.
    se = np.sqrt(p * (1 - p) / draws)
    assert np.all(np.abs(counts / draws - p) <= 4 * se + 1e-12), (counts / draws, p)


def test_rnmm_replays_its_seed_only_in_the_research_mode():
    """reproducible=True is a function of the seed (and warns it is not private); the default
    draws from the OS, so the seed does not replay it. At eps = 0.3 over 200 candidates no
    index has probability above 0.05 here (utilities within 50 of each other, exp(0.15 * 50)
    spread over >= 20 near-ties), so 20 default draws all equal has probability < 0.05^19."""
    g = np.linspace(1.5, 8.0, 50)
    with pytest.warns(UserWarning, match="not a private release"):
        a = dl.private_min_lipschitz(g, 0.3, 1.0, 10.0, seed=12, reproducible=True)
    with pytest.warns(UserWarning, match="not a private release"):
        assert a == dl.private_min_lipschitz(g, 0.3, 1.0, 10.0, seed=12, reproducible=True)
    c, p = exact_rnmm_probabilities(g, 0.3, 1.0, 10.0, 200)
    assert p.max() < 0.05
    draws = {dl.private_min_lipschitz(g, 0.3, 1.0, 10.0, seed=12)["index"] for _ in range(20)}
    assert len(draws) > 1, draws


def test_recommend_clip_norm_brackets_the_minimum_and_spends_the_budget():
    rng = np.random.default_rng(0)
    norms = np.concatenate([[2.0], 3.0 + rng.pareto(3.0, size=499)])
    # A large RNMM budget makes the selection (nearly) exact: a candidate c_j in
    # [G_(1), G_(2)) = [2, 3), the only ones where #{G_i <= c_j} = 1 (utility 0; all others
    # have utility <= -1 and together probability <= 400 exp(-25)).
    r = dl.recommend_clip_norm(per_sample_norms=norms, epsilon=60.0, lo=1.0, hi=50.0,
                               share=50.0 / 60.0, grid_size=400, batch_size=5, steps=1000)
    s = np.sort(norms)
    assert s[0] <= r["clip_norm"] < s[1]
    # The range check's default 0.05 comes out of the budget too.
    assert r["range_check"]["epsilon"] == 0.05
    # The stages compose in RDP or by adding epsilons, whichever leaves DP-SGD less noise.
    assert r["rnmm_epsilon"] == 50.0
    assert r["basic_dpsgd_epsilon"] == pytest.approx(9.95, rel=1e-14)
    assert r["dpsgd_epsilon"] >= 9.95 * (1 - 1e-9)
    assert r["total_epsilon"] <= 60.0 * (1 + 1e-12) and r["delta"] == 1e-5
    assert r["q"] == 0.01 and r["standardization"] is None and r["d"] is None
    assert r["noise_multiplier"] <= dl.calibrate(0.01, 1000, 9.95, 1e-5) * (1 + 1e-9)
    # At the paper's eps_RNMM = 0.3 (the default share) it is still a candidate of the public
    # grid; steps and batch size default as the CLI's (30 epochs at min(500, n / 10)).
    r = dl.recommend_clip_norm(per_sample_norms=norms, epsilon=2.0, lo=1.0, hi=50.0)
    c = 1.0 * 50.0 ** (np.arange(200) / 199)
    assert np.isclose(c, r["clip_norm"], rtol=1e-14).any()
    assert r["rnmm_epsilon"] == pytest.approx(0.3, rel=1e-14)
    assert r["basic_dpsgd_epsilon"] == pytest.approx(1.65, rel=1e-14)
    assert r["dpsgd_epsilon"] > 1.65
    assert r["batch_size"] == 50 and r["steps"] == 30 * 10
    with pytest.raises(ValueError, match="share"):
        dl.recommend_clip_norm(per_sample_norms=norms, epsilon=0.2, lo=1.0, hi=50.0)
    with pytest.raises(ValueError, match="give lo and hi"):
        dl.recommend_clip_norm(per_sample_norms=norms, epsilon=2.0, lo=1.0)


def test_long_calls_release_the_gil():
    """While a PLD calibration runs in a worker thread, the main thread keeps running: the
    longest pause between its loop iterations is far shorter than the call (holding the GIL
    would stall it for the whole call)."""
    done = threading.Event()
    span = {}

    def work():
        # Ten PLD calibrations (about 0.1 s each on 2 cores): long enough to tell a stall of the
        # main thread from its sleep.
        t0 = time.perf_counter()
        for _ in range(10):
            dl.calibrate(0.01, 2000, 1.0, 1e-6, accountant="pld")
        span["call"] = time.perf_counter() - t0
        done.set()

    th = threading.Thread(target=work)
    last, gap = time.perf_counter(), 0.0
    th.start()
    while not done.is_set():
        now = time.perf_counter()
        gap = max(gap, now - last)
        last = now
        time.sleep(0.001)
    th.join()
    assert span["call"] > 0.05, "the call is too short to tell"
    assert gap < 0.5 * span["call"], (gap, span["call"])


SPEC = """name = "py_tiny_sharp"
title = "tiny"
theorem = "6.5"
seed = 65
loss = {{ family = "sharp" }}
batch_size = 10.0
fresh_data = true
[data]
source = "generated"
n = 200
d = 3
radial = {{ k = 2.0, g = 1.0, law = {{ family = "pareto", alpha = 2.5 }} }}
labels = {{ kind = "sharp_centers", spread = 1.0 }}
[privacy]
nu = 1.0
delta = 1e-5
[sweep]
vary = "epsilon"
[constants]
dist0 = 1.0
c = "optimal"
[quick]
phi_max = 0.1
phi_min = 0.01
points = 3
replicates = 3
iterates = 4
bootstrap = 50
[full]
phi_max = 0.1
phi_min = 0.01
points = 3
replicates = 3
iterates = 4
bootstrap = 50
[[series]]
k = 2.0
law = {{ family = "pareto", alpha = 2.5 }}
"""


def test_run_spec_rows_equal_the_cli_table(cli_text, tmp_path):
    spec = tmp_path / "tiny.toml"
    spec.write_text(SPEC.format())
    rows = dl.run_spec(str(spec), out=str(tmp_path / "py"))
    # The k = 2 series and its bounded-data control (every G_i = G).
    assert len(rows) == 2
    row = rows[0]
    assert row["spec"] == "py_tiny_sharp" and row["theorem"] == "6.5"
    assert rows[1]["series"] == "k = 2: control (G_i = G)"
    text = cli_text("run", spec, "--out", tmp_path / "cli", "--quiet")
    line = next(ln for ln in text.splitlines() if ln.startswith("py_tiny_sharp"))
    for h in ("series", "predicted", "slope smallest decade [95% CI]", "minus control [95% CI]"):
        assert row[h] in line, (h, row[h], line)
