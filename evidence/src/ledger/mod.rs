//! The ledger: one hash-chained row per run, in append order.
//!
//! Each row records where the run's bundle is, the sha256 of the bundle's
//! exact bytes, the previous row's sha256 (the chain) and the RFC 6962 leaf
//! hash of the bytes (the Merkle tree a checkpoint commits to). Sequence
//! numbers run from 1 without gaps. A row is appended only after its bundle
//! is durable, so every row points at a complete file.
//!
//! # Layout
//! - [`Ledger`] (in `store`) is the one type the gate uses: an enum over the
//!   two stores, with the same methods, plus the series lock and the copy
//!   `gate ledger migrate` makes.
//! - `sqlite` ([`SqliteLedger`]): the embedded default; all of its SQL and
//!   its migrations live in that module.
//! - `postgres` ([`PgLedger`]): the shared store, over a connection pool;
//!   its SQL and migrations (numbered as SQLite's) live in that module.
//! - [`Location`]: a file path or a URL, and how each is named in messages.
//! - [`mod@verify`] checks rows against their bundles and needs no database at all.
//!
//! Adding a store method is adding it to both stores and one line to
//! `Ledger`; adding a migration is adding it to both lists (a compile-time
//! check keeps the two lists the same length).

mod facts;
#[cfg(feature = "stores")]
mod location;
#[cfg(feature = "stores")]
mod postgres;
#[cfg(feature = "stores")]
mod sqlite;
#[cfg(feature = "stores")]
mod store;
pub mod verify;

#[cfg(test)]
#[cfg(feature = "stores")]
mod tests;

#[cfg(feature = "stores")]
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::merkle::Hash;

pub use facts::{DismissalRef, OutcomeState, ReportScope, RoleFacts, RunFacts};
#[cfg(feature = "stores")]
pub use location::{Location, redact};
#[cfg(feature = "stores")]
pub use postgres::{PgLedger, SeriesPg};
#[cfg(feature = "stores")]
pub use sqlite::{SeriesFile, SqliteLedger};
#[cfg(feature = "stores")]
pub use store::{CopyReport, Ledger, SeriesLock, SharedLedger, copy};
pub use verify::{LoadError, Problem, ProblemKind, VerifyReport, verify, verify_tip};

/// The schema version this build writes (both stores share the numbering).
#[cfg(feature = "stores")]
pub const SCHEMA_VERSION: u32 = sqlite::MIGRATIONS.len() as u32;

// Every SQLite migration has its PostgreSQL twin under the same number.
#[cfg(feature = "stores")]
const _: () = assert!(sqlite::MIGRATIONS.len() == postgres::MIGRATIONS.len());

/// How a row's `bundle_path` begins when its bundle is kept in the ledger
/// itself, with the row: `ledger:sha256:<hex>`.
pub const BUNDLE_IN_LEDGER: &str = "ledger:sha256:";

/// What the gate records about a run (the ledger adds the chain fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEntry {
    /// The run's unique id (also the bundle's file stem).
    pub run_id: String,
    /// The spec's stable id.
    pub spec_id: String,
    /// Attempt number within the spec's series, from 1.
    pub attempt: u32,
    /// `pass`, `fail`, `escalate` or `incomplete`.
    pub verdict: String,
    /// `trivial`, `light` or `full`.
    pub tier: String,
    /// When the run started.
    pub started_at: DateTime<Utc>,
    /// When the run finished.
    pub finished_at: DateTime<Utc>,
    /// Model input tokens over all specialists.
    pub input_tokens: u64,
    /// Of those, tokens served from a prompt cache.
    pub cached_input_tokens: u64,
    /// Model output tokens.
    pub output_tokens: u64,
    /// Cost in US dollars, when every model used has a known price.
    pub cost_usd: Option<f64>,
    /// Where the bundle is, as the gate will look for it again.
    pub bundle_path: String,
    /// Further facts reports group by (agent, models, roles…), a JSON object.
    pub extra: serde_json::Value,
}

