//! The PostgreSQL ledger, shared by many runners. Every PostgreSQL statement
//! of the crate is in this module, and its migrations are numbered as the
//! SQLite store's.
//!
//! Concurrent writers stay strictly ordered: an append is one short
//! transaction that first takes a transaction-scoped advisory lock (the
//! chain lock), then reads the tip and inserts after it in one statement.
//! The lock is held from the read of the tip until the commit, so no two
//! appends see the same tip; the seq primary key would refuse a second row
//! after one tip anyway. The advisory lock leaves readers and the side
//! tables alone, and the server drops it with the transaction when a
//! client dies mid-append.
//!
//! The append's requests are pipelined (sent together, answered together):
//! one round trip per append. Its commit does not wait for the WAL flush
//! while the chain lock is held (`synchronous_commit` off for that
//! transaction only); the append then commits a transaction that writes WAL
//! (`pg_logical_emit_message`, transactional and empty), whose flush
//! covers the append's commit. A transaction that writes no WAL would not
//! do: the server commits it without a flush even with `synchronous_commit`
//! on. So concurrent appends share WAL flushes, the lock is held only for
//! the work, and an append reports success only once its row is durable.
//! Where the operator has revoked that function, appends commit
//! synchronously under the lock instead: slower, as durable. A crash before
//! the flush loses the newest appends together, never one in the middle:
//! WAL replays a prefix.

mod bundles;
mod columns;
mod errors;
mod exec;
mod handle;
mod locks;
mod replays;
mod report;
mod series;
mod side_tables;
pub(super) mod tls;

use std::fmt::Write as _;
use std::sync::{Arc, LazyLock, OnceLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

pub use handle::PgLedger;
pub use series::SeriesPg;

use self::columns::{COLUMNS, big};
use self::errors::corrupt;
use self::exec::{Conn, Exec};
use self::handle::Durability;
use self::locks::{CHAIN_LOCK, LOCK_CLASS, MIGRATION_LOCK};
use super::append::{Sealed, SeriesCheck, check_continues, kept_in_ledger, now};
use super::entries::{LedgerRow, RowStamp, RunEntry, RunFilter, parse_hash};
use super::error::{LedgerError, reason};
use super::location::redact;
use crate::checkpoint::Checkpoint;
use crate::merkle::{self, Hash};

/// Schema migrations, numbered as the SQLite store's: entry `i` takes the
/// schema to version `i + 1`. A migration already applied never changes.
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
/// `SCHEMA_VERSION`; `ledger/mod.rs` checks the SQLite list is as long).
const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

const MIGRATION_1_RUNS: &str = "
CREATE TABLE runs (
    seq                 BIGINT           PRIMARY KEY CHECK (seq >= 1),
    run_id              TEXT             NOT NULL UNIQUE,
    spec_id             TEXT             NOT NULL,
    attempt             BIGINT           NOT NULL,
    verdict             TEXT             NOT NULL,
    tier                TEXT             NOT NULL,
    started_at          TIMESTAMPTZ      NOT NULL,
    finished_at         TIMESTAMPTZ      NOT NULL,
    input_tokens        BIGINT           NOT NULL,
    cached_input_tokens BIGINT           NOT NULL,
    output_tokens       BIGINT           NOT NULL,
    cost_usd            DOUBLE PRECISION,
    bundle_path         TEXT             NOT NULL,
    envelope_sha256     TEXT             NOT NULL UNIQUE,
    prev_sha256         TEXT,
    leaf_hash           TEXT             NOT NULL,
    recorded_at         TIMESTAMPTZ      NOT NULL,
    extra_json          JSON             NOT NULL DEFAULT '{}'
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

/// Opens an append: READ COMMITTED whatever the server's default (each
/// statement then sees what the previous chain-lock holder committed), the
/// commit does not wait for the flush while the lock is held, and waiting
/// for the lock is bounded like SQLite's busy timeout.
const BEGIN_APPEND: &str = "BEGIN ISOLATION LEVEL READ COMMITTED; \
     SELECT set_config('synchronous_commit', 'off', true), \
     set_config('lock_timeout', '30s', true), pg_advisory_xact_lock(1734440037, 1)";

/// [`BEGIN_APPEND`] for a server without [`DURABLE`]: the commit flushes
/// under the lock, as the server's `synchronous_commit` says.
const BEGIN_APPEND_SYNC: &str = "BEGIN ISOLATION LEVEL READ COMMITTED; \
     SELECT set_config('lock_timeout', '30s', true), pg_advisory_xact_lock(1734440037, 1)";

/// Inserts one run after the tip, in one statement: seq and chain link come
/// from the tip as this statement sees it. For a live run ($17 false) it
/// inserts nothing when the attempt neither starts a series nor follows the
/// latest attempt of its series ($19, the key). The run's report rows ($20
/// on) and, when the bundle is kept in the ledger, its envelope ($18, else
/// NULL) go in with it, or not at all.
static INSERT_NEXT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH ins AS (INSERT INTO runs (seq, run_id, spec_id, attempt, verdict, tier, \
         started_at, finished_at, input_tokens, cached_input_tokens, output_tokens, cost_usd, \
         bundle_path, envelope_sha256, prev_sha256, leaf_hash, recorded_at, extra_json, series) \
         SELECT COALESCE(tip.seq, 0) + 1, $1::text, $2::text, $3::bigint, $4::text, $5::text, \
         $6::timestamptz, $7::timestamptz, $8::bigint, $9::bigint, $10::bigint, $11::float8, \
         $12::text, $13::text, tip.envelope_sha256, $14::text, $15::timestamptz, $16::json, \
         $19::text \
         FROM (SELECT 1) AS one \
         LEFT JOIN (SELECT seq, envelope_sha256 FROM runs ORDER BY seq DESC LIMIT 1) AS tip \
         ON true \
         WHERE $17::boolean OR $3::bigint = 1 OR $3::bigint = COALESCE( \
             (SELECT attempt FROM runs WHERE spec_id = $2::text \
              AND series IS NOT DISTINCT FROM $19::text ORDER BY seq DESC LIMIT 1), 0) + 1 \
         RETURNING {returning}, prev_sha256), \
         kept AS (INSERT INTO bundles (sha256, envelope) SELECT $13::text, $18::bytea FROM ins \
         WHERE $18::bytea IS NOT NULL ON CONFLICT (sha256) DO NOTHING), \
         {facts} \
         SELECT seq, prev_sha256 FROM ins",
        returning = report::FACTS_RETURNING,
        facts = report::facts_clauses(20),
    )
});

