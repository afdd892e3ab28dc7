//! The ceiling of the one-run audit's analyses: the epsilon_lb each gives at the *expected*
//! outcome of a perfect attacker on a mechanism that is exactly the claim, mu-Gaussian DP
//! (DP-SGD at q = 1 with every iterate seen and Dirac canaries is exactly this: the per-canary
//! likelihood-ratio score is N(+-mu^2/2, mu^2)). No run and no seed: the included canaries'
//! scores are N(mu, 1), the excluded ones' N(0, 1), m / 2 of each, and the top / bottom k' guesses
//! are correct in proportion to the expected precision (`bounds::expected_precision`).
//!
//! For each m it prints the bound at the audit's rule-chosen k' (`bounds::choose_k`) and the best
//! over a fine grid of k' (an oracle choice, which no audit may make: an upper limit on what any
//! k' rule reaches). Run: `cargo run --release --example one_run_ceiling`.

use dpsgd_lab::audit::one_run::bounds::{
    Analysis, choose_k, expected_precision, fdp_mu_lb, gdp_epsilon, gdp_mu_of_epsilon,
    steinke_epsilon_lb,
};

fn main() -> dpsgd_lab::error::Result<()> {
    let (delta, beta) = (1e-5, 0.05);
    println!(
        "claim | m | rule k' ED: eps_lb (ratio) | rule k' f-DP: eps_lb (ratio) | oracle k' ED | oracle k' f-DP"
    );
    for claim in [1.0, 2.0, 4.0, 8.0] {
        let mu = gdp_mu_of_epsilon(claim, delta)?;
        for m in [1_000usize, 10_000, 100_000] {
            let correct =
                |k: usize| (2.0 * k as f64 * expected_precision(m, k, mu)).floor() as usize;
            let ed = |k: usize| steinke_epsilon_lb(m, 2 * k, correct(k), delta, beta);
            let fdp = |k: usize| -> dpsgd_lab::error::Result<f64> {
                gdp_epsilon(fdp_mu_lb(m, 2 * k, correct(k), beta), delta)
            };
            let k_ed = choose_k(m, mu, delta, beta, Analysis::EpsDelta);
            let k_f = choose_k(m, mu, delta, beta, Analysis::Fdp);
            let (e_rule, f_rule) = (ed(k_ed), fdp(k_f)?);
            // Oracle: k' on a geometric grid of 60 points from 1 to m / 2.
            let (mut e_best, mut f_best) = ((0.0f64, 0usize), (0.0f64, 0usize));
            let mut seen = Vec::new();
            for i in 0..60 {
                let k = ((m as f64 / 2.0).powf(i as f64 / 59.0)).round() as usize;
                if seen.contains(&k) {
                    continue;
                }
                seen.push(k);
                let e = ed(k);
                if e > e_best.0 {
                    e_best = (e, k);
                }
                let f = fdp(k)?;
                if f > f_best.0 {
                    f_best = (f, k);
                }
            }
            println!(
                "{claim} | {m} | {e_rule:.3} ({:.3}, k' {k_ed}) | {f_rule:.3} ({:.3}, k' {k_f}) | {:.3} ({:.3}, k' {}) | {:.3} ({:.3}, k' {})",
                e_rule / claim,
                f_rule / claim,
                e_best.0,
                e_best.0 / claim,
                e_best.1,
                f_best.0,
                f_best.0 / claim,
                f_best.1
            );
        }
    }
    Ok(())
}
