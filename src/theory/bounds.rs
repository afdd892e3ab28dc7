//! The theorems' formulas, one function each, exactly as written in the full Appendix versions.
//!
//! Notation: `psi` = 1/T + phi^2 ([`super::phi::psi`]), `dist0` = ||w0 - w*||, `k` may be
//! `f64::INFINITY` (uniform Lipschitzness, Corollary 6.7): every exponent below is written with
//! 1/k, 2/(k+1) or 1/(2k-1), which IEEE arithmetic sends to 0 at k = inf, so the k = inf value
//! is the limit of the finite-k formula, not a separate case.

/// A named additive term of a bound, so that a reader can see which part dominates.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Term {
    /// What the term is, with its equation.
    pub name: String,
    /// Its value.
    pub value: f64,
}

fn term(name: &str, value: f64) -> Term {
    Term {
        name: name.to_string(),
        value,
    }
}

/// Thm 5.4: T = 1/(3 phi^2), which makes psi = 4 phi^2 and sqrt(psi) = 2 phi.
pub fn thm54_steps(phi: f64) -> f64 {
    1.0 / (3.0 * phi * phi)
}

/// Thms 6.2, 6.5, 6.8 (and the "T = 1/phi^2" corollaries of I.1, J.1, K.1, N.1): T = phi^-2.
pub fn main_text_steps(phi: f64) -> f64 {
    1.0 / (phi * phi)
}

/// Thm H.1, Thm J.1, Thm K.1: eta = C / (T tau) * psi^(-1/2) (the choice before Eq. 42 / 69 / 95).
/// Thm I.1 uses the same formula with C = D_W (before Eq. 58).
pub fn eta_convex(c: f64, steps: f64, tau: f64, psi: f64) -> f64 {
    c / (steps * tau) / psi.sqrt()
}

/// Thm H.1, first inequality (Eq. 43): the clipping-weighted risk
/// (1/n) sum_i E[min(1, tau/||grad f_i||)(f_i(w_hat) - f_i(w*))] <= (D0^2/(2C) + C) tau sqrt(psi).
pub fn h1_weighted_risk_bound(dist0: f64, c: f64, tau: f64, psi: f64) -> f64 {
    (dist0 * dist0 / (2.0 * c) + c) * tau * psi.sqrt()
}

/// Thm H.1, second inequality (Eq. 48): OR(T) <= (A) + (B) with
/// (A) = (1/alpha(tau)) (D0^2/(2C) + C) G_n sqrt(psi) and
/// (B) = (G_n/(tau alpha(tau)) - 1) Delta(w*). Holds in expectation over Algorithm 1 only
/// (no probability over the data set). At T = 1/(3 phi^2) this is Eq. (5) of Thm 5.4.
pub fn h1_risk_bound(
    dist0: f64,
    c: f64,
    g_n: f64,
    psi: f64,
    alpha: f64,
    tau: f64,
    delta_star: f64,
) -> Vec<Term> {
    vec![
        term(
            "(A) (1/alpha) (D0^2/(2C) + C) G_n sqrt(psi)  [Eq. 48]",
            (dist0 * dist0 / (2.0 * c) + c) * g_n * psi.sqrt() / alpha,
        ),
        term(
            "(B) (G_n/(tau alpha) - 1) Delta(w*)  [Eq. 48]",
            (g_n / (tau * alpha) - 1.0) * delta_star,
        ),
    ]
}

/// Thm I.1 (choice before Eq. 59): tau = G gamma^(-1/k) psi^(-1/(2k)).
pub fn i1_tau(g: f64, gamma: f64, k: f64, psi: f64) -> f64 {
    g * gamma.powf(-1.0 / k) * psi.powf(-1.0 / (2.0 * k))
}

/// Thm I.1 (Eq. 60): OR(T) <= 5 D_W G / (2 gamma^(1/k)) psi^((1 - 1/k)/2),
/// with probability >= 1 - gamma over the data set.
pub fn i1_risk_bound(d_w: f64, g: f64, gamma: f64, k: f64, psi: f64) -> Vec<Term> {
    vec![term(
        "5 D_W G / (2 gamma^(1/k)) psi^((1-1/k)/2)  [Eq. 60]",
        5.0 * d_w * g / (2.0 * gamma.powf(1.0 / k)) * psi.powf(0.5 * (1.0 - 1.0 / k)),
    )]
}

/// Thm J.1 (choice before Eq. 69): tau = G gamma^(-1/k) psi^(-1/(k+1)).
pub fn j1_tau(g: f64, gamma: f64, k: f64, psi: f64) -> f64 {
    g * gamma.powf(-1.0 / k) * psi.powf(-1.0 / (k + 1.0))
}

