//! Poisson subsampling (Algorithm 1, line 3) by geometric gap skipping.
//!
//! Each of the n samples is in the batch independently with probability q. The gaps between
//! consecutive chosen indices are i.i.d. Geometric(q) (failures before the first success), so
//! drawing the gaps costs O(q n) = O(b) per step instead of O(n) uniforms. A gap is drawn as
//! floor(E / lambda) with E ~ Exp(1) (ziggurat, no logarithm on the fast path) and
//! lambda = -log(1 - q): P(floor(E/lambda) >= k) = P(E >= k lambda) = (1 - q)^k, which is
//! exactly the Geometric(q) tail.

use rand_distr::{Distribution, Exp1};

use crate::error::{Result, check_open};
use crate::rng::SimRng;

/// A Poisson sampler with rate q over indices 0..n.
#[derive(Debug, Clone, Copy)]
pub struct PoissonSampler {
    n: usize,
    q: f64,
    /// 1 / lambda = -1 / log(1 - q).
    inv_lambda: f64,
}

impl PoissonSampler {
    /// A sampler over n indices with rate q in (0, 1].
    pub fn new(n: usize, q: f64) -> Result<Self> {
        if q != 1.0 {
            check_open("sampling rate q = b/n", q, 0.0, 1.0)?;
        }
        Ok(PoissonSampler {
            n,
            q,
            inv_lambda: -1.0 / (-q).ln_1p(),
        })
    }

    /// The rate q.
    pub fn rate(&self) -> f64 {
        self.q
    }

    /// Fills `out` (cleared first, capacity reused) with the sorted sampled indices.
    pub fn sample_into(&self, rng: &mut SimRng, out: &mut Vec<usize>) {
        out.clear();
        if self.q >= 1.0 {
            out.extend(0..self.n);
            return;
        }
        // next candidate index; the gap G ~ Geometric(q) skips G indices before the next pick.
        let mut next = 0usize;
        loop {
            let e: f64 = Exp1.sample(rng);
            // gap >= 0, so truncation is floor
            let gap = e * self.inv_lambda;
            // The conversions go through i64 (one instruction each on x86-64, where the
            // unsigned ones take a branchy sequence); exact, as n - next < 2^53.
            // (written as !(gap < rest) so that a NaN would stop too; e > 0, so none arises)
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            let stop = !(gap < (self.n - next) as i64 as f64);
            if stop {
                return;
            }
            // SAFETY: 0 <= gap < n - next <= n < 2^53 here (not NaN), so it is in i64's range.
            next += unsafe { gap.to_int_unchecked::<i64>() } as usize;
            out.push(next);
            next += 1;
            if next >= self.n {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Purpose, stream};

    /// Batch size ~ Binomial(n, q): mean nq, variance nq(1-q). Over R = 20000 draws the sample
    /// mean has standard error sqrt(nq(1-q)/R), and the sample variance has standard error
    /// about var * sqrt(2/(R-1)) (near-Gaussian batch sizes). Both must lie within 4 SE.
    #[test]
    fn poisson_batch_size_mean_and_variance() {
        let (n, q, reps) = (10_000usize, 0.0064, 20_000usize);
        let s = PoissonSampler::new(n, q).unwrap();
        let mut rng = stream(11, 0, Purpose::Sampling);
        let mut out = Vec::new();
        let mut sizes = Vec::with_capacity(reps);
        let mut seen_first = 0usize;
        let mut seen_last = 0usize;
        for _ in 0..reps {
            s.sample_into(&mut rng, &mut out);
            assert!(
                out.windows(2).all(|w| w[0] < w[1]),
                "indices sorted and distinct"
            );
            assert!(out.iter().all(|&i| i < n));
            seen_first += usize::from(out.first() == Some(&0));
            seen_last += usize::from(out.last() == Some(&(n - 1)));
            sizes.push(out.len() as f64);
        }
        let r = reps as f64;
        let mean = sizes.iter().sum::<f64>() / r;
        let var = sizes.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (r - 1.0);
        let true_mean = n as f64 * q;
        let true_var = n as f64 * q * (1.0 - q);
        let se_mean = (true_var / r).sqrt();
        let se_var = true_var * (2.0 / (r - 1.0)).sqrt();
        assert!(
            (mean - true_mean).abs() < 4.0 * se_mean,
            "mean {mean} vs {true_mean}"
        );
        assert!(
            (var - true_var).abs() < 4.0 * se_var,
            "var {var} vs {true_var}"
        );
        // The first and the last index are each included with probability q: the endpoints
        // are not biased by the gap skipping. Binomial(reps, q) counts, within 4 SE.
        let se_end = (r * q * (1.0 - q)).sqrt();
        for c in [seen_first, seen_last] {
            assert!(
                (c as f64 - r * q).abs() < 4.0 * se_end,
                "endpoint count {c}"
            );
        }
    }

    #[test]
    fn rate_one_takes_everything() {
        let s = PoissonSampler::new(5, 1.0).unwrap();
        let mut out = Vec::new();
        s.sample_into(&mut stream(1, 0, Purpose::Sampling), &mut out);
        assert_eq!(out, vec![0, 1, 2, 3, 4]);
    }
}
