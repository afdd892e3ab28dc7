//! Dense linear algebra on row-major slices, behind one small module: `matrixmultiply`'s
//! single-threaded GEMM for the step kernels, and `nalgebra`'s Cholesky for the one dense solve
//! (the reference Newton solver).

/// A strided view of a rows x cols matrix inside a slice.
#[derive(Clone, Copy)]
pub struct Mat<'a> {
    pub data: &'a [f64],
    pub rows: usize,
    pub cols: usize,
    pub rs: isize,
    pub cs: isize,
}

impl<'a> Mat<'a> {
    /// Row-major rows x cols.
    pub fn rm(data: &'a [f64], rows: usize, cols: usize) -> Self {
        Mat {
            data,
            rows,
            cols,
            rs: cols as isize,
            cs: 1,
        }
    }
    /// The transpose of a row-major rows x cols matrix, seen as cols x rows.
    pub fn rm_t(data: &'a [f64], rows: usize, cols: usize) -> Self {
        Mat {
            data,
            rows: cols,
            cols: rows,
            rs: 1,
            cs: cols as isize,
        }
    }
    /// The first `cols` columns of a row-major matrix with row stride `stride`.
    pub fn rm_cols(data: &'a [f64], rows: usize, cols: usize, stride: usize) -> Self {
        Mat {
            data,
            rows,
            cols,
            rs: stride as isize,
            cs: 1,
        }
    }
    fn check(&self) {
        if self.rows == 0 || self.cols == 0 {
            return;
        }
        let last = (self.rows - 1) as isize * self.rs + (self.cols - 1) as isize * self.cs;
        assert!(
            self.rs >= 0 && self.cs >= 0 && (last as usize) < self.data.len(),
            "matrix view out of bounds"
        );
    }
}

/// c (row-major rows x cols, row stride `ldc`) = alpha a b + beta c.
pub fn gemm(alpha: f64, a: Mat, b: Mat, beta: f64, c: &mut [f64], ldc: usize) {
    assert_eq!(a.cols, b.rows, "inner dimensions differ");
    a.check();
    b.check();
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if m == 0 || n == 0 {
        return;
    }
    assert!(
        ldc >= n && (m - 1) * ldc + n <= c.len(),
        "output out of bounds"
    );
    // SAFETY: the views and the output were bounds-checked above; matrixmultiply reads a and b
    // and writes only the m x n block of c at row stride ldc.
    unsafe {
        matrixmultiply::dgemm(
            m,
            k,
            n,
            alpha,
            a.data.as_ptr(),
            a.rs,
            a.cs,
            b.data.as_ptr(),
            b.rs,
            b.cs,
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