/// Copies one row exactly ($1 to $19, in `COLUMNS` order) with its report
/// rows ($20 on).
static COPY_ROW: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH ins AS (INSERT INTO runs ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, \
         $10, $11, $12, $13, $14, $15, $16, $17, $18, $19) RETURNING {returning}), \
         {facts} \
         SELECT 1",
        returning = report::FACTS_RETURNING,
        facts = report::facts_clauses(20),
    )
});

/// The durability wait after an append: a normal commit of a transaction
/// that writes WAL (one empty logical message, which logical decoding
/// consumers see under the prefix `gate` and may ignore), whose flush
/// covers every earlier commit.
const DURABLE: &str = "SELECT pg_logical_emit_message(true, 'gate', '')";

impl PgLedger {
    /// Connects to the database at `url` and applies any pending
    /// migrations. An unreachable server fails within the connect timeout
    /// (5 s unless the URL's `connect_timeout` says otherwise).
    pub fn open(url: &str) -> Result<Self, LedgerError> {
        let ledger = Self::open_as_is(url)?;
        ledger.migrate()?;
        Ok(ledger)
    }

    /// Connects to the database at `url` as it is: no schema created, no
    /// migration applied (a diagnosis reads its schema version and tip).
    pub fn open_as_is(url: &str) -> Result<Self, LedgerError> {
        let name = redact(url);
        let bad = |e: String| LedgerError::BadLocation(format!("{name}: {e}"));
        let (config, tls) = tls::split(url).map_err(&bad)?;
        let tls = tls.connector().map_err(&bad)?;
        let exec = Exec::new().map_err(|e| LedgerError::Unreachable {
            ledger: name.clone(),
            reason: format!("cannot start the client runtime: {e}"),
        })?;
        Ok(Self {
            pool: exec::pool(config, tls),
            exec: Arc::new(exec),
            name,
            durability: OnceLock::new(),
        })
    }

    /// The schema version as found, 0 when the database has no schema yet
    /// (a ledger opened with [`Self::open_as_is`]); connecting is the
    /// first thing it does, so an unreachable server is reported here.
    pub fn schema_version_as_is(&self) -> Result<u32, LedgerError> {
        self.op(async {
            let conn = self.conn().await?;
            let found = match conn
                .query_one("SELECT COALESCE(MAX(version), 0) FROM schema_version", &[])
                .await
            {
                Ok(row) => version(row.get(0)),
                Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => 0,
                Err(e) => return Err(self.pg_err("reading the schema version")(e)),
            };
            conn.release();
            Ok(found)
        })
    }

    /// The URL, without its password.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs one operation on the ledger's runtime, bounded in time.
    fn op<T: Send>(
        &self,
        fut: impl Future<Output = Result<T, LedgerError>> + Send,
    ) -> Result<T, LedgerError> {
        let name = &self.name;
        self.exec.run(async move {
            tokio::time::timeout(exec::OPERATION_TIMEOUT, fut)
                .await
                .unwrap_or_else(|_| {
                    Err(LedgerError::Unreachable {
                        ledger: name.clone(),
                        reason: format!("no answer within {} s", exec::OPERATION_TIMEOUT.as_secs()),
                    })
                })
        })
    }

