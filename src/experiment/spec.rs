//! Experiment specs: plain serde structs read from TOML (unknown keys rejected), validated once
//! into a [`Spec`] the runner can trust.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::clip_sweep::{Arm, ClipSweepSpec, SweepSlot};
use super::search_table::SearchSpec;
use crate::config::DataSpec;
use crate::config::load_toml;
use crate::data::generator::GeneratorSpec;
use crate::data::radial::LawSpec;
use crate::error::{Error, Result, check_open, check_positive};
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
    /// Set by [`Spec::new`] on the bounded-data control of series `i` (never read from TOML):
    /// the same schedule, G and random streams as series `i`, on data with every G_i = G.
    #[serde(skip_deserializing, default, skip_serializing_if = "Option::is_none")]
    pub control_of: Option<usize>,
    /// Set by [`Spec::new`] on the arms of a clip-norm sweep (never read from TOML): the
    /// declared series this arm expands and which clip norm it runs.
    #[serde(skip_deserializing, default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepSlot>,
}

impl SeriesSpec {
    /// The series whose random streams (sampling, noise, iterate fractions) this one uses: its
    /// own, or for a control those of the series it controls (common random numbers).
    pub fn stream_series(&self, s: usize) -> usize {
        match (self.control_of, self.sweep) {
            (Some(of), _) => of,
            // Every arm of a sweep keys its streams by its declared series, so tau changes
            // nothing but tau (common random numbers across the grid).
            (None, Some(w)) => w.group,
            (None, None) => s,
        }
    }

    /// The series whose data spec and G this one shares: a control's own series (its data
    /// are bounded by that series' G), otherwise itself.
    pub fn data_series(&self, s: usize) -> usize {
        self.control_of.unwrap_or(s)
    }
}

fn theorem_clip() -> ClipRule {
    ClipRule::Theorem
}

/// Which scale to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// Minutes.
    Quick,
    /// Publication.
    Full,
}

/// A validated spec at one scale: the phi grid is fixed.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The spec as read.
    pub raw: ExperimentSpec,
    /// The scale.
    pub scale: Scale,
    /// The grid, phi_max first.
    pub phis: Vec<f64>,
    /// Replicates.
    pub replicates: usize,
    /// Iterates per run.
    pub iterates: usize,
    /// Bootstrap resamples.
    pub bootstrap: usize,
    /// (n, d) of a CSV data source, read once when the spec is validated.
    pub csv_shape: Option<(usize, usize)>,
}

impl Spec {
    /// Reads and validates a spec file.
    pub fn load(path: &Path, scale: Scale) -> Result<Spec> {
        let mut raw: ExperimentSpec = load_toml(path)?;
        raw.data.resolve_against(path)?;
        Spec::new(raw, scale)
    }

