//! Poisson subsampling (Algorithm 1, line 3) by geometric gap skipping.
//!
//! Each of the n samples is in the batch independently with probability q. The gaps between
//! consecutive chosen indices are i.i.d. Geometric(q) (failures before the first success), so
//! drawing the gaps costs O(q n) = O(b) per step instead of O(n) uniforms. A gap is drawn as
//! floor(E / lambda) with E ~ Exp(1) (ziggurat, no logarithm on the fast path) and
//! lambda = -log(1 - q): P(floor(E/lambda) >= k) = P(E >= k lambda) = (1 - q)^k, which is
//! exactly the Geometric(q) tail.

use rand_distr::{Distribution, Exp1};

use crate::error::{Error, Result, check_open};

/// A Poisson sampler with rate q over indices 0..n.
#[derive(Debug, Clone, Copy)]
pub struct PoissonSampler {
    n: usize,
    q: f64,
    /// 1 / lambda = -1 / log(1 - q).
    inv_lambda: f64,
}

/// The largest n the sampler takes, 2^53: below it every index and every n - next is exact in
/// f64, so the gap comparison and truncation in [`PoissonSampler::sample_into`] are exact.
pub const MAX_N: usize = 1 << 53;

impl PoissonSampler {
    /// A sampler over n <= [`MAX_N`] indices with rate q in (0, 1].
    pub fn new(n: usize, q: f64) -> Result<Self> {
        if n > MAX_N {
            return Err(Error::param(format!(
                "the Poisson sampler takes at most 2^53 samples, but n = {n}"
            )));
        }
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
    pub fn sample_into<R: rand::Rng + ?Sized>(&self, rng: &mut R, out: &mut Vec<usize>) {
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
            // unsigned ones take a branchy sequence); exact, as n - next <= n <= 2^53 (`new`).
            // (written as !(gap < rest) so that a NaN would stop too; e > 0, so none arises)
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            let stop = !(gap < (self.n - next) as i64 as f64);
            if stop {
                return;
            }
            // 0 <= gap < n - next here (not NaN), so the saturating `as` truncates it exactly,
            // to an index below n - next
            next += gap as i64 as usize;
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

    /// The drawn indices are pinned (values of the original `to_int_unchecked` sampler, commit
    /// 7fd9707): the gap conversion must truncate exactly as before, or every run changes.
    #[test]
    fn drawn_indices_are_pinned() {
        let s = PoissonSampler::new(1000, 0.01).unwrap();
        let mut rng = stream(7, 0, Purpose::Sampling);
        let mut out = Vec::new();
        let mut all = Vec::new();
        for _ in 0..3 {
            s.sample_into(&mut rng, &mut out);
            all.push(out.clone());
        }
        let want: [&[usize]; 3] = [
            &[144, 158, 356, 363, 479, 634, 762, 882, 891, 956],
            &[7, 76, 81, 295, 344, 768],
            &[
                179, 237, 281, 309, 558, 637, 666, 687, 694, 710, 728, 759, 817, 941, 944, 949, 981,
            ],
        ];
        assert_eq!(all, want);
        // gaps beyond 2^32 (n = 2^40, about 11 picks), from the same stream
        let s = PoissonSampler::new(1 << 40, 1e-11).unwrap();
        s.sample_into(&mut rng, &mut out);
        let want: &[usize] = &[
            88064360528,
            260809178254,
            332483363631,
            425995703387,
            535609846095,
            543286773841,
            696636233772,
            747080460392,
            838704176352,
            1052877087392,
        ];
        assert_eq!(out, want);
    }

    /// n above 2^53 is refused: the index arithmetic in f64 is exact only below it.
    #[test]
    fn n_above_2_pow_53_is_refused() {
        assert!(PoissonSampler::new(MAX_N, 0.5).is_ok());
        let e = PoissonSampler::new(MAX_N + 1, 0.5).unwrap_err().to_string();
        assert!(e.contains("9007199254740993"), "{e}");
    }

    #[test]
    fn rate_one_takes_everything() {
        let s = PoissonSampler::new(5, 1.0).unwrap();
        let mut out = Vec::new();
        s.sample_into(&mut stream(1, 0, Purpose::Sampling), &mut out);
        assert_eq!(out, vec![0, 1, 2, 3, 4]);
    }
}
