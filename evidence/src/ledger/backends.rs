//! The one ledger type the gate uses, over either store, and what works
//! across stores: the attempt-series lock and the copy `gate ledger
//! migrate` makes.
//!
//! Every method forwards to the store's method of the same name. To add
//! one, write it for [`SqliteLedger`] and [`PgLedger`] and add one line
//! here.

use std::sync::Mutex;
use std::time::Duration;

use super::entries::{
    BaseResult, BreakerRecord, Dismissal, LedgerRow, OutcomeEntry, OverrideEntry, ReplayEntry,
    RowStamp, RunEntry, RunFilter,
};
use super::error::LedgerError;
use super::facts::{DismissalRef, OutcomeState, ReportScope, RoleFacts, RunFacts};
use super::location::Location;
use super::postgres::{PgLedger, SeriesPg};
use super::sqlite::{SeriesFile, SqliteLedger};
use crate::checkpoint::Checkpoint;

/// A ledger: the embedded SQLite store or a shared PostgreSQL one, with the
/// same methods and the same schema.
#[derive(Debug)]
pub enum Ledger {
    /// A SQLite file (the default, `.gate/ledger.db`).
    Sqlite(SqliteLedger),
    /// A PostgreSQL database many runners share.
    Postgres(PgLedger),
}

/// Forwards a call to whichever store this is.
macro_rules! each {
    ($self:expr, $l:ident => $call:expr) => {
        match $self {
            Ledger::Sqlite($l) => $call,
            Ledger::Postgres($l) => $call,
        }
    };
}

impl Ledger {
    /// Opens the ledger at `location` (a path opens a SQLite file, created
    /// when missing) and applies any pending migrations.
    pub fn open(location: impl Into<Location>) -> Result<Self, LedgerError> {
        match location.into() {
            Location::Sqlite(path) => SqliteLedger::open(&path).map(Self::Sqlite),
            Location::Postgres(url) => PgLedger::open(&url).map(Self::Postgres),
        }
    }

    /// Opens an existing ledger as it is, for a diagnosis: nothing
    /// created, migrated or written. Read its
    /// [`schema_version_as_is`](Self::schema_version_as_is) first: other
    /// reads expect the current schema.
    pub fn open_as_is(location: impl Into<Location>) -> Result<Self, LedgerError> {
        match location.into() {
            Location::Sqlite(path) => SqliteLedger::open_as_is(&path).map(Self::Sqlite),
            Location::Postgres(url) => PgLedger::open_as_is(&url).map(Self::Postgres),
        }
    }

    /// The schema version as found: 0 for a database with no schema yet.
    pub fn schema_version_as_is(&self) -> Result<u32, LedgerError> {
        each!(self, l => l.schema_version_as_is())
    }

    /// Where it is, for messages (a URL without its password).
    pub fn name(&self) -> String {
        match self {
            Self::Sqlite(l) => l.path().display().to_string(),
            Self::Postgres(l) => l.name().to_owned(),
        }
    }

    /// `sqlite` or `postgres`.
    pub fn backend(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<u32, LedgerError> {
        each!(self, l => l.schema_version())
    }

    /// Appends a run whose bundle (`envelope`, the exact stored bytes) is
    /// already durable, as it is (an import): seq, chain link and leaf hash
    /// are computed in one serialised transaction.
    pub fn append(&mut self, entry: &RunEntry, envelope: &[u8]) -> Result<LedgerRow, LedgerError> {
        each!(self, l => l.append(entry, envelope))
    }

    /// Appends a live run: as [`Self::append`], refusing in the same
    /// transaction an attempt that is neither 1 nor one more than the
    /// spec's latest recorded attempt.
    pub fn append_attempt(
        &mut self,
        entry: &RunEntry,
        envelope: &[u8],
    ) -> Result<LedgerRow, LedgerError> {
        each!(self, l => l.append_attempt(entry, envelope))
    }

    /// Appends several runs in order, in one transaction: all of them or
    /// none (an import of many bundles, a generated ledger).
    pub fn append_all<'a>(
        &mut self,
        items: impl IntoIterator<Item = (&'a RunEntry, &'a [u8])>,
    ) -> Result<Vec<LedgerRow>, LedgerError> {
        each!(self, l => l.append_all(items))
    }

