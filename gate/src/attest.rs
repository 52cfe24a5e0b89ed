//! The run's evidence: the signed bundle (a DSSE envelope around an in-toto
//! statement whose predicate is the run) and its row in the ledger.
//!
//! The bundle is stored durably first (in the bundle store: the state
//! directory's `bundles/`, or object storage); the ledger row only after it.
//! A run killed in between leaves a bundle without a row, which `gate ledger
//! import` (or the next run) appends later — never a row without its bundle.
//! With a remote store the envelope waits in the spool until its row is
//! written, so a store or ledger outage loses nothing.

use std::path::{Path, PathBuf};

use gate_evidence::keys::{KeyPairPaths, PRIVATE_KEY_FILE, PUBLIC_KEY_FILE};
use gate_evidence::ledger::{LedgerError, Location, RunEntry};
use gate_evidence::store::{AwsSettings, BundleRef, BundleStore, StoreError, Target};
use gate_evidence::{Ledger, LedgerRow, PublicKey, SigningKey, Statement, Subject, bundle};
use serde_json::Value;

use crate::config::{self, Context};
use crate::environment::names;
use crate::errors::GateError;
use crate::predicate::{PREDICATE_TYPE, Predicate};
use crate::record::RunRecord;
use crate::row::RowExtra;

/// The ledger's file in the state directory.
pub(crate) const LEDGER_FILE: &str = "ledger.db";

/// The report's cache of the rows it has vouched for, beside the ledger.
pub(crate) const REPORT_CACHE_FILE: &str = "report-cache";

/// Where the state directory keeps things.
pub(crate) fn keys_dir(ctx: &Context) -> PathBuf {
    ctx.state_dir.join("keys")
}

/// Bundles folder.
pub(crate) fn bundles_dir(ctx: &Context) -> PathBuf {
    ctx.state_dir.join("bundles")
}

/// The default ledger's path (a SQLite file in the state directory).
pub(crate) fn ledger_path(ctx: &Context) -> PathBuf {
    ctx.state_dir.join(LEDGER_FILE)
}

/// Where the ledger is: what `GATE_LEDGER` or the spec's `[ledger] url`
/// names, else [`ledger_path`].
pub(crate) fn ledger_location(ctx: &Context) -> Result<Location, GateError> {
    if let Some(why) = &ctx.ledger.error {
        return Err(GateError::Usage(why.clone()));
    }
    match &ctx.ledger.url {
        None => Ok(Location::Sqlite(ledger_path(ctx))),
        Some(text) => Location::parse(text)
            .map(|l| l.relative_to(&ctx.ledger.base))
            .map_err(|e| GateError::Usage(format!("the ledger ({}): {e}", ctx.ledger.source))),
    }
}

/// The gate's own records and key: the state directory (keys, ledger,
/// bundles, spool), the signing key's file when `GATE_SIGNING_KEY` names
/// one, a SQLite ledger's files and a bundle folder kept elsewhere. None
/// of them may come from the repository under review.
pub(crate) fn record_paths(ctx: &Context, store: &BundleStore) -> Vec<PathBuf> {
    let mut paths = vec![ctx.state_dir.clone()];
    if let Some(value) = ctx.env.signing_key()
        && !value.contains("-----BEGIN")
    {
        paths.push(config::from_cwd(Path::new(value.trim())));
    }
    if let Ok(Location::Sqlite(file)) = ledger_location(ctx) {
        paths.extend(ledger_files(&file));
    }
    if let Target::Dir(dir) = store.target() {
        paths.push(dir.clone());
    }
    paths
}

