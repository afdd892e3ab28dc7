//! Exact samplers for the small mechanisms of a private release: integer and rational arithmetic
//! only, so that a released value carries no floating-point artifact of the unnoised one
//! (Mironov 2012, "On significance of the least significant bits for differential privacy",
//! showed how the low bits of a floating-point Laplace draw reveal the value it was added to).
//!
//! The samplers are those of Canonne, Kamath & Steinke 2020 ("The discrete Gaussian for
//! differential privacy", NeurIPS 2020; arXiv 2004.00010; "CKS" below), over any [`rand::Rng`]
//! (in a release, [`ReleaseRng::Secure`]'s ChaCha12 keyed from the OS):
//! - [`bernoulli`]: Bernoulli(n / d) for integers 0 <= n <= d, from a uniform integer below d;
//! - [`bernoulli_exp_neg`]: Bernoulli(exp(-n / d)), CKS Algorithm 1;
//! - [`discrete_laplace`]: P(y) ∝ exp(-|y| s / t) on the integers, CKS Algorithm 2;
//! - [`discrete_gaussian`]: P(y) ∝ exp(-y^2 / (2 sigma^2)), sigma^2 = a / b rational, CKS
//!   Algorithm 3;
//! - [`exponential`]: the exponential mechanism P(j) ∝ exp(u_j / b) (McSherry & Talwar 2007;
//!   b = 2 Delta / eps) by rejection from the uniform proposal with Algorithm 1 as the
//!   acceptance test.
//!
//! Every probability is computed exactly in u128 (with a 256-bit product and quotient where a
//! square needs it); the parameter checks are made before any draw and give an error, never a
//! panic. The only departure from exactness is an event too rare to occur: a draw whose integer
//! would not fit in 63 bits (below exp(-2^23) at the parameters these samplers accept), which
//! gives an error instead of a value.
//!
//! [`select_release`] is the one selection both of the crate's exponential mechanisms call (RNMM
//! in [`crate::privacy::min_lipschitz`] and the bound selection of
//! [`crate::privacy::standardize`]): on a seeded generator (the reproducible research mode and
//! the simulations) it is the Gumbel-max draw bit for bit as before, on a secure one the exact
//! sampler [`exponential`].
//!
//! Running time is not constant: how many draws a sampler makes depends on its output, which a
//! local observer could time (docs/recommend.md, "What is random, and from where").

use rand::{Rng, RngExt};

use crate::error::{Error, Result};
use crate::rng::ReleaseRng;

/// Largest epsilon [`epsilon_units`] gives: a larger one is spent as this one (a mechanism that
/// is 2^20-DP is eps-DP for every eps >= 2^20).
pub const MAX_EXACT_EPSILON: f64 = 1_048_576.0;

/// Largest |utility| of [`exponential`], 2^62.
pub const MAX_UTILITY: f64 = 4_611_686_018_427_387_904.0;

/// Largest t = floor(sigma) + 1 of [`discrete_gaussian`] (and scale t / s of
/// [`discrete_laplace`] for which the 63-bit bound of the module doc is below exp(-2^23)).
pub const MAX_SCALE: u128 = 1 << 40;

/// 2^63: draws at or above it in absolute value are refused (module doc).
const DRAW_LIMIT: u128 = 1 << 63;

/// A uniform integer in [0, n), n >= 1: the bit length of n - 1 in fresh bits, redrawn while
/// >= n (each try succeeds with probability > 1/2), so every value has probability exactly 1/n.
fn uniform<R: Rng + ?Sized>(rng: &mut R, n: u128) -> u128 {
    if n <= 1 {
        return 0;
    }
    let bits = 128 - (n - 1).leading_zeros();
    let mask = if bits == 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    loop {
        let lo = u128::from(rng.next_u64());
        let hi = if bits > 64 {
            u128::from(rng.next_u64())
        } else {
            0
        };
        let v = ((hi << 64) | lo) & mask;
        if v < n {
            return v;
        }
    }
}

/// A uniform integer in [0, n) (see the private `uniform`); an error for n = 0.
pub fn uniform_below<R: Rng + ?Sized>(rng: &mut R, n: u128) -> Result<u128> {
    if n == 0 {
        return Err(Error::param("a uniform integer below 0 does not exist"));
    }
    Ok(uniform(rng, n))
}

