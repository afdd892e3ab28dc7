//! The `Schedule` seam: for each theorem, (T, tau, eta) from phi exactly as the full Appendix
//! version writes them, the explicit bound with all its constants, the probability with which
//! it holds, and the predicted exponent of phi.
//!
//! Main-text theorems are the Appendix versions at a fixed T: 5.4 = H.1 at T = 1/(3 phi^2);
//! 6.2 = J.1, 6.5 = K.1, 6.8 = N.1 at T = phi^-2. Their tau and eta are stated only up to
//! O(.) in the main text; the Appendix gives the exact values used here.
//!
//! T is rounded up to an integer (Algorithm 1 runs a whole number of steps) and psi, tau, eta
//! and the bound are evaluated at that integer T. This is sound: H.1, I.1, J.1 and N.1 hold for
//! every T, and K.1 needs T >= phi^-2, which rounding up preserves.
//!
//! This module holds the theorem ids, the inputs ([`TheoryParams`]), the output
//! ([`Prescription`]), the [`Schedule`] seam and [`prescribe`]; each theorem's formulas, with
//! their equation numbers and hand-computed tests, live in its own file: [`h1`] (H.1, 5.4),
//! [`i1`] (I.1), [`j1`] (J.1, 6.2), [`k1`] (K.1, 6.5), [`n1`] (N.1, 6.8) and [`lower`]
//! (L.1, 6.6, I.3).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub mod h1;
pub mod i1;
pub mod j1;
pub mod k1;
pub mod lower;
pub mod n1;

pub use h1::ThmH1;
pub use i1::ThmI1;
pub use j1::ThmJ1;
pub use k1::ThmK1;
pub use n1::ThmN1;

use super::bounds::{self, Term};
use super::phi::{PhiInputs, phi as phi_of, psi};
use crate::dpsgd::{DpSgdConfig, NoiseSpec, OutputRule, Projection, StepSchedule};
use crate::error::{Error, Result, check_open, check_positive};

/// A theorem of the paper that prescribes a schedule or states a bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TheoremId {
    /// Thm 5.4 (= H.1 at T = 1/(3 phi^2)).
    #[serde(rename = "5.4")]
    T5_4,
    /// Thm H.1: convex, any tau in (0, G_n], bound through alpha(tau) and Delta(w*).
    #[serde(rename = "H.1")]
    H1,
    /// Thm I.1: constrained convex, diameter D_W.
    #[serde(rename = "I.1")]
    I1,
    /// Thm 6.2 (= J.1 at T = phi^-2).
    #[serde(rename = "6.2")]
    T6_2,
    /// Thm J.1: unconstrained convex under Assumption 6.1.
    #[serde(rename = "J.1")]
    J1,
    /// Thm 6.5 (= K.1 at T = phi^-2).
    #[serde(rename = "6.5")]
    T6_5,
    /// Thm K.1: unconstrained convex under Assumptions 6.1 and 6.4.
    #[serde(rename = "K.1")]
    K1,
    /// Thm 6.8 (= N.1 at T = phi^-2).
    #[serde(rename = "6.8")]
    T6_8,
    /// Thm N.1: unconstrained L-smooth nonconvex.
    #[serde(rename = "N.1")]
    N1,
    /// Thm 6.6 (= L.1): lower bound, unconstrained convex.
    #[serde(rename = "6.6")]
    T6_6,
    /// Thm L.1: lower bound, unconstrained convex under Assumption 6.4.
    #[serde(rename = "L.1")]
    L1,
    /// Thm I.3: lower bound, constrained convex.
    #[serde(rename = "I.3")]
    I3,
}

impl TheoremId {
    /// Every theorem, in paper order.
    pub const ALL: [TheoremId; 12] = [
        TheoremId::T5_4,
        TheoremId::H1,
        TheoremId::I1,
        TheoremId::T6_2,
        TheoremId::J1,
        TheoremId::T6_5,
        TheoremId::K1,
        TheoremId::T6_8,
        TheoremId::N1,
        TheoremId::T6_6,
        TheoremId::L1,
        TheoremId::I3,
    ];

