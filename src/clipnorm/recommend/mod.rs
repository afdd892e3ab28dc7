//! `dpsgd-lab clipnorm recommend`: the paper's clip-norm advice as a private pipeline. Remark 5.6
//! recommends tau = G_1 = min_i G_i; G_1 is private, so it is selected by RNMM (Report Noisy
//! Max over log-spaced candidates, pure eps_RNMM-DP, [`crate::privacy::private_min_lipschitz`])
//! with a stated share of the budget, exactly as the study's Table 3 arm does; DP-SGD gets the
//! rest (basic composition), and its noise multiplier is calibrated for the given steps and
//! batch size.
//!
//! The pipeline runs as named stages, each a mechanism with its own spend, recorded in the
//! data set's privacy ledger ([`crate::privacy::ledger`]) before it runs:
//! 1. the plan ([`plan::AdvicePlan::check`]): every public parameter checked, the hash split taken (not a mechanism: each
//!    row's side depends on that row alone), the labels checked, the budget split and DP-SGD's
//!    noise calibrated, and a data set too small for the requested privacy refused
//!    ([`small`]): nothing private has run, so every refusal here is free;
//! 2. preprocessing ([`stages::preprocess`]): public ranges (no cost), public scales (no cost) or the private
//!    standardization ([`crate::privacy::standardize`]);
//! 3. the range check ([`stages::range_check_stage`]): a Laplace count that RNMM's candidate range covers the G_i
//!    (not needed with public ranges: the range is then exact);
//! 4. the selection ([`stages::select`]): RNMM;
//! 5. the step size ([`stages::step_size`]): eta from public quantities and the released tau (no cost).
//!
//! The per-sample constants are G_i = G(x_i, y_i) from the loss's own
//! [`crate::loss::Loss::lipschitz`], or per-sample norms the user supplies (a CSV column or a
//! file with one value per row), e.g. measured gradient-norm bounds of another model.

use std::path::PathBuf;

use serde::Serialize;

use crate::data::preprocess::Preprocess;
use crate::error::{Result, check_positive};
use crate::privacy::standardize::PrivateStandardization;
use crate::rng::ReleaseRng;

mod budget;
pub mod plan;
pub mod small;
pub mod stages;
mod values;

pub use stages::{logistic_lipschitz, step_size};
pub use values::{PublicValues, read_norms_file, read_rows};

/// The study's RNMM budget (Table 3): the default when no share is given.
pub const DEFAULT_RNMM_EPSILON: f64 = 0.3;
/// The study's number of log-spaced candidates.
pub const DEFAULT_GRID_SIZE: usize = 200;
/// The study's epochs: the default number of steps is this many passes at the default batch.
pub const DEFAULT_EPOCHS: usize = 30;
/// Default epsilon of the range check (a Laplace count, [`range_check`]): small against the
/// budgets the tool is used with (2.5% of epsilon = 2), yet its noise scale 1 / 0.05 = 20 rows
/// is far below half of any data set the check can judge (the plan refuses n <= 92 at this
/// epsilon: [`small::check_range_check_size`]).
pub const DEFAULT_CHECK_EPSILON: f64 = 0.05;

pub use crate::privacy::calibrate::MIN_NOISE_MULTIPLIER;

/// Where the per-sample values G_i come from.
#[derive(Debug, Clone, PartialEq)]
pub enum NormsSource {
    /// G(x_i, y_i) of the loss, in closed form.
    Lipschitz,
    /// A numeric column of the CSV.
    Column(String),
    /// A file with one value per CSV row.
    File(PathBuf),
    /// One value per row of the data, given in memory (before any split, as a file's).
    Values(Vec<f64>),
}

/// Where the private data set comes from.
#[derive(Debug, Clone)]
pub enum AdviceData {
    /// A CSV with a header row and numeric columns.
    Csv {
        /// Path of the CSV file.
        path: PathBuf,
        /// Name of the label column (class indices 0..m-1); every other column is a feature.
        label: String,
    },
    /// Features and labels in memory (e.g. arrays from Python).
    Memory {
        /// The data set (every row; a split is taken from it as from a CSV's rows).
        data: crate::data::Dataset,
        /// Reported in place of the CSV path.
        name: String,
    },
}

