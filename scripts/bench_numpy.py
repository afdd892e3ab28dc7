"""numpy reference for one DP-SGD step (Algorithm 1, lines 3-5), the protocol of benches/dpsgd_step.rs.

Multinomial logistic (softmax) regression with a bias, float64, W of shape (d + 1, m):
  1. Poisson sampling with rate q = b / n, in O(b): |S| ~ Binomial(n, q), then a uniform |S|-subset
     (numpy's Generator.choice without replacement; the two together are exactly Poisson sampling).
  2. Per-sample clipping by "ghost" norms: the gradient of sample i is x~_i (p_i - e_{y_i})^T with
     x~_i = (x_i, 1), so its norm is ||p_i - e_{y_i}|| * ||x~_i||; no per-sample gradient is formed.
     ||x~_i||^2 is computed once for the data set (as the Rust step does).
  3. The clipped sum as one matrix product X_S^T (c * (P - Y)), Gaussian noise of standard deviation
     z * tau / b on the mean, and the update W -= eta (sum / b + noise).

Usage (one BLAS thread, like the Rust step; same sizes as the Rust bench):
  pip install numpy
  python3 scripts/bench_numpy.py --size a      # n 1e4, d 10, m 2, b 64
  python3 scripts/bench_numpy.py --size b      # n 5e4, d 512, m 100, b 500
  python3 scripts/bench_numpy.py --size c      # n 6e4, d 784, m 10, b 500
The last line of stdout is JSON: steps_per_s (median of --repeats timed blocks), examples_per_s.
"""
import argparse
import json
import os
import sys
import time

SIZES = {
    "a": (10_000, 10, 2, 64, 4000),
    "b": (50_000, 512, 100, 500, 200),
    "c": (60_000, 784, 10, 500, 300),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=sorted(SIZES), help="a preset (n, d, m, b, steps)")
    ap.add_argument("--n", type=int)
    ap.add_argument("--d", type=int)
    ap.add_argument("--m", type=int)
    ap.add_argument("--b", type=float)
    ap.add_argument("--steps", type=int, help="steps per timed block")
    ap.add_argument("--repeats", type=int, default=5, help="timed blocks; the median is reported")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    n, d, m, b, steps = SIZES[a.size] if a.size else (None,) * 5
    n, d, m, b, steps = (a.n or n, a.d or d, a.m or m, a.b or b, a.steps or steps)
    if None in (n, d, m, b, steps):
        sys.exit("error: give --size or all of --n --d --m --b --steps")

    # The thread count must be fixed before numpy loads its BLAS.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(a.threads)
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        os.environ.pop(var, None)
    import numpy as np

    rng = np.random.default_rng(a.seed)
    x = rng.standard_normal((n, d))
    y = rng.integers(0, m, size=n)
    xnorm = np.sqrt((x * x).sum(axis=1) + 1.0)  # ||(x_i, 1)||
    w = np.zeros((d + 1, m))
    q, tau, z, eta = b / n, 1.0, 1.0, 0.5
    sigma = z * tau / b

    def step(w):
        k = rng.binomial(n, q)
        idx = rng.choice(n, size=k, replace=False)
        xs = x[idx]
        logits = xs @ w[:d] + w[d]
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(k), y[idx]] -= 1.0  # dl/dz = p - e_y
        norms = np.sqrt((p * p).sum(axis=1)) * xnorm[idx]
        p *= np.minimum(1.0, tau / np.maximum(norms, 1e-300))[:, None]
        g = np.empty_like(w)
        g[:d] = xs.T @ p
        g[d] = p.sum(axis=0)
        w -= eta * (g / b + sigma * rng.standard_normal(w.shape))

    for _ in range(max(10, steps // 10)):  # warm-up
        step(w)
    rates = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            step(w)
        rates.append(steps / (time.perf_counter() - t0))
    rates.sort()
    med = rates[len(rates) // 2]
    print(f"n={n} d={d} m={m} b={b}: {med:,.0f} steps/s (blocks: "
          + ", ".join(f"{r:,.0f}" for r in rates) + ")", file=sys.stderr)
    print(json.dumps({"n": n, "d": d, "m": m, "b": b, "threads": a.threads,
                      "numpy": np.__version__, "steps_per_s": med, "examples_per_s": med * b,
                      "blocks": rates}))


if __name__ == "__main__":
    main()
