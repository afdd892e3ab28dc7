//! The notes of a spec's report: the constants and conventions of the run and of its verdicts,
//! stated in words.

use super::spec::Spec;
use super::theorem::schedule_theorem;

/// lambda_min S at which a quadratic model of the run has relaxed from w0 (e^-3 = 5% of the
/// initial distance left): below it the iterate has barely moved and no rate can show.
pub const RELAXED: f64 = 3.0;

/// The constants and conventions of `spec`, stated in its report.
pub(crate) fn notes(spec: &Spec) -> Vec<String> {
    let raw = &spec.raw;
    let mut notes = vec![
        if raw.constants.w0 == Some(super::spec::StartSpec::Zero) {
            "w0 = 0, so ||w0 - w*|| = ||w*|| of each data set (used in the schedule and the bound); w* from the exact non-private solver".to_string()
        } else {
            format!(
                "w0 = w* + {} (1, ..., 1)/sqrt(p), so ||w0 - w*|| = {} exactly; w* from the exact non-private solver of each data set",
                crate::error::fmt_num(raw.constants.dist0),
                crate::error::fmt_num(raw.constants.dist0)
            )
        },
        "verdicts (upper bounds), on separate axes: the bound holds (every cell's mean OR <= its mean bound; otherwise VIOLATION); the bound is informative when bound / risk0 < 1 in every cell of the smallest decade (risk0 = the do-nothing risk at w0); only then a rate: 'consistent with the schedule's exponent' (the smallest decade's 95% interval contains the predicted exponent on a row that is no test of the heavy-tail mechanism), 'attains the bound's rate' (the same on a row that is one: k < inf, no control, a family whose heavy part moves with phi, and a bias share whose 95% lower end is at least 0.1), 'faster than the bound' (interval above), 'slower than the bound (pre-asymptotic)' (interval below), read from the interval with no tolerance, and 'interval too wide for a rate' when its half-width is above 0.1; 'a do-nothing algorithm earns the same' when the paired 95% interval of the slope minus the do-nothing risk's slope contains 0 with a half-width of at most 0.1".to_string(),
        "risk split (common random numbers): every run is run again without noise (bias only: sigma = 0, the same batches and clip norms) and without clipping (noise only: tau = inf, the same sigma_n(tau_t) and noise draws), both observed at the run's K iterates; bias share of a cell = (mean OR - mean noise-only risk) / mean OR, of a row its mean over the smallest decade with a paired bootstrap interval; clipped mass = sum (||g_i|| - tau_t)_+ / sum ||g_i|| over the sampled per-sample gradients".to_string(),
        match raw.constants.c {
            _ if schedule_theorem(raw.theorem).full_version() == crate::theory::TheoremId::I1 => {
                "Thm I.1 has no free C: eta = D_W/(T tau) psi^(-1/2), so the C column shows D_W".to_string()
            }
            super::spec::FreeConstant::Value(c) => format!("C = {c} (given)"),
            _ => "C chosen per replicate to minimize the theorem's explicit bound (golden section on log C); the range used is in the table below".to_string(),
        },
        format!(
            "risk estimated at K = {} stratified iterates per run (one uniform step in each K-th of 0..T: unbiased for the random iterate of Algorithm 1), averaged over {} run(s) of Algorithm 1 per data set, R = {} replicates per cell, {} data per replicate; common random numbers: replicate r uses the same sampling, noise and iterate streams at every phi of a series (and in its control)",
            spec.iterates,
            raw.runs_per_data,
            spec.replicates,
            if raw.fresh_data { "fresh" } else { "one fixed data set, the same" }
        ),
        format!(
            "fit: OLS of log(mean risk) on log phi; 95% paired percentile bootstrap ({} resamples): each resample draws R replicate indices once and every cell, the do-nothing risk and the control take the means over those replicates",
            spec.bootstrap
        ),
        format!(
            "privacy: Thm 3.4 noise, nu = {}, delta = {}; phi swept by {}",
            raw.privacy.nu,
            raw.privacy.delta,
            match raw.sweep.vary {
                super::spec::Vary::Epsilon => "epsilon at fixed n",
                super::spec::Vary::N => "n at fixed epsilon",
            }
        ),
    ];
    if let Some(g) = raw.constants.gamma {
        notes.push(format!(
            "gamma = {g}: the bound holds with probability >= 1 - gamma over the data set (1 at k = inf); the check compares the means over replicates"
        ));
    }
    if raw.fresh_data && !raw.theorem.is_lower_bound() {
        notes.push(format!(
            "probability statement: at the smallest phi, each data set's OR (the expectation over Algorithm 1 given the data set) is its run's time-averaged risk (1/T) sum_t risk(w_t), estimated on strata that resolve the start-up (every step of the first {h}, then {m} equal strata in each block [{h} 2^j, {h} 2^(j+1))); the K-iterate estimate of the other columns is unbiased for the mean over data sets but not for one run",
            h = super::time_average::HEAD,
            m = super::time_average::PER_BLOCK,
        ));
    }
    match raw.theorem.full_version() {
        crate::theory::TheoremId::H1 => notes.push(
            "Thm H.1: alpha(tau) is the upper estimate of theory::estimate_alpha (8 starts), so the bound used is at most the theorem's: a pass is rigorous; Delta(w*) from the per-sample minima".into(),
        ),
        crate::theory::TheoremId::K1 => notes.push(
            "Thm K.1 needs Assumption 6.4: for the weighted sharp loss D = 2 f* / (a_bar - 16 phi^(1-1/k) G) (from f(w) - f* >= a_bar ||w - w*|| - 2 f*); when 16 phi^(1-1/k) G >= a_bar no D exists and the bound does not apply (counted in 'bound cells'); the bound holds with probability 3/4".into(),
        ),
        crate::theory::TheoremId::N1 => notes.push(
            "Thm N.1: L = (1/n) sum of per-sample smoothness constants (an upper bound on f's); f(w0) - f* with f* = the Newton reference (a local minimum: f(w0) - f* is then a lower estimate, so a pass is rigorous)".into(),
        ),
        _ => {}
    }
    notes
}
