//! Per-sample clipping (Eq. (2)) and the normalization of automatic clipping: the factor c with
//! bounded(g) = c g, and the one definition of "clipped" that [`ClipStats`] counts.

/// Counts from one clipped-sum call.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ClipStats {
    /// Samples whose gradient norm exceeded tau (and were scaled down).
    pub clipped: usize,
    /// Samples processed.
    pub count: usize,
    /// sum over the samples of ||g_i|| (the gradient mass before bounding).
    pub norm_sum: f64,
    /// sum over the samples of ||g_i|| - ||c_i g_i|| = (1 - c_i) ||g_i||: under clipping at
    /// tau, (||g_i|| - tau)_+, the gradient mass that clipping removed (Eq. (2)).
    pub excess: f64,
}

impl ClipStats {
    /// No sample yet, out of a batch of `count`.
    #[inline]
    pub fn new(count: usize) -> Self {
        ClipStats {
            clipped: 0,
            count,
            norm_sum: 0.0,
            excess: 0.0,
        }
    }

    /// Whether the factor c of one sample bounded it: c < 1. This is the one definition of
    /// "clipped" (adaptive clipping counts it): under clipping at tau, ||g|| > tau; under the
    /// normalization of automatic clipping, ||g|| + gamma > 1.
    #[inline]
    pub fn binds(c: f64) -> bool {
        c < 1.0
    }

    /// Counts one sample of gradient norm `norm` with factor c: a clip where c < 1, and its
    /// mass, ||g|| into [`ClipStats::norm_sum`] and (1 - c) ||g|| into [`ClipStats::excess`].
    #[inline]
    pub fn record(&mut self, norm: f64, c: f64) {
        self.record_binding(norm, c * norm, Self::binds(c));
    }

    /// Counts one sample of gradient norm `norm` whose bounded norm `bounded` = c ||g|| and
    /// whose factor were already computed and classified by [`ClipStats::binds`].
    #[inline]
    pub fn record_binding(&mut self, norm: f64, bounded: f64, clipped: bool) {
        self.clipped += usize::from(clipped);
        self.norm_sum += norm;
        self.excess += norm - bounded;
    }

    /// The counts of two parts of one batch.
    #[inline]
    pub fn merged(self, other: ClipStats) -> ClipStats {
        ClipStats {
            clipped: self.clipped + other.clipped,
            count: self.count + other.count,
            norm_sum: self.norm_sum + other.norm_sum,
            excess: self.excess + other.excess,
        }
    }
}

/// clip(z, c) factor of Eq. (2): min(1, c / ||z||), with the convention 1 at z = 0.
///
/// A select, not a branch: whether a sample is clipped is data-dependent, and where a fair share
/// of samples is clipped a branch on it is mispredicted often (`benches/verify_step.rs`, which
/// clips such a share: 8-20% of a step; where clipping is rare the branch was predicted anyway).
#[inline]
pub fn clip_factor(norm: f64, tau: f64) -> f64 {
    std::hint::select_unpredictable(norm > tau, tau / norm, 1.0)
}

/// How each per-sample gradient is bounded before the sum: clipping at tau (Eq. (2)) or the
/// normalization of automatic clipping, g / (||g|| + gamma) (Bu et al. 2023, "Automatic
/// clipping"). Either way one sample's contribution has norm at most [`PerSampleBound::sensitivity`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PerSampleBound {
    /// clip(g, tau) = min(1, tau / ||g||) g, Eq. (2).
    Clip(f64),
    /// g / (||g|| + gamma), gamma > 0 (Bu et al. use gamma = 0.01).
    Normalize(f64),
}

impl PerSampleBound {
    /// The factor c with bounded(g) = c g, from ||g||.
    #[inline]
    pub fn factor(&self, norm: f64) -> f64 {
        match *self {
            PerSampleBound::Clip(tau) => clip_factor(norm, tau),
            PerSampleBound::Normalize(gamma) => 1.0 / (norm + gamma),
        }
    }

    /// The L2 sensitivity of one sample's bounded gradient: tau, or 1 for the normalization
    /// (||g|| / (||g|| + gamma) < 1).
    pub fn sensitivity(&self) -> f64 {
        match *self {
            PerSampleBound::Clip(tau) => tau,
            PerSampleBound::Normalize(_) => 1.0,
        }
    }
}

/// (c a, c < 1) for the clip factor c = clip_factor(a, tau) of a sample whose gradient norm is
/// its weight a = G_i (the weighted sharp loss, [`super::LipschitzForm::Label`]).
#[inline]
pub(crate) fn scaled_weight(a: f64, tau: f64) -> (f64, bool) {
    let c = clip_factor(a, tau);
    (c * a, ClipStats::binds(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clip factor equals the definition of Eq. (2) with the z = 0 convention, bit for bit,
    /// at zero (both signs), subnormal, tied, huge, infinite and NaN norms and clip norms
    /// (`(tau / norm).min(1.0)`, also branch-free, fails at norm = -0.0).
    #[test]
    fn clip_factor_equals_the_definition_bit_for_bit() {
        let defined = |norm: f64, tau: f64| if norm > tau { tau / norm } else { 1.0 };
        let vals = [
            0.0,
            -0.0,
            f64::MIN_POSITIVE / 4.0,
            1e-300,
            0.5,
            1.0,
            1.0 + f64::EPSILON,
            3.0,
            1e300,
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
        ];
        for &norm in &vals {
            for &tau in &vals {
                let (a, b) = (clip_factor(norm, tau), defined(norm, tau));
                assert_eq!(a.to_bits(), b.to_bits(), "norm {norm}, tau {tau}");
            }
        }
    }
}
