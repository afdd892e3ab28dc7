"""dpsgd-lab from Python: the accountants, the theorems' schedules and bounds, the heavy-tailed
generators, the Appendix L instance, the private clip norm and Algorithm 1 of "Beyond Uniform
Lipschitz Condition in Differentially Private Optimization", backed by the Rust library.

Every function computes what the `dpsgd-lab` CLI computes, bit for bit; bad input raises
ValueError with the CLI's message; long calls release the GIL.
"""

from os import PathLike
from typing import Any, Literal, Mapping, Sequence, overload

import numpy as np
import numpy.typing as npt

__version__: str

Accountant = Literal["rdp", "pld", "prv"]
ArrayLike = npt.ArrayLike
Config = Mapping[str, Any] | str | PathLike[str]

@overload
def epsilon(sample_rate: float | None = None, steps: int | None = None,
            noise_multiplier: float | None = None, delta: float = 1e-5,
            accountant: Accountant = "rdp", details: Literal[False] = False,
            orders: Sequence[float] | None = None, epochs: float | None = None,
            batch_size: int | None = None, n: int | None = None,
            phase: Sequence[str | tuple[float, float, int]] | None = None) -> float: ...
@overload
def epsilon(sample_rate: float | None = None, steps: int | None = None,
            noise_multiplier: float | None = None, delta: float = 1e-5,
            accountant: Accountant = "rdp", *, details: Literal[True],
            orders: Sequence[float] | None = None, epochs: float | None = None,
            batch_size: int | None = None, n: int | None = None,
            phase: Sequence[str | tuple[float, float, int]] | None = None) -> dict[str, Any]: ...
def epsilon(sample_rate: float | None = None, steps: int | None = None,
            noise_multiplier: float | None = None, delta: float = 1e-5,
            accountant: Accountant = "rdp", details: bool = False,
            orders: Sequence[float] | None = None, epochs: float | None = None,
            batch_size: int | None = None, n: int | None = None,
            phase: Sequence[str | tuple[float, float, int]] | None = None
            ) -> float | dict[str, Any]:
    """epsilon spent by `steps` Poisson-subsampled Gaussian steps (rate q = sample_rate, noise
    multiplier z) at `delta`: RDP (Mironov et al. 2019; conversion of Balle et al. 2020) or PLD.
    As `dpsgd-lab privacy epsilon`: `epochs`, `batch_size`, `n` instead of `sample_rate` and
    `steps` (q = B / N, T = ceil(E N / B)); `phase`, a list of "q=Q,z=Z,steps=T" strings or
    (q, z, steps) tuples composed in one account, instead of `noise_multiplier` and the length.
    details=True gives the dict of `dpsgd-lab privacy epsilon --json` (order or error, nu_eff)."""

@overload
def calibrate(sample_rate: float | None = None, steps: int | None = None,
              epsilon: float | None = None, delta: float = 1e-5,
              accountant: Accountant = "rdp", details: Literal[False] = False,
              epochs: float | None = None, batch_size: int | None = None,
              n: int | None = None) -> float: ...
@overload
def calibrate(sample_rate: float | None = None, steps: int | None = None,
              epsilon: float | None = None, delta: float = 1e-5,
              accountant: Accountant = "rdp", *, details: Literal[True],
              epochs: float | None = None, batch_size: int | None = None,
              n: int | None = None) -> dict[str, Any]: ...
def calibrate(sample_rate: float | None = None, steps: int | None = None,
              epsilon: float | None = None, delta: float = 1e-5,
              accountant: Accountant = "rdp", details: bool = False,
              epochs: float | None = None, batch_size: int | None = None,
              n: int | None = None) -> float | dict[str, Any]:
    """The smallest noise multiplier z (to relative 1e-6, rounded up) reaching (epsilon, delta),
    as `dpsgd-lab privacy calibrate` (with `epochs`, `batch_size`, `n` as its --epochs form)."""

def nu_eff(noise_multiplier: float, sample_rate: float, steps: int, epsilon: float,
           delta: float = 1e-5) -> float:
    """Thm 3.4 solved for nu: nu_eff = (z eps / (q sqrt(T log(1/delta))))^2."""

def zcdp(epsilon: float, delta: float) -> tuple[float, float]:
    """Lemma L.2: (epsilon, delta)-DP implies (xi, rho)-zCDP (Bun and Steinke 2016, Lemma 22)."""

def phi(n: float, d: float, epsilon: float, delta: float, nu: float) -> float:
    """Eq. (1): phi = sqrt(nu d log(1/delta)) / (n epsilon)."""