/// What no process the gate starts for the workspace may reach: the
/// gate's records and key ([`record_paths`]), every file beside a SQLite
/// ledger kept elsewhere, a shared ledger's TLS files, and the credential
/// files the ledger's and the bundle store's clients read.
pub(crate) fn secret_paths(ctx: &Context, store: &BundleStore) -> Vec<PathBuf> {
    let mut paths = record_paths(ctx, store);
    match ledger_location(ctx) {
        Ok(Location::Sqlite(file)) => paths.extend(beside_ledger(&file, &ctx.workspace)),
        Ok(postgres) => paths.extend(
            postgres
                .tls_files()
                .into_iter()
                .map(|f| config::from_cwd(&f)),
        ),
        Err(_) => {}
    }
    for name in CREDENTIAL_FILE_VARIABLES {
        if let Some(value) = ctx.env.var(name).filter(|v| !v.is_empty()) {
            paths.push(config::from_cwd(Path::new(value)));
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

/// Variables that name files holding the ledger's or the bundle store's
/// credentials.
const CREDENTIAL_FILE_VARIABLES: [&str; 7] = [
    "PGPASSFILE",
    "PGSSLKEY",
    "PGSSLCERT",
    "PGSSLROOTCERT",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
];

/// A SQLite ledger's own files: the database, its journal, its
/// write-ahead log, the locks a shared ledger is written and its series
/// held under.
fn ledger_files(file: &Path) -> Vec<PathBuf> {
    ["", "-wal", "-shm", "-journal", "-append", "-series"]
        .iter()
        .map(|suffix| {
            let mut name = file.to_path_buf().into_os_string();
            name.push(suffix);
            PathBuf::from(name)
        })
        .collect()
}

/// Every file beside a SQLite ledger kept outside the workspace: a process
/// that could hold one could stall every other run on it.
fn beside_ledger(file: &Path, workspace: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(dir) = file.parent()
        && !dir.starts_with(workspace)
        && !workspace.starts_with(dir)
        && let Ok(entries) = std::fs::read_dir(dir)
    {
        out.extend(
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
                .map(|e| e.path()),
        );
    }
    out
}

/// Whether there can be anything to read: a shared ledger always, a SQLite
/// file when it exists (reading must not create one). An error when the
/// location itself is wrong.
pub(crate) fn ledger_exists(ctx: &Context) -> Result<bool, GateError> {
    Ok(match ledger_location(ctx)? {
        Location::Sqlite(path) => path.exists(),
        Location::Postgres(_) => true,
    })
}

/// What the state directory's own `.gitignore` says: ignore everything,
/// itself included.
const STATE_GITIGNORE: &str =
    "# Written by gate: its state (signing key, ledger, bundles) stays out of git.\n*\n";

/// Keeps git away from a state directory inside the workspace with a
/// `.gitignore` of `*` in it (as pytest and ruff do for their caches): `git
/// add -A` then never commits the signing key or the ledger, and `--base`
/// never lists them as changed. Written when missing, never rewritten, and
/// only into a directory that is the gate's: the default `.gate/`, or one
/// the gate is about to create (a `--state` naming an existing folder, the
/// workspace itself say, is left alone). A failure to write it is logged,
/// not the run's.
pub(crate) fn keep_state_out_of_git(ctx: &Context) {
    let Some(state) = ctx.state_inside_workspace() else {
        return;
    };
    let ours = matches!(ctx.state_source, config::Source::Default(_)) || !state.exists();
    let file = state.join(".gitignore");
    if !ours || state == ctx.workspace {
        return;
    }
    // In the workspace, so a link planted at the name (or on the way) is
    // refused rather than written through.
    match gate_evidence::place::create_file(&ctx.workspace, &file, STATE_GITIGNORE.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            tracing::warn!(file = %file.display(), error = %e, "cannot keep the state directory out of git");
        }
        _ => {}
    }
}

/// Marks of runs whose bundle may lack its ledger row, and the envelopes
/// of runs whose row (or upload to a remote store) is still to come.
pub(crate) fn spool_dir(ctx: &Context) -> PathBuf {
    ctx.state_dir.join("spool")
}

/// The bundle store: `GATE_BUNDLE_STORE` (`s3://bucket/prefix` or a
/// directory), else the ledger itself when it is PostgreSQL (the envelope
/// goes in with its row, so any runner reaching the ledger reaches every
/// bundle), else the state directory's `bundles/`. It reads a bundle kept
/// in the ledger through the ledger, whichever the target.
pub(crate) fn bundle_store(ctx: &Context) -> Result<BundleStore, GateError> {
    let ledger = ledger_location(ctx)?;
    let target = match ctx.env.bundle_store() {
        Some(text) => match Target::parse(&text, Path::new("")) {
            // A directory given relative to where the gate was started.
            Ok(Target::Dir(dir)) => Target::Dir(config::from_cwd(&dir)),
            Ok(target) => target,
            Err(e) => {
                return Err(GateError::Usage(format!("{}: {e}", names::BUNDLE_STORE)));
            }
        },
        None if matches!(ledger, Location::Postgres(_)) => Target::Ledger,
        None => Target::Dir(bundles_dir(ctx)),
    };
    let store = BundleStore::new(target, AwsSettings::from_vars(ctx.env.aws())).with_ledger(ledger);
    Ok(match store.target() {
        Target::Dir(dir) => {
            let root = anchor(ctx, dir).to_path_buf();
            store.anchored(root)
        }
        _ => store,
    })
}

/// The folder a file the gate keeps at `dir` is written from without
/// following links (see `gate_evidence::place`): the workspace when `dir`
/// is in it (below it, the items could have planted a link), else the
/// state directory when `dir` is in that, else `dir` itself, as the
/// operator gave it (both are hidden from the items).
pub(crate) fn anchor<'a>(ctx: &'a Context, dir: &'a Path) -> &'a Path {
    if dir.starts_with(&ctx.workspace) {
        &ctx.workspace
    } else if dir.starts_with(&ctx.state_dir) {
        &ctx.state_dir
    } else {
        dir
    }
}

/// A run's bundle bytes, from wherever its row says they are, checked
/// against what the row recorded.
pub(crate) fn row_bundle(store: &BundleStore, row: &LedgerRow) -> Result<Vec<u8>, StoreError> {
    let at = BundleRef::parse(&row.entry.bundle_path)?;
    let bytes = store.get(&at)?;
    let actual = bundle::digest(&bytes);
    if actual != row.envelope_sha256 {
        return Err(StoreError::Tampered {
            at: at.to_string(),
            expected: row.envelope_sha256.clone(),
            actual,
        });
    }
    Ok(bytes)
}

/// A spooled envelope's file.
fn spooled_envelope(ctx: &Context, run_id: &str) -> Option<PathBuf> {
    bundle::path_for(&spool_dir(ctx), run_id).ok()
}

/// Runs with something in the spool: a mark (`<run-id>`) or an envelope
/// (`<run-id>.dsse.json`).
fn spooled_runs(ctx: &Context) -> std::collections::BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(spool_dir(ctx)) else {
        return std::collections::BTreeSet::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        // Temporary files of an interrupted write start with a dot.
        .filter(|name| !name.starts_with('.'))
        .map(|name| match name.strip_suffix(bundle::SUFFIX) {
            Some(run) => run.to_owned(),
            None => name,
        })
        .collect()
}

/// Clears a run's spool entries once its row is written.
fn clear_spool(ctx: &Context, run_id: &str) {
    let _ = std::fs::remove_file(spool_dir(ctx).join(run_id));
    if let Some(path) = spooled_envelope(ctx, run_id) {
        let _ = std::fs::remove_file(path);
    }
}

/// Every spooled envelope: bundles kept while their store or ledger was
/// down. Those of runs still in progress on this machine (their mark held)
/// are left to their runs.
pub(crate) fn spooled_bundles(ctx: &Context) -> Vec<PathBuf> {
    list_bundles(&spool_dir(ctx))
        .into_iter()
        .filter(|path| {
            let mark = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(bundle::SUFFIX))
                .map(|run| spool_dir(ctx).join(run));
            mark.is_none_or(|m| !m.exists() || spool::try_hold(&m).is_some())
        })
        .collect()
}

/// Imports what earlier runs on this machine left in the spool, oldest
/// first (best effort: a bundle that cannot be imported now stays for
/// `gate ledger import` or the next run). A run calls it before reading its
/// spec's history, so a spooled attempt counts in the series, and again
/// after its own row. Stops at a store or ledger that cannot be reached.
pub(crate) fn import_spooled(
    ctx: &Context,
    store: &BundleStore,
    ledger: &mut Ledger,
    public: &PublicKey,
    current: Option<&str>,
) {
    for run in spooled_runs(ctx) {
        if Some(run.as_str()) == current {
            continue;
        }
        // A mark its run still holds belongs to a run in progress (on this
        // machine, sharing the state directory): not ours to import. With
        // no mark, the run's row is written (a run removes its mark only
        // after that, and a run writes its envelope only after its mark).
        let mark = spool_dir(ctx).join(&run);
        let _held = if mark.exists() {
            let Some(held) = spool::try_hold(&mark) else {
                continue;
            };
            Some(held)
        } else {
            None
        };
        // The envelope kept in the spool, else the bundle in the local directory.
        let file = spooled_envelope(ctx, &run)
            .filter(|p| p.exists())
            .or_else(|| bundle::path_for(&bundles_dir(ctx), &run).ok())
            .filter(|p| p.exists());
        let Some(path) = file else {
            // Killed before its bundle was written: nothing to import.
            clear_spool(ctx, &run);
            continue;
        };
        match import_files(ctx, store, ledger, std::slice::from_ref(public), &[path]) {
            Ok(imported) => {
                for (run, seq) in imported {
                    tracing::info!(%run, seq, "imported a spooled bundle");
                }
            }
            Err(e) => {
                tracing::warn!(%run, error = %e, "a spooled bundle could not be imported");
                if e.exit_code() == crate::exit::INCOMPLETE {
                    return;
                }
            }
        }
    }
}

/// What the gate creates or opens by name in its state directory.
const STATE_ENTRIES: [&str; 13] = [
    "keys",
    "keys/signing.key",
    "keys/signing.pub",
    LEDGER_FILE,
    "ledger.db-wal",
    "ledger.db-shm",
    "ledger.db-journal",
    "ledger.db-series",
    "spool",
    "bundles",
    "base-cache",
    REPORT_CACHE_FILE,
    ".gitignore",
];

/// Refuses a state directory reached through a symbolic link, before
/// anything is created or opened in it: in the workspace any folder from
/// the workspace down to it, and wherever it is the entries the gate keeps
/// in it. The change (or an item of an earlier run) may have planted the
/// link to make the gate write its key and ledger where it can read them.
pub(crate) fn refuse_linked_state(ctx: &Context) -> Result<(), GateError> {
    let is_link = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_symlink());
    let mut on_the_way: Vec<PathBuf> = Vec::new();
    if let Ok(rest) = ctx.state_dir.strip_prefix(&ctx.workspace) {
        let mut at = ctx.workspace.clone();
        for part in rest.components() {
            at.push(part);
            on_the_way.push(at.clone());
        }
    }
    let entries = STATE_ENTRIES.iter().map(|e| ctx.state_dir.join(e));
    match on_the_way.into_iter().chain(entries).find(|p| is_link(p)) {
        None => Ok(()),
        Some(link) => Err(GateError::Workspace {
            path: ctx.workspace.clone(),
            reason: format!(
                "{} is a symbolic link: the gate creates and opens its state (keys, ledger, \
                 bundles, spool) only where no link leads elsewhere; remove it",
                link.display()
            ),
        }),
    }
}

