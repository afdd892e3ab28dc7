//! The discrete PLD ([`Pmf`]): masses on the loss lattice (k0 + j) h with a mass at +inf, its
//! truncation, its T-fold self-convolution by FFT inside the Chernoff window, and the suffix-sum
//! tables ([`Tails`]) that read delta(eps) off a composed PLD.

use super::window::Window;
use crate::privacy::fft::self_convolve_circular;

/// A discrete loss distribution on the lattice (k0 + j) h, with mass `inf` at +inf.
#[derive(Debug, Clone)]
pub(super) struct Pmf {
    pub(super) k0: i64,
    pub(super) p: Vec<f64>,
    pub(super) inf: f64,
    /// Optimistic (lower-bound) distribution: truncation moves mass down, never up.
    pub(super) optimistic: bool,
    /// Subtracted from delta(eps): the optimistic side's bound on mass wrapped upwards.
    pub(super) slack: f64,
    /// Pessimistic side: a bound on the P-mass whose loss was raised by the truncations (moved to
    /// +inf, up onto the first kept atom, or wrapped upwards), including `inf`.
    pub(super) tail: f64,
    /// Composed PLDs: the first index of `p` above the Chernoff window, where the true mass is
    /// below the window's budget (usize::MAX where there is no such room).
    pub(super) clean: usize,
}

/// A composed PLD as suffix sums, for O(1) evaluation of delta(eps): over the atoms
/// l_j = (k0 + j) h, tail_k = sum_{j >= k} p_j and disc_k = sum_{j >= k} p_j e^{-(j - k) h},
/// summed from the top (small terms first).
pub(super) struct Tails {
    pub(super) k0: i64,
    pub(super) inf: f64,
    pub(super) slack: f64,
    /// [`Pmf::tail`] of the composed PLD.
    pub(super) moved: f64,
    /// Estimated rounding noise of the suffix sums per atom they span (see
    /// [`Pmf::into_tails`]): |error of delta(eps)| ~ noise_rate * (atoms above eps). Over a
    /// composed PLD of 1e5..2e6 points it adds up to about 1e-15..1e-12, the limit of this
    /// accountant at small delta.
    pub(super) noise_rate: f64,
    pub(super) tail: Vec<f64>,
    pub(super) disc: Vec<f64>,
}

impl Pmf {
    /// Pessimistic truncation: upper tail to +inf, lower tail up onto the first kept atom.
    /// Optimistic truncation (lower bounds): upper tail down onto the last kept atom, lower tail
    /// dropped; both can only decrease delta(eps), since delta(eps) = E_P[(1 - e^{eps - L})_+]
    /// is increasing in every loss value and in every mass.
    /// At most `tail` of P-mass is moved on each side; on the pessimistic side the moved mass is
    /// added to [`Pmf::tail`].
    pub(super) fn truncate(&mut self, tail: f64) {
        let n = self.p.len();
        let (mut hi, mut acc) = (n, 0.0);
        while hi > 1 && acc + self.p[hi - 1] <= tail {
            acc += self.p[hi - 1];
            hi -= 1;
        }
        if self.optimistic {
            self.p[hi - 1] += acc;
        } else {
            self.inf += acc;
        }
        let (mut lo, mut low) = (0, 0.0);
        while lo + 1 < hi && low + self.p[lo] <= tail {
            low += self.p[lo];
            lo += 1;
        }
        let mut p = self.p[lo..hi].to_vec();
        if !self.optimistic {
            p[0] += low;
            self.tail += acc + low;
        }
        self.k0 += lo as i64;
        self.p = p;
    }

    /// The T-fold composition on a buffer of length n (one FFT each way): the window [lo, lo + n)
    /// of the summed lattice offsets, with the wrapped tails accounted as described in the
    /// module documentation.
    pub(super) fn self_compose(&self, steps: usize, n: usize, win: &Window) -> Pmf {
        let (lo, below, above) = win.place(&self.p, steps, n);
        let mut p = self_convolve_circular(&self.p, steps, n);
        p.rotate_left(lo % n);
        // 1 - (1 - m)^T without cancellation.
        let compose = |m: f64| -((steps as f64) * (-m).ln_1p()).exp_m1();
        let inf = compose(self.inf);
        // [`lattice_fits`] checked before anything was built that this fits in i64.
        let k0 = steps as i128 * self.k0 as i128 + lo as i128;
        Pmf {
            k0: i64::try_from(k0).expect("lattice range checked by lattice_fits"),
            p,
            inf: if self.optimistic { inf } else { inf + above },
            optimistic: self.optimistic,
            slack: if self.optimistic { below } else { 0.0 },
            clean: (win.lo + win.width).saturating_sub(lo).min(n),
            // Moved one-step mass (any of the T steps), plus both wrapped tails of the window.
            tail: if self.optimistic {
                0.0
            } else {
                compose(self.tail) + above + below
            },
        }
    }

