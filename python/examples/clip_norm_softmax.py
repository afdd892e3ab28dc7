"""Pick a clip norm and train, at one privacy budget: the clip norm Section 5 recommends
(tau = G_1, the smallest per-sample Lipschitz constant, chosen privately by RNMM) on privately
standardized features, DP-SGD (Algorithm 1) with it, and the test accuracy, all at a total
(epsilon, delta) = (2, 1e-5): standardization, the range check, RNMM and DP-SGD composed in RDP
(the ledger's rule; DP-SGD gets what the composition leaves, more than basic composition's
remainder). This is `dpsgd-lab clipnorm recommend` then `dpsgd-lab train`, from Python; the
noise comes from the operating system's random source, so two runs differ.

    pip install ./python && python python/examples/clip_norm_softmax.py
"""
import numpy as np

import dpsgd_lab as dl

EPSILON, DELTA, LR = 2.0, 1e-5, 0.5

# Data: 6000 samples, 10 features, 4 classes, heavy-tailed norms (Pareto radial law); the
# first 5000 train, the rest test.
X, y = dl.generate({"n": 6000, "d": 10,
                    "radial": {"k": 2.0, "g": 3.0, "law": {"family": "pareto", "alpha": 2.5}},
                    "labels": {"kind": "multinomial", "classes": 4, "separable": True}},
                   seed=1)
Xtr, ytr, Xte, yte = X[:5000], y[:5000], X[5000:], y[5000:]

# The CLI's defaults: features standardized privately (0.1 of the budget), the candidate range
# [G at x = 0, 3 G at ||x||^2 = d], RNMM with eps = 0.3, 30 epochs at batch min(500, n / 10).
# feature_bounds are public bounds C_j on |x_j| (data independent: this generator's features
# are of order 1; features beyond are clipped for the means and scales only). Without them
# the standardization also selects the C_j privately, with a small share of its budget; at
# n = 5000 that selection is close to uniform on its grid (1e-4..1e6), some scales come out
# 1e3-1e4 times too large, and the test accuracy drops from 96% to 45% (seed 0).
rec = dl.recommend_clip_norm(Xtr, ytr, epsilon=EPSILON, delta=DELTA, seed=0,
                             feature_bounds=np.full(Xtr.shape[1], 3.0))
std = rec["standardization"]
print(f"recommended clip norm tau = {rec['clip_norm']:.4f}; standardization eps = "
      f"{std['epsilon']:.2f}, RNMM eps = {rec['rnmm_epsilon']:.2f}, DP-SGD gets eps = "
      f"{rec['dpsgd_epsilon']:.2f} -> z = {rec['noise_multiplier']:.4f} for T = {rec['steps']} "
      f"steps at batch size {rec['batch_size']:g}")

# Train on the features standardized with the released (private) means and scales; the test
# set uses the same public transformation.
mean, scale = np.array(std["mean"]), np.array(std["scale"])
Ztr, Zte = (Xtr - mean) / scale, (Xte - mean) / scale
config = {"loss": {"family": "logistic"},
          "dpsgd": {"steps": rec["steps"], "batch_size": rec["batch_size"], "learning_rate": LR,
                    "clip_norm": rec["clip_norm"],
                    "noise": {"kind": "multiplier", "z": rec["noise_multiplier"]},
                    "output": "last_iterate"}}
run = dl.train(Ztr, ytr, config=config, seed=7, delta=rec["dpsgd_delta"])
W = run["w_priv"]  # (classes, features + 1): row j is class j's weights, the bias last
check = rec["range_check"]["epsilon"]  # the private check that [lo, hi] covers the G_i
# DP-SGD ran with the calibrated z, so it spent what the plan gave it; the total is the plan's
# RDP composition, and the plain sum is basic composition's looser account of the same runs.
assert run["privacy"]["epsilon_spent"] <= rec["dpsgd_epsilon"] * (1 + 1e-6)
basic = std["epsilon"] + check + rec["rnmm_epsilon"] + run["privacy"]["epsilon_spent"]
print(f"DP-SGD: T = {run['steps']}, clipped fraction {run['clipped_fraction']:.3f}, "
      f"train risk f(w_T) = {run['f_w_priv']:.4f}")
print(f"accuracy: train {100 * dl.accuracy(W, Ztr, ytr):.2f} %, test "
      f"{100 * dl.accuracy(W, Zte, yte):.2f} % at ({rec['total_epsilon']:.3f}, {DELTA:g})-DP "
      f"in total (standardization {std['epsilon']:.2f}, range check {check:.2f}, RNMM "
      f"{rec['rnmm_epsilon']:.2f} and DP-SGD {run['privacy']['epsilon_spent']:.3f} composed "
      f"in RDP; their plain sum, basic composition, is {basic:.3f})")