/// Bernoulli(num / den), exactly: a uniform integer below den is < num with probability
/// num / den. A dyadic p = num / 2^k is the case den = 2^k.
pub fn bernoulli<R: Rng + ?Sized>(rng: &mut R, num: u128, den: u128) -> Result<bool> {
    if den == 0 || num > den {
        return Err(Error::param(format!(
            "Bernoulli({num} / {den}) needs 0 <= num <= den and den >= 1"
        )));
    }
    Ok(uniform(rng, den) < num)
}

/// Bernoulli(exp(-r / d)) for 0 <= r <= d, d >= 1: CKS 2020 Algorithm 1, case gamma in [0, 1].
/// K = 1; while Bernoulli(gamma / K) K += 1; return whether K is odd (P = sum_k (-gamma)^k / k!).
/// Bernoulli(r / (d K)) is drawn as Bernoulli(1 / K) and Bernoulli(r / d), independent, whose
/// product of probabilities it is; so no product d K is formed. K reaching 2^128 would need
/// (2^128)! to one luck, so the counter saturates.
fn bern_exp_fraction<R: Rng + ?Sized>(rng: &mut R, r: u128, d: u128) -> bool {
    let mut k: u128 = 1;
    while uniform(rng, k) == 0 && uniform(rng, d) < r {
        k = k.saturating_add(1);
    }
    k % 2 == 1
}

/// Bernoulli(exp(-(q + r / d))), 0 <= r < d: CKS 2020 Algorithm 1, case gamma > 1. exp(-q) is
/// q independent Bernoulli(exp(-1)) draws, all 1 (stopping at the first 0, so the expected work
/// is below 1 / (1 - e^-1) draws however large q is), times Bernoulli(exp(-r / d)).
fn bern_exp_split<R: Rng + ?Sized>(rng: &mut R, q: u128, r: u128, d: u128) -> bool {
    let mut i: u128 = 0;
    while i < q {
        if !bern_exp_fraction(rng, 1, 1) {
            return false;
        }
        i += 1;
    }
    bern_exp_fraction(rng, r, d)
}

/// Bernoulli(exp(-num / den)), den >= 1, exactly (CKS 2020 Algorithm 1).
pub fn bernoulli_exp_neg<R: Rng + ?Sized>(rng: &mut R, num: u128, den: u128) -> Result<bool> {
    if den == 0 {
        return Err(Error::param(format!(
            "Bernoulli(exp(-{num} / {den})) needs den >= 1"
        )));
    }
    Ok(bern_exp_split(rng, num / den, num % den, den))
}

/// The discrete Laplace distribution P(y) = (e^(s/t) - 1) / (e^(s/t) + 1) e^(-|y| s / t) on the
/// integers (scale t / s), CKS 2020 Algorithm 2: U uniform below t accepted
/// with probability exp(-U / t), V geometric (failures before a Bernoulli(exp(-1)) 0),
/// X = U + t V (geometric with parameter exp(-1/t)), Y = floor(X / s), a sign B; (B = 1, Y = 0)
/// is redrawn so 0 is not counted twice. Errors for s = 0, t = 0, t / s > 2^40 (the 63-bit
/// bound of the module doc), or a draw of 2^63 or more.
pub fn discrete_laplace<R: Rng + ?Sized>(rng: &mut R, s: u128, t: u128) -> Result<i64> {
    if s == 0 || t == 0 || t / s >= MAX_SCALE {
        return Err(Error::param(format!(
            "the discrete Laplace sampler needs integers s, t >= 1 with scale t / s below 2^40, \
             but has s = {s}, t = {t}"
        )));
    }
    loop {
        let u = uniform(rng, t);
        if !bern_exp_split(rng, 0, u, t) {
            continue;
        }
        let mut v: u128 = 0;
        while bern_exp_fraction(rng, 1, 1) {
            v = v.saturating_add(1);
        }
        let y = t
            .checked_mul(v)
            .and_then(|tv| tv.checked_add(u))
            .map(|x| x / s)
            .filter(|&y| y < DRAW_LIMIT)
            .ok_or_else(|| too_far("discrete Laplace"))?;
        let negative = uniform(rng, 2) == 1;
        if negative && y == 0 {
            continue;
        }
        let y = y as i64; // < 2^63: checked above
        return Ok(if negative { -y } else { y });
    }
}

fn too_far(what: &str) -> Error {
    Error::Numerical(format!(
        "the {what} sampler drew a value of 2^63 or more (an event of probability below \
         exp(-2^23)); no value was released"
    ))
}