/// Thm J.1 (Eq. 70): OR(T) <= G/gamma^(1/k) { (1/2)(D0^2/C + 4C) psi^((1 - 2/(k+1))/2)
/// + (D0 + C) psi^(1 - 2/(k+1)) }, with probability >= 1 - gamma over the data set.
pub fn j1_risk_bound(g: f64, gamma: f64, k: f64, dist0: f64, c: f64, psi: f64) -> Vec<Term> {
    let s = g / gamma.powf(1.0 / k);
    let e = 1.0 - 2.0 / (k + 1.0);
    vec![
        term(
            "G/gamma^(1/k) (1/2)(D0^2/C + 4C) psi^((1-2/(k+1))/2)  [Eq. 70]",
            s * 0.5 * (dist0 * dist0 / c + 4.0 * c) * psi.powf(0.5 * e),
        ),
        term(
            "G/gamma^(1/k) (D0 + C) psi^(1-2/(k+1))  [Eq. 70]",
            s * (dist0 + c) * psi.powf(e),
        ),
    ]
}

/// Thm K.1 (choice in Eq. 87): tau = G psi^(-1/(2k)); requires T >= phi^-2.
pub fn k1_tau(g: f64, k: f64, psi: f64) -> f64 {
    g * psi.powf(-1.0 / (2.0 * k))
}

/// Thm K.1 (Eq. 95): OR(T) <= G { (D0^2/C + 2C) psi^((1-1/k)/2) + 16 phi^(1-1/k) D },
/// with probability >= 3/4 over the data set (Markov on G_Z^k <= 4 G^k, before Eq. 88).
pub fn k1_risk_bound(
    g: f64,
    k: f64,
    dist0: f64,
    c: f64,
    d_sharp: f64,
    psi: f64,
    phi: f64,
) -> Vec<Term> {
    vec![
        term(
            "G (D0^2/C + 2C) psi^((1-1/k)/2)  [Eq. 95]",
            g * (dist0 * dist0 / c + 2.0 * c) * psi.powf(0.5 * (1.0 - 1.0 / k)),
        ),
        term(
            "16 G phi^(1-1/k) D  [Eq. 95, Assumption 6.4]",
            16.0 * g * phi.powf(1.0 - 1.0 / k) * d_sharp,
        ),
    ]
}

/// Thm N.1 (choice before Eq. 145): tau = G (G/(gamma^2 C sqrt(L)))^(1/(2k-1)) psi^(-1/(2(2k-1))).
pub fn n1_tau(g: f64, gamma: f64, c: f64, l: f64, k: f64, psi: f64) -> f64 {
    let a = 1.0 / (2.0 * k - 1.0);
    g * (g / (gamma * gamma * c * l.sqrt())).powf(a) * psi.powf(-0.5 * a)
}

/// Thm N.1 (choice before Eq. 144): eta = C / (T tau sqrt(L)) psi^(-1/2).
pub fn n1_eta(c: f64, steps: f64, tau: f64, l: f64, psi: f64) -> f64 {
    c / (steps * tau * l.sqrt()) / psi.sqrt()
}

/// Thm N.1 (Eq. 146): E||grad f(w_priv)||^2 <= sqrt(L)^(1-a) G^(1+a) / (gamma^(2a) C^a)
/// (3C + 2 (f(w0) - f*)/C) psi^((1-a)/2), a = 1/(2k-1), with probability >= 1 - gamma.
pub fn n1_risk_bound(
    g: f64,
    gamma: f64,
    c: f64,
    l: f64,
    k: f64,
    f_gap: f64,
    psi: f64,
) -> Vec<Term> {
    let a = 1.0 / (2.0 * k - 1.0);
    vec![term(
        "sqrt(L)^(1-a) G^(1+a) / (gamma^(2a) C^a) (3C + 2 (f(w0)-f*)/C) psi^((1-a)/2), a = 1/(2k-1)  [Eq. 146]",
        l.sqrt().powf(1.0 - a) * g.powf(1.0 + a) / (gamma.powf(2.0 * a) * c.powf(a))
            * (3.0 * c + 2.0 * f_gap / c)
            * psi.powf(0.5 * (1.0 - a)),
    )]
}

/// Thms L.1 / I.3 (Eq. 130): E[f(w_A) - f(w*)] >= c_L G phi^(1-1/k) for the hard instance of
/// Appendix L (G = 3 sqrt(d/2)). The paper states this as Omega(.): `c_lower` is that unstated
/// absolute constant and must be supplied by the caller.
pub fn lower_bound(c_lower: f64, g: f64, k: f64, phi: f64) -> Vec<Term> {
    vec![term(
        "c_L G phi^(1-1/k)  [Eq. 130, c_L = the Omega(.) constant]",
        c_lower * g * phi.powf(1.0 - 1.0 / k),
    )]
}

/// Sum of a bound's terms.
pub fn total(terms: &[Term]) -> f64 {
    terms.iter().map(|t| t.value).sum()
}