/// Opens the ledger (a SQLite file is created when missing).
pub(crate) fn open_ledger(ctx: &Context) -> Result<Ledger, GateError> {
    refuse_linked_state(ctx)?;
    Ledger::open(ledger_location(ctx)?).map_err(GateError::from)
}

/// Opens the ledger there is, never creating one (nor the state directory
/// around it): what reads and what records about past runs use.
/// [`GateError::NoLedger`] when there is none yet.
pub(crate) fn open_existing_ledger(ctx: &Context) -> Result<Ledger, GateError> {
    if !ledger_exists(ctx)? {
        return Err(GateError::NoLedger {
            at: ledger_location(ctx)?.to_string(),
        });
    }
    open_ledger(ctx)
}

/// The signing key: `GATE_SIGNING_KEY` (PEM text or a path), else the state
/// directory's key. Outside CI a missing key is created and its path
/// returned; in CI it is an error rather than a throwaway key nobody trusts.
pub(crate) fn signing_key(ctx: &Context) -> Result<(SigningKey, Option<PathBuf>), GateError> {
    refuse_linked_state(ctx)?;
    if let Some(value) = ctx.env.signing_key() {
        return Ok((SigningKey::from_pem_or_path(&value)?, None));
    }
    let dir = keys_dir(ctx);
    let private = dir.join(PRIVATE_KEY_FILE);
    if private.exists() {
        return Ok((SigningKey::load(&private)?, None));
    }
    if ctx.env.in_ci() {
        return Err(GateError::Usage(format!(
            "CI is set and no signing key is configured: set GATE_SIGNING_KEY (PEM text or a \
             path) or run `gate keys generate` (it would be at {}); the gate does not sign \
             with a throwaway key",
            private.display()
        )));
    }
    let (key, created) = SigningKey::load_or_generate(&dir)?;
    Ok((key, created.then_some(private)))
}

