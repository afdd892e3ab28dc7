"""Reference values for tests/it/privacy.rs, computed with Google's dp_accounting.

Usage: pip install dp-accounting==0.6.0 && python scripts/privacy_reference.py
Prints one line per case; tests/it/privacy.rs pastes them as constants.
"""
import time

import dp_accounting
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant as rdp

INT_ORDERS = list(range(2, 64)) + [128, 256, 512, 1024]
DEFAULT_ORDERS = ([1 + x / 10.0 for x in range(1, 100)] + list(range(11, 64))
                  + [128, 256, 512, 1024])

# (q, z, steps, delta)
CASES = [
    (0.01, 1.1, 1000, 1e-5),
    (0.01, 1.0, 10000, 1e-5),
    (256 / 60000, 1.1, 14040, 1e-5),
    (0.001, 0.8, 5000, 1e-6),
    (0.1, 2.0, 100, 1e-5),
    (1.0, 5.0, 10, 1e-5),
    (0.02, 0.7, 2000, 1e-7),
    (0.05, 1.5, 500, 1e-5),
]


def event(q, z, steps):
    return dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(z)), steps)


def main():
    print("dp_accounting", dp_accounting.__version__ if hasattr(dp_accounting, "__version__") else "0.6.0")
    for q, z, steps, delta in CASES:
        a = rdp.RdpAccountant(orders=INT_ORDERS)
        a.compose(event(q, z, steps))
        eps_int, order_int = a.get_epsilon_and_optimal_order(delta)
        b = rdp.RdpAccountant(orders=DEFAULT_ORDERS)
        b.compose(event(q, z, steps))
        eps_def, order_def = b.get_epsilon_and_optimal_order(delta)
        t0 = time.time()
        p = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
        p.compose(event(q, z, steps))
        eps_pld = p.get_epsilon(delta)
        dt = time.time() - t0
        print(f"q={q!r} z={z} steps={steps} delta={delta}: "
              f"rdp_int={eps_int!r} order={order_int} "
              f"rdp_default={eps_def!r} order={order_def} "
              f"pld_1e-4={eps_pld!r} (pld {dt:.2f}s)")
    # Single-step RDP at integer orders (the test suite's published case q=0.01, z=2.5, x50).
    a = rdp.RdpAccountant(orders=[2, 3, 5, 10, 50, 100])
    a.compose(event(0.01, 2.5, 50))
    print("rdp q=0.01 z=2.5 steps=50 orders=[2,3,5,10,50,100]:", [repr(x) for x in a._rdp])


if __name__ == "__main__":
    main()


def extra():
    """Classic-conversion Abadi et al. case, exact Gaussian deltas, and exact A_alpha by quadrature."""
    import math

    import mpmath
    from dp_accounting.pld import privacy_loss_mechanism as plm

    # Abadi et al. 2016, Sec. 3.1: q = 0.01, sigma = 4, T = 10000, delta = 1e-5 -> eps ~ 1.26
    # (moments accountant, classic conversion, integer orders 2..32).
    orders = list(range(2, 33))
    rdp_vals = rdp._compute_rdp_poisson_subsampled_gaussian(0.01, 4.0, orders) * 10000
    eps_classic = min(r + math.log(1 / 1e-5) / (a - 1) for a, r in zip(orders, rdp_vals))
    print("abadi classic eps:", repr(eps_classic))

    # Exact Gaussian mechanism (Balle & Wang 2018): sigma = 5/sqrt(10), sensitivity 1.
    g = plm.GaussianPrivacyLoss(standard_deviation=5 / math.sqrt(10), sensitivity=1)
    print("gaussian delta(eps) for eps in [0.5, 1, 2, 3]:",
          [repr(g.get_delta_for_epsilon(e)) for e in [0.5, 1.0, 2.0, 3.0]])

    # A_alpha = E_{x~N(0,z^2)}[((1-q) + q exp((2x-1)/(2z^2)))^alpha] by 50-digit quadrature,
    # and dp_accounting's (absolute-value) series at the same fractional orders.
    mpmath.mp.dps = 50
    for q, z, alpha in [(0.02, 0.7, 2.6), (0.01, 2.5, 1.5), (0.01, 2.5, 2.5), (0.1, 0.8, 3.3),
                        (0.001, 0.8, 8.3)]:
        qm, zm, am = mpmath.mpf(q), mpmath.mpf(z), mpmath.mpf(alpha)
        f = lambda x: (mpmath.npdf(x, 0, zm)
                       * ((1 - qm) + qm * mpmath.exp((2 * x - 1) / (2 * zm**2))) ** am)
        a_exact = mpmath.quad(f, [-mpmath.inf, -10, 0, 0.5, 1, 10, 40, mpmath.inf])
        rdp_exact = mpmath.log(a_exact) / (am - 1)
        rdp_abs = rdp._compute_rdp_poisson_subsampled_gaussian(q, z, [alpha])[0]
        print(f"A q={q} z={z} alpha={alpha}: rdp_exact={mpmath.nstr(rdp_exact, 17)} "
              f"rdp_dp_accounting={rdp_abs!r}")


extra()


def extreme():
    """Large q and small z: the regime where the PLD's add direction is hardest numerically."""
    for q, z, steps in [(0.5, 0.3, 10), (0.9, 0.5, 5), (0.99, 1.0, 3), (0.001, 0.4, 1000),
                        (0.3, 0.6, 50), (0.05, 0.5, 200)]:
        p = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
        p.compose(event(q, z, steps))
        print(f"extreme q={q} z={z} steps={steps} delta=1e-5: pld_1e-4={p.get_epsilon(1e-5)!r}")


extreme()