    /// Copies rows exactly as stored elsewhere; they must continue this
    /// ledger's chain.
    pub fn copy_rows(&mut self, rows: &[LedgerRow]) -> Result<(), LedgerError> {
        each!(self, l => l.copy_rows(rows))
    }

    /// The last row's seq and envelope sha256.
    pub fn tip(&self) -> Result<Option<(u64, String)>, LedgerError> {
        each!(self, l => l.tip())
    }

    /// The run with exactly this id.
    pub fn get(&self, run_id: &str) -> Result<Option<LedgerRow>, LedgerError> {
        each!(self, l => l.get(run_id))
    }

    /// The run with this id, or else the one run whose id starts with it.
    pub fn resolve(&self, run_id_or_prefix: &str) -> Result<LedgerRow, LedgerError> {
        each!(self, l => l.resolve(run_id_or_prefix))
    }

    /// Runs matching `filter`, newest (highest seq) first.
    pub fn list(&self, filter: &RunFilter) -> Result<Vec<LedgerRow>, LedgerError> {
        each!(self, l => l.list(filter))
    }

    /// The latest run of a spec.
    pub fn last_for_spec(&self, spec_id: &str) -> Result<Option<LedgerRow>, LedgerError> {
        each!(self, l => l.last_for_spec(spec_id))
    }

    /// Every row in seq order (what [`fn@super::verify`] takes).
    pub fn rows(&self) -> Result<Vec<LedgerRow>, LedgerError> {
        each!(self, l => l.rows())
    }

    /// At most `limit` rows after seq `after`, in seq order.
    pub fn rows_after(&self, after: u64, limit: u32) -> Result<Vec<LedgerRow>, LedgerError> {
        each!(self, l => l.rows_after(after, limit))
    }

    /// The stamps of at most `limit` rows after seq `after`, in seq order
    /// (every column read raw; see [`RowStamp`]).
    pub fn stamps_after(&self, after: u64, limit: u32) -> Result<Vec<RowStamp>, LedgerError> {
        each!(self, l => l.stamps_after(after, limit))
    }

    /// The runs after seq `after` up to `last` with any report row
    /// (`run_facts`, `run_models`, `run_roles`), each with the digest of
    /// those rows as stored (see [`RowStamp::derived`]).
    pub fn report_rows_between(
        &self,
        after: u64,
        last: u64,
    ) -> Result<Vec<(u64, [u8; 32])>, LedgerError> {
        each!(self, l => l.report_rows_between(after, last))
    }

    /// At most `limit` rows after seq `after`, in seq order, each with its
    /// stamp read in the same pass.
    pub fn stamped_rows_after(
        &self,
        after: u64,
        limit: u32,
    ) -> Result<Vec<(LedgerRow, RowStamp)>, LedgerError> {
        each!(self, l => l.stamped_rows_after(after, limit))
    }

    /// Number of rows.
    pub fn len(&self) -> Result<u64, LedgerError> {
        each!(self, l => l.len())
    }

    /// True when no run is recorded.
    pub fn is_empty(&self) -> Result<bool, LedgerError> {
        each!(self, l => l.is_empty())
    }

    /// The current tree head over the stored leaf hashes, as an unsigned
    /// checkpoint for `origin`.
    pub fn checkpoint(&self, origin: &str) -> Result<Checkpoint, LedgerError> {
        each!(self, l => l.checkpoint(origin))
    }

    /// Records what happened after a run's decision.
    pub fn add_outcome(&mut self, o: &OutcomeEntry) -> Result<(), LedgerError> {
        each!(self, l => l.add_outcome(o))
    }

    /// Records several outcomes in one transaction: all of them or none.
    pub fn add_outcomes(&mut self, outcomes: &[OutcomeEntry]) -> Result<(), LedgerError> {
        each!(self, l => l.add_outcomes(outcomes))
    }

    /// Records what a harvest found of each run (`run_id`, one of
    /// [`NOT_INTEGRATED`](super::NOT_INTEGRATED), `pending`, `labelled`),
    /// over what an earlier harvest found.
    pub fn set_harvest_states(
        &mut self,
        states: &[(String, String)],
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), LedgerError> {
        each!(self, l => l.set_harvest_states(states, at))
    }

