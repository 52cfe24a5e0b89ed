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

use super::{Ledger, corrupt, ts};
use crate::ledger::facts::{
    DismissalRef, OutcomeState, ReportScope, RoleFacts, RunFacts, StoredFacts, day_of,
};
use crate::ledger::{LedgerError, LedgerRow};

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

/// Writes the report rows of a run just inserted (inside its transaction).
pub(super) fn insert_facts(
    conn: &Connection,
    seq: u64,
    entry: &crate::ledger::RunEntry,
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
         resolved, superseded) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
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

impl Ledger {
    /// The highest seq in the ledger (0 when empty).
    pub fn max_seq(&self) -> Result<u64, LedgerError> {
        self.conn
            .query_row("SELECT COALESCE(MAX(seq), 0) FROM runs", [], |r| r.get(0))
            .map_err(self.sql_err("reading the last seq"))
    }

    /// The run at `seq`.
    pub fn row_at(&self, seq: u64) -> Result<Option<LedgerRow>, LedgerError> {
        let sql = format!("SELECT {} FROM runs WHERE seq = ?1", super::COLUMNS);
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
                 superseded FROM run_facts f WHERE {filter} ORDER BY seq"
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

    /// For every run with an outcome or an override: its latest outcome and
    /// its latest override, in seq order.
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
                "SELECT r.seq, o.broken, o.recorded_at FROM outcomes o \
                 JOIN runs r ON r.run_id = o.run_id \
                 WHERE o.id IN (SELECT MAX(id) FROM outcomes GROUP BY run_id)",
            )
            .map_err(&err)?;
        let latest = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, u64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(&err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&err)?;
        for (seq, broken, at) in latest {
            states.push(OutcomeState {
                seq,
                latest: Some((broken != 0, time(seq, &at)?)),
                overridden_at: None,
            });
        }
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT r.seq, MAX(v.recorded_at) FROM overrides v \
                 JOIN runs r ON r.run_id = v.run_id GROUP BY r.seq",
            )
            .map_err(&err)?;
        let overrides = stmt
            .query_map([], |r| Ok((r.get::<_, u64>(0)?, r.get::<_, String>(1)?)))
            .map_err(&err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&err)?;
        states.sort_unstable_by_key(|s| s.seq);
        let mut only_overridden = Vec::new();
        for (seq, at) in overrides {
            let at = time(seq, &at)?;
            match states.binary_search_by_key(&seq, |s| s.seq) {
                Ok(i) => states[i].overridden_at = Some(at),
                Err(_) => only_overridden.push(OutcomeState {
                    seq,
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
                "SELECT r.seq, d.finding_id FROM dismissals d \
                 JOIN runs r ON r.run_id = d.run_id ORDER BY d.id",
            )
            .map_err(&err)?;
        stmt.query_map([], |r| {
            Ok(DismissalRef {
                seq: r.get(0)?,
                finding_id: r.get(1)?,
            })
        })
        .map_err(&err)?
        .collect::<Result<_, _>>()
        .map_err(&err)
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use serde_json::json;

    use super::*;
    use crate::ledger::{Dismissal, OutcomeEntry, OverrideEntry, RunEntry, SCHEMA_VERSION};

    fn entry(
        run_id: &str,
        spec: &str,
        verdict: &str,
        day: u32,
        extra: serde_json::Value,
    ) -> RunEntry {
        RunEntry {
            run_id: run_id.into(),
            spec_id: spec.into(),
            attempt: 1,
            verdict: verdict.into(),
            tier: "light".into(),
            started_at: Utc.with_ymd_and_hms(2025, 3, day, 10, 0, 0).unwrap(),
            finished_at: Utc.with_ymd_and_hms(2025, 3, day, 10, 1, 0).unwrap(),
            input_tokens: 100 * u64::from(day),
            cached_input_tokens: 10 * u64::from(day),
            output_tokens: 5,
            cost_usd: Some(0.01 * f64::from(day)),
            bundle_path: format!("bundles/{run_id}.dsse.json"),
            extra,
        }
    }

    /// Extras as the gate writes them, and odd ones.
    fn extras() -> Vec<serde_json::Value> {
        vec![
            json!({"agent": "claude-code", "review": "ran", "models": ["m1", "m2"],
                   "roles": [
                       {"role": "quality", "model": "m1", "status": "ok", "input_tokens": 70,
                        "cached_input_tokens": 7, "output_tokens": 3, "cost_usd": 0.25},
                       {"role": "security", "model": "m2", "status": "did_not_run",
                        "input_tokens": null, "cached_input_tokens": null, "output_tokens": null,
                        "cost_usd": null}],
                   "findings": [{"id": "f1"}, {"id": "f2"}], "overridden": false,
                   "dispositions": {"resolved": ["a"], "superseded": ["b", "c"]}, "duplicates": 4}),
            json!({"agent": null, "review": "did_not_run", "models": [], "roles": [], "findings": []}),
            json!({}),
            json!({"agent": 3, "models": ["m1", "m1", 2, "m3"], "roles": [
                       {"role": "docs", "model": "m3", "input_tokens": -4, "cost_usd": 2},
                       {"role": "docs", "model": "other"}, 7, {"model": "x"}],
                   "findings": {"id": "f"}, "duplicates": -2,
                   "dispositions": {"resolved": "a", "superseded": []}}),
        ]
    }

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
        let mut a = Ledger::open(&a_path).unwrap();
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
        let b = Ledger::open_at(&b_path, 2).unwrap();
        assert_eq!(b.schema_version().unwrap(), 2);
        b.conn
            .execute("ATTACH ?1 AS a", [a_path.to_str().unwrap()])
            .unwrap();
        b.conn
            .execute_batch(
                "INSERT INTO runs SELECT * FROM a.runs;
                 INSERT INTO runs SELECT seq + 100, run_id || 'x', spec_id, attempt, verdict, tier,
                     started_at, finished_at, input_tokens, cached_input_tokens, output_tokens,
                     cost_usd, bundle_path, envelope_sha256 || 'x', prev_sha256, leaf_hash,
                     recorded_at, 'not json' FROM a.runs WHERE seq = 1;
                 DETACH a;",
            )
            .unwrap();
        drop(b);
        let b = Ledger::open(&b_path).unwrap();
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

    #[test]
    fn append_all_is_all_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut l = Ledger::open(&dir.path().join("l.db")).unwrap();
        let one = entry("r1", "s", "pass", 1, json!({}));
        let two = entry("r2", "s", "pass", 2, json!({"models": ["m"]}));
        let err = l
            .append_all([(&one, b"e1".as_slice()), (&two, b"e1".as_slice())])
            .unwrap_err();
        assert!(matches!(err, LedgerError::EnvelopeRecorded { .. }), "{err}");
        assert_eq!(l.max_seq().unwrap(), 0);
        assert_eq!(dump(&l.conn, 0..=10), Vec::<String>::new());
        let rows = l
            .append_all([(&one, b"e1".as_slice()), (&two, b"e2".as_slice())])
            .unwrap();
        assert_eq!(
            rows[1].prev_sha256.as_deref(),
            Some(rows[0].envelope_sha256.as_str())
        );
        assert_eq!(l.row_at(2).unwrap().unwrap().entry.run_id, "r2");
        assert!(l.row_at(3).unwrap().is_none());
    }

    #[test]
    fn scans_honour_the_scope() {
        let dir = tempfile::tempdir().unwrap();
        let mut l = Ledger::open(&dir.path().join("l.db")).unwrap();
        let x = extras();
        let runs = [
            entry("r1", "shop", "pass", 1, x[0].clone()),
            entry("r2", "blog", "fail", 2, x[0].clone()),
            entry("r3", "shop", "escalate", 3, x[3].clone()),
        ];
        for (i, e) in runs.iter().enumerate() {
            l.append(e, format!("e{i}").as_bytes()).unwrap();
        }
        let since = |d| Some(Utc.with_ymd_and_hms(2025, 3, d, 0, 0, 0).unwrap());
        let cases = [
            (
                ReportScope::default(),
                vec![1, 2, 3],
                vec![1, 1, 2, 2, 3, 3],
                vec![1, 1, 2, 2, 3],
            ),
            (
                ReportScope {
                    spec_id: Some("shop".into()),
                    since: None,
                },
                vec![1, 3],
                vec![1, 1, 3, 3],
                vec![1, 1, 3],
            ),
            (
                ReportScope {
                    spec_id: None,
                    since: since(2),
                },
                vec![2, 3],
                vec![2, 2, 3, 3],
                vec![2, 2, 3],
            ),
            (
                ReportScope {
                    spec_id: Some("blog".into()),
                    since: since(3),
                },
                vec![],
                vec![],
                vec![],
            ),
        ];
        for (scope, runs, models, roles) in cases {
            let mut seen = Vec::new();
            l.scan_run_facts(&scope, |f| seen.push(f.seq)).unwrap();
            assert_eq!(seen, runs, "{scope:?}");
            let mut seen = Vec::new();
            l.scan_run_models(&scope, |seq, _| seen.push(seq)).unwrap();
            seen.sort_unstable();
            assert_eq!(seen, models, "{scope:?}");
            let mut seen = Vec::new();
            l.scan_run_roles(&scope, |r| seen.push(r.seq)).unwrap();
            seen.sort_unstable();
            assert_eq!(seen, roles, "{scope:?}");
        }
        let mut first = None;
        l.scan_run_facts(&ReportScope::default(), |f| {
            if f.seq == 1 {
                first = Some(format!(
                    "{} {} {} {} {:?} {:?} {} {} {} {:?} {} {} {} {}",
                    f.spec_id,
                    f.verdict,
                    f.tier,
                    f.started_on,
                    f.agent,
                    f.review,
                    f.input_tokens,
                    f.cached_input_tokens,
                    f.output_tokens,
                    f.cost_usd,
                    f.findings,
                    f.duplicates,
                    f.resolved,
                    f.superseded
                ));
            }
        })
        .unwrap();
        assert_eq!(
            first.unwrap(),
            "shop pass light 2025-03-01 Some(\"claude-code\") Some(\"ran\") 100 10 5 Some(0.01) 2 4 1 2"
        );
        let mut roles = Vec::new();
        l.scan_run_roles(&ReportScope::default(), |r| {
            roles.push(format!(
                "{} {} {} {} {} {} {} {:?}",
                r.seq,
                r.role,
                r.model,
                r.status,
                r.input_tokens,
                r.cached_input_tokens,
                r.output_tokens,
                r.cost_usd
            ));
        })
        .unwrap();
        assert_eq!(
            roles,
            [
                "1 quality m1 ok 70 7 3 Some(0.25)",
                "1 security m2 did_not_run 0 0 0 None",
                "2 quality m1 ok 70 7 3 Some(0.25)",
                "2 security m2 did_not_run 0 0 0 None",
                "3 docs m3  0 0 0 Some(2.0)",
            ]
        );
    }

    #[test]
    fn outcome_states_and_dismissals() {
        let dir = tempfile::tempdir().unwrap();
        let mut l = Ledger::open(&dir.path().join("l.db")).unwrap();
        for (i, id) in ["r1", "r2", "r3", "r4"].iter().enumerate() {
            l.append(
                &entry(id, "s", "fail", i as u32 + 1, json!({})),
                id.as_bytes(),
            )
            .unwrap();
        }
        let at = |h| Utc.with_ymd_and_hms(2025, 4, 1, h, 0, 0).unwrap();
        let outcome = |run: &str, broken, h| OutcomeEntry {
            run_id: run.into(),
            broken,
            reason: None,
            source: None,
            recorded_at: at(h),
        };
        // Latest by the order recorded, not by the time given.
        l.add_outcomes(&[
            outcome("r3", false, 5),
            outcome("r1", false, 9),
            outcome("r1", true, 8),
        ])
        .unwrap();
        for (run, h) in [("r2", 3), ("r3", 4), ("r3", 6)] {
            l.add_override(&OverrideEntry {
                run_id: run.into(),
                spec_id: "s".into(),
                reason: "hotfix".into(),
                by: "ana".into(),
                content_digest: "d".into(),
                bundle_path: format!("o-{run}-{h}"),
                bundle_sha256: format!("sha-{run}-{h}"),
                recorded_at: at(h),
            })
            .unwrap();
        }
        assert_eq!(
            l.outcome_states().unwrap(),
            [
                OutcomeState {
                    seq: 1,
                    latest: Some((true, at(8))),
                    overridden_at: None
                },
                OutcomeState {
                    seq: 2,
                    latest: None,
                    overridden_at: Some(at(3))
                },
                OutcomeState {
                    seq: 3,
                    latest: Some((false, at(5))),
                    overridden_at: Some(at(6))
                },
            ]
        );
        // A batch naming an unknown run records nothing.
        let err = l.add_outcomes(&[outcome("r4", true, 1), outcome("nope", true, 1)]);
        assert!(matches!(err, Err(LedgerError::NotFound(ref r)) if r == "nope"));
        assert!(l.outcomes("r4").unwrap().is_empty());
        for (run, finding) in [("r2", "f1"), ("r4", "f2")] {
            l.add_dismissal(&Dismissal {
                run_id: run.into(),
                spec_id: "s".into(),
                finding_id: finding.into(),
                reason: "noise".into(),
                code_digest: None,
                recorded_at: at(1),
            })
            .unwrap();
        }
        assert_eq!(
            l.dismissal_refs().unwrap(),
            [
                DismissalRef {
                    seq: 2,
                    finding_id: "f1".into()
                },
                DismissalRef {
                    seq: 4,
                    finding_id: "f2".into()
                },
            ]
        );
    }
}
