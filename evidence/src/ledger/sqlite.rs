//! The SQLite ledger, the embedded default. Every SQLite statement of the
//! crate is in this module (the PostgreSQL store has its own).
//!
//! WAL journal, synchronous=FULL (a committed row survives a crash or power
//! cut), foreign keys on, a busy timeout so concurrent gate processes wait
//! for each other instead of failing. An append is one short
//! `BEGIN IMMEDIATE` transaction that reads the tip and inserts after it, so
//! writers on one file are strictly ordered.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::types::Value;
use rusqlite::{
    Connection, OpenFlags, OptionalExtension, Row, TransactionBehavior, params, params_from_iter,
};

mod bundles;
mod columns;
mod errors;
mod handle;
mod queue;
mod replays;
mod report;
mod series;
mod side_tables;

pub use handle::SqliteLedger;
pub use series::SeriesFile;

use self::columns::{COLUMNS, ts};
use self::errors::{corrupt, sql_err_at};

use super::append::{Sealed, SeriesCheck, check_continues, kept_in_ledger, now};
use super::entries::{LedgerRow, RowStamp, RunEntry, RunFilter, parse_hash};
use super::error::LedgerError;
use crate::checkpoint::Checkpoint;
use crate::merkle::{self, Hash};

/// How long a writer waits for another to finish before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Schema migrations, in order; entry `i` takes the schema to version `i + 1`.
/// Adding one is adding a line here and its twin in the PostgreSQL list; a
/// migration already applied never changes.
pub(super) const MIGRATIONS: &[&str] = &[
    MIGRATION_1_RUNS,
    side_tables::MIGRATION_2_EVENTS,
    report::MIGRATION_3_FACTS,
    bundles::MIGRATION_4_BUNDLES,
    report::MIGRATION_5_ISOLATION,
    side_tables::MIGRATION_6_BASE_RESULTS,
    side_tables::MIGRATION_7_SIGNED_EVENTS,
    side_tables::MIGRATION_8_BREAKER_ERROR,
    side_tables::MIGRATION_9_DISMISSED_BY,
    side_tables::MIGRATION_10_OUTCOME_EVIDENCE,
    side_tables::MIGRATION_11_HARVEST_STATES,
    side_tables::MIGRATION_12_BREAKER_GENERATION,
    MIGRATION_13_SERIES,
    replays::MIGRATION_14_REPLAYS,
];

/// The schema version this store writes: one per migration (the ledger's
/// `SCHEMA_VERSION`; `ledger/mod.rs` checks the PostgreSQL list is as long).
const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

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

/// Each run's series key (NULL for the spec's own series, which every run
/// recorded before keys belongs to), and the index a series is read by.
const MIGRATION_13_SERIES: &str = "
ALTER TABLE runs ADD COLUMN series TEXT;
CREATE INDEX runs_by_series ON runs (spec_id, series, seq);
";

/// Turns on the WAL journal. Processes creating one file at once may find
/// it busy without SQLite's busy handler being asked (the change needs the
/// file to themselves), so a busy answer is retried within the busy timeout.
fn wal(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other.map(drop),
        }
    }
}

impl SqliteLedger {
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
        wal(&conn).map_err(open_err)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(open_err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(open_err)?;
        let mut ledger = Self {
            conn,
            path: path.to_path_buf(),
            queue: queue::Queue::new(path),
        };
        ledger.migrate(target)?;
        Ok(ledger)
    }