/// One stage's release and its cost.
#[derive(Debug, Clone, Serialize)]
pub struct StageSpend {
    /// The stage ("preprocessing", "range check", "RNMM", "DP-SGD (planned)").
    pub stage: String,
    /// The mechanism and its accounting.
    pub mechanism: String,
    /// epsilon of the stage.
    pub epsilon: f64,
    /// delta of the stage.
    pub delta: f64,
}

/// The inputs of `clipnorm recommend`: the data, the total budget, and the public choices of the
/// mechanisms (candidate range, steps, batch size, accountant, seed).
#[derive(Debug, Clone)]
pub struct AdviceRequest {
    /// The private data set: a CSV, or features and labels in memory.
    pub data: AdviceData,
    /// "logistic" or "softmax" (the same multinomial logistic loss).
    pub loss: String,
    /// Standardize the features before computing G_i, with parameters released by
    /// [`crate::privacy::standardize`]: a DP estimate with `std_share` of (epsilon, delta), or
    /// the public means and scales of `public_scales` (no cost).
    pub standardize: bool,
    /// Fraction of epsilon and of delta spent on standardization (default 0.1).
    pub std_share: Option<f64>,
    /// File of public per-feature bounds C_j on |x_j| (one per feature): the DP estimate then
    /// skips its private bounds.
    pub feature_bounds: Option<PublicValues>,
    /// File of public per-feature "mean,scale" lines: standardization at no privacy cost.
    pub public_scales: Option<PublicValues>,
    /// Total privacy budget epsilon, split by basic composition between standardization, RNMM
    /// and DP-SGD.
    pub epsilon: f64,
    /// Total delta in (0, 1), split between standardization and DP-SGD (RNMM is pure DP).
    pub delta: f64,
    /// Fraction of epsilon spent on RNMM (default: eps_RNMM = 0.3, as in the study).
    pub share: Option<f64>,
    /// DP-SGD iterations T the noise is calibrated for (default: [`DEFAULT_EPOCHS`] epochs of
    /// round(n / b) steps).
    pub steps: Option<usize>,
    /// Expected batch size b, so q = b / n (default: min(500, n / 10), as in the study).
    pub batch_size: Option<f64>,
    /// Where the per-sample values G_i whose private minimum is selected come from.
    pub norms: NormsSource,
    /// Public lower end of RNMM's candidate range (default for the loss's G_i: G at x = 0;
    /// required with user norms).
    pub lo: Option<f64>,
    /// Public upper end of the candidate range (default for the loss's G_i: 3 G at
    /// ||x||^2 = d; required with user norms).
    pub hi: Option<f64>,
    /// Number of log-spaced RNMM candidates on [lo, hi] (>= 2; the study uses
    /// [`DEFAULT_GRID_SIZE`]).
    pub grid_size: usize,
    /// Accountant that calibrates DP-SGD's noise multiplier (parsed once, at the boundary).
    pub accountant: crate::privacy::AccountantKind,
    /// Base seed. By default it keys only public choices (the hash split's seed when
    /// `split_seed` follows it); the mechanisms' noise comes from the OS-keyed CSPRNG
    /// ([`crate::rng::ReleaseRng`]). With `reproducible`, the mechanisms' noise is the seeded
    /// stream of this seed.
    pub seed: u64,
    /// The reproducible research mode: the mechanisms (RNMM, the range check, the private
    /// standardization) draw from seeded streams, so the same seed gives the same numbers, and
    /// anyone who knows the seed can replay the noise: NOT a private release (the output, the
    /// written config and the ledger line say so).
    pub reproducible: bool,
    /// epsilon of the private range check ([`range_check`]; default [`DEFAULT_CHECK_EPSILON`]);
    /// 0 skips the check.
    pub check_epsilon: Option<f64>,
    /// Hold out this fraction of the rows as a test set (a hash split keyed by `split_seed`:
    /// each row's side depends on that row alone): every private statistic then uses the
    /// training part only, and n = n_train.
    pub test_fraction: Option<f64>,
    /// Seed of the train/test split (the `[data] split.seed` of the train config).
    pub split_seed: u64,
    /// DP-SGD epochs E: T = ceil(E n / B) (an alternative to `steps`).
    pub epochs: Option<f64>,
    /// Public per-feature ranges [min_j, max_j] (e.g. from the data set's documentation):
    /// features are clamped and scaled into [-1, 1] at no privacy cost, the candidate range is
    /// exact, and the range check is not needed.
    pub feature_ranges: Option<PublicValues>,
    /// The privacy ledger of the data set (made with budget (epsilon, delta) when absent):
    /// every mechanism's spend is recorded there before it runs. None: no ledger (the caller
    /// keeps the account, e.g. from Python).
    pub ledger: Option<PathBuf>,
    /// DP-SGD's step size for the written config (None: [`step_size`]'s public rule).
    pub learning_rate: Option<f64>,
}