/// Keys a bundle is verified against: `--key` files, else the state
/// directory's public key.
pub(crate) fn trusted_keys(ctx: &Context, flags: &[PathBuf]) -> Result<Vec<PublicKey>, GateError> {
    if !flags.is_empty() {
        return flags
            .iter()
            .map(|p| PublicKey::load(&config::from_cwd(p)).map_err(GateError::from))
            .collect();
    }
    let public = keys_dir(ctx).join(PUBLIC_KEY_FILE);
    if public.exists() {
        return Ok(vec![PublicKey::load(&public)?]);
    }
    if let Some(value) = ctx.env.signing_key() {
        return Ok(vec![
            SigningKey::from_pem_or_path(&value)?.public_key().clone(),
        ]);
    }
    Err(GateError::Usage(format!(
        "no public key to verify with: pass --key PUB (the signer's signing.pub), or keep {}",
        public.display()
    )))
}

/// `gate keys generate`: a new pair in the state directory, never replacing one.
pub(crate) fn generate_keys(ctx: &Context) -> Result<(SigningKey, KeyPairPaths), GateError> {
    refuse_linked_state(ctx)?;
    keep_state_out_of_git(ctx);
    let key = SigningKey::generate()?;
    let paths = key.write_pair(&keys_dir(ctx))?;
    Ok((key, paths))
}

