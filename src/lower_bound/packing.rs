//! The packing set V of the proof of Thm L.1 (Lemma 6 of Acharya et al. 2021):
//! V in {0,1}^d, every v has exactly d/2 ones, pairwise Hamming distance >= d/8, and
//! |V| >= 2^(7d/128) exists.
//!
//! Lemma 6 is an existence statement; we construct V by seeded random balanced codewords with
//! greedy rejection (a Gilbert-Varshamov argument: a random balanced word lands within
//! distance d/8 of a given one with probability at most 2^(-d H(1/8)) ~ 2^(-0.54 d), so the
//! greedy code grows far past 2^(7d/128) before rejections dominate), and then *verify* the
//! three properties instead of trusting the argument. Codewords are stored as bit-packed u64
//! words, so a Hamming distance is a few popcounts.
//!
//! Generation is sequential and the accepted words depend only on the seed, so the first m
//! codewords of `PackingSet::generate(d, m', seed)` are the same for every m' >= m: a codeword
//! index plus a seed names one v for good.

use rand::RngExt;

use crate::error::{Error, Result};
use crate::rng::{Purpose, stream};

/// Stream tag of the packing-set generator (`Purpose::Other`).
const PACKING_TAG: u64 = 0x7061_636b;

/// A verified packing set: `words.len()` balanced codewords of length d.
#[derive(Debug, Clone, PartialEq)]
pub struct PackingSet {
    d: usize,
    /// u64 words per codeword.
    stride: usize,
    /// Codeword j is `bits[j*stride..(j+1)*stride]`, bit i of the word is coordinate i.
    bits: Vec<u64>,
}

/// What `PackingSet::verify` measured.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PackingReport {
    /// Number of codewords |V| (Lemma 6 guarantees a set with at least 2^(7d/128)).
    pub size: usize,
    /// Smallest pairwise Hamming distance (d if |V| = 1).
    pub min_distance: usize,
    /// Smallest number of ones (Hamming weight) over V; d/2 when every codeword is balanced.
    pub min_weight: usize,
    /// Largest number of ones over V; d/2 when every codeword is balanced.
    pub max_weight: usize,
}

/// Checks that d is a positive multiple of 8, so that d/2 (the weight) and d/8 (the
/// distance) are integers as Lemma 6 states them.
pub fn check_dimension(d: usize) -> Result<usize> {
    if d == 0 || !d.is_multiple_of(8) {
        return Err(Error::param(format!(
            "the Appendix L packing set needs d to be a positive multiple of 8 (so that d/2 ones \
             and Hamming distance d/8 are integers), but d = {d}; use e.g. d = {}",
            (d / 8 + 1) * 8
        )));
    }
    Ok(d)
}

/// The size Lemma 6 guarantees, ceil(2^(7d/128)), or None when it exceeds usize (d >= ~1170).
pub fn lemma6_size(d: usize) -> Option<usize> {
    let e = 7.0 * d as f64 / 128.0;
    if e >= 63.0 {
        None
    } else {
        Some(e.exp2().ceil() as usize)
    }
}

impl PackingSet {
    /// Greedily grows V to `size` codewords from stream (seed, 0, Other(PACKING_TAG)), drawing
    /// at most `max(1000, 100 size)` candidates; errors (naming d and the count reached) if the
    /// rejection rate makes that impossible, which for size <= 2^(7d/128) does not happen.
    pub fn generate(d: usize, size: usize, seed: u64) -> Result<Self> {
        check_dimension(d)?;
        if size == 0 {
            return Err(Error::param(
                "the packing set size must be at least 1, but is 0",
            ));
        }
        let stride = d.div_ceil(64);
        let min_dist = d / 8;
        let mut rng = stream(seed, 0, Purpose::Other(PACKING_TAG));
        let mut perm: Vec<usize> = (0..d).collect();
        let mut cand = vec![0u64; stride];
        let mut bits: Vec<u64> = Vec::with_capacity(size * stride);
        let budget = (100 * size).max(1000);
        let mut drawn = 0usize;
        while bits.len() < size * stride {
            if drawn == budget {
                return Err(Error::Numerical(format!(
                    "greedy packing in d = {d} stalled at {} of {size} codewords after {budget} \
                     candidates; ask for fewer codewords or a larger d",
                    bits.len() / stride
                )));
            }
            drawn += 1;
            // Partial Fisher-Yates: perm[..d/2] is a uniform d/2-subset.
            for i in 0..d / 2 {
                let j = rng.random_range(i..d);
                perm.swap(i, j);
            }
            cand.fill(0);
            for &i in &perm[..d / 2] {
                cand[i / 64] |= 1u64 << (i % 64);
            }
            let far = bits
                .chunks_exact(stride)
                .all(|w| hamming(w, &cand) >= min_dist);
            if far {
                bits.extend_from_slice(&cand);
            }
        }
        Ok(PackingSet { d, stride, bits })
    }

