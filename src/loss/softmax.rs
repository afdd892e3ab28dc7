//! The softmax shared by the multinomial losses (softmax regression, Appendix D, and the tanh
//! network's output layer, Appendix C): probabilities, the residual e = p - e_y whose norm gives
//! the per-sample gradient norm (Eq. (8)), and the class-label check.

use crate::dataset::Dataset;
use crate::error::{Error, Result};

/// In place: z <- softmax(z); returns log-sum-exp of the input (stable).
#[inline]
pub(crate) fn softmax_in_place(z: &mut [f64]) -> f64 {
    let mx = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mut s = 0.0;
    for v in z.iter_mut() {
        // exp(0) = 1 exactly: the largest logit needs no call to exp
        *v = if *v == mx { 1.0 } else { (*v - mx).exp() };
        s += *v;
    }
    let inv = 1.0 / s;
    z.iter_mut().for_each(|v| *v *= inv);
    mx + s.ln()
}

/// Checks that every label is a class index in 0..m.
pub(crate) fn check_class_labels(data: &Dataset, m: usize) -> Result<()> {
    for (i, &y) in data.y.iter().enumerate() {
        if !(y >= 0.0 && y.fract() == 0.0 && (y as usize) < m) {
            return Err(Error::data(format!(
                "label of sample {i} is {y}, but class labels must be integers in 0..{m}"
            )));
        }
    }
    Ok(())
}

/// In place: z <- softmax(z) - e_y, the output-layer residual of the cross-entropy at class
/// label `y` (an index checked by [`check_class_labels`]; grad_z (-log p_y) = p - e_y, Eq. (8)).
#[inline]
pub(crate) fn softmax_residual_in_place(z: &mut [f64], y: usize) {
    softmax_in_place(z);
    z[y] -= 1.0;
}