    /// The paper's label, e.g. "J.1".
    pub fn label(self) -> &'static str {
        match self {
            TheoremId::T5_4 => "5.4",
            TheoremId::H1 => "H.1",
            TheoremId::I1 => "I.1",
            TheoremId::T6_2 => "6.2",
            TheoremId::J1 => "J.1",
            TheoremId::T6_5 => "6.5",
            TheoremId::K1 => "K.1",
            TheoremId::T6_8 => "6.8",
            TheoremId::N1 => "N.1",
            TheoremId::T6_6 => "6.6",
            TheoremId::L1 => "L.1",
            TheoremId::I3 => "I.3",
        }
    }

    /// The full (Appendix) version this theorem is evaluated through.
    pub fn full_version(self) -> TheoremId {
        match self {
            TheoremId::T5_4 => TheoremId::H1,
            TheoremId::T6_2 => TheoremId::J1,
            TheoremId::T6_5 => TheoremId::K1,
            TheoremId::T6_8 => TheoremId::N1,
            TheoremId::T6_6 => TheoremId::L1,
            t => t,
        }
    }

    /// True for main-text statements that fix T.
    pub fn fixes_steps(self) -> bool {
        matches!(
            self,
            TheoremId::T5_4 | TheoremId::T6_2 | TheoremId::T6_5 | TheoremId::T6_8
        )
    }

    /// True for the lower bounds (L.1, 6.6, I.3), which prescribe no schedule.
    pub fn is_lower_bound(self) -> bool {
        matches!(self, TheoremId::T6_6 | TheoremId::L1 | TheoremId::I3)
    }

    /// The predicted exponent of phi in the bound: 1 (5.4/H.1), 1 - 1/k (I.1, K.1, L.1, I.3),
    /// 1 - 2/(k+1) (J.1), 1 - 1/(2k-1) (N.1). At k = inf every exponent is 1 (Corollary 6.7).
    pub fn phi_exponent(self, k: f64) -> f64 {
        match self.full_version() {
            TheoremId::H1 => 1.0,
            TheoremId::I1 | TheoremId::K1 | TheoremId::L1 | TheoremId::I3 => 1.0 - 1.0 / k,
            TheoremId::J1 => 1.0 - 2.0 / (k + 1.0),
            TheoremId::N1 => 1.0 - 1.0 / (2.0 * k - 1.0),
            _ => unreachable!("full_version maps every id to an Appendix version"),
        }
    }

    /// The exponent of phi in the schedule's clip norm tau(phi) at T = phi^-2 (psi = 1/T + phi^2
    /// = 2 phi^2): -2/(k+1) for J.1 (tau ~ psi^(-1/(k+1)), choice before Eq. 69), -1/k for I.1
    /// (psi^(-1/(2k)), before Eq. 59) and K.1 (Eq. 87), -1/(2k-1) for N.1 (psi^(-1/(2(2k-1))),
    /// before Eq. 145). None for H.1 (its tau is read from the data) and the lower bounds (no
    /// schedule). Every one increases with k.
    pub fn tau_exponent(self, k: f64) -> Option<f64> {
        match self.full_version() {
            TheoremId::J1 => Some(-2.0 / (k + 1.0)),
            TheoremId::I1 | TheoremId::K1 => Some(-1.0 / k),
            TheoremId::N1 => Some(-1.0 / (2.0 * k - 1.0)),
            _ => None,
        }
    }
}

impl fmt::Display for TheoremId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

impl FromStr for TheoremId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let t = s
            .trim()
            .trim_start_matches("Thm")
            .trim()
            .to_ascii_uppercase();
        TheoremId::ALL
            .into_iter()
            .find(|id| id.label() == t)
            .ok_or_else(|| {
                Error::param(format!(
                    "unknown theorem '{s}'; expected one of 5.4, H.1, I.1, 6.2, J.1, 6.5, K.1, \
                     6.8, N.1, 6.6, L.1, I.3"
                ))
            })
    }
}

/// Everything a theorem may need. Only what the chosen theorem uses must be present; the
/// schedule needs fewer inputs than the bound, and a bound whose problem constants are missing
/// is reported as absent (with the missing names) rather than guessed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TheoryParams {
    /// Moment order k > 1 of Assumption 6.1 (`f64::INFINITY` for uniform Lipschitzness).
    pub k: Option<f64>,
    /// G of Assumption 6.1.
    pub g: Option<f64>,
    /// Confidence parameter gamma in (0, 1) (I.1, J.1, N.1).
    pub gamma: Option<f64>,
    /// The free constant C > 0 in eta (H.1, J.1, K.1, N.1).
    pub c: Option<f64>,
    /// ||w0 - w*||.
    pub dist0: Option<f64>,
    /// Diameter D_W of the constraint set (I.1).
    pub d_w: Option<f64>,
    /// D of Assumption 6.4 (K.1).
    pub d_sharp: Option<f64>,
    /// Smoothness constant L (N.1).
    pub l: Option<f64>,
    /// f(w0) - min f (N.1).
    pub f_gap: Option<f64>,
    /// G_n, the largest per-sample Lipschitz constant (H.1).
    pub g_n: Option<f64>,
    /// alpha(tau) of Definition 5.3 (H.1), >= 1.
    pub alpha: Option<f64>,
    /// Delta(w*) of Definition 5.2 (H.1), >= 0.
    pub delta_star: Option<f64>,
    /// Clip norm tau (H.1 holds for any tau in (0, G_n]).
    pub tau: Option<f64>,
    /// Number of steps T (full versions only; the main-text theorems fix T).
    pub steps: Option<f64>,
    /// The unstated absolute constant c_L of the Omega(.) in L.1 / I.3.
    pub c_lower: Option<f64>,
}

