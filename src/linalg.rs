//! Dense linear algebra on row-major slices, behind one small module: `matrixmultiply`'s
//! single-threaded GEMM for the step kernels, and `nalgebra`'s Cholesky for the one dense solve
//! (the reference Newton solver).

/// A strided view of a rows x cols matrix inside a slice.
///
/// The fields are private: a view is made only by [`Mat::rm`], [`Mat::rm_t`] or
/// [`Mat::rm_cols`], so both strides are non-negative, and [`gemm`] bounds-checks every view
/// with checked arithmetic before it hands raw pointers to `matrixmultiply`.
#[derive(Clone, Copy, Debug)]
pub struct Mat<'a> {
    data: &'a [f64],
    rows: usize,
    cols: usize,
    /// Row stride, in elements.
    row_stride: usize,
    /// Column stride, in elements.
    col_stride: usize,
}

impl<'a> Mat<'a> {
    /// Row-major rows x cols.
    pub fn rm(data: &'a [f64], rows: usize, cols: usize) -> Self {
        Mat {
            data,
            rows,
            cols,
            row_stride: cols,
            col_stride: 1,
        }
    }
    /// The transpose of a row-major rows x cols matrix, seen as cols x rows.
    pub fn rm_t(data: &'a [f64], rows: usize, cols: usize) -> Self {
        Mat {
            data,
            rows: cols,
            cols: rows,
            row_stride: 1,
            col_stride: cols,
        }
    }
    /// The first `cols` columns of a row-major matrix with row stride `stride`.
    pub fn rm_cols(data: &'a [f64], rows: usize, cols: usize, stride: usize) -> Self {
        Mat {
            data,
            rows,
            cols,
            row_stride: stride,
            col_stride: 1,
        }
    }
    /// The number of rows of the view.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// The number of columns of the view.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Whether every element of the view, at (rows - 1) rs + (cols - 1) cs the last, lies inside
    /// `data`, with both strides fitting `isize` (matrixmultiply's stride type). The index
    /// arithmetic is checked, so a huge shape cannot wrap around into a small, passing index.
    fn fits(&self) -> bool {
        if self.rows == 0 || self.cols == 0 {
            return true;
        }
        let last = (self.rows - 1).checked_mul(self.row_stride).and_then(|r| {
            (self.cols - 1)
                .checked_mul(self.col_stride)
                .and_then(|c| r.checked_add(c))
        });
        last.is_some_and(|l| l < self.data.len())
            && isize::try_from(self.row_stride).is_ok()
            && isize::try_from(self.col_stride).is_ok()
    }
    /// Panics, naming the shape, unless [`Mat::fits`].
    fn check(&self) {
        assert!(
            self.fits(),
            "matrix view out of bounds: {} x {} with strides ({}, {}) over {} elements",
            self.rows,
            self.cols,
            self.row_stride,
            self.col_stride,
            self.data.len()
        );
    }
}

/// Whether an m x n block at row stride `ldc` (>= n) fits a slice of `len` elements, with checked
/// arithmetic: (m - 1) ldc + n <= len. True for an empty block.
fn output_fits(m: usize, n: usize, ldc: usize, len: usize) -> bool {
    if m == 0 || n == 0 {
        return true;
    }
    let end = (m - 1).checked_mul(ldc).and_then(|r| r.checked_add(n));
    ldc >= n && end.is_some_and(|e| e <= len) && isize::try_from(ldc).is_ok()
}

/// c (row-major rows x cols, row stride `ldc`) = alpha a b + beta c.
///
/// Panics when the inner dimensions differ or a view or the output block does not fit its slice
/// (all index arithmetic checked for overflow); a safe caller cannot make it read or write out of
/// bounds.
pub fn gemm(alpha: f64, a: Mat, b: Mat, beta: f64, c: &mut [f64], ldc: usize) {
    assert_eq!(a.cols, b.rows, "inner dimensions differ");
    a.check();
    b.check();
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if m == 0 || n == 0 {
        return;
    }
    assert!(
        output_fits(m, n, ldc, c.len()),
        "output out of bounds: {m} x {n} with row stride {ldc} over {} elements",
        c.len()
    );
    // SAFETY: `check` proved every element of a and b, at offsets (i rs + j cs) up to the
    // checked last one, lies inside its slice, with strides that fit isize; the assert above
    // proved the m x n block of c at row stride ldc >= n lies inside c. matrixmultiply reads only
    // those elements of a and b, and reads and writes only that block of c (c is borrowed
    // mutably, so it aliases neither input).
    unsafe {
        matrixmultiply::dgemm(
            m,
            k,
            n,
            alpha,
            a.data.as_ptr(),
            a.row_stride as isize,
            a.col_stride as isize,
            b.data.as_ptr(),
            b.row_stride as isize,
            b.col_stride as isize,
            beta,
            c.as_mut_ptr(),
            ldc as isize,
            1,
        );
    }
}

