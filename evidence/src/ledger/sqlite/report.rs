//! What reports read: the facts of every run in narrow tables (schema 3),
//! filled when a row is appended, and the queries that stream them.
//!
//! `run_facts` holds one narrow row per run (the columns reports filter and
//! group by, copied from the run and its `extra`), `run_models` one row per
//! model a run used, `run_roles` one row per specialist. A report scans
//! these instead of the wide `runs` rows and never parses JSON per run.
//! They are derived data keyed by seq, written in the run's own
//! transaction; they hold no foreign key, so what is done to `runs` (an
//! edit that `gate ledger verify` must catch) is never refused here.

use rusqlite::types::{Value, ValueRef};
use rusqlite::{Connection, Row, params, params_from_iter};

use super::columns::{COLUMNS, ts};
use super::errors::corrupt;
use super::handle::SqliteLedger;
use crate::ledger::entries::{Dismissal, LedgerRow, OutcomeEntry};
use crate::ledger::error::LedgerError;
use crate::ledger::facts::{
    DismissalRef, OutcomeState, ReportScope, RoleFacts, RunFacts, StoredFacts, day_of,
};

/// Schema 3: the report tables, filled from the rows already there. The
/// JSON reading here mirrors `StoredFacts::from_extra` exactly (a test holds
/// them together): mistyped values read as nothing, the first entry of a
/// repeated role is kept.
pub(super) const MIGRATION_3_FACTS: &str = "
CREATE TABLE run_facts (
    seq                 INTEGER PRIMARY KEY,
    spec_id             TEXT    NOT NULL,
    verdict             TEXT    NOT NULL,
    tier                TEXT    NOT NULL,
    started_at          TEXT    NOT NULL,
    agent               TEXT,
    review              TEXT,
    input_tokens        INTEGER NOT NULL,
    cached_input_tokens INTEGER NOT NULL,
    output_tokens       INTEGER NOT NULL,
    cost_usd            REAL,
    findings            INTEGER NOT NULL,
    duplicates          INTEGER NOT NULL,
    resolved            INTEGER NOT NULL,
    superseded          INTEGER NOT NULL
);
CREATE TABLE run_models (
    seq   INTEGER NOT NULL,
    model TEXT    NOT NULL,
    PRIMARY KEY (seq, model)
) WITHOUT ROWID;
CREATE TABLE run_roles (
    seq                 INTEGER NOT NULL,
    role                TEXT    NOT NULL,
    model               TEXT    NOT NULL,
    status              TEXT    NOT NULL,
    input_tokens        INTEGER NOT NULL,
    cached_input_tokens INTEGER NOT NULL,
    output_tokens       INTEGER NOT NULL,
    cost_usd            REAL,
    PRIMARY KEY (seq, role)
) WITHOUT ROWID;

INSERT INTO run_facts
SELECT seq, spec_id, verdict, tier, started_at,
    CASE WHEN json_type(x, '$.agent') = 'text' THEN json_extract(x, '$.agent') END,
    CASE WHEN json_type(x, '$.review') = 'text' THEN json_extract(x, '$.review') END,
    input_tokens, cached_input_tokens, output_tokens, cost_usd,
    CASE WHEN json_type(x, '$.findings') = 'array'
         THEN json_array_length(x, '$.findings') ELSE 0 END,
    CASE WHEN json_type(x, '$.duplicates') = 'integer' AND json_extract(x, '$.duplicates') >= 0
         THEN json_extract(x, '$.duplicates') ELSE 0 END,
    CASE WHEN json_type(x, '$.dispositions.resolved') = 'array'
         THEN json_array_length(x, '$.dispositions.resolved') ELSE 0 END,
    CASE WHEN json_type(x, '$.dispositions.superseded') = 'array'
         THEN json_array_length(x, '$.dispositions.superseded') ELSE 0 END
FROM (SELECT *, CASE WHEN json_valid(extra_json) THEN extra_json ELSE '{}' END AS x FROM runs)
ORDER BY seq;