/// Seals the run into a bundle, stores it durably, then appends its ledger
/// row. Sets `record.bundle` and `record.recorded`. A store or ledger that
/// cannot take the bundle or the row leaves `recorded` false and the bundle
/// kept (in the spool, for a remote store) for `gate ledger import`; that
/// is reported, not an error.
pub(crate) fn record_run(
    ctx: &Context,
    store: &BundleStore,
    record: &mut RunRecord,
    key: &SigningKey,
    subjects: Vec<Subject>,
    predicate: &Predicate,
) -> Result<Option<String>, GateError> {
    // Both encoded before anything is written: a failure leaves nothing behind.
    let encoded = predicate
        .to_value()
        .map_err(GateError::encode("bundle predicate"))?;
    let row_extra = row_extra(record)?;
    let statement = Statement::new(subjects, PREDICATE_TYPE, encoded);
    let envelope = bundle::seal(&statement, key);
    // The spool mark says "bundle maybe written, row not yet": a run killed
    // before its row is found and imported by the next run.
    // The mark is held (locked) while this run lives, so a concurrent run
    // sharing the state directory never imports it from under us.
    refuse_linked_state(ctx)?;
    let mark = spool_dir(ctx).join(&record.run_id);
    let held = std::fs::create_dir_all(spool_dir(ctx))
        .and_then(|()| spool::hold(&mark))
        .map_err(|source| GateError::Write {
            path: mark.clone(),
            source,
        })?;
    if !store.is_local() {
        // Kept here until the row is written: the store or the ledger may be down.
        let spool = spool_dir(ctx);
        let spooled = bundle::write(&spool, anchor(ctx, &spool), &record.run_id, &envelope)?;
        record.bundle = Some(display_path(ctx, &spooled.path));
    }
    let at = match store.put(&record.run_id, &envelope) {
        Ok(at) => at,
        Err(e) if !store.is_local() => {
            record.recorded = false;
            return Ok(Some(format!(
                "the bundle store did not take it: {e}; spooled at {}",
                record.bundle.as_deref().unwrap_or("the spool")
            )));
        }
        Err(e) => return Err(e.into()),
    };
    let spooled = record.bundle.take();
    record.bundle = Some(match &at {
        BundleRef::File(path) => display_path(ctx, path),
        other => other.to_string(),
    });
    let entry = entry_for(record, &at.to_string(), row_extra);
    let appended = open_ledger(ctx).and_then(|mut ledger| {
        match ledger.append_attempt(&entry, &envelope) {
            Ok(_) => {}
            // Recorded already with these very bytes (an import raced us):
            // that is this run's record.
            Err(e) if recorded_as(&ledger, &e, &entry.run_id, &envelope)? => {}
            Err(e) => return Err(GateError::from(e)),
        }
        import_spooled(
            ctx,
            store,
            &mut ledger,
            key.public_key(),
            Some(&record.run_id),
        );
        Ok(())
    });
    match appended {
        Ok(()) => {
            record.recorded = true;
            clear_spool(ctx, &record.run_id);
            drop(held);
            Ok(None)
        }
        Err(e) => {
            record.recorded = false;
            if matches!(at, BundleRef::Ledger { .. }) {
                // It was to go in with its row: it is in the spool only.
                record.bundle = spooled;
            }
            Ok(Some(e.to_string()))
        }
    }
}

