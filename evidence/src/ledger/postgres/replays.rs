//! Replays (schema 14), as in the SQLite store.

use super::errors::corrupt;
use super::handle::PgLedger;
use crate::ledger::entries::ReplayEntry;
use crate::ledger::error::{LedgerError, reason};

pub(super) const MIGRATION_14_REPLAYS: &str = "
CREATE TABLE replays (
    replay_id       TEXT        PRIMARY KEY,
    recorded_at     TIMESTAMPTZ NOT NULL,
    routing         TEXT        NOT NULL,
    routing_blake3  TEXT        NOT NULL,
    bundle_path     TEXT        NOT NULL,
    envelope_sha256 TEXT        NOT NULL,
    summary         TEXT        NOT NULL
);
";

impl PgLedger {
    /// Records a replay whose bundle is durable.
    pub fn add_replay(&mut self, r: &ReplayEntry) -> Result<(), LedgerError> {
        let summary = r.summary.to_string();
        self.op(async {
            let conn = self.conn().await?;
            conn.execute(
                "INSERT INTO replays (replay_id, recorded_at, routing, routing_blake3, \
                 bundle_path, envelope_sha256, summary) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                &[
                    &r.replay_id,
                    &r.recorded_at,
                    &r.routing,
                    &r.routing_blake3,
                    &r.bundle_path,
                    &r.envelope_sha256,
                    &summary,
                ],
            )
            .await
            .map_err(self.pg_err("recording a replay"))?;
            conn.release();
            Ok(())
        })
    }

    /// Every replay, newest first; a summary that does not read is `null`.
    pub fn replays(&self) -> Result<Vec<ReplayEntry>, LedgerError> {
        self.op(async {
            let conn = self.conn().await?;
            let rows = conn
                .query(
                    "SELECT replay_id, recorded_at, routing, routing_blake3, bundle_path, \
                     envelope_sha256, summary FROM replays ORDER BY recorded_at DESC, replay_id",
                    &[],
                )
                .await
                .map_err(self.pg_err("reading replays"))?;
            conn.release();
            rows.iter()
                .map(|r| {
                    let summary: String = r.try_get(6)?;
                    Ok(ReplayEntry {
                        replay_id: r.try_get(0)?,
                        recorded_at: r.try_get(1)?,
                        routing: r.try_get(2)?,
                        routing_blake3: r.try_get(3)?,
                        bundle_path: r.try_get(4)?,
                        envelope_sha256: r.try_get(5)?,
                        summary: serde_json::from_str(&summary).unwrap_or_default(),
                    })
                })
                .collect::<Result<_, tokio_postgres::Error>>()
                .map_err(|e| corrupt(0, format!("replays: {}", reason(&e))))
        })
    }
}