/// The 256-bit product a b as (high, low) 128-bit halves (schoolbook on 64-bit limbs).
fn mul_wide(a: u128, b: u128) -> (u128, u128) {
    const M: u128 = u64::MAX as u128;
    let (a1, a0, b1, b0) = (a >> 64, a & M, b >> 64, b & M);
    let (p00, p01, p10, p11) = (a0 * b0, a0 * b1, a1 * b0, a1 * b1);
    let mid = (p00 >> 64) + (p01 & M) + (p10 & M);
    let lo = (p00 & M) | (mid << 64);
    let hi = p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64);
    (hi, lo)
}

/// (quotient, remainder) of hi 2^128 + lo by d >= 1, when the quotient fits in 128 bits
/// (hi < d); None otherwise. Binary long division, one bit of `lo` at a time.
fn div_wide(hi: u128, lo: u128, d: u128) -> Option<(u128, u128)> {
    if d == 0 || hi >= d {
        return None;
    }
    let (mut r, mut q) = (hi, 0u128);
    for i in (0..128).rev() {
        let carry = r >> 127;
        r = (r << 1) | ((lo >> i) & 1);
        q <<= 1;
        // r < d before the shift, so 2r + bit < 2d: at most one subtraction, and with the
        // carry the true value exceeds 2^128 > d, whose difference wraps back correctly.
        if carry == 1 || r >= d {
            r = r.wrapping_sub(d);
            q |= 1;
        }
    }
    Some((q, r))
}

/// The discrete Gaussian N_Z(0, sigma^2), P(y) = exp(-y^2 / (2 sigma^2)) / sum_z exp(-z^2 /
/// (2 sigma^2)), with sigma^2 = a / b (integers >= 1): CKS 2020 Algorithm 3. With
/// t = floor(sigma) + 1, Y discrete Laplace with scale t is accepted with probability
/// exp(-(|Y| - sigma^2 / t)^2 / (2 sigma^2)) = exp(-(|Y| b t - a)^2 / (2 a b t^2)), computed as
/// a 256-bit square over a 128-bit denominator. The accepted Y is exactly N_Z(0, sigma^2) for
/// any t > 0 (CKS 2020, the proof for Algorithm 3: exp(-|y| / t) exp(-(|y| - sigma^2 / t)^2 /
/// (2 sigma^2)) is exp(-y^2 / (2 sigma^2)) times a constant); this t keeps the acceptance rate
/// bounded below.
///
/// Errors, before any draw, when t > 2^40 or the arithmetic would not fit (2 a b t^2 and
/// (2^63 b t + a)^2 / (2 a b t^2) below 2^128; every sigma^2 = a below 2^62, and every
/// rational with b <= 2^32 and sigma below 2^20, fits).
pub fn discrete_gaussian<R: Rng + ?Sized>(rng: &mut R, a: u128, b: u128) -> Result<i64> {
    let too_big = || {
        Error::param(format!(
            "the exact discrete Gaussian sampler cannot take sigma^2 = {a} / {b}: it needs \
             integers a, b >= 1, sigma below 2^40 and 2 a b (floor(sigma) + 1)^2 below 2^128"
        ))
    };
    if a == 0 || b == 0 {
        return Err(too_big());
    }
    let t = (a / b).isqrt() + 1; // floor(sqrt(a / b)) = isqrt(floor(a / b))
    if t > MAX_SCALE {
        return Err(too_big());
    }
    let den = t
        .checked_mul(t)
        .and_then(|t2| t2.checked_mul(a))
        .and_then(|x| x.checked_mul(b))
        .and_then(|x| x.checked_mul(2))
        .ok_or_else(too_big)?;
    let bt = b
        .checked_mul(t)
        .filter(|&x| x <= 1 << 64)
        .ok_or_else(too_big)?;
    // |Y| < 2^63, so |Y| b t < 2^127 and A = ||Y| b t - a| < 2^127 + a, below 2^128 when
    // a < 2^127 (implied by den); the largest A must leave a quotient below 2^128.
    let worst = (DRAW_LIMIT * bt).checked_add(a).ok_or_else(too_big)?;
    let (hi, _) = mul_wide(worst, worst);
    if hi >= den {
        return Err(too_big());
    }
    loop {
        let y = discrete_laplace(rng, 1, t)?;
        let ybt = u128::from(y.unsigned_abs()) * bt;
        let num = ybt.abs_diff(a);
        let (hi, lo) = mul_wide(num, num);
        let (q, r) = div_wide(hi, lo, den).ok_or_else(|| too_far("discrete Gaussian"))?;
        if bern_exp_split(rng, q, r, den) {
            return Ok(y);
        }
    }
}