/// A run as stored: the entry and its place in the chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerRow {
    /// Position in the ledger, from 1, without gaps.
    pub seq: u64,
    /// What the gate recorded.
    #[serde(flatten)]
    pub entry: RunEntry,
    /// Lowercase hex sha256 of the stored envelope bytes.
    pub envelope_sha256: String,
    /// The previous row's `envelope_sha256`; `None` for row 1.
    pub prev_sha256: Option<String>,
    /// Lowercase hex RFC 6962 leaf hash of the envelope bytes.
    pub leaf_hash: String,
    /// When the row was appended (later than `finished_at` for an import).
    pub recorded_at: DateTime<Utc>,
}

/// What happened after a decision: the run later broke, or it was fine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeEntry {
    /// The run it is about.
    pub run_id: String,
    /// True when what the run decided on later broke.
    pub broken: bool,
    /// Why (a CI failure, a revert, an incident, a human's check).
    pub reason: Option<String>,
    /// Where the news came from.
    pub source: Option<String>,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
}

/// A human's dismissal of a finding: not raised again unless its code changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dismissal {
    /// The run that raised it.
    pub run_id: String,
    /// That run's spec.
    pub spec_id: String,
    /// The finding's id.
    pub finding_id: String,
    /// Why it is not worth acting on.
    pub reason: String,
    /// blake3 of the code under the finding when dismissed (its file's digest).
    pub code_digest: Option<String>,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
}

/// A criterion's result on a base commit, kept so a series of attempts runs
/// the base once: found again only for the same commit, the same item
/// definition and the same verifiers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseResult {
    /// The base commit (full id).
    pub base_commit: String,
    /// The criterion's id.
    pub item_id: String,
    /// blake3 of the criterion's definition and of the checks it runs after.
    pub definition_digest: String,
    /// blake3 of the verifier files it ran on the base.
    pub verifier_digest: String,
    /// `passed` or `failed` (a base run that could not run is not kept).
    pub status: String,
    /// Why it failed, in one line.
    pub reason: Option<String>,
    /// blake3 of its captured output.
    pub output_digest: String,
    /// The run that ran it.
    pub run_id: String,
    /// When it was kept.
    pub recorded_at: DateTime<Utc>,
}

/// A break-glass override of a run's verdict, signed into its own bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverrideEntry {
    /// The run overridden.
    pub run_id: String,
    /// Its spec.
    pub spec_id: String,
    /// Why.
    pub reason: String,
    /// Who.
    pub by: String,
    /// The digest of the content the run decided on: the next run of the
    /// spec passes only on the same content.
    pub content_digest: String,
    /// The override's own signed bundle.
    pub bundle_path: String,
    /// Lowercase hex sha256 of that bundle's bytes.
    pub bundle_sha256: String,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
}

/// A model's circuit breaker, shared by every run that uses the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerRecord {
    /// The model (`provider/name`).
    pub model: String,
    /// `closed`, `open` or `half_open`.
    pub state: String,
    /// Retryable failures in a row.
    pub consecutive_failures: u32,
    /// The last calls' outcomes, oldest first: `s` success, `f` retryable failure.
    pub recent: String,
    /// When it last opened.
    pub opened_at: Option<DateTime<Utc>>,
    /// Seconds it stays open before one probe.
    pub cooldown_s: u64,
    /// While a half-open probe is out: who holds it, and until when.
    pub probe: Option<(String, DateTime<Utc>)>,
    /// When it was last written.
    pub updated_at: DateTime<Utc>,
}

/// Which runs [`Ledger::list`] returns, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// Only this spec.
    pub spec_id: Option<String>,
    /// Only this verdict.
    pub verdict: Option<String>,
    /// Only runs started at or after this instant.
    pub since: Option<DateTime<Utc>>,
    /// At most this many rows.
    pub limit: Option<u32>,
}

