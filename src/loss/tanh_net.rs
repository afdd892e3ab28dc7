//! Two-layer tanh network with a softmax cross-entropy output (Appendix C).
//!
//! Parameters, row-major and concatenated: W1 in R^{h x (d+1)} (hidden layer, bias last) then
//! W2 in R^{m x (h+1)} (output layer, bias last). With x~ = [x, 1], a = tanh(W1 x~),
//! a~ = [a, 1], p = softmax(W2 a~) and e = p - e_y:
//!   grad_W2 = e a~^T,  grad_W1 = delta x~^T  with  delta = (W2[:, :h]^T e) * (1 - a^2).
//! Both blocks are rank one, so ||grad||^2 = ||e||^2 ||a~||^2 + ||delta||^2 ||x~||^2 is computed
//! layer by layer without forming any per-sample gradient.

use super::kernel::{check_dim, gather_with_bias, sized};
use super::softmax::{check_class_labels, softmax_in_place, softmax_residual_in_place};
use super::{ClipStats, LipschitzForm, Loss, PerSampleBound, Rows, Scratch};
use crate::dataset::Dataset;
use crate::error::{Error, Result, check_positive};
use crate::linalg::{Mat, dot, gemm};

/// The network for d features, h hidden units and m classes.
#[derive(Debug, Clone)]
pub struct TanhNet {
    d: usize,
    h: usize,
    m: usize,
    radius: Option<f64>,
}

impl TanhNet {
    /// A network; `radius` is the radius R of the parameter ball W, if constrained.
    pub fn new(d: usize, h: usize, m: usize, radius: Option<f64>) -> Result<Self> {
        if h == 0 {
            return Err(Error::param(
                "tanh network needs at least 1 hidden unit, but hidden = 0",
            ));
        }
        if let Some(r) = radius {
            check_positive("tanh network radius", r)?;
        }
        Ok(TanhNet { d, h, m, radius })
    }
    fn split<'a>(&self, w: &'a [f64]) -> (&'a [f64], &'a [f64]) {
        w.split_at(self.h * (self.d + 1))
    }
    /// Forward pass for one sample: fills a (len h) and p (len m); returns log-sum-exp.
    fn forward(&self, w: &[f64], x: &[f64], a: &mut [f64], p: &mut [f64]) -> f64 {
        let (w1, w2) = self.split(w);
        let (d, h) = (self.d, self.h);
        for (k, ak) in a.iter_mut().enumerate() {
            let row = &w1[k * (d + 1)..(k + 1) * (d + 1)];
            *ak = (dot(&row[..d], x) + row[d]).tanh();
        }
        for (j, pj) in p.iter_mut().enumerate() {
            let row = &w2[j * (h + 1)..(j + 1) * (h + 1)];
            *pj = dot(&row[..h], a) + row[h];
        }
        softmax_in_place(p)
    }
}

/// On the ball ||w|| <= R with h hidden units: ||e|| <= sqrt(2) (Eq. 8), ||a~||^2 <= h + 1 and
/// ||delta|| <= ||W2||_op ||e|| <= sqrt(2) R, so G(x, y) = sqrt(2 (h + 1 + R^2 ||x~||^2)).
pub fn lipschitz_form(h: usize, radius: f64) -> LipschitzForm {
    LipschitzForm::BiasAugmented {
        a: radius * radius,
        b: h as f64 + 1.0,
    }
}

