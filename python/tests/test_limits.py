"""Issue 56 (privacy-4), "Resources": inputs whose copy or whose work would not fit are refused
with a ValueError before anything is allocated or computed.

Each call runs in a child interpreter under a 4 GB address-space limit (`ulimit -v 4000000`),
so a missing check shows up as the child aborting on a failed allocation (or as its timeout),
not as a swapping machine; the child also reports its peak resident memory, which stays far
below the array's size when the refusal comes first.
"""
import json
import resource
import subprocess
import sys
import textwrap

import pytest

LIMIT = 4_000_000 * 1024  # `ulimit -v 4000000` is in KB

CONFIG = ('{"seed": 1, "loss": {"family": "logistic"}, "dpsgd": {"steps": 5, '
          '"batch_size": 10.0, "learning_rate": 0.5, "clip_norm": 1.0, '
          '"noise": {"kind": "multiplier", "z": 1.0}}}')


def child(code, timeout=60, cap=True):
    """Runs `code` (which sets `result`) in a fresh interpreter, under the address-space limit
    when `cap`; returns (returncode, {"error", "message", "peak"})."""
    script = textwrap.dedent("""
        import json, sys, time
        import numpy as np
        import dpsgd_lab as dl
        def hwm():
            # Peak resident memory of this process since its exec (VmHWM; ru_maxrss would
            # carry the forking parent's peak across the exec).
            with open("/proc/self/status") as f:
                line = next(l for l in f if l.startswith("VmHWM:"))
            return int(line.split()[1]) * 1024
        out = {"error": None, "message": None}
        t = time.time()
        try:
        {body}
        except Exception as e:
            out["error"], out["message"] = type(e).__name__, str(e)
        out["seconds"] = time.time() - t
        out["peak"] = hwm()
        print(json.dumps(out))
    """).replace("{body}", textwrap.indent(textwrap.dedent(code), "    "))

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))

    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=timeout, preexec_fn=limit if cap else None)
    last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "{}"
    return p.returncode, json.loads(last), p.stderr


# The four calls of the issue: each copied a broadcast view (one element for all) into a
# float64 buffer of 80 GB or 800 GB, or ran 10^7 Renyi orders for minutes (116 s measured).
CASES = {
    "recommend_clip_norm": (
        "dl.recommend_clip_norm(per_sample_norms=np.broadcast_to(np.ones(1), (10**10,)), "
        "epsilon=2.0, delta=1e-5, lo=0.1, hi=10.0)",
        "per_sample_norms of shape (10000000000,): needs about"),
    "train": (
        "dl.train(np.broadcast_to(np.ones((1, 1)), (10**6, 10**5)), np.zeros(10**6), "
        f"config={CONFIG})",
        "X of shape (1000000, 100000): needs about"),
    "per_sample_lipschitz": (
        "dl.per_sample_lipschitz(np.broadcast_to(np.ones((1, 1)), (10**6, 10**5)), "
        "np.zeros(10**6))",
        "X of shape (1000000, 100000): needs about"),
    "epsilon orders": (
        "o = list(np.linspace(1.5, 100, 10**7))\n"
        "t = time.time()\n"
        "dl.epsilon(0.02, 1000, 1.1, 1e-5, orders=o)",
        "orders has 10000000 entries, more than the 100000"),
    # 1000 integer orders up to 10^6: 34 s (their series sum alpha terms each).
    "epsilon large orders": (
        "dl.epsilon(0.02, 1000, 1.1, 1e-5, orders=[float(a) for a in range(2, 10**6, 1000)])",
        "RDP series terms"),
    "epsilon phases": (
        "dl.epsilon(delta=1e-5, phase=[(0.02, 1.1, 10)] * 10**4)",
        "over 10000 phases"),
    "private_min_lipschitz": (
        "dl.private_min_lipschitz(np.broadcast_to(np.ones(1), (10**10,)), 1.0, 0.1, 10.0)",
        "G of shape (10000000000,): needs about"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_call_too_large_raises_valueerror_before_allocating(name):
    code, needle = CASES[name]
    rc, out, err = child(f"result = {code}")
    assert rc == 0, f"{name}: the child died (exit {rc}): {err[-2000:]}"
    assert out["error"] == "ValueError", out
    assert needle in out["message"], out["message"]
    assert "\n" not in out["message"]
    # Refused before the work, not after it: under a second of the call's own time.
    assert out["seconds"] < 5, out
    # ... and before the copy: the child's peak stays under 1 GB (the interpreter, numpy, the
    # list of orders), against the 75-750 GB each copy needs.
    assert out["peak"] < 1 << 30, out


# Peak resident memory over the input's float64 size, on a broadcast view of 400000 x 50 (no
# memory of its own), against the copies python/src/lib.rs (`copies`) checks for each call:
# measured 1.07 / 1.10 / 1.14 / 1.06 / 2.02 / 5.16 / 13.14 when the constants were set.
N, D = 400_000, 50
COPIES = {
    "per_sample_lipschitz": ("dl.per_sample_lipschitz(X, y)", 2.0),
    "describe": ("dl.describe(X, y)", 2.0),
    "train": (f"dl.train(X, y, config={CONFIG})", 2.0),
    "accuracy": ("dl.accuracy(np.zeros((2, D + 1)), X, y)", 2.0),
    "private_min_lipschitz": ("dl.private_min_lipschitz(g, 1.0, 0.1, 10.0)", 3.0),
    "recommend_clip_norm X": (
        "dl.recommend_clip_norm(X, y, epsilon=2.0, delta=1e-5, steps=3)", 6.0),
    "recommend_clip_norm per_sample_norms": (
        "dl.recommend_clip_norm(per_sample_norms=g, epsilon=2.0, delta=1e-5, lo=0.1, "
        "hi=10.0, steps=3)", 14.0),
}


@pytest.mark.parametrize("name", list(COPIES))
def test_the_checked_copies_cover_what_a_call_holds(name):
    code, copies = COPIES[name]
    setup = f"""
        import warnings
        warnings.simplefilter("ignore")
        N, D = {N}, {D}
        row = np.random.default_rng(0).normal(size=(1, D))
        X = np.broadcast_to(row, (N, D))
        y = np.zeros(N); y[::2] = 1.0
        g = np.broadcast_to(np.ones(1), (N * D,))
        base = hwm()
        result = {code}
        out["held"] = (hwm() - base) / (8.0 * N * D)
    """
    rc, out, err = child(setup, timeout=600, cap=False)
    assert rc == 0 and out["error"] is None, (out, err[-2000:])
    assert 0.5 < out["held"] <= copies, f"{name}: holds {out['held']:.2f} copies, checks {copies}"
