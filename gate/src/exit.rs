//! Exit codes: an API that pipelines branch on, kept in one place.

use std::process::ExitCode;

/// `gate verify`: the change passed. Other commands: success.
pub(crate) const PASS: u8 = 0;
/// `gate verify`: the change failed. Other commands: the thing checked is bad
/// (a bundle that does not verify, a ledger that was cut).
pub(crate) const FAIL: u8 = 1;
/// Usage, configuration or spec error: nothing ran.
pub(crate) const USAGE: u8 = 2;
/// Escalate: a doom loop or the attempt budget; hand the pipeline to a human.
pub(crate) const ESCALATE: u8 = 3;
/// Incomplete: the gate could not decide, or could not check (a ledger,
/// store or provider unreachable). Never 1 for that, which would read as tampering.
pub(crate) const INCOMPLETE: u8 = 4;
/// A panic.
pub(crate) const PANIC: u8 = 101;

/// The exit code as the process returns it.
pub(crate) fn code(c: u8) -> ExitCode {
    ExitCode::from(c)
}
