//! Canaries as extra rows of the user's data: a loss that wraps the config's loss and adds one
//! fresh parameter per gradient canary.
//!
//! Rows carry one extra feature, a marker: 0 for the user's rows, k + 1 for canary slot k. Slots
//! 0..m_white are "Dirac" gradient canaries (Steinke et al. 2023, Section 6, white box): canary
//! j's gradient is `norm` e_{p + j}, along a parameter no other row's gradient touches, so
//! clipping at tau makes it exactly tau e_{p + j}. Slots m_white.. are input-space canaries (black
//! box): rows of the input space scored by their loss at the released model, whose gradient is
//! the wrapped loss's. An excluded canary's row stays in the data set with gradient identically
//! zero, so the number of rows (and with it b = q N) is public and the same under every
//! inclusion pattern: add/remove adjacency as the accountants state it.

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::linalg::{axpy, norm2};
use crate::loss::{ClipStats, LipschitzForm, Loss, PerSampleBound, Rows, Scratch};

/// The config's loss with m_white fresh parameters and the canary rows' gradients.
pub struct CanaryLoss {
    inner: Box<dyn Loss>,
    /// Parameters of the wrapped loss.
    p: usize,
    /// Features of the user's rows (the marker is feature d).
    d: usize,
    m_white: usize,
    present: Vec<bool>,
    norm: f64,
}

impl CanaryLoss {
    /// Wraps `inner` (p parameters, d features) with `present.len()` canary slots, the first
    /// `m_white` of them Dirac canaries of gradient norm `norm`.
    pub fn new(
        inner: Box<dyn Loss>,
        d: usize,
        m_white: usize,
        present: Vec<bool>,
        norm: f64,
    ) -> Self {
        let p = inner.param_dim();
        CanaryLoss {
            inner,
            p,
            d,
            m_white,
            present,
            norm,
        }
    }

    /// The wrapped loss.
    pub fn inner(&self) -> &dyn Loss {
        self.inner.as_ref()
    }

    /// The canary slot of a row, if it is a canary's.
    #[inline]
    fn slot(&self, x: &[f64]) -> Option<usize> {
        let marker = x[self.d];
        (marker > 0.0).then(|| marker as usize - 1)
    }
}

impl Loss for CanaryLoss {
    fn name(&self) -> &'static str {
        "canary"
    }

    fn param_dim(&self) -> usize {
        self.p + self.m_white
    }

    fn check_data(&self, data: &Dataset) -> Result<()> {
        if data.d != self.d + 1 {
            return Err(Error::param(format!(
                "dimension mismatch: the canary rows have {} features, the data {}",
                self.d + 1,
                data.d
            )));
        }
        Ok(())
    }

    fn value(&self, w: &[f64], x: &[f64], y: f64) -> f64 {
        match self.slot(x) {
            None => self.inner.value(&w[..self.p], &x[..self.d], y),
            Some(_) => 0.0,
        }
    }

    fn grad(&self, w: &[f64], x: &[f64], y: f64, out: &mut [f64]) {
        let (head, fresh) = out.split_at_mut(self.p);
        fresh.fill(0.0);
        match self.slot(x) {
            None => self.inner.grad(&w[..self.p], &x[..self.d], y, head),
            Some(k) if !self.present[k] => head.fill(0.0),
            Some(k) if k < self.m_white => {
                head.fill(0.0);
                fresh[k] = self.norm;
            }
            Some(_) => self.inner.grad(&w[..self.p], &x[..self.d], y, head),
        }
    }

    fn lipschitz_form(&self) -> Option<LipschitzForm> {
        None
    }

    /// The materialized sum of [`crate::loss::materialized_bounded_sum`] with the same bound
    /// and sums, but a Dirac canary's row adds its one bounded coordinate (O(1), not O(p + m))
    /// and a user's row materializes only the wrapped loss's p coordinates (the fresh ones are
    /// 0, so its norm is the same).
    fn bounded_grad_sum(
        &self,
        w: &[f64],
        data: Rows<'_>,
        batch: &[usize],
        bound: PerSampleBound,
        out: &mut [f64],
        scratch: &mut Scratch,
    ) -> ClipStats {
        out.fill(0.0);
        let (head, fresh) = out.split_at_mut(self.p);
        let g = crate::loss::kernel::sized(&mut scratch.grad, self.p);
        let mut stats = ClipStats::new(batch.len());
        for &i in batch {
            let x = data.row(i);
            match self.slot(x) {
                Some(k) if !self.present[k] => stats.record(0.0, bound.factor(0.0)),
                Some(k) if k < self.m_white => {
                    let c = bound.factor(self.norm);
                    stats.record(self.norm, c);
                    fresh[k] += c * self.norm;
                }
                _ => {
                    self.inner.grad(&w[..self.p], &x[..self.d], data.y[i], g);
                    let gn = norm2(g);
                    let c = bound.factor(gn);
                    stats.record(gn, c);
                    axpy(c, g, head);
                }
            }
        }
        stats
    }
}