/// An exact f64 as a dyadic rational: (sign, odd mantissa m, exponent e) with |x| = m 2^e, or
/// None for 0. Every finite f64 is one (IEEE 754: a 53-bit integer times a power of two).
fn dyadic(x: f64) -> Option<(bool, u64, i32)> {
    if x == 0.0 {
        return None;
    }
    let bits = x.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if exp_bits == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp_bits - 1075)
    };
    let tz = m.trailing_zeros();
    Some((bits >> 63 == 1, m >> tz, e + tz as i32))
}

/// A positive finite f64 as an exact ratio of integers (a, b): m 2^e is (m 2^e, 1) or
/// (m, 2^-e); None when that does not fit in 128 bits (e > 74 or e < -127) or x <= 0.
pub fn ratio_of(x: f64) -> Option<(u128, u128)> {
    if !(x.is_finite() && x > 0.0) {
        return None;
    }
    let (_, m, e) = dyadic(x)?;
    match e {
        0..=74 => Some((u128::from(m) << e, 1)),
        -127..=-1 => Some((u128::from(m), 1u128 << -e)),
        _ => None,
    }
}

/// eps rounded down to a multiple of 2^-64, in units of 2^-64: floor(min(eps, 2^20) 2^64), exact
/// (a power-of-two scaling and a floor). A mechanism run at this eps' <= eps is eps-DP (the
/// range check's discrete Laplace scale).
pub fn epsilon_units(epsilon: f64) -> Result<u128> {
    crate::error::check_positive("the exact mechanisms' epsilon", epsilon)?;
    // f64 -> u128 is exact for an integer below 2^84.
    Ok((epsilon.min(MAX_EXACT_EPSILON) * 18_446_744_073_709_551_616.0).floor() as u128)
}

/// Smallest temperature [`exponential`] uses, 2^-40: a smaller one is raised to it (more noise,
/// so a smaller privacy loss than the caller's), which keeps every exponent below 2^103.
pub const MIN_TEMPERATURE: f64 = 9.094_947_017_729_282e-13;

