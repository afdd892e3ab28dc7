//! T-fold self-convolution of a probability mass function by real FFTs (`realfft` on `rustfft`:
//! SIMD, mixed radix), for the PLD accountant: one forward transform, the spectrum raised to the
//! T-th power, one inverse transform. Plans are cached per thread and reused across the
//! directions of a query and across the queries of a calibration.

use std::cell::RefCell;
use std::sync::Arc;

use realfft::num_complex::Complex;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};

/// A forward and an inverse plan of one length.
#[derive(Clone)]
struct Plans {
    len: usize,
    fwd: Arc<dyn RealToComplex<f64>>,
    inv: Arc<dyn ComplexToReal<f64>>,
}

/// Plans kept per thread: at most this many lengths, none longer than the current request, so
/// that the cached twiddle factors stay within the PLD's memory estimate.
const CACHED_LENGTHS: usize = 2;

thread_local! {
    static PLANS: RefCell<Vec<Plans>> = const { RefCell::new(Vec::new()) };
}

/// The plans for length `len` (even), from the cache or new. A fresh planner per miss, so that
/// no planner-internal cache outlives the request.
fn plans(len: usize) -> Plans {
    PLANS.with(|c| {
        let mut c = c.borrow_mut();
        c.retain(|p| p.len <= len);
        if let Some(i) = c.iter().position(|p| p.len == len) {
            let p = c.remove(i);
            c.insert(0, p.clone());
            return p;
        }
        let mut planner = RealFftPlanner::<f64>::new();
        let p = Plans {
            len,
            fwd: planner.plan_fft_forward(len),
            inv: planner.plan_fft_inverse(len),
        };
        c.truncate(CACHED_LENGTHS - 1);
        c.insert(0, p.clone());
        p
    })
}

/// The smallest even length >= m whose only prime factors are 2, 3 and 5 (fast for rustfft).
pub fn fast_len(m: usize) -> usize {
    let m = m.max(2);
    let mut best = m.next_power_of_two();
    let mut p5 = 1usize;
    while p5 < best {
        let mut p35 = p5;
        while p35 < best {
            // Smallest 2^k * p35 >= m, k >= 1.
            let mut v = 2 * p35;
            while v < m {
                v *= 2;
            }
            best = best.min(v);
            p35 *= 3;
        }
        p5 *= 5;
    }
    best
}

/// The T-fold circular self-convolution of p (p.len() <= len): entry m of the result holds the
/// mass of J_1 + ... + J_T = m (mod len), J_i iid ~ p. `len` must be even (see [`fast_len`]).
/// Spectral bins whose T-th power underflows (|X|^T < 1e-300) are set to 0.
pub fn self_convolve_circular(p: &[f64], steps: usize, len: usize) -> Vec<f64> {
    assert!(len.is_multiple_of(2) && p.len() <= len);
    let plans = plans(len);
    let mut buf = vec![0.0; len];
    buf[..p.len()].copy_from_slice(p);
    let mut spec = plans.fwd.make_output_vec();
    let mut scratch =
        vec![Complex::default(); plans.fwd.get_scratch_len().max(plans.inv.get_scratch_len())];
    plans
        .fwd
        .process_with_scratch(&mut buf, &mut spec, &mut scratch)
        .expect("buffer lengths match the plan");
    power_in_place(&mut spec, steps);
    let scale = 1.0 / len as f64;
    spec.iter_mut().for_each(|x| *x *= scale);
    // Bins 0 and len/2 of a real sequence are real; T arg X = T pi leaves ~1e-11 in sin.
    spec[0].im = 0.0;
    let last = spec.len() - 1;
    spec[last].im = 0.0;
    plans
        .inv
        .process_with_scratch(&mut spec, &mut buf, &mut scratch)
        .expect("buffer lengths match the plan");
    buf
}

/// The linear convolution of a and b (both non-empty): entry m holds sum_{i + j = m} a_i b_j,
/// m < a.len() + b.len() - 1, by one real FFT of each on a buffer long enough that nothing
/// wraps, the product of the spectra and one inverse FFT (the composition of two different
/// PLDs; rounding error about 2^-53 max|a| max|b| per entry, as for the self-convolution).
pub fn convolve(a: &[f64], b: &[f64]) -> Vec<f64> {
    assert!(!a.is_empty() && !b.is_empty());
    let out = a.len() + b.len() - 1;
    let len = fast_len(out);
    let plans = plans(len);
    let mut scratch =
        vec![Complex::default(); plans.fwd.get_scratch_len().max(plans.inv.get_scratch_len())];
    let spectrum = |x: &[f64], scratch: &mut [Complex<f64>]| {
        let mut buf = vec![0.0; len];
        buf[..x.len()].copy_from_slice(x);
        let mut spec = plans.fwd.make_output_vec();
        plans
            .fwd
            .process_with_scratch(&mut buf, &mut spec, scratch)
            .expect("buffer lengths match the plan");
        spec
    };
    let mut sa = spectrum(a, &mut scratch);
    let sb = spectrum(b, &mut scratch);
    let scale = 1.0 / len as f64;
    for (x, y) in sa.iter_mut().zip(&sb) {
        *x = *x * *y * scale;
    }
    drop(sb);
    // Bins 0 and len/2 of a real sequence are real.
    sa[0].im = 0.0;
    let last = sa.len() - 1;
    sa[last].im = 0.0;
    let mut buf = vec![0.0; len];
    plans
        .inv
        .process_with_scratch(&mut sa, &mut buf, &mut scratch)
        .expect("buffer lengths match the plan");
    buf.truncate(out);
    buf
}