    /// Opens an existing ledger as it is: nothing created, no migration
    /// applied, nothing written (`query_only`), for a diagnosis that reads
    /// its schema version and tip. Opened for writing all the same: a
    /// read-only connection to a WAL file leaves its `-wal` and `-shm`
    /// files behind, which a writable one removes when it closes.
    pub fn open_as_is(path: &Path) -> Result<Self, LedgerError> {
        let open_err = |source| LedgerError::Open {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        conn.pragma_update(None, "query_only", "ON")
            .map_err(open_err)?;
        Ok(Self {
            conn,
            path: path.to_path_buf(),
            queue: queue::Queue::new(path),
        })
    }

    /// The schema version as found, 0 when the file has no schema yet
    /// (a ledger opened with [`Self::open_as_is`]).
    pub fn schema_version_as_is(&self) -> Result<u32, LedgerError> {
        let has_table: bool = self
            .conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version')",
                [],
                |r| r.get(0),
            )
            .map_err(self.sql_err("reading the schema version"))?;
        if has_table {
            self.schema_version()
        } else {
            Ok(0)
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql_err(&self, action: &'static str) -> impl Fn(rusqlite::Error) -> LedgerError + Copy + '_ {
        sql_err_at(&self.path, action)
    }

    /// Applies the migrations up to schema `target`.
    fn migrate(&mut self, target: u32) -> Result<(), LedgerError> {
        let path = self.path.clone();
        let err = sql_err_at(&path, "migrating the schema");
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
    /// already durable, as it is (an import). Computes the envelope sha256,
    /// the leaf hash, the next seq and the chain link in one
    /// `BEGIN IMMEDIATE` transaction.
    pub fn append(&mut self, entry: &RunEntry, envelope: &[u8]) -> Result<LedgerRow, LedgerError> {
        self.append_one(entry, envelope, SeriesCheck::AsIs)
    }

    /// Appends a live run: as [`Self::append`], and inside the same
    /// transaction refuses an attempt that is neither 1 nor one more than
    /// the spec's latest recorded attempt
    /// ([`LedgerError::AttemptOutOfSeries`]).
    pub fn append_attempt(
        &mut self,
        entry: &RunEntry,
        envelope: &[u8],
    ) -> Result<LedgerRow, LedgerError> {
        self.append_one(entry, envelope, SeriesCheck::Live)
    }

    fn append_one(
        &mut self,
        entry: &RunEntry,
        envelope: &[u8],
        check: SeriesCheck,
    ) -> Result<LedgerRow, LedgerError> {
        let mut rows = self.append_rows(&[(entry, envelope)], check)?;
        rows.pop().ok_or_else(|| LedgerError::Corrupt {
            seq: 0,
            reason: "an append returned no row".to_owned(),
        })
    }

    /// Appends several runs in order, in one transaction: all of them or
    /// none (an import of many bundles, a generated ledger).
    pub fn append_all<'a>(
        &mut self,
        items: impl IntoIterator<Item = (&'a RunEntry, &'a [u8])>,
    ) -> Result<Vec<LedgerRow>, LedgerError> {
        let runs: Vec<(&RunEntry, &[u8])> = items.into_iter().collect();
        self.append_rows(&runs, SeriesCheck::AsIs)
    }

    fn append_rows(
        &mut self,
        runs: &[(&RunEntry, &[u8])],
        check: SeriesCheck,
    ) -> Result<Vec<LedgerRow>, LedgerError> {
        let path = self.path.clone();
        let err = sql_err_at(&path, "appending a run");
        let _turn = self.queue.wait()?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let mut tip = tip_in(&tx).map_err(err)?;
        let mut out = Vec::with_capacity(runs.len());
        for (entry, envelope) in runs {
            let row = append_in(&tx, &err, entry, envelope, tip.as_ref(), check)?;
            tip = Some((row.seq, row.envelope_sha256.clone()));
            out.push(row);
        }
        tx.commit().map_err(err)?;
        Ok(out)
    }

    /// Copies rows exactly as they are (seq, chain link, recorded time) in
    /// one transaction; they must continue this ledger's chain.
    pub fn copy_rows(&mut self, rows: &[LedgerRow]) -> Result<(), LedgerError> {
        let path = self.path.clone();
        let err = sql_err_at(&path, "copying runs");
        let _turn = self.queue.wait()?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        let tip = tip_in(&tx).map_err(err)?;
        check_continues(&path.display().to_string(), tip, rows)?;
        {
            let mut stmt = tx
                .prepare_cached(&format!(
                    "INSERT INTO runs ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"
                ))
                .map_err(err)?;
            for row in rows {
                stmt.execute(params_from_iter(row_params(row)))
                    .map_err(err)?;
                report::insert_facts(&tx, row.seq, &row.entry).map_err(err)?;
            }
        }
        tx.commit().map_err(err)?;
        Ok(())
    }

    /// The last row's seq and envelope sha256.
    pub fn tip(&self) -> Result<Option<(u64, String)>, LedgerError> {
        tip_in(&self.conn).map_err(self.sql_err("reading the tip"))
    }

    /// Takes the spec's series lock (a file lock beside the database),
    /// waiting at most `wait`; `None` when another process still holds it.
    pub fn lock_series(
        &self,
        spec_id: &str,
        wait: std::time::Duration,
    ) -> Result<Option<SeriesFile>, LedgerError> {
        SeriesFile::lock(&self.path, spec_id, wait)
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
        if let Some(series) = &filter.series {
            args.push(
                series
                    .key()
                    .map_or(Value::Null, |k| Value::Text(k.to_owned())),
            );
            // `IS` matches NULL too: the unkeyed series.
            let _ = write!(sql, " AND series IS ?{}", args.len());
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

    /// Every row in seq order (what [`fn@super::verify`] takes).
    pub fn rows(&self) -> Result<Vec<LedgerRow>, LedgerError> {
        let sql = format!("SELECT {COLUMNS} FROM runs ORDER BY seq");
        self.query_rows(&sql, Vec::new(), "reading all runs")
    }

    /// At most `limit` rows after seq `after`, in seq order (a copy reads
    /// a large ledger page by page).
    pub fn rows_after(&self, after: u64, limit: u32) -> Result<Vec<LedgerRow>, LedgerError> {
        let sql = format!("SELECT {COLUMNS} FROM runs WHERE seq > ?1 ORDER BY seq LIMIT ?2");
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.query_rows(
            &sql,
            vec![Value::Integer(after), Value::Integer(i64::from(limit))],
            "reading runs",
        )
    }

    /// The stamps of at most `limit` rows after seq `after`, in seq order:
    /// every column read raw, nothing parsed.
    pub fn stamps_after(&self, after: u64, limit: u32) -> Result<Vec<RowStamp>, LedgerError> {
        let err = self.sql_err("reading runs");
        let sql = format!("SELECT {COLUMNS} FROM runs WHERE seq > ?1 ORDER BY seq LIMIT ?2");
        let mut stmt = self.conn.prepare_cached(&sql).map_err(&err)?;
        let after_i = i64::try_from(after).unwrap_or(i64::MAX);
        let mut stamps = stmt
            .query_map(params_from_iter([after_i, i64::from(limit)]), stamp)
            .map_err(&err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&err)?;
        self.stamp_derived(after, stamps.iter_mut())?;
        Ok(stamps)
    }

    /// Fills in the digest of the report rows of each of `stamps` (of runs
    /// after seq `after`, in seq order), read in one pass per table.
    fn stamp_derived<'a>(
        &self,
        after: u64,
        stamps: impl Iterator<Item = &'a mut RowStamp>,
    ) -> Result<(), LedgerError> {
        let stamps: Vec<&mut RowStamp> = stamps.collect();
        let Some(last) = stamps.last().map(|s| s.seq) else {
            return Ok(());
        };
        self.report_row_digests(after, last)?.stamp(stamps);
        Ok(())
    }

    /// The report-row digests of the runs after seq `after` up to `last`.
    fn report_row_digests(
        &self,
        after: u64,
        last: u64,
    ) -> Result<super::derived::Digests, LedgerError> {
        report::derived_digests(&self.conn, after, last)
            .map_err(self.sql_err("reading the report rows of runs"))
    }

    /// The runs after seq `after` up to `last` with any report row, each
    /// with the digest of its report rows as stored.
    pub fn report_rows_between(
        &self,
        after: u64,
        last: u64,
    ) -> Result<Vec<(u64, [u8; 32])>, LedgerError> {
        Ok(self.report_row_digests(after, last)?.runs())
    }

    /// At most `limit` rows after seq `after`, in seq order, each with its
    /// stamp read in the same pass (so the stamp is of the row returned).
    pub fn stamped_rows_after(
        &self,
        after: u64,
        limit: u32,
    ) -> Result<Vec<(LedgerRow, RowStamp)>, LedgerError> {
        let err = self.sql_err("reading runs");
        let sql = format!("SELECT {COLUMNS} FROM runs WHERE seq > ?1 ORDER BY seq LIMIT ?2");
        let mut stmt = self.conn.prepare_cached(&sql).map_err(&err)?;
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let raw = stmt
            .query_map(params_from_iter([after, i64::from(limit)]), |r| {
                Ok((RawRow::read(r)?, stamp(r)?))
            })
            .map_err(&err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(&err)?;
        let mut rows = raw
            .into_iter()
            .map(|(row, stamp)| Ok((row.into_row()?, stamp)))
            .collect::<Result<Vec<_>, LedgerError>>()?;
        self.stamp_derived(
            after.try_into().unwrap_or(0),
            rows.iter_mut().map(|(_, stamp)| stamp),
        )?;
        Ok(rows)
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

/// The last row's seq and envelope sha256.
fn tip_in(conn: &Connection) -> rusqlite::Result<Option<(u64, String)>> {
    conn.query_row(
        "SELECT seq, envelope_sha256 FROM runs ORDER BY seq DESC LIMIT 1",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()
}

/// A stored row's values in `COLUMNS` order.
fn row_params(row: &LedgerRow) -> Vec<Value> {
    let e = &row.entry;
    let int = |n: u64| Value::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    vec![
        int(row.seq),
        Value::Text(e.run_id.clone()),
        Value::Text(e.spec_id.clone()),
        Value::Integer(i64::from(e.attempt)),
        Value::Text(e.verdict.clone()),
        Value::Text(e.tier.clone()),
        Value::Text(ts(&e.started_at)),
        Value::Text(ts(&e.finished_at)),
        int(e.input_tokens),
        int(e.cached_input_tokens),
        int(e.output_tokens),
        e.cost_usd.map_or(Value::Null, Value::Real),
        Value::Text(e.bundle_path.clone()),
        Value::Text(row.envelope_sha256.clone()),
        row.prev_sha256.clone().map_or(Value::Null, Value::Text),
        Value::Text(row.leaf_hash.clone()),
        Value::Text(ts(&row.recorded_at)),
        Value::Text(e.extra.to_string()),
        e.series.clone().map_or(Value::Null, Value::Text),
    ]
}

/// One append inside an open transaction, chained to `tip` (the previous
/// row's seq and envelope sha256).
fn append_in(
    tx: &rusqlite::Transaction<'_>,
    err: &impl Fn(rusqlite::Error) -> LedgerError,
    entry: &RunEntry,
    envelope: &[u8],
    tip: Option<&(u64, String)>,
    check: SeriesCheck,
) -> Result<LedgerRow, LedgerError> {
    let Sealed {
        envelope_sha256,
        leaf_hash,
    } = Sealed::of(envelope);
    let recorded_at = now();
    let keep_bundle = kept_in_ledger(entry, &envelope_sha256)?;
    if let Some(seq) = tx
        .query_row(
            "SELECT seq FROM runs WHERE run_id = ?1",
            [&entry.run_id],
            |r| r.get(0),
        )
        .optional()
        .map_err(err)?
    {
        return Err(LedgerError::AlreadyRecorded {
            run_id: entry.run_id.clone(),
            seq,
        });
    }
    if let Some((seq, run_id)) = tx
        .query_row(
            "SELECT seq, run_id FROM runs WHERE envelope_sha256 = ?1",
            [&envelope_sha256],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(err)?
    {
        return Err(LedgerError::EnvelopeRecorded {
            sha256: envelope_sha256,
            run_id,
            seq,
        });
    }
    if check == SeriesCheck::Live && entry.attempt != 1 {
        let latest: Option<u32> = tx
            .query_row(
                "SELECT attempt FROM runs WHERE spec_id = ?1 AND series IS ?2 \
                 ORDER BY seq DESC LIMIT 1",
                rusqlite::params![entry.spec_id, entry.series],
                |r| r.get(0),
            )
            .optional()
            .map_err(err)?;
        if latest.map_or(0, |a| a.saturating_add(1)) != entry.attempt {
            return Err(LedgerError::AttemptOutOfSeries {
                run_id: entry.run_id.clone(),
                spec_id: entry.spec_id.clone(),
                series: entry.series.clone(),
                attempt: entry.attempt,
                latest,
            });
        }
    }
    let (seq, prev_sha256) = match tip {
        Some((seq, sha)) => (seq + 1, Some(sha.clone())),
        None => (1, None),
    };
    let row = LedgerRow {
        seq,
        entry: (*entry).clone(),
        envelope_sha256,
        prev_sha256,
        leaf_hash,
        recorded_at,
    };
    tx.prepare_cached(&format!(
        "INSERT INTO runs ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"
    ))
    .and_then(|mut stmt| stmt.execute(params_from_iter(row_params(&row))))
    .map_err(err)?;
    report::insert_facts(tx, seq, entry).map_err(err)?;
    if keep_bundle {
        bundles::insert(tx, &row.envelope_sha256, envelope).map_err(err)?;
    }
    tracing::debug!(seq, run_id = %entry.run_id, "ledger row appended");
    Ok(row)
}

/// The stamp of a row read with [`COLUMNS`]: every value tagged with its
/// storage class and, when variable, its length, so no two rows that
/// differ in any column share one.
fn stamp(r: &Row<'_>) -> rusqlite::Result<RowStamp> {
    use rusqlite::types::ValueRef;
    let mut h = blake3::Hasher::new();
    for i in 0..r.as_ref().column_count() {
        match r.get_ref(i)? {
            ValueRef::Null => h.update(&[0]),
            ValueRef::Integer(n) => h.update(&[1]).update(&n.to_le_bytes()),
            ValueRef::Real(x) => h.update(&[2]).update(&x.to_bits().to_le_bytes()),
            ValueRef::Text(b) => h
                .update(&[3])
                .update(&(b.len() as u64).to_le_bytes())
                .update(b),
            ValueRef::Blob(b) => h
                .update(&[4])
                .update(&(b.len() as u64).to_le_bytes())
                .update(b),
        };
    }
    let envelope = r.get_ref(13)?.as_str().ok().and_then(RowStamp::envelope_of);
    Ok(RowStamp {
        seq: r.get(0)?,
        envelope,
        columns: *h.finalize().as_bytes(),
        derived: [0; 32],
    })
}

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
    series: Option<String>,
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
            series: r.get(18)?,
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
                series: self.series,
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
    use super::*;

    // What both stores must do is tested in `ledger::tests`; this is
    // SQLite's own.
    #[test]
    fn pragmas_are_set() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = SqliteLedger::open(&dir.path().join("ledger.db")).unwrap();
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