    /// The composition of two (composed) PLDs on the same lattice spacing: their linear
    /// convolution (nothing wraps), the masses at +inf and the moved masses composed as
    /// independent events (1 - (1 - a)(1 - b)), the optimistic slacks added (union bound).
    /// Above index `clean` of each factor the true mass is below its window budget, so above
    /// clean_a + clean_b - 1 of the product it is below the sum of the two.
    pub(super) fn convolve(&self, other: &Pmf) -> Pmf {
        let p = crate::privacy::fft::convolve(&self.p, &other.p);
        let either = |a: f64, b: f64| a + b - a * b;
        let clean = if self.clean < self.p.len() && other.clean < other.p.len() {
            self.clean + other.clean.saturating_sub(1)
        } else {
            p.len()
        };
        Pmf {
            k0: self.k0 + other.k0,
            p,
            inf: either(self.inf, other.inf),
            optimistic: self.optimistic,
            slack: self.slack + other.slack,
            tail: either(self.tail, other.tail),
            clean,
        }
    }

    /// The suffix sums of [`Tails`], computed over p in place.
    pub(super) fn into_tails(self, h: f64) -> Tails {
        let r = (-h).exp();
        let mut tail = self.p;
        let mut disc = vec![0.0; tail.len()];
        let (mut t, mut d) = (0.0, 0.0);
        for (tj, dj) in tail.iter_mut().zip(disc.iter_mut()).rev() {
            t += *tj;
            d = *tj + r * d;
            *tj = t;
            *dj = d;
        }
        // FFT rounding: above the Chernoff window (from index `clean`) the true suffix sums are
        // below the window's budget (< 1e-15), so what is found there is rounding noise; a
        // uniform offset from the spectrum's T-th power (relative error ~ T 2^-53 in its
        // low-frequency bins) grows linearly across the buffer, so the largest |suffix sum|
        // there, per atom of that room, times the atoms above eps estimates how much rounding
        // moves delta(eps) (an estimate, not a proof). Without that room (the one-step PLDs),
        // the top 1/64.
        let n = tail.len();
        let from = if self.clean < n {
            self.clean
        } else {
            n - (n / 64).max(1)
        };
        let top = tail[from..]
            .iter()
            .chain(&disc[from..])
            .fold(0.0f64, |m, v| m.max(v.abs()));
        let noise_rate = top / (n - from) as f64;
        Tails {
            k0: self.k0,
            inf: self.inf,
            slack: self.slack,
            moved: self.tail,
            noise_rate,
            tail,
            disc,
        }
    }
}

impl Tails {
    /// delta(eps) = sum_{l > eps} p_l (1 - e^{eps - l}) + inf (- slack on the optimistic side),
    /// in O(1): with s the first atom above eps, delta = tail_s - e^{eps - l_s} disc_s + ...
    pub(super) fn delta(&self, eps: f64, h: f64) -> f64 {
        // Saturating: eps / h beyond i64 (eps huge or +inf) is past every atom.
        let start = ((eps / h).floor() as i64)
            .saturating_add(1)
            .saturating_sub(self.k0)
            .max(0) as usize;
        let mut s = self.inf - self.slack;
        if start < self.tail.len() {
            let l = (self.k0 + start as i64) as f64 * h;
            s += self.tail[start] - (eps - l).exp() * self.disc[start];
        }
        s
    }

    /// The rounding allowance of delta(eps): noise_rate times the atoms above eps.
    pub(super) fn noise_at(&self, eps: f64, h: f64) -> f64 {
        let start = ((eps / h).floor() as i64)
            .saturating_add(1)
            .saturating_sub(self.k0)
            .max(0) as usize;
        self.noise_rate * self.tail.len().saturating_sub(start) as f64
    }

    pub(super) fn max_loss(&self, h: f64) -> f64 {
        (self.k0 + self.tail.len() as i64) as f64 * h
    }
}
