//! A spec validated at one scale: the plan the runner trusts. The spec file's types
//! ([`super::spec_file`]) are re-exported here; [`Spec::new`] checks them once, fixes the phi
//! grid and expands the declared series (bounded-data controls, clip-sweep arms) into
//! [`Spec::series`], leaving the spec as read in [`Spec::raw`].

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::clip_sweep::{Arm, ClipSweepSpec, SweepSlot};
pub use super::spec_file::{
    ClipRule, ConstantsSpec, ExperimentSpec, FreeConstant, HeavyShift, OptimalRule, PrivacySpec,
    ScaleSpec, SeriesSpec, StartSpec, SweepSpec, Vary, fmt_k,
};
use crate::config::DataSpec;
use crate::config::load_toml;
use crate::data::generator::GeneratorSpec;
use crate::data::radial::LawSpec;
use crate::error::{Error, Result, check_open, check_positive};
pub(crate) use crate::k_serde;
use crate::theory::TheoremId;

/// One series of the validated spec: a declared series, or what [`Spec::new`] expanded it into
/// (the bounded-data control of a series, the arms of a clip-norm sweep). Reads as its
/// [`SeriesSpec`] (k, law, clip, ...).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// The series as declared, with the clip rule of its arm for a sweep.
    #[serde(flatten)]
    pub spec: SeriesSpec,
    /// On the bounded-data control of series `i`: the same schedule, G and random streams as
    /// series `i`, on data with every G_i = G.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_of: Option<usize>,
    /// On the arms of a clip-norm sweep: the declared series this arm expands and which clip
    /// norm it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepSlot>,
}

impl std::ops::Deref for Series {
    type Target = SeriesSpec;
    fn deref(&self) -> &SeriesSpec {
        &self.spec
    }
}

impl Series {
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

/// Whether the heavy part of a series' data moves with phi ([`Spec::tail_motion`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TailMotion {
    /// The tail's mass and place scale with phi (Appendix L's p proportional to phi).
    WithPhi,
    /// The same law at every phi.
    Fixed,
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

/// A validated spec at one scale: the phi grid is fixed and the series are expanded.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The spec as read (its `series` as declared).
    pub raw: ExperimentSpec,
    /// The series the runner runs: the declared ones, then their bounded-data controls; or, for
    /// a clip-norm sweep, each declared series' arms.
    pub series: Vec<Series>,
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

    /// Validates `raw` at `scale`: its fields, its declared series, its scale; then expands the
    /// series and checks each one's data.
    pub fn new(raw: ExperimentSpec, scale: Scale) -> Result<Spec> {
        check_fields(&raw)?;
        check_declared_series(&raw)?;
        let series = expand(&raw)?;
        let sc = match scale {
            Scale::Quick => &raw.quick,
            Scale::Full => &raw.full,
        };
        let phis = phi_grid(sc, series.len())?;
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
            series,
            raw,
        };
        for s in 0..spec.series.len() {
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
        self.series.len() * self.phis.len()
    }

    /// (series, phi index) of cell `c`.
    pub fn cell(&self, c: usize) -> (usize, usize) {
        (c / self.phis.len(), c % self.phis.len())
    }

    /// Legend label of series `s` (a control: its series' label and "control").
    pub fn label(&self, s: usize) -> String {
        let ser = &self.series[s];
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
            .series
            .iter()
            .find(|x| x.sweep.is_some_and(|w| w.group == g));
        first
            .and_then(|x| x.label.clone())
            .unwrap_or_else(|| format!("k = {}", fmt_k(first.map_or(f64::NAN, |x| x.k))))
    }

    /// Whether the heavy part of series `s`'s data moves with phi, derived from the data source
    /// (not declared, so a spec cannot claim it): on Q_v of Appendix L (`appendix_l`) a fraction
    /// p = 2 sqrt(d log(1/delta)) / (n epsilon) = 2 phi / sqrt(nu) of the samples carries the
    /// tail, x = p^(-1/k) v (Eq. (96)), so sweeping phi by n moves it with phi as the lower bound's
    /// construction does; at fixed n (phi moved by epsilon) p is the spec's constant. A generator's
    /// radial law and a CSV file are fixed: their tail does not change with phi, except the
    /// `two_point` law of the binding families, whose heavy atom sits at tail x tau(phi) at every
    /// sweep point (`LawSpec::TwoPoint`; paper_refs/heavy_tail.md).
    pub fn tail_motion(&self, s: usize) -> TailMotion {
        let two_point = matches!(self.series[s].law, Some(LawSpec::TwoPoint { .. }));
        match (&self.raw.data, self.raw.sweep.vary) {
            _ if self.series[s].control_of.is_some() => TailMotion::Fixed,
            (DataSpec::AppendixL(_), Vary::N) => TailMotion::WithPhi,
            (DataSpec::Generated(_), _) if two_point => TailMotion::WithPhi,
            _ => TailMotion::Fixed,
        }
    }

