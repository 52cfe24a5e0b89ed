//! Why a ledger operation failed, and a PostgreSQL client error in words.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::entries::BUNDLE_IN_LEDGER;

/// A ledger operation failed.
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
    #[error("ledger {ledger} failed while {action}: {}", reason(source))]
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
    /// A live run's attempt number does not continue its series: two
    /// runs of one series decided their attempt from the same history.
    #[error(
        "run {run_id} is attempt {attempt} of `{spec_id}`{}, but the series' latest recorded attempt is {}: \
         another run of the series was recorded meanwhile",
        series.as_deref().map_or_else(String::new, |k| format!(" in series `{k}`")),
        latest.map_or_else(|| "none".to_owned(), |a| a.to_string())
    )]
    AttemptOutOfSeries {
        /// The run.
        run_id: String,
        /// Its spec.
        spec_id: String,
        /// Its series key (`None`: the spec's own series).
        series: Option<String>,
        /// The attempt it claims.
        attempt: u32,
        /// The series' latest recorded attempt.
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

/// A client error in words: the server's own message for a server error,
/// else the error and its causes (tokio-postgres names only its kind, such
/// as "db error", and keeps the rest in its `source()`).
pub(super) fn reason(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut text = format!("{}: {}", db.severity(), db.message());
        if let Some(detail) = db.detail() {
            let _ = write!(text, " ({detail})");
        }
        if let Some(hint) = db.hint() {
            let _ = write!(text, "; hint: {hint}");
        }
        return text;
    }
    let mut text = e.to_string();
    let mut next = std::error::Error::source(e);
    while let Some(cause) = next {
        let _ = write!(text, ": {cause}");
        next = cause.source();
    }
    text
}