/// The exponential mechanism at temperature `scale` = b: index j with probability exactly
/// exp(u_j / b) / sum_l exp(u_l / b) (McSherry & Talwar 2007: with b = 2 Delta / eps it is
/// eps-DP when each u_j moves by at most Delta between neighbours; Dwork & Roth 2014,
/// Theorem 3.10). b is used rounded up by one ulp (covering the rounding of the caller's
/// 2 Delta / eps) and raised to [`MIN_TEMPERATURE`]; both only lower the privacy loss.
///
/// Why rejection: with u* = max_l u_l and x_j = (u* - u_j) / b >= 0, a uniform proposal j
/// accepted with probability exp(-x_j) (Algorithm 1, exact for the rational x_j) returns j with
/// probability proportional to exp(u_j / b), whatever u* is; the expected number of proposals
/// is m / sum_j exp(-x_j) <= m (the best candidate has x = 0), the order of the m Gumbel draws
/// of Report Noisy Max. Report Noisy Max itself (the Gumbel-max trick) needs real-valued Gumbel
/// noise, which has no exact sampler; the discrete alternatives (noisy max with discrete
/// Laplace noise) are a different mechanism with a different privacy curve. Each u_j and b is
/// an f64, so a dyadic rational m 2^e, and enters exactly: the differences are integers in units
/// of 2^E, E = min(0, min_j e_j), and x_j a quotient of integers.
///
/// Errors for an empty list, a temperature that is not positive and finite, a utility that is
/// not finite or exceeds 2^62 in absolute value, utilities with bits below 2^-62, or a
/// temperature above 2^74 times the utilities' finest bit.
pub fn exponential<R: Rng + ?Sized>(rng: &mut R, utilities: &[f64], scale: f64) -> Result<usize> {
    crate::error::check_positive("the exponential mechanism's temperature", scale)?;
    if utilities.is_empty() {
        return Err(Error::param("the exponential mechanism needs a candidate"));
    }
    if let Some(u) = utilities
        .iter()
        .find(|u| !u.is_finite() || u.abs() > MAX_UTILITY)
    {
        return Err(Error::param(format!(
            "the exact exponential mechanism needs finite utilities of at most 2^62 in absolute \
             value, but one is {u}"
        )));
    }
    let parts: Vec<_> = utilities.iter().map(|&u| dyadic(u)).collect();
    let e_min = parts.iter().flatten().map(|p| p.2).fold(0, i32::min);
    // b = mb 2^eb, so x_j = G_j 2^E / (mb 2^eb) = (G_j 2^-s) / mb with s = eb - E.
    let (_, mb, eb) = dyadic(scale.max(MIN_TEMPERATURE).next_up()).expect("b > 0");
    let s = eb - e_min;
    if e_min < -62 || s > 74 {
        return Err(Error::param(format!(
            "the exact exponential mechanism cannot take utilities with a bit at 2^{e_min} at \
             temperature {scale} (it needs bits of at least 2^-62 and a temperature below 2^74 \
             times the finest bit)"
        )));
    }
    // |u| <= 2^62 and 2^-E <= 2^62: each scaled utility is below 2^124 in absolute value.
    let scaled: Vec<i128> = parts
        .iter()
        .map(|p| match *p {
            None => 0,
            Some((neg, m, e)) => {
                let v = i128::from(m) << (e - e_min);
                if neg { -v } else { v }
            }
        })
        .collect();
    let best = scaled.iter().copied().max().unwrap_or(0);
    // den = mb 2^max(s, 0) < 2^127; numerator G_j 2^max(-s, 0) with -s <= 92 (b >= 2^-40), in
    // 256 bits; the quotient x_j <= 2^63 / 2^-40 fits in 128.
    let den = u128::from(mb) << s.max(0);
    let up = 1u128 << (-s).max(0);
    let xs = scaled
        .iter()
        .map(|&v| {
            let (hi, lo) = mul_wide((best - v) as u128, up);
            div_wide(hi, lo, den).ok_or_else(|| {
                Error::Numerical("an exponential mechanism's exponent overflowed".into())
            })
        })
        .collect::<Result<Vec<(u128, u128)>>>()?;
    let m = utilities.len() as u128;
    loop {
        let j = uniform(rng, m) as usize;
        let (q, r) = xs[j];
        if bern_exp_split(rng, q, r, den) {
            return Ok(j);
        }
    }
}

/// Report Noisy Max with Gumbel(b) noise in f64, b = `scale`: argmax_j u_j + g_j, which is the
/// exponential mechanism P(j) ∝ exp(u_j / b) in real arithmetic (the Gumbel-max trick;
/// Durfee & Rogers 2019). Gumbel(0, b) = -b ln(-ln U), U uniform on (0, 1): 1 - random() is in
/// (0, 1], and its value 1 (probability 2^-53, which would give +inf) is redrawn. None when no
/// noisy value exceeds -inf. The seeded draws of every run before the exact sampler existed.
fn gumbel_max<R: Rng + ?Sized>(rng: &mut R, utilities: &[f64], scale: f64) -> Option<usize> {
    let mut best = (f64::NEG_INFINITY, None);
    for (j, &uj) in utilities.iter().enumerate() {
        let mut un: f64 = 1.0 - rng.random::<f64>();
        while un >= 1.0 {
            un = 1.0 - rng.random::<f64>();
        }
        let noisy = uj - scale * (-un.ln()).ln();
        if noisy > best.0 {
            best = (noisy, Some(j));
        }
    }
    best.1
}

/// The exponential mechanism of a release at temperature `scale` (2 Delta / eps for an eps-DP
/// selection with utilities of sensitivity Delta): on a seeded generator
/// (`--reproducible` and the simulations: not a private release) the Gumbel-max draw of
/// [`gumbel_max`], bit for bit the seeded numbers of every earlier run (None when no noisy
/// value exceeded -inf); on the OS-keyed generator the exact [`exponential`].
pub fn select_release(
    rng: &mut ReleaseRng,
    utilities: &[f64],
    scale: f64,
) -> Result<Option<usize>> {
    match rng {
        ReleaseRng::Seeded(r) => Ok(gumbel_max(r, utilities, scale)),
        ReleaseRng::Secure(r) => exponential(r.as_mut(), utilities, scale).map(Some),
    }
}

#[cfg(test)]
mod tests;
