//! The study's configuration: a plain serde struct read from TOML (unknown keys rejected),
//! validated once into [`Study`], where quick mode has already been applied.

use serde::{Deserialize, Serialize};

use crate::config::DataSpec;
use crate::error::{Error, Result, check_open, check_positive};
use crate::model::ModelSpec;
use crate::privacy::AccountantKind;

/// The learning-rate grid of Section 5.2.
pub const PAPER_LEARNING_RATES: [f64; 16] = [
    0.0001, 0.0003, 0.0006, 0.001, 0.003, 0.006, 0.01, 0.03, 0.06, 0.1, 0.3, 0.6, 1.0, 3.0, 6.0,
    10.0,
];

/// A clip-norm study as read from `simulations/clipnorm_*.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyConfig {
    /// Short name, used in file names and table headings.
    pub name: String,
    /// Base seed of every stream (data, split, sampling, noise, mechanism).
    pub seed: u64,
    /// The data. A CSV without a `split` and every generated set are split with
    /// `test_fraction` and the study seed.
    pub data: DataSpec,
    /// Held-out fraction for the test accuracy.
    #[serde(default = "default_test_fraction")]
    pub test_fraction: f64,
    /// The model trained privately.
    #[serde(default)]
    pub model: ModelSpec,
    /// Training and privacy settings.
    #[serde(default)]
    pub train: TrainSpec,
    /// The clip-norm grid.
    #[serde(default)]
    pub clip: ClipSpec,
    /// Table 3: private G_1 by RNMM. Omitted: not run.
    #[serde(default)]
    pub rnmm: Option<RnmmSpec>,
    /// Delta(w*) and alpha(G_1) (Definitions 5.2, 5.3). Omitted: not computed.
    #[serde(default)]
    pub theory: Option<TheorySpec>,
    /// Overrides applied by `--quick`.
    #[serde(default)]
    pub quick: QuickSpec,
    /// The methods compared with the paper's advice: adaptive quantile clipping,
    /// automatic clipping, the default tau = 1. Omitted: not run (only the grid and RNMM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub methods: Option<MethodsSpec>,
}

/// The clip-norm methods run beside the fixed-tau grid, each accounted inside the same total
/// (epsilon, delta) ([`super::methods`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MethodsSpec {
    /// Adaptive quantile clipping (Andrew et al. 2021): the target unclipped quantiles gamma.
    #[serde(default = "default_quantiles")]
    pub adaptive_quantiles: Vec<f64>,
    /// Learning rate eta_C of the geometric clip-norm update C <- C exp(-eta_C (b~ - gamma))
    /// (Andrew et al.: 0.2).
    #[serde(default = "default_clip_lr")]
    pub adaptive_lr: f64,
    /// The count noise sigma_b as a fraction of the expected batch size (Andrew et al.: b / 20).
    #[serde(default = "default_count_noise")]
    pub adaptive_count_noise: f64,
    /// A second adaptive arm whose count noise takes this share s in (0, 1) of each
    /// step's privacy instead: sigma_b = z / (2 sqrt(s)), so (2 sigma_b)^-2 = s z^-2 and
    /// sigma_grad = z / sqrt(1 - s) (Andrew et al. 2021, Theorem 1;
    /// [`super::methods::count_noise_for_share`]). Absent: no second arm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive_count_share: Option<f64>,
    /// Initial clip norm C_0 (0.1; the geometric update forgets it within a few dozen steps).
    #[serde(default = "default_initial_clip")]
    pub adaptive_initial: f64,
    /// Automatic clipping's stability constant gamma in g / (||g|| + gamma) (Bu et al.: 0.01);
    #[serde(default = "default_automatic_gamma")]
    pub automatic_gamma: f64,
    /// Run automatic clipping.
    #[serde(default = "yes")]
    pub automatic: bool,
    /// The common default clip norm (Opacus's tutorials use 1); reused from the grid when the
    /// grid holds the same value.
    #[serde(default = "default_default_tau")]
    pub default_tau: f64,
}