    /// What the last harvest found of each run it looked at: (seq, state).
    pub fn harvest_states(&self) -> Result<Vec<(u64, String)>, LedgerError> {
        each!(self, l => l.harvest_states())
    }

    /// Every outcome of a run, oldest first.
    pub fn outcomes(&self, run_id: &str) -> Result<Vec<OutcomeEntry>, LedgerError> {
        each!(self, l => l.outcomes(run_id))
    }

    /// The latest outcome of every run that has one.
    pub fn latest_outcomes(&self) -> Result<Vec<OutcomeEntry>, LedgerError> {
        each!(self, l => l.latest_outcomes())
    }

    /// Every outcome, oldest first.
    pub fn all_outcomes(&self) -> Result<Vec<OutcomeEntry>, LedgerError> {
        each!(self, l => l.all_outcomes())
    }

    /// Records a dismissal.
    pub fn add_dismissal(&mut self, d: &Dismissal) -> Result<(), LedgerError> {
        each!(self, l => l.add_dismissal(d))
    }

    /// Dismissals of a spec's findings, oldest first (all specs with `None`).
    pub fn dismissals(&self, spec_id: Option<&str>) -> Result<Vec<Dismissal>, LedgerError> {
        each!(self, l => l.dismissals(spec_id))
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
        each!(self, l => l.base_result(base_commit, item_id, definition_digest, verifier_digest))
    }

    /// Keeps a criterion's result on a base commit; the first kept for a key stays.
    pub fn put_base_result(&mut self, b: &BaseResult) -> Result<(), LedgerError> {
        each!(self, l => l.put_base_result(b))
    }

    /// Records an override whose signed bundle is already durable.
    pub fn add_override(&mut self, o: &OverrideEntry) -> Result<(), LedgerError> {
        each!(self, l => l.add_override(o))
    }

    /// Overrides of a spec's runs, oldest first (all specs with `None`).
    pub fn overrides(&self, spec_id: Option<&str>) -> Result<Vec<OverrideEntry>, LedgerError> {
        each!(self, l => l.overrides(spec_id))
    }

    /// A model's breaker, if it was ever written.
    pub fn breaker(&self, model: &str) -> Result<Option<BreakerRecord>, LedgerError> {
        each!(self, l => l.breaker(model))
    }

    /// Every breaker.
    pub fn breakers(&self) -> Result<Vec<BreakerRecord>, LedgerError> {
        each!(self, l => l.breakers())
    }

    /// Reads a model's breaker, lets `update` decide its next state, and
    /// writes it, in one transaction no other runner can interleave with.
    pub fn update_breaker<T>(
        &mut self,
        model: &str,
        update: impl FnOnce(Option<BreakerRecord>) -> (Option<BreakerRecord>, T),
    ) -> Result<T, LedgerError> {
        each!(self, l => l.update_breaker(model, update))
    }

    /// The highest seq in the ledger (0 when empty).
    pub fn max_seq(&self) -> Result<u64, LedgerError> {
        each!(self, l => l.max_seq())
    }

    /// The run at `seq`.
    pub fn row_at(&self, seq: u64) -> Result<Option<LedgerRow>, LedgerError> {
        each!(self, l => l.row_at(seq))
    }