/// A ledger operation failed.
#[cfg(feature = "stores")]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The database could not be opened or created.
    #[error("cannot open ledger {}: {source}", path.display())]
    Open {
        /// The database file.
        path: PathBuf,
        /// Why.
        #[source]
        source: rusqlite::Error,
    },
    /// The directory for the database could not be created.
    #[error("cannot create ledger directory {}: {source}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A query or statement failed (locked too long, disk full, I/O error…).
    #[error("ledger {} failed while {action}: {source}", path.display())]
    Sql {
        /// The database file.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// Why.
        #[source]
        source: rusqlite::Error,
    },
    /// Written by a newer gate: this one does not know its schema.
    #[error(
        "ledger {} has schema version {found}, newer than this gate supports ({supported}); upgrade gate",
        path.display()
    )]
    SchemaTooNew {
        /// The database file.
        path: PathBuf,
        /// The version found.
        found: u32,
        /// The newest version this build knows.
        supported: u32,
    },
    /// The run is already in the ledger.
    #[error("run {run_id} is already recorded (row {seq})")]
    AlreadyRecorded {
        /// The run id.
        run_id: String,
        /// Its row.
        seq: u64,
    },
    /// These exact envelope bytes are already in the ledger under another run.
    #[error("this bundle (sha256 {sha256}) is already recorded as run {run_id} (row {seq})")]
    EnvelopeRecorded {
        /// The envelope digest.
        sha256: String,
        /// The run it is recorded under.
        run_id: String,
        /// Its row.
        seq: u64,
    },
    /// No run has this id or prefix.
    #[error("{}", match .0.as_str() {
        "" => "an empty run id names no run".to_owned(),
        id => format!("no run {id} in the ledger"),
    })]
    NotFound(String),
    /// A prefix matches several runs.
    #[error("run id prefix {prefix} is ambiguous: {}", matches.join(", "))]
    Ambiguous {
        /// The prefix given.
        prefix: String,
        /// Some of the runs it matches.
        matches: Vec<String>,
    },
    /// A stored value does not parse.
    #[error("ledger row {seq} is corrupt: {reason}")]
    Corrupt {
        /// The row.
        seq: u64,
        /// What is wrong.
        reason: String,
    },
    /// Not a ledger location (a bad URL or an unknown scheme).
    #[error("{0}")]
    BadLocation(String),
    /// The PostgreSQL server could not be reached, refused the login, or
    /// did not answer in time.
    #[error("cannot reach ledger {ledger}: {reason}")]
    Unreachable {
        /// The URL, without its password.
        ledger: String,
        /// Why.
        reason: String,
    },
    /// A PostgreSQL statement failed.
    #[error("ledger {ledger} failed while {action}: {}", postgres::reason(source))]
    Postgres {
        /// The URL, without its password.
        ledger: String,
        /// What was being done.
        action: &'static str,
        /// Why.
        #[source]
        source: tokio_postgres::Error,
    },
    /// A lock file for the attempt series could not be used.
    #[error("cannot lock the attempt series in {}: {source}", path.display())]
    LockFile {
        /// The lock file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A live run's attempt number does not continue its spec's series: two
    /// runs of one spec decided their attempt from the same history.
    #[error(
        "run {run_id} is attempt {attempt} of `{spec_id}`, but the spec's latest recorded attempt is {}: \
         another run of the spec was recorded meanwhile",
        latest.map_or_else(|| "none".to_owned(), |a| a.to_string())
    )]
    AttemptOutOfSeries {
        /// The run.
        run_id: String,
        /// Its spec.
        spec_id: String,
        /// The attempt it claims.
        attempt: u32,
        /// The spec's latest recorded attempt.
        latest: Option<u32>,
    },
    /// Copied rows do not continue the ledger they are copied into.
    #[error("ledger {ledger}: row {seq} does not continue the chain: {reason}")]
    NotContinuing {
        /// The target.
        ledger: String,
        /// The row.
        seq: u64,
        /// What does not match.
        reason: String,
    },
    /// A run's `bundle_path` says its bundle is kept in the ledger under
    /// other bytes than the envelope appended with it.
    #[error(
        "run {run_id} names bundle {BUNDLE_IN_LEDGER}{named}, but the envelope appended with it has sha256 {actual}"
    )]
    BundleMismatch {
        /// The run.
        run_id: String,
        /// The sha256 its `bundle_path` names.
        named: String,
        /// The sha256 of the envelope given.
        actual: String,
    },
    /// `gate ledger migrate` copies only into an empty ledger.
    #[error("ledger {ledger} is not empty ({what}); migrate copies only into an empty ledger")]
    NotEmpty {
        /// The target.
        ledger: String,
        /// What it holds.
        what: String,
    },
}