/// The recommendation (every field a public value or a DP output; no raw statistic of the
/// data such as the true G_1 is reported).
#[derive(Debug, Clone, Serialize)]
pub struct ClipNormAdvice {
    /// Path of the data set, as given (or the name of data given in memory).
    pub csv: String,
    /// Name of the label column (empty for data given in memory).
    pub label: String,
    /// Rows the private statistics and DP-SGD use (the training part with a split; public: the
    /// sampling rate q = b / n uses it).
    pub n: usize,
    /// The train/test split (None: every row is used).
    pub split: Option<crate::data::split::SplitSpec>,
    /// Rows held out for testing (0 without a split).
    pub n_test: usize,
    /// Number of features (columns other than the label).
    pub d: usize,
    /// The loss name as requested ("logistic" or "softmax").
    pub loss: String,
    /// `lipschitz`, `column <name>`, `file <path>` or `per_sample_norms` (values in memory).
    pub norms_source: String,
    /// Total privacy budget epsilon requested.
    pub epsilon: f64,
    /// Total delta requested.
    pub delta: f64,
    /// eps_RNMM = share x epsilon.
    pub rnmm_epsilon: f64,
    /// Fraction of epsilon spent on RNMM (the given one, or 0.3 / epsilon by default).
    pub share: f64,
    /// epsilon - eps_std - eps_RNMM, DP-SGD's budget.
    pub dpsgd_epsilon: f64,
    /// delta - delta_std, DP-SGD's delta.
    pub dpsgd_delta: f64,
    /// The released standardization (None without --standardize); its epsilon and delta are
    /// eps_std and delta_std.
    pub standardization: Option<PrivateStandardization>,
    /// The per-row transform every later stage and `train` apply (None: raw features).
    pub preprocess: Option<Preprocess>,
    /// Per feature, whether the private standardization's statistic was mostly noise and the
    /// feature fell back to its bound's scale (empty without a private standardization).
    pub noisy_features: Vec<usize>,
    /// DP-SGD's step size eta for the written config (public rule or given).
    pub learning_rate: f64,
    /// How eta was chosen.
    pub learning_rate_rule: String,
    /// The privacy ledger the spends were recorded in (None: no ledger).
    pub ledger: Option<String>,
    /// What the ledger had left after this command, for DP-SGD (epsilon, delta).
    pub ledger_remaining: Option<(f64, f64)>,
    /// The private range check (spent before RNMM).
    pub range_check: Option<RangeCheck>,
    /// Every stage's spend, in the order they ran (DP-SGD's planned share last).
    pub stages: Vec<StageSpend>,
    /// The stages and DP-SGD composed (the smaller of the RDP and basic compositions): <= epsilon.
    pub total_epsilon: f64,
    /// delta_std + delta_DP-SGD: equals delta.
    pub total_delta: f64,
    /// Public lower end of the RNMM candidates (the first candidate).
    pub candidates_lo: f64,
    /// Public upper end of the RNMM candidates (the last candidate).
    pub candidates_hi: f64,
    /// Number of log-spaced candidates on [candidates_lo, candidates_hi].
    pub grid_size: usize,
    /// Base seed (with `reproducible`, the mechanisms' seed).
    pub seed: u64,
    /// The mechanisms drew from seeded streams: not a private release.
    pub reproducible: bool,
    /// The recommended clip norm tau (the selected candidate).
    pub clip_norm: f64,
    /// Index j (from 0) of the selected candidate c_j = lo (hi / lo)^(j / (grid_size - 1)).
    pub candidate_index: usize,
    /// The selection is the largest candidate: the range may be too narrow.
    pub at_range_end: bool,
    /// DP-SGD iterations T the noise multiplier is calibrated for.
    pub steps: usize,
    /// Expected batch size b of DP-SGD's Poisson sampling.
    pub batch_size: f64,
    /// q = B / n.
    pub q: f64,
    /// z calibrated for (dpsgd_epsilon, delta) over `steps` steps at rate q.
    pub noise_multiplier: f64,
    /// The accountant whose number z is: "rdp", "pld", or "rdp (fallback of pld)".
    pub accountant: String,
    /// The accountant `train` calibrates z back with (the written config's).
    pub accountant_kind: crate::privacy::AccountantKind,
    /// DP-SGD's epsilon had the stages been composed by basic composition (the RDP composition
    /// leaves `dpsgd_epsilon` instead).
    pub basic_dpsgd_epsilon: f64,
    /// The ledger's announcements (a ledger made, a torn line repaired).
    pub ledger_notes: Vec<String>,
}

