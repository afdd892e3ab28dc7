//! The add direction and the truncation of the PLD, tested on their own (issue 13). For the
//! Poisson-subsampled Gaussian the remove direction dominated delta(eps), eps >= 0, in every
//! configuration probed (q in 1e-3..0.99, z in 0.3..5, T in 1..1000), so a wrong add-direction
//! PLD could never show in an epsilon: these tests check the add PLD against its exact profile,
//! and the max over directions with a pair where the add side decides.

use super::*;

/// The one-step (remove, add) pair at grid h, as suffix-sum tables.
fn step_tails(q: f64, z: f64, h: f64) -> (Tails, Tails) {
    let (r, a) = one_step(q, z, h, one_step_bounds(q, z, h, 1e-18).unwrap(), TAIL);
    (r.into_tails(h), a.into_tails(h))
}

/// Phi(x) = P(N(0, 1) <= x), straight from libm (independent of the module's helpers).
fn phi(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// Exact delta(eps) of one step in the add direction, P = N(0, z^2) against
/// Q = (1 - q) N(0, z^2) + q N(1, z^2): the loss log(P/Q)(x) = -log(1 - q + q e^{(2x - 1)/(2z^2)})
/// decreases in x and exceeds eps exactly for x < x*, where
/// e^{-eps} = 1 - q + q e^{(2x* - 1)/(2 z^2)}; none does when e^{-eps} <= 1 - q.
fn exact_add_delta(q: f64, z: f64, eps: f64) -> f64 {
    let t = (-eps).exp();
    if t <= 1.0 - q {
        return 0.0;
    }
    let xs = z * z * ((t - (1.0 - q)) / q).ln() + 0.5;
    phi(xs / z) - eps.exp() * ((1.0 - q) * phi(xs / z) + q * phi((xs - 1.0) / z))
}

#[test]
fn add_direction_pld_reproduces_the_exact_add_profile_at_the_lattice() {
    // The connect-the-dots pair matches the exact profile at every lattice point eps = k h and
    // lies above it between them. At lattice points the only differences are the truncated tails
    // (<= 1e-15 each) and rounding over ~1e4 atoms: tolerance 1e-12. Atoms stored in the wrong
    // order (losses +eps_i instead of -eps_i ascending) miss by orders of magnitude more.
    for &(q, z, h) in &[(0.3, 0.7, 1e-3), (0.9, 1.5, 2e-3), (0.05, 0.8, 1e-3)] {
        let (_, a) = step_tails(q, z, h);
        let top = -(1.0 - q).ln(); // the add loss is at most log(1/(1 - q))
        let mut checked = 0;
        for k in 0..((top / h) as i64) {
            let e = k as f64 * h;
            let (got, want) = (a.delta(e, h), exact_add_delta(q, z, e));
            assert!(
                (got - want).abs() < 1e-12,
                "q={q} z={z} eps={e}: {got} vs {want}"
            );
            // Between lattice points the chord is above the function (never optimistic).
            let mid = e + 0.5 * h;
            assert!(a.delta(mid, h) >= exact_add_delta(q, z, mid) - 1e-12);
            checked += 1;
        }
        assert!(
            checked > 20,
            "q={q}: only {checked} lattice points below the top loss"
        );
        assert_eq!(a.delta(top + h, h), a.inf, "no add loss above log(1/(1-q))");
    }
}

#[test]
fn the_direction_with_the_larger_delta_decides_epsilon() {
    // Build a pair where the "add" slot holds the weaker guarantee (the remove PLD of a noisier
    // step is stronger): epsilon must be the add slot's, whichever slot it sits in.
    let h = 1e-3;
    let (strong, _) = step_tails(0.1, 2.0, h);
    let (weak, _) = step_tails(0.1, 0.8, h);
    let delta = 1e-5;
    let weak_alone = epsilon_from(&weak, &weak, h, delta);
    let strong_alone = epsilon_from(&strong, &strong, h, delta);
    assert!(
        weak_alone > strong_alone + 0.1,
        "{weak_alone} vs {strong_alone}"
    );
    assert_eq!(
        epsilon_from(&strong, &weak, h, delta),
        weak_alone,
        "add decides"
    );
    assert_eq!(
        epsilon_from(&weak, &strong, h, delta),
        weak_alone,
        "remove decides"
    );
}

#[test]
fn pessimistic_truncation_keeps_every_unit_of_mass() {
    // Dyadic masses, with the first kept atom (2^-40 > TAIL) small enough that adding the tail
    // to it is exact in floating point. The lower tail (2^-60 + 2^-61 <= TAIL = 1e-15) must move
    // up onto the first kept atom and the upper tail (2^-55) to +inf: dropping either loses mass
    // and lowers delta(eps), i.e. would make the accountant optimistic.
    let tiny = [2f64.powi(-60), 2f64.powi(-61)];
    let (first, top) = (2f64.powi(-40), 2f64.powi(-55));
    let atoms = || vec![tiny[0], tiny[1], first, 0.5, 0.5 - first, top];
    let mut pmf = Pmf {
        k0: -3,
        p: atoms(),
        inf: 0.0,
        optimistic: false,
        slack: 0.0,
        clean: usize::MAX,
        tail: 0.0,
    };
    pmf.truncate(TAIL);
    assert_eq!(pmf.k0, -1, "the two lower atoms are cut");
    assert_eq!(pmf.p.len(), 3, "the top atom went to +inf");
    assert_eq!(pmf.inf, top, "upper tail moved to +inf");
    assert_eq!(
        pmf.p[0] - first,
        tiny[0] + tiny[1],
        "lower tail moved onto the first atom"
    );
    assert_eq!(&pmf.p[1..], &[0.5, 0.5 - first]);
    // The optimistic truncation (lower bounds) does the opposite: lower tail dropped, upper
    // tail moved down onto the last kept atom.
    let mut low = Pmf {
        k0: -3,
        p: atoms(),
        inf: 0.0,
        optimistic: true,
        slack: 0.0,
        clean: usize::MAX,
        tail: 0.0,
    };
    low.truncate(TAIL);
    assert_eq!(low.inf, 0.0);
    assert_eq!(low.p, vec![first, 0.5, 0.5 - first + top]);
}

#[test]
fn mass_wrapped_from_above_the_window_goes_to_inf() {
    // A short FFT buffer: the composed loss's upper tail past the Chernoff window (certified at
    // most `above`) wraps around and lands at low losses, which lowers delta(eps) at high eps;
    // `self_compose` must add `above` to the mass at +inf. Checked against the exact 4-fold
    // convolution: delta(eps) of the composed PLD >= the exact one at every eps (1e-12 covers
    // FFT rounding on 16 points). Dropping `+ above` makes delta fall below the exact value at
    // the top losses by up to the wrapped mass (> 1e-3 here, asserted).
    let h = 0.5;
    let p = vec![0.5, 0.2, 0.1, 0.1, 0.05, 0.05];
    let steps = 4;
    let pmf = Pmf {
        k0: -2,
        p: p.clone(),
        inf: 0.0,
        optimistic: false,
        slack: 0.0,
        clean: usize::MAX,
        tail: 0.0,
    };
    let win = Window::chernoff(&p, steps, 0.05);
    let n = fast_len(win.width.max(p.len()));
    let (_, _, above) = win.place(&p, steps, n);
    assert!(
        above > 1e-3 && n < (p.len() - 1) * steps + 1,
        "the test needs a wrap: n {n}, above {above}"
    );
    let composed = pmf.self_compose(steps, n, &win).into_tails(h);
    // Exact T-fold linear convolution.
    let mut exact = vec![1.0];
    for _ in 0..steps {
        let mut next = vec![0.0; exact.len() + p.len() - 1];
        for (i, a) in exact.iter().enumerate() {
            for (j, b) in p.iter().enumerate() {
                next[i + j] += a * b;
            }
        }
        exact = next;
    }
    let k0 = -2 * steps as i64;
    for k in -10..=14 {
        let eps = k as f64 * 0.5 * h;
        let want: f64 = exact
            .iter()
            .enumerate()
            .map(|(j, m)| {
                let l = (k0 + j as i64) as f64 * h;
                if l > eps {
                    m * (1.0 - (eps - l).exp())
                } else {
                    0.0
                }
            })
            .sum();
        let got = composed.delta(eps, h);
        assert!(got >= want - 1e-12, "eps={eps}: {got} < exact {want}");
    }
}