/// (A + A^T) / 2 of a p x p row-major matrix.
pub fn symmetrized(a: &[f64], p: usize) -> Vec<f64> {
    assert_eq!(a.len(), p * p, "symmetrized: a is not p x p");
    let mut s = vec![0.0; p * p];
    for i in 0..p {
        for j in 0..p {
            s[i * p + j] = (a[i * p + j] + a[j * p + i]) * 0.5;
        }
    }
    s
}

/// Solves (A + shift I) x = b for a symmetric p x p matrix A (row-major) by Cholesky; `None`
/// when A + shift I is not positive definite.
pub fn cholesky_solve_shifted(a: &[f64], p: usize, shift: f64, b: &[f64]) -> Option<Vec<f64>> {
    assert!(
        a.len() == p * p && b.len() == p,
        "cholesky_solve_shifted: shapes"
    );
    let mut m = nalgebra::DMatrix::<f64>::from_row_slice(p, p, a);
    for i in 0..p {
        m[(i, i)] += shift;
    }
    let ch = m.cholesky()?;
    Some(
        ch.solve(&nalgebra::DVector::from_column_slice(b))
            .as_slice()
            .to_vec(),
    )
}

/// The smallest eigenvalue of a symmetric p x p matrix (row-major).
pub fn min_eigenvalue_symmetric(a: &[f64], p: usize) -> f64 {
    assert_eq!(a.len(), p * p, "min_eigenvalue_symmetric: a is not p x p");
    nalgebra::DMatrix::<f64>::from_row_slice(p, p, a)
        .symmetric_eigenvalues()
        .iter()
        .cloned()
        .fold(f64::INFINITY, f64::min)
}

/// ||v||_2, from [`dot`].
#[inline]
pub fn norm2(v: &[f64]) -> f64 {
    dot(v, v).sqrt()
}

/// <a, b>, with four independent accumulators so the compiler can keep several lanes busy (a
/// strict left-to-right sum would serialize on one register). Deterministic for a given length.
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f64; 4];
    let ca = a.chunks_exact(4);
    let cb = b.chunks_exact(4);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        acc[0] += x[0] * y[0];
        acc[1] += x[1] * y[1];
        acc[2] += x[2] * y[2];
        acc[3] += x[3] * y[3];
    }
    let mut s = (acc[0] + acc[2]) + (acc[1] + acc[3]);
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// ||a - b||_2, summed left to right (the sharp loss's distance to its centers, the solver's and
/// the geometric median's).
#[inline]
pub fn dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

