//! Private minimum of the per-sample Lipschitz constants G_i ("RNMM", Section 5.2, Table 3): the
//! clip norm tau = G_1 recommended by Remark 5.6, estimated with pure eps-DP.
//!
//! Mechanism (paper_refs/privacy.md has the proof sketch): candidates c_1 < ... < c_m log-spaced
//! on the public range [lo, hi]; N_j = #{i : G_i <= c_j}; utility u_j = -|N_j - k| for a public
//! target count k (k = 1 aims at the minimum: u_j = 0 exactly when G_(1) <= c_j < G_(2)).
//! Adding or removing one sample changes every N_j, hence every u_j, by at most 1. Report Noisy
//! Max with i.i.d. Gumbel(2/eps) noise returns argmax_j u_j + g_j, which is exactly the
//! exponential mechanism P(j) ∝ exp(eps u_j / 2) (McSherry-Talwar with sensitivity 1), hence eps-DP.

use rand::RngExt;

use crate::error::{Error, Result, check_positive};

/// Parameters of the private minimum; all public (data independent).
#[derive(Debug, Clone, PartialEq)]
pub struct RnmmConfig {
    /// Privacy budget of this selection (pure DP).
    pub epsilon: f64,
    /// Smallest candidate (> 0).
    pub lo: f64,
    /// Largest candidate.
    pub hi: f64,
    /// Number of log-spaced candidates (>= 2).
    pub grid_size: usize,
    /// Target count k: the answer aims at the k-th smallest G_i (1 = the minimum).
    pub target_count: usize,
}

impl RnmmConfig {
    /// The paper's budget eps = 0.3 with a 200-point grid on [lo, hi] aiming at the minimum.
    pub fn minimum(epsilon: f64, lo: f64, hi: f64) -> Self {
        Self {
            epsilon,
            lo,
            hi,
            grid_size: 200,
            target_count: 1,
        }
    }

    fn validate(&self) -> Result<()> {
        check_positive("RNMM epsilon", self.epsilon)?;
        check_positive("RNMM candidate lower end lo", self.lo)?;
        if !(self.hi.is_finite() && self.hi > self.lo) {
            return Err(Error::param(format!(
                "RNMM candidate upper end hi must be finite and > lo = {}, but is {}",
                self.lo, self.hi
            )));
        }
        if self.grid_size < 2 {
            return Err(Error::param(format!(
                "RNMM grid_size must be >= 2, but is {}",
                self.grid_size
            )));
        }
        Ok(())
    }

    /// The candidates c_j = lo (hi/lo)^(j/(m-1)).
    pub fn candidates(&self) -> Result<Vec<f64>> {
        self.validate()?;
        let m = self.grid_size;
        // Selection holds the candidates twice and their utilities at once: 24 bytes each.
        crate::limits::check_memory(&format!("RNMM grid_size = {m}"), 24.0 * m as f64)?;
        let r = (self.hi / self.lo).ln();
        Ok((0..m)
            .map(|j| self.lo * (r * j as f64 / (m - 1) as f64).exp())
            .collect())
    }
}

/// The selected clip norm and the budget it used.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RnmmOutput {
    /// The selected candidate c_j.
    pub value: f64,
    /// Its index j.
    pub index: usize,
    /// The pure-DP epsilon spent (composes with DP-SGD's (eps, delta) by basic composition).
    pub epsilon: f64,
}

/// Utilities u_j = -|N_j - k|.
pub fn utilities(g: &[f64], cfg: &RnmmConfig) -> Result<Vec<f64>> {
    let cands = cfg.candidates()?;
    if let Some((i, x)) = g.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        return Err(Error::data(format!(
            "per-sample Lipschitz constant G_{i} is {x}; all must be finite"
        )));
    }
    let mut sorted = g.to_vec();
    sorted.sort_by(f64::total_cmp);
    Ok(cands
        .iter()
        .map(|&c| {
            let n_j = sorted.partition_point(|&x| x <= c) as f64;
            -(n_j - cfg.target_count as f64).abs()
        })
        .collect())
}

/// Exact selection probabilities P(j) = exp(eps u_j / 2) / sum_l exp(eps u_l / 2).
pub fn exact_probabilities(g: &[f64], cfg: &RnmmConfig) -> Result<Vec<f64>> {
    let u = utilities(g, cfg)?;
    let m = u.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = u
        .iter()
        .map(|&x| (cfg.epsilon * (x - m) / 2.0).exp())
        .collect();
    let s: f64 = w.iter().sum();
    Ok(w.into_iter().map(|x| x / s).collect())
}

/// Report Noisy Max with Gumbel(2/eps) noise over the candidates; randomness is passed in (use
/// `rng::stream(seed, replicate, Purpose::Mechanism)`).
pub fn private_min_lipschitz<R: rand::Rng + ?Sized>(
    g: &[f64],
    cfg: &RnmmConfig,
    rng: &mut R,
) -> Result<RnmmOutput> {
    let u = utilities(g, cfg)?;
    let cands = cfg.candidates()?;
    let scale = 2.0 / cfg.epsilon;
    let mut best = (f64::NEG_INFINITY, 0usize);
    for (j, &uj) in u.iter().enumerate() {
        // Gumbel(0, scale) = -scale log(-log U), U uniform on (0, 1): 1 - random() is in (0, 1];
        // the value 1 (probability 2^-53) would give +inf and is redrawn.
        let mut un: f64 = 1.0 - rng.random::<f64>();
        while un >= 1.0 {
            un = 1.0 - rng.random::<f64>();
        }
        let noisy = uj - scale * (-un.ln()).ln();
        if noisy > best.0 {
            best = (noisy, j);
        }
    }
    Ok(RnmmOutput {
        value: cands[best.1],
        index: best.1,
        epsilon: cfg.epsilon,
    })
}

/// Basic composition of the selection (eps_1, 0) with DP-SGD's (eps_2, delta).
pub fn compose_basic(eps_rnmm: f64, eps_dpsgd: f64, delta: f64) -> (f64, f64) {
    (eps_rnmm + eps_dpsgd, delta)
}