    /// A given set of 0/1 codewords of length d (to verify a set built elsewhere); errors on a
    /// ragged word or an entry other than 0 and 1. Properties are checked by [`Self::verify`].
    pub fn from_codewords(d: usize, words: &[Vec<f64>]) -> Result<Self> {
        if d == 0 || words.is_empty() {
            return Err(Error::param(format!(
                "a packing set needs d >= 1 and at least one codeword, but d = {d} and there are \
                 {} codewords",
                words.len()
            )));
        }
        let stride = d.div_ceil(64);
        let mut bits = vec![0u64; words.len() * stride];
        for (j, w) in words.iter().enumerate() {
            if w.len() != d {
                return Err(Error::param(format!(
                    "codeword {j} has length {}, not d = {d}",
                    w.len()
                )));
            }
            for (i, &b) in w.iter().enumerate() {
                if b == 1.0 {
                    bits[j * stride + i / 64] |= 1u64 << (i % 64);
                } else if b != 0.0 {
                    return Err(Error::param(format!(
                        "codeword {j} has entry {b} at coordinate {i}; entries must be 0 or 1"
                    )));
                }
            }
        }
        Ok(PackingSet { d, stride, bits })
    }

    /// Codeword length d: the dimension of the packed hypercube {0,1}^d.
    pub fn d(&self) -> usize {
        self.d
    }

    /// Number of codewords |V|.
    pub fn len(&self) -> usize {
        self.bits.len() / self.stride
    }

    /// Never true (generation asks for at least one codeword); for clippy's `len` convention.
    pub fn is_empty(&self) -> bool {
        self.bits.is_empty()
    }

    /// Codeword j as a 0/1 vector in R^d, or an error naming j and |V|.
    pub fn codeword(&self, j: usize) -> Result<Vec<f64>> {
        if j >= self.len() {
            return Err(Error::param(format!(
                "codeword index {j} is out of range: the packing set has {} codewords",
                self.len()
            )));
        }
        let w = &self.bits[j * self.stride..(j + 1) * self.stride];
        Ok((0..self.d)
            .map(|i| ((w[i / 64] >> (i % 64)) & 1) as f64)
            .collect())
    }

    /// Hamming distance between codewords a and b (panics if out of range).
    pub fn distance(&self, a: usize, b: usize) -> usize {
        let s = self.stride;
        hamming(
            &self.bits[a * s..(a + 1) * s],
            &self.bits[b * s..(b + 1) * s],
        )
    }

    /// Measures weight and pairwise distance over all of V (O(|V|^2 d / 64)).
    pub fn measure(&self) -> PackingReport {
        let m = self.len();
        let weights: Vec<usize> = self
            .bits
            .chunks_exact(self.stride)
            .map(|w| w.iter().map(|x| x.count_ones() as usize).sum())
            .collect();
        let mut min_distance = self.d;
        for a in 0..m {
            for b in a + 1..m {
                min_distance = min_distance.min(self.distance(a, b));
            }
        }
        PackingReport {
            size: m,
            min_distance,
            min_weight: weights.iter().copied().min().unwrap_or(0),
            max_weight: weights.iter().copied().max().unwrap_or(0),
        }
    }

    /// Checks the two properties of the proof of Thm L.1 (weight d/2, distance >= d/8) and, if
    /// `require_lemma6_size`, that |V| >= 2^(7d/128); errors name the violated property.
    pub fn verify(&self, require_lemma6_size: bool) -> Result<PackingReport> {
        let r = self.measure();
        let d = self.d;
        if r.min_weight != d / 2 || r.max_weight != d / 2 {
            return Err(Error::Numerical(format!(
                "packing set: codeword weights range over [{}, {}], not exactly d/2 = {}",
                r.min_weight,
                r.max_weight,
                d / 2
            )));
        }
        if r.size > 1 && r.min_distance < d / 8 {
            return Err(Error::Numerical(format!(
                "packing set: minimum Hamming distance {} < d/8 = {}",
                r.min_distance,
                d / 8
            )));
        }
        if require_lemma6_size {
            match lemma6_size(d) {
                Some(need) if r.size >= need => {}
                need => {
                    return Err(Error::Numerical(format!(
                        "packing set: |V| = {} < 2^(7d/128) = {need:?} for d = {d}",
                        r.size
                    )));
                }
            }
        }
        Ok(r)
    }
}

#[inline]
fn hamming(a: &[u64], b: &[u64]) -> usize {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x ^ y).count_ones() as usize)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_is_stable_across_sizes() {
        let small = PackingSet::generate(64, 3, 11).unwrap();
        let large = PackingSet::generate(64, 20, 11).unwrap();
        for j in 0..3 {
            assert_eq!(small.codeword(j).unwrap(), large.codeword(j).unwrap());
        }
    }

    #[test]
    fn dimension_must_be_multiple_of_8() {
        for d in [0, 4, 12, 100] {
            let e = PackingSet::generate(d, 1, 0).unwrap_err().to_string();
            assert!(e.contains(&format!("d = {d}")), "{e}");
        }
    }

    #[test]
    fn codeword_index_out_of_range_is_an_error() {
        let v = PackingSet::generate(16, 2, 0).unwrap();
        assert!(v.codeword(2).unwrap_err().to_string().contains("index 2"));
    }
}