fn default_quantiles() -> Vec<f64> {
    vec![0.1, 0.5]
}
fn default_clip_lr() -> f64 {
    0.2
}
fn default_count_noise() -> f64 {
    0.05
}
fn default_initial_clip() -> f64 {
    0.1
}
fn default_automatic_gamma() -> f64 {
    0.01
}
fn default_default_tau() -> f64 {
    1.0
}

impl Default for MethodsSpec {
    fn default() -> Self {
        MethodsSpec {
            adaptive_quantiles: default_quantiles(),
            adaptive_lr: default_clip_lr(),
            adaptive_count_noise: default_count_noise(),
            adaptive_count_share: None,
            adaptive_initial: default_initial_clip(),
            automatic_gamma: default_automatic_gamma(),
            automatic: true,
            default_tau: default_default_tau(),
        }
    }
}

fn default_test_fraction() -> f64 {
    0.2
}

/// Training and privacy settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainSpec {
    /// Expected batch size b. Default: min(500, n / 10) (500 as in the paper; small data sets
    /// get q = 0.1, i.e. 10 steps per epoch).
    #[serde(default)]
    pub batch_size: Option<f64>,
    /// Epochs; one epoch is round(n / b) steps.
    #[serde(default = "default_epochs")]
    pub epochs: usize,
    /// Independent runs per (epsilon, tau, eta).
    #[serde(default = "default_runs")]
    pub runs: usize,
    /// Total privacy budgets epsilon.
    #[serde(default = "default_epsilons")]
    pub epsilons: Vec<f64>,
    /// delta.
    #[serde(default = "default_delta")]
    pub delta: f64,
    /// Accountant used to calibrate the noise multiplier ("rdp" or "pld" in the config).
    #[serde(default = "default_accountant")]
    pub accountant: AccountantKind,
    /// The eta grid (default: the paper's 16 values).
    #[serde(default = "default_learning_rates")]
    pub learning_rates: Vec<f64>,
    /// Run the non-private SGD baseline (no clipping, no noise, same sampling).
    #[serde(default = "yes")]
    pub baseline: bool,
    /// Accuracy is averaged over this many last epochs.
    #[serde(default = "default_last")]
    pub average_last: usize,
}

fn default_epochs() -> usize {
    30
}
fn default_runs() -> usize {
    3
}
fn default_epsilons() -> Vec<f64> {
    vec![2.0, 4.0, 6.0]
}
fn default_delta() -> f64 {
    1e-5
}
fn default_accountant() -> AccountantKind {
    AccountantKind::Rdp
}
fn default_learning_rates() -> Vec<f64> {
    PAPER_LEARNING_RATES.to_vec()
}
fn yes() -> bool {
    true
}
fn default_last() -> usize {
    5
}

impl Default for TrainSpec {
    fn default() -> Self {
        TrainSpec {
            batch_size: None,
            epochs: default_epochs(),
            runs: default_runs(),
            epsilons: default_epsilons(),
            delta: default_delta(),
            accountant: default_accountant(),
            learning_rates: default_learning_rates(),
            baseline: true,
            average_last: default_last(),
        }
    }
}

/// How the small clip norms below G_1 are formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum BelowMode {
    /// The values themselves (tau = 0.1, 1, 5, 10 as in Tables 4-6), kept where < G_1.
    #[default]
    Absolute,
    /// G_1 minus each value, kept where positive.
    Offset,
}

/// The clip-norm grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClipSpec {
    /// Percentiles of the G_i (0 = G_1, 100 = G_n).
    #[serde(default = "default_percentiles")]
    pub percentiles: Vec<f64>,
    /// Extra values below G_1.
    #[serde(default = "default_below")]
    pub below_g1: Vec<f64>,
    /// How `below_g1` is read.
    #[serde(default)]
    pub below_mode: BelowMode,
    /// Fixed clip norms instead of the percentile grid (Appendix C: the tanh network has no
    /// finite G_i).
    #[serde(default)]
    pub values: Option<Vec<f64>>,
}

