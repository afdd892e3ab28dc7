//! What a spec file declares: plain serde structs read from TOML (unknown keys rejected), exactly
//! as written. `spec::Spec` validates them once into the plan the runner trusts, and expands the
//! series there; nothing here is rewritten after reading.

use serde::{Deserialize, Serialize};

use super::clip_sweep::ClipSweepSpec;
use super::search_table::SearchSpec;
use crate::config::DataSpec;
use crate::data::radial::LawSpec;
pub(crate) use crate::k_serde;
use crate::loss::LossSpec;
use crate::theory::TheoremId;

/// One experiment: a loss, a data generator, a theorem whose schedule sets (T, tau, eta), a
/// sweep of phi, and one series per k (or per clip rule).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentSpec {
    /// Short name (file and folder names).
    pub name: String,
    /// Plot and report title.
    #[serde(default)]
    pub title: Option<String>,
    /// The theorem whose schedule and bound are checked ("5.4", "I.1", "6.2", "6.5", "6.8",
    /// or a lower bound "6.6" / "L.1" / "I.3").
    pub theorem: TheoremId,
    /// Base seed: every stream derives from (seed, cell or series index, replicate).
    pub seed: u64,
    /// Output folder of `dpsgd-lab run` (overridden by `--out`).
    #[serde(default)]
    pub out: Option<String>,
    /// The loss family.
    pub loss: LossSpec,
    /// The data (for a generator, each series may override k and the radial law).
    pub data: DataSpec,
    /// Privacy parameters of Eq. (1).
    pub privacy: PrivacySpec,
    /// How phi is swept.
    pub sweep: SweepSpec,
    /// The theorems' free constants and the initial distance.
    pub constants: ConstantsSpec,
    /// Expected batch size b (Thm 3.4's noise does not depend on b: sigma_n^2 = T tau^2 phi^2 / d).
    pub batch_size: f64,
    /// Constrained runs (Thm I.1 / I.3): W = {||w|| <= radius}, D_W = 2 radius.
    #[serde(default)]
    pub radius: Option<f64>,
    /// Fresh data per replicate (true) or one fixed data set per series (false).
    #[serde(default = "yes")]
    pub fresh_data: bool,
    /// Independent runs of Algorithm 1 per data set (default 1): a replicate's risk is their
    /// mean, the estimate of the risk over the algorithm's randomness that the theorems bound
    /// with a probability over the data set (the report's probability column).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub runs_per_data: usize,
    /// Bounded-data controls (default true): every series with k < inf and the theorem's clip
    /// rule gets a twin on data whose per-sample Lipschitz constants all equal G (same schedule,
    /// same G, same random streams), so the report can show what the heavy tail changes.
    #[serde(default = "yes")]
    pub controls: bool,
    /// A clip-norm sweep (the `cliplaw` experiment): each declared series becomes a log grid of
    /// constant clip norms plus the uniform-Lipschitz clip (tau = max_i G_i) and the theorem's
    /// tau(phi), all on the same data and random streams, with the noise calibrated to (epsilon,
    /// delta) by an accountant. Such a spec has no bounded-data twins (`controls` is ignored):
    /// its bounded control is a series of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clip_sweep: Option<ClipSweepSpec>,
    /// A worst-case search over an instance family (the `worstcase` experiment; `run` ignores
    /// it and runs the spec's own data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchSpec>,
    /// Quick scale (default of `run` and `verify`).
    pub quick: ScaleSpec,
    /// Publication scale (`--full`).
    pub full: ScaleSpec,
    /// The series (one per k, or per clip rule).
    pub series: Vec<SeriesSpec>,
}

fn yes() -> bool {
    true
}
fn one() -> usize {
    1
}
fn is_one(v: &usize) -> bool {
    *v == 1
}

/// Eq. (1)'s nu and delta; epsilon when the sweep varies n.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivacySpec {
    /// Thm 3.4's constant nu.
    pub nu: f64,
    /// delta.
    pub delta: f64,
    /// epsilon (required when `sweep.vary = "n"`).
    #[serde(default)]
    pub epsilon: Option<f64>,
}

/// What is varied to move phi.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Vary {
    /// epsilon = sqrt(nu d log(1/delta)) / (n phi) at the generator's fixed n.
    Epsilon,
    /// n = ceil(sqrt(nu d log(1/delta)) / (phi epsilon)) at fixed epsilon (phi recomputed).
    N,
}

