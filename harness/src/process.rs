//! One subprocess, in its own process group, that cannot wedge the gate.

use std::path::Path;
use std::time::Duration;

use crate::HarnessError;

/// What a plain argv run produced (for the gate's own tools, e.g. `git`).
#[derive(Debug, Clone, Default)]
pub struct ProcessOutput {
    /// Exit code, when the process exited on its own.
    pub exit_code: Option<i32>,
    /// Whether the timeout killed the process group.
    pub timed_out: bool,
    /// stdout, at most the cap.
    pub stdout: Vec<u8>,
    /// stderr, at most the cap (its tail).
    pub stderr: Vec<u8>,
}

/// Runs `argv` (no shell) in `cwd` with a timeout and output cap.
pub async fn run_argv(
    argv: &[&str],
    cwd: &Path,
    timeout: Duration,
    cap: usize,
) -> Result<ProcessOutput, HarnessError> {
    let _ = (argv, cwd, timeout, cap);
    todo!("process::run_argv")
}
