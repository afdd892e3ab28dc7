//! One-dimensional minimization: the crate's one golden-section search (STYLE.md section 9, "one
//! of each"), used by the PLD accountant's Chernoff window (`privacy::pld`) and by the Monte
//! Carlo runner's optimal C.
//!
//! Golden-section search (Kiefer 1953; Press et al., Numerical Recipes, 3rd ed., section 10.2):
//! with r = (sqrt 5 - 1) / 2, the probes c = b - r (b - a) and d = a + r (b - a) split [a, b];
//! the side beyond the worse probe is dropped, and the kept probe is reused as the new bracket's
//! other probe, so every iteration costs one evaluation and shrinks the bracket by r. For a
//! unimodal f the minimizer stays inside the bracket.

/// The state after the last iteration of [`golden_section`]: the bracket [lo, hi] and its two
/// probes, left < right, with their values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GoldenBracket {
    /// Lower end of the final bracket.
    pub lo: f64,
    /// Upper end of the final bracket.
    pub hi: f64,
    /// The left probe, hi - r (hi - lo).
    pub left: f64,
    /// The right probe, lo + r (hi - lo).
    pub right: f64,
    /// f at the left probe.
    pub f_left: f64,
    /// f at the right probe.
    pub f_right: f64,
}

impl GoldenBracket {
    /// The better of the two probes (the right one on a tie or a NaN).
    pub fn best_probe(&self) -> f64 {
        if self.f_left < self.f_right {
            self.left
        } else {
            self.right
        }
    }

    /// The bracket's midpoint, 0.5 (lo + hi).
    pub fn midpoint(&self) -> f64 {
        0.5 * (self.lo + self.hi)
    }
}

/// Golden-section search of f over [a, b] for `iters` iterations (two evaluations, then one per
/// iteration, in that order); the first error of f stops it.
pub fn golden_section<E>(
    mut f: impl FnMut(f64) -> Result<f64, E>,
    a: f64,
    b: f64,
    iters: usize,
) -> Result<GoldenBracket, E> {
    let r = 0.5 * (5f64.sqrt() - 1.0);
    let (mut lo, mut hi) = (a, b);
    let (mut left, mut right) = (hi - r * (hi - lo), lo + r * (hi - lo));
    let mut f_left = f(left)?;
    let mut f_right = f(right)?;
    for _ in 0..iters {
        if f_left < f_right {
            (hi, right, f_right) = (right, left, f_left);
            left = hi - r * (hi - lo);
            f_left = f(left)?;
        } else {
            (lo, left, f_left) = (left, right, f_right);
            right = lo + r * (hi - lo);
            f_right = f(right)?;
        }
    }
    Ok(GoldenBracket {
        lo,
        hi,
        left,
        right,
        f_left,
        f_right,
    })
}

/// The better final probe of a golden-section search of an infallible f over [a, b]
/// ([`golden_section`], [`GoldenBracket::best_probe`]).
pub fn golden_min(f: impl Fn(f64) -> f64, a: f64, b: f64, iters: usize) -> f64 {
    let found = golden_section(|x| Ok::<f64, std::convert::Infallible>(f(x)), a, b, iters);
    match found {
        Ok(bracket) => bracket.best_probe(),
        Err(never) => match never {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The minimizer of (x - 1.3)^2 on [-5, 10] within the final bracket's width after 60
    /// iterations (15 r^60 ~ 4e-12), the midpoint and best probe agreeing with it, and the
    /// evaluation count (2 + iters). Planted bug caught: dropping the wrong side (`>` for `<`)
    /// sends the bracket to an end.
    #[test]
    fn finds_the_minimum_of_a_parabola_and_counts_evaluations() {
        let mut calls = 0;
        let br = golden_section(
            |x| {
                calls += 1;
                Ok::<f64, ()>((x - 1.3) * (x - 1.3))
            },
            -5.0,
            10.0,
            60,
        )
        .unwrap();
        assert_eq!(calls, 62);
        assert!(
            br.lo <= 1.3 && 1.3 <= br.hi && br.hi - br.lo < 1e-11,
            "{br:?}"
        );
        assert!((br.midpoint() - 1.3).abs() < 1e-11);
        assert!((golden_min(|x| (x - 1.3) * (x - 1.3), -5.0, 10.0, 60) - 1.3).abs() < 1e-11);
        // The first error stops the search and is returned.
        assert_eq!(golden_section(|_| Err::<f64, u8>(7), 0.0, 1.0, 5), Err(7));
    }
}