/// Upper or lower bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundKind {
    /// OR(T) <= bound, for DP-SGD with the prescribed schedule.
    Upper,
    /// E[f(w_A)] - f(w*) >= bound, for every (epsilon, delta)-DP algorithm, on a hard instance.
    Lower,
}

/// A theorem's prescription at one phi.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prescription {
    /// The theorem asked for.
    pub theorem: TheoremId,
    /// The Appendix version its formulas come from.
    pub full_version: TheoremId,
    /// Upper or lower bound.
    pub kind: BoundKind,
    /// What the bound bounds.
    pub risk: String,
    /// phi of Eq. (1).
    pub phi: f64,
    /// k of Assumption 6.1 ("inf" in JSON for k = infinity).
    #[serde(with = "crate::k_serde")]
    pub k: f64,
    /// T as the formula writes it (real); None for lower bounds.
    pub steps_formula: Option<f64>,
    /// T rounded up to an integer; psi, tau, eta and the bound use this T.
    pub steps: Option<u64>,
    /// psi = 1/T + phi^2.
    pub psi: Option<f64>,
    /// Clip norm tau.
    pub tau: Option<f64>,
    /// Constant step size eta.
    pub eta: Option<f64>,
    /// The bound (sum of `terms`), or None when a problem constant is missing.
    pub bound: Option<f64>,
    /// The bound's additive terms, each with its equation.
    pub terms: Vec<Term>,
    /// Inputs the bound still needs, if any.
    pub missing: Vec<String>,
    /// Probability over the random data set with which the bound holds.
    pub probability: f64,
    /// The predicted exponent of phi.
    pub phi_exponent: f64,
    /// Assumptions, conventions and caveats.
    pub notes: Vec<String>,
}

/// The DP-SGD schedule of an upper-bound prescription, all present.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunSchedule {
    /// T.
    pub steps: u64,
    /// psi = 1/T + phi^2.
    pub psi: f64,
    /// Clip norm tau.
    pub tau: f64,
    /// Step size eta.
    pub eta: f64,
}

impl Prescription {
    /// (T, psi, tau, eta); an error for a lower bound, which prescribes no schedule.
    pub fn run_schedule(&self) -> Result<RunSchedule> {
        match (self.steps, self.psi, self.tau, self.eta) {
            (Some(steps), Some(psi), Some(tau), Some(eta)) => Ok(RunSchedule {
                steps,
                psi,
                tau,
                eta,
            }),
            _ => Err(Error::param(format!(
                "Thm {} is a lower bound and prescribes no DP-SGD schedule",
                self.theorem
            ))),
        }
    }

    /// Algorithm 1 configured as this theorem prescribes: T steps, constant eta and tau, noise
    /// of Thm 3.4 with the (nu, epsilon, delta) that produced phi, and the random iterate
    /// (line 7). `privacy` must give back this prescription's phi through Eq. (1), so that the
    /// noise and the schedule describe the same run. `projection` is W (an L2 ball of radius
    /// D_W / 2 for Thm I.1; none for the unconstrained theorems).
    pub fn dpsgd_config(
        &self,
        privacy: &PhiInputs,
        batch_size: f64,
        projection: Projection,
    ) -> Result<DpSgdConfig> {
        let RunSchedule {
            steps, tau, eta, ..
        } = self.run_schedule()?;
        let ph = phi_of(privacy)?;
        if (ph - self.phi).abs() > 1e-12 * self.phi {
            return Err(Error::param(format!(
                "the privacy parameters give phi = {ph}, but the schedule was computed for phi = {}",
                self.phi
            )));
        }
        check_positive("batch size b", batch_size)?;
        if batch_size < 1.0 || batch_size > privacy.n {
            return Err(Error::param(format!(
                "the expected batch size b must lie in [1, n = {}] (Eq. 39 uses b >= 1), but is {batch_size}",
                privacy.n
            )));
        }
        Ok(DpSgdConfig::new(
            steps as usize,
            batch_size,
            StepSchedule::Constant(eta),
            StepSchedule::Constant(tau),
            NoiseSpec::Theorem34 {
                nu: privacy.nu,
                epsilon: privacy.epsilon,
                delta: privacy.delta,
            },
        )
        .with_projection(projection)
        .with_output(OutputRule::RandomIterate))
    }
}