/// The user's rows (marker 0), then `m_white` Dirac canary rows (features 0), then the
/// input-space canaries `black` (features, label), each with its slot's marker.
pub fn with_canaries(data: &Dataset, m_white: usize, black: &[(Vec<f64>, f64)]) -> Result<Dataset> {
    let d = data.d;
    let rows = data.n + m_white + black.len();
    let mut x = Vec::with_capacity(rows * (d + 1));
    let mut y = Vec::with_capacity(rows);
    for i in 0..data.n {
        x.extend_from_slice(data.row(i));
        x.push(0.0);
        y.push(data.y[i]);
    }
    for j in 0..m_white {
        x.extend(std::iter::repeat_n(0.0, d));
        x.push((j + 1) as f64);
        y.push(0.0);
    }
    for (k, (f, label)) in black.iter().enumerate() {
        x.extend_from_slice(f);
        x.push((m_white + k + 1) as f64);
        y.push(*label);
    }
    Dataset::new(x, y, d + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loss::HuberLoss;

    /// A user row gets the wrapped loss's gradient and zeros on the fresh parameters; a present
    /// Dirac canary gets norm e_{p + j}; an absent canary gets 0; an input-space canary the
    /// wrapped loss's gradient.
    #[test]
    fn rows_get_their_gradients() {
        let inner = HuberLoss::new(2, 1.0).unwrap();
        let p = inner.param_dim();
        let loss = CanaryLoss::new(Box::new(inner), 2, 2, vec![true, false, true], 7.0);
        assert_eq!(loss.param_dim(), p + 2);
        let w = vec![0.3, -0.2, 0.0, 0.0];
        let mut out = vec![9.0; p + 2];
        let plain = HuberLoss::new(2, 1.0).unwrap();
        let mut want = vec![0.0; p];
        plain.grad(&w[..p], &[1.0, 2.0], 0.5, &mut want);
        loss.grad(&w, &[1.0, 2.0, 0.0], 0.5, &mut out);
        assert_eq!(&out[..p], &want[..]);
        assert_eq!(&out[p..], &[0.0, 0.0]);
        loss.grad(&w, &[0.0, 0.0, 1.0], 0.0, &mut out);
        assert_eq!(out, vec![0.0, 0.0, 7.0, 0.0]);
        loss.grad(&w, &[0.0, 0.0, 2.0], 0.0, &mut out);
        assert_eq!(out, vec![0.0; 4]);
        loss.grad(&w, &[1.0, 2.0, 3.0], 0.5, &mut out);
        assert_eq!(&out[..p], &want[..]);
    }

    /// The fast sum equals the materialized one (every row's gradient, bounded, added) for a
    /// batch with user rows, present and absent Dirac canaries and an input-space canary, at a
    /// clip norm that binds on some rows and not others. (Planted: a Dirac canary adding
    /// `norm` unclipped fails.)
    #[test]
    fn fast_sum_equals_the_materialized_sum() {
        use crate::loss::{PerSampleBound, Scratch, materialized_bounded_sum};
        let base = Dataset::new(
            vec![1.0, 2.0, -0.5, 0.1, 3.0, -1.0],
            vec![0.5, -1.0, 2.0],
            2,
        )
        .unwrap();
        let black = vec![(vec![0.3, -0.7], 1.5)];
        let data = with_canaries(&base, 3, &black).unwrap();
        let loss = CanaryLoss::new(
            Box::new(HuberLoss::new(2, 1.0).unwrap()),
            2,
            3,
            vec![true, false, true, true],
            7.0,
        );
        let p = loss.param_dim();
        let w: Vec<f64> = (0..p).map(|i| 0.1 * i as f64 - 0.2).collect();
        let batch: Vec<usize> = (0..data.n).collect();
        for tau in [0.5, 2.0, 100.0] {
            let bound = PerSampleBound::Clip(tau);
            let (mut a, mut b) = (vec![0.0; p], vec![0.0; p]);
            let mut s = Scratch::default();
            let sa = loss.bounded_grad_sum(&w, (&data).into(), &batch, bound, &mut a, &mut s);
            let sb = materialized_bounded_sum(&loss, &w, &data, &batch, bound, &mut b, &mut s);
            assert_eq!(a, b, "tau {tau}");
            assert_eq!((sa.count, sa.clipped), (sb.count, sb.clipped), "tau {tau}");
        }
    }
}
