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
//! - [`mod@signed`]: the envelopes outcomes, dismissals and breaker states
//!   carry, and the column-by-column comparison with what was signed.
//! - `entries`: what a ledger holds ([`RunEntry`], [`LedgerRow`], the side
//!   records); `error`: [`LedgerError`]; `append`: what both stores do alike
//!   when they append (the seal, the kept-bundle, series and chain checks).
//!   The children import these from there; this module only declares and
//!   re-exports.
//!
//! Adding a store method is adding it to both stores and one line to
//! `Ledger`; adding a migration is adding it to both lists (a compile-time
//! check keeps the two lists the same length).

#[cfg(feature = "stores")]
mod append;
#[cfg(feature = "stores")]
mod backends;
#[cfg(feature = "stores")]
mod derived;
mod entries;
#[cfg(feature = "stores")]
mod error;
mod facts;
#[cfg(feature = "stores")]
mod location;
#[cfg(feature = "stores")]
mod postgres;
pub mod signed;
#[cfg(feature = "stores")]
mod sqlite;
pub mod verify;

#[cfg(test)]
#[cfg(feature = "stores")]
mod tests;

#[cfg(feature = "stores")]
pub use backends::{CopyReport, Ledger, SeriesLock, SharedLedger, copy};
#[cfg(feature = "stores")]
pub use derived::expected as expected_report_rows;
pub use entries::{
    BUNDLE_IN_LEDGER, BaseResult, BlamedLine, BreakerRecord, Dismissal, EvidenceCommit,
    HARVESTED_SOURCE_PREFIX, LedgerRow, NOT_INTEGRATED, OutcomeEntry, OutcomeEvidence,
    OverrideEntry, ReplayEntry, RowStamp, RunEntry, RunFilter, SeriesFilter, Survival,
};
#[cfg(feature = "stores")]
pub use error::LedgerError;
pub use facts::{
    DismissalRef, OutcomeState, ReportScope, RoleFacts, RowDispositions, RowFacts, RowFinding,
    RowRole, RunFacts, RunIdentity, RunIsolation, RunTool, lenient,
};
#[cfg(feature = "stores")]
pub use location::{Location, redact};
#[cfg(feature = "stores")]
pub use postgres::{PgLedger, SeriesPg};
pub use signed::{Disagreement, Signed, Unvouched, diff, seal, vouch};
#[cfg(feature = "stores")]
pub use sqlite::{SeriesFile, SqliteLedger};
pub use verify::{
    Judge, LoadError, Problem, ProblemKind, VerifyReport, verify, verify_tip, verify_with,
};

/// The schema version this build writes (both stores share the numbering).
#[cfg(feature = "stores")]
pub const SCHEMA_VERSION: u32 = sqlite::MIGRATIONS.len() as u32;

// Every SQLite migration has its PostgreSQL twin under the same number.
#[cfg(feature = "stores")]
const _: () = assert!(sqlite::MIGRATIONS.len() == postgres::MIGRATIONS.len());