/// True when `err` refused `run_id` because the run is recorded already,
/// with exactly these envelope bytes: an import of its spooled bundle got
/// there first, and that row is this run's record.
fn recorded_as(
    ledger: &Ledger,
    err: &LedgerError,
    run_id: &str,
    envelope: &[u8],
) -> Result<bool, GateError> {
    if !matches!(err, LedgerError::AlreadyRecorded { .. }) {
        return Ok(false);
    }
    Ok(ledger
        .get(run_id)?
        .is_some_and(|row| row.envelope_sha256 == bundle::digest(envelope)))
}

/// Spool marks: an empty file per run whose bundle may lack its row, locked
/// by the run while it lives (the kernel unlocks it if the run is killed).
mod spool {
    use std::fs::File;
    use std::path::Path;

    /// A held mark.
    pub(super) struct Held {
        #[cfg(unix)]
        _lock: nix::fcntl::Flock<File>,
        #[cfg(not(unix))]
        _file: File,
    }

    /// Creates the mark at `path` and holds it.
    pub(super) fn hold(path: &Path) -> std::io::Result<Held> {
        let file = File::create(path)?;
        lock(file, false)?.ok_or_else(|| std::io::Error::other("the spool mark is held"))
    }

    /// Holds an existing mark unless its run still does.
    pub(super) fn try_hold(path: &Path) -> Option<Held> {
        let file = std::fs::OpenOptions::new().write(true).open(path).ok()?;
        lock(file, true).ok().flatten()
    }

