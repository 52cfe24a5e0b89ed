//! What reports read, in PostgreSQL: the report tables of schema 3
//! (`run_facts`, `run_models`, `run_roles`, as in the SQLite store), the
//! statements that fill them inside an append, and the scans that stream
//! them to a report.
//!
//! An append writes a run's facts in the same statement as its row (data-
//! modifying `WITH` clauses on the inserted row), so they commit together
//! and cost no round trip. The facts are read out of `extra` by
//! `StoredFacts::from_extra`, as in SQLite; migration 3 derives the same
//! facts in SQL for rows written before it (a test holds the two to the
//! same answers). A scan streams rows from one query in chunks, so a
//! million runs never sit in memory at once.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use futures::StreamExt as _;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::columns::{COLUMNS, big};
use super::errors::corrupt;
use super::handle::PgLedger;
use crate::ledger::entries::{Dismissal, LedgerRow, OutcomeEntry};
use crate::ledger::error::{LedgerError, reason};
use crate::ledger::facts::{
    DismissalRef, OutcomeState, ReportScope, RoleFacts, RunFacts, StoredFacts,
};

/// Schema 3: the report tables, filled from the rows already there. The
/// JSON reading mirrors `StoredFacts::from_extra`: a mistyped value reads
/// as nothing, a count is a non-negative integer written without a
/// fraction or exponent, the first entry of a repeated role is kept.
/// Each report row belongs to its run (`ON DELETE CASCADE`): a ledger cut
/// by hand takes the cut runs' report rows with it, so an append never
/// meets stale ones and need not look for them under the chain lock.
pub(super) const MIGRATION_3_FACTS: &str = r"
CREATE TABLE run_facts (
    seq                 BIGINT           PRIMARY KEY REFERENCES runs (seq) ON DELETE CASCADE,
    spec_id             TEXT             NOT NULL,
    verdict             TEXT             NOT NULL,
    tier                TEXT             NOT NULL,
    started_at          TIMESTAMPTZ      NOT NULL,
    agent               TEXT,
    review              TEXT,
    input_tokens        BIGINT           NOT NULL,
    cached_input_tokens BIGINT           NOT NULL,
    output_tokens       BIGINT           NOT NULL,
    cost_usd            DOUBLE PRECISION,
    findings            BIGINT           NOT NULL,
    duplicates          BIGINT           NOT NULL,
    resolved            BIGINT           NOT NULL,
    superseded          BIGINT           NOT NULL
);
CREATE TABLE run_models (
    seq   BIGINT NOT NULL REFERENCES runs (seq) ON DELETE CASCADE,
    model TEXT   NOT NULL,
    PRIMARY KEY (seq, model)
);
CREATE TABLE run_roles (
    seq                 BIGINT           NOT NULL REFERENCES runs (seq) ON DELETE CASCADE,
    role                TEXT             NOT NULL,
    model               TEXT             NOT NULL,
    status              TEXT             NOT NULL,
    input_tokens        BIGINT           NOT NULL,
    cached_input_tokens BIGINT           NOT NULL,
    output_tokens       BIGINT           NOT NULL,
    cost_usd            DOUBLE PRECISION,
    PRIMARY KEY (seq, role)
);

