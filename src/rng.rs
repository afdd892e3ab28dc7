//! Reproducible randomness: every stream is derived from (base seed, replicate, purpose).
//!
//! The generator is PCG64 (`rand_pcg::Pcg64`, XSL-RR 128/64), a named portable PRNG: the same
//! seed gives the same stream on every machine (rand_pcg promises value stability; drawn values
//! are pinned by `tests/it/data.rs::seeded_draws_are_pinned`). Streams are never derived from
//! thread identity, so results do not depend on scheduling. The streams are portable; results are
//! bit-identical across machines only where the arithmetic is too (docs/architecture.md,
//! "Reproducibility": runtime-selected FMA/AVX kernels make some losses machine-dependent in the
//! last bits).

use rand::SeedableRng;

/// The crate's PRNG.
pub type SimRng = rand_pcg::Pcg64;

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
}
