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
    /// A results file that cannot be used as asked: locked by a live run, holding finished
    /// records that a run would overwrite, edited or foreign lines, a run not yet complete. Not
    /// bad input: the state on disk.
    #[error("results: {0}")]
    Results(String),
    /// Data that cannot be used: NaN, ragged rows, dimension mismatch.
    #[error("data: {0}")]
    Data(String),
    /// A numerical failure (overflow, no convergence) reported instead of a silent NaN.
    #[error("numerical: {0}")]
    Numerical(String),
    /// Inputs a computation needs that were not given, by the names the paper writes them with
    /// (k, G, gamma, D_W, ...): a front end names them its own way (the CLI as `--k --G`, Python
    /// as keywords), so the library never spells a flag.
    #[error("{what} needs {}, which {} not given", .names.join(", "), if .names.len() == 1 { "was" } else { "were" })]
    Missing {
        /// What needs them (e.g. "Thm J.1").
        what: String,
        /// Their names, in the order they were found missing.
        names: Vec<String>,
    },
    /// A file that cannot be read or written.
    /// The OS message is printed once: it is in the message, not also in the source chain.
    #[error("{path}: {err}")]
    Io {
        /// The file.
        path: String,
        /// What the OS said.
        err: std::io::Error,
    },
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

/// A number in a readable form: `{:.6e}` beyond 1e6 or below 1e-4 in magnitude, plain
/// (shortest round-trip) otherwise; zero, NaN and infinities as themselves.
pub fn fmt_num(x: f64) -> String {
    let a = x.abs();
    if x == 0.0 || !x.is_finite() || (1e-4..=1e6).contains(&a) {
        let s = format!("{x}");
        if s.len() > 12 { format!("{x:.6}") } else { s }
    } else {
        format!("{x:.6e}")
    }
}

/// Replaces every long decimal number in `msg` (e.g. serde's rendering of 1e-300 with 300
/// digits) by its readable form; numbers of up to 24 characters (every u64) are left as written.
pub fn readable_numbers(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        match token.parse::<f64>() {
            Ok(v) if token.len() > 24 => out.push_str(&fmt_num(v)),
            _ => out.push_str(token),
        }
        token.clear();
    };
    for ch in msg.chars() {
        if ch.is_ascii_digit() || ch == '.' || (ch == '-' && token.is_empty()) {
            token.push(ch);
        } else {
            flush(&mut token, &mut out);
            out.push(ch);
        }
    }
    flush(&mut token, &mut out);
    out
}

/// Checks `lo < x < hi` (open interval) and names the value otherwise.
pub fn check_open(name: &str, x: f64, lo: f64, hi: f64) -> Result<f64> {
    if x.is_finite() && x > lo && x < hi {
        Ok(x)
    } else {
        Err(Error::param(format!(
            "{name} must lie in ({lo}, {hi}), but is {}",
            fmt_num(x)
        )))
    }
}

/// Checks `x > 0` and finite, and names the value otherwise.
pub fn check_positive(name: &str, x: f64) -> Result<f64> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(Error::param(format!(
            "{name} must be positive and finite, but is {}",
            fmt_num(x)
        )))
    }
}