/// One theorem's schedule and bound, validated: the seam between the paper and a DP-SGD run.
pub trait Schedule {
    /// Which theorem.
    fn theorem(&self) -> TheoremId;
    /// T as written (before rounding).
    fn steps(&self, phi: f64) -> f64;
    /// tau at psi.
    fn clip_norm(&self, psi: f64) -> f64;
    /// eta at (T, psi) for clip norm tau (the theorem's is `clip_norm(psi)`; a [`ClipNorm::Fixed`]
    /// ablation passes its own), with the `psi` of this T.
    fn step_size(&self, steps: f64, psi: f64, tau: f64) -> f64;
    /// The bound's terms at (T, phi), or the names of the missing problem constants.
    fn bound_terms(&self, steps: f64, phi: f64) -> std::result::Result<Vec<Term>, Vec<String>>;
    /// Probability over the data set.
    fn probability(&self) -> f64;
    /// Predicted exponent of phi.
    fn phi_exponent(&self) -> f64;
}

/// The probability over the data set with which a bound holds: `finite_k` from Markov's
/// inequality on G_Z^k, and 1 at k = inf, where every G_i <= G surely.
fn markov_probability(k: f64, finite_k: f64) -> f64 {
    if k.is_infinite() { 1.0 } else { finite_k }
}

/// A required input of theorem `th`, by its paper name ([`TheoryParams::slot`]).
fn need(name: &str, v: Option<f64>, th: TheoremId) -> Result<f64> {
    v.ok_or_else(|| Error::Missing {
        what: format!("Thm {th}"),
        names: vec![name.to_string()],
    })
}

fn check_k(k: f64) -> Result<f64> {
    if k > 1.0 && !k.is_nan() {
        Ok(k)
    } else {
        Err(Error::param(format!(
            "k must be > 1 (Assumption 6.1; use inf for uniform Lipschitzness), but is {k}"
        )))
    }
}

fn check_nonneg(name: &str, x: f64) -> Result<f64> {
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(Error::param(format!(
            "{name} must be finite and >= 0, but is {x}"
        )))
    }
}

/// Optional problem constant, validated if present, recorded as missing otherwise.
fn opt(
    name: &str,
    v: Option<f64>,
    check: fn(&str, f64) -> Result<f64>,
    missing: &mut Vec<String>,
) -> Result<Option<f64>> {
    match v {
        Some(x) => check(name, x).map(Some),
        None => {
            missing.push(name.to_string());
            Ok(None)
        }
    }
}

fn missing_or(
    terms: Vec<Term>,
    missing: Vec<String>,
) -> std::result::Result<Vec<Term>, Vec<String>> {
    if missing.is_empty() {
        Ok(terms)
    } else {
        Err(missing)
    }
}

/// k of Assumption 6.1, required and > 1.
fn k_of(p: &TheoryParams, id: TheoremId) -> Result<f64> {
    check_k(need("k", p.k, id)?)
}

/// gamma, required and in (0, 1).
fn gamma_of(p: &TheoryParams, id: TheoremId) -> Result<f64> {
    check_open("gamma", need("gamma", p.gamma, id)?, 0.0, 1.0)
}

/// G of Assumption 6.1, required and > 0.
fn g_of(p: &TheoryParams, id: TheoremId) -> Result<f64> {
    check_positive("G", need("G", p.g, id)?)
}

/// The free constant C of eta, required and > 0.
fn c_of(p: &TheoryParams, id: TheoremId) -> Result<f64> {
    check_positive("C", need("C", p.c, id)?)
}

