#!/usr/bin/env python3
"""Independent reference values for the one-run audit's bounds (src/audit/one_run/bounds.rs).

Written from the papers' statements, in exact arithmetic (mpmath, 50 digits), sharing no code
with the Rust implementation:
- the (epsilon, delta) p-value of Steinke, Nasr and Jagielski 2023 (Section 5):
  f(v) = P[Binomial(r, e^eps/(1+e^eps)) >= v] as an exact sum of binomial terms,
  p = min(1, f(v) + 2 m delta max_{1<=i<=v} (f(v-i) - f(v)) / i);
- epsilon_lb = sup{eps : p(eps) <= beta} by bisection to 1e-12;
- the f-DP recursion of Mahloujifar, Melis and Chaudhuri 2025 against mu-GDP
  (g(y) = Phi(Phi^{-1}(y) - mu)), and mu_lb = sup{mu : rejected} by bisection.

Run: python3 scripts/one_run_reference.py   (needs mpmath only)
The printed values are pasted into tests/it/audit_one_run.rs with this script named there.
"""
from mpmath import mp, mpf, binomial, exp, sqrt, erfinv, ncdf

mp.dps = 50


def p_value(m, r, v, eps, delta):
    q = 1 / (1 + exp(-mpf(eps)))
    pmf = [binomial(r, k) * q**k * (1 - q) ** (r - k) for k in range(r + 1)]
    f = lambda u: sum(pmf[max(u, 0):])  # P[Bin >= u]
    fv = f(v)
    if delta == 0:
        return min(fv, mpf(1))
    a = max((f(v - i) - fv) / i for i in range(1, v + 1))
    return min(fv + 2 * m * mpf(delta) * a, mpf(1))


def eps_lb(m, r, v, delta, beta, cap=50):
    if p_value(m, r, v, 0, delta) > beta:
        return mpf(0)
    lo, hi = mpf(0), mpf(cap)
    while hi - lo > mpf("1e-12"):
        mid = (lo + hi) / 2
        if p_value(m, r, v, mid, delta) <= beta:
            lo = mid
        else:
            hi = mid
    return lo


def g_gdp(mu, y):
    if y <= 0:
        return mpf(0)
    if y >= 1:
        return mpf(1)
    return ncdf(sqrt(2) * erfinv(2 * y - 1) - mu)


def fdp_rejects(mu, m, k, c, tau):
    r = mpf(tau) * c / m
    h = mpf(tau) * (k - c) / m
    for i in range(c - 1, -1, -1):
        hn = max(h, g_gdp(mu, r))
        if hn == h:
            break
        r = min(r + mpf(i) / (k - i) * (hn - h), mpf(1))
        h = hn
    return r + h > mpf(k) / m


def mu_lb(m, k, c, tau, cap=40):
    if not fdp_rejects(0, m, k, c, tau):
        return mpf(0)
    lo, hi = mpf(0), mpf(cap)
    while hi - lo > mpf("1e-10"):
        mid = (lo + hi) / 2
        if fdp_rejects(mid, m, k, c, tau):
            lo = mid
        else:
            hi = mid
    return lo


if __name__ == "__main__":
    print("# p_value(m, r, v, eps, delta)")
    for args in [(1000, 100, 69, 0.4, 1e-5), (1000, 100, 80, 1.0, 1e-5), (100, 20, 18, 1.5, 0.0),
                 (10000, 1000, 700, 0.8, 1e-6), (1000, 200, 136, 0.5, 1e-5)]:
        print(args, mp.nstr(p_value(*args), 17))
    print("# eps_lb(m, r, v, delta, beta)")
    for args in [(1000, 100, 69, 1e-5, 0.05), (1000, 100, 90, 1e-5, 0.05), (100, 20, 18, 0.0, 0.05),
                 (10000, 1000, 700, 1e-6, 0.05), (1000, 1000, 800, 1e-5, 0.05)]:
        print(args, mp.nstr(eps_lb(*args), 15))
    print("# mu_lb(m, guesses, correct, tau)")
    for args in [(1000, 200, 136, 0.05), (1000, 100, 90, 0.05), (10000, 1000, 700, 0.05),
                 (1000, 1000, 800, 0.05)]:
        print(args, mp.nstr(mu_lb(*args), 12))