INSERT OR IGNORE INTO run_models (seq, model)
SELECT r.seq, j.value
FROM runs r, json_each(CASE WHEN json_valid(r.extra_json) THEN
        CASE WHEN json_type(r.extra_json, '$.models') = 'array' THEN r.extra_json END END,
     '$.models') j
WHERE j.type = 'text';

INSERT OR IGNORE INTO run_roles
SELECT r.seq, json_extract(j.value, '$.role'),
    CASE WHEN json_type(j.value, '$.model') = 'text' THEN json_extract(j.value, '$.model') ELSE '' END,
    CASE WHEN json_type(j.value, '$.status') = 'text' THEN json_extract(j.value, '$.status') ELSE '' END,
    CASE WHEN json_type(j.value, '$.input_tokens') = 'integer' AND json_extract(j.value, '$.input_tokens') >= 0
         THEN json_extract(j.value, '$.input_tokens') ELSE 0 END,
    CASE WHEN json_type(j.value, '$.cached_input_tokens') = 'integer' AND json_extract(j.value, '$.cached_input_tokens') >= 0
         THEN json_extract(j.value, '$.cached_input_tokens') ELSE 0 END,
    CASE WHEN json_type(j.value, '$.output_tokens') = 'integer' AND json_extract(j.value, '$.output_tokens') >= 0
         THEN json_extract(j.value, '$.output_tokens') ELSE 0 END,
    CASE WHEN json_type(j.value, '$.cost_usd') IN ('integer', 'real')
         THEN json_extract(j.value, '$.cost_usd') END
FROM runs r, json_each(CASE WHEN json_valid(r.extra_json) THEN
        CASE WHEN json_type(r.extra_json, '$.roles') = 'array' THEN r.extra_json END END,
     '$.roles') j
WHERE j.type = 'object' AND json_type(j.value, '$.role') = 'text'
ORDER BY r.seq, j.key;
";

/// Schema 5: whether each run's processes ran unisolated, for the report's
/// unisolated share. A run recorded before isolation was recorded ran
/// without a sandbox.
pub(super) const MIGRATION_5_ISOLATION: &str = "
ALTER TABLE run_facts ADD COLUMN unisolated INTEGER NOT NULL DEFAULT 1;
UPDATE run_facts SET unisolated = 0 WHERE seq IN (
    SELECT seq FROM runs
    WHERE json_valid(extra_json) AND json_extract(extra_json, '$.isolation.kind') = 'bwrap'
);
";

/// Writes the report rows of a run just inserted (inside its transaction).
pub(super) fn insert_facts(
    conn: &Connection,
    seq: u64,
    entry: &crate::ledger::entries::RunEntry,
) -> rusqlite::Result<()> {
    let facts = StoredFacts::from_extra(&entry.extra);
    // Only a ledger cut by hand reuses a seq; its stale facts go.
    for table in ["run_facts", "run_models", "run_roles"] {
        conn.prepare_cached(&format!("DELETE FROM {table} WHERE seq = ?1"))?
            .execute([seq])?;
    }
    conn.prepare_cached(
        "INSERT INTO run_facts (seq, spec_id, verdict, tier, started_at, agent, review, \
         input_tokens, cached_input_tokens, output_tokens, cost_usd, findings, duplicates, \
         resolved, superseded, unisolated, criteria_passed, fail_to_pass) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
    )?
    .execute(params![
        seq,
        entry.spec_id,
        entry.verdict,
        entry.tier,
        ts(&entry.started_at),
        facts.agent,
        facts.review,
        entry.input_tokens,
        entry.cached_input_tokens,
        entry.output_tokens,
        entry.cost_usd,
        facts.findings,
        facts.duplicates,
        facts.resolved,
        facts.superseded,
        facts.unisolated,
        facts.criteria_passed,
        facts.fail_to_pass,
    ])?;
    let mut models = conn.prepare_cached("INSERT INTO run_models (seq, model) VALUES (?1, ?2)")?;
    for m in &facts.models {
        models.execute(params![seq, m])?;
    }
    let mut roles = conn.prepare_cached(
        "INSERT INTO run_roles (seq, role, model, status, input_tokens, cached_input_tokens, \
         output_tokens, cost_usd) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for r in &facts.roles {
        roles.execute(params![
            seq,
            r.role,
            r.model,
            r.status,
            r.input_tokens,
            r.cached_input_tokens,
            r.output_tokens,
            r.cost_usd
        ])?;
    }
    Ok(())
}