/// Validates `p` for upper-bound theorem `id` into its schedule.
pub fn build(id: TheoremId, p: &TheoryParams) -> Result<Box<dyn Schedule>> {
    let mut missing = Vec::new();
    let s: Box<dyn Schedule> = match id.full_version() {
        TheoremId::H1 => Box::new(ThmH1::new(id, p, &mut missing)?),
        TheoremId::I1 => Box::new(ThmI1::new(id, p)?),
        TheoremId::J1 => Box::new(ThmJ1::new(id, p, &mut missing)?),
        TheoremId::K1 => Box::new(ThmK1::new(id, p, &mut missing)?),
        TheoremId::N1 => Box::new(ThmN1::new(id, p, &mut missing)?),
        _ => {
            return Err(Error::param(format!(
                "Thm {id} is a lower bound and prescribes no schedule"
            )));
        }
    };
    Ok(s)
}

/// Rounds T up to an integer, treating values within 1e-9 relative of an integer as that
/// integer (so that T = phi^-2 = 10000.000000000002 stays 10000).
pub fn round_steps(t: f64) -> u64 {
    let r = t.round();
    if (t - r).abs() <= 1e-9 * t.max(1.0) {
        r as u64
    } else {
        t.ceil() as u64
    }
}

fn common_notes(id: TheoremId, k: f64) -> Vec<String> {
    let mut notes = vec![
        "privacy via Thm 3.4 (sigma_n^2 = nu T log(1/delta) tau^2 / (n^2 eps^2)), which needs \
         eps < O(b^2 T / n^2) with an unstated constant: not checked here"
            .to_string(),
    ];
    if id.fixes_steps() && id != TheoremId::T5_4 {
        notes.push(format!(
            "Thm {id} states tau and eta only up to O(.); the exact values are those of Thm {}",
            id.full_version()
        ));
    }
    if k.is_infinite() && id.full_version() != TheoremId::H1 {
        notes.push(
            "k = inf (uniform Lipschitzness, Corollary 6.7): G_Z <= G holds surely, so the \
             Markov step is not needed and the bound holds with probability 1"
                .to_string(),
        );
    }
    notes
}

/// The prescription of theorem `id` at `phi` (0 < phi < 1), with the inputs in `p`.
pub fn prescribe(id: TheoremId, phi: f64, p: &TheoryParams) -> Result<Prescription> {
    prescribe_with_clip(id, phi, p, ClipNorm::Theorem)
}

/// The clip norm a run uses: the theorem's tau, or a fixed one (an ablation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClipNorm {
    /// The theorem's tau (`Schedule::clip_norm`).
    Theorem,
    /// A fixed tau that does not follow phi: the theorem's eta formula is applied at this tau,
    /// and the theorem's bound does not apply (the prescription has none).
    Fixed(f64),
}

/// [`prescribe`] with the clip rule: under [`ClipNorm::Fixed`] tau is the given value, eta is the
/// theorem's formula at that tau (J.1/K.1/H.1: Eq. before 69 / 95 / 42; I.1 with C = D_W; N.1:
/// before Eq. 144), and `bound` is None. T and psi do not depend on tau.
pub fn prescribe_with_clip(
    id: TheoremId,
    phi: f64,
    p: &TheoryParams,
    clip: ClipNorm,
) -> Result<Prescription> {
    check_open("phi", phi, 0.0, 1.0)
        .map_err(|e| Error::param(format!("{e} (every theorem assumes phi < 1, Eq. 1)")))?;
    if id.is_lower_bound() {
        return lower::prescribe_lower(id, phi, p);
    }
    let s = build(id, p)?;
    let k = if id.full_version() == TheoremId::H1 {
        p.k.map(check_k).transpose()?.unwrap_or(f64::INFINITY)
    } else {
        p.k.unwrap_or(f64::NAN)
    };
    let steps_formula = match p.steps {
        Some(t) if id.fixes_steps() => {
            return Err(Error::param(format!(
                "Thm {id} fixes T (got --steps {t}); use Thm {} for another T",
                id.full_version()
            )));
        }
        Some(t) => {
            if !(t.is_finite() && t >= 1.0) {
                return Err(Error::param(format!("T must be >= 1, but is {t}")));
            }
            t
        }
        None => s.steps(phi),
    };
    if id.full_version() == TheoremId::K1 {
        k1::check_steps(steps_formula, phi)?;
    }
    // T derived from a float is an integer count: refuse instead of saturating at u64::MAX.
    let name = match p.steps {
        Some(_) => "T".to_string(),
        None => format!("T (from phi = {})", crate::error::fmt_num(phi)),
    };
    crate::limits::to_count(&name, steps_formula.ceil())?;
    let steps = round_steps(steps_formula);
    let t = steps as f64;
    let ps = psi(t, phi);
    let (bound, terms, missing) = match (clip, s.bound_terms(t, phi)) {
        (ClipNorm::Fixed(_), _) => (None, Vec::new(), Vec::new()),
        (ClipNorm::Theorem, Ok(terms)) => (Some(bounds::total(&terms)), terms, Vec::new()),
        (ClipNorm::Theorem, Err(m)) => (None, Vec::new(), m),
    };
    let tau = match clip {
        ClipNorm::Theorem => s.clip_norm(ps),
        ClipNorm::Fixed(tau) => tau,
    };
    let mut notes = common_notes(id, k);
    if id.full_version() == TheoremId::H1 {
        notes.extend(h1::notes(p, s.clip_norm(ps), ps));
    }
    if id.full_version() == TheoremId::K1 {
        notes.push(k1::ASSUMPTION_6_4.to_string());
    }
    let risk = if id.full_version() == TheoremId::N1 {
        n1::RISK
    } else {
        "E[f(w_priv)] - f(w*) (Definition 3.5 (i))"
    };
    Ok(Prescription {
        theorem: id,
        full_version: id.full_version(),
        kind: BoundKind::Upper,
        risk: risk.to_string(),
        phi,
        k,
        steps_formula: Some(steps_formula),
        steps: Some(steps),
        psi: Some(ps),
        tau: Some(tau),
        eta: Some(s.step_size(t, ps, tau)),
        bound,
        terms,
        missing,
        probability: s.probability(),
        phi_exponent: s.phi_exponent(),
        notes,
    })
}

