//! The crate's one error type. Messages name the bad value and, where there is one, the fix.

/// Every fallible function in the library returns this error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A parameter outside its domain (e.g. epsilon <= 0, delta outside (0, 1)).
    #[error("{0}")]
    InvalidParameter(String),
    /// A configuration file that does not parse or does not validate.
    #[error("config: {0}")]
    Config(String),
    /// Data that cannot be used: NaN, ragged rows, dimension mismatch.
    #[error("data: {0}")]
    Data(String),
    /// A numerical failure (overflow, no convergence) reported instead of a silent NaN.
    #[error("numerical: {0}")]
    Numerical(String),
    /// A file that cannot be read or written.
    /// The OS message is printed once: it is in the message, not also in the source chain.
    #[error("{path}: {err}")]
    Io { path: String, err: std::io::Error },
}

/// Crate-wide result.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Shorthand for [`Error::InvalidParameter`].
    pub fn param(msg: impl Into<String>) -> Self {
        Error::InvalidParameter(msg.into())
    }
    /// Shorthand for [`Error::Data`].
    pub fn data(msg: impl Into<String>) -> Self {
        Error::Data(msg.into())
    }
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            err: source,
        }
    }
}

/// Checks `lo < x < hi` (open interval) and names the value otherwise.
pub fn check_open(name: &str, x: f64, lo: f64, hi: f64) -> Result<f64> {
    if x.is_finite() && x > lo && x < hi {
        Ok(x)
    } else {
        Err(Error::param(format!(
            "{name} must lie in ({lo}, {hi}), but is {x}"
        )))
    }
}

/// Checks `x > 0` and finite, and names the value otherwise.
pub fn check_positive(name: &str, x: f64) -> Result<f64> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(Error::param(format!(
            "{name} must be positive and finite, but is {x}"
        )))
    }
}
