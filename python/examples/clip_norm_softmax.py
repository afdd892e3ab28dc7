"""What an Opacus user would do, with dpsgd-lab: per-sample gradient norms of a softmax model at
initialization (computed with numpy, as your framework would), the clip norm Section 5
recommends (tau = G_1, the smallest per-sample norm, chosen privately by RNMM) at a total
epsilon = 2, DP-SGD (Algorithm 1) with it, and the test accuracy.

    pip install ./python && python python/examples/clip_norm_softmax.py
"""
import numpy as np

import dpsgd_lab as dl

EPSILON, DELTA = 2.0, 1e-5
EPOCHS, BATCH, LR = 10, 100, 0.5

# Data: 6000 samples, 10 features, 4 classes, heavy-tailed norms (Pareto radial law).
X, y = dl.generate({"n": 6000, "d": 10,
                    "radial": {"k": 2.0, "g": 3.0, "law": {"family": "pareto", "alpha": 2.5}},
                    "labels": {"kind": "multinomial", "classes": 4, "separable": True}},
                   seed=1)
n_train = 5000
Xtr, ytr, Xte, yte = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
n, d = Xtr.shape
m = int(ytr.max()) + 1

# Per-sample gradient norms at w0 = 0 of the softmax cross-entropy (Eq. 7): the gradient with
# respect to W (m x (d+1)) is (p - e_y) x~^T, so its norm is ||p - e_y|| ||x~||, x~ = (x, 1).
W0 = np.zeros((m, d + 1))
Xt = np.hstack([Xtr, np.ones((n, 1))])
logits = Xt @ W0.T
p = np.exp(logits - logits.max(axis=1, keepdims=True))
p /= p.sum(axis=1, keepdims=True)
resid = p.copy()
resid[np.arange(n), ytr.astype(int)] -= 1.0
norms = np.linalg.norm(resid, axis=1) * np.linalg.norm(Xt, axis=1)

# The public candidate range must not depend on the data: at w0 = 0, ||p - e_y|| =
# sqrt((m-1)/m) and ||x~|| >= 1, so every norm is >= sqrt((m-1)/m); the top end allows
# ||x~|| up to 10 sqrt(d + 1).
lo = np.sqrt((m - 1) / m)
hi = 10 * lo * np.sqrt(d + 1)
q = BATCH / n
steps = EPOCHS * n // BATCH
rec = dl.recommend_clip_norm(norms, EPSILON, DELTA, lo=lo, hi=hi, seed=0,
                             sample_rate=q, steps=steps)
print(f"recommended clip norm tau = {rec['clip_norm']:.4f} (smallest norm {norms.min():.4f}, "
      f"median {np.median(norms):.4f}); RNMM spent eps = {rec['rnmm_epsilon']}, "
      f"DP-SGD gets eps = {rec['dpsgd_epsilon']:.2f} -> z = {rec['noise_multiplier']:.4f}")

config = {"seed": 7, "loss": {"family": "logistic"},
          "dpsgd": {"steps": steps, "batch_size": float(BATCH), "learning_rate": LR,
                    "clip_norm": rec["clip_norm"],
                    "noise": {"kind": "multiplier", "z": rec["noise_multiplier"]},
                    "output": "last_iterate"}}
run = dl.train(Xtr, ytr, config=config, delta=DELTA)
W = run["w_priv"].reshape(m, d + 1)
acc = np.mean((np.hstack([Xte, np.ones((len(Xte), 1))]) @ W.T).argmax(axis=1) == yte)
spent = run["privacy"]["epsilon_spent"] + rec["rnmm_epsilon"]
print(f"DP-SGD: T = {run['steps']}, clipped fraction {run['clipped_fraction']:.3f}, "
      f"train risk f(w_T) = {run['f_w_priv']:.4f}")
print(f"test accuracy = {100 * acc:.2f} % at ({spent:.3f}, {DELTA})-DP "
      f"(DP-SGD {run['privacy']['epsilon_spent']:.3f} by RDP + RNMM {rec['rnmm_epsilon']})")
