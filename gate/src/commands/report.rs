//! `gate report`: the false-pass scorecard, as text, JSON or a page.

use gate_evidence::ledger::ReportScope;

use crate::attest;
use crate::cli::{ReportArgs, ShowFormat};
use crate::config::{self, Context, Verbosity};
use crate::errors::GateError;
use crate::exit;
use crate::output;
use gate_scorecard::scorecard::Scorecard;
use gate_scorecard::{html, json, text};

/// Writes a file whole or not at all, creating its folder when missing and
/// following no symbolic link below the workspace (every component of a
/// path outside it; see `gate_evidence::place`).
pub(crate) fn write_atomically(
    ctx: &Context,
    path: &std::path::Path,
    bytes: &[u8],
) -> Result<(), GateError> {
    gate_evidence::replace_file(&ctx.workspace, path, bytes).map_err(|source| GateError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// A ledger to read: the one there is, or, when there is none yet, an
/// empty one in a temporary folder (so a report of nothing is the same
/// document with nothing in it), with the words that say so. Reading never
/// creates a ledger or the state directory.
pub(crate) fn existing_or_empty(ctx: &Context) -> Result<(Readable, Option<String>), GateError> {
    match attest::open_existing_ledger(ctx) {
        Ok(ledger) => Ok((
            Readable {
                ledger,
                _scratch: None,
            },
            None,
        )),
        Err(e @ GateError::NoLedger { .. }) => {
            let scratch = tempfile::tempdir().map_err(|source| GateError::Write {
                path: std::env::temp_dir(),
                source,
            })?;
            let ledger = gate_evidence::Ledger::open(gate_evidence::ledger::Location::Sqlite(
                scratch.path().join("empty.db"),
            ))?;
            Ok((
                Readable {
                    ledger,
                    _scratch: Some(scratch),
                },
                Some(e.to_string()),
            ))
        }
        Err(e) => Err(e),
    }
}

/// A ledger to read, and the temporary folder an empty one lives in.
pub(crate) struct Readable {
    /// The ledger.
    pub ledger: gate_evidence::Ledger,
    _scratch: Option<tempfile::TempDir>,
}

/// What the report may count of the ledger's runs and overrides, each
/// checked against its bundle in the bundle store, once: the rows vouched
/// for are kept in the state directory's cache (`vouch_cache`) and only a
/// row new or changed since is checked again.
pub(crate) fn vouched(
    ctx: &Context,
    ledger: &gate_evidence::Ledger,
    store: &gate_evidence::store::BundleStore,
    trusted: &[gate_evidence::PublicKey],
    scope: &ReportScope,
) -> Result<gate_scorecard::scorecard::Vouched, GateError> {
    let mut cache = crate::vouch_cache::VouchCache::open(ctx, trusted);
    let vouched = crate::vouch::for_report(ledger, store, trusted, scope, cache.as_mut())?;
    if let Some(cache) = &cache {
        tracing::debug!(rows = cache.len(), "rows vouched for, kept");
        cache.save();
    }
    Ok(vouched)
}

/// `gate report [--html F] [--format human|json] [--since DATE] [--spec ID]`.
/// The keys the report vouches for outcomes and dismissals with: the
/// state directory's (or the signing key's) public key; none when there is
/// none, and then nothing recorded after a decision counts.
pub(crate) fn report_keys(ctx: &Context) -> Vec<gate_evidence::PublicKey> {
    attest::trusted_keys(ctx, &[]).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "no key to vouch for outcomes and dismissals with");
        Vec::new()
    })
}

pub(crate) fn report(ctx: &Context, args: &ReportArgs) -> Result<u8, GateError> {
    let scope = ReportScope {
        spec_id: args.spec.clone(),
        since: args
            .since
            .as_deref()
            .map(|t| crate::config::parse_date("--since", t))
            .transpose()?,
    };
    let (ledger, none_yet) = existing_or_empty(ctx)?;
    if let (Some(why), ShowFormat::Human, None) = (&none_yet, args.format, &args.html) {
        output::stdout(&format!("{why}\n")).map_err(GateError::stdout)?;
        return Ok(exit::PASS);
    }
    if let Some(why) = &none_yet {
        output::stderr(&format!("gate: {why}"));
    }
    let started = std::time::Instant::now();
    let trusted = report_keys(ctx);
    let store = attest::bundle_store(ctx)?;
    let vouched = vouched(ctx, &ledger.ledger, &store, &trusted, &scope)?;
    let mut card = Scorecard::build_with(
        &ledger.ledger,
        &scope,
        &trusted,
        crate::cli::hundredths(args.min_confidence),
        &vouched,
    )?;
    // A replay is shown only as its signed bundle has it, as a run is.
    let (replays, unvouched) =
        crate::replay::vouched::vouched(ledger.ledger.replays()?, &store, &trusted);
    for (id, why) in &unvouched {
        tracing::warn!(replay = %id, %why, "a replay not as the gate signed it is left out");
    }
    card.replays = gate_scorecard::replays::latest_per_routing(&replays);
    card.left_out.replays = unvouched.len() as u64;
    tracing::info!(
        runs = card.total.runs,
        elapsed_ms = started.elapsed().as_millis(),
        "scorecard built"
    );
    if let Some(path) = &args.html {
        let path = config::from_cwd(path);
        let page = html::render(&card, chrono::Utc::now());
        write_atomically(ctx, &path, page.as_bytes())?;
        if ctx.verbosity > Verbosity::Quiet {
            output::stderr(&format!("wrote {}", path.display()));
        }
    }
    let doc = match args.format {
        ShowFormat::Human => text::render(&card),
        ShowFormat::Json => output::json_document(&json::render(&card)),
    };
    output::stdout(&doc).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}