    async fn conn(&self) -> Result<Conn, LedgerError> {
        // The pool's connections are driven only while the ledger works,
        // so one whose session the server ended meanwhile (a restart, a
        // failover, an administrator) has not read the news yet. Yielding
        // lets the runtime poll its sockets and each connection task see
        // its end, so the pool finds it closed and opens another.
        tokio::task::yield_now().await;
        tokio::task::yield_now().await;
        self.pool
            .get()
            .await
            .map(Conn::new)
            .map_err(|e| exec::pool_error(&self.name, e))
    }

    fn pg_err(&self, action: &'static str) -> impl Fn(tokio_postgres::Error) -> LedgerError + '_ {
        move |source| LedgerError::Postgres {
            ledger: self.name.clone(),
            action,
            source,
        }
    }

    fn migrate(&self) -> Result<(), LedgerError> {
        let err = self.pg_err("migrating the schema");
        let too_new = |found: u32| LedgerError::SchemaTooNew {
            path: self.name.clone().into(),
            found,
            supported: SCHEMA_VERSION,
        };
        self.op(async {
            let mut conn = self.conn().await?;
            // Most opens find the schema current: one query, no lock.
            match conn
                .query_one("SELECT COALESCE(MAX(version), 0) FROM schema_version", &[])
                .await
            {
                Ok(row) => {
                    let v = version(row.get(0));
                    if v > SCHEMA_VERSION {
                        return Err(too_new(v));
                    }
                    if v == SCHEMA_VERSION {
                        conn.release();
                        return Ok(());
                    }
                }
                Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => {}
                Err(e) => return Err(err(e)),
            }
            // Runners opening a fresh database at once: the first to take
            // the lock migrates, the others then find nothing to do.
            let tx = conn.transaction().await.map_err(&err)?;
            tx.execute(
                "SELECT pg_advisory_xact_lock($1, $2)",
                &[&LOCK_CLASS, &MIGRATION_LOCK],
            )
            .await
            .map_err(&err)?;
            tx.batch_execute(
                "CREATE TABLE IF NOT EXISTS schema_version (
                     version    BIGINT      PRIMARY KEY,
                     applied_at TIMESTAMPTZ NOT NULL
                 )",
            )
            .await
            .map_err(&err)?;
            let current = version(
                tx.query_one("SELECT COALESCE(MAX(version), 0) FROM schema_version", &[])
                    .await
                    .map_err(&err)?
                    .get(0),
            );
            if current > SCHEMA_VERSION {
                return Err(too_new(current));
            }
            for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
                let step = i64::try_from(i + 1).unwrap_or(i64::MAX);
                tx.batch_execute(sql).await.map_err(&err)?;
                tx.execute(
                    "INSERT INTO schema_version (version, applied_at) VALUES ($1, now())",
                    &[&step],
                )
                .await
                .map_err(&err)?;
                tracing::debug!(ledger = %self.name, version = step, "ledger schema migrated");
            }
            tx.commit().await.map_err(&err)?;
            conn.release();
            Ok(())
        })
    }

    /// The schema version of the database.
    pub fn schema_version(&self) -> Result<u32, LedgerError> {
        self.op(async {
            let conn = self.conn().await?;
            let row = conn
                .query_one("SELECT COALESCE(MAX(version), 0) FROM schema_version", &[])
                .await
                .map_err(self.pg_err("reading the schema version"))?;
            conn.release();
            Ok(version(row.get(0)))
        })
    }

    /// Appends a run whose bundle is already durable, as it is (an import):
    /// one pipelined transaction under the chain lock.
    pub fn append(&mut self, entry: &RunEntry, envelope: &[u8]) -> Result<LedgerRow, LedgerError> {
        self.append_one(entry, envelope, SeriesCheck::AsIs)
    }

    /// Appends a live run: as [`Self::append`], and refuses, in the same
    /// statement, an attempt that is neither 1 nor one more than the spec's
    /// latest recorded attempt.
    pub fn append_attempt(
        &mut self,
        entry: &RunEntry,
        envelope: &[u8],
    ) -> Result<LedgerRow, LedgerError> {
        self.append_one(entry, envelope, SeriesCheck::Live)
    }

    fn append_one(
        &self,
        entry: &RunEntry,
        envelope: &[u8],
        check: SeriesCheck,
    ) -> Result<LedgerRow, LedgerError> {
        let mut rows = self.op(self.append_rows(&[(entry, envelope)], check))?;
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
        self.op(self.append_rows(&runs, SeriesCheck::AsIs))
    }

    async fn append_rows(
        &self,
        runs: &[(&RunEntry, &[u8])],
        check: SeriesCheck,
    ) -> Result<Vec<LedgerRow>, LedgerError> {
        let err = self.pg_err("appending a run");
        let recorded_at = now();
        let as_is = check == SeriesCheck::AsIs;
        let prepared: Vec<(Sealed, Vec<Box<dyn ToSql + Sync + Send>>)> = runs
            .iter()
            .map(|(entry, envelope)| {
                let sealed = Sealed::of(envelope);
                let kept =
                    kept_in_ledger(entry, &sealed.envelope_sha256)?.then(|| envelope.to_vec());
                let mut params = insert_params(entry, &sealed, recorded_at, as_is);
                params.push(Box::new(kept));
                params.push(Box::new(entry.series.clone()));
                params.extend(report::facts_params(&entry.extra));
                Ok((sealed, params))
            })
            .collect::<Result<_, LedgerError>>()?;
        let conn = self.conn().await?;
        let wait = self.durability(&conn).await? == Durability::Wait;
        let insert = conn.prepare_cached(&INSERT_NEXT).await.map_err(&err)?;
        // Everything goes out at once; the server answers in order.
        let inserts = futures::future::join_all(prepared.iter().map(|(_, params)| {
            let refs: Vec<&(dyn ToSql + Sync)> =
                params.iter().map(|p| &**p as &(dyn ToSql + Sync)).collect();
            let insert = &insert;
            let conn = &conn;
            async move { conn.query_opt(insert, &refs).await }
        }));
        let begin = if wait {
            BEGIN_APPEND
        } else {
            BEGIN_APPEND_SYNC
        };
        let durable = async {
            if wait {
                conn.batch_execute(DURABLE).await
            } else {
                Ok(())
            }
        };
        let (begun, inserted, committed, durable) = futures::join!(
            conn.batch_execute(begin),
            inserts,
            conn.batch_execute("COMMIT"),
            durable,
        );
        begun.map_err(&err)?;
        let mut out = Vec::with_capacity(runs.len());
        for (((entry, _), (sealed, _)), result) in runs.iter().zip(&prepared).zip(inserted) {
            let row = match result {
                Ok(Some(row)) => row,
                Ok(None) => return Err(self.out_of_series(&conn, entry).await),
                Err(e) => {
                    // The rows before it in this batch were rolled back
                    // with it: a duplicate of one of them is named here.
                    return Err(match same_in_batch(&out, entry, sealed) {
                        Some(refused) => refused,
                        None => self.refused(&conn, entry, sealed, e).await,
                    });
                }
            };
            let seq: i64 = row.get(0);
            out.push(LedgerRow {
                seq: u64::try_from(seq).map_err(|_| corrupt(0, "a negative seq"))?,
                entry: (*entry).clone(),
                envelope_sha256: sealed.envelope_sha256.clone(),
                prev_sha256: row.get(1),
                leaf_hash: sealed.leaf_hash.clone(),
                recorded_at,
            });
        }
        committed.map_err(&err)?;
        durable.map_err(self.pg_err("waiting for the append to be durable"))?;
        conn.release();
        for row in &out {
            tracing::debug!(seq = row.seq, run_id = %row.entry.run_id, "ledger row appended");
        }
        Ok(out)
    }

    /// How appends are made durable here: [`Durability::Wait`] when the
    /// server lets this role run [`DURABLE`] (tried once, which costs one
    /// empty WAL record).
    async fn durability(&self, conn: &Conn) -> Result<Durability, LedgerError> {
        if let Some(known) = self.durability.get() {
            return Ok(*known);
        }
        let found = match conn.batch_execute(DURABLE).await {
            Ok(()) => Durability::Wait,
            Err(e)
                if matches!(
                    e.code(),
                    Some(&SqlState::INSUFFICIENT_PRIVILEGE | &SqlState::UNDEFINED_FUNCTION)
                ) =>
            {
                tracing::debug!(ledger = %self.name, error = %e,
                    "appends commit synchronously under the chain lock");
                Durability::Commit
            }
            Err(e) => return Err(self.pg_err("appending a run")(e)),
        };
        let _ = self.durability.set(found);
        Ok(found)
    }

    /// Why an insert returned no row: its attempt does not continue the series.
    async fn out_of_series(&self, conn: &Conn, entry: &RunEntry) -> LedgerError {
        let latest = conn
            .query_opt(
                "SELECT attempt FROM runs WHERE spec_id = $1 \
                 AND series IS NOT DISTINCT FROM $2 ORDER BY seq DESC LIMIT 1",
                &[&entry.spec_id, &entry.series],
            )
            .await
            .ok()
            .flatten()
            .and_then(|r| u32::try_from(r.get::<_, i64>(0)).ok());
        LedgerError::AttemptOutOfSeries {
            run_id: entry.run_id.clone(),
            spec_id: entry.spec_id.clone(),
            series: entry.series.clone(),
            attempt: entry.attempt,
            latest,
        }
    }

    /// A failed insert as the ledger reports it: a run or envelope already
    /// recorded, or a database error.
    async fn refused(
        &self,
        conn: &Conn,
        entry: &RunEntry,
        sealed: &Sealed,
        e: tokio_postgres::Error,
    ) -> LedgerError {
        let constraint = e
            .as_db_error()
            .filter(|d| *d.code() == SqlState::UNIQUE_VIOLATION)
            .and_then(|d| d.constraint().map(str::to_owned));
        let found = |sql: &'static str, key: String| async move {
            conn.query_opt(sql, &[&key])
                .await
                .ok()
                .flatten()
                .map(|r| (r.get::<_, i64>(0), r.get::<_, String>(1)))
        };
        match constraint.as_deref() {
            Some("runs_run_id_key") => {
                if let Some((seq, _)) = found(
                    "SELECT seq, run_id FROM runs WHERE run_id = $1",
                    entry.run_id.clone(),
                )
                .await
                {
                    return LedgerError::AlreadyRecorded {
                        run_id: entry.run_id.clone(),
                        seq: u64::try_from(seq).unwrap_or(0),
                    };
                }
            }
            Some("runs_envelope_sha256_key") => {
                if let Some((seq, run_id)) = found(
                    "SELECT seq, run_id FROM runs WHERE envelope_sha256 = $1",
                    sealed.envelope_sha256.clone(),
                )
                .await
                {
                    return LedgerError::EnvelopeRecorded {
                        sha256: sealed.envelope_sha256.clone(),
                        run_id,
                        seq: u64::try_from(seq).unwrap_or(0),
                    };
                }
            }
            _ => {}
        }
        LedgerError::Postgres {
            ledger: self.name.clone(),
            action: "appending a run",
            source: e,
        }
    }

    /// Copies rows exactly as they are (seq, chain link, recorded time) in
    /// one transaction under the chain lock; they must continue the chain.
    pub fn copy_rows(&mut self, rows: &[LedgerRow]) -> Result<(), LedgerError> {
        let err = self.pg_err("copying runs");
        self.op(async {
            let mut conn = self.conn().await?;
            let insert = conn.prepare_cached(&COPY_ROW).await.map_err(&err)?;
            let tx = conn.transaction().await.map_err(&err)?;
            tx.execute(
                "SELECT pg_advisory_xact_lock($1, $2)",
                &[&LOCK_CLASS, &CHAIN_LOCK],
            )
            .await
            .map_err(&err)?;
            let tip = tx
                .query_opt(
                    "SELECT seq, envelope_sha256 FROM runs ORDER BY seq DESC LIMIT 1",
                    &[],
                )
                .await
                .map_err(&err)?
                .map(|r| (u64::try_from(r.get::<_, i64>(0)).unwrap_or(0), r.get(1)));
            check_continues(&self.name, tip, rows)?;
            let params: Vec<Vec<Box<dyn ToSql + Sync + Send>>> = rows
                .iter()
                .map(|row| {
                    let mut params = copy_params(row);
                    params.extend(report::facts_params(&row.entry.extra));
                    params
                })
                .collect();
            let inserts = futures::future::try_join_all(params.iter().map(|p| {
                let refs: Vec<&(dyn ToSql + Sync)> =
                    p.iter().map(|b| &**b as &(dyn ToSql + Sync)).collect();
                let tx = &tx;
                let insert = &insert;
                async move { tx.execute(insert, &refs).await }
            }));
            inserts.await.map_err(&err)?;
            tx.commit().await.map_err(&err)?;
            conn.release();
            Ok(())
        })
    }

    /// The last row's seq and envelope sha256.
    pub fn tip(&self) -> Result<Option<(u64, String)>, LedgerError> {
        self.op(async {
            let conn = self.conn().await?;
            let row = conn
                .query_opt(
                    "SELECT seq, envelope_sha256 FROM runs ORDER BY seq DESC LIMIT 1",
                    &[],
                )
                .await
                .map_err(self.pg_err("reading the tip"))?;
            conn.release();
            Ok(row.map(|r| (u64::try_from(r.get::<_, i64>(0)).unwrap_or(0), r.get(1))))
        })
    }

    /// Takes the spec's series lock (a session advisory lock held on its own
    /// connection), waiting at most `wait`; `None` when another runner
    /// still holds it.
    pub fn lock_series(
        &self,
        spec_id: &str,
        wait: Duration,
    ) -> Result<Option<SeriesPg>, LedgerError> {
        SeriesPg::lock(self, spec_id, wait)
    }

    async fn query_rows(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        action: &'static str,
    ) -> Result<Vec<LedgerRow>, LedgerError> {
        let conn = self.conn().await?;
        let rows = conn.query(sql, params).await.map_err(self.pg_err(action))?;
        conn.release();
        rows.iter().map(read_row).collect()
    }

    /// The run with exactly this id.
    pub fn get(&self, run_id: &str) -> Result<Option<LedgerRow>, LedgerError> {
        let sql = format!("SELECT {COLUMNS} FROM runs WHERE run_id = $1");
        Ok(self
            .op(self.query_rows(&sql, &[&run_id], "reading a run"))?
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
            "SELECT {COLUMNS} FROM runs WHERE substr(run_id, 1, $1) = $2 ORDER BY seq LIMIT 5"
        );
        let len = i32::try_from(run_id_or_prefix.chars().count()).unwrap_or(i32::MAX);
        let mut rows = self.op(self.query_rows(
            &sql,
            &[&len, &run_id_or_prefix],
            "looking up a run id prefix",
        ))?;
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
        let mut sql = format!("SELECT {COLUMNS} FROM runs WHERE true");
        let mut params: Vec<Box<dyn ToSql + Sync + Send>> = Vec::new();
        if let Some(spec) = &filter.spec_id {
            params.push(Box::new(spec.clone()));
            let _ = write!(sql, " AND spec_id = ${}", params.len());
        }
        if let Some(series) = &filter.series {
            params.push(Box::new(series.key().map(str::to_owned)));
            // Matches NULL too: the unkeyed series.
            let _ = write!(
                sql,
                " AND series IS NOT DISTINCT FROM ${}::text",
                params.len()
            );
        }
        if let Some(verdict) = &filter.verdict {
            params.push(Box::new(verdict.clone()));
            let _ = write!(sql, " AND verdict = ${}", params.len());
        }
        if let Some(since) = filter.since {
            params.push(Box::new(since));
            let _ = write!(sql, " AND started_at >= ${}", params.len());
        }
        sql += " ORDER BY seq DESC";
        if let Some(limit) = filter.limit {
            params.push(Box::new(i64::from(limit)));
            let _ = write!(sql, " LIMIT ${}", params.len());
        }
        let refs: Vec<&(dyn ToSql + Sync)> =
            params.iter().map(|p| &**p as &(dyn ToSql + Sync)).collect();
        self.op(self.query_rows(&sql, &refs, "listing runs"))
    }

    /// The latest run of a spec.
    pub fn last_for_spec(&self, spec_id: &str) -> Result<Option<LedgerRow>, LedgerError> {
        let sql =
            format!("SELECT {COLUMNS} FROM runs WHERE spec_id = $1 ORDER BY seq DESC LIMIT 1");
        Ok(self
            .op(self.query_rows(&sql, &[&spec_id], "reading the last run of a spec"))?
            .pop())
    }

    /// Every row in seq order.
    pub fn rows(&self) -> Result<Vec<LedgerRow>, LedgerError> {
        let sql = format!("SELECT {COLUMNS} FROM runs ORDER BY seq");
        self.op(self.query_rows(&sql, &[], "reading all runs"))
    }

    /// At most `limit` rows after seq `after`, in seq order.
    pub fn rows_after(&self, after: u64, limit: u32) -> Result<Vec<LedgerRow>, LedgerError> {
        let sql = format!("SELECT {COLUMNS} FROM runs WHERE seq > $1 ORDER BY seq LIMIT $2");
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.op(self.query_rows(&sql, &[&after, &i64::from(limit)], "reading runs"))
    }

    /// The stamps of at most `limit` rows after seq `after`, in seq order:
    /// every column read raw (the row's text form), nothing parsed.
    pub fn stamps_after(&self, after: u64, limit: u32) -> Result<Vec<RowStamp>, LedgerError> {
        let sql =
            "SELECT seq, envelope_sha256, r::text FROM runs r WHERE seq > $1 ORDER BY seq LIMIT $2";
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.op(async {
            let conn = self.conn().await?;
            let rows = conn
                .query(sql, &[&after, &i64::from(limit)])
                .await
                .map_err(self.pg_err("reading runs"))?;
            let mut stamps = rows
                .iter()
                .map(|r| read_stamp(r, 0, 1, 2))
                .collect::<Result<Vec<_>, _>>()?;
            self.stamp_derived(&conn, after, stamps.iter_mut()).await?;
            conn.release();
            Ok(stamps)
        })
    }

    /// At most `limit` rows after seq `after`, in seq order, each with its
    /// stamp read in the same query (so the stamp is of the row returned).
    pub fn stamped_rows_after(
        &self,
        after: u64,
        limit: u32,
    ) -> Result<Vec<(LedgerRow, RowStamp)>, LedgerError> {
        let sql =
            format!("SELECT {COLUMNS}, r::text FROM runs r WHERE seq > $1 ORDER BY seq LIMIT $2");
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.op(async {
            let conn = self.conn().await?;
            let rows = conn
                .query(&sql, &[&after, &i64::from(limit)])
                .await
                .map_err(self.pg_err("reading runs"))?;
            let mut rows = rows
                .iter()
                .map(|r| Ok((read_row(r)?, read_stamp(r, 0, 13, 19)?)))
                .collect::<Result<Vec<_>, LedgerError>>()?;
            self.stamp_derived(&conn, after, rows.iter_mut().map(|(_, stamp)| stamp))
                .await?;
            conn.release();
            Ok(rows)
        })
    }

    /// Fills in the digest of the report rows of each of `stamps` (of runs
    /// after seq `after`, in seq order), read in one query per table.
    async fn stamp_derived<'a>(
        &self,
        conn: &tokio_postgres::Client,
        after: i64,
        stamps: impl Iterator<Item = &'a mut RowStamp>,
    ) -> Result<(), LedgerError> {
        let stamps: Vec<&mut RowStamp> = stamps.collect();
        let Some(last) = stamps.last().map(|s| s.seq) else {
            return Ok(());
        };
        report::derived_digests(conn, after.try_into().unwrap_or(0), last)
            .await
            .map_err(self.pg_err("reading the report rows of runs"))?
            .stamp(stamps);
        Ok(())
    }

    /// The runs after seq `after` up to `last` with any report row, each
    /// with the digest of its report rows as stored.
    pub fn report_rows_between(
        &self,
        after: u64,
        last: u64,
    ) -> Result<Vec<(u64, [u8; 32])>, LedgerError> {
        self.op(async {
            let conn = self.conn().await?;
            let digests = report::derived_digests(&conn, after, last)
                .await
                .map_err(self.pg_err("reading the report rows of runs"))?;
            conn.release();
            Ok(digests.runs())
        })
    }

    /// Number of rows.
    pub fn len(&self) -> Result<u64, LedgerError> {
        self.op(async {
            let conn = self.conn().await?;
            let row = conn
                .query_one("SELECT COUNT(*) FROM runs", &[])
                .await
                .map_err(self.pg_err("counting runs"))?;
            conn.release();
            Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
        })
    }

    /// True when no run is recorded.
    pub fn is_empty(&self) -> Result<bool, LedgerError> {
        Ok(self.len()? == 0)
    }

    /// The current tree head over the stored leaf hashes.
    pub fn checkpoint(&self, origin: &str) -> Result<Checkpoint, LedgerError> {
        let stored: Vec<(i64, String)> = self.op(async {
            let conn = self.conn().await?;
            let rows = conn
                .query("SELECT seq, leaf_hash FROM runs ORDER BY seq", &[])
                .await
                .map_err(self.pg_err("reading leaf hashes"))?;
            conn.release();
            rows.iter()
                .map(|r| {
                    let seq: i64 = r
                        .try_get(0)
                        .map_err(|e| corrupt(0, format!("seq: {}", reason(&e))))?;
                    let leaf: String = r.try_get(1).map_err(|e| {
                        corrupt(
                            u64::try_from(seq).unwrap_or(0),
                            format!("leaf_hash: {}", reason(&e)),
                        )
                    })?;
                    Ok((seq, leaf))
                })
                .collect()
        })?;
        let leaves = stored
            .iter()
            .map(|(seq, h)| {
                parse_hash(h).ok_or_else(|| {
                    corrupt(
                        u64::try_from(*seq).unwrap_or(0),
                        "leaf_hash is not 64 hex digits",
                    )
                })
            })
            .collect::<Result<Vec<Hash>, _>>()?;
        Ok(Checkpoint {
            origin: origin.to_owned(),
            size: leaves.len() as u64,
            root: merkle::root(&leaves),
        })
    }
}

