//! The ledger's side tables: outcomes, dismissals, overrides and circuit
//! breakers. Outcomes, dismissals and overrides are append-only events about
//! runs; breakers are shared mutable state, updated in one transaction.

use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, Row, TransactionBehavior, params};

use super::columns::ts;
use super::errors::sql_err_at;
use super::handle::SqliteLedger;
use crate::ledger::entries::{BaseResult, BreakerRecord, Dismissal, OutcomeEntry, OverrideEntry};
use crate::ledger::error::LedgerError;

pub(super) const MIGRATION_2_EVENTS: &str = "
CREATE TABLE outcomes (
    id          INTEGER PRIMARY KEY,
    run_id      TEXT    NOT NULL REFERENCES runs (run_id),
    broken      INTEGER NOT NULL CHECK (broken IN (0, 1)),
    reason      TEXT,
    source      TEXT,
    recorded_at TEXT    NOT NULL
);
CREATE INDEX outcomes_by_run ON outcomes (run_id, id);
CREATE TABLE dismissals (
    id          INTEGER PRIMARY KEY,
    run_id      TEXT    NOT NULL REFERENCES runs (run_id),
    spec_id     TEXT    NOT NULL,
    finding_id  TEXT    NOT NULL,
    reason      TEXT    NOT NULL,
    code_digest TEXT,
    recorded_at TEXT    NOT NULL
);
CREATE INDEX dismissals_by_spec ON dismissals (spec_id, finding_id);
CREATE TABLE overrides (
    id             INTEGER PRIMARY KEY,
    run_id         TEXT    NOT NULL REFERENCES runs (run_id),
    spec_id        TEXT    NOT NULL,
    reason         TEXT    NOT NULL,
    by_name        TEXT    NOT NULL,
    content_digest TEXT    NOT NULL,
    bundle_path    TEXT    NOT NULL,
    bundle_sha256  TEXT    NOT NULL UNIQUE,
    recorded_at    TEXT    NOT NULL
);
CREATE INDEX overrides_by_spec ON overrides (spec_id, id);
CREATE TABLE breakers (
    model                TEXT    PRIMARY KEY,
    state                TEXT    NOT NULL,
    consecutive_failures INTEGER NOT NULL,
    recent               TEXT    NOT NULL,
    opened_at            TEXT,
    cooldown_s           INTEGER NOT NULL,
    probe_owner          TEXT,
    probe_until          TEXT,
    updated_at           TEXT    NOT NULL
);
";

/// Schema 6: criteria's results on a base commit, kept so a series runs
/// the base once (keyed by the commit, the item, its definition and its
/// verifiers' digest); and, for the report, each run's passed code-decided
/// criteria and how many of them have fail-to-pass evidence (runs recorded
/// before count none of either).
pub(super) const MIGRATION_6_BASE_RESULTS: &str = "
CREATE TABLE base_results (
    base_commit       TEXT NOT NULL,
    item_id           TEXT NOT NULL,
    definition_digest TEXT NOT NULL,
    verifier_digest   TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('passed', 'failed')),
    reason            TEXT,
    output_digest     TEXT NOT NULL,
    run_id            TEXT NOT NULL,
    recorded_at       TEXT NOT NULL,
    PRIMARY KEY (base_commit, item_id, definition_digest, verifier_digest)
);
ALTER TABLE run_facts ADD COLUMN criteria_passed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE run_facts ADD COLUMN fail_to_pass INTEGER NOT NULL DEFAULT 0;
";

/// Schema 7: what ties a side record to the gate's key. An outcome or a
/// dismissal keeps the DSSE envelope signing its fields, a breaker the one
/// signing its state; rows from before have none, and the readers that
/// decide leave them out.
pub(super) const MIGRATION_7_SIGNED_EVENTS: &str = "
ALTER TABLE outcomes ADD COLUMN envelope TEXT;
ALTER TABLE dismissals ADD COLUMN envelope TEXT;
ALTER TABLE breakers ADD COLUMN seal TEXT;
";

/// Schema 8: the error that last counted against a breaker (the one that
/// opened an open one), so a skipped call says what the outage was.
pub(super) const MIGRATION_8_BREAKER_ERROR: &str = "
ALTER TABLE breakers ADD COLUMN last_error TEXT;
";

