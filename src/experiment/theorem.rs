//! Which theorem's schedule and risk an experiment runs: the lower bounds run the schedule of the
//! upper bound that attains them, and Thm N.1 measures E||grad f||^2 rather than the excess risk.

use crate::theory::TheoremId;

/// The schedule a theorem's experiment runs: the lower bounds L.1 / 6.6 run K.1's schedule (Thm
/// 6.5 attains them), I.3 runs I.1's.
pub fn schedule_theorem(id: TheoremId) -> TheoremId {
    match id {
        TheoremId::T6_6 | TheoremId::L1 => TheoremId::T6_5,
        TheoremId::I3 => TheoremId::I1,
        t => t,
    }
}

/// True when the risk is E||grad f||^2 (Thm N.1), not the excess risk.
pub fn gradient_risk(id: TheoremId) -> bool {
    id.full_version() == TheoremId::N1
}