    /// Whether the replicates measure the risk split (the bias-only and noise-only twins of
    /// every run, `measure.rs`): every spec but a clip-norm sweep (`cliplaw` reads none of it).
    pub fn measures_split(&self) -> bool {
        self.raw.clip_sweep.is_none()
    }

    /// The control of series `s`, if it has one.
    pub fn control(&self, s: usize) -> Option<usize> {
        self.series.iter().position(|x| x.control_of == Some(s))
    }

    /// The data spec of series `s`, with its k and law set and n overridden.
    pub fn series_data(&self, s: usize, n: Option<usize>) -> Result<DataSpec> {
        let ser = &self.series[s];
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

/// The spec's own fields: its name and the parameters every series shares.
fn check_fields(raw: &ExperimentSpec) -> Result<()> {
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
        let e = raw
            .privacy
            .epsilon
            .ok_or_else(|| Error::Config("sweep.vary = \"n\" needs privacy.epsilon".to_string()))?;
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
    if raw.theorem.is_lower_bound() && raw.sweep.vary != Vary::N {
        // Varying epsilon drives n p to 0 where phi is small.
        return Err(Error::Config(
            "a lower-bound spec must sweep phi by n (sweep.vary = \"n\")".into(),
        ));
    }
    if let Some(s) = &raw.search {
        s.check()?;
    }
    Ok(())
}

/// Each declared series: k of Assumption 6.1, its clip rule, its ablation.
fn check_declared_series(raw: &ExperimentSpec) -> Result<()> {
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
    Ok(())
}

/// The series the runner runs: a clip-norm sweep's arms, or the declared series followed by
/// their bounded-data controls (if `controls`), or the declared series alone.
fn expand(raw: &ExperimentSpec) -> Result<Vec<Series>> {
    if let Some(cs) = &raw.clip_sweep {
        cs.check()?;
        return Ok(expand_clip_sweep(&raw.series, cs));
    }
    let declared = raw.series.iter().map(|s| Series {
        spec: s.clone(),
        control_of: None,
        sweep: None,
    });
    let mut series: Vec<Series> = declared.collect();
    if raw.controls {
        add_controls(raw.theorem, &mut series);
    }
    Ok(series)
}

/// The scale's phi grid (geometric, phi_max first), after checking the scale and the memory its
/// results and fits need for `series` series.
fn phi_grid(sc: &ScaleSpec, series: usize) -> Result<Vec<f64>> {
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
            sc.points, sc.replicates, sc.iterates, sc.bootstrap, series
        ),
        64.0 * sc.points as f64
            * series as f64
            * (sc.replicates as f64 * (sc.iterates as f64 + 4.0))
            + 8.0 * sc.bootstrap as f64,
    )?;
    Ok((0..sc.points)
        .map(|i| {
            let t = i as f64 / (sc.points - 1) as f64;
            (sc.phi_max.ln() + t * (sc.phi_min.ln() - sc.phi_max.ln())).exp()
        })
        .collect())
}

/// Each declared series as its arms: the grid's clip norms, then the uniform-Lipschitz clip,
/// then the theorem's schedule.
fn expand_clip_sweep(declared: &[SeriesSpec], cs: &ClipSweepSpec) -> Vec<Series> {
    let grid = cs.grid();
    let mut out = Vec::new();
    for (g, ser) in declared.iter().enumerate() {
        let arm = |arm: Arm, clip: ClipRule| {
            let mut s = ser.clone();
            s.clip = clip;
            Series {
                spec: s,
                control_of: None,
                sweep: Some(SweepSlot { group: g, arm }),
            }
        };
        for (j, &t) in grid.iter().enumerate() {
            out.push(arm(Arm::Grid(j), ClipRule::Fixed(t)));
        }
        out.push(arm(Arm::Uniform, ClipRule::Quantile(1.0)));
        out.push(arm(Arm::Schedule, ClipRule::Theorem));
    }
    out
}

/// Appends the bounded-data control of every series with k < inf and the theorem's clip rule
/// (the lower bounds' series and H.1's quantile rules too, whose control clips at G; not the
/// ablations' clip norms outside the theorem).
fn add_controls(theorem: TheoremId, series: &mut Vec<Series>) {
    let h1 = theorem.full_version() == TheoremId::H1;
    let heavy: Vec<usize> = (0..series.len())
        .filter(|&i| {
            let s = &series[i];
            let in_theorem = match s.clip {
                ClipRule::Theorem => true,
                ClipRule::Quantile(_) => h1,
                ClipRule::Fixed(_) => false,
            };
            s.k.is_finite() && in_theorem && s.control_of.is_none()
        })
        .collect();
    for i in heavy {
        let mut c = series[i].spec.clone();
        c.label = None;
        c.law = None;
        c.heavy_shift = None;
        series.push(Series {
            spec: c,
            control_of: Some(i),
            sweep: None,
        });
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