/// Schema 9: who made a dismissal: `agent` for one made from inside an
/// agent's session, which never quiets a critical or warning finding.
pub(super) const MIGRATION_9_DISMISSED_BY: &str = "
ALTER TABLE dismissals ADD COLUMN by_name TEXT;
";

/// Schema 10: what a harvested outcome rests on (landed commits, the
/// revert or fix, blamed lines, confidence), as JSON text; none for an
/// outcome a person recorded.
pub(super) const MIGRATION_10_OUTCOME_EVIDENCE: &str = "
ALTER TABLE outcomes ADD COLUMN evidence TEXT;
";

/// Schema 11: what the last `gate outcome harvest` found of each run it
/// looked at (`not_integrated`, `pending`, `labelled`): read by the report
/// for its not-integrated count, decided nothing by, so not signed.
pub(super) const MIGRATION_11_HARVEST_STATES: &str = "
CREATE TABLE harvest_states (
    run_id     TEXT PRIMARY KEY REFERENCES runs (run_id),
    state      TEXT NOT NULL,
    checked_at TEXT NOT NULL
);
";

/// Schema 12: how many times a breaker's state was written, signed with
/// it, so a state copied back from earlier is told from the current one.
pub(super) const MIGRATION_12_BREAKER_GENERATION: &str = "
ALTER TABLE breakers ADD COLUMN generation BIGINT NOT NULL DEFAULT 0;
";

const BASE_RESULT_COLUMNS: &str = "base_commit, item_id, definition_digest, verifier_digest, \
     status, reason, output_digest, run_id, recorded_at";

fn base_result(r: &Row<'_>) -> rusqlite::Result<BaseResult> {
    Ok(BaseResult {
        base_commit: r.get(0)?,
        item_id: r.get(1)?,
        definition_digest: r.get(2)?,
        verifier_digest: r.get(3)?,
        status: r.get(4)?,
        reason: r.get(5)?,
        output_digest: r.get(6)?,
        run_id: r.get(7)?,
        recorded_at: time(&r.get::<_, String>(8)?)?,
    })
}

fn time(text: &str) -> Result<DateTime<Utc>, rusqlite::Error> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
        })
}

fn opt_time(text: Option<&str>) -> Result<Option<DateTime<Utc>>, rusqlite::Error> {
    text.map(time).transpose()
}

fn outcome(r: &Row<'_>) -> Result<OutcomeEntry, rusqlite::Error> {
    Ok(OutcomeEntry {
        run_id: r.get(0)?,
        broken: r.get::<_, i64>(1)? != 0,
        reason: r.get(2)?,
        source: r.get(3)?,
        recorded_at: time(&r.get::<_, String>(4)?)?,
        envelope: r.get(5)?,
        evidence: evidence_from(r.get::<_, Option<String>>(6)?.as_deref()),
    })
}

/// An outcome's evidence as stored; text that does not read is kept as
/// none (the envelope then no longer vouches for the row).
pub(super) fn evidence_from(text: Option<&str>) -> Option<crate::ledger::entries::OutcomeEvidence> {
    text.and_then(|t| serde_json::from_str(t).ok())
}

/// An outcome's evidence as it is stored.
pub(super) fn evidence_text(o: &OutcomeEntry) -> Option<String> {
    o.evidence
        .as_ref()
        .and_then(|e| serde_json::to_string(e).ok())
}

fn dismissal(r: &Row<'_>) -> Result<Dismissal, rusqlite::Error> {
    Ok(Dismissal {
        run_id: r.get(0)?,
        spec_id: r.get(1)?,
        finding_id: r.get(2)?,
        reason: r.get(3)?,
        code_digest: r.get(4)?,
        recorded_at: time(&r.get::<_, String>(5)?)?,
        envelope: r.get(6)?,
        by: r.get(7)?,
    })
}