/// The scope as a `WHERE` clause over `run_facts` aliased `f`, and its arguments.
fn scope_sql(scope: &ReportScope) -> (&'static str, Vec<Value>) {
    let args = vec![
        scope.spec_id.clone().map_or(Value::Null, Value::Text),
        scope
            .since
            .as_ref()
            .map_or(Value::Null, |t| Value::Text(ts(t))),
    ];
    (
        "(?1 IS NULL OR f.spec_id = ?1) AND (?2 IS NULL OR f.started_at >= ?2)",
        args,
    )
}

fn text<'r>(r: &'r Row<'_>, i: usize) -> rusqlite::Result<&'r str> {
    r.get_ref(i)?.as_str().map_err(Into::into)
}

fn opt_text<'r>(r: &'r Row<'_>, i: usize) -> rusqlite::Result<Option<&'r str>> {
    match r.get_ref(i)? {
        ValueRef::Null => Ok(None),
        v => v.as_str().map(Some).map_err(Into::into),
    }
}

impl SqliteLedger {
    /// The highest seq in the ledger (0 when empty).
    pub fn max_seq(&self) -> Result<u64, LedgerError> {
        self.conn
            .query_row("SELECT COALESCE(MAX(seq), 0) FROM runs", [], |r| r.get(0))
            .map_err(self.sql_err("reading the last seq"))
    }

    /// The run at `seq`.
    pub fn row_at(&self, seq: u64) -> Result<Option<LedgerRow>, LedgerError> {
        let sql = format!("SELECT {COLUMNS} FROM runs WHERE seq = ?1");
        let seq = i64::try_from(seq).unwrap_or(i64::MAX);
        Ok(self
            .query_rows(&sql, vec![Value::Integer(seq)], "reading a run")?
            .pop())
    }