fn s_c(p: &TheoryParams) -> f64 {
    p.c.unwrap_or(f64::NAN)
}

/// [`prescribe`], but a missing-input error ([`Error::Missing`]) lists every missing input at
/// once, not only the first: the CLI and the Python module both report it this way.
pub fn prescribe_listing_missing(
    id: TheoremId,
    phi: f64,
    p: &TheoryParams,
) -> Result<Prescription> {
    prescribe(id, phi, p).map_err(|e| all_missing(id, phi, p, e))
}

/// When an input is missing, finds every other missing one too (by filling each in with a
/// placeholder and asking again), so that one error lists them all.
fn all_missing(id: TheoremId, phi_v: f64, params: &TheoryParams, first: Error) -> Error {
    let Error::Missing { what, names } = &first else {
        return first;
    };
    let mut names = names.clone();
    let mut p = params.clone();
    for _ in 0..TheoryParams::NAMES.len() {
        for n in &names {
            let Some(slot) = p.slot(n) else {
                return first;
            };
            // Any value in the input's domain: only which inputs are missing matters here.
            slot.get_or_insert(match n.as_str() {
                "k" => 2.0,
                "gamma" => 0.5,
                _ => 1.0,
            });
        }
        match prescribe(id, phi_v, &p) {
            Err(Error::Missing { names: more, .. }) if more.iter().any(|m| !names.contains(m)) => {
                let new: Vec<String> = more.into_iter().filter(|m| !names.contains(m)).collect();
                names.extend(new);
            }
            _ => break,
        }
    }
    Error::Missing {
        what: what.clone(),
        names,
    }
}

impl TheoryParams {
    /// The inputs' names as the paper writes them, which the CLI's flags and Python's keywords
    /// also use: k, G, gamma, C, dist0, D_W, D, L, f_gap, G_n, alpha, Delta, tau, T, c_lower.
    pub const NAMES: [&'static str; 15] = [
        "k", "G", "gamma", "C", "dist0", "D_W", "D", "L", "f_gap", "G_n", "alpha", "Delta", "tau",
        "T", "c_lower",
    ];

    /// The field of the input named `name` (one of [`TheoryParams::NAMES`]).
    pub fn slot(&mut self, name: &str) -> Option<&mut Option<f64>> {
        Some(match name {
            "k" => &mut self.k,
            "G" => &mut self.g,
            "gamma" => &mut self.gamma,
            "C" => &mut self.c,
            "dist0" => &mut self.dist0,
            "D_W" => &mut self.d_w,
            "D" => &mut self.d_sharp,
            "L" => &mut self.l,
            "f_gap" => &mut self.f_gap,
            "G_n" => &mut self.g_n,
            "alpha" => &mut self.alpha,
            "Delta" => &mut self.delta_star,
            "tau" => &mut self.tau,
            "T" => &mut self.steps,
            "c_lower" => &mut self.c_lower,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests;