def schedule(theorem: str, *, phi: float | None = None, n: float | None = None,
             d: float | None = None, epsilon: float | None = None, delta: float | None = None,
             nu: float | None = None, k: float | str | None = None, G: float | None = None,
             gamma: float | None = None, C: float | None = None, dist0: float | None = None,
             D_W: float | None = None, D: float | None = None, L: float | None = None,
             f_gap: float | None = None, G_n: float | None = None, alpha: float | None = None,
             Delta: float | None = None, tau: float | None = None, T: float | None = None,
             c_lower: float | None = None) -> dict[str, Any]:
    """A theorem's schedule (T, tau, eta), explicit bound and terms, probability and predicted
    exponent of phi, as `dpsgd-lab theory schedule --json` (Thms 5.4/H.1, I.1, 6.2/J.1, 6.5/K.1,
    6.8/N.1, lower bounds 6.6/L.1 and I.3)."""

def per_sample_lipschitz(x: ArrayLike, y: ArrayLike,
                         loss: str | Mapping[str, Any] | None = None) -> npt.NDArray[np.float64]:
    """G_i = sup_w ||grad l(w; x_i, y_i)|| per row (Section 3); loss "logistic" by default."""

def describe(x: ArrayLike, y: ArrayLike, loss: str | Mapping[str, Any] | None = None,
             k: float = 2.0) -> dict[str, Any]:
    """Percentiles 0/10/20/40/80/100 of the G_i (Section 5), G_Z^k (Assumption 6.1), Hill index."""