CREATE FUNCTION pg_temp.gate_count(v json) RETURNS BIGINT LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN json_typeof(v) = 'number' AND (v #>> '{}') ~ '^[0-9]{1,18}$'
                THEN (v #>> '{}')::bigint ELSE 0 END
$$;
CREATE FUNCTION pg_temp.gate_length(v json) RETURNS BIGINT LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN json_typeof(v) = 'array' THEN json_array_length(v) ELSE 0 END
$$;
CREATE FUNCTION pg_temp.gate_text(v json) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN json_typeof(v) = 'string' THEN v #>> '{}' END
$$;

INSERT INTO run_facts
SELECT seq, spec_id, verdict, tier, started_at,
    pg_temp.gate_text(x -> 'agent'),
    pg_temp.gate_text(x -> 'review'),
    input_tokens, cached_input_tokens, output_tokens, cost_usd,
    pg_temp.gate_length(x -> 'findings'),
    pg_temp.gate_count(x -> 'duplicates'),
    pg_temp.gate_length(x -> 'dispositions' -> 'resolved'),
    pg_temp.gate_length(x -> 'dispositions' -> 'superseded')
FROM (SELECT *, CASE WHEN json_typeof(extra_json) = 'object' THEN extra_json
                     ELSE '{}'::json END AS x FROM runs) AS r;

INSERT INTO run_models (seq, model)
SELECT DISTINCT r.seq, m.value #>> '{}'
FROM runs r,
     json_array_elements(CASE WHEN json_typeof(r.extra_json) = 'object'
                               AND json_typeof(r.extra_json -> 'models') = 'array'
                              THEN r.extra_json -> 'models' END) AS m (value)
WHERE json_typeof(m.value) = 'string';

INSERT INTO run_roles
SELECT DISTINCT ON (r.seq, j.value ->> 'role') r.seq, j.value ->> 'role',
    COALESCE(pg_temp.gate_text(j.value -> 'model'), ''),
    COALESCE(pg_temp.gate_text(j.value -> 'status'), ''),
    pg_temp.gate_count(j.value -> 'input_tokens'),
    pg_temp.gate_count(j.value -> 'cached_input_tokens'),
    pg_temp.gate_count(j.value -> 'output_tokens'),
    CASE WHEN json_typeof(j.value -> 'cost_usd') = 'number'
         THEN (j.value ->> 'cost_usd')::double precision END
FROM runs r,
     json_array_elements(CASE WHEN json_typeof(r.extra_json) = 'object'
                               AND json_typeof(r.extra_json -> 'roles') = 'array'
                              THEN r.extra_json -> 'roles' END) WITH ORDINALITY AS j (value, n)
WHERE json_typeof(j.value) = 'object' AND json_typeof(j.value -> 'role') = 'string'
ORDER BY r.seq, j.value ->> 'role', j.n;

DROP FUNCTION pg_temp.gate_count(json);
DROP FUNCTION pg_temp.gate_length(json);
DROP FUNCTION pg_temp.gate_text(json);
";

/// Schema 5: whether each run's processes ran unisolated (a run recorded
/// before isolation was recorded ran without a sandbox).
pub(super) const MIGRATION_5_ISOLATION: &str = r"
ALTER TABLE run_facts ADD COLUMN unisolated BOOLEAN NOT NULL DEFAULT TRUE;
UPDATE run_facts f SET unisolated = FALSE
FROM runs r
WHERE r.seq = f.seq
  AND json_typeof(r.extra_json) = 'object'
  AND json_typeof(r.extra_json -> 'isolation') = 'object'
  AND r.extra_json -> 'isolation' ->> 'kind' = 'bwrap';
";

/// The data-modifying `WITH` clauses that write the report rows of the run
/// an `ins` clause inserted (it returns the `runs` columns the facts
/// copy); their own parameters start at `$first`. Nothing is written when
/// `ins` inserted nothing.
pub(super) fn facts_clauses(first: usize) -> String {
    let p = |i: usize| format!("${}", first + i);
    format!(
        "facts AS (INSERT INTO run_facts (seq, spec_id, verdict, tier, started_at, agent, \
         review, input_tokens, cached_input_tokens, output_tokens, cost_usd, findings, \
         duplicates, resolved, superseded, unisolated, criteria_passed, fail_to_pass) \
         SELECT seq, spec_id, verdict, tier, started_at, {agent}::text, {review}::text, \
         input_tokens, cached_input_tokens, output_tokens, cost_usd, {findings}::bigint, \
         {duplicates}::bigint, {resolved}::bigint, {superseded}::bigint, {unisolated}::boolean, \
         {criteria_passed}::bigint, {fail_to_pass}::bigint FROM ins), \
         models AS (INSERT INTO run_models (seq, model) \
         SELECT ins.seq, m FROM ins, unnest({models}::text[]) AS m), \
         roles AS (INSERT INTO run_roles (seq, role, model, status, input_tokens, \
         cached_input_tokens, output_tokens, cost_usd) \
         SELECT ins.seq, r.* FROM ins, unnest({roles}::text[], {role_models}::text[], \
         {statuses}::text[], {inputs}::bigint[], {cached}::bigint[], {outputs}::bigint[], \
         {costs}::float8[]) AS r)",
        agent = p(0),
        review = p(1),
        findings = p(2),
        duplicates = p(3),
        resolved = p(4),
        superseded = p(5),
        models = p(6),
        roles = p(7),
        role_models = p(8),
        statuses = p(9),
        inputs = p(10),
        cached = p(11),
        outputs = p(12),
        costs = p(13),
        unisolated = p(14),
        criteria_passed = p(15),
        fail_to_pass = p(16),
    )
}

/// The columns an `ins` clause returns for [`facts_clauses`].
pub(super) const FACTS_RETURNING: &str = "seq, spec_id, verdict, tier, started_at, \
     input_tokens, cached_input_tokens, output_tokens, cost_usd";

/// [`facts_clauses`]' parameters for a run's `extra`, in order.
pub(super) fn facts_params(extra: &serde_json::Value) -> Vec<Box<dyn ToSql + Sync + Send>> {
    let f = StoredFacts::from_extra(extra);
    let roles = &f.roles;
    vec![
        Box::new(f.agent),
        Box::new(f.review),
        Box::new(big(f.findings)),
        Box::new(big(f.duplicates)),
        Box::new(big(f.resolved)),
        Box::new(big(f.superseded)),
        Box::new(f.models),
        Box::new(roles.iter().map(|r| r.role.clone()).collect::<Vec<_>>()),
        Box::new(roles.iter().map(|r| r.model.clone()).collect::<Vec<_>>()),
        Box::new(roles.iter().map(|r| r.status.clone()).collect::<Vec<_>>()),
        Box::new(
            roles
                .iter()
                .map(|r| big(r.input_tokens))
                .collect::<Vec<_>>(),
        ),
        Box::new(
            roles
                .iter()
                .map(|r| big(r.cached_input_tokens))
                .collect::<Vec<_>>(),
        ),
        Box::new(
            roles
                .iter()
                .map(|r| big(r.output_tokens))
                .collect::<Vec<_>>(),
        ),
        Box::new(roles.iter().map(|r| r.cost_usd).collect::<Vec<_>>()),
        Box::new(f.unisolated),
        Box::new(big(f.criteria_passed)),
        Box::new(big(f.fail_to_pass)),
    ]
}

/// Rows a scan takes from the server between calls to its callback.
const CHUNK: usize = 4_096;

/// The scope as `WHERE` conditions over `run_facts` aliased `f`, and their
/// parameters (only the conditions a scope sets, so the planner sees plain
/// predicates it can use an index for).
fn scope_sql(scope: &ReportScope) -> (String, Vec<Box<dyn ToSql + Sync + Send>>) {
    let mut sql = String::from("true");
    let mut params: Vec<Box<dyn ToSql + Sync + Send>> = Vec::new();
    if let Some(spec) = &scope.spec_id {
        params.push(Box::new(spec.clone()));
        let _ = write!(sql, " AND f.spec_id = ${}", params.len());
    }
    if let Some(since) = scope.since {
        params.push(Box::new(since));
        let _ = write!(sql, " AND f.started_at >= ${}", params.len());
    }
    (sql, params)
}

fn count(r: &Row, i: usize) -> Result<u64, tokio_postgres::Error> {
    r.try_get::<_, i64>(i)
        .map(|v| u64::try_from(v).unwrap_or(0))
}

fn seq_of(r: &Row) -> Result<u64, LedgerError> {
    count(r, 0).map_err(|e| corrupt(0, format!("seq: {}", reason(&e))))
}

impl PgLedger {
    /// Streams the rows of one query to `each`, a chunk at a time: the
    /// callback runs outside the ledger's runtime, between reads.
    fn stream(
        &self,
        sql: &str,
        params: &[Box<dyn ToSql + Sync + Send>],
        action: &'static str,
        mut each: impl FnMut(&Row) -> Result<(), LedgerError>,
    ) -> Result<(), LedgerError> {
        let err = self.pg_err(action);
        let conn = self.op(self.conn())?;
        let mut rows = Box::pin(self.op(async {
            let refs = params.iter().map(|p| &**p as &(dyn ToSql + Sync));
            conn.query_raw(sql, refs).await.map_err(&err)
        })?);
        loop {
            let chunk = self.op(async {
                let mut chunk = Vec::with_capacity(CHUNK);
                while chunk.len() < CHUNK {
                    match rows.next().await {
                        Some(row) => chunk.push(row.map_err(&err)?),
                        None => break,
                    }
                }
                Ok(chunk)
            })?;
            for row in &chunk {
                each(row)?;
            }
            if chunk.len() < CHUNK {
                break;
            }
        }
        drop(rows);
        conn.release();
        Ok(())
    }

    /// The highest seq in the ledger (0 when empty).
    pub fn max_seq(&self) -> Result<u64, LedgerError> {
        self.op(async {
            let conn = self.conn().await?;
            let row = conn
                .query_one("SELECT COALESCE(MAX(seq), 0) FROM runs", &[])
                .await
                .map_err(self.pg_err("reading the last seq"))?;
            conn.release();
            Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
        })
    }

    /// The run at `seq`.
    pub fn row_at(&self, seq: u64) -> Result<Option<LedgerRow>, LedgerError> {
        let sql = format!("SELECT {COLUMNS} FROM runs WHERE seq = $1");
        Ok(self
            .op(self.query_rows(&sql, &[&big(seq)], "reading a run"))?
            .pop())
    }

    /// Calls `each` with the facts of every run in `scope`, in seq order,
    /// streaming.
    pub fn scan_run_facts(
        &self,
        scope: &ReportScope,
        mut each: impl FnMut(&RunFacts<'_>),
    ) -> Result<(), LedgerError> {
        let (filter, params) = scope_sql(scope);
        let sql = format!(
            "SELECT seq, spec_id, verdict, tier, started_at, agent, review, input_tokens, \
             cached_input_tokens, output_tokens, cost_usd, findings, duplicates, resolved, \
             superseded, unisolated, criteria_passed, fail_to_pass FROM run_facts f \
             WHERE {filter} ORDER BY seq"
        );
        self.stream(&sql, &params, "reading run facts", |r| {
            let seq = seq_of(r)?;
            let facts = (|| {
                let started_at: DateTime<Utc> = r.try_get(4)?;
                Ok::<_, tokio_postgres::Error>(RunFacts {
                    seq,
                    spec_id: r.try_get(1)?,
                    verdict: r.try_get(2)?,
                    tier: r.try_get(3)?,
                    started_on: started_at.date_naive(),
                    agent: r.try_get(5)?,
                    review: r.try_get(6)?,
                    input_tokens: count(r, 7)?,
                    cached_input_tokens: count(r, 8)?,
                    output_tokens: count(r, 9)?,
                    cost_usd: r.try_get(10)?,
                    findings: count(r, 11)?,
                    duplicates: count(r, 12)?,
                    resolved: count(r, 13)?,
                    superseded: count(r, 14)?,
                    unisolated: r.try_get(15)?,
                    criteria_passed: count(r, 16)?,
                    fail_to_pass: count(r, 17)?,
                })
            })()
            .map_err(|e| corrupt(seq, format!("run_facts: {}", reason(&e))))?;
            each(&facts);
            Ok(())
        })
    }

    /// Calls `each(seq, model)` for every model every run in `scope` used.
    pub fn scan_run_models(
        &self,
        scope: &ReportScope,
        mut each: impl FnMut(u64, &str),
    ) -> Result<(), LedgerError> {
        let (sql, params) = if scope.is_all() {
            ("SELECT seq, model FROM run_models".to_owned(), Vec::new())
        } else {
            let (filter, params) = scope_sql(scope);
            (
                format!(
                    "SELECT m.seq, m.model FROM run_facts f JOIN run_models m ON m.seq = f.seq \
                     WHERE {filter}"
                ),
                params,
            )
        };
        self.stream(&sql, &params, "reading the models runs used", |r| {
            let seq = seq_of(r)?;
            let model: &str = r
                .try_get(1)
                .map_err(|e| corrupt(seq, format!("run_models: {}", reason(&e))))?;
            each(seq, model);
            Ok(())
        })
    }

    /// Calls `each` for every specialist of every run in `scope`.
    pub fn scan_run_roles(
        &self,
        scope: &ReportScope,
        mut each: impl FnMut(&RoleFacts<'_>),
    ) -> Result<(), LedgerError> {
        const COLS: &str = "r.seq, r.role, r.model, r.status, r.input_tokens, \
                            r.cached_input_tokens, r.output_tokens, r.cost_usd";
        let (sql, params) = if scope.is_all() {
            (format!("SELECT {COLS} FROM run_roles r"), Vec::new())
        } else {
            let (filter, params) = scope_sql(scope);
            (
                format!(
                    "SELECT {COLS} FROM run_facts f JOIN run_roles r ON r.seq = f.seq \
                     WHERE {filter}"
                ),
                params,
            )
        };
        self.stream(&sql, &params, "reading the specialists of runs", |r| {
            let seq = seq_of(r)?;
            let facts = (|| {
                Ok::<_, tokio_postgres::Error>(RoleFacts {
                    seq,
                    role: r.try_get(1)?,
                    model: r.try_get(2)?,
                    status: r.try_get(3)?,
                    input_tokens: count(r, 4)?,
                    cached_input_tokens: count(r, 5)?,
                    output_tokens: count(r, 6)?,
                    cost_usd: r.try_get(7)?,
                })
            })()
            .map_err(|e| corrupt(seq, format!("run_roles: {}", reason(&e))))?;
            each(&facts);
            Ok(())
        })
    }

    /// For every run with an outcome or an override: its outcomes (the
    /// latest, by the order recorded, counts) and its latest override, in
    /// seq order.
    pub fn outcome_states(&self) -> Result<Vec<OutcomeState>, LedgerError> {
        let mut states: Vec<OutcomeState> = Vec::new();
        self.stream(
            "WITH overridden AS (SELECT run_id, MAX(recorded_at) AS at FROM overrides \
                 GROUP BY run_id), \
             runs_with AS (SELECT COALESCE(l.run_id, o.run_id) AS run_id, l.id, l.broken, \
                 l.reason, l.source, l.recorded_at, l.envelope, l.evidence, o.at \
                 FROM outcomes l FULL JOIN overridden o ON o.run_id = l.run_id) \
             SELECT r.seq, w.run_id, w.broken, w.reason, w.source, w.recorded_at, w.envelope, \
                 w.at, w.evidence FROM runs_with w JOIN runs r ON r.run_id = w.run_id ORDER BY r.seq, w.id",
            &[],
            "reading outcomes and overrides",
            |r| {
                let seq = seq_of(r)?;
                let read = || {
                    let run_id: String = r.try_get(1)?;
                    let broken: Option<bool> = r.try_get(2)?;
                    let at: Option<DateTime<Utc>> = r.try_get(5)?;
                    let outcome = match broken.zip(at) {
                        Some((broken, recorded_at)) => Some(OutcomeEntry {
                            run_id: run_id.clone(),
                            broken,
                            reason: r.try_get(3)?,
                            source: r.try_get(4)?,
                            recorded_at,
                            envelope: r.try_get(6)?,
                            evidence: super::side_tables::evidence_from(
                                r.try_get::<_, Option<String>>(8)?.as_deref(),
                            ),
                        }),
                        None => None,
                    };
                    let overridden: Option<DateTime<Utc>> = r.try_get(7)?;
                    Ok::<_, tokio_postgres::Error>((run_id, outcome, overridden))
                };
                let (run_id, outcome, overridden_at) =
                    read().map_err(|e| corrupt(seq, format!("outcomes: {}", reason(&e))))?;
                let latest = outcome.as_ref().map(|o| (o.broken, o.recorded_at));
                match states.last_mut() {
                    Some(s) if s.seq == seq => {
                        s.outcomes.extend(outcome);
                        s.latest = latest.or(s.latest);
                    }
                    _ => states.push(OutcomeState {
                        seq,
                        run_id,
                        outcomes: outcome.into_iter().collect(),
                        latest,
                        overridden_at,
                    }),
                }
                Ok(())
            },
        )?;
        Ok(states)
    }

    /// Every dismissal, with the seq of the run that raised the finding,
    /// oldest first.
    pub fn dismissal_refs(&self) -> Result<Vec<DismissalRef>, LedgerError> {
        let mut out = Vec::new();
        self.stream(
            "SELECT r.seq, d.run_id, d.spec_id, d.finding_id, d.reason, d.code_digest, \
             d.recorded_at, d.envelope, d.by_name FROM dismissals d \
             JOIN runs r ON r.run_id = d.run_id ORDER BY d.id",
            &[],
            "reading dismissals",
            |r| {
                let seq = seq_of(r)?;
                let read = || {
                    Ok::<_, tokio_postgres::Error>(Dismissal {
                        run_id: r.try_get(1)?,
                        spec_id: r.try_get(2)?,
                        finding_id: r.try_get(3)?,
                        reason: r.try_get(4)?,
                        code_digest: r.try_get(5)?,
                        recorded_at: r.try_get(6)?,
                        envelope: r.try_get(7)?,
                        by: r.try_get(8)?,
                    })
                };
                let dismissal =
                    read().map_err(|e| corrupt(seq, format!("dismissals: {}", reason(&e))))?;
                out.push(DismissalRef {
                    seq,
                    finding_id: dismissal.finding_id.clone(),
                    dismissal,
                });
                Ok(())
            },
        )?;
        Ok(out)
    }
}

/// The digests of the report rows of the runs of seqs `after` (exclusive)
/// to `last` (inclusive), each value as the SQLite store would hold it
/// ([`crate::ledger::derived`]): a boolean as 0 or 1, a time as text.
pub(super) async fn derived_digests(
    conn: &tokio_postgres::Client,
    after: u64,
    last: u64,
) -> Result<crate::ledger::derived::Digests, tokio_postgres::Error> {
    use crate::ledger::derived::{
        Cell, Digests, FACTS_COLUMNS, ROLES_COLUMNS, Table, opt_text as opt, time_text,
    };
    let mut digests = Digests::default();
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let last = i64::try_from(last).unwrap_or(i64::MAX);
    let seq_of = |seq: i64| u64::try_from(seq).unwrap_or(0);
    let facts = conn
        .query(
            &format!(
                "SELECT {FACTS_COLUMNS} FROM run_facts WHERE seq > $1 AND seq <= $2 ORDER BY seq"
            ),
            &[&after, &last],
        )
        .await?;
    for r in &facts {
        let seq: i64 = r.try_get(0)?;
        let started: DateTime<Utc> = r.try_get(4)?;
        let started = time_text(&started);
        let text = |i: usize| r.try_get::<_, Option<String>>(i);
        let (spec, verdict, tier, agent, review) =
            (text(1)?, text(2)?, text(3)?, text(5)?, text(6)?);
        let int = |i: usize| r.try_get::<_, i64>(i).map(Cell::Int);
        let unisolated: bool = r.try_get(15)?;
        let cost: Option<f64> = r.try_get(10)?;
        digests.row(
            Table::Facts,
            seq_of(seq),
            &[
                Cell::Int(seq),
                opt(spec.as_deref()),
                opt(verdict.as_deref()),
                opt(tier.as_deref()),
                Cell::Text(&started),
                opt(agent.as_deref()),
                opt(review.as_deref()),
                int(7)?,
                int(8)?,
                int(9)?,
                cost.map_or(Cell::Null, Cell::Real),
                int(11)?,
                int(12)?,
                int(13)?,
                int(14)?,
                Cell::Int(i64::from(unisolated)),
                int(16)?,
                int(17)?,
            ],
        );
    }
    let models = conn
        .query(
            "SELECT seq, model FROM run_models WHERE seq > $1 AND seq <= $2 \
             ORDER BY seq, model COLLATE \"C\"",
            &[&after, &last],
        )
        .await?;
    for r in &models {
        let seq: i64 = r.try_get(0)?;
        let model: String = r.try_get(1)?;
        digests.row(
            Table::Models,
            seq_of(seq),
            &[Cell::Int(seq), Cell::Text(&model)],
        );
    }
    let roles = conn
        .query(
            &format!(
                "SELECT {ROLES_COLUMNS} FROM run_roles WHERE seq > $1 AND seq <= $2 \
                 ORDER BY seq, role COLLATE \"C\""
            ),
            &[&after, &last],
        )
        .await?;
    for r in &roles {
        let seq: i64 = r.try_get(0)?;
        let (role, model, status): (String, String, String) =
            (r.try_get(1)?, r.try_get(2)?, r.try_get(3)?);
        let cost: Option<f64> = r.try_get(7)?;
        digests.row(
            Table::Roles,
            seq_of(seq),
            &[
                Cell::Int(seq),
                Cell::Text(&role),
                Cell::Text(&model),
                Cell::Text(&status),
                Cell::Int(r.try_get(4)?),
                Cell::Int(r.try_get(5)?),
                Cell::Int(r.try_get(6)?),
                cost.map_or(Cell::Null, Cell::Real),
            ],
        );
    }
    Ok(digests.done())
}
