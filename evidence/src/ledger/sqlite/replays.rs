//! Replays (schema 14): each `gate replay`'s bundle and its scores' summary,
//! for the report. Not runs: outside the chain, no seq.

use rusqlite::params;

use super::columns::ts;
use super::handle::SqliteLedger;
use crate::ledger::entries::ReplayEntry;
use crate::ledger::error::LedgerError;

pub(super) const MIGRATION_14_REPLAYS: &str = "
CREATE TABLE replays (
    replay_id       TEXT PRIMARY KEY,
    recorded_at     TEXT NOT NULL,
    routing         TEXT NOT NULL,
    routing_blake3  TEXT NOT NULL,
    bundle_path     TEXT NOT NULL,
    envelope_sha256 TEXT NOT NULL,
    summary         TEXT NOT NULL
);
";

impl SqliteLedger {
    /// Records a replay whose bundle is durable.
    pub fn add_replay(&mut self, r: &ReplayEntry) -> Result<(), LedgerError> {
        self.conn
            .prepare_cached(
                "INSERT INTO replays (replay_id, recorded_at, routing, routing_blake3, \
                 bundle_path, envelope_sha256, summary) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    r.replay_id,
                    ts(&r.recorded_at),
                    r.routing,
                    r.routing_blake3,
                    r.bundle_path,
                    r.envelope_sha256,
                    r.summary.to_string()
                ])
            })
            .map_err(self.sql_err("recording a replay"))?;
        Ok(())
    }

    /// Every replay, newest first; a summary that does not read is `null`.
    pub fn replays(&self) -> Result<Vec<ReplayEntry>, LedgerError> {
        let err = self.sql_err("reading replays");
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT replay_id, recorded_at, routing, routing_blake3, bundle_path, \
                 envelope_sha256, summary FROM replays ORDER BY recorded_at DESC, replay_id",
            )
            .map_err(&err)?;
        stmt.query_map([], |r| {
            let at: String = r.get(1)?;
            let summary: String = r.get(6)?;
            Ok(ReplayEntry {
                replay_id: r.get(0)?,
                recorded_at: chrono::DateTime::parse_from_rfc3339(&at)
                    .map(|t| t.with_timezone(&chrono::Utc))
                    .unwrap_or_default(),
                routing: r.get(2)?,
                routing_blake3: r.get(3)?,
                bundle_path: r.get(4)?,
                envelope_sha256: r.get(5)?,
                summary: serde_json::from_str(&summary).unwrap_or_default(),
            })
        })
        .map_err(&err)?
        .collect::<Result<_, _>>()
        .map_err(&err)
    }
}
