//! Which loss a run uses ([`LossSpec`]), as a config file or a command line names it, and how it
//! is built for a data set.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{
    AppendixLLoss, BinaryLogisticLoss, HuberLoss, LipschitzForm, Loss, RobustLoss, SharpLoss,
    SoftmaxLoss, TanhNet, appendix_l, binary_logistic, huber, logistic, robust, sharp, tanh_net,
};
use crate::dataset::Dataset;
use crate::error::{Error, Result};

/// Which loss a run uses, as read from a config file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "family", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossSpec {
    /// Multinomial logistic regression (softmax cross-entropy, bias appended), Appendix D.
    Logistic {
        /// Number of classes m (default: from the labels).
        classes: Option<usize>,
    },
    /// Binary logistic regression log(1 + exp(-y <w, x>)), y in {-1, 1}, no bias
    /// (G(x, y) = ||x||).
    BinaryLogistic,
    /// Huber linear regression with threshold c.
    Huber {
        /// The threshold c > 0 between the quadratic and linear parts.
        c: f64,
    },
    /// Weighted sharp loss a_i ||w - w_i*|| (Appendix E with weights).
    Sharp,
    /// The Appendix L loss of Eq. (97).
    AppendixL,
    /// Smooth nonconvex robust regression log(1 + r^2 / 2).
    Robust,
    /// Two-layer tanh network with `hidden` units (Appendix C).
    TanhNet {
        /// Hidden units h.
        hidden: usize,
        /// Number of classes m (default: from the labels).
        classes: Option<usize>,
        /// Radius R of the parameter ball, when constrained; gives G(x, y).
        radius: Option<f64>,
    },
}

impl LossSpec {
    /// The loss's G(x, y) in closed form, without building it (the same form the built loss
    /// evaluates).
    pub fn lipschitz_form(&self) -> Option<LipschitzForm> {
        match self {
            LossSpec::Logistic { .. } => Some(logistic::lipschitz_form()),
            LossSpec::BinaryLogistic => Some(binary_logistic::lipschitz_form()),
            LossSpec::Huber { c } => Some(huber::lipschitz_form(*c)),
            LossSpec::Sharp => Some(sharp::lipschitz_form()),
            LossSpec::AppendixL => Some(appendix_l::lipschitz_form()),
            LossSpec::Robust => Some(robust::lipschitz_form()),
            LossSpec::TanhNet { hidden, radius, .. } => {
                radius.map(|r| tanh_net::lipschitz_form(*hidden, r))
            }
        }
    }

    /// Builds the loss for data with `d` features, checking it against the data.
    pub fn build(&self, data: &Dataset) -> Result<Box<dyn Loss>> {
        let d = data.d;
        let classes = |c: &Option<usize>| -> Result<usize> {
            let m = match c {
                Some(m) => *m,
                None => data.num_classes().ok_or_else(|| {
                    Error::data("labels are not class indices 0..m-1 (non-integer or negative)")
                })?,
            };
            if m < 2 {
                return Err(Error::param(format!(
                    "a multinomial loss needs at least 2 classes, but classes = {m}"
                )));
            }
            Ok(m)
        };
        // About ten parameter-sized vectors live at once (iterates, gradients, averages): refuse
        // a parameter count that does not fit before allocating any of them.
        let params = |m: usize| -> f64 {
            let (d, m) = (d as f64, m as f64);
            match self {
                LossSpec::TanhNet { hidden, .. } => {
                    *hidden as f64 * (d + 1.0) + m * (*hidden as f64 + 1.0)
                }
                _ => m * (d + 1.0),
            }
        };
        let fits = |m: usize| -> Result<usize> {
            let what = match self {
                LossSpec::TanhNet { hidden, .. } => {
                    format!("[loss] hidden = {hidden} with {m} classes and d = {d}")
                }
                _ => format!("[loss] {m} classes (largest label + 1) and d = {d}"),
            };
            crate::limits::check_memory(&what, 80.0 * params(m))?;
            Ok(m)
        };
        let classes = |c: &Option<usize>| -> Result<usize> {
            let m = fits(classes(c)?)?;
            // Inferred, labels {1, 2} would be 3 classes, one of them never seen.
            if let (None, Some(absent)) = (c, data.first_absent_class(m)) {
                return Err(Error::data(format!(
                    "labels are read as classes 0..{} (the largest label + 1), but class \
                     {absent} has no sample: relabel to 0..m-1 with every class present, or \
                     give the loss's classes = {m} to mean it",
                    m - 1
                )));
            }
            Ok(m)
        };
        let loss: Box<dyn Loss> = match self {
            LossSpec::Logistic { classes: c } => Box::new(SoftmaxLoss::new(d, classes(c)?)),
            LossSpec::BinaryLogistic => Box::new(BinaryLogisticLoss::new(d)),
            LossSpec::Huber { c } => Box::new(HuberLoss::new(d, *c)?),
            LossSpec::Sharp => Box::new(SharpLoss::new(d)),
            LossSpec::AppendixL => Box::new(AppendixLLoss::new(d)),
            LossSpec::Robust => Box::new(RobustLoss::new(d)),
            LossSpec::TanhNet {
                hidden,
                classes: c,
                radius,
            } => Box::new(TanhNet::new(d, *hidden, classes(c)?, *radius)?),
        };
        loss.check_data(data)?;
        Ok(loss)
    }
}

/// The family names a loss can be given by alone, with their defaults (huber: c = 1).
pub const LOSS_NAMES: &str = "logistic, binary_logistic, huber, sharp, appendix_l, robust";

/// A loss by family name (`logistic`, `binary_logistic`, `huber` with c = 1, `sharp`,
/// `appendix_l`, `robust`) or as an inline TOML table
/// (`{ family = "tanh_net", hidden = 16, radius = 1.0 }`). The command line
/// (`--loss`) and the Python module parse loss names here, so their defaults cannot differ.
impl FromStr for LossSpec {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let table = if s.trim_start().starts_with('{') {
            s.to_string()
        } else if s == "huber" {
            "{ family = \"huber\", c = 1.0 }".to_string()
        } else {
            format!("{{ family = \"{s}\" }}")
        };
        #[derive(Deserialize)]
        struct Wrap {
            loss: LossSpec,
        }
        toml::from_str::<Wrap>(&format!("loss = {table}"))
            .map(|w| w.loss)
            .map_err(|e| {
                Error::param(format!(
                    "'{s}' is not a loss ({}): use {LOSS_NAMES}, or an inline table such as \
                     '{{ family = \"tanh_net\", hidden = 16, radius = 1.0 }}'",
                    e.message().trim()
                ))
            })
    }
}
