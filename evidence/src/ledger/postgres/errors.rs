//! The PostgreSQL store's corrupt-row error.

use crate::ledger::error::LedgerError;

pub(super) fn corrupt(seq: u64, reason: impl Into<String>) -> LedgerError {
    LedgerError::Corrupt {
        seq,
        reason: reason.into(),
    }
}