/// y += a x.
#[inline]
pub fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_eigenvalue_of_a_known_matrix() {
        // [[2, 1], [1, 2]] has eigenvalues 1 and 3.
        assert!((min_eigenvalue_symmetric(&[2.0, 1.0, 1.0, 2.0], 2) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn gemm_matches_naive_loops_with_transposes_and_strides() {
        let a: Vec<f64> = (0..12).map(|v| v as f64 * 0.5 - 2.0).collect(); // 3 x 4
        let b: Vec<f64> = (0..20).map(|v| (v as f64).sin()).collect(); // 5 x 4
        let mut c = vec![1.0; 15]; // 3 x 5 = a b^T
        gemm(2.0, Mat::rm(&a, 3, 4), Mat::rm_t(&b, 5, 4), 0.5, &mut c, 5);
        for i in 0..3 {
            for j in 0..5 {
                let s: f64 = (0..4).map(|k| a[i * 4 + k] * b[j * 4 + k]).sum();
                assert!((c[i * 5 + j] - (2.0 * s + 0.5)).abs() < 1e-12);
            }
        }
        // first 3 columns of a (3 x 4) times a 3 x 2 matrix
        let e = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let mut o = vec![0.0; 6];
        gemm(
            1.0,
            Mat::rm_cols(&a, 3, 3, 4),
            Mat::rm(&e, 3, 2),
            0.0,
            &mut o,
            2,
        );
        for i in 0..3 {
            for j in 0..2 {
                let s: f64 = (0..3).map(|k| a[i * 4 + k] * e[k * 2 + j]).sum();
                assert!((o[i * 2 + j] - s).abs() < 1e-12);
            }
        }
    }

    /// The review's counterexample (code-review.md section 4): (rows - 1) * stride wraps to 0 in
    /// unchecked usize arithmetic, so a view of 2^62 + 1 rows over 8 elements passed the old check
    /// and dgemm read far out of bounds. Planted bug: the old wrapping arithmetic in `fits` and
    /// `output_fits` (both asserts below then fail).
    #[test]
    fn views_and_outputs_that_overflow_or_overrun_are_refused() {
        let a = [0.0; 8];
        let huge = (1usize << 62) + 1;
        assert!(!Mat::rm_cols(&a, huge, 1, 4).fits());
        assert!(!output_fits(huge, 1, 4, 8));
        assert!(!Mat::rm_t(&a, 1, usize::MAX).fits());
        assert!(!Mat::rm_cols(&a, 2, 1, usize::MAX).fits());
        // Plain overrun by one element, and an output row stride shorter than a row.
        assert!(!Mat::rm(&a, 3, 3).fits());
        assert!(!output_fits(2, 5, 4, 100));
        assert!(!output_fits(3, 3, 3, 8));
        // The largest views that do fit are accepted, and empty ones always.
        assert!(Mat::rm(&a, 2, 4).fits() && Mat::rm_cols(&a, 2, 3, 5).fits());
        assert!(Mat::rm_t(&a, 4, 2).fits() && Mat::rm(&[], 0, 7).fits());
        assert!(output_fits(3, 2, 3, 8) && output_fits(0, 9, 0, 0));
    }

    #[test]
    #[should_panic(expected = "matrix view out of bounds")]
    fn gemm_panics_on_an_overflowing_view_before_the_call() {
        let a = [1.0; 8];
        let mut c = [0.0; 8];
        gemm(
            1.0,
            Mat::rm_cols(&a, (1 << 62) + 1, 1, 4),
            Mat::rm(&a, 1, 1),
            0.0,
            &mut c,
            4,
        );
    }

    #[test]
    #[should_panic(expected = "output out of bounds")]
    fn gemm_panics_on_a_short_output() {
        let a = [1.0; 8];
        let mut c = [0.0; 3];
        gemm(1.0, Mat::rm(&a, 2, 2), Mat::rm(&a, 2, 2), 0.0, &mut c, 2);
    }

    #[test]
    fn shifted_cholesky_solves_and_refuses_indefinite() {
        // A = [[4, 2], [2, 3]], b = A (1, -2) = (0, -4).
        let a = [4.0, 2.0, 2.0, 3.0];
        let x = cholesky_solve_shifted(&a, 2, 0.0, &[0.0, -4.0]).unwrap();
        assert!(
            (x[0] - 1.0).abs() < 1e-12 && (x[1] + 2.0).abs() < 1e-12,
            "{x:?}"
        );
        // A + 1 I = [[5, 2], [2, 4]]: b = (5 - 4, 2 - 8) for x = (1, -2).
        let x = cholesky_solve_shifted(&a, 2, 1.0, &[1.0, -6.0]).unwrap();
        assert!(
            (x[0] - 1.0).abs() < 1e-12 && (x[1] + 2.0).abs() < 1e-12,
            "{x:?}"
        );
        // Eigenvalues 3 and -1: not positive definite.
        assert!(cholesky_solve_shifted(&[1.0, 2.0, 2.0, 1.0], 2, 0.0, &[1.0, 1.0]).is_none());
        assert_eq!(
            symmetrized(&[1.0, 2.0, 4.0, 3.0], 2),
            vec![1.0, 3.0, 3.0, 3.0]
        );
    }
}
