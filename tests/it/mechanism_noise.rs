//! The small mechanisms' noise has the law their privacy proofs assume (issue 56: the range
//! check's Laplace noise could be halved and every test still passed).

use dpsgd_lab::clipnorm::recommend::range_check;
use dpsgd_lab::rng::{Purpose, ReleaseRng, stream};

/// `range_check` releases count + Lap(1 / epsilon): over N = 40000 seeded draws (epsilon 0.5,
/// b = 2, count 3 of 10 values outside [1, 2]) the noise has mean 0 within 4 standard errors
/// (sd sqrt(2) b / sqrt(N)), variance 2 b^2 within 4 standard errors of the sample variance
/// (sqrt((mu_4 - sigma^4) / N) = sqrt(20 / N) b^2 for the Laplace law, mu_4 = 24 b^4) and tail
/// P(|noise| > b) = e^(-1) within 4 sqrt(p (1 - p) / N). Planted bug caught: the noise halved
/// (variance 2.0 against 8).
#[test]
fn the_range_checks_noise_is_laplace_with_scale_one_over_epsilon() {
    let g = [0.5, 1.0, 1.2, 1.5, 1.9, 2.0, 2.5, 3.0, 1.1, 1.3];
    let (epsilon, b, count) = (0.5, 2.0, 3.0);
    let n = 40_000;
    let mut rng = ReleaseRng::Seeded(stream(5, 0, Purpose::Mechanism));
    let noise: Vec<f64> = (0..n)
        .map(|_| {
            let c = range_check(&g, 1.0, 2.0, epsilon, &mut rng).unwrap();
            assert_eq!(c.n, g.len());
            c.noisy_outside - count
        })
        .collect();
    let nf = n as f64;
    let mean = noise.iter().sum::<f64>() / nf;
    let var = noise.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (nf - 1.0);
    let tail = noise.iter().filter(|x| x.abs() > b).count() as f64 / nf;
    let p = (-1.0f64).exp();
    assert!(
        mean.abs() <= 4.0 * 2f64.sqrt() * b / nf.sqrt(),
        "mean {mean}"
    );
    assert!(
        (var - 2.0 * b * b).abs() <= 4.0 * (20.0 / nf).sqrt() * b * b,
        "variance {var}, expected {}",
        2.0 * b * b
    );
    assert!(
        (tail - p).abs() <= 4.0 * (p * (1.0 - p) / nf).sqrt(),
        "P(|noise| > b) = {tail}, expected {p}"
    );
}
