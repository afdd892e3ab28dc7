//! A small radix-2 FFT, enough for linear convolutions of probability mass functions.

use std::f64::consts::PI;

/// In-place iterative radix-2 FFT of (re, im); `inverse` uses e^{+2 pi i k/n} and divides by n.
pub fn fft(re: &mut [f64], im: &mut [f64], inverse: bool) {
    let n = re.len();
    debug_assert!(n.is_power_of_two() && im.len() == n);
    if n <= 1 {
        return;
    }
    let mut j = 0usize;
    for i in 1..n {
        let mut bit = n >> 1;
        while j & bit != 0 {
            j ^= bit;
            bit >>= 1;
        }
        j |= bit;
        if i < j {
            re.swap(i, j);
            im.swap(i, j);
        }
    }
    // Twiddles computed directly (not by recurrence) so their error does not grow with n; level
    // `half` keeps its factors contiguously at [half, 2 half) so the inner loop reads them in order.
    let sign = if inverse { 1.0 } else { -1.0 };
    let mut tw = vec![(0.0f64, 0.0f64); n];
    for k in 0..n / 2 {
        let a = sign * 2.0 * PI * k as f64 / n as f64;
        tw[n / 2 + k] = (a.cos(), a.sin());
    }
    let mut half = n / 4;
    while half >= 1 {
        for k in 0..half {
            tw[half + k] = tw[2 * half + 2 * k];
        }
        half /= 2;
    }
    let mut half = 1;
    while half < n {
        let w = &tw[half..2 * half];
        for start in (0..n).step_by(2 * half) {
            let (lo_re, hi_re) = re[start..start + 2 * half].split_at_mut(half);
            let (lo_im, hi_im) = im[start..start + 2 * half].split_at_mut(half);
            for k in 0..half {
                let (cr, ci) = w[k];
                let tr = hi_re[k] * cr - hi_im[k] * ci;
                let ti = hi_re[k] * ci + hi_im[k] * cr;
                hi_re[k] = lo_re[k] - tr;
                hi_im[k] = lo_im[k] - ti;
                lo_re[k] += tr;
                lo_im[k] += ti;
            }
        }
        half <<= 1;
    }
    if inverse {
        let s = 1.0 / n as f64;
        re.iter_mut().for_each(|x| *x *= s);
        im.iter_mut().for_each(|x| *x *= s);
    }
}

#[cfg(test)]
/// Linear convolution of two real sequences (length a.len() + b.len() - 1) with two FFTs:
/// a and b are packed into one complex sequence a + i b and separated by conjugate symmetry.
pub fn convolve(a: &[f64], b: &[f64]) -> Vec<f64> {
    let m = a.len() + b.len() - 1;
    let n = m.next_power_of_two();
    let mut re = vec![0.0; n];
    let mut im = vec![0.0; n];
    re[..a.len()].copy_from_slice(a);
    im[..b.len()].copy_from_slice(b);
    fft(&mut re, &mut im, false);
    let (mut cr, mut ci) = (vec![0.0; n], vec![0.0; n]);
    for k in 0..n {
        let nk = (n - k) % n;
        // A_k = (X_k + conj X_{n-k}) / 2, B_k = (X_k - conj X_{n-k}) / (2i).
        let (ar, ai) = (0.5 * (re[k] + re[nk]), 0.5 * (im[k] - im[nk]));
        let (br, bi) = (0.5 * (im[k] + im[nk]), -0.5 * (re[k] - re[nk]));
        cr[k] = ar * br - ai * bi;
        ci[k] = ar * bi + ai * br;
    }
    fft(&mut cr, &mut ci, true);
    cr.truncate(m);
    cr
}

/// Splits the FFT X of x1 + i x2 (x1, x2 real) into the FFTs of x1 and x2 at bin k.
#[inline]
fn split(re: &[f64], im: &[f64], k: usize) -> ((f64, f64), (f64, f64)) {
    let n = re.len();
    let nk = (n - k) % n;
    // X1_k = (X_k + conj X_{n-k}) / 2, X2_k = (X_k - conj X_{n-k}) / (2i).
    (
        (0.5 * (re[k] + re[nk]), 0.5 * (im[k] - im[nk])),
        (0.5 * (im[k] + im[nk]), -0.5 * (re[k] - re[nk])),
    )
}

/// Two linear convolutions at once, (a1 * b1, a2 * b2), with three FFTs of one common size;
/// `b = None` squares (a1 * a1, a2 * a2) with two. The results are real, so they travel as the
/// real and imaginary parts of one inverse FFT.
pub fn convolve_two(a1: &[f64], a2: &[f64], b: Option<(&[f64], &[f64])>) -> (Vec<f64>, Vec<f64>) {
    let (b1, b2) = b.unwrap_or((a1, a2));
    let (m1, m2) = (a1.len() + b1.len() - 1, a2.len() + b2.len() - 1);
    let n = m1.max(m2).next_power_of_two();
    let load = |x: &[f64], y: &[f64]| {
        let mut re = vec![0.0; n];
        let mut im = vec![0.0; n];
        re[..x.len()].copy_from_slice(x);
        im[..y.len()].copy_from_slice(y);
        fft(&mut re, &mut im, false);
        (re, im)
    };
    let (ar, ai) = load(a1, a2);
    let bs = b.map(|_| load(b1, b2));
    let (mut zr, mut zi) = (vec![0.0; n], vec![0.0; n]);
    for k in 0..n {
        let (x1, x2) = split(&ar, &ai, k);
        let (y1, y2) = match &bs {
            Some((br, bi)) => split(br, bi, k),
            None => (x1, x2),
        };
        let p1 = (x1.0 * y1.0 - x1.1 * y1.1, x1.0 * y1.1 + x1.1 * y1.0);
        let p2 = (x2.0 * y2.0 - x2.1 * y2.1, x2.0 * y2.1 + x2.1 * y2.0);
        // Z = P1 + i P2.
        zr[k] = p1.0 - p2.1;
        zi[k] = p1.1 + p2.0;
    }
    fft(&mut zr, &mut zi, true);
    zr.truncate(m1);
    zi.truncate(m2);
    (zr, zi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn convolution_matches_direct_sum() {
        let a = [0.1, 0.2, 0.3, 0.4, 0.0, 1e-3];
        let b = [0.5, 0.25, 0.25];
        let c = convolve(&a, &b);
        assert_eq!(c.len(), 8);
        for (k, ck) in c.iter().enumerate() {
            let direct: f64 = (0..a.len())
                .filter(|&i| k >= i && k - i < b.len())
                .map(|i| a[i] * b[k - i])
                .sum();
            assert!((ck - direct).abs() < 1e-15, "k={k}: {ck} vs {direct}");
        }
        // Paired form: (a * b, b * a) and the squares (a * a, b * b).
        let (c1, c2) = convolve_two(&a, &b, Some((&b, &a)));
        let (s1, s2) = convolve_two(&a, &b, None);
        let (d1, d2) = (convolve(&a, &a), convolve(&b, &b));
        for k in 0..c.len() {
            assert!((c1[k] - c[k]).abs() < 1e-15 && (c2[k] - c[k]).abs() < 1e-15);
        }
        assert_eq!((s1.len(), s2.len()), (d1.len(), d2.len()));
        for k in 0..d1.len() {
            assert!((s1[k] - d1[k]).abs() < 1e-15);
        }
        for k in 0..d2.len() {
            assert!((s2[k] - d2[k]).abs() < 1e-15);
        }
    }
}
