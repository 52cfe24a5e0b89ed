//! `gate ledger verify | checkpoint | import | migrate`.

use std::collections::HashMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use gate_evidence::Ledger;
use gate_evidence::PublicKey;
use gate_evidence::checkpoint::Checkpoint;
use gate_evidence::ledger::{self, LoadError, Location};
use gate_evidence::store::{BundleRef, BundleStore, StoreError};

use crate::attest;
use crate::cli::ShowFormat;
use crate::config::{self, Context};
use crate::errors::GateError;
use crate::exit;
use crate::output;
use crate::vouch;

/// The ledger's name in checkpoints (C2SP's origin line).
pub(crate) const ORIGIN: &str = "gate.local/ledger";

/// The signer's name in checkpoint signature lines: derived from its key id,
/// so a verifier with several keys finds the right one.
pub(crate) fn key_name(public: &PublicKey) -> String {
    format!("gate-{}", &public.keyid().as_str()[..16])
}

/// `gate ledger checkpoint`.
pub(crate) fn checkpoint(ctx: &Context) -> Result<u8, GateError> {
    let ledger = attest::open_existing_ledger(ctx)?;
    let (key, _) = attest::signing_key(ctx)?;
    let cp = ledger.checkpoint(ORIGIN)?;
    let note = cp
        .sign(&key_name(key.public_key()), &key)
        .map_err(|e| GateError::Unavailable(format!("cannot sign the checkpoint: {e}")))?;
    output::stdout(&note).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

/// Opens a checkpoint file against the trusted keys.
fn read_checkpoint(path: &Path, keys: &[PublicKey]) -> Result<Checkpoint, GateError> {
    let text = gate_specs::read_text_bounded(path, gate_specs::TEXT_MAX_BYTES)
        .map_err(|e| GateError::Usage(format!("cannot read checkpoint {}: {e}", path.display())))?;
    let mut last = None;
    for key in keys {
        match Checkpoint::open(&text, &key_name(key), key) {
            Ok(cp) => {
                cp.expect_origin(ORIGIN).map_err(|e| {
                    GateError::BadEvidence(format!("checkpoint {}: {e}", path.display()))
                })?;
                return Ok(cp);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(GateError::BadEvidence(format!(
        "checkpoint {} is not signed by a trusted key: {}",
        path.display(),
        last.map_or_else(|| "no key given".to_owned(), |e| e.to_string())
    )))
}

/// Bundles fetched at once from object storage by `gate ledger verify`.
const FETCHERS: usize = 16;

/// A row's bundle bytes as stored, for the verifier to compare with the row.
fn load_bundle(store: &BundleStore, row: &gate_evidence::LedgerRow) -> Result<Vec<u8>, LoadError> {
    let at =
        BundleRef::parse(&row.entry.bundle_path).map_err(|e| LoadError::Missing(e.to_string()))?;
    store.fetch(&at).map_err(|e| match e {
        StoreError::Missing { .. } => LoadError::Missing("not found in the store".to_owned()),
        other => LoadError::Unavailable(other.to_string()),
    })
}

/// `gate ledger verify`: exit 1 when anything was removed, reordered or
/// rewritten (a column edited against its signed bundle included, and an
/// unsigned or edited outcome, dismissal, override or circuit-breaker
/// state); 4 when a bundle
/// could not be read. Every bundle is fetched from wherever its row says it
/// is and checked, in parallel.
pub(crate) fn verify(
    ctx: &Context,
    since: Option<&Path>,
    keys: &[PathBuf],
    format: ShowFormat,
) -> Result<u8, GateError> {
    // Reading never creates a ledger (nor the state directory).
    let ledger = attest::open_existing_ledger(ctx)?;
    let trusted = attest::trusted_keys(ctx, keys)?;
    let checkpoint = since
        .map(|p| read_checkpoint(&config::from_cwd(p), &trusted))
        .transpose()?;
    let rows = ledger.rows()?;
    let store = attest::bundle_store(ctx)?;
    let bar = output::bar::Bar::start("fetching and checking bundles", rows.len() as u64, ctx);
    let load = |row: &gate_evidence::LedgerRow| {
        let loaded = load_bundle(&store, row);
        bar.inc();
        loaded
    };
    // Fetching objects waits on the network, not the CPU: more workers than cores.
    let remote = rows
        .iter()
        .any(|r| BundleRef::parse(&r.entry.bundle_path).is_ok_and(|at| at.is_object()));
    let pool = remote
        .then(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(FETCHERS)
                .build()
                .ok()
        })
        .flatten();
    let check = || ledger::verify_with(&rows, load, &trusted, checkpoint.as_ref(), &vouch::judge);
    let mut report = match &pool {
        Some(pool) => pool.install(check),
        None => check(),
    };
    bar.finish();
    let seqs: HashMap<&str, u64> = rows
        .iter()
        .map(|r| (r.entry.run_id.as_str(), r.seq))
        .collect();
    let mut events = event_problems(&ledger, &store, &trusted, &seqs)?;
    events.extend(report_row_problems(&ledger, &rows)?);
    // Checkpoint problems stay last, as `ledger::verify` orders them.
    let at = report
        .problems
        .iter()
        .position(|p| p.seq.is_none())
        .unwrap_or(report.problems.len());
    report.problems.splice(at..at, events);
    let (code, summary) = if report.is_ok() {
        let since = checkpoint.map_or_else(String::new, |c| {
            format!(
                ", an append-only extension of the checkpoint at size {}",
                c.size
            )
        });
        (
            exit::PASS,
            format!(
                "ok: {} runs, chain, signatures and columns intact{since}",
                report.rows
            ),
        )
    } else if report.is_tampered() {
        (
            exit::FAIL,
            format!(
                "the ledger does not verify: {} problem(s)",
                report.problems.len()
            ),
        )
    } else {
        (
            exit::INCOMPLETE,
            format!(
                "could not check every bundle: {} problem(s)",
                report.problems.len()
            ),
        )
    };
    let out = match format {
        ShowFormat::Human => {
            let mut out = String::new();
            for p in &report.problems {
                let _ = writeln!(out, "{p}");
            }
            let _ = writeln!(out, "{summary}");
            out
        }
        ShowFormat::Json => output::json_document(&VerifyDocument {
            ok: report.is_ok(),
            rows: report.rows,
            root: hex::encode(report.root),
            summary,
            problems: report.problems.iter().map(ProblemDoc::of).collect(),
        }),
    };
    output::stdout(&out).map_err(GateError::stdout)?;
    Ok(code)
}

/// `gate ledger verify --format json`.
#[derive(serde::Serialize)]
struct VerifyDocument {
    ok: bool,
    rows: u64,
    root: String,
    summary: String,
    problems: Vec<ProblemDoc>,
}

/// One problem in `gate ledger verify --format json`: where, what kind, and
/// for an edited column, which one and both values.
#[derive(serde::Serialize)]
struct ProblemDoc {
    seq: Option<u64>,
    run_id: Option<String>,
    kind: &'static str,
    tampering: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    column: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stored: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signed: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    table: Option<String>,
    message: String,
}

impl ProblemDoc {
    fn of(p: &ledger::Problem) -> Self {
        use ledger::ProblemKind as K;
        let (kind, column, table) = match &p.kind {
            K::SeqGap { .. } => ("seq_gap", None, None),
            K::ChainBroken { .. } => ("chain_broken", None, None),
            K::EnvelopeChanged { .. } => ("envelope_changed", None, None),
            K::LeafHashWrong { .. } => ("leaf_hash_wrong", None, None),
            K::Signature(_) => ("signature", None, None),
            K::Replayed { .. } => ("replayed", None, None),
            K::BundleMissing { .. } => ("bundle_missing", None, None),
            K::BundleUnavailable { .. } => ("bundle_unavailable", None, None),
            K::Truncated { .. } => ("truncated", None, None),
            K::Inconsistent { .. } => ("inconsistent", None, None),
            K::Disagrees(d) => ("column_edited", Some(d), None),
            K::EventUnvouched { table, why, .. } => {
                let first = match why {
                    ledger::Unvouched::Disagrees(d) => d.first(),
                    _ => None,
                };
                ("event_not_signed", first, Some(table.clone()))
            }
            _ => ("corrupt", None, None),
        };
        Self {
            seq: p.seq,
            run_id: p.run_id.clone(),
            kind,
            tampering: p.is_tampering(),
            column: column.map(|d| d.column.clone()),
            stored: column.map(|d| d.stored.clone()),
            signed: column.map(|d| d.signed.clone()),
            table,
            message: p.to_string(),
        }
    }
}

/// The runs whose report rows (what `gate report` counts) are not what
/// their row derives: edited apart from it.
fn report_row_problems(
    ledger: &Ledger,
    rows: &[gate_evidence::LedgerRow],
) -> Result<Vec<ledger::Problem>, GateError> {
    let last = rows.iter().map(|r| r.seq).max().unwrap_or(0);
    let stored: HashMap<u64, [u8; 32]> = ledger.report_rows_between(0, last)?.into_iter().collect();
    Ok(rows
        .iter()
        .filter(|row| {
            stored.get(&row.seq) != Some(&ledger::expected_report_rows(row.seq, &row.entry))
        })
        .map(|row| ledger::Problem {
            seq: Some(row.seq),
            run_id: Some(row.entry.run_id.clone()),
            kind: ledger::ProblemKind::EventUnvouched {
                table: "report rows".to_owned(),
                recorded_at: row.recorded_at.to_rfc3339(),
                why: ledger::Unvouched::Disagrees(vec![ledger::Disagreement {
                    column: "run_facts, run_models, run_roles".to_owned(),
                    stored: "edited apart from the row".to_owned(),
                    signed: "what the row derives".to_owned(),
                }]),
            },
        })
        .collect())
}

/// The outcomes, dismissals and overrides the gate cannot vouch for, each
/// a problem at the row of the run it is about.
fn event_problems(
    ledger: &Ledger,
    store: &BundleStore,
    trusted: &[PublicKey],
    seqs: &HashMap<&str, u64>,
) -> Result<Vec<ledger::Problem>, GateError> {
    let problem =
        |table: &str, run_id: &str, at: &chrono::DateTime<chrono::Utc>, why| ledger::Problem {
            seq: seqs.get(run_id).copied(),
            run_id: Some(run_id.to_owned()),
            kind: ledger::ProblemKind::EventUnvouched {
                table: table.to_owned(),
                recorded_at: at.to_rfc3339(),
                why,
            },
        };
    let mut out = Vec::new();
    for o in ledger.all_outcomes()? {
        if let Err(why) = ledger::vouch(&o, trusted) {
            out.push(problem("outcome", &o.run_id, &o.recorded_at, why));
        }
    }
    for d in ledger.dismissals(None)? {
        if let Err(why) = ledger::vouch(&d, trusted) {
            out.push(problem("dismissal", &d.run_id, &d.recorded_at, why));
        }
    }
    for o in ledger.overrides(None)? {
        if let Err(why) = vouch::override_vouched(&o, store, trusted) {
            out.push(problem("override", &o.run_id, &o.recorded_at, why));
        }
    }
    // A breaker state belongs to a model, not a run: named by its model.
    for b in ledger.breakers()? {
        if let Err(why) = ledger::vouch(&b, trusted) {
            out.push(ledger::Problem {
                seq: None,
                run_id: None,
                kind: ledger::ProblemKind::EventUnvouched {
                    table: format!("breaker {}", b.model),
                    recorded_at: b.updated_at.to_rfc3339(),
                    why,
                },
            });
        }
    }
    out.sort_by_key(|p| p.seq);
    Ok(out)
}

/// `gate ledger import [BUNDLE]`: appends bundles that have no row yet —
/// one file, or every bundle in the spool and the state directory — oldest
/// run first, each put in the bundle store before its row.
pub(crate) fn import(ctx: &Context, bundle_file: Option<&Path>) -> Result<u8, GateError> {
    let mut ledger = attest::open_ledger(ctx)?;
    let store = attest::bundle_store(ctx)?;
    let trusted = attest::trusted_keys(ctx, &[])?;
    let candidates: Vec<PathBuf> = if let Some(p) = bundle_file {
        vec![config::from_cwd(p)]
    } else {
        let mut all = attest::spooled_bundles(ctx);
        all.extend(attest::list_bundles(&attest::bundles_dir(ctx)));
        all
    };
    let imported = attest::import_files(ctx, &store, &mut ledger, &trusted, &candidates)?;
    let mut out = String::new();
    for (run, seq) in &imported {
        let _ = writeln!(out, "imported run {run} as row {seq}");
    }
    let _ = writeln!(out, "{} bundle(s) imported", imported.len());
    output::stdout(&out).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

/// `gate ledger migrate --from URL --to URL`: copies every row exactly (seq,
/// chain link, envelope sha256, leaf hash) and the side tables into an
/// empty ledger, then checks both hold the same rows and tree head.
pub(crate) fn migrate(from: &str, to: &str) -> Result<u8, GateError> {
    let parse = |flag: &str, text: &str| {
        Location::parse(text)
            .map(|l| match l {
                Location::Sqlite(p) => Location::Sqlite(config::from_cwd(&p)),
                pg @ Location::Postgres(_) => pg,
            })
            .map_err(|e| GateError::Usage(format!("{flag}: {e}")))
    };
    let (from, to) = (parse("--from", from)?, parse("--to", to)?);
    if from == to {
        return Err(GateError::Usage(format!(
            "--from and --to are the same ledger ({from})"
        )));
    }
    if let Location::Sqlite(path) = &from
        && !path.is_file()
    {
        return Err(GateError::Usage(format!("no ledger at {}", path.display())));
    }
    let source = Ledger::open(&from)?;
    let mut target = Ledger::open(&to)?;
    let report = ledger::copy(&source, &mut target)?;
    let out = format!(
        "copied {} runs, {} outcomes, {} dismissals, {} overrides, {} circuit breakers, \
         {} bundles kept in the ledger and {} replays\n\
         from {from}\n\
         to   {to}\n\
         both ledgers have {} rows and tree head {}\n",
        report.runs,
        report.outcomes,
        report.dismissals,
        report.overrides,
        report.breakers,
        report.bundles,
        report.replays,
        report.runs,
        report.root_hex,
    );
    output::stdout(&out).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}
