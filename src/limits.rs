//! Up-front resource checks, so that bad input is refused before any work is wasted: the memory
//! a command will allocate (against the machine's available memory), the work a run will do
//! (against a generous limit that `--force` lifts), integers derived from floats (never
//! saturated), and one readable format for printed numbers.

use crate::error::{Error, Result, fmt_num};

/// Work above this many gradient coordinates (sum over steps of b * parameters) is refused
/// unless forced: about an hour or more of one core. The shipped `verify --full` needs ~1e11.
pub const WORK_LIMIT: f64 = 1e13;

/// The most Renyi orders, and the most phases, one RDP account may be given (the Python
/// `epsilon(orders=..., phase=...)`), checked before the list is read; what they cost is then
/// estimated by [`rdp_terms`] against [`MAX_RDP_TERMS`].
pub const MAX_RDP_LIST: usize = 100_000;

/// Series terms one RDP account may sum, about 8 s: measured 70-85 ns a term (one phase over
/// dp_accounting's 156 default orders, 2.5e4 terms: 2.0 ms; 1000 integer orders up to 10^6:
/// 34 s), so 10^7 orders at most 100 (1.5e9 terms, 100 s measured) are refused.
pub const MAX_RDP_TERMS: f64 = 1e8;

/// The series terms of one phase of the subsampled Gaussian's RDP over `orders`: the binomial
/// expansion of an integer order alpha sums alpha terms, the fractional series about as many,
/// and a small order costs as much as 150 (10 us measured).
pub fn rdp_terms(orders: &[f64]) -> f64 {
    orders.iter().map(|a| a.max(150.0)).sum()
}

/// Refuses an RDP account of `phases` phases over `orders` whose [`rdp_terms`] exceed
/// [`MAX_RDP_TERMS`].
pub fn check_rdp_work(orders: &[f64], phases: usize) -> Result<()> {
    let terms = rdp_terms(orders) * phases as f64;
    if terms.is_nan() || terms > MAX_RDP_TERMS {
        return Err(Error::param(format!(
            "{} orders (the largest {}) over {phases} phases: about {} RDP series terms (an \
             order alpha costs max(alpha, 150)), more than the {} (about 8 s) one account \
             sums; give fewer or smaller orders",
            orders.len(),
            fmt_num(orders.iter().cloned().fold(f64::NAN, f64::max)),
            fmt_num(terms),
            fmt_num(MAX_RDP_TERMS)
        )));
    }
    Ok(())
}

/// The largest integer a float may be turned into: every integer up to 2^53 is exact in f64.
pub const MAX_EXACT_INT: f64 = 9_007_199_254_740_992.0;

/// Available memory in bytes: `MemAvailable` of /proc/meminfo on Linux, lowered to the
/// address-space limit (`ulimit -v`) where one is set; `None` when neither is known.
pub fn available_memory() -> Option<f64> {
    let meminfo = (|| {
        let text = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
        let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024.0)
    })();
    match (meminfo, address_space_limit()) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(unix)]
fn address_space_limit() -> Option<f64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass and has no other effect.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut r) } == 0;
    (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur as f64)
}

#[cfg(not(unix))]
fn address_space_limit() -> Option<f64> {
    None
}