fn override_entry(r: &Row<'_>) -> Result<OverrideEntry, rusqlite::Error> {
    Ok(OverrideEntry {
        run_id: r.get(0)?,
        spec_id: r.get(1)?,
        reason: r.get(2)?,
        by: r.get(3)?,
        content_digest: r.get(4)?,
        bundle_path: r.get(5)?,
        bundle_sha256: r.get(6)?,
        recorded_at: time(&r.get::<_, String>(7)?)?,
    })
}

fn breaker(r: &Row<'_>) -> Result<BreakerRecord, rusqlite::Error> {
    let owner: Option<String> = r.get(6)?;
    let until = opt_time(r.get::<_, Option<String>>(7)?.as_deref())?;
    Ok(BreakerRecord {
        model: r.get(0)?,
        state: r.get(1)?,
        consecutive_failures: r.get(2)?,
        recent: r.get(3)?,
        opened_at: opt_time(r.get::<_, Option<String>>(4)?.as_deref())?,
        cooldown_s: r.get(5)?,
        probe: owner.zip(until),
        updated_at: time(&r.get::<_, String>(8)?)?,
        seal: r.get(9)?,
        last_error: r.get(10)?,
        generation: r.get::<_, i64>(11).map(|g| u64::try_from(g).unwrap_or(0))?,
    })
}

const OVERRIDE_COLUMNS: &str =
    "run_id, spec_id, reason, by_name, content_digest, bundle_path, bundle_sha256, recorded_at";
const BREAKER_COLUMNS: &str = "model, state, consecutive_failures, recent, opened_at, cooldown_s, \
     probe_owner, probe_until, updated_at, seal, last_error, generation";
const OUTCOME_COLUMNS: &str = "run_id, broken, reason, source, recorded_at, envelope, evidence";
const DISMISSAL_COLUMNS: &str =
    "run_id, spec_id, finding_id, reason, code_digest, recorded_at, envelope, by_name";

impl SqliteLedger {
    fn require_run(&self, run_id: &str) -> Result<(), LedgerError> {
        if self.get(run_id)?.is_none() {
            return Err(LedgerError::NotFound(run_id.to_owned()));
        }
        Ok(())
    }

    /// Records what happened after a run's decision; earlier outcomes stay
    /// as history, the latest counts.
    pub fn add_outcome(&mut self, o: &OutcomeEntry) -> Result<(), LedgerError> {
        self.add_outcomes(std::slice::from_ref(o))
    }

