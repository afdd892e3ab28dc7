//! The `[search]` table of a spec: the worst-case search over an instance family (the
//! `worstcase` experiment). The rest of the spec (theorem, loss, privacy, sweep, constants,
//! scales, series = one per k) is read as for any sweep; the search replaces the spec's data by
//! instances of its family with the same n and d.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The instance family a search moves through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FamilyKind {
    /// Point-mass mixtures for the weighted sharp loss (Appendix E): per component a share of
    /// the rows, a weight a_j = G_i and a centre.
    SharpMixture,
    /// Point-mass mixtures for a linear-model loss with G(x, y) = (a / b) ||x|| (robust
    /// regression, Huber): per component a share of the rows, a feature vector and a label.
    RegressionMixture,
    /// Point-mass mixtures for binary logistic regression (G(x, y) = ||x||): per component a
    /// share of the rows, a feature vector and the fraction of its rows labelled +1 (both labels
    /// always present, so that f* is attained).
    LogisticMixture,
}

/// What a search maximizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// OR / the theorem's explicit bound (an instance without a bound is outside the class).
    OrOverBound,
    /// OR / (G D0).
    OrOverGd0,
    /// The do-nothing risk f(w0) - f* over (G D0): no DP-SGD run; a planted family with a
    /// closed-form optimum that validates the optimizer.
    DoNothingOverGd0,
}

/// The search budget at one scale.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchScale {
    /// Nelder-Mead restarts (the first from the neutral point, the others from random points).
    pub restarts: usize,
    /// Nelder-Mead iterations per restart.
    pub iterations: u64,
    /// Replicates per search evaluation (common random numbers: the same for every candidate).
    pub search_replicates: usize,
    /// Fresh replicates of the re-estimate of each found instance (the reported numbers).
    pub replicates: usize,
    /// Fresh replicates of the re-check of an OR / bound above 1.
    pub recheck_replicates: usize,
}

/// The `[search]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchSpec {
    /// The instance family.
    pub family: FamilyKind,
    /// Mixture components m.
    pub components: usize,
    /// What the search maximizes.
    pub objective: Objective,
    /// Standard deviation scale of random restarts and the initial simplex's step (default 1).
    #[serde(default = "one")]
    pub spread: f64,
    /// Thm I.1 only: every centre lies beyond the ball W along the first axis, so that the
    /// constrained minimizer lies on W's boundary (the case the constrained theory is about).
    #[serde(default)]
    pub boundary: bool,
    /// Budget at the quick scale.
    pub quick: SearchScale,
    /// Budget at the full scale.
    pub full: SearchScale,
}

fn one() -> f64 {
    1.0
}

impl SearchSpec {
    /// Checks the table on its own (the theorem, loss and constants it needs are checked when
    /// the search starts).
    pub fn check(&self) -> Result<()> {
        if !(1..=8).contains(&self.components) {
            return Err(Error::Config(format!(
                "search.components must be in 1..=8, but is {}",
                self.components
            )));
        }
        if !(self.spread > 0.0 && self.spread.is_finite()) {
            return Err(Error::Config(format!(
                "search.spread must be positive, but is {}",
                self.spread
            )));
        }
        for (name, s) in [("quick", &self.quick), ("full", &self.full)] {
            if s.restarts < 1
                || s.iterations < 1
                || s.search_replicates < 1
                || s.replicates < 2
                || s.recheck_replicates < s.replicates
            {
                return Err(Error::Config(format!(
                    "search.{name} needs restarts >= 1, iterations >= 1, search_replicates >= 1, replicates >= 2 and recheck_replicates >= replicates"
                )));
            }
        }
        Ok(())
    }
}