/// Bytes in a readable unit.
pub fn fmt_bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v >= 1e6 {
        format!("{v:.3e} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Share of the available memory one estimated allocation may take: the rest is for what the
/// estimate does not count (the binary, the allocator's slack, buffers and copies made along
/// the way). Without it an estimate just at the limit passes and the process then aborts.
pub const MEMORY_SHARE: f64 = 0.75;

/// Refuses an allocation of `bytes` (an estimate from the config, before allocating) that does
/// not fit in [`MEMORY_SHARE`] of the available memory; `what` names the inputs that decide its
/// size.
pub fn check_memory(what: &str, bytes: f64) -> Result<()> {
    let avail = available_memory().map(|a| MEMORY_SHARE * a);
    let too_big = match avail {
        Some(a) => bytes.is_nan() || bytes >= a,
        // Without /proc/meminfo, refuse only what no machine has (1 TB).
        None => bytes.is_nan() || bytes > 1024f64.powi(4),
    };
    if too_big {
        let have = avail
            .map(|a| {
                format!(
                    "only {} may be used (75% of the available memory)",
                    fmt_bytes(a)
                )
            })
            .unwrap_or_else(|| "that exceeds 1 TB".to_string());
        return Err(Error::param(format!(
            "{what}: needs about {} of memory, but {have}; reduce it",
            fmt_bytes(bytes)
        )));
    }
    Ok(())
}

/// Refuses work above [`WORK_LIMIT`] unless `force`; `what` names the inputs that decide it.
pub fn check_work(what: &str, work: f64, force: bool) -> Result<()> {
    if !work.is_finite() || (work > WORK_LIMIT && !force) {
        return Err(Error::param(format!(
            "{what}: estimated work {} gradient coordinates exceeds the limit {}; \
             reduce it or pass --force",
            fmt_num(work),
            fmt_num(WORK_LIMIT)
        )));
    }
    Ok(())
}

/// `x` as an integer count, refusing NaN, negative values and values beyond 2^53 (where a
/// cast would round or saturate) with a message naming `name`.
pub fn to_count(name: &str, x: f64) -> Result<u64> {
    if x.is_finite() && (0.0..=MAX_EXACT_INT).contains(&x) {
        Ok(x as u64)
    } else {
        Err(Error::param(format!(
            "{name} = {} does not fit in an integer count (at most 2^53 = {})",
            fmt_num(x),
            fmt_num(MAX_EXACT_INT)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_refuse_overflow_and_nan() {
        assert_eq!(to_count("T", 1e6).unwrap(), 1_000_000);
        assert!(
            to_count("T", 1e30)
                .unwrap_err()
                .to_string()
                .contains("T = 1.000000e30")
        );
        assert!(to_count("T", f64::NAN).is_err());
        assert!(to_count("T", -1.0).is_err());
    }

    #[test]
    fn numbers_print_readably() {
        assert_eq!(fmt_num(2.5), "2.5");
        assert_eq!(fmt_num(1e300), "1.000000e300");
        assert_eq!(fmt_num(1e-300), "1.000000e-300");
        assert_eq!(fmt_num(f64::INFINITY), "inf");
        assert_eq!(fmt_num(1.0 / 3.0), "0.333333");
    }

    #[test]
    fn memory_beyond_the_machine_is_refused() {
        assert!(check_memory("x", 1e30).is_err());
        assert!(check_memory("x", 1024.0).is_ok());
        // An estimate at the available memory itself leaves nothing for the rest: refused.
        if let Some(a) = available_memory() {
            assert!(check_memory("x", a).is_err());
            assert!(check_memory("x", MEMORY_SHARE * a).is_err());
        }
    }

    #[test]
    fn rdp_work_counts_orders_by_their_size() {
        // dp_accounting's grid: 153 orders up to 128 (150 terms each), then 256, 512, 1024.
        let grid = crate::privacy::rdp::default_orders();
        assert_eq!(grid.len(), 156);
        assert_eq!(rdp_terms(&grid), 153.0 * 150.0 + 1792.0);
        assert!(check_rdp_work(&grid, 4000).is_ok());
        assert!(check_rdp_work(&grid, 5000).is_err());
        let many = vec![50.0; 10_000_000];
        assert!(check_rdp_work(&many, 1).is_err());
        assert!(check_rdp_work(&[1e9], 1).is_err());
    }

    #[test]
    fn work_above_the_limit_needs_force() {
        assert!(check_work("x", 1e15, false).is_err());
        assert!(check_work("x", 1e15, true).is_ok());
        assert!(check_work("x", f64::INFINITY, true).is_err());
    }
}
