//! The SQLite store's errors: failed statements and corrupt rows.

use std::path::Path;

use crate::ledger::error::LedgerError;

pub(super) fn corrupt(seq: u64, reason: impl Into<String>) -> LedgerError {
    LedgerError::Corrupt {
        seq,
        reason: reason.into(),
    }
}

/// A SQLite error as the ledger reports it, naming the file and what it was
/// doing. It borrows only the path, so a method can hold it while it
/// borrows the connection mutably.
pub(super) fn sql_err_at<'a>(
    path: &'a Path,
    action: &'static str,
) -> impl Fn(rusqlite::Error) -> LedgerError + Copy + 'a {
    move |source| LedgerError::Sql {
        path: path.to_path_buf(),
        action,
        source,
    }
}