/// The sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// epsilon or n.
    pub vary: Vary,
}

/// A constant that is either given or chosen to minimize the theorem's bound.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FreeConstant {
    /// A given value.
    Value(f64),
    /// "optimal": minimize the bound over it (golden section on log C), per replicate.
    Rule(OptimalRule),
}

/// The only rule: "optimal".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OptimalRule {
    /// Minimize the bound.
    Optimal,
}

/// The theorems' free constants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConstantsSpec {
    /// ||w0 - w*||: w0 = w* + dist0 (1, ..., 1)/sqrt(p) (ignored with `w0 = "zero"`).
    pub dist0: f64,
    /// The starting point: "offset" (default, w* + dist0 u) or "zero" (w0 = 0, as in the
    /// Appendix L construction; the bound then uses ||w0 - w*|| = ||w*|| of each data set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub w0: Option<StartSpec>,
    /// C of eta = C/(T tau) psi^(-1/2).
    #[serde(default = "optimal")]
    pub c: FreeConstant,
    /// gamma in (0, 1) (I.1, J.1, N.1): the bound holds with probability 1 - gamma.
    #[serde(default)]
    pub gamma: Option<f64>,
    /// G of Assumption 6.1, when the data source cannot compute it.
    #[serde(default)]
    pub g: Option<f64>,
    /// The Omega(.) constant of the lower bound (L.1 / I.3), for the reported ratio.
    #[serde(default)]
    pub c_lower: Option<f64>,
}

/// Where Algorithm 1 starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartSpec {
    /// w0 = w* + dist0 (1, ..., 1)/sqrt(p).
    Offset,
    /// w0 = 0.
    Zero,
}

fn optimal() -> FreeConstant {
    FreeConstant::Rule(OptimalRule::Optimal)
}

/// One scale of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScaleSpec {
    /// Largest phi.
    pub phi_max: f64,
    /// Smallest phi.
    pub phi_min: f64,
    /// Grid points (geometric, phi_max first).
    pub points: usize,
    /// Replicates R per cell.
    pub replicates: usize,
    /// Iterates K per run at which the risk is evaluated (stratified: one uniform step in each
    /// K-th of 0..T).
    pub iterates: usize,
    /// Bootstrap resamples.
    #[serde(default = "default_bootstrap")]
    pub bootstrap: usize,
}

fn default_bootstrap() -> usize {
    1000
}

/// The clip norm of a series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ClipRule {
    /// The theorem's tau(phi).
    Theorem,
    /// A fixed tau that does not grow as phi shrinks (ablation: no theorem bound applies).
    Fixed(f64),
    /// The q-quantile of the per-sample Lipschitz constants G_i of the data set (Thm H.1 holds
    /// for any tau in (0, G_n]; q = 1 is G_n).
    Quantile(f64),
}

/// Moves the centers of the heaviest samples of a sharp-loss data set: the samples whose weight
/// a_i is at or above the `quantile` of the weights get `offset` added to their first
/// coordinate. Clipping caps their weights, so it moves the minimizer (ablation (a)).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeavyShift {
    /// Weight quantile above which centers move.
    pub quantile: f64,
    /// Shift of the first coordinate.
    pub offset: f64,
}

/// One series of the plot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeriesSpec {
    /// Legend label (default: "k = ...").
    #[serde(default)]
    pub label: Option<String>,
    /// k of Assumption 6.1 (a number or "inf"); set into the generator's radial law.
    #[serde(with = "k_serde")]
    pub k: f64,
    /// Override of the generator's radial base law (e.g. a point mass for k = inf).
    #[serde(default)]
    pub law: Option<LawSpec>,
    /// The clip rule.
    #[serde(default = "theorem_clip")]
    pub clip: ClipRule,
    /// Ablation (a): move the heavy samples' centers.
    #[serde(default)]
    pub heavy_shift: Option<HeavyShift>,
}

fn theorem_clip() -> ClipRule {
    ClipRule::Theorem
}

/// "inf" or the number.
pub fn fmt_k(k: f64) -> String {
    if k.is_infinite() {
        "inf".into()
    } else {
        format!("{k}")
    }
}