impl Loss for TanhNet {
    fn name(&self) -> &'static str {
        "tanh_net"
    }
    fn param_dim(&self) -> usize {
        self.h * (self.d + 1) + self.m * (self.h + 1)
    }
    fn check_data(&self, data: &Dataset) -> Result<()> {
        check_dim(self.d, data)?;
        check_class_labels(data, self.m)
    }
    fn value(&self, w: &[f64], x: &[f64], y: f64) -> f64 {
        let mut a = vec![0.0; self.h];
        let mut p = vec![0.0; self.m];
        let (_, w2) = self.split(w);
        let lse = self.forward(w, x, &mut a, &mut p);
        let yi = y as usize;
        let zy = dot(&w2[yi * (self.h + 1)..yi * (self.h + 1) + self.h], &a)
            + w2[yi * (self.h + 1) + self.h];
        lse - zy
    }
    fn grad(&self, w: &[f64], x: &[f64], y: f64, out: &mut [f64]) {
        let (d, h, m) = (self.d, self.h, self.m);
        let mut a = vec![0.0; h];
        let mut e = vec![0.0; m];
        self.forward(w, x, &mut a, &mut e);
        e[y as usize] -= 1.0;
        let (_, w2) = self.split(w);
        let (g1, g2) = out.split_at_mut(h * (d + 1));
        for j in 0..m {
            let row = &mut g2[j * (h + 1)..(j + 1) * (h + 1)];
            for k in 0..h {
                row[k] = e[j] * a[k];
            }
            row[h] = e[j];
        }
        for k in 0..h {
            let back: f64 = (0..m).map(|j| w2[j * (h + 1) + k] * e[j]).sum();
            let delta = back * (1.0 - a[k] * a[k]);
            let row = &mut g1[k * (d + 1)..(k + 1) * (d + 1)];
            for (r, xi) in row.iter_mut().zip(x) {
                *r = delta * xi;
            }
            row[d] = delta;
        }
    }
    /// Unconstrained (no radius), ||grad_W1|| grows with ||W2|| and there is no finite G.
    fn lipschitz_form(&self) -> Option<LipschitzForm> {
        self.radius.map(|r| lipschitz_form(self.h, r))
    }
    /// Layer-wise ghost norms for any per-sample bound (clipping or automatic clipping).
    fn bounded_grad_sum(
        &self,
        w: &[f64],
        data: Rows<'_>,
        batch: &[usize],
        bound: PerSampleBound,
        out: &mut [f64],
        scratch: &mut Scratch,
    ) -> ClipStats {
        let data = data.data();
        let (d, h, m, bsz) = (self.d, self.h, self.m, batch.len());
        let (dd, hh) = (d + 1, h + 1);
        let (w1, w2) = self.split(w);
        let xb = sized(&mut scratch.batch_rows, bsz * dd);
        gather_with_bias(data, batch, xb, None);
        // A~ = [tanh(X~ W1^T), 1]  (B x (h+1))
        let ab = sized(&mut scratch.hidden, bsz * hh);
        gemm(1.0, Mat::rm(xb, bsz, dd), Mat::rm_t(w1, h, dd), 0.0, ab, hh);
        for r in 0..bsz {
            let row = &mut ab[r * hh..(r + 1) * hh];
            row[..h].iter_mut().for_each(|v| *v = v.tanh());
            row[h] = 1.0;
        }
        // E = softmax(A~ W2^T) - onehot  (B x m)
        let e = sized(&mut scratch.residuals, bsz * m);
        gemm(1.0, Mat::rm(ab, bsz, hh), Mat::rm_t(w2, m, hh), 0.0, e, m);
        for (r, &i) in batch.iter().enumerate() {
            let er = &mut e[r * m..(r + 1) * m];
            softmax_residual_in_place(er, data.y[i] as usize);
        }
        // Delta = (E W2[:, :h]) * (1 - A^2)  (B x h)
        let delta = sized(&mut scratch.hidden_residuals, bsz * h);
        gemm(
            1.0,
            Mat::rm(e, bsz, m),
            Mat::rm_cols(w2, m, h, hh),
            0.0,
            delta,
            h,
        );
        let mut stats = ClipStats::new(bsz);
        for r in 0..bsz {
            let arow = &ab[r * hh..(r + 1) * hh];
            let drow = &mut delta[r * h..(r + 1) * h];
            for (dv, av) in drow.iter_mut().zip(arow) {
                *dv *= 1.0 - av * av;
            }
            let xrow = &xb[r * dd..(r + 1) * dd];
            let erow = &mut e[r * m..(r + 1) * m];
            let norm2 = dot(erow, erow) * dot(arow, arow) + dot(drow, drow) * dot(xrow, xrow);
            let norm = norm2.sqrt();
            let c = bound.factor(norm);
            stats.record(norm, c);
            if c != 1.0 {
                erow.iter_mut().for_each(|v| *v *= c);
                drow.iter_mut().for_each(|v| *v *= c);
            }
        }
        let (g1, g2) = out.split_at_mut(h * dd);
        // grad W1 = Delta^T X~ (h x (d+1)); grad W2 = E^T A~ (m x (h+1))
        gemm(
            1.0,
            Mat::rm_t(delta, bsz, h),
            Mat::rm(xb, bsz, dd),
            0.0,
            g1,
            dd,
        );
        gemm(1.0, Mat::rm_t(e, bsz, m), Mat::rm(ab, bsz, hh), 0.0, g2, hh);
        stats
    }
}