/// The private check that RNMM's public candidate range [lo, hi] covers the data, so that a
/// range that misses every G_i (raw features against the standardized default range) is reported
/// instead of selecting pure noise.
#[derive(Debug, Clone, Serialize)]
pub struct RangeCheck {
    /// epsilon of the Laplace count (pure DP).
    pub epsilon: f64,
    /// #{i : G_i < lo or G_i > hi} + Lap(1 / epsilon): a DP output.
    pub noisy_outside: f64,
    /// Rows counted (public).
    pub n: usize,
}

impl RangeCheck {
    /// The noisy count says most G_i lie outside [lo, hi]: noisy_outside > n / 2.
    pub fn misses(&self) -> bool {
        self.noisy_outside > self.n as f64 / 2.0
    }
}

/// The Laplace mechanism on c = #{i : G_i < lo or G_i > hi}, which adding or removing one row
/// changes by at most 1 (each G_i depends on its own row only; with standardization, on the row
/// and the already released public parameters):
/// - on the OS-keyed generator (a release), c + Y with Y discrete Laplace,
///   P(Y = y) ∝ exp(-eps' |y|), drawn exactly ([`crate::privacy::exact::discrete_laplace`] at
///   s / t = eps' = [`crate::privacy::exact::epsilon_units`] / 2^64 <= eps): the geometric
///   mechanism (Ghosh, Roughgarden & Sundararajan 2009; Canonne, Kamath & Steinke 2020,
///   Sec. 2), pure eps'-DP hence eps-DP, since P(y) / P(y +- 1) <= exp(eps'). The released
///   count is an integer, with no floating-point trace of c (Mironov 2012);
/// - on a seeded generator (`--reproducible`: not a private release), c + Lap(1 / eps) in f64
///   as before, bit for bit: Lap(b) by inversion, -b sgn(u) ln(1 - 2|u|) with u uniform on
///   (-1/2, 1/2); pure eps-DP in real arithmetic (Dwork & Roth 2014, Theorem 3.6).
pub fn range_check(
    g: &[f64],
    lo: f64,
    hi: f64,
    epsilon: f64,
    rng: &mut ReleaseRng,
) -> Result<RangeCheck> {
    check_positive("--check-epsilon", epsilon)?;
    let count = g.iter().filter(|&&v| v < lo || v > hi).count();
    let noisy_outside = match rng {
        ReleaseRng::Seeded(r) => {
            let u: f64 = rand::RngExt::random::<f64>(r) - 0.5;
            let noise = -u.signum() * (1.0 - 2.0 * u.abs()).max(f64::MIN_POSITIVE).ln() / epsilon;
            count as f64 + noise
        }
        ReleaseRng::Secure(r) => {
            let s = crate::privacy::exact::epsilon_units(epsilon)?;
            let y = crate::privacy::exact::discrete_laplace(r.as_mut(), s, 1 << 64)?;
            (count as i128 + i128::from(y)) as f64
        }
    };
    Ok(RangeCheck {
        epsilon,
        noisy_outside,
        n: g.len(),
    })
}