    #[cfg(unix)]
    fn lock(file: File, nonblocking: bool) -> std::io::Result<Option<Held>> {
        use nix::errno::Errno;
        use nix::fcntl::{Flock, FlockArg};
        let how = if nonblocking {
            FlockArg::LockExclusiveNonblock
        } else {
            FlockArg::LockExclusive
        };
        match Flock::lock(file, how) {
            Ok(lock) => Ok(Some(Held { _lock: lock })),
            Err((_, Errno::EWOULDBLOCK)) => Ok(None),
            Err((_, e)) => Err(e.into()),
        }
    }

    #[cfg(not(unix))]
    fn lock(file: File, _nonblocking: bool) -> std::io::Result<Option<Held>> {
        Ok(Some(Held { _file: file }))
    }
}

/// What the run keeps in its ledger row's `extra`, as stored.
fn row_extra(record: &RunRecord) -> Result<Value, GateError> {
    RowExtra::of(record)
        .to_value()
        .map_err(GateError::encode("ledger row"))
}

/// The ledger row's content for a run whose bundle is at `bundle_path`.
pub(crate) fn entry_for(record: &RunRecord, bundle_path: &str, extra: Value) -> RunEntry {
    let specialists = &record.review.specialists;
    let started_at = parse_time(&record.started_at);
    RunEntry {
        run_id: record.run_id.clone(),
        spec_id: record.spec_id.clone(),
        attempt: record.attempt,
        series: record.series.as_ref().map(|s| s.key.clone()),
        verdict: record.verdict.as_str().to_owned(),
        tier: record.tier.as_str().to_owned(),
        started_at,
        finished_at: started_at
            + chrono::Duration::milliseconds(i64::try_from(record.duration_ms).unwrap_or(i64::MAX)),
        input_tokens: specialists.iter().filter_map(|s| s.input_tokens).sum(),
        cached_input_tokens: specialists
            .iter()
            .filter_map(|s| s.cached_input_tokens)
            .sum(),
        output_tokens: specialists.iter().filter_map(|s| s.output_tokens).sum(),
        // An empty float sum is -0.0; adding 0.0 stores it as 0 (PostgreSQL
        // keeps the sign, and reports would show "-0").
        cost_usd: specialists
            .iter()
            .map(|s| s.cost_usd)
            .sum::<Option<f64>>()
            .map(|c| c + 0.0),
        bundle_path: bundle_path.to_owned(),
        extra,
    }
}

/// Subjects for workspace files, digested in parallel; files that vanished
/// or cannot be named are left out.
pub(crate) fn subjects(workspace: &Path, names: &[String]) -> Vec<Subject> {
    Subject::from_files(workspace, names).unwrap_or_else(|_| {
        names
            .iter()
            .filter_map(|n| Subject::from_file(workspace, n).ok())
            .collect()
    })
}