/// The refusal of a run that repeats the run id or the envelope of a row
/// earlier in its own batch.
fn same_in_batch(earlier: &[LedgerRow], entry: &RunEntry, sealed: &Sealed) -> Option<LedgerError> {
    earlier.iter().find_map(|row| {
        if row.entry.run_id == entry.run_id {
            Some(LedgerError::AlreadyRecorded {
                run_id: entry.run_id.clone(),
                seq: row.seq,
            })
        } else if row.envelope_sha256 == sealed.envelope_sha256 {
            Some(LedgerError::EnvelopeRecorded {
                sha256: sealed.envelope_sha256.clone(),
                run_id: row.entry.run_id.clone(),
                seq: row.seq,
            })
        } else {
            None
        }
    })
}

fn version(v: i64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// A run's own values, `run_id` to `bundle_path`, as both inserts take them.
fn entry_params(e: &RunEntry) -> [Box<dyn ToSql + Sync + Send>; 12] {
    [
        Box::new(e.run_id.clone()),
        Box::new(e.spec_id.clone()),
        Box::new(i64::from(e.attempt)),
        Box::new(e.verdict.clone()),
        Box::new(e.tier.clone()),
        Box::new(e.started_at),
        Box::new(e.finished_at),
        Box::new(big(e.input_tokens)),
        Box::new(big(e.cached_input_tokens)),
        Box::new(big(e.output_tokens)),
        Box::new(e.cost_usd),
        Box::new(e.bundle_path.clone()),
    ]
}

/// `INSERT_NEXT`'s parameters.
fn insert_params(
    e: &RunEntry,
    sealed: &Sealed,
    recorded_at: DateTime<Utc>,
    as_is: bool,
) -> Vec<Box<dyn ToSql + Sync + Send>> {
    let mut params = Vec::from(entry_params(e));
    params.extend([
        Box::new(sealed.envelope_sha256.clone()) as Box<dyn ToSql + Sync + Send>,
        Box::new(sealed.leaf_hash.clone()),
        Box::new(recorded_at),
        Box::new(e.extra.clone()),
        Box::new(as_is),
    ]);
    params
}

/// A stored row's values in `COLUMNS` order.
fn copy_params(row: &LedgerRow) -> Vec<Box<dyn ToSql + Sync + Send>> {
    let mut params: Vec<Box<dyn ToSql + Sync + Send>> = vec![Box::new(big(row.seq))];
    params.extend(entry_params(&row.entry));
    params.extend([
        Box::new(row.envelope_sha256.clone()) as Box<dyn ToSql + Sync + Send>,
        Box::new(row.prev_sha256.clone()),
        Box::new(row.leaf_hash.clone()),
        Box::new(row.recorded_at),
        Box::new(row.entry.extra.clone()),
        Box::new(row.entry.series.clone()),
    ]);
    params
}

/// A row as PostgreSQL returns it, in `COLUMNS` order. A value of the
/// wrong type or a NULL where none belongs is a corrupt row, not a panic.
/// A row's stamp from its seq, its `envelope_sha256` and its text form
/// (`r::text`, every column), at those positions of `r`.
fn read_stamp(
    r: &tokio_postgres::Row,
    seq: usize,
    envelope: usize,
    text: usize,
) -> Result<RowStamp, LedgerError> {
    let seq_raw: i64 = r
        .try_get(seq)
        .map_err(|e| corrupt(0, format!("seq: {}", reason(&e))))?;
    let seq = u64::try_from(seq_raw).map_err(|_| corrupt(0, format!("seq {seq_raw}")))?;
    let envelope: String = r
        .try_get(envelope)
        .map_err(|e| corrupt(seq, format!("envelope_sha256: {}", reason(&e))))?;
    let text: String = r
        .try_get(text)
        .map_err(|e| corrupt(seq, format!("the row's text: {}", reason(&e))))?;
    let mut h = blake3::Hasher::new();
    h.update(b"postgres runs row\0").update(text.as_bytes());
    Ok(RowStamp {
        seq,
        envelope: RowStamp::envelope_of(&envelope),
        columns: *h.finalize().as_bytes(),
        derived: [0; 32],
    })
}

fn read_row(r: &tokio_postgres::Row) -> Result<LedgerRow, LedgerError> {
    let seq_raw: i64 = r
        .try_get(0)
        .map_err(|e| corrupt(0, format!("seq: {}", reason(&e))))?;
    let seq = u64::try_from(seq_raw).map_err(|_| corrupt(0, format!("seq {seq_raw}")))?;
    let bad =
        |field: &str, e: tokio_postgres::Error| corrupt(seq, format!("{field}: {}", reason(&e)));
    let text = |i: usize, field: &str| -> Result<String, LedgerError> {
        r.try_get(i).map_err(|e| bad(field, e))
    };
    let time = |i: usize, field: &str| -> Result<DateTime<Utc>, LedgerError> {
        r.try_get(i).map_err(|e| bad(field, e))
    };
    let count = |i: usize, field: &str| -> Result<u64, LedgerError> {
        let v: i64 = r.try_get(i).map_err(|e| bad(field, e))?;
        u64::try_from(v).map_err(|_| corrupt(seq, format!("{field} is {v}")))
    };
    let attempt =
        u32::try_from(count(3, "attempt")?).map_err(|_| corrupt(seq, "attempt is out of range"))?;
    Ok(LedgerRow {
        seq,
        entry: RunEntry {
            run_id: text(1, "run_id")?,
            spec_id: text(2, "spec_id")?,
            attempt,
            series: r.try_get(18).map_err(|e| bad("series", e))?,
            verdict: text(4, "verdict")?,
            tier: text(5, "tier")?,
            started_at: time(6, "started_at")?,
            finished_at: time(7, "finished_at")?,
            input_tokens: count(8, "input_tokens")?,
            cached_input_tokens: count(9, "cached_input_tokens")?,
            output_tokens: count(10, "output_tokens")?,
            cost_usd: r.try_get(11).map_err(|e| bad("cost_usd", e))?,
            bundle_path: text(12, "bundle_path")?,
            extra: r.try_get(17).map_err(|e| bad("extra_json", e))?,
        },
        envelope_sha256: text(13, "envelope_sha256")?,
        prev_sha256: r
            .try_get::<_, Option<String>>(14)
            .map_err(|e| bad("prev_sha256", e))?
            .filter(|s| !s.is_empty()),
        leaf_hash: text(15, "leaf_hash")?,
        recorded_at: time(16, "recorded_at")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_append_takes_the_chain_lock() {
        assert!(BEGIN_APPEND.contains(&format!(
            "pg_advisory_xact_lock({LOCK_CLASS}, {CHAIN_LOCK})"
        )));
    }
}