/// The recommendation for `req`: the stages of the module doc, in order.
pub fn recommend(req: &AdviceRequest) -> Result<ClipNormAdvice> {
    let plan = plan::AdvicePlan::check(req)?;
    let mut ledger = plan.open_ledger()?;
    let mut data = plan.train.clone();
    let pre = stages::preprocess(&plan, &mut data, ledger.as_mut())?;
    let g = stages::per_sample_values(&plan, &data)?;
    let check = stages::range_check_stage(&plan, &g, &pre, ledger.as_mut())?;
    let sel = stages::select(&plan, &g, ledger.as_mut())?;
    Ok(plan.advice(pre, check, sel, ledger.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Purpose, stream};
    use rand::{RngExt, SeedableRng};

    /// 300 values uniform on [1, 4] (seed 21), a third of them outside [0.5, 2].
    fn values() -> Vec<f64> {
        let mut d = stream(21, 0, Purpose::Data);
        (0..300).map(|_| 1.0 + 3.0 * d.random::<f64>()).collect()
    }

    /// The seeded range check is bit for bit what it was before the exact sampler (pinned: the
    /// f64 bits of seeds 0..6 at eps 0.05, recorded from the earlier code).
    #[test]
    fn seeded_range_check_is_pinned() {
        let g = values();
        let bits: Vec<u64> = (0..6)
            .map(|s| {
                let mut r = ReleaseRng::Seeded(stream(s, 2, Purpose::Mechanism));
                range_check(&g, 0.5, 2.0, 0.05, &mut r)
                    .unwrap()
                    .noisy_outside
                    .to_bits()
            })
            .collect();
        let want: [u64; 6] = [
            4641610908430241864,
            4641843410827492349,
            4641877805752018392,
            4639774397452837930,
            4641700969074750713,
            4641621322512653227,
        ];
        assert_eq!(bits, want);
    }

    /// The secure range check releases c + Y with Y discrete Laplace, P(y) = (1 - a) / (1 + a)
    /// a^|y|, a = exp(-eps): at eps = 0.5 over 50000 draws of a fixed-seed ChaCha12, every
    /// released count is an integer and each noise value in [-12, 12] (and the tail beyond) has
    /// its probability within 4 standard errors sqrt(p (1 - p) / N). Planted bug (the noise
    /// drawn at 2 eps, half the scale): fails (noise -12: 0.00002 against 0.00061).
    #[test]
    fn secure_range_check_is_the_discrete_laplace_count() {
        let g = values();
        let c = g.iter().filter(|&&v| !(0.5..=2.0).contains(&v)).count() as f64;
        let eps = 0.5;
        let mut r = ReleaseRng::Secure(Box::new(rand::rngs::StdRng::seed_from_u64(3)));
        let n = 50_000;
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..n {
            let out = range_check(&g, 0.5, 2.0, eps, &mut r)
                .unwrap()
                .noisy_outside;
            assert_eq!(out, out.round(), "a released count {out} is not an integer");
            *counts
                .entry(((out - c) as i64).clamp(-13, 13))
                .or_insert(0usize) += 1;
        }
        let a = (-eps).exp();
        let pmf = |y: i64| (1.0 - a) / (1.0 + a) * a.powi(y.abs() as i32);
        let check = |what: String, k: usize, p: f64| {
            let (f, se) = (k as f64 / n as f64, (p * (1.0 - p) / n as f64).sqrt());
            assert!((f - p).abs() <= 4.0 * se, "noise {what}: {f} against {p}");
        };
        for y in -12..=12 {
            check(y.to_string(), counts.get(&y).copied().unwrap_or(0), pmf(y));
        }
        let tail = 1.0 - (-12..=12).map(pmf).sum::<f64>();
        let k = counts.get(&-13).copied().unwrap_or(0) + counts.get(&13).copied().unwrap_or(0);
        check("beyond 12".into(), k, tail);
    }
}
