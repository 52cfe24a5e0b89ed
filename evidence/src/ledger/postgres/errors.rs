//! The PostgreSQL store's errors in words: client errors and corrupt rows.

use std::fmt::Write as _;

use crate::ledger::LedgerError;

/// A client error in words: the server's own message for a server error,
/// else the error and its causes (tokio-postgres names only its kind, such
/// as "db error", and keeps the rest in its `source()`).
pub(in crate::ledger) fn reason(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut text = format!("{}: {}", db.severity(), db.message());
        if let Some(detail) = db.detail() {
            let _ = write!(text, " ({detail})");
        }
        if let Some(hint) = db.hint() {
            let _ = write!(text, "; hint: {hint}");
        }
        return text;
    }
    let mut text = e.to_string();
    let mut next = std::error::Error::source(e);
    while let Some(cause) = next {
        let _ = write!(text, ": {cause}");
        next = cause.source();
    }
    text
}

pub(super) fn corrupt(seq: u64, reason: impl Into<String>) -> LedgerError {
    LedgerError::Corrupt {
        seq,
        reason: reason.into(),
    }
}
