//! Reproducible randomness: every stream is derived from (base seed, replicate, purpose).
//!
//! The generator is PCG64 (`rand_pcg::Pcg64`, XSL-RR 128/64), a named portable PRNG: the same
//! seed gives the same stream on every machine (rand_pcg promises value stability; drawn values
//! are pinned by `tests/it/data.rs::seeded_draws_are_pinned`). Streams are never derived from
//! thread identity, so results do not depend on scheduling. The streams are portable; results are
//! bit-identical across machines only where the arithmetic is too (docs/architecture.md,
//! "Reproducibility": runtime-selected FMA/AVX kernels make some losses machine-dependent in the
//! last bits).

//!
//! A release of a user's data (a CSV, or arrays from Python) draws its noise from
//! [`ReleaseRng::Secure`] instead: ChaCha12 keyed from the operating system's CSPRNG, so nobody
//! who knows the seed can replay the noise (issue 56). The seed then controls only what is
//! public by design (the hash split's key, an audit's canary bits, synthetic data).
//! [`ReleaseRng::Seeded`] is the reproducible research mode (`--reproducible`): the same seed
//! gives the same numbers, and the output says that it is not a private release.

use std::convert::Infallible;

use rand::rngs::{StdRng, SysRng};
use rand::{Rng, SeedableRng, TryRng};
use rand_distr::{Distribution, StandardNormal};

/// The crate's PRNG.
pub type SimRng = rand_pcg::Pcg64;

/// Said wherever a seeded (reproducible) mechanism released something about a user's data.
pub const NOT_PRIVATE: &str = "not a private release";

/// The randomness of a mechanism: a seeded stream (simulations, and the reproducible research
/// mode of a release) or the OS-keyed CSPRNG (every private release by default).
#[derive(Debug)]
pub enum ReleaseRng {
    /// PCG64 from [`stream`]: the same (seed, replicate, purpose) gives the same draws, bit for
    /// bit. For simulations and measurements, and for `--reproducible` (not a private release).
    Seeded(SimRng),
    /// ChaCha12 (`rand::rngs::StdRng`) keyed by 32 bytes from the OS (`rand::rngs::SysRng`,
    /// i.e. getrandom): unpredictable to anyone without the process's memory.
    Secure(Box<StdRng>),
}

impl ReleaseRng {
    /// A fresh generator keyed from the operating system's CSPRNG; an error (never a panic)
    /// when the OS gives no entropy.
    pub fn secure() -> crate::error::Result<Self> {
        StdRng::try_from_rng(&mut SysRng)
            .map(|r| ReleaseRng::Secure(Box::new(r)))
            .map_err(|e| {
                crate::error::Error::param(format!(
                    "the operating system's random source failed ({e}); no noise can be drawn"
                ))
            })
    }

    /// Stream (seed, replicate, purpose) when `reproducible`, else [`ReleaseRng::secure`].
    pub fn for_release(
        reproducible: bool,
        seed: u64,
        replicate: u64,
        purpose: Purpose,
    ) -> crate::error::Result<Self> {
        if reproducible {
            Ok(ReleaseRng::Seeded(stream(seed, replicate, purpose)))
        } else {
            Self::secure()
        }
    }

    /// Whether the draws are a function of a seed (not a private release).
    pub fn is_seeded(&self) -> bool {
        matches!(self, ReleaseRng::Seeded(_))
    }

    /// One N(0, 1) draw in f64. Seeded: one ziggurat draw (`rand_distr::StandardNormal`), bit
    /// for bit the draws every simulation made before the secure path existed. Secure: what
    /// Opacus's `secure_mode` does (Holohan & Braghin 2021, "Secure Random Sampling in
    /// Differential Privacy", Sec. 5): (z_1 + z_2 + z_3 + z_4) / 2 with four independent
    /// N(0, 1) draws, which is again exactly N(0, 1) in real arithmetic.
    ///
    /// What this does and does not protect against: the generator is a CSPRNG keyed by the OS,
    /// so the noise cannot be replayed from the seed or predicted from earlier outputs. Summing
    /// four draws smears the lattice of values one floating-point Gaussian sampler can produce,
    /// which defeats the known attacks that read the unnoised value off the low-order bits of a
    /// single draw (Mironov 2012's attack on the Laplace mechanism; Jin et al. 2022 on Gaussian
    /// samplers). It is not an exact sampler: the result is still an f64 with rounding, no proof
    /// bounds what its low bits reveal, and timing is not constant. The small mechanisms of a
    /// release use exact integer samplers instead ([`crate::privacy::exact`]: the range check's
    /// discrete Laplace count, the exponential mechanism of RNMM and of the standardization's
    /// bounds, the standardization's discrete Gaussian sums).
    #[inline(always)]
    pub fn gaussian(&mut self) -> f64 {
        match self {
            ReleaseRng::Seeded(r) => StandardNormal.sample(r),
            ReleaseRng::Secure(r) => {
                let a: f64 = StandardNormal.sample(r);
                let b: f64 = StandardNormal.sample(r);
                let c: f64 = StandardNormal.sample(r);
                let d: f64 = StandardNormal.sample(r);
                0.5 * (a + b + c + d)
            }
        }
    }
}

