//! Bundles kept in the PostgreSQL ledger itself (schema 4): the envelope
//! bytes of a row whose `bundle_path` is `ledger:sha256:<hex>`, the default
//! bundle store when the ledger is PostgreSQL. An append inserts them in
//! the same statement as the row, so a bundle is durable exactly when its
//! row commits, and a refused append leaves no bundle behind.

use tokio_postgres::types::ToSql;

use super::errors::corrupt;
use super::handle::PgLedger;
use crate::ledger::error::{LedgerError, reason};

pub(super) const MIGRATION_4_BUNDLES: &str = "
CREATE TABLE bundles (
    sha256   TEXT  PRIMARY KEY,
    envelope BYTEA NOT NULL
);
";

/// Inserts a bundle unless one is kept under its sha256 already.
const INSERT: &str =
    "INSERT INTO bundles (sha256, envelope) VALUES ($1, $2) ON CONFLICT (sha256) DO NOTHING";

impl PgLedger {
    /// The envelope kept in the ledger under `sha256`, exactly as stored.
    pub fn bundle(&self, sha256: &str) -> Result<Option<Vec<u8>>, LedgerError> {
        self.op(async {
            let conn = self.conn().await?;
            let row = conn
                .query_opt("SELECT envelope FROM bundles WHERE sha256 = $1", &[&sha256])
                .await
                .map_err(self.pg_err("reading a bundle"))?;
            conn.release();
            row.map(|r| r.try_get(0))
                .transpose()
                .map_err(|e| corrupt(0, format!("bundles: {}", reason(&e))))
        })
    }

    /// Keeps `envelope` in the ledger (unless it is there already) and
    /// returns its sha256; durable when this returns.
    pub fn put_bundle(&mut self, envelope: &[u8]) -> Result<String, LedgerError> {
        let sha256 = crate::bundle::digest(envelope);
        self.op(async {
            let conn = self.conn().await?;
            conn.execute(INSERT, &[&sha256, &envelope])
                .await
                .map_err(self.pg_err("storing a bundle"))?;
            conn.release();
            Ok(())
        })?;
        Ok(sha256)
    }

    /// At most `limit` kept bundles whose sha256 sorts after `after`, in
    /// sha256 order.
    pub fn bundles_after(
        &self,
        after: &str,
        limit: u32,
    ) -> Result<Vec<(String, Vec<u8>)>, LedgerError> {
        self.op(async {
            let conn = self.conn().await?;
            let rows = conn
                .query(
                    "SELECT sha256, envelope FROM bundles WHERE sha256 > $1 \
                     ORDER BY sha256 LIMIT $2",
                    &[&after, &i64::from(limit)],
                )
                .await
                .map_err(self.pg_err("reading bundles"))?;
            conn.release();
            rows.iter()
                .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
                .collect::<Result<_, tokio_postgres::Error>>()
                .map_err(|e| corrupt(0, format!("bundles: {}", reason(&e))))
        })
    }

    /// Copies kept bundles exactly as they are, in one transaction.
    pub fn copy_bundles(&mut self, bundles: &[(String, Vec<u8>)]) -> Result<(), LedgerError> {
        let err = self.pg_err("copying bundles");
        self.op(async {
            let mut conn = self.conn().await?;
            let insert = conn.prepare_cached(INSERT).await.map_err(&err)?;
            let tx = conn.transaction().await.map_err(&err)?;
            let inserts = futures::future::try_join_all(bundles.iter().map(|(sha, bytes)| {
                let params: [&(dyn ToSql + Sync); 2] = [sha, bytes];
                let (tx, insert) = (&tx, &insert);
                async move { tx.execute(insert, &params).await }
            }));
            inserts.await.map_err(&err)?;
            tx.commit().await.map_err(&err)?;
            conn.release();
            Ok(())
        })
    }
}