    /// Validates `raw` at `scale`.
    pub fn new(raw: ExperimentSpec, scale: Scale) -> Result<Spec> {
        let name_ok = !raw.name.is_empty()
            && raw
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
        if !name_ok {
            return Err(Error::Config(format!(
                "spec name must be non-empty ASCII letters, digits, '_', '-' or '.', but is {:?}",
                raw.name
            )));
        }
        check_positive("privacy.nu", raw.privacy.nu)?;
        check_open("privacy.delta", raw.privacy.delta, 0.0, 1.0)?;
        check_positive("constants.dist0", raw.constants.dist0)?;
        check_positive("batch_size", raw.batch_size)?;
        if raw.runs_per_data == 0 {
            return Err(Error::Config("runs_per_data must be >= 1".into()));
        }
        if let FreeConstant::Value(c) = raw.constants.c {
            check_positive("constants.c", c)?;
        }
        if let Some(g) = raw.constants.gamma {
            check_open("constants.gamma", g, 0.0, 1.0)?;
        }
        if let Some(r) = raw.radius {
            check_positive("radius", r)?;
        }
        if raw.sweep.vary == Vary::N {
            let e = raw.privacy.epsilon.ok_or_else(|| {
                Error::Config("sweep.vary = \"n\" needs privacy.epsilon".to_string())
            })?;
            check_positive("privacy.epsilon", e)?;
        }
        if let DataSpec::AppendixL(a) = &raw.data
            && (Some(a.epsilon) != raw.privacy.epsilon || a.delta != raw.privacy.delta)
        {
            // Q_v's p = 2 sqrt(d log(1/delta)) / (n epsilon) = 2 phi / sqrt(nu) only if both agree.
            return Err(Error::Config(format!(
                "the appendix_l data has (epsilon, delta) = ({}, {}), but [privacy] has ({:?}, {}); they must agree",
                a.epsilon, a.delta, raw.privacy.epsilon, raw.privacy.delta
            )));
        }
        if raw.series.is_empty() {
            return Err(Error::Config("a spec needs at least one [[series]]".into()));
        }
        for (i, s) in raw.series.iter().enumerate() {
            if s.k.is_nan() || s.k <= 1.0 {
                return Err(Error::param(format!(
                    "series[{i}].k must be > 1 (Assumption 6.1; \"inf\" for uniform), but is {}",
                    s.k
                )));
            }
            match s.clip {
                ClipRule::Fixed(t) => {
                    check_positive(&format!("series[{i}].clip.fixed"), t)?;
                }
                ClipRule::Quantile(q) if !(q > 0.0 && q <= 1.0) => {
                    return Err(Error::param(format!(
                        "series[{i}].clip.quantile must lie in (0, 1], but is {q}"
                    )));
                }
                _ => {}
            }
            if let Some(h) = s.heavy_shift {
                check_open(
                    &format!("series[{i}].heavy_shift.quantile"),
                    h.quantile,
                    0.0,
                    1.0,
                )?;
            }
        }
        if raw.theorem.is_lower_bound() && raw.sweep.vary != Vary::N {
            // Varying epsilon drives n p to 0 where phi is small.
            return Err(Error::Config(
                "a lower-bound spec must sweep phi by n (sweep.vary = \"n\")".into(),
            ));
        }
        if let Some(s) = &raw.search {
            s.check()?;
        }
        let mut raw = raw;
        if let Some(cs) = raw.clip_sweep.clone() {
            cs.check()?;
            expand_clip_sweep(&mut raw, &cs);
        } else if raw.controls {
            add_controls(&mut raw);
        }
        let sc = match scale {
            Scale::Quick => &raw.quick,
            Scale::Full => &raw.full,
        };
        check_open("phi_max", sc.phi_max, 0.0, 1.0)?;
        check_open("phi_min", sc.phi_min, 0.0, sc.phi_max + f64::MIN_POSITIVE)?;
        if sc.points < 2 || sc.replicates < 2 || sc.iterates < 1 || sc.bootstrap < 10 {
            return Err(Error::Config(format!(
                "a scale needs points >= 2, replicates >= 2, iterates >= 1, bootstrap >= 10, but has {}, {}, {}, {}",
                sc.points, sc.replicates, sc.iterates, sc.bootstrap
            )));
        }
        // Results hold about 64 bytes per iterate, and each fit keeps its bootstrap slopes
        // (8 bytes each); refuse before allocating either.
        crate::limits::check_memory(
            &format!(
                "points = {}, replicates = {}, iterates = {}, bootstrap = {} with {} series",
                sc.points,
                sc.replicates,
                sc.iterates,
                sc.bootstrap,
                raw.series.len()
            ),
            64.0 * sc.points as f64
                * raw.series.len() as f64
                * (sc.replicates as f64 * (sc.iterates as f64 + 4.0))
                + 8.0 * sc.bootstrap as f64,
        )?;
        let phis = (0..sc.points)
            .map(|i| {
                let t = i as f64 / (sc.points - 1) as f64;
                (sc.phi_max.ln() + t * (sc.phi_min.ln() - sc.phi_max.ln())).exp()
            })
            .collect();
        let csv_shape = match &raw.data {
            DataSpec::Csv(c) => {
                let d = c.load()?;
                Some((d.n, d.d))
            }
            _ => None,
        };
        let spec = Spec {
            csv_shape,
            phis,
            replicates: sc.replicates,
            iterates: sc.iterates,
            bootstrap: sc.bootstrap,
            scale,
            raw,
        };
        for s in 0..spec.raw.series.len() {
            spec.series_data(s, None)?;
        }
        if spec.raw.sweep.vary == Vary::Epsilon
            && let Ok(n) = spec.base_n()
            && spec.raw.batch_size > n as f64
        {
            return Err(Error::param(format!(
                "batch_size = {} exceeds the number of samples n = {n}",
                spec.raw.batch_size
            )));
        }
        Ok(spec)
    }

    /// Number of cells (series x phi).
    pub fn cells(&self) -> usize {
        self.raw.series.len() * self.phis.len()
    }

    /// (series, phi index) of cell `c`.
    pub fn cell(&self, c: usize) -> (usize, usize) {
        (c / self.phis.len(), c % self.phis.len())
    }

    /// Legend label of series `s` (a control: its series' label and "control").
    pub fn label(&self, s: usize) -> String {
        let ser = &self.raw.series[s];
        if let Some(of) = ser.control_of {
            return format!("{}: control (G_i = G)", self.label(of));
        }
        if let Some(w) = ser.sweep {
            return format!("{}: {}", self.group_label(w.group), w.arm);
        }
        ser.label
            .clone()
            .unwrap_or_else(|| format!("k = {}", fmt_k(ser.k)))
    }

    /// Legend label of declared series `g` of a clip-norm sweep.
    pub fn group_label(&self, g: usize) -> String {
        let first = self
            .raw
            .series
            .iter()
            .find(|x| x.sweep.is_some_and(|w| w.group == g));
        first
            .and_then(|x| x.label.clone())
            .unwrap_or_else(|| format!("k = {}", fmt_k(first.map_or(f64::NAN, |x| x.k))))
    }

    /// The control of series `s`, if it has one.
    pub fn control(&self, s: usize) -> Option<usize> {
        self.raw.series.iter().position(|x| x.control_of == Some(s))
    }

