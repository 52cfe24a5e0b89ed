//! The SQLite ledger's handle: its connection, file and append queue.

use std::path::PathBuf;

use rusqlite::Connection;

use super::queue::Queue;

/// The SQLite ledger at one path.
#[derive(Debug)]
pub struct SqliteLedger {
    pub(super) conn: Connection,
    pub(super) path: PathBuf,
    pub(super) queue: Queue,
}
