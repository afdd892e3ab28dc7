"""Sweep phi (Eq. 1) by varying epsilon, train with Thm J.1's schedule for each, and fit the slope
of the excess risk against phi in log-log, next to the exponent the theorem predicts
(Thm 6.2 / J.1: 1 - 2/(k+1)). The theorem's rate is an upper bound; with one small data set,
16 seeds and the random iterate, the fitted slope is a rough estimate (at n = 400 the excess
risk here falls much more slowly than phi^0.5: the measured slope was about 0.1). The full Monte
Carlo check, with f* solved exactly, fresh data and confidence intervals, is
`dpsgd-lab run simulations/thm62_j1_huber.toml`.

    pip install ./python && python python/examples/phi_sweep.py
"""
import numpy as np

import dpsgd_lab as dl

N, D, K, G, DELTA, NU, BATCH = 400, 5, 3.0, 1.0, 1e-5, 1.0, 10.0
data = {"n": N, "d": D, "radial": {"k": K, "g": G, "law": {"family": "pareto", "alpha": 3.5}},
        "labels": {"kind": "regression", "noise_std": 0.5}}
X, y = dl.generate(data, seed=3)

rows = []
for eps in [0.2, 0.5, 1.0, 2.0, 4.0]:
    ph = dl.phi(N, D, eps, DELTA, NU)
    # The free constant C of eta: the one minimizing the explicit bound, on a log grid.
    params = dict(phi=ph, k=K, G=G, gamma=0.5, dist0=1.0)
    c = min(np.logspace(-3, 3, 61), key=lambda c: dl.schedule("J.1", C=c, **params)["bound"])
    s = dl.schedule("J.1", C=c, **params)
    risks = []
    for seed in range(16):
        cfg = {"seed": seed, "loss": {"family": "huber", "c": 1.0},
               "dpsgd": {"steps": s["steps"], "batch_size": BATCH, "learning_rate": s["eta"],
                         "clip_norm": s["tau"],
                         "noise": {"kind": "theorem34", "nu": NU, "epsilon": eps,
                                   "delta": DELTA}}}
        r = dl.train(X, y, config=cfg)
        risks.append(r["f_w_priv"])
    rows.append((ph, float(np.mean(risks))))
    print(f"eps = {eps:4.1f}: phi = {ph:.4e}, T = {s['steps']}, tau = {s['tau']:.3f}, "
          f"C = {c:.3g}, mean f(w_priv) = {rows[-1][1]:.5f}")

# Excess risk needs f*: use the smallest observed risk as a proxy lower reference.
phis, risks = map(np.array, zip(*rows))
f_ref = dl.train(X, y, config={"seed": 0, "loss": {"family": "huber", "c": 1.0},
                               "dpsgd": {"steps": 2000, "batch_size": float(N),
                                         "learning_rate": 0.5, "clip_norm": 1e6,
                                         "noise": {"kind": "none"},
                                         "output": "last_iterate"}})["f_w_priv"]
excess = np.maximum(risks - f_ref, 1e-12)
slope, _ = np.polyfit(np.log(phis), np.log(excess), 1)
print(f"f* (non-private GD, 2000 steps) = {f_ref:.5f}")
print(f"fitted slope of log excess risk on log phi = {slope:.3f}; Thm {s['theorem']} predicts "
      f"{s['phi_exponent']:.3f}")