def generate(spec: Config, seed: int | None = None
             ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(X, y) from a generator spec (dict or TOML path): the data `train` draws (replicate 0)."""

def private_min_lipschitz(g: ArrayLike, epsilon: float, lo: float, hi: float, seed: int = 0,
                          grid_size: int = 200, target_count: int = 1,
                          reproducible: bool = False) -> dict[str, Any]:
    """RNMM (Section 5.2, Table 3): Report Noisy Max over log-spaced candidates on [lo, hi],
    pure epsilon-DP. Returns {"value", "index", "epsilon"}. The noise comes from the operating
    system's random source; reproducible=True draws it from the stream (seed, 0, mechanism):
    research mode, NOT a private release (a warning says so)."""

def recommend_clip_norm(x: ArrayLike | None = None, y: ArrayLike | None = None, *,
                        epsilon: float, delta: float = 1e-5,
                        per_sample_norms: ArrayLike | None = None,
                        loss: Literal["logistic", "softmax"] = "logistic",
                        share: float | None = None, steps: int | None = None,
                        batch_size: float | None = None, lo: float | None = None,
                        hi: float | None = None, grid_size: int = 200,
                        accountant: Accountant = "rdp", seed: int = 0, standardize: bool = True,
                        std_share: float | None = None, feature_bounds: ArrayLike | None = None,
                        public_scales: ArrayLike | None = None,
                        test_fraction: float | None = None, split_seed: int | None = None,
                        epochs: float | None = None,
                        check_epsilon: float | None = None,
                        feature_ranges: ArrayLike | None = None, ledger: str | None = None,
                        learning_rate: float | None = None,
                        reproducible: bool = False) -> dict[str, Any]:
    """`dpsgd-lab clipnorm recommend` on arrays, same names and defaults, computed by the same
    library function. `feature_ranges` (shape (d, 2): documented min, max per feature) scales
    the features into [-1, 1] at no privacy cost (the result's "preprocess" is the transform to
    apply); `ledger` names a privacy-ledger file that records every spend (None: the caller
    keeps the account); `learning_rate` overrides the public step-size rule (result
    "learning_rate"); `check_epsilon` defaults to 0.05, and to 0 with `feature_ranges`. Remark 5.6: clip at G_1 = min_i G_i, chosen privately by RNMM with
    `share` of epsilon (default eps_RNMM = 0.3) on the public range [lo, hi]; DP-SGD gets the
    rest (basic composition), its noise multiplier calibrated for `steps` (or `epochs`;
    default 30 epochs) at `batch_size` (default min(500, n / 10)).

    Before RNMM a private range check (a Laplace count with `check_epsilon` of the budget; 0
    skips it) refuses, as the CLI does, a range that misses most G_i (raw features against
    the standardized default range, or a private standardization that is mostly noise): the
    CLI's message is raised as ValueError. `test_fraction` holds out that fraction of the
    rows (shuffled by `split_seed`, default `seed`, as the CLI's split): every private
    statistic uses the rest, and n = n_train.

    With X, y: G_i = sqrt(2 (||x_i||^2 + 1)) of the logistic loss on features standardized by
    the CLI's private standardization (`std_share` of epsilon and delta, default 0.1; or
    `public_scales`, shape (d, 2): mean, scale per feature, at no cost; `feature_bounds`:
    public bounds on |x_j|), unless standardize=False; lo, hi default to G at x = 0 (sqrt 2)
    and 3 G at ||x||^2 = d (3 sqrt(2 (d + 1))). Train on the same standardized features:
    (X - s["mean"]) / s["scale"] with s = result["standardization"].
    With per_sample_norms (one norm per sample, e.g. measured gradient norms) instead: nothing
    is standardized, and lo, hi are required (they must not depend on the data).

    Returns the CLI's `--json` keys (less csv and label): clip_norm, candidate_index,
    at_range_end, rnmm_epsilon, share, dpsgd_epsilon, dpsgd_delta, standardization (None or
    its mean, scale, epsilon, delta, ...), range_check (None or its epsilon, noisy_outside,
    n), total_epsilon, total_delta, candidates_lo, candidates_hi, steps, batch_size, q,
    noise_multiplier, accountant, n, d (None with per_sample_norms), split, n_test. Notes (largest candidate selected, noisy
    standardization) are also issued as warnings.

    The mechanisms' noise comes from the operating system's random source, so `seed` keys only
    the split; reproducible=True (the CLI's --reproducible) is the research mode: the noise
    follows `seed`, "reproducible" is true in the result, NOT a private release."""

def lower_bound_instance(n: int, d: int, k: float, epsilon: float, delta: float,
                         nu: float = 1.0, seed: int = 0, codeword: int = 0,
                         packing_seed: int = 0) -> dict[str, Any]:
    """n draws from Q_v of Thm L.1 (p of Eq. 96, G = 3||v|| of Eq. 100) with the closed-form
    empirical optimum w*, f* (Eq. 105): keys X, y, w_star, f_star, xbar_norm, optimum, p, phi,
    G, v, w_star_population."""

def train(x: ArrayLike | None = None, y: ArrayLike | None = None, *, config: Config,
          seed: int | None = None, accountant: Accountant | None = None,
          delta: float = 1e-5, reproducible: bool = False) -> dict[str, Any]:
    """Algorithm 1 once, as `dpsgd-lab train --json`: f(w_priv), f(w_T), sigma_n, the clipped
    fraction, "privacy" (epsilon spent, nu_eff, phi of Eq. (1)) and the iterates w_priv,
    w_last, w_avg as float64 arrays. `seed` overrides the config's seed (which may then be
    left out), as `--seed` does. On X, y or a CSV the batches and noise come from the operating
    system's random source ("randomness": "os"); reproducible=True (or the config's
    `reproducible = true`) is the research mode ("seeded"): the same seed gives the same run,
    NOT a private release. Generated data (a simulation) are always seeded.

    Layout of w_priv (and w_last, w_avg), as the model is stored:
      logistic: shape (m, d + 1): row j is class j's weights, the last column its bias
                (logits = X @ W[:, :d].T + W[:, d]);
      huber, robust, sharp, appendix_l: shape (d,) (no bias: append a constant feature);
      tanh_net: flat, W1 (h x (d + 1)) then W2 (m x (h + 1)), each row-major, bias last.
    predict(w, X, loss) and accuracy(w, X, y, loss) take it as returned."""

def predict(w: ArrayLike, x: ArrayLike,
            loss: str | Mapping[str, Any] | None = None) -> npt.NDArray[Any]:
    """Predictions of the model w (as `train` returns it) for the rows of X: for logistic
    (default) and tanh_net the most probable class 0..m-1 as int64 (m from the loss or from
    w's size); for huber and robust X @ w as float64."""

def accuracy(w: ArrayLike, x: ArrayLike, y: ArrayLike,
             loss: str | Mapping[str, Any] | None = None) -> float:
    """The fraction of rows whose predicted class (`predict`) equals y (logistic, tanh_net)."""

def run_spec(path: str | PathLike[str], full: bool = False,
             out: str | PathLike[str] | None = None) -> list[dict[str, str]]:
    """One experiment spec's Monte Carlo rate check; the verify table rows."""


def audit_run(*, config: Config, canaries: int = 1000, seed: int | None = None,
              reproducible: bool = False, delta: float | None = None,
              confidence: float = 0.95, force: bool = False) -> dict[str, Any]:
    """The one-run audit of a train config, as `dpsgd-lab audit-run --json`: m canaries added
    to the config's data, one training run, and epsilon lower bounds at 1 - beta = confidence
    by the (epsilon, delta) tail bound of Steinke et al. 2023 and the f-DP analysis of
    Mahloujifar et al. 2025, per threat model ("threats"), beside the claimed epsilon (RDP and
    PLD). On a CSV the run's batches and noise come from the operating system's random source;
    reproducible=True (the CLI's --reproducible) replays the seed: NOT a private release."""