    /// Calls `each` with the facts of every run in `scope`, in seq order,
    /// streaming (nothing is collected).
    pub fn scan_run_facts(
        &self,
        scope: &ReportScope,
        mut each: impl FnMut(&RunFacts<'_>),
    ) -> Result<(), LedgerError> {
        let err = self.sql_err("reading run facts");
        let (filter, args) = scope_sql(scope);
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT seq, spec_id, verdict, tier, started_at, agent, review, input_tokens, \
                 cached_input_tokens, output_tokens, cost_usd, findings, duplicates, resolved, \
                 superseded, unisolated, criteria_passed, fail_to_pass FROM run_facts f \
                 WHERE {filter} ORDER BY seq"
            ))
            .map_err(&err)?;
        let mut rows = stmt.query(params_from_iter(args)).map_err(&err)?;
        while let Some(r) = rows.next().map_err(&err)? {
            let seq: u64 = r.get(0).map_err(&err)?;
            let started_at = text(r, 4).map_err(&err)?;
            let started_on = day_of(started_at)
                .ok_or_else(|| corrupt(seq, format!("started_at {started_at:?}")))?;
            let facts = (|| {
                Ok::<_, rusqlite::Error>(RunFacts {
                    seq,
                    spec_id: text(r, 1)?,
                    verdict: text(r, 2)?,
                    tier: text(r, 3)?,
                    started_on,
                    agent: opt_text(r, 5)?,
                    review: opt_text(r, 6)?,
                    input_tokens: r.get(7)?,
                    cached_input_tokens: r.get(8)?,
                    output_tokens: r.get(9)?,
                    cost_usd: r.get(10)?,
                    findings: r.get(11)?,
                    duplicates: r.get(12)?,
                    resolved: r.get(13)?,
                    superseded: r.get(14)?,
                    unisolated: r.get(15)?,
                    criteria_passed: r.get(16)?,
                    fail_to_pass: r.get(17)?,
                })
            })()
            .map_err(&err)?;
            each(&facts);
        }
        Ok(())
    }

    /// Calls `each(seq, model)` for every model every run in `scope` used.
    pub fn scan_run_models(
        &self,
        scope: &ReportScope,
        mut each: impl FnMut(u64, &str),
    ) -> Result<(), LedgerError> {
        let err = self.sql_err("reading the models runs used");
        let (sql, args) = if scope.is_all() {
            ("SELECT seq, model FROM run_models".to_owned(), Vec::new())
        } else {
            let (filter, args) = scope_sql(scope);
            (
                format!(
                    "SELECT m.seq, m.model FROM run_facts f JOIN run_models m ON m.seq = f.seq \
                     WHERE {filter}"
                ),
                args,
            )
        };
        let mut stmt = self.conn.prepare_cached(&sql).map_err(&err)?;
        let mut rows = stmt.query(params_from_iter(args)).map_err(&err)?;
        while let Some(r) = rows.next().map_err(&err)? {
            each(r.get(0).map_err(&err)?, text(r, 1).map_err(&err)?);
        }
        Ok(())
    }

    /// Calls `each` for every specialist of every run in `scope`.
    pub fn scan_run_roles(
        &self,
        scope: &ReportScope,
        mut each: impl FnMut(&RoleFacts<'_>),
    ) -> Result<(), LedgerError> {
        let err = self.sql_err("reading the specialists of runs");
        const COLS: &str = "seq, role, model, status, input_tokens, cached_input_tokens, \
                            output_tokens, cost_usd";
        let (sql, args) = if scope.is_all() {
            (format!("SELECT {COLS} FROM run_roles"), Vec::new())
        } else {
            let (filter, args) = scope_sql(scope);
            (
                format!(
                    "SELECT r.seq, r.role, r.model, r.status, r.input_tokens, \
                     r.cached_input_tokens, r.output_tokens, r.cost_usd \
                     FROM run_facts f JOIN run_roles r ON r.seq = f.seq WHERE {filter}"
                ),
                args,
            )
        };
        let mut stmt = self.conn.prepare_cached(&sql).map_err(&err)?;
        let mut rows = stmt.query(params_from_iter(args)).map_err(&err)?;
        while let Some(r) = rows.next().map_err(&err)? {
            let facts = (|| {
                Ok::<_, rusqlite::Error>(RoleFacts {
                    seq: r.get(0)?,
                    role: text(r, 1)?,
                    model: text(r, 2)?,
                    status: text(r, 3)?,
                    input_tokens: r.get(4)?,
                    cached_input_tokens: r.get(5)?,
                    output_tokens: r.get(6)?,
                    cost_usd: r.get(7)?,
                })
            })()
            .map_err(&err)?;
            each(&facts);
        }
        Ok(())
    }

    /// For every run with an outcome or an override: its outcomes (the
    /// latest counts) and its latest override, in seq order.
    pub fn outcome_states(&self) -> Result<Vec<OutcomeState>, LedgerError> {
        let err = self.sql_err("reading outcomes and overrides");
        let time = |seq: u64, text: &str| {
            chrono::DateTime::parse_from_rfc3339(text)
                .map(|t| t.with_timezone(&chrono::Utc))
                .map_err(|e| corrupt(seq, format!("outcome time {text:?}: {e}")))
        };
        let mut states: Vec<OutcomeState> = Vec::new();
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT r.seq, o.run_id, o.broken, o.reason, o.source, o.recorded_at, o.envelope, \
                 o.evidence FROM outcomes o JOIN runs r ON r.run_id = o.run_id ORDER BY r.seq, o.id",
            )
            .map_err(&err)?;
        let all = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, u64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)? != 0,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, Option<String>>(6)?,
                    r.get::<_, Option<String>>(7)?,
                ))
            })
            .map_err(&err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&err)?;
        for (seq, run_id, broken, reason, source, at, envelope, evidence) in all {
            let outcome = OutcomeEntry {
                run_id: run_id.clone(),
                broken,
                reason,
                source,
                recorded_at: time(seq, &at)?,
                envelope,
                evidence: super::side_tables::evidence_from(evidence.as_deref()),
            };
            let latest = Some((broken, outcome.recorded_at));
            match states.last_mut() {
                Some(s) if s.seq == seq => {
                    s.outcomes.push(outcome);
                    s.latest = latest;
                }
                _ => states.push(OutcomeState {
                    seq,
                    run_id,
                    outcomes: vec![outcome],
                    latest,
                    overridden_at: None,
                }),
            }
        }
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT r.seq, r.run_id, MAX(v.recorded_at) FROM overrides v \
                 JOIN runs r ON r.run_id = v.run_id GROUP BY r.seq",
            )
            .map_err(&err)?;
        let overrides = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, u64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(&err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&err)?;
        let mut only_overridden = Vec::new();
        for (seq, run_id, at) in overrides {
            let at = time(seq, &at)?;
            match states.binary_search_by_key(&seq, |s| s.seq) {
                Ok(i) => states[i].overridden_at = Some(at),
                Err(_) => only_overridden.push(OutcomeState {
                    seq,
                    run_id,
                    outcomes: Vec::new(),
                    latest: None,
                    overridden_at: Some(at),
                }),
            }
        }
        if !only_overridden.is_empty() {
            states.append(&mut only_overridden);
            states.sort_unstable_by_key(|s| s.seq);
        }
        Ok(states)
    }

    /// Every dismissal, with the seq of the run that raised the finding,
    /// oldest first.
    pub fn dismissal_refs(&self) -> Result<Vec<DismissalRef>, LedgerError> {
        let err = self.sql_err("reading dismissals");
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT r.seq, d.run_id, d.spec_id, d.finding_id, d.reason, d.code_digest, \
                 d.recorded_at, d.envelope, d.by_name FROM dismissals d \
                 JOIN runs r ON r.run_id = d.run_id ORDER BY d.id",
            )
            .map_err(&err)?;
        let all = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, u64>(0)?,
                    Dismissal {
                        run_id: r.get(1)?,
                        spec_id: r.get(2)?,
                        finding_id: r.get(3)?,
                        reason: r.get(4)?,
                        code_digest: r.get(5)?,
                        recorded_at: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
                        envelope: r.get(7)?,
                        by: r.get(8)?,
                    },
                    r.get::<_, String>(6)?,
                ))
            })
            .map_err(&err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&err)?;
        all.into_iter()
            .map(|(seq, mut dismissal, at)| {
                dismissal.recorded_at = chrono::DateTime::parse_from_rfc3339(&at)
                    .map(|t| t.with_timezone(&chrono::Utc))
                    .map_err(|e| corrupt(seq, format!("dismissal time {at:?}: {e}")))?;
                Ok(DismissalRef {
                    seq,
                    finding_id: dismissal.finding_id.clone(),
                    dismissal,
                })
            })
            .collect()
    }
}