    /// Records several outcomes in one transaction: all of them or none.
    pub fn add_outcomes(&mut self, outcomes: &[OutcomeEntry]) -> Result<(), LedgerError> {
        let path = self.path.clone();
        let err = sql_err_at(&path, "recording an outcome");
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        for o in outcomes {
            let known = tx
                .prepare_cached("SELECT 1 FROM runs WHERE run_id = ?1")
                .and_then(|mut s| s.exists([&o.run_id]))
                .map_err(err)?;
            if !known {
                return Err(LedgerError::NotFound(o.run_id.clone()));
            }
            tx.prepare_cached(
                "INSERT INTO outcomes \
                 (run_id, broken, reason, source, recorded_at, envelope, evidence) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    o.run_id,
                    i64::from(o.broken),
                    o.reason,
                    o.source,
                    ts(&o.recorded_at),
                    o.envelope,
                    evidence_text(o)
                ])
            })
            .map_err(err)?;
        }
        tx.commit().map_err(err)
    }

    /// Records what a harvest found of each run, over what an earlier one
    /// found: all of it or none.
    pub fn set_harvest_states(
        &mut self,
        states: &[(String, String)],
        at: DateTime<Utc>,
    ) -> Result<(), LedgerError> {
        let path = self.path.clone();
        let err = sql_err_at(&path, "recording what the harvest found");
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        for (run_id, state) in states {
            tx.prepare_cached(
                "INSERT INTO harvest_states (run_id, state, checked_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (run_id) DO UPDATE SET state = excluded.state, \
                 checked_at = excluded.checked_at",
            )
            .and_then(|mut s| s.execute(params![run_id, state, ts(&at)]))
            .map_err(err)?;
        }
        tx.commit().map_err(err)
    }

    /// What the last harvest found of each run it looked at: (seq, state).
    pub fn harvest_states(&self) -> Result<Vec<(u64, String)>, LedgerError> {
        let err = self.sql_err("reading what the harvest found");
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT r.seq, h.state FROM harvest_states h \
                 JOIN runs r ON r.run_id = h.run_id ORDER BY r.seq",
            )
            .map_err(&err)?;
        stmt.query_map([], |r| Ok((r.get::<_, u64>(0)?, r.get::<_, String>(1)?)))
            .map_err(&err)?
            .collect::<Result<_, _>>()
            .map_err(&err)
    }

    /// Every outcome of a run, oldest first.
    pub fn outcomes(&self, run_id: &str) -> Result<Vec<OutcomeEntry>, LedgerError> {
        let err = self.sql_err("reading outcomes");
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {OUTCOME_COLUMNS} FROM outcomes WHERE run_id = ?1 ORDER BY id"
            ))
            .map_err(&err)?;
        stmt.query_map([run_id], outcome)
            .map_err(&err)?
            .collect::<Result<_, _>>()
            .map_err(&err)
    }

    /// The latest outcome of every run that has one.
    pub fn latest_outcomes(&self) -> Result<Vec<OutcomeEntry>, LedgerError> {
        let err = self.sql_err("reading outcomes");
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {OUTCOME_COLUMNS} FROM outcomes o \
                 WHERE id = (SELECT MAX(id) FROM outcomes WHERE run_id = o.run_id) ORDER BY id"
            ))
            .map_err(&err)?;
        stmt.query_map([], outcome)
            .map_err(&err)?
            .collect::<Result<_, _>>()
            .map_err(&err)
    }

    /// Every outcome, oldest first (what a copy of the ledger carries over).
    pub fn all_outcomes(&self) -> Result<Vec<OutcomeEntry>, LedgerError> {
        let err = self.sql_err("reading outcomes");
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {OUTCOME_COLUMNS} FROM outcomes ORDER BY id"
            ))
            .map_err(&err)?;
        stmt.query_map([], outcome)
            .map_err(&err)?
            .collect::<Result<_, _>>()
            .map_err(&err)
    }

    /// Records a dismissal.
    pub fn add_dismissal(&mut self, d: &Dismissal) -> Result<(), LedgerError> {
        self.require_run(&d.run_id)?;
        self.conn
            .execute(
                &format!(
                    "INSERT INTO dismissals ({DISMISSAL_COLUMNS}) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
                ),
                params![
                    d.run_id,
                    d.spec_id,
                    d.finding_id,
                    d.reason,
                    d.code_digest,
                    ts(&d.recorded_at),
                    d.envelope,
                    d.by
                ],
            )
            .map_err(self.sql_err("recording a dismissal"))?;
        Ok(())
    }

    /// Dismissals of a spec's findings, oldest first (all specs with `None`).
    pub fn dismissals(&self, spec_id: Option<&str>) -> Result<Vec<Dismissal>, LedgerError> {
        let err = self.sql_err("reading dismissals");
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {DISMISSAL_COLUMNS} FROM dismissals WHERE ?1 IS NULL OR spec_id = ?1 \
                 ORDER BY id"
            ))
            .map_err(&err)?;
        stmt.query_map([spec_id], dismissal)
            .map_err(&err)?
            .collect::<Result<_, _>>()
            .map_err(&err)
    }

    /// A criterion's kept result on a base commit, for this definition and
    /// these verifiers.
    pub fn base_result(
        &self,
        base_commit: &str,
        item_id: &str,
        definition_digest: &str,
        verifier_digest: &str,
    ) -> Result<Option<BaseResult>, LedgerError> {
        let err = self.sql_err("reading a base result");
        self.conn
            .prepare_cached(&format!(
                "SELECT {BASE_RESULT_COLUMNS} FROM base_results WHERE base_commit = ?1 \
                 AND item_id = ?2 AND definition_digest = ?3 AND verifier_digest = ?4"
            ))
            .map_err(&err)?
            .query_row(
                params![base_commit, item_id, definition_digest, verifier_digest],
                base_result,
            )
            .optional()
            .map_err(&err)
    }

    /// Keeps a criterion's result on a base commit; the first kept for a key stays.
    pub fn put_base_result(&mut self, b: &BaseResult) -> Result<(), LedgerError> {
        self.conn
            .execute(
                &format!(
                    "INSERT OR IGNORE INTO base_results ({BASE_RESULT_COLUMNS}) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
                ),
                params![
                    b.base_commit,
                    b.item_id,
                    b.definition_digest,
                    b.verifier_digest,
                    b.status,
                    b.reason,
                    b.output_digest,
                    b.run_id,
                    ts(&b.recorded_at)
                ],
            )
            .map_err(self.sql_err("keeping a base result"))?;
        Ok(())
    }

    /// Records an override whose signed bundle is already durable.
    pub fn add_override(&mut self, o: &OverrideEntry) -> Result<(), LedgerError> {
        self.require_run(&o.run_id)?;
        self.conn
            .execute(
                &format!("INSERT INTO overrides ({OVERRIDE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
                params![
                    o.run_id,
                    o.spec_id,
                    o.reason,
                    o.by,
                    o.content_digest,
                    o.bundle_path,
                    o.bundle_sha256,
                    ts(&o.recorded_at)
                ],
            )
            .map_err(self.sql_err("recording an override"))?;
        Ok(())
    }

    /// Overrides of a spec's runs, oldest first (all specs with `None`).
    pub fn overrides(&self, spec_id: Option<&str>) -> Result<Vec<OverrideEntry>, LedgerError> {
        let err = self.sql_err("reading overrides");
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {OVERRIDE_COLUMNS} FROM overrides WHERE ?1 IS NULL OR spec_id = ?1 ORDER BY id"
            ))
            .map_err(&err)?;
        stmt.query_map([spec_id], override_entry)
            .map_err(&err)?
            .collect::<Result<_, _>>()
            .map_err(&err)
    }

    /// A model's breaker, if it was ever written.
    pub fn breaker(&self, model: &str) -> Result<Option<BreakerRecord>, LedgerError> {
        self.conn
            .query_row(
                &format!("SELECT {BREAKER_COLUMNS} FROM breakers WHERE model = ?1"),
                [model],
                breaker,
            )
            .optional()
            .map_err(self.sql_err("reading a circuit breaker"))
    }

    /// Every breaker.
    pub fn breakers(&self) -> Result<Vec<BreakerRecord>, LedgerError> {
        let err = self.sql_err("reading circuit breakers");
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {BREAKER_COLUMNS} FROM breakers ORDER BY model"
            ))
            .map_err(&err)?;
        stmt.query_map([], breaker)
            .map_err(&err)?
            .collect::<Result<_, _>>()
            .map_err(&err)
    }

    /// Reads a model's breaker, lets `update` decide its next state, and
    /// writes it, all in one `BEGIN IMMEDIATE` transaction, so concurrent
    /// runs never both win a half-open probe. Returns what `update` returned.
    pub fn update_breaker<T>(
        &mut self,
        model: &str,
        update: impl FnOnce(Option<BreakerRecord>) -> (Option<BreakerRecord>, T),
    ) -> Result<T, LedgerError> {
        let path = self.path.clone();
        let err = sql_err_at(&path, "updating a circuit breaker");
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let current = tx
            .query_row(
                &format!("SELECT {BREAKER_COLUMNS} FROM breakers WHERE model = ?1"),
                [model],
                breaker,
            )
            .optional()
            .map_err(err)?;
        let (next, out) = update(current);
        if let Some(b) = next {
            let (owner, until) = match &b.probe {
                Some((o, u)) => (Some(o.clone()), Some(ts(u))),
                None => (None, None),
            };
            tx.execute(
                &format!(
                    "INSERT OR REPLACE INTO breakers ({BREAKER_COLUMNS}) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
                ),
                params![
                    model,
                    b.state,
                    b.consecutive_failures,
                    b.recent,
                    b.opened_at.as_ref().map(ts),
                    b.cooldown_s,
                    owner,
                    until,
                    ts(&b.updated_at),
                    b.seal,
                    b.last_error,
                    i64::try_from(b.generation).unwrap_or(i64::MAX)
                ],
            )
            .map_err(err)?;
        }
        tx.commit().map_err(err)?;
        Ok(out)
    }
}
