//! Everything the gate prints goes through here: results to stdout,
//! progress to stderr.
//!
//! Renderers are views of a [`crate::record::RunRecord`]; none recomputes a
//! verdict or a status.
#![allow(clippy::print_stdout, clippy::print_stderr)]

pub mod heartbeat;
pub mod human;
pub mod json;
pub mod progress;

use std::io::{self, Write};

/// Writes a result to stdout. A closed pipe (`gate verify | head`) is not an
/// error worth a message.
pub fn stdout(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Writes an error or a notice to stderr.
pub fn stderr(text: &str) {
    let mut err = io::stderr().lock();
    // Nothing sensible is left to do when stderr itself is gone.
    let _ = writeln!(err, "{text}");
}
