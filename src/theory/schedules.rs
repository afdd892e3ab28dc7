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

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

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

impl Prescription {
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
        let (Some(steps), Some(tau), Some(eta)) = (self.steps, self.tau, self.eta) else {
            return Err(Error::param(format!(
                "Thm {} is a lower bound and prescribes no DP-SGD schedule",
                self.theorem
            )));
        };
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
        Ok(DpSgdConfig {
            steps: steps as usize,
            batch_size,
            learning_rate: StepSchedule::Constant(eta),
            clip_norm: StepSchedule::Constant(tau),
            noise: NoiseSpec::Theorem34 {
                nu: privacy.nu,
                epsilon: privacy.epsilon,
                delta: privacy.delta,
            },
            projection,
            output: OutputRule::RandomIterate,
            init: Default::default(),
        })
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
    /// eta at (T, psi), with tau = `clip_norm(psi)`.
    fn step_size(&self, steps: f64, psi: f64) -> f64;
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

fn need(name: &str, v: Option<f64>, th: TheoremId) -> Result<f64> {
    v.ok_or_else(|| {
        let flag = name
            .split_whitespace()
            .next()
            .unwrap_or(name)
            .replace('_', "-");
        Error::param(format!(
            "Thm {th} needs {name}, but it was not given (CLI: --{flag})"
        ))
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

/// Thm H.1 (and 5.4).
#[derive(Debug, Clone)]
pub struct ThmH1 {
    id: TheoremId,
    c: f64,
    tau: f64,
    dist0: Option<f64>,
    g_n: Option<f64>,
    alpha: Option<f64>,
    delta_star: Option<f64>,
}

/// Thm I.1.
#[derive(Debug, Clone)]
pub struct ThmI1 {
    k: f64,
    g: f64,
    gamma: f64,
    d_w: f64,
}

/// Thm J.1 (and 6.2).
#[derive(Debug, Clone)]
pub struct ThmJ1 {
    id: TheoremId,
    k: f64,
    g: f64,
    gamma: f64,
    c: f64,
    dist0: Option<f64>,
}

/// Thm K.1 (and 6.5).
#[derive(Debug, Clone)]
pub struct ThmK1 {
    id: TheoremId,
    k: f64,
    g: f64,
    c: f64,
    dist0: Option<f64>,
    d_sharp: Option<f64>,
}

/// Thm N.1 (and 6.8).
#[derive(Debug, Clone)]
pub struct ThmN1 {
    id: TheoremId,
    k: f64,
    g: f64,
    gamma: f64,
    c: f64,
    l: f64,
    f_gap: Option<f64>,
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

impl Schedule for ThmH1 {
    fn theorem(&self) -> TheoremId {
        self.id
    }
    /// Thm 5.4: T = 1/(3 phi^2).
    fn steps(&self, phi: f64) -> f64 {
        bounds::thm54_steps(phi)
    }
    /// Thm H.1 holds for any tau in (0, G_n]; Remark 5.6 recommends tau <= G_1.
    fn clip_norm(&self, _psi: f64) -> f64 {
        self.tau
    }
    fn step_size(&self, steps: f64, psi: f64) -> f64 {
        bounds::eta_convex(self.c, steps, self.tau, psi)
    }
    fn bound_terms(&self, steps: f64, phi: f64) -> std::result::Result<Vec<Term>, Vec<String>> {
        let ps = psi(steps, phi);
        let mut missing = Vec::new();
        for (n, v) in [
            ("dist0", self.dist0),
            ("G_n", self.g_n),
            ("alpha", self.alpha),
            ("Delta", self.delta_star),
        ] {
            if v.is_none() {
                missing.push(n.to_string());
            }
        }
        if !missing.is_empty() {
            return Err(missing);
        }
        Ok(bounds::h1_risk_bound(
            self.dist0.unwrap(),
            self.c,
            self.g_n.unwrap(),
            ps,
            self.alpha.unwrap(),
            self.tau,
            self.delta_star.unwrap(),
        ))
    }
    /// In expectation over Algorithm 1; no event over the data set.
    fn probability(&self) -> f64 {
        1.0
    }
    fn phi_exponent(&self) -> f64 {
        1.0
    }
}

impl Schedule for ThmI1 {
    fn theorem(&self) -> TheoremId {
        TheoremId::I1
    }
    /// Thm I.1, "if we set T = 1/phi^2".
    fn steps(&self, phi: f64) -> f64 {
        bounds::main_text_steps(phi)
    }
    fn clip_norm(&self, psi: f64) -> f64 {
        bounds::i1_tau(self.g, self.gamma, self.k, psi)
    }
    /// Thm I.1: eta = D_W / (T tau) psi^(-1/2).
    fn step_size(&self, steps: f64, psi: f64) -> f64 {
        bounds::eta_convex(self.d_w, steps, self.clip_norm(psi), psi)
    }
    fn bound_terms(&self, steps: f64, phi: f64) -> std::result::Result<Vec<Term>, Vec<String>> {
        Ok(bounds::i1_risk_bound(
            self.d_w,
            self.g,
            self.gamma,
            self.k,
            psi(steps, phi),
        ))
    }
    /// 1 - gamma (Markov on G_Z^k, before Eq. 60); 1 at k = inf, where G_Z <= G surely.
    fn probability(&self) -> f64 {
        markov_probability(self.k, 1.0 - self.gamma)
    }
    fn phi_exponent(&self) -> f64 {
        TheoremId::I1.phi_exponent(self.k)
    }
}

impl Schedule for ThmJ1 {
    fn theorem(&self) -> TheoremId {
        self.id
    }
    /// Thm 6.2: T = phi^-2.
    fn steps(&self, phi: f64) -> f64 {
        bounds::main_text_steps(phi)
    }
    fn clip_norm(&self, psi: f64) -> f64 {
        bounds::j1_tau(self.g, self.gamma, self.k, psi)
    }
    fn step_size(&self, steps: f64, psi: f64) -> f64 {
        bounds::eta_convex(self.c, steps, self.clip_norm(psi), psi)
    }
    fn bound_terms(&self, steps: f64, phi: f64) -> std::result::Result<Vec<Term>, Vec<String>> {
        match self.dist0 {
            Some(d0) => Ok(bounds::j1_risk_bound(
                self.g,
                self.gamma,
                self.k,
                d0,
                self.c,
                psi(steps, phi),
            )),
            None => Err(vec!["dist0".into()]),
        }
    }
    /// 1 - gamma (Markov, before Eq. 70); 1 at k = inf.
    fn probability(&self) -> f64 {
        markov_probability(self.k, 1.0 - self.gamma)
    }
    fn phi_exponent(&self) -> f64 {
        TheoremId::J1.phi_exponent(self.k)
    }
}

impl Schedule for ThmK1 {
    fn theorem(&self) -> TheoremId {
        self.id
    }
    /// Thm 6.5: T = phi^-2 (K.1 allows any T >= phi^-2).
    fn steps(&self, phi: f64) -> f64 {
        bounds::main_text_steps(phi)
    }
    fn clip_norm(&self, psi: f64) -> f64 {
        bounds::k1_tau(self.g, self.k, psi)
    }
    fn step_size(&self, steps: f64, psi: f64) -> f64 {
        bounds::eta_convex(self.c, steps, self.clip_norm(psi), psi)
    }
    fn bound_terms(&self, steps: f64, phi: f64) -> std::result::Result<Vec<Term>, Vec<String>> {
        let mut missing = Vec::new();
        if self.dist0.is_none() {
            missing.push("dist0".to_string());
        }
        if self.d_sharp.is_none() {
            missing.push("D".to_string());
        }
        if !missing.is_empty() {
            return Err(missing);
        }
        missing_or(
            bounds::k1_risk_bound(
                self.g,
                self.k,
                self.dist0.unwrap(),
                self.c,
                self.d_sharp.unwrap(),
                psi(steps, phi),
                phi,
            ),
            missing,
        )
    }
    /// 3/4 (Markov on G_Z^k <= 4 G^k, before Eq. 88); 1 at k = inf.
    fn probability(&self) -> f64 {
        markov_probability(self.k, 0.75)
    }
    fn phi_exponent(&self) -> f64 {
        TheoremId::K1.phi_exponent(self.k)
    }
}

impl Schedule for ThmN1 {
    fn theorem(&self) -> TheoremId {
        self.id
    }
    /// Thm 6.8: T = phi^-2.
    fn steps(&self, phi: f64) -> f64 {
        bounds::main_text_steps(phi)
    }
    fn clip_norm(&self, psi: f64) -> f64 {
        bounds::n1_tau(self.g, self.gamma, self.c, self.l, self.k, psi)
    }
    fn step_size(&self, steps: f64, psi: f64) -> f64 {
        bounds::n1_eta(self.c, steps, self.clip_norm(psi), self.l, psi)
    }
    fn bound_terms(&self, steps: f64, phi: f64) -> std::result::Result<Vec<Term>, Vec<String>> {
        match self.f_gap {
            Some(fg) => Ok(bounds::n1_risk_bound(
                self.g,
                self.gamma,
                self.c,
                self.l,
                self.k,
                fg,
                psi(steps, phi),
            )),
            None => Err(vec!["f_gap".into()]),
        }
    }
    /// 1 - gamma (Markov, before Eq. 146); 1 at k = inf.
    fn probability(&self) -> f64 {
        markov_probability(self.k, 1.0 - self.gamma)
    }
    fn phi_exponent(&self) -> f64 {
        TheoremId::N1.phi_exponent(self.k)
    }
}

/// Validates `p` for upper-bound theorem `id` into its schedule.
pub fn build(id: TheoremId, p: &TheoryParams) -> Result<Box<dyn Schedule>> {
    let mut missing = Vec::new();
    let k_of = |p: &TheoryParams| -> Result<f64> { check_k(need("k", p.k, id)?) };
    let gamma_of = |p: &TheoryParams| -> Result<f64> {
        check_open("gamma", need("gamma", p.gamma, id)?, 0.0, 1.0)
    };
    let g_of = |p: &TheoryParams| -> Result<f64> { check_positive("G", need("G", p.g, id)?) };
    let c_of = |p: &TheoryParams| -> Result<f64> { check_positive("C", need("C", p.c, id)?) };
    let s: Box<dyn Schedule> = match id.full_version() {
        TheoremId::H1 => {
            let tau = check_positive(
                "tau",
                need("tau (H.1 holds for any tau in (0, G_n])", p.tau, id)?,
            )?;
            let g_n = opt("G_n", p.g_n, check_positive, &mut missing)?;
            if let Some(gn) = g_n
                && tau > gn
            {
                return Err(Error::param(format!(
                    "Thm {id} needs tau in (0, G_n] = (0, {gn}], but tau is {tau}"
                )));
            }
            let alpha = p.alpha;
            if let Some(a) = alpha
                && !(a >= 1.0 && a.is_finite())
            {
                return Err(Error::param(format!(
                    "alpha(tau) is >= 1 by Definition 5.3 (i), but alpha is {a}"
                )));
            }
            Box::new(ThmH1 {
                id,
                c: c_of(p)?,
                tau,
                dist0: opt("dist0", p.dist0, check_nonneg, &mut missing)?,
                g_n,
                alpha,
                delta_star: opt("Delta", p.delta_star, check_nonneg, &mut missing)?,
            })
        }
        TheoremId::I1 => Box::new(ThmI1 {
            k: k_of(p)?,
            g: g_of(p)?,
            gamma: gamma_of(p)?,
            d_w: check_positive("D_W", need("D_W", p.d_w, id)?)?,
        }),
        TheoremId::J1 => Box::new(ThmJ1 {
            id,
            k: k_of(p)?,
            g: g_of(p)?,
            gamma: gamma_of(p)?,
            c: c_of(p)?,
            dist0: opt("dist0", p.dist0, check_nonneg, &mut missing)?,
        }),
        TheoremId::K1 => Box::new(ThmK1 {
            id,
            k: k_of(p)?,
            g: g_of(p)?,
            c: c_of(p)?,
            dist0: opt("dist0", p.dist0, check_nonneg, &mut missing)?,
            d_sharp: opt("D", p.d_sharp, check_nonneg, &mut missing)?,
        }),
        TheoremId::N1 => Box::new(ThmN1 {
            id,
            k: k_of(p)?,
            g: g_of(p)?,
            gamma: gamma_of(p)?,
            c: c_of(p)?,
            l: check_positive("L", need("L", p.l, id)?)?,
            f_gap: opt("f_gap", p.f_gap, check_nonneg, &mut missing)?,
        }),
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
    check_open("phi", phi, 0.0, 1.0)
        .map_err(|e| Error::param(format!("{e} (every theorem assumes phi < 1, Eq. 1)")))?;
    if id.is_lower_bound() {
        return lower(id, phi, p);
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
                "Thm {id} fixes T (got --T {t}); use Thm {} for another T",
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
    if id.full_version() == TheoremId::K1
        && steps_formula < bounds::main_text_steps(phi) * (1.0 - 1e-12)
    {
        return Err(Error::param(format!(
            "Thm K.1 needs T >= phi^-2 = {}, but T is {steps_formula}",
            bounds::main_text_steps(phi)
        )));
    }
    let steps = round_steps(steps_formula);
    let t = steps as f64;
    let ps = psi(t, phi);
    let (bound, terms, missing) = match s.bound_terms(t, phi) {
        Ok(terms) => (Some(bounds::total(&terms)), terms, Vec::new()),
        Err(m) => (None, Vec::new(), m),
    };
    let mut notes = common_notes(id, k);
    if id.full_version() == TheoremId::H1 {
        notes.push(
            "Thm H.1 assumes Assumption 5.1 (finite G_1 < ... < G_n), so k plays no role (shown as inf)"
                .to_string(),
        );
        notes.push(
            "alpha(tau) from theory::estimate_alpha is an upper estimate of the infimum; a \
             bound evaluated with it can be smaller than the true bound"
                .to_string(),
        );
        notes.push(format!(
            "Thm H.1 (Eq. 43) also bounds the clipping-weighted risk by (D0^2/(2C) + C) tau \
             sqrt(psi){}",
            p.dist0
                .map(|d0| format!(
                    " = {:.6e}",
                    bounds::h1_weighted_risk_bound(d0, s_c(p), s.clip_norm(ps), ps)
                ))
                .unwrap_or_default()
        ));
    }
    if id.full_version() == TheoremId::K1 {
        notes.push(
            "needs Assumption 6.4: f(w) - f(w*) > 16 phi^(1-1/k) G ||w - w*|| whenever \
             ||w - w*|| > D (Eq. 6)"
                .to_string(),
        );
    }
    let risk = if id.full_version() == TheoremId::N1 {
        "E||grad f(w_priv)||^2 (Definition 3.5 (ii))"
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
        tau: Some(s.clip_norm(ps)),
        eta: Some(s.step_size(t, ps)),
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

fn lower(id: TheoremId, phi: f64, p: &TheoryParams) -> Result<Prescription> {
    let k = check_k(need("k", p.k, id)?)?;
    let mut missing = Vec::new();
    let g = opt("G", p.g, check_positive, &mut missing)?;
    let c_lower = opt("c_lower", p.c_lower, check_positive, &mut missing)?;
    let (bound, terms) = match (g, c_lower) {
        (Some(g), Some(c)) => {
            let t = bounds::lower_bound(c, g, k, phi);
            (Some(bounds::total(&t)), t)
        }
        _ => (None, Vec::new()),
    };
    let mut notes = vec![
        "lower bound for every (epsilon, delta)-DP algorithm on the hard instance of Appendix L \
         (Eq. 97; x = p^(-1/k) v with probability p, G = 3 sqrt(d/2)); needs delta < \
         exp(-epsilon^2) and phi = o(1)"
            .to_string(),
        "the paper states it as Omega(.): c_lower is that unstated absolute constant".to_string(),
    ];
    if id == TheoremId::I3 {
        notes.push(
            "Thm I.3: the same instance restricted to the unit ball ||w|| <= 1 (Appendix M)".into(),
        );
    }
    Ok(Prescription {
        theorem: id,
        full_version: id.full_version(),
        kind: BoundKind::Lower,
        risk: "E[f(w_A)] - f(w*) over the data set and the algorithm".to_string(),
        phi,
        k,
        steps_formula: None,
        steps: None,
        psi: None,
        tau: None,
        eta: None,
        bound,
        terms,
        missing,
        probability: 1.0,
        phi_exponent: id.phi_exponent(k),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(a: f64, b: f64) -> f64 {
        (a - b).abs() / b.abs().max(1e-300)
    }

    fn base() -> TheoryParams {
        TheoryParams {
            k: Some(3.0),
            g: Some(1.0),
            gamma: Some(0.5),
            c: Some(1.0),
            dist0: Some(1.0),
            ..Default::default()
        }
    }

    #[test]
    fn j1_hand_computed() {
        // phi = 0.01, T = phi^-2 = 10000, psi = 1e-4 + 1e-4 = 2e-4.
        // tau = G gamma^(-1/3) psi^(-1/4) = 1.259921050 * 8.408964153 = 10.59463094.
        // eta = C / (T tau sqrt(psi)) = 1 / (1e4 * 10.59463094 * 0.0141421356) = 6.674199e-4.
        // bound: G/gamma^(1/3) = 1.259921; e = 1 - 2/4 = 1/2;
        //   term1 = 1.259921 * 0.5 * (1 + 4) * (2e-4)^(1/4) = 1.259921 * 2.5 * 0.1189207 = 0.3745768
        //   term2 = 1.259921 * (1 + 1) * (2e-4)^(1/2) = 1.259921 * 2 * 0.01414214 = 0.0356359
        //   total = 0.4102127; the T = 1/phi^2 form of Thm J.1 gives the same number.
        let p = prescribe(TheoremId::J1, 0.01, &base()).unwrap();
        assert_eq!(p.steps, Some(10_000));
        assert!(rel(p.psi.unwrap(), 2e-4) < 1e-12);
        assert!(rel(p.tau.unwrap(), 10.594630943592952) < 1e-12);
        assert!(rel(p.eta.unwrap(), 6.674199270850172e-4) < 1e-12);
        assert!(rel(p.terms[0].value, 0.3745767692191703) < 1e-12);
        assert!(rel(p.terms[1].value, 0.03563594872561357) < 1e-12);
        assert!(rel(p.bound.unwrap(), 0.41021271794478387) < 1e-12);
        assert_eq!(p.probability, 0.5);
        assert!(rel(p.phi_exponent, 0.5) < 1e-15);
        // Thm 6.2 is J.1 at T = phi^-2; the main-text form 2^(-1/2-1/(k+1)) ... agrees.
        let k = 3.0f64;
        let e = 1.0 - 2.0 / (k + 1.0);
        let s = 0.5f64.powf(-1.0 / k);
        let main = s
            * ((1.0 + 4.0) / 2f64.powf(0.5 + 1.0 / (k + 1.0)) * 0.01f64.powf(e)
                + 2f64.powf(e) * 2.0 * 0.01f64.powf(2.0 * e));
        let p62 = prescribe(TheoremId::T6_2, 0.01, &base()).unwrap();
        assert!(rel(p62.bound.unwrap(), main) < 1e-12);
    }

    #[test]
    fn h1_and_thm54_hand_computed() {
        // phi = 0.01: T = 1/(3 phi^2) = 3333.33 -> 3334; psi = 1/3334 + 1e-4 = 3.99940012e-4.
        // tau = 0.5, C = 1, D0 = 2, G_n = 2, alpha = 1.5, Delta = 0.1.
        // (A) = (4/2 + 1) * 2 * sqrt(psi) / 1.5 = 4 * 0.0199985 = 0.0799940
        // (B) = (2/(0.5*1.5) - 1) * 0.1 = (8/3 - 1) * 0.1 = 0.1666667
        // eta = 1 / (3334 * 0.5 * sqrt(psi)) = 0.0299963 (Thm 5.4's 3 C phi / (2 tau) = 0.03 at
        // the unrounded T).
        let p = TheoryParams {
            c: Some(1.0),
            tau: Some(0.5),
            dist0: Some(2.0),
            g_n: Some(2.0),
            alpha: Some(1.5),
            delta_star: Some(0.1),
            ..Default::default()
        };
        let r = prescribe(TheoremId::T5_4, 0.01, &p).unwrap();
        assert_eq!(r.steps, Some(3334));
        assert!(rel(r.steps_formula.unwrap(), 3333.333333333333) < 1e-12);
        assert!(rel(r.terms[0].value, 0.07999400097483315) < 1e-12);
        assert!(rel(r.terms[1].value, 1.0 / 6.0) < 1e-12);
        assert!(rel(r.eta.unwrap(), 0.02999625055303478) < 1e-12);
        assert_eq!(r.phi_exponent, 1.0);
        // At the unrounded T the bound is Eq. (5): (D0^2/C + 2C) G_n phi / alpha + (B).
        let ps = psi(bounds::thm54_steps(0.01), 0.01);
        let eq5 = bounds::total(&bounds::h1_risk_bound(2.0, 1.0, 2.0, ps, 1.5, 0.5, 0.1));
        assert!(rel(eq5, (4.0 + 2.0) * 2.0 * 0.01 / 1.5 + 1.0 / 6.0) < 1e-12);
        assert!(
            rel(
                bounds::eta_convex(1.0, bounds::thm54_steps(0.01), 0.5, ps),
                0.03
            ) < 1e-12
        );
    }

    #[test]
    fn i1_hand_computed() {
        // k = 2, G = 1, gamma = 0.1, D_W = 2, phi = 0.01, T = 1e4, psi = 2e-4.
        // tau = 0.1^(-1/2) (2e-4)^(-1/4) = 3.16227766 * 8.40896415 = 26.5914795
        // bound = 5 * 2 / (2 * 0.1^(1/2)) * (2e-4)^(1/4) = 15.8113883 * 0.1189207 = 1.8803015,
        // equal to Thm I.1's T = 1/phi^2 form 5 D_W G / (2^((1+1/k)/2) gamma^(1/k)) phi^(1-1/k).
        let p = TheoryParams {
            k: Some(2.0),
            g: Some(1.0),
            gamma: Some(0.1),
            d_w: Some(2.0),
            ..Default::default()
        };
        let r = prescribe(TheoremId::I1, 0.01, &p).unwrap();
        assert!(rel(r.tau.unwrap(), 26.59147948472494) < 1e-12);
        assert!(rel(r.eta.unwrap(), 5.318295896944989e-4) < 1e-12);
        assert!(rel(r.bound.unwrap(), 1.880301546543197) < 1e-12);
        assert!(rel(r.bound.unwrap(), 1.8803015465431967) < 1e-12);
        assert!((r.probability - 0.9).abs() < 1e-15);
        assert_eq!(r.phi_exponent, 0.5);
    }

    #[test]
    fn k1_hand_computed() {
        // k = 4, G = 2, C = 0.5, D0 = 1, D = 3, phi = 0.01, psi = 2e-4.
        // tau = 2 (2e-4)^(-1/8) = 5.7996428; eta = 0.5/(1e4 * 5.7996428 * 0.01414214) = 6.096124e-4
        // term1 = 2 (1/0.5 + 2*0.5) (2e-4)^(3/8) = 2 * 3 * 0.0410097 = 0.2460580;
        // term2 = 16 * 2 * 0.01^(3/4) * 3 = 3.0357866; total 3.2818446 = the T = 1/phi^2 form G{2^((1-1/k)/2)(D0^2/C + 2C) + 16 D} phi^(1-1/k).
        let p = TheoryParams {
            k: Some(4.0),
            g: Some(2.0),
            c: Some(0.5),
            dist0: Some(1.0),
            d_sharp: Some(3.0),
            ..Default::default()
        };
        let r = prescribe(TheoremId::K1, 0.01, &p).unwrap();
        assert!(rel(r.tau.unwrap(), 5.799642800220422) < 1e-12);
        assert!(rel(r.eta.unwrap(), 6.096123550571711e-4) < 1e-12);
        assert!(rel(r.terms[0].value, 0.2460580051497359) < 1e-12);
        assert!(rel(r.terms[1].value, 3.035786553761644) < 1e-12);
        assert!(rel(r.bound.unwrap(), 3.28184455891138) < 1e-12);
        assert_eq!(r.probability, 0.75);
        assert_eq!(r.phi_exponent, 0.75);
        // K.1 needs T >= phi^-2.
        let mut q = p.clone();
        q.steps = Some(100.0);
        assert!(
            prescribe(TheoremId::K1, 0.01, &q)
                .unwrap_err()
                .to_string()
                .contains("T >= phi^-2")
        );
    }

    #[test]
    fn n1_hand_computed() {
        // k = 2 (a = 1/3), G = 1, gamma = 0.5, C = 1, L = 4, f(w0) - f* = 3, psi = 2e-4.
        // tau = (1/(0.25*1*2))^(1/3) (2e-4)^(-1/6) = 1.2599210 * 4.1352 = 5.2100073
        // eta = 1/(1e4 * 5.2100073 * 2 * 0.01414214) = 6.786044e-4
        // bound = 2^(2/3) * 1 / (0.5^(2/3)) * (3 + 6) * (2e-4)^(1/3) = 1.3262513
        let p = TheoryParams {
            k: Some(2.0),
            g: Some(1.0),
            gamma: Some(0.5),
            c: Some(1.0),
            l: Some(4.0),
            f_gap: Some(3.0),
            ..Default::default()
        };
        let r = prescribe(TheoremId::N1, 0.01, &p).unwrap();
        assert!(rel(r.tau.unwrap(), 5.210007309586913) < 1e-12);
        assert!(rel(r.eta.unwrap(), 6.786044041487266e-4) < 1e-12);
        assert!(rel(r.bound.unwrap(), 1.3262513395105386) < 1e-12);
        assert!(rel(r.phi_exponent, 2.0 / 3.0) < 1e-15);
    }

    #[test]
    fn exponents_match_the_paper() {
        let k = 3.0;
        assert_eq!(TheoremId::T5_4.phi_exponent(k), 1.0);
        assert!(rel(TheoremId::I1.phi_exponent(k), 2.0 / 3.0) < 1e-15);
        assert!(rel(TheoremId::J1.phi_exponent(k), 0.5) < 1e-15);
        assert!(rel(TheoremId::K1.phi_exponent(k), 2.0 / 3.0) < 1e-15);
        assert!(rel(TheoremId::N1.phi_exponent(k), 0.8) < 1e-15);
        assert!(rel(TheoremId::L1.phi_exponent(k), 2.0 / 3.0) < 1e-15);
        assert!(rel(TheoremId::I3.phi_exponent(k), 2.0 / 3.0) < 1e-15);
        for id in TheoremId::ALL {
            assert_eq!(id.phi_exponent(f64::INFINITY), 1.0, "{id}: Corollary 6.7");
        }
    }

    /// Corollary 6.7: k = inf is the limit of each finite-k prescription.
    #[test]
    fn k_infinity_is_the_limit() {
        let mk = |k: f64| TheoryParams {
            k: Some(k),
            g: Some(1.5),
            gamma: Some(0.3),
            c: Some(0.7),
            dist0: Some(2.0),
            d_w: Some(4.0),
            d_sharp: Some(1.0),
            l: Some(2.0),
            f_gap: Some(1.0),
            c_lower: Some(0.1),
            ..Default::default()
        };
        for id in [
            TheoremId::I1,
            TheoremId::J1,
            TheoremId::K1,
            TheoremId::N1,
            TheoremId::L1,
        ] {
            let inf = prescribe(id, 0.01, &mk(f64::INFINITY)).unwrap();
            let big = prescribe(id, 0.01, &mk(1e9)).unwrap();
            assert!(rel(big.bound.unwrap(), inf.bound.unwrap()) < 1e-6, "{id}");
            if let (Some(a), Some(b)) = (big.tau, inf.tau) {
                assert!(rel(a, b) < 1e-6, "{id}");
            }
            assert_eq!(inf.phi_exponent, 1.0);
        }
        // J.1 at k = inf, explicitly: tau = G, bound = G{(1/2)(D0^2/C + 4C) sqrt(psi) + (D0+C) psi}.
        let r = prescribe(TheoremId::J1, 0.01, &mk(f64::INFINITY)).unwrap();
        let ps = 2e-4f64;
        assert!(rel(r.tau.unwrap(), 1.5) < 1e-15);
        let want = 1.5 * (0.5 * (4.0 / 0.7 + 2.8) * ps.sqrt() + 2.7 * ps);
        assert!(rel(r.bound.unwrap(), want) < 1e-12);
        assert_eq!(r.probability, 1.0);
    }

    #[test]
    fn bad_parameters_are_errors_naming_the_value() {
        let mut p = base();
        p.k = Some(1.0);
        let e = prescribe(TheoremId::J1, 0.01, &p).unwrap_err().to_string();
        assert!(e.contains("k must be > 1") && e.contains("1"), "{e}");
        p = base();
        p.gamma = Some(1.5);
        assert!(
            prescribe(TheoremId::J1, 0.01, &p)
                .unwrap_err()
                .to_string()
                .contains("1.5")
        );
        let e = prescribe(TheoremId::J1, 1.2, &base())
            .unwrap_err()
            .to_string();
        assert!(e.contains("phi") && e.contains("1.2"), "{e}");
        p = base();
        p.steps = Some(50.0);
        assert!(
            prescribe(TheoremId::T6_2, 0.01, &p)
                .unwrap_err()
                .to_string()
                .contains("fixes T")
        );
        assert!("Q.7".parse::<TheoremId>().is_err());
        assert_eq!("j.1".parse::<TheoremId>().unwrap(), TheoremId::J1);
    }

    #[test]
    fn missing_problem_constants_leave_the_bound_absent() {
        let mut p = base();
        p.dist0 = None;
        let r = prescribe(TheoremId::J1, 0.01, &p).unwrap();
        assert!(r.bound.is_none() && r.tau.is_some());
        assert_eq!(r.missing, vec!["dist0".to_string()]);
        let l = prescribe(TheoremId::L1, 0.01, &base()).unwrap();
        assert!(l.bound.is_none() && l.missing.contains(&"c_lower".to_string()));
    }

    #[test]
    fn dpsgd_config_carries_the_schedule_and_checks_phi() {
        let inp = PhiInputs {
            n: 20_000.0,
            d: 5.0,
            epsilon: 2.0,
            delta: 1e-5,
            nu: 1.0,
        };
        let ph = phi_of(&inp).unwrap();
        let r = prescribe(TheoremId::J1, ph, &base()).unwrap();
        let cfg = r.dpsgd_config(&inp, 64.0, Projection::None).unwrap();
        assert_eq!(cfg.steps as u64, r.steps.unwrap());
        assert_eq!(cfg.clip_norm, StepSchedule::Constant(r.tau.unwrap()));
        assert_eq!(cfg.learning_rate, StepSchedule::Constant(r.eta.unwrap()));
        let alg = crate::dpsgd::DpSgd::new(cfg, 20_000, None);
        assert!(alg.is_ok(), "{:?}", alg.err());
        let mut other = inp;
        other.epsilon = 3.0;
        assert!(
            r.dpsgd_config(&other, 64.0, Projection::None)
                .unwrap_err()
                .to_string()
                .contains("phi")
        );
        assert!(r.dpsgd_config(&inp, 0.5, Projection::None).is_err());
    }

    /// The log-log slope of each bound in phi (main-text T) tends to the predicted exponent.
    /// H.1 with Delta(w*) = 0 (term (B) does not vanish with phi); J.1's second term is
    /// phi^(2e), so its slope is e plus an exactly computable correction of order phi^e.
    #[test]
    fn bound_slopes_match_predicted_exponents() {
        let p = |k: f64| TheoryParams {
            k: Some(k),
            g: Some(1.3),
            gamma: Some(0.2),
            c: Some(0.8),
            dist0: Some(1.5),
            d_w: Some(2.0),
            d_sharp: Some(0.5),
            l: Some(3.0),
            f_gap: Some(2.0),
            g_n: Some(4.0),
            alpha: Some(1.7),
            delta_star: Some(0.0),
            tau: Some(1.0),
            c_lower: Some(0.05),
            steps: None,
        };
        for k in [1.5, 2.0, 3.0, 7.0, f64::INFINITY] {
            for id in [
                TheoremId::T5_4,
                TheoremId::I1,
                TheoremId::T6_2,
                TheoremId::T6_5,
                TheoremId::T6_8,
                TheoremId::T6_6,
                TheoremId::I3,
            ] {
                // T = phi^-2 is an exact integer at phi = 1e-3 and 1e-4; 1/(3 phi^2) is not,
                // and its rounding changes psi by ~1e-7 relative: far below the tolerance.
                let (a, b) = (1e-3, 1e-4);
                let (ra, rb) = (
                    prescribe(id, a, &p(k)).unwrap(),
                    prescribe(id, b, &p(k)).unwrap(),
                );
                let slope = (ra.bound.unwrap() / rb.bound.unwrap()).ln() / (a / b).ln();
                let e = id.phi_exponent(k);
                // J.1: bound = t1 (1 + t2/t1) with t1 ~ phi^e and t2/t1 ~ phi^e, so the slope
                // is exactly e + ln((1 + r_a)/(1 + r_b)) / ln(a/b), r = t2/t1.
                let want = if id == TheoremId::T6_2 {
                    let r = |x: &Prescription| x.terms[1].value / x.terms[0].value;
                    e + ((1.0 + r(&ra)) / (1.0 + r(&rb))).ln() / (a / b).ln()
                } else {
                    e
                };
                assert!(
                    (slope - want).abs() < 1e-6,
                    "{id} at k = {k}: slope {slope}, exponent {e}, expected {want}"
                );
            }
        }
    }

    #[test]
    fn round_steps_keeps_exact_integers() {
        assert_eq!(round_steps(1.0 / (0.01f64 * 0.01)), 10_000);
        assert_eq!(round_steps(3333.3333), 3334);
    }
}