impl From<SimRng> for ReleaseRng {
    fn from(r: SimRng) -> Self {
        ReleaseRng::Seeded(r)
    }
}

impl TryRng for ReleaseRng {
    type Error = Infallible;
    #[inline(always)]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(match self {
            ReleaseRng::Seeded(r) => r.next_u32(),
            ReleaseRng::Secure(r) => r.next_u32(),
        })
    }
    #[inline(always)]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(match self {
            ReleaseRng::Seeded(r) => r.next_u64(),
            ReleaseRng::Secure(r) => r.next_u64(),
        })
    }
    #[inline(always)]
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        match self {
            ReleaseRng::Seeded(r) => r.fill_bytes(dst),
            ReleaseRng::Secure(r) => r.fill_bytes(dst),
        }
        Ok(())
    }
}

/// What a random stream is used for. Each purpose gets an independent stream, so that, e.g.,
/// changing the noise scale does not change which samples are drawn into the batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Purpose {
    /// Generating the data set.
    Data,
    /// Poisson subsampling of mini-batches.
    Sampling,
    /// The Gaussian noise zeta_t.
    Noise,
    /// The random output index t_hat of Algorithm 1, line 7.
    IterateChoice,
    /// Initial point, when it is random.
    Init,
    /// Train/test splits.
    Split,
    /// Private selection mechanisms (e.g. Report Noisy Max).
    Mechanism,
    /// Anything else, with a user tag.
    Other(u64),
}

impl Purpose {
    fn tag(self) -> u64 {
        match self {
            Purpose::Data => 0x6461_7461,
            Purpose::Sampling => 0x7361_6d70,
            Purpose::Noise => 0x6e6f_6973,
            Purpose::IterateChoice => 0x6974_6572,
            Purpose::Init => 0x696e_6974,
            Purpose::Split => 0x7370_6c69,
            Purpose::Mechanism => 0x6d65_6368,
            Purpose::Other(t) => 0x6f74_6865_0000_0000 ^ t,
        }
    }
}

/// SplitMix64's finalizer: a bijective 64-bit mixer with full avalanche.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The seed of stream (base, replicate, purpose): a pure function of its three inputs.
pub fn derive_seed(base: u64, replicate: u64, purpose: Purpose) -> u64 {
    mix64(mix64(mix64(base) ^ replicate.wrapping_mul(0xd6e8_feb8_6659_fd93)) ^ purpose.tag())
}

/// A PRNG for stream (base, replicate, purpose).
pub fn stream(base: u64, replicate: u64, purpose: Purpose) -> SimRng {
    SimRng::seed_from_u64(derive_seed(base, replicate, purpose))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_differ_by_purpose_and_replicate() {
        let a = stream(7, 0, Purpose::Noise).next_u64();
        let b = stream(7, 0, Purpose::Sampling).next_u64();
        let c = stream(7, 1, Purpose::Noise).next_u64();
        let a2 = stream(7, 0, Purpose::Noise).next_u64();
        assert_eq!(a, a2);
        assert_ne!(a, b);
        assert_ne!(a, c);
    }

    /// The seeded release generator draws exactly the seeded stream (simulations keep their
    /// numbers), and two secure generators differ from each other and from the seeded one.
    #[test]
    fn seeded_release_rng_is_the_stream_and_secure_ones_differ() {
        let mut s = ReleaseRng::Seeded(stream(3, 1, Purpose::Noise));
        let mut t = stream(3, 1, Purpose::Noise);
        let want: f64 = StandardNormal.sample(&mut t);
        assert_eq!(s.gaussian().to_bits(), want.to_bits());
        assert_eq!(s.next_u64(), t.next_u64());
        let mut a = ReleaseRng::secure().unwrap();
        let mut b = ReleaseRng::secure().unwrap();
        let (x, y) = (a.next_u64(), b.next_u64());
        assert_ne!(x, y, "two OS-keyed generators gave the same first word");
        assert_ne!(x, stream(3, 1, Purpose::Noise).next_u64());
        assert!(!a.is_seeded() && s.is_seeded());
    }

    /// The secure Gaussian (sum of four halved) has mean 0 and variance 1: over R = 200000
    /// draws (a fixed-seed ChaCha12) the mean's standard error is 1/sqrt(R), the variance's sqrt(2/R); 4 SE each.
    #[test]
    fn secure_gaussian_is_standard() {
        let mut r = ReleaseRng::Secure(Box::new(StdRng::seed_from_u64(5)));
        let n = 200_000;
        let (mut s1, mut s2) = (0.0, 0.0);
        for _ in 0..n {
            let z = r.gaussian();
            s1 += z;
            s2 += z * z;
        }
        let m = s1 / n as f64;
        let v = s2 / n as f64 - m * m;
        assert!(m.abs() < 4.0 / (n as f64).sqrt(), "mean {m}");
        assert!((v - 1.0).abs() < 4.0 * (2.0 / n as f64).sqrt(), "var {v}");
    }
}