fn default_percentiles() -> Vec<f64> {
    vec![0.0, 10.0, 20.0, 40.0, 80.0, 100.0]
}
fn default_below() -> Vec<f64> {
    vec![0.1, 1.0, 5.0, 10.0]
}

impl Default for ClipSpec {
    fn default() -> Self {
        ClipSpec {
            percentiles: default_percentiles(),
            below_g1: default_below(),
            below_mode: BelowMode::Absolute,
            values: None,
        }
    }
}

/// Private G_1 by Report Noisy Max (Section 5.2, Table 3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RnmmSpec {
    /// Budget of the selection; DP-SGD gets epsilon - this (basic composition).
    #[serde(default = "default_rnmm_eps")]
    pub epsilon: f64,
    /// Number of log-spaced candidates.
    #[serde(default = "default_grid")]
    pub grid_size: usize,
    /// Public lower end of the candidates. Default sqrt(2): the softmax G(x, y) =
    /// sqrt(2 (||x||^2 + 1)) is never smaller.
    #[serde(default)]
    pub lo: Option<f64>,
    /// Public upper end. Default 3 sqrt(2 (d + 1)): three times G at ||x||^2 = d, the mean of
    /// standardized features (data independent: depends on d only).
    #[serde(default)]
    pub hi: Option<f64>,
}

fn default_rnmm_eps() -> f64 {
    0.3
}
fn default_grid() -> usize {
    200
}

/// Options of the Theorem 5.4 quantities.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TheorySpec {
    /// Full-batch gradient-descent iterations approximating w* (Delta(w*) is then an upper
    /// estimate).
    #[serde(default = "default_gd")]
    pub gd_iters: usize,
    /// Starting points of the alpha(G_1) estimate.
    #[serde(default = "default_starts")]
    pub alpha_starts: usize,
    /// Gradient steps per start.
    #[serde(default = "default_alpha_iters")]
    pub alpha_iters: usize,
}

fn default_gd() -> usize {
    500
}
fn default_starts() -> usize {
    8
}
fn default_alpha_iters() -> usize {
    100
}

/// What `--quick` changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuickSpec {
    /// Epochs per run in quick mode.
    #[serde(default = "quick_epochs")]
    pub epochs: usize,
    /// Runs per cell in quick mode.
    #[serde(default = "quick_runs")]
    pub runs: usize,
    /// The learning-rate grid searched in quick mode.
    #[serde(default = "quick_rates")]
    pub learning_rates: Vec<f64>,
    /// Default: unchanged.
    #[serde(default)]
    pub epsilons: Option<Vec<f64>>,
    /// Default: unchanged.
    #[serde(default)]
    pub clip_values: Option<Vec<f64>>,
}

fn quick_epochs() -> usize {
    5
}
fn quick_runs() -> usize {
    2
}
fn quick_rates() -> Vec<f64> {
    vec![0.01, 0.1, 1.0]
}

impl Default for QuickSpec {
    fn default() -> Self {
        QuickSpec {
            epochs: quick_epochs(),
            runs: quick_runs(),
            learning_rates: quick_rates(),
            epsilons: None,
            clip_values: None,
        }
    }
}

/// A validated study, with quick mode applied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Study {
    /// The configuration, with the quick scale applied when `quick`.
    pub cfg: StudyConfig,
    /// Whether this is the quick scale (`--quick`).
    pub quick: bool,
}

impl StudyConfig {
    /// Validates the configuration; with `quick`, applies the `[quick]` overrides first.
    pub fn into_study(mut self, quick: bool) -> Result<Study> {
        if quick {
            let q = self.quick.clone();
            self.train.epochs = q.epochs;
            self.train.runs = q.runs;
            self.train.learning_rates = q.learning_rates;
            if let Some(e) = q.epsilons {
                self.train.epsilons = e;
            }
            if let Some(v) = q.clip_values {
                self.clip.values = Some(v);
            }
        }
        self.validate()?;
        Ok(Study { cfg: self, quick })
    }

    fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Config(m));
        if self.name.is_empty() || self.name.contains(['/', '\\', ' ']) {
            return bad(format!(
                "name must be non-empty without '/', '\\' or spaces (it names files), but is '{}'",
                self.name
            ));
        }
        check_open("test_fraction", self.test_fraction, 0.0, 1.0)?;
        let t = &self.train;
        if let Some(b) = t.batch_size {
            check_positive("train.batch_size", b)?;
        }
        if t.epochs == 0 || t.runs == 0 {
            return bad(format!(
                "train.epochs and train.runs must be >= 1, but are {} and {}",
                t.epochs, t.runs
            ));
        }
        if t.average_last == 0 || t.average_last > t.epochs {
            return bad(format!(
                "train.average_last must lie in 1..=epochs = {}, but is {}",
                t.epochs, t.average_last
            ));
        }
        if t.epsilons.is_empty() || t.learning_rates.is_empty() {
            return bad("train.epsilons and train.learning_rates must be non-empty".into());
        }
        for &e in &t.epsilons {
            check_positive("train.epsilons entry", e)?;
        }
        for &e in &t.learning_rates {
            check_positive("train.learning_rates entry", e)?;
        }
        check_open("train.delta", t.delta, 0.0, 1.0)?;
        for &p in &self.clip.percentiles {
            if !(0.0..=100.0).contains(&p) {
                return bad(format!(
                    "clip.percentiles entries must lie in [0, 100], but one is {p}"
                ));
            }
        }
        for &v in &self.clip.below_g1 {
            check_positive("clip.below_g1 entry", v)?;
        }
        if let Some(v) = &self.clip.values {
            if v.is_empty() {
                return bad("clip.values, when given, must be non-empty".into());
            }
            for &x in v {
                check_positive("clip.values entry", x)?;
            }
        }
        if let ModelSpec::TanhNet { hidden, init_scale } = &self.model {
            if *hidden == 0 {
                return bad("model.hidden must be >= 1".into());
            }
            check_positive("model.init_scale", *init_scale)?;
            if self.clip.values.is_none() {
                return bad(
                    "model tanh_net has no finite per-sample Lipschitz constants: give clip.values \
                     (Appendix C uses [1, 3, 6, 12, 18, 24, 30, 36])"
                        .into(),
                );
            }
            if self.rnmm.is_some() || self.theory.is_some() {
                return bad(
                    "[rnmm] and [theory] need the G_i of the softmax model; remove them for tanh_net"
                        .into(),
                );
            }
        }
        if let Some(m) = &self.methods {
            for &g in &m.adaptive_quantiles {
                check_open("methods.adaptive_quantiles entry", g, 0.0, 1.0)?;
            }
            check_positive("methods.adaptive_lr", m.adaptive_lr)?;
            check_positive("methods.adaptive_count_noise", m.adaptive_count_noise)?;
            if let Some(s) = m.adaptive_count_share {
                check_open("methods.adaptive_count_share", s, 0.0, 1.0)?;
            }
            check_positive("methods.adaptive_initial", m.adaptive_initial)?;
            check_positive("methods.automatic_gamma", m.automatic_gamma)?;
            check_positive("methods.default_tau", m.default_tau)?;
        }
        if let Some(r) = &self.rnmm {
            check_positive("rnmm.epsilon", r.epsilon)?;
            for &e in &t.epsilons {
                if e <= r.epsilon {
                    return bad(format!(
                        "rnmm.epsilon = {} leaves nothing for DP-SGD at total epsilon = {e}",
                        r.epsilon
                    ));
                }
            }
            if r.grid_size < 2 {
                return bad(format!(
                    "rnmm.grid_size must be >= 2, but is {}",
                    r.grid_size
                ));
            }
        }
        Ok(())
    }
}