/// The digests of the report rows of the runs of seqs `after` (exclusive)
/// to `last` (inclusive), each value as stored ([`crate::ledger::derived`]).
pub(super) fn derived_digests(
    conn: &Connection,
    after: u64,
    last: u64,
) -> rusqlite::Result<crate::ledger::derived::Digests> {
    use crate::ledger::derived::{Cell, Digests, FACTS_COLUMNS, ROLES_COLUMNS, Table};
    let mut digests = Digests::default();
    let range = [
        i64::try_from(after).unwrap_or(i64::MAX),
        i64::try_from(last).unwrap_or(i64::MAX),
    ];
    for (table, sql) in [
        (
            Table::Facts,
            format!(
                "SELECT {FACTS_COLUMNS} FROM run_facts WHERE seq > ?1 AND seq <= ?2 ORDER BY seq"
            ),
        ),
        (
            Table::Models,
            "SELECT seq, model FROM run_models WHERE seq > ?1 AND seq <= ?2 ORDER BY seq, model"
                .to_owned(),
        ),
        (
            Table::Roles,
            format!(
                "SELECT {ROLES_COLUMNS} FROM run_roles WHERE seq > ?1 AND seq <= ?2 \
                 ORDER BY seq, role"
            ),
        ),
    ] {
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut rows = stmt.query(range)?;
        while let Some(r) = rows.next()? {
            let seq: i64 = r.get(0)?;
            let mut cells: Vec<Cell<'_>> = Vec::with_capacity(18);
            for i in 0..r.as_ref().column_count() {
                cells.push(match r.get_ref(i)? {
                    ValueRef::Null => Cell::Null,
                    ValueRef::Integer(n) => Cell::Int(n),
                    ValueRef::Real(x) => Cell::Real(x),
                    ValueRef::Text(b) => std::str::from_utf8(b).map_or(Cell::Blob(b), Cell::Text),
                    ValueRef::Blob(b) => Cell::Blob(b),
                });
            }
            digests.row(table, u64::try_from(seq).unwrap_or(0), &cells);
        }
    }
    Ok(digests.done())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::SCHEMA_VERSION;
    use crate::ledger::entries::RunEntry;
    use crate::ledger::tests::{extras, report_entry as entry};

    fn dump(conn: &Connection, seqs: std::ops::RangeInclusive<u64>) -> Vec<String> {
        let mut out = Vec::new();
        for table in ["run_facts", "run_models", "run_roles"] {
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT * FROM {table} WHERE seq BETWEEN ?1 AND ?2 ORDER BY 1, 2"
                ))
                .unwrap();
            let n = stmt.column_count();
            let rows = stmt
                .query_map([seqs.start(), seqs.end()], |r| {
                    (0..n)
                        .map(|i| r.get::<_, Value>(i))
                        .collect::<Result<Vec<_>, _>>()
                })
                .unwrap();
            for row in rows {
                out.push(format!("{table} {:?}", row.unwrap()));
            }
        }
        out
    }

    #[test]
    fn migration_3_reads_extra_as_append_does() {
        let dir = tempfile::tempdir().unwrap();
        let (a_path, b_path) = (dir.path().join("a.db"), dir.path().join("b.db"));
        let mut a = SqliteLedger::open(&a_path).unwrap();
        let entries: Vec<RunEntry> = extras()
            .into_iter()
            .enumerate()
            .map(|(i, x)| entry(&format!("r{i}"), "s", "pass", i as u32 + 1, x))
            .collect();
        let envelopes: Vec<Vec<u8>> = (0..entries.len())
            .map(|i| format!("envelope {i}").into_bytes())
            .collect();
        a.append_all(entries.iter().zip(envelopes.iter().map(Vec::as_slice)))
            .unwrap();
        // The same rows in a ledger at schema 2, plus one whose extra is not JSON.
        let b = SqliteLedger::open_at(&b_path, 2).unwrap();
        assert_eq!(b.schema_version().unwrap(), 2);
        b.conn
            .execute("ATTACH ?1 AS a", [a_path.to_str().unwrap()])
            .unwrap();
        b.conn
            .execute_batch(
                "INSERT INTO runs SELECT seq, run_id, spec_id, attempt, verdict, tier,
                     started_at, finished_at, input_tokens, cached_input_tokens, output_tokens,
                     cost_usd, bundle_path, envelope_sha256, prev_sha256, leaf_hash,
                     recorded_at, extra_json FROM a.runs;
                 INSERT INTO runs SELECT seq + 100, run_id || 'x', spec_id, attempt, verdict, tier,
                     started_at, finished_at, input_tokens, cached_input_tokens, output_tokens,
                     cost_usd, bundle_path, envelope_sha256 || 'x', prev_sha256, leaf_hash,
                     recorded_at, 'not json' FROM a.runs WHERE seq = 1;
                 DETACH a;",
            )
            .unwrap();
        drop(b);
        let b = SqliteLedger::open(&b_path).unwrap();
        assert_eq!(b.schema_version().unwrap(), SCHEMA_VERSION);
        let n = entries.len() as u64;
        let want = dump(&a.conn, 1..=n);
        assert!(want.len() > entries.len(), "{want:#?}");
        assert_eq!(dump(&b.conn, 1..=n), want);
        // A row whose extra does not parse reads as no facts, and the migration goes through.
        let odd = dump(&b.conn, 100..=1000);
        assert_eq!(odd.len(), 1, "{odd:#?}");
        assert!(
            odd[0].contains("Integer(101)") && odd[0].contains("Null, Null"),
            "{odd:?}"
        );
    }
}