/// A path as shown to users: relative to the workspace when inside it.
pub(crate) fn display_path(ctx: &Context, path: &Path) -> String {
    match path.strip_prefix(&ctx.workspace) {
        // The workspace itself is `.`, never an empty name.
        Ok(p) if p.as_os_str().is_empty() => ".".to_owned(),
        Ok(p) => p.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

fn parse_time(s: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(s)
        .map_or_else(|_| chrono::Utc::now(), |t| t.with_timezone(&chrono::Utc))
}

/// Every `*.dsse.json` in `dir`.
pub(crate) fn list_bundles(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(bundle::SUFFIX))
        .collect()
}

/// Appends each bundle among `files` whose run has no row, oldest first,
/// after putting it in the bundle store (a bundle already there stays as
/// it is). A run whose row exists, now or already, leaves the spool.
pub(crate) fn import_files(
    ctx: &Context,
    store: &BundleStore,
    ledger: &mut Ledger,
    trusted: &[PublicKey],
    files: &[PathBuf],
) -> Result<Vec<(String, u64)>, GateError> {
    let mut pending = Vec::new();
    for path in files {
        let bytes = bundle::read(path)?;
        let opened = bundle::open(&bytes, trusted).map_err(|e| {
            GateError::BadEvidence(format!("{} does not verify: {e}", path.display()))
        })?;
        if opened.statement.predicate_type != PREDICATE_TYPE {
            // An override's bundle, say: recorded in its own table.
            continue;
        }
        let record = Predicate::read(&opened.statement.predicate)
            .map_err(|e| {
                GateError::BadEvidence(format!("{} holds no gate run: {e}", path.display()))
            })?
            .run;
        if ledger.get(&record.run_id)?.is_some() {
            clear_spool(ctx, &record.run_id);
            continue;
        }
        pending.push((record, bytes));
    }
    pending.sort_by(|a, b| a.0.started_at.cmp(&b.0.started_at));
    let mut imported = Vec::new();
    for (record, bytes) in pending {
        let at = store.put(&record.run_id, &bytes)?;
        let entry = entry_for(&record, &at.to_string(), row_extra(&record)?);
        match ledger.append(&entry, &bytes) {
            Ok(row) => imported.push((record.run_id.clone(), row.seq)),
            // Its own run (or another import) recorded it meanwhile.
            Err(e) if recorded_as(ledger, &e, &record.run_id, &bytes)? => {}
            Err(e) => return Err(e.into()),
        }
        clear_spool(ctx, &record.run_id);
    }
    Ok(imported)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Source;

    #[test]
    fn only_a_state_directory_of_the_gates_own_gets_a_gitignore() {
        struct Case {
            name: &'static str,
            state: &'static str,
            flag: bool,
            before: Option<&'static str>,
            after: Option<&'static str>,
        }
        let cases = [
            Case {
                name: "the default .gate/",
                state: ".gate",
                flag: false,
                before: None,
                after: Some(STATE_GITIGNORE),
            },
            Case {
                name: "a --state folder the gate creates",
                state: "ci/state",
                flag: true,
                before: None,
                after: Some(STATE_GITIGNORE),
            },
            Case {
                name: "a --state folder of the workspace's",
                state: "src",
                flag: true,
                before: None,
                after: None,
            },
            Case {
                name: "--state naming the workspace itself",
                state: ".",
                flag: true,
                before: None,
                after: None,
            },
            Case {
                name: "a .gitignore kept by hand",
                state: ".gate",
                flag: false,
                before: Some("# mine\n"),
                after: Some("# mine\n"),
            },
        ];
        for case in cases {
            let dir = tempfile::tempdir().unwrap();
            let ws = dir.path().canonicalize().unwrap();
            std::fs::create_dir_all(ws.join("src")).unwrap();
            if let Some(text) = case.before {
                std::fs::create_dir_all(ws.join(case.state)).unwrap();
                std::fs::write(ws.join(case.state).join(".gitignore"), text).unwrap();
            }
            let mut ctx = Context::quiet(ws.clone());
            ctx.state_dir = ws.join(case.state);
            if case.flag {
                ctx.state_source = Source::Flag("--state");
            }
            keep_state_out_of_git(&ctx);
            let written = std::fs::read_to_string(ws.join(case.state).join(".gitignore")).ok();
            assert_eq!(written.as_deref(), case.after, "{}", case.name);
        }
    }

    #[test]
    fn a_link_planted_as_the_gitignore_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("ws/.gate")).unwrap();
        let ws = dir.path().join("ws").canonicalize().unwrap();
        let host = dir.path().join("host-file");
        std::os::unix::fs::symlink(&host, ws.join(".gate/.gitignore")).unwrap();
        keep_state_out_of_git(&Context::quiet(ws.clone()));
        assert!(!host.exists(), "written through the link");
    }
}
