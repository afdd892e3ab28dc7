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
    // Twiddles computed directly (not by recurrence) so their error does not grow with n.
    let sign = if inverse { 1.0 } else { -1.0 };
    let (wr, wi): (Vec<f64>, Vec<f64>) = (0..n / 2)
        .map(|k| {
            let a = sign * 2.0 * PI * k as f64 / n as f64;
            (a.cos(), a.sin())
        })
        .unzip();
    let mut len = 2;
    while len <= n {
        let half = len / 2;
        let step = n / len;
        for start in (0..n).step_by(len) {
            for k in 0..half {
                let (cr, ci) = (wr[k * step], wi[k * step]);
                let (a, b) = (start + k, start + k + half);
                let tr = re[b] * cr - im[b] * ci;
                let ti = re[b] * ci + im[b] * cr;
                re[b] = re[a] - tr;
                im[b] = im[a] - ti;
                re[a] += tr;
                im[a] += ti;
            }
        }
        len <<= 1;
    }
    if inverse {
        let s = 1.0 / n as f64;
        re.iter_mut().for_each(|x| *x *= s);
        im.iter_mut().for_each(|x| *x *= s);
    }
}

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
    }
}