#[cfg(feature = "stores")]
impl LedgerError {
    /// True when the ledger could not be reached or used (the gate's exit 4),
    /// as opposed to a request about a run that is not there or is a duplicate.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            Self::Open { .. }
                | Self::CreateDir { .. }
                | Self::Sql { .. }
                | Self::Unreachable { .. }
                | Self::Postgres { .. }
                | Self::LockFile { .. }
        )
    }
}

/// Now, at the microsecond precision both stores keep, so a returned row
/// equals the stored one.
#[cfg(feature = "stores")]
pub(crate) fn now() -> DateTime<Utc> {
    use chrono::SubsecRound as _;
    Utc::now().trunc_subsecs(6)
}

/// Lowercase hex of a 32-byte hash, parsed.
pub(crate) fn parse_hash(text: &str) -> Option<Hash> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}

/// What an append stores besides the entry, computed the same way by both
/// stores from the exact envelope bytes.
#[cfg(feature = "stores")]
#[derive(Debug, Clone)]
pub(crate) struct Sealed {
    /// Lowercase hex sha256 of the bytes.
    pub(crate) envelope_sha256: String,
    /// Lowercase hex RFC 6962 leaf hash of the bytes.
    pub(crate) leaf_hash: String,
}

#[cfg(feature = "stores")]
impl Sealed {
    pub(crate) fn of(envelope: &[u8]) -> Self {
        Self {
            envelope_sha256: crate::bundle::digest(envelope),
            leaf_hash: hex::encode(crate::merkle::leaf_hash(envelope)),
        }
    }
}

/// True when `entry`'s bundle is kept in the ledger with its row (its
/// `bundle_path` is `ledger:sha256:<hex>`); an error when that names other
/// bytes than the envelope's.
#[cfg(feature = "stores")]
pub(crate) fn kept_in_ledger(entry: &RunEntry, envelope_sha256: &str) -> Result<bool, LedgerError> {
    let Some(named) = entry.bundle_path.strip_prefix(BUNDLE_IN_LEDGER) else {
        return Ok(false);
    };
    if named != envelope_sha256 {
        return Err(LedgerError::BundleMismatch {
            run_id: entry.run_id.clone(),
            named: named.to_owned(),
            actual: envelope_sha256.to_owned(),
        });
    }
    Ok(true)
}

/// Whether an append checks the run's attempt against its spec's series.
#[cfg(feature = "stores")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SeriesCheck {
    /// A live run: its attempt is 1 (a new series) or one more than the
    /// spec's latest recorded attempt.
    Live,
    /// An import or a copy: recorded as it was.
    AsIs,
}

/// Checks rows to be copied continue a ledger whose tip is `tip`
/// (`(seq, envelope_sha256)`), and each other.
#[cfg(feature = "stores")]
pub(crate) fn check_continues(
    ledger: &str,
    tip: Option<(u64, String)>,
    rows: &[LedgerRow],
) -> Result<(), LedgerError> {
    let mut tip = tip;
    for row in rows {
        let (want_seq, want_prev) = match &tip {
            Some((seq, sha)) => (seq + 1, Some(sha.as_str())),
            None => (1, None),
        };
        let reason = if row.seq != want_seq {
            Some(format!("its seq is {}, the next is {want_seq}", row.seq))
        } else if row.prev_sha256.as_deref() != want_prev {
            Some(format!(
                "its prev_sha256 is {}, the tip's envelope is {}",
                row.prev_sha256.as_deref().unwrap_or("empty"),
                want_prev.unwrap_or("nothing")
            ))
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(LedgerError::NotContinuing {
                ledger: ledger.to_owned(),
                seq: row.seq,
                reason,
            });
        }
        tip = Some((row.seq, row.envelope_sha256.clone()));
    }
    Ok(())
}
