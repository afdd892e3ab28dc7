"""Reference values for tests/privacy.rs, computed with Google's dp_accounting.

Usage: pip install dp-accounting==0.6.0 && python scripts/privacy_reference.py
Prints one line per case; tests/privacy.rs pastes them as constants.
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