/// Peak f64 words of [`convolve`] on inputs of lengths `la` and `lb`: two spectra and one real
/// buffer of the padded length, the scratch, and a plan pair of that length.
pub fn convolve_words(la: usize, lb: usize) -> usize {
    let len = fast_len(la + lb - 1);
    // Spectra: len/2 + 1 complex values each; twiddles about 3 words per point.
    2 * (len + 2) + len + scratch_words(len) + 3 * len
}

/// x -> x^T for every bin, by binary powering four bins at a time (vectorizable). Bins with
/// |x|^T < 1e-300 are set to 0 first; on the others no intermediate power drops below |x|^T, so
/// nothing becomes subnormal. Relative error about T * 2^-53, as in polar form.
fn power_in_place(spec: &mut [Complex<f64>], steps: usize) {
    // |x|^T < 1e-300 <=> |x|^2 < e^{-2 * 690.8 / T}.
    let r2_min = (-2.0 * 690.8 / steps as f64).exp();
    for x in spec.iter_mut() {
        if x.norm_sqr() < r2_min {
            *x = Complex::default();
        }
    }
    for c in spec.chunks_mut(4) {
        // Bins past the end of a short last chunk are padded with 0.
        let (mut br, mut bi) = ([0.0f64; 4], [0.0f64; 4]);
        for (k, x) in c.iter().enumerate() {
            (br[k], bi[k]) = (x.re, x.im);
        }
        let (mut ar, mut ai) = ([1.0f64; 4], [0.0f64; 4]);
        let mut t = steps;
        loop {
            if t & 1 == 1 {
                for k in 0..4 {
                    (ar[k], ai[k]) = (ar[k] * br[k] - ai[k] * bi[k], ar[k] * bi[k] + ai[k] * br[k]);
                }
            }
            t >>= 1;
            if t == 0 {
                break;
            }
            for k in 0..4 {
                (br[k], bi[k]) = (br[k] * br[k] - bi[k] * bi[k], 2.0 * br[k] * bi[k]);
            }
        }
        for (k, x) in c.iter_mut().enumerate() {
            *x = Complex::new(ar[k], ai[k]);
        }
    }
}

/// Scratch length (in f64 words) the plans of length `len` need, for the memory estimate.
pub fn scratch_words(len: usize) -> usize {
    let p = plans(len);
    2 * p.fwd.get_scratch_len().max(p.inv.get_scratch_len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Direct T-fold linear convolution.
    fn direct(p: &[f64], steps: usize) -> Vec<f64> {
        let mut acc = vec![1.0];
        for _ in 0..steps {
            let mut next = vec![0.0; acc.len() + p.len() - 1];
            for (i, a) in acc.iter().enumerate() {
                for (j, b) in p.iter().enumerate() {
                    next[i + j] += a * b;
                }
            }
            acc = next;
        }
        acc
    }

    #[test]
    fn self_convolution_matches_direct_sum() {
        let p = [0.1, 0.2, 0.3, 0.35, 0.0, 0.05];
        for steps in [1, 2, 5] {
            let want = direct(&p, steps);
            // Long enough: the linear result; too short: the circular wrap of it.
            for len in [fast_len(want.len()), 8] {
                let got = self_convolve_circular(&p, steps, len);
                assert_eq!(got.len(), len);
                for (m, g) in got.iter().enumerate() {
                    let w: f64 = want.iter().skip(m).step_by(len).sum();
                    assert!(
                        (g - w).abs() < 1e-15,
                        "T={steps} len={len} m={m}: {g} vs {w}"
                    );
                }
            }
        }
    }

    #[test]
    fn convolution_matches_direct_sum() {
        let a = [0.5, 0.25, 0.125, 0.125];
        let b = [0.1, 0.2, 0.3, 0.2, 0.1, 0.05, 0.05];
        let got = convolve(&a, &b);
        assert_eq!(got.len(), a.len() + b.len() - 1);
        for (m, g) in got.iter().enumerate() {
            let want: f64 = (0..a.len())
                .filter(|&i| m >= i && m - i < b.len())
                .map(|i| a[i] * b[m - i])
                .sum();
            assert!((g - want).abs() < 1e-15, "m = {m}: {g} vs {want}");
        }
    }

    #[test]
    fn fast_lengths_are_smooth_and_minimal() {
        assert_eq!(fast_len(1), 2);
        assert_eq!(fast_len(7), 8);
        assert_eq!(fast_len(11), 12);
        assert_eq!(fast_len(31), 32);
        assert_eq!(fast_len(33), 36);
        for m in 2..2000 {
            let n = fast_len(m);
            let smooth = |mut v: usize| {
                for f in [2, 3, 5] {
                    while v.is_multiple_of(f) {
                        v /= f;
                    }
                }
                v == 1
            };
            assert!(n >= m && n.is_multiple_of(2) && smooth(n), "{m} -> {n}");
            assert!(
                (m..n).all(|v| !(v.is_multiple_of(2) && smooth(v))),
                "{m} -> {n}"
            );
        }
    }
}
