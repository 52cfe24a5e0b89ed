//! The SQLite ledger. Every SQL statement of the crate is in this file.
//!
//! WAL journal, synchronous=FULL (a committed row survives a crash or power
//! cut), foreign keys on, a busy timeout so concurrent gate processes wait
//! for each other instead of failing. An append is one short
//! `BEGIN IMMEDIATE` transaction that reads the tip and inserts after it, so
//! writers on one file are strictly ordered.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params, params_from_iter};

mod events;
mod report;

use super::{LedgerError, LedgerRow, RunEntry, RunFilter};
use crate::checkpoint::Checkpoint;
use crate::merkle::{self, Hash};

/// How long a writer waits for another to finish before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Schema migrations, in order; entry `i` takes the schema to version `i + 1`.
/// Adding one is adding a line; a migration already applied never changes.
const MIGRATIONS: &[&str] = &[
    MIGRATION_1_RUNS,
    events::MIGRATION_2_EVENTS,
    report::MIGRATION_3_FACTS,
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

const MIGRATION_1_RUNS: &str = "
CREATE TABLE runs (
    seq                 INTEGER PRIMARY KEY CHECK (seq >= 1),
    run_id              TEXT    NOT NULL UNIQUE,
    spec_id             TEXT    NOT NULL,
    attempt             INTEGER NOT NULL,
    verdict             TEXT    NOT NULL,
    tier                TEXT    NOT NULL,
    started_at          TEXT    NOT NULL,
    finished_at         TEXT    NOT NULL,
    input_tokens        INTEGER NOT NULL,
    cached_input_tokens INTEGER NOT NULL,
    output_tokens       INTEGER NOT NULL,
    cost_usd            REAL,
    bundle_path         TEXT    NOT NULL,
    envelope_sha256     TEXT    NOT NULL UNIQUE,
    prev_sha256         TEXT,
    leaf_hash           TEXT    NOT NULL,
    recorded_at         TEXT    NOT NULL,
    extra_json          TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX runs_by_spec ON runs (spec_id, seq);
CREATE INDEX runs_by_start ON runs (started_at);
";

const COLUMNS: &str = "seq, run_id, spec_id, attempt, verdict, tier, started_at, finished_at, \
     input_tokens, cached_input_tokens, output_tokens, cost_usd, bundle_path, \
     envelope_sha256, prev_sha256, leaf_hash, recorded_at, extra_json";

/// The SQLite ledger at one path.
#[derive(Debug)]
pub struct Ledger {
    conn: Connection,
    path: PathBuf,
}

/// Timestamps are stored in one fixed-width UTC form so text order is time order.
fn ts(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

impl Ledger {
    /// Opens (creating if needed) the ledger at `path` and applies any
    /// pending migrations.
    pub fn open(path: &Path) -> Result<Self, LedgerError> {
        Self::open_at(path, SCHEMA_VERSION)
    }

    /// Opens the ledger, migrating it up to schema `target` only (tests of
    /// a migration start from the schema before it).
    fn open_at(path: &Path, target: u32) -> Result<Self, LedgerError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| LedgerError::CreateDir {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let open_err = |source| LedgerError::Open {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
            .map_err(open_err)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(open_err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(open_err)?;
        let mut ledger = Self {
            conn,
            path: path.to_path_buf(),
        };
        ledger.migrate(target)?;
        Ok(ledger)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql_err(&self, action: &'static str) -> impl Fn(rusqlite::Error) -> LedgerError + '_ {
        move |source| LedgerError::Sql {
            path: self.path.clone(),
            action,
            source,
        }
    }

    /// Applies the migrations up to schema `target`.
    fn migrate(&mut self, target: u32) -> Result<(), LedgerError> {
        let path = self.path.clone();
        let err = |source| LedgerError::Sql {
            path: path.clone(),
            action: "migrating the schema",
            source,
        };
        for (i, sql) in MIGRATIONS.iter().enumerate().take(target as usize) {
            let version = i as u32 + 1;
            // One transaction per step, re-reading the version inside it, so
            // two processes opening a fresh file apply each step once.
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(err)?;
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS schema_version (
                     version    INTEGER PRIMARY KEY,
                     applied_at TEXT NOT NULL
                 )",
            )
            .map_err(err)?;
            let current: u32 = tx
                .query_row(
                    "SELECT COALESCE(MAX(version), 0) FROM schema_version",
                    [],
                    |r| r.get(0),
                )
                .map_err(err)?;
            if current > SCHEMA_VERSION {
                return Err(LedgerError::SchemaTooNew {
                    path: path.clone(),
                    found: current,
                    supported: SCHEMA_VERSION,
                });
            }
            if current >= version {
                continue;
            }
            tx.execute_batch(sql).map_err(err)?;
            tx.execute(
                "INSERT INTO schema_version (version, applied_at) VALUES (?1, ?2)",
                params![version, ts(&Utc::now())],
            )
            .map_err(err)?;
            tx.commit().map_err(err)?;
            tracing::debug!(path = %path.display(), version, "ledger schema migrated");
        }
        Ok(())
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<u32, LedgerError> {
        self.conn
            .query_row(
                "SELECT COALESCE(MAX(version), 0) FROM schema_version",
                [],
                |r| r.get(0),
            )
            .map_err(self.sql_err("reading the schema version"))
    }

    /// Appends a run whose bundle (`envelope`, the exact stored bytes) is
    /// already durable. Computes the envelope sha256, the leaf hash, the
    /// next seq and the chain link in one `BEGIN IMMEDIATE` transaction.
    pub fn append(&mut self, entry: &RunEntry, envelope: &[u8]) -> Result<LedgerRow, LedgerError> {
        let mut rows = self.append_all([(entry, envelope)])?;
        Ok(rows.remove(0))
    }

    /// Appends several runs in order, in one transaction: all of them or
    /// none (an import of many bundles, a generated ledger).
    pub fn append_all<'a>(
        &mut self,
        items: impl IntoIterator<Item = (&'a RunEntry, &'a [u8])>,
    ) -> Result<Vec<LedgerRow>, LedgerError> {
        let recorded_at = Utc::now();
        let path = self.path.clone();
        let err = |source| LedgerError::Sql {
            path: path.clone(),
            action: "appending a run",
            source,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let mut tip: Option<(u64, String)> = tx
            .query_row(
                "SELECT seq, envelope_sha256 FROM runs ORDER BY seq DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(err)?;
        let mut rows = Vec::new();
        for (entry, envelope) in items {
            let envelope_sha256 = crate::bundle::digest(envelope);
            let leaf_hash = hex::encode(merkle::leaf_hash(envelope));
            if let Some(seq) = tx
                .prepare_cached("SELECT seq FROM runs WHERE run_id = ?1")
                .and_then(|mut s| s.query_row([&entry.run_id], |r| r.get(0)).optional())
                .map_err(err)?
            {
                return Err(LedgerError::AlreadyRecorded {
                    run_id: entry.run_id.clone(),
                    seq,
                });
            }
            if let Some((seq, run_id)) = tx
                .prepare_cached("SELECT seq, run_id FROM runs WHERE envelope_sha256 = ?1")
                .and_then(|mut s| {
                    s.query_row([&envelope_sha256], |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()
                })
                .map_err(err)?
            {
                return Err(LedgerError::EnvelopeRecorded {
                    sha256: envelope_sha256,
                    run_id,
                    seq,
                });
            }
            let (seq, prev_sha256) = match tip.take() {
                Some((seq, sha)) => (seq + 1, Some(sha)),
                None => (1, None),
            };
            tx.prepare_cached(&format!(
                "INSERT INTO runs ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)"
            ))
            .and_then(|mut s| {
                s.execute(params![
                    seq,
                    entry.run_id,
                    entry.spec_id,
                    entry.attempt,
                    entry.verdict,
                    entry.tier,
                    ts(&entry.started_at),
                    ts(&entry.finished_at),
                    entry.input_tokens,
                    entry.cached_input_tokens,
                    entry.output_tokens,
                    entry.cost_usd,
                    entry.bundle_path,
                    envelope_sha256,
                    prev_sha256,
                    leaf_hash,
                    ts(&recorded_at),
                    entry.extra.to_string(),
                ])
            })
            .map_err(err)?;
            report::insert_facts(&tx, seq, entry).map_err(err)?;
            tracing::debug!(seq, run_id = %entry.run_id, "ledger row appended");
            tip = Some((seq, envelope_sha256.clone()));
            rows.push(LedgerRow {
                seq,
                entry: entry.clone(),
                envelope_sha256,
                prev_sha256,
                leaf_hash,
                recorded_at,
            });
        }
        tx.commit().map_err(err)?;
        Ok(rows)
    }

    fn query_rows(
        &self,
        sql: &str,
        args: Vec<Value>,
        action: &'static str,
    ) -> Result<Vec<LedgerRow>, LedgerError> {
        let err = self.sql_err(action);
        let mut stmt = self.conn.prepare_cached(sql).map_err(&err)?;
        let raw = stmt
            .query_map(params_from_iter(args), RawRow::read)
            .map_err(&err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&err)?;
        raw.into_iter().map(RawRow::into_row).collect()
    }

    /// The run with exactly this id.
    pub fn get(&self, run_id: &str) -> Result<Option<LedgerRow>, LedgerError> {
        let sql = format!("SELECT {COLUMNS} FROM runs WHERE run_id = ?1");
        Ok(self
            .query_rows(&sql, vec![Value::Text(run_id.to_owned())], "reading a run")?
            .pop())
    }

    /// The run with this id, or else the one run whose id starts with it.
    pub fn resolve(&self, run_id_or_prefix: &str) -> Result<LedgerRow, LedgerError> {
        if let Some(row) = self.get(run_id_or_prefix)? {
            return Ok(row);
        }
        if run_id_or_prefix.is_empty() {
            return Err(LedgerError::NotFound(String::new()));
        }
        let sql = format!(
            "SELECT {COLUMNS} FROM runs WHERE substr(run_id, 1, ?1) = ?2 ORDER BY seq LIMIT 5"
        );
        let args = vec![
            Value::Integer(i64::try_from(run_id_or_prefix.chars().count()).unwrap_or(i64::MAX)),
            Value::Text(run_id_or_prefix.to_owned()),
        ];
        let mut rows = self.query_rows(&sql, args, "looking up a run id prefix")?;
        match rows.len() {
            0 => Err(LedgerError::NotFound(run_id_or_prefix.to_owned())),
            1 => Ok(rows.remove(0)),
            _ => Err(LedgerError::Ambiguous {
                prefix: run_id_or_prefix.to_owned(),
                matches: rows.into_iter().map(|r| r.entry.run_id).collect(),
            }),
        }
    }

    /// Runs matching `filter`, newest (highest seq) first.
    pub fn list(&self, filter: &RunFilter) -> Result<Vec<LedgerRow>, LedgerError> {
        let mut sql = format!("SELECT {COLUMNS} FROM runs WHERE 1 = 1");
        let mut args = Vec::new();
        if let Some(spec) = &filter.spec_id {
            args.push(Value::Text(spec.clone()));
            let _ = write!(sql, " AND spec_id = ?{}", args.len());
        }
        if let Some(verdict) = &filter.verdict {
            args.push(Value::Text(verdict.clone()));
            let _ = write!(sql, " AND verdict = ?{}", args.len());
        }
        if let Some(since) = &filter.since {
            args.push(Value::Text(ts(since)));
            let _ = write!(sql, " AND started_at >= ?{}", args.len());
        }
        sql += " ORDER BY seq DESC";
        if let Some(limit) = filter.limit {
            args.push(Value::Integer(i64::from(limit)));
            let _ = write!(sql, " LIMIT ?{}", args.len());
        }
        self.query_rows(&sql, args, "listing runs")
    }

    /// The latest run of a spec.
    pub fn last_for_spec(&self, spec_id: &str) -> Result<Option<LedgerRow>, LedgerError> {
        let sql =
            format!("SELECT {COLUMNS} FROM runs WHERE spec_id = ?1 ORDER BY seq DESC LIMIT 1");
        Ok(self
            .query_rows(
                &sql,
                vec![Value::Text(spec_id.to_owned())],
                "reading the last run of a spec",
            )?
            .pop())
    }

    /// Every row in seq order (what [`super::verify`] takes).
    pub fn rows(&self) -> Result<Vec<LedgerRow>, LedgerError> {
        let sql = format!("SELECT {COLUMNS} FROM runs ORDER BY seq");
        self.query_rows(&sql, Vec::new(), "reading all runs")
    }

    /// Number of rows.
    pub fn len(&self) -> Result<u64, LedgerError> {
        self.conn
            .query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))
            .map_err(self.sql_err("counting runs"))
    }

    /// True when no run is recorded.
    pub fn is_empty(&self) -> Result<bool, LedgerError> {
        Ok(self.len()? == 0)
    }

    /// The current tree head over the stored leaf hashes, as an unsigned
    /// checkpoint for `origin` (verify the ledger first to vouch for it).
    pub fn checkpoint(&self, origin: &str) -> Result<Checkpoint, LedgerError> {
        let err = self.sql_err("reading leaf hashes");
        let mut stmt = self
            .conn
            .prepare_cached("SELECT seq, leaf_hash FROM runs ORDER BY seq")
            .map_err(&err)?;
        let stored = stmt
            .query_map([], |r| Ok((r.get::<_, u64>(0)?, r.get::<_, String>(1)?)))
            .map_err(&err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&err)?;
        let leaves = stored
            .iter()
            .map(|(seq, h)| {
                parse_hash(h).ok_or_else(|| corrupt(*seq, "leaf_hash is not 64 hex digits"))
            })
            .collect::<Result<Vec<Hash>, _>>()?;
        Ok(Checkpoint {
            origin: origin.to_owned(),
            size: leaves.len() as u64,
            root: merkle::root(&leaves),
        })
    }
}

pub(super) fn parse_hash(text: &str) -> Option<Hash> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}

fn corrupt(seq: u64, reason: impl Into<String>) -> LedgerError {
    LedgerError::Corrupt {
        seq,
        reason: reason.into(),
    }
}

/// A row as SQLite returns it, before parsing timestamps and JSON.
struct RawRow {
    seq: u64,
    run_id: String,
    spec_id: String,
    attempt: u32,
    verdict: String,
    tier: String,
    started_at: String,
    finished_at: String,
    input_tokens: u64,
    cached_input_tokens: u64,
    output_tokens: u64,
    cost_usd: Option<f64>,
    bundle_path: String,
    envelope_sha256: String,
    prev_sha256: Option<String>,
    leaf_hash: String,
    recorded_at: String,
    extra_json: String,
}

impl RawRow {
    fn read(r: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            seq: r.get(0)?,
            run_id: r.get(1)?,
            spec_id: r.get(2)?,
            attempt: r.get(3)?,
            verdict: r.get(4)?,
            tier: r.get(5)?,
            started_at: r.get(6)?,
            finished_at: r.get(7)?,
            input_tokens: r.get(8)?,
            cached_input_tokens: r.get(9)?,
            output_tokens: r.get(10)?,
            cost_usd: r.get(11)?,
            bundle_path: r.get(12)?,
            envelope_sha256: r.get(13)?,
            prev_sha256: r.get(14)?,
            leaf_hash: r.get(15)?,
            recorded_at: r.get(16)?,
            extra_json: r.get(17)?,
        })
    }

    fn into_row(self) -> Result<LedgerRow, LedgerError> {
        let seq = self.seq;
        let time = |field: &str, text: &str| {
            DateTime::parse_from_rfc3339(text)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|e| corrupt(seq, format!("{field} {text:?}: {e}")))
        };
        let extra = serde_json::from_str(&self.extra_json)
            .map_err(|e| corrupt(seq, format!("extra_json: {e}")))?;
        Ok(LedgerRow {
            seq,
            entry: RunEntry {
                run_id: self.run_id,
                spec_id: self.spec_id,
                attempt: self.attempt,
                verdict: self.verdict,
                tier: self.tier,
                started_at: time("started_at", &self.started_at)?,
                finished_at: time("finished_at", &self.finished_at)?,
                input_tokens: self.input_tokens,
                cached_input_tokens: self.cached_input_tokens,
                output_tokens: self.output_tokens,
                cost_usd: self.cost_usd,
                bundle_path: self.bundle_path,
                extra,
            },
            envelope_sha256: self.envelope_sha256,
            prev_sha256: self.prev_sha256.filter(|s| !s.is_empty()),
            leaf_hash: self.leaf_hash,
            recorded_at: time("recorded_at", &self.recorded_at)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn entry(run_id: &str, spec: &str, verdict: &str, day: u32) -> RunEntry {
        RunEntry {
            run_id: run_id.into(),
            spec_id: spec.into(),
            attempt: 1,
            verdict: verdict.into(),
            tier: "light".into(),
            started_at: Utc.with_ymd_and_hms(2025, 3, day, 10, 0, 0).unwrap(),
            finished_at: Utc.with_ymd_and_hms(2025, 3, day, 10, 1, 0).unwrap(),
            input_tokens: 1200,
            cached_input_tokens: 300,
            output_tokens: 90,
            cost_usd: Some(0.012),
            bundle_path: format!("bundles/{run_id}.dsse.json"),
            extra: serde_json::json!({"agent": "a"}),
        }
    }

    #[test]
    fn append_chains_rows_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = Ledger::open(&dir.path().join("state/ledger.db")).unwrap();
        assert_eq!(ledger.schema_version().unwrap(), SCHEMA_VERSION);
        assert!(ledger.is_empty().unwrap());
        let r1 = ledger
            .append(&entry("r1", "s", "pass", 1), b"env one")
            .unwrap();
        let r2 = ledger
            .append(&entry("r2", "s", "fail", 2), b"env two")
            .unwrap();
        assert_eq!((r1.seq, r2.seq), (1, 2));
        assert_eq!(r1.prev_sha256, None);
        assert_eq!(r2.prev_sha256.as_deref(), Some(r1.envelope_sha256.as_str()));
        assert_eq!(r1.envelope_sha256, crate::bundle::digest(b"env one"));
        assert_eq!(r1.leaf_hash, hex::encode(merkle::leaf_hash(b"env one")));
        let back = ledger.get("r2").unwrap().unwrap();
        // Stored timestamps are microsecond precision.
        assert_eq!(back.entry, r2.entry);
        assert_eq!(back.envelope_sha256, r2.envelope_sha256);
        assert_eq!(
            ledger
                .rows()
                .unwrap()
                .iter()
                .map(|r| r.seq)
                .collect::<Vec<_>>(),
            [1, 2]
        );
        // Reopening applies no migration twice and keeps the rows.
        drop(ledger);
        let ledger = Ledger::open(&dir.path().join("state/ledger.db")).unwrap();
        assert_eq!(ledger.len().unwrap(), 2);
    }

    #[test]
    fn duplicates_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = Ledger::open(&dir.path().join("ledger.db")).unwrap();
        ledger.append(&entry("r1", "s", "pass", 1), b"env").unwrap();
        let err = ledger
            .append(&entry("r1", "s", "pass", 1), b"other")
            .unwrap_err();
        assert!(
            matches!(err, LedgerError::AlreadyRecorded { seq: 1, .. }),
            "{err}"
        );
        let err = ledger
            .append(&entry("r2", "s", "pass", 1), b"env")
            .unwrap_err();
        assert!(
            matches!(err, LedgerError::EnvelopeRecorded { seq: 1, .. }),
            "{err}"
        );
        assert!(!err.is_unavailable());
        assert_eq!(ledger.len().unwrap(), 1);
    }

    #[test]
    fn queries() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = Ledger::open(&dir.path().join("ledger.db")).unwrap();
        let runs = [
            ("0197aa-1", "shop", "pass", 1),
            ("0197ab-2", "shop", "fail", 2),
            ("0197bb-3", "blog", "pass", 3),
            ("0198cc-4", "shop", "pass", 4),
        ];
        for (id, spec, verdict, day) in runs {
            ledger
                .append(&entry(id, spec, verdict, day), id.as_bytes())
                .unwrap();
        }
        let ids =
            |rows: Vec<LedgerRow>| rows.into_iter().map(|r| r.entry.run_id).collect::<Vec<_>>();
        let cases: Vec<(RunFilter, Vec<&str>)> = vec![
            (
                RunFilter::default(),
                vec!["0198cc-4", "0197bb-3", "0197ab-2", "0197aa-1"],
            ),
            (
                RunFilter {
                    spec_id: Some("shop".into()),
                    ..RunFilter::default()
                },
                vec!["0198cc-4", "0197ab-2", "0197aa-1"],
            ),
            (
                RunFilter {
                    verdict: Some("pass".into()),
                    limit: Some(2),
                    ..RunFilter::default()
                },
                vec!["0198cc-4", "0197bb-3"],
            ),
            (
                RunFilter {
                    since: Some(Utc.with_ymd_and_hms(2025, 3, 3, 0, 0, 0).unwrap()),
                    ..RunFilter::default()
                },
                vec!["0198cc-4", "0197bb-3"],
            ),
            (
                RunFilter {
                    spec_id: Some("shop".into()),
                    verdict: Some("fail".into()),
                    since: Some(Utc.with_ymd_and_hms(2025, 3, 2, 10, 0, 0).unwrap()),
                    limit: Some(10),
                },
                vec!["0197ab-2"],
            ),
            (
                RunFilter {
                    spec_id: Some("none".into()),
                    ..RunFilter::default()
                },
                vec![],
            ),
        ];
        for (filter, want) in cases {
            assert_eq!(ids(ledger.list(&filter).unwrap()), want, "{filter:?}");
        }
        assert_eq!(
            ledger.last_for_spec("shop").unwrap().unwrap().entry.run_id,
            "0198cc-4"
        );
        assert!(ledger.last_for_spec("none").unwrap().is_none());
        assert_eq!(ledger.resolve("0197bb-3").unwrap().seq, 3);
        assert_eq!(ledger.resolve("0198").unwrap().seq, 4);
        assert!(
            matches!(ledger.resolve("0197a"), Err(LedgerError::Ambiguous { ref matches, .. }) if matches.len() == 2)
        );
        assert!(matches!(
            ledger.resolve("0199"),
            Err(LedgerError::NotFound(_))
        ));
        assert!(matches!(ledger.resolve(""), Err(LedgerError::NotFound(_))));
        // A LIKE wildcard in a prefix is not a wildcard.
        assert!(matches!(
            ledger.resolve("0197_"),
            Err(LedgerError::NotFound(_))
        ));
    }

    #[test]
    fn checkpoint_covers_all_rows() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = Ledger::open(&dir.path().join("ledger.db")).unwrap();
        assert_eq!(ledger.checkpoint("o").unwrap().root, merkle::empty_root());
        let envs: Vec<Vec<u8>> = (0..5).map(|i| format!("env {i}").into_bytes()).collect();
        for (i, e) in envs.iter().enumerate() {
            ledger
                .append(&entry(&format!("r{i}"), "s", "pass", 1), e)
                .unwrap();
        }
        let cp = ledger.checkpoint("o").unwrap();
        let leaves: Vec<Hash> = envs.iter().map(|e| merkle::leaf_hash(e)).collect();
        assert_eq!((cp.size, cp.root), (5, merkle::root(&leaves)));
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        drop(Ledger::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        conn.execute(
            "INSERT INTO schema_version VALUES (?1, 'later')",
            [SCHEMA_VERSION + 1],
        )
        .unwrap();
        drop(conn);
        let err = Ledger::open(&path).unwrap_err();
        assert!(
            matches!(err, LedgerError::SchemaTooNew { found, .. } if found == SCHEMA_VERSION + 1),
            "{err}"
        );
    }

    #[test]
    fn pragmas_are_set() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(&dir.path().join("ledger.db")).unwrap();
        let get = |p: &str| -> String {
            ledger
                .conn
                .query_row(&format!("PRAGMA {p}"), [], |r| {
                    r.get::<_, rusqlite::types::Value>(0)
                })
                .map(|v| match v {
                    Value::Text(s) => s,
                    Value::Integer(i) => i.to_string(),
                    other => format!("{other:?}"),
                })
                .unwrap()
        };
        assert_eq!(get("journal_mode"), "wal");
        assert_eq!(get("foreign_keys"), "1");
        assert_eq!(get("synchronous"), "2");
        assert_eq!(get("busy_timeout"), "30000");
    }
}