    /// Calls `each` with the facts of every run in `scope`, in seq order,
    /// streaming (nothing is collected).
    pub fn scan_run_facts(
        &self,
        scope: &ReportScope,
        each: impl FnMut(&RunFacts<'_>),
    ) -> Result<(), LedgerError> {
        each!(self, l => l.scan_run_facts(scope, each))
    }

    /// Calls `each(seq, model)` for every model every run in `scope` used,
    /// in no particular order.
    pub fn scan_run_models(
        &self,
        scope: &ReportScope,
        each: impl FnMut(u64, &str),
    ) -> Result<(), LedgerError> {
        each!(self, l => l.scan_run_models(scope, each))
    }

    /// Calls `each` for every specialist of every run in `scope`, in no
    /// particular order.
    pub fn scan_run_roles(
        &self,
        scope: &ReportScope,
        each: impl FnMut(&RoleFacts<'_>),
    ) -> Result<(), LedgerError> {
        each!(self, l => l.scan_run_roles(scope, each))
    }

    /// For every run with an outcome or an override: its latest outcome and
    /// its latest override, in seq order.
    pub fn outcome_states(&self) -> Result<Vec<OutcomeState>, LedgerError> {
        each!(self, l => l.outcome_states())
    }

    /// Records a replay whose bundle is durable (no row of the chain).
    pub fn add_replay(&mut self, r: &ReplayEntry) -> Result<(), LedgerError> {
        each!(self, l => l.add_replay(r))
    }

    /// Every replay, newest first.
    pub fn replays(&self) -> Result<Vec<ReplayEntry>, LedgerError> {
        each!(self, l => l.replays())
    }

    /// Every dismissal, with the seq of the run that raised the finding,
    /// oldest first.
    pub fn dismissal_refs(&self) -> Result<Vec<DismissalRef>, LedgerError> {
        each!(self, l => l.dismissal_refs())
    }

    /// The envelope kept in the ledger under `sha256` (a row whose
    /// `bundle_path` is `ledger:sha256:<hex>`), exactly as stored.
    pub fn bundle(&self, sha256: &str) -> Result<Option<Vec<u8>>, LedgerError> {
        each!(self, l => l.bundle(sha256))
    }

    /// Keeps `envelope` in the ledger, unless it is there already, and
    /// returns its sha256 (an override's bundle: no run row goes with it).
    pub fn put_bundle(&mut self, envelope: &[u8]) -> Result<String, LedgerError> {
        each!(self, l => l.put_bundle(envelope))
    }

    /// At most `limit` kept bundles whose sha256 sorts after `after`, in
    /// sha256 order.
    pub fn bundles_after(
        &self,
        after: &str,
        limit: u32,
    ) -> Result<Vec<(String, Vec<u8>)>, LedgerError> {
        each!(self, l => l.bundles_after(after, limit))
    }

    /// Copies kept bundles exactly as they are, in one transaction.
    pub fn copy_bundles(&mut self, bundles: &[(String, Vec<u8>)]) -> Result<(), LedgerError> {
        each!(self, l => l.copy_bundles(bundles))
    }

    /// This ledger as a reader of kept bundles that many threads share (a
    /// parallel `gate ledger verify`): PostgreSQL's pool serves them at
    /// once, a SQLite connection one at a time.
    pub fn into_shared(self) -> SharedLedger {
        match self {
            Self::Sqlite(l) => SharedLedger::Sqlite(Mutex::new(l)),
            Self::Postgres(l) => SharedLedger::Postgres(l),
        }
    }

    /// Takes the attempt-series lock of `spec_id`, waiting at most `wait`;
    /// `None` when another run of the spec still holds it then. Held from
    /// reading a spec's history to appending its run, it makes runs of one
    /// spec take their attempt numbers one after another, on one machine
    /// (SQLite) or across runners (PostgreSQL). A killed holder's lock is
    /// released by the kernel or the server.
    pub fn lock_series(
        &self,
        spec_id: &str,
        wait: Duration,
    ) -> Result<Option<SeriesLock>, LedgerError> {
        Ok(match self {
            Self::Sqlite(l) => l.lock_series(spec_id, wait)?.map(SeriesLock::File),
            Self::Postgres(l) => l
                .lock_series(spec_id, wait)?
                .map(|lock| SeriesLock::Postgres(Box::new(lock))),
        })
    }
}

/// A held attempt-series lock; dropping it releases it.
#[derive(Debug)]
pub enum SeriesLock {
    /// A lock file beside the SQLite database.
    File(SeriesFile),
    /// A session advisory lock in PostgreSQL.
    Postgres(Box<SeriesPg>),
}

/// A ledger many threads read kept bundles from at once.
#[derive(Debug)]
pub enum SharedLedger {
    /// A SQLite connection, one reader at a time.
    Sqlite(Mutex<SqliteLedger>),
    /// A PostgreSQL pool, readers at once.
    Postgres(PgLedger),
}

impl SharedLedger {
    /// The envelope kept under `sha256`, as [`Ledger::bundle`].
    pub fn bundle(&self, sha256: &str) -> Result<Option<Vec<u8>>, LedgerError> {
        match self {
            Self::Sqlite(l) => l
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .bundle(sha256),
            Self::Postgres(l) => l.bundle(sha256),
        }
    }
}

/// What [`copy`] carried over.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyReport {
    /// Runs (chain rows).
    pub runs: u64,
    /// Outcomes.
    pub outcomes: usize,
    /// Dismissals.
    pub dismissals: usize,
    /// Overrides.
    pub overrides: usize,
    /// Circuit breakers.
    pub breakers: usize,
    /// Bundles kept in the ledger.
    pub bundles: usize,
    /// Replays.
    pub replays: usize,
    /// The tree head both ledgers now have.
    pub root_hex: String,
}

/// Rows read and written per transaction while copying.
const PAGE: u32 = 2_000;

/// Kept bundles read and written per transaction while copying (each may
/// be tens of kilobytes).
const BUNDLE_PAGE: u32 = 200;

/// Copies everything in `from` into the empty ledger `to`: the bundles
/// kept in it, every row exactly (seq, chain link, envelope sha256, leaf
/// hash, times; the report tables are filled as the rows go in), in pages,
/// then the side tables in their order. Refuses a target that holds
/// anything. Checks afterwards that both hold the same rows and tree head.
pub fn copy(from: &Ledger, to: &mut Ledger) -> Result<CopyReport, LedgerError> {
    let target = to.name();
    if !to.is_empty()? {
        return Err(LedgerError::NotEmpty {
            ledger: target,
            what: format!("{} runs", to.len()?),
        });
    }
    if !to.breakers()?.is_empty() {
        return Err(LedgerError::NotEmpty {
            ledger: target,
            what: "circuit breakers".to_owned(),
        });
    }
    let mut report = CopyReport::default();
    // Bundles before the rows that point at them.
    let mut after_sha = String::new();
    loop {
        let page = from.bundles_after(&after_sha, BUNDLE_PAGE)?;
        let Some((last, _)) = page.last() else { break };
        after_sha.clone_from(last);
        to.copy_bundles(&page)?;
        report.bundles += page.len();
    }
    let mut after = 0;
    loop {
        let page = from.rows_after(after, PAGE)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        to.copy_rows(&page)?;
        report.runs += page.len() as u64;
    }
    for o in from.all_outcomes()? {
        to.add_outcome(&o)?;
        report.outcomes += 1;
    }
    for d in from.dismissals(None)? {
        to.add_dismissal(&d)?;
        report.dismissals += 1;
    }
    for o in from.overrides(None)? {
        to.add_override(&o)?;
        report.overrides += 1;
    }
    for b in from.breakers()? {
        let model = b.model.clone();
        to.update_breaker(&model, |_| (Some(b), ()))?;
        report.breakers += 1;
    }
    for r in from.replays()? {
        to.add_replay(&r)?;
        report.replays += 1;
    }
    // The copy is checked, page by page, against what was read.
    let mut after = 0;
    loop {
        let (a, b) = (from.rows_after(after, PAGE)?, to.rows_after(after, PAGE)?);
        if a != b {
            let seq = a
                .iter()
                .zip(&b)
                .find(|(x, y)| x != y)
                .map_or(after + 1, |(x, _)| x.seq);
            return Err(LedgerError::NotContinuing {
                ledger: target,
                seq,
                reason: "the copied row differs from the source row".to_owned(),
            });
        }
        let Some(last) = a.last() else { break };
        after = last.seq;
    }
    let mut after_sha = String::new();
    loop {
        let (a, b) = (
            from.bundles_after(&after_sha, BUNDLE_PAGE)?,
            to.bundles_after(&after_sha, BUNDLE_PAGE)?,
        );
        if a != b {
            return Err(LedgerError::NotContinuing {
                ledger: target,
                seq: 0,
                reason: "a copied bundle differs from the source's".to_owned(),
            });
        }
        let Some((last, _)) = a.last() else { break };
        after_sha.clone_from(last);
    }
    let (head_from, head_to) = (from.checkpoint("copy")?, to.checkpoint("copy")?);
    if head_from != head_to {
        return Err(LedgerError::NotContinuing {
            ledger: target,
            seq: head_to.size,
            reason: "the copy's tree head differs from the source's".to_owned(),
        });
    }
    report.root_hex = hex::encode(head_to.root);
    Ok(report)
}