    /// The data spec of series `s`, with its k and law set and n overridden.
    pub fn series_data(&self, s: usize, n: Option<usize>) -> Result<DataSpec> {
        let ser = &self.raw.series[s];
        let control = ser.control_of.is_some();
        let mut data = self.raw.data.clone();
        match &mut data {
            DataSpec::Generated(g) => {
                // A control's radii are a point mass at g: every G_i = G, whatever k.
                let law = if control {
                    Some(LawSpec::PointMass)
                } else {
                    ser.law.clone()
                };
                set_k(g, ser.k, law)?;
                if let Some(n) = n {
                    g.n = n;
                }
            }
            DataSpec::AppendixL(a) => {
                if ser.law.is_some() {
                    return Err(Error::Config(format!(
                        "series {s}: the appendix_l source has no radial law to override"
                    )));
                }
                a.k = ser.k;
                a.constant = control;
                if let Some(n) = n {
                    a.n = n;
                }
                a.instance()?;
            }
            other => {
                if n.is_some() || ser.law.is_some() {
                    return Err(Error::Config(format!(
                        "series {s}: this data source ({}) cannot take n or a law from the sweep; \
                         give them in [data]",
                        source_name(other)
                    )));
                }
            }
        }
        Ok(data)
    }

    /// The feature dimension d of Eq. (1).
    pub fn dim(&self) -> Result<usize> {
        match &self.raw.data {
            DataSpec::Generated(g) => Ok(g.d),
            DataSpec::AppendixL(a) => Ok(a.d),
            DataSpec::Csv(_) => Ok(self.csv_shape.expect("read in Spec::new").1),
        }
    }

    /// The generator's n (sweep by epsilon).
    pub fn base_n(&self) -> Result<usize> {
        match &self.raw.data {
            DataSpec::Generated(g) => Ok(g.n),
            DataSpec::AppendixL(a) => Ok(a.n),
            // A real data set has its own n: phi moves with epsilon only.
            DataSpec::Csv(_) if self.raw.sweep.vary == Vary::Epsilon => {
                Ok(self.csv_shape.expect("read in Spec::new").0)
            }
            DataSpec::Csv(_) => Err(Error::Config(
                "a CSV data source has a fixed n: sweep phi by epsilon (sweep.vary = \"epsilon\")"
                    .into(),
            )),
        }
    }
}

/// Replaces the declared series by their arms: for each, the grid's clip norms, then the
/// uniform-Lipschitz clip, then the theorem's schedule.
fn expand_clip_sweep(raw: &mut ExperimentSpec, cs: &ClipSweepSpec) {
    let grid = cs.grid();
    let declared = std::mem::take(&mut raw.series);
    for (g, ser) in declared.into_iter().enumerate() {
        let arm = |arm: Arm, clip: ClipRule| {
            let mut s = ser.clone();
            s.clip = clip;
            s.sweep = Some(SweepSlot { group: g, arm });
            s
        };
        for (j, &t) in grid.iter().enumerate() {
            raw.series.push(arm(Arm::Grid(j), ClipRule::Fixed(t)));
        }
        raw.series.push(arm(Arm::Uniform, ClipRule::Quantile(1.0)));
        raw.series.push(arm(Arm::Schedule, ClipRule::Theorem));
    }
}

/// Appends the bounded-data control of every series with k < inf and the theorem's clip rule
/// (the lower bounds' series and H.1's quantile rules too, whose control clips at G; not the
/// ablations' clip norms outside the theorem).
fn add_controls(raw: &mut ExperimentSpec) {
    let h1 = raw.theorem.full_version() == TheoremId::H1;
    let heavy: Vec<usize> = (0..raw.series.len())
        .filter(|&i| {
            let s = &raw.series[i];
            let in_theorem = match s.clip {
                ClipRule::Theorem => true,
                ClipRule::Quantile(_) => h1,
                ClipRule::Fixed(_) => false,
            };
            s.k.is_finite() && in_theorem && s.control_of.is_none()
        })
        .collect();
    for i in heavy {
        let mut c = raw.series[i].clone();
        c.label = None;
        c.law = None;
        c.heavy_shift = None;
        c.control_of = Some(i);
        raw.series.push(c);
    }
}

fn source_name(d: &DataSpec) -> &'static str {
    match d {
        DataSpec::Generated(_) => "generated",
        DataSpec::Csv(_) => "csv",
        DataSpec::AppendixL(_) => "appendix_l",
    }
}

/// Sets the k of a generator's radial law (the sharp loss's weights, or ||x||).
fn set_k(g: &mut GeneratorSpec, k: f64, law: Option<LawSpec>) -> Result<()> {
    match &mut g.radial {
        Some(r) => {
            r.k = k;
            if let Some(l) = law {
                r.law = l;
            }
        }
        None => {
            return Err(Error::Config(
                "the experiment's generator needs a [data.radial] table (k, g, law)".into(),
            ));
        }
    }
    g.check().map(|_| ())
}

/// "inf" or the number.
pub fn fmt_k(k: f64) -> String {
    if k.is_infinite() {
        "inf".into()
    } else {
        format!("{k}")
    }
}
