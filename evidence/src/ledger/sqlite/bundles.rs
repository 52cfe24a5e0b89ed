//! Bundles kept in the ledger itself (schema 4): the envelope bytes of a
//! row whose `bundle_path` is `ledger:sha256:<hex>`, inserted in the row's
//! own append transaction. SQLite keeps bundles in the state directory by
//! default; the table is here so both stores have one schema, and so a
//! ledger migrated from PostgreSQL keeps every bundle it held.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::errors::sql_err_at;
use super::handle::SqliteLedger;
use crate::ledger::error::LedgerError;

pub(super) const MIGRATION_4_BUNDLES: &str = "
CREATE TABLE bundles (
    sha256   TEXT PRIMARY KEY,
    envelope BLOB NOT NULL
);
";

/// Stores `envelope` under `sha256` unless a bundle is there already
/// (inside the caller's transaction).
pub(super) fn insert(conn: &Connection, sha256: &str, envelope: &[u8]) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT OR IGNORE INTO bundles (sha256, envelope) VALUES (?1, ?2)")?
        .execute(params![sha256, envelope])?;
    Ok(())
}

impl SqliteLedger {
    /// The envelope kept in the ledger under `sha256`, exactly as stored.
    pub fn bundle(&self, sha256: &str) -> Result<Option<Vec<u8>>, LedgerError> {
        self.conn
            .prepare_cached("SELECT envelope FROM bundles WHERE sha256 = ?1")
            .and_then(|mut s| s.query_row([sha256], |r| r.get(0)).optional())
            .map_err(self.sql_err("reading a bundle"))
    }

    /// Keeps `envelope` in the ledger (unless it is there already) and
    /// returns its sha256; durable when this returns.
    pub fn put_bundle(&mut self, envelope: &[u8]) -> Result<String, LedgerError> {
        let sha256 = crate::bundle::digest(envelope);
        insert(&self.conn, &sha256, envelope).map_err(self.sql_err("storing a bundle"))?;
        Ok(sha256)
    }

    /// At most `limit` kept bundles whose sha256 sorts after `after`, in
    /// sha256 order (a copy reads them page by page).
    pub fn bundles_after(
        &self,
        after: &str,
        limit: u32,
    ) -> Result<Vec<(String, Vec<u8>)>, LedgerError> {
        let err = self.sql_err("reading bundles");
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT sha256, envelope FROM bundles WHERE sha256 > ?1 ORDER BY sha256 LIMIT ?2",
            )
            .map_err(&err)?;
        stmt.query_map(params![after, limit], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(&err)?
            .collect::<Result<_, _>>()
            .map_err(&err)
    }

    /// Copies kept bundles exactly as they are, in one transaction.
    pub fn copy_bundles(&mut self, bundles: &[(String, Vec<u8>)]) -> Result<(), LedgerError> {
        let path = self.path.clone();
        let err = sql_err_at(&path, "copying bundles");
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        for (sha256, envelope) in bundles {
            insert(&tx, sha256, envelope).map_err(err)?;
        }
        tx.commit().map_err(err)
    }
}
