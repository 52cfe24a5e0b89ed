//! `gate evidence verify | show | fetch`: a run's bundle, by file or run id.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use gate_evidence::bundle::{self, OpenedBundle};
use gate_evidence::store::{BundleRef, StoreError};
use gate_evidence::{LedgerRow, PublicKey};

use crate::attest;
use crate::cli::EvidenceFormat;
use crate::config::{self, Context};
use crate::errors::GateError;
use crate::exit;
use crate::output;
use crate::output::site::Site;
use crate::output::style::Style;
use crate::output::text::shown;
use crate::plan::Decision;
use crate::predicate::{PREDICATE_TYPE, Predicate};
use crate::replay::report::{REPLAY_PREDICATE_TYPE, ReplayReport};
use serde::Deserialize as _;

/// A bundle found by file or by run id.
pub(crate) struct Located {
    /// Its bytes as stored.
    pub bytes: Vec<u8>,
    /// Where it was read from: a path or an object URL.
    pub at: String,
    /// Its ledger row, when found through the ledger.
    pub row: Option<LedgerRow>,
}

/// A bundle file, else a run id (or unique prefix) looked up in the ledger
/// and fetched from wherever its row says the bundle is.
pub(crate) fn locate(ctx: &Context, target: &str) -> Result<Located, GateError> {
    let as_path = config::from_cwd(Path::new(target));
    if as_path.is_file() {
        return Ok(Located {
            bytes: bundle::read(&as_path)?,
            at: as_path.display().to_string(),
            row: None,
        });
    }
    if !attest::ledger_exists(ctx)? {
        return Err(GateError::Usage(format!(
            "{target} is neither a bundle file nor a run in a ledger (no ledger yet at {})",
            attest::ledger_location(ctx)?
        )));
    }
    let row = attest::open_ledger(ctx)?.resolve(target)?;
    let store = attest::bundle_store(ctx)?;
    let at = BundleRef::parse(&row.entry.bundle_path)?;
    let bytes = store.get(&at).map_err(|e| match e {
        StoreError::Missing { at } => GateError::BadEvidence(format!(
            "run {} is in the ledger but its bundle {at} is missing",
            row.entry.run_id
        )),
        StoreError::Tampered { at, actual, .. } => GateError::BadEvidence(format!(
            "the stored bundle of run {} was altered: {at} holds bytes whose sha256 is {actual}, \
             the ledger recorded {}",
            row.entry.run_id, row.envelope_sha256
        )),
        other => GateError::from(other),
    })?;
    Ok(Located {
        bytes,
        at: at.to_string(),
        row: Some(row),
    })
}

/// Verifies a located bundle: its signature under a trusted key, its
/// statement's shape, and (through the ledger) that its bytes are the ones
/// recorded.
pub(crate) fn open(found: &Located, keys: &[PublicKey]) -> Result<OpenedBundle, GateError> {
    open_of(found, keys, &[PREDICATE_TYPE])
}

/// [`open`], for a bundle of any of the `kinds` of predicate.
fn open_of(found: &Located, keys: &[PublicKey], kinds: &[&str]) -> Result<OpenedBundle, GateError> {
    let opened = bundle::open(&found.bytes, keys)
        .map_err(|e| GateError::BadEvidence(format!("{} does not verify: {e}", found.at)))?;
    if !kinds.contains(&opened.statement.predicate_type.as_str()) {
        return Err(GateError::BadEvidence(format!(
            "{} is signed, but it is not a gate run (predicateType {})",
            found.at, opened.statement.predicate_type
        )));
    }
    if let Some(row) = &found.row
        && row.envelope_sha256 != opened.sha256
    {
        return Err(GateError::BadEvidence(format!(
            "{} is not the bundle the ledger recorded for run {}: sha256 {} ≠ {}",
            found.at, row.entry.run_id, opened.sha256, row.envelope_sha256
        )));
    }
    Ok(opened)
}

/// `gate evidence verify`.
pub(crate) fn verify(
    ctx: &Context,
    target: &str,
    keys: &[PathBuf],
    check_workspace: bool,
) -> Result<u8, GateError> {
    let found = locate(ctx, target)?;
    let trusted = attest::trusted_keys(ctx, keys)?;
    let opened = open_of(&found, &trusted, &[PREDICATE_TYPE, REPLAY_PREDICATE_TYPE])?;
    if opened.statement.predicate_type == REPLAY_PREDICATE_TYPE {
        return verify_replay(&found, &opened);
    }
    let run = read_run(&found, &opened)?;
    let mut out = String::new();
    let _ = writeln!(out, "bundle {}", shown(&found.at));
    let _ = writeln!(out, "  signature: ok (key {})", opened.keyid);
    let _ = writeln!(
        out,
        "  run {} of `{}`, attempt {}: {}",
        shown(&run.run.run_id),
        shown(&run.run.spec_id),
        run.run.attempt,
        run.run.verdict.as_str()
    );
    let _ = writeln!(out, "  sha256 {}", opened.sha256);
    let subjects = opened.statement.subject.len();
    let mut code = exit::PASS;
    if check_workspace {
        let problems = opened.statement.check_workspace(&ctx.workspace);
        if problems.is_empty() {
            let _ = writeln!(
                out,
                "  subjects: all {subjects} match {}",
                shown(&ctx.workspace.display().to_string())
            );
        } else {
            for p in &problems {
                let _ = writeln!(out, "  subject {}", shown(&p.to_string()));
            }
            code = if problems
                .iter()
                .any(gate_evidence::statement::SubjectProblem::is_mismatch)
            {
                exit::FAIL
            } else {
                exit::INCOMPLETE
            };
        }
    } else {
        let _ = writeln!(
            out,
            "  subjects: {subjects} (pass --workspace to check them against the files)"
        );
    }
    output::stdout(&out).map_err(GateError::stdout)?;
    Ok(code)
}

/// `gate evidence verify` of a replay's bundle: its signature, and the
/// replay it signed.
fn verify_replay(found: &Located, opened: &OpenedBundle) -> Result<u8, GateError> {
    let report = ReplayReport::deserialize(&opened.statement.predicate).map_err(|e| {
        GateError::BadEvidence(format!(
            "{} verifies, but its replay does not parse: {e}",
            found.at
        ))
    })?;
    let mut out = String::new();
    let _ = writeln!(out, "bundle {}", shown(&found.at));
    let _ = writeln!(out, "  signature: ok (key {})", opened.keyid);
    let _ = writeln!(
        out,
        "  replay {} of {} runs ({} skipped) with {}",
        shown(&report.replay_id),
        report.runs.len(),
        report.skipped.len(),
        shown(&report.routing.origin)
    );
    let _ = writeln!(out, "  sha256 {}", opened.sha256);
    let _ = writeln!(
        out,
        "  subjects: {} kept requests",
        opened.statement.subject.len()
    );
    output::stdout(&out).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

/// The gate run a verified bundle holds.
fn read_run(found: &Located, opened: &OpenedBundle) -> Result<Predicate, GateError> {
    Predicate::read(&opened.statement.predicate).map_err(|e| {
        GateError::BadEvidence(format!(
            "{} verifies, but its run does not parse: {e}",
            found.at
        ))
    })
}

/// Whether the ledger records the run a bundle holds: its row when it does.
/// A bundle found through the ledger has its row; one given as a file is
/// looked up by its run id (in the ledger there is, never creating one).
fn ledger_row(ctx: &Context, found: &Located, run_id: &str) -> Option<LedgerRow> {
    if let Some(row) = &found.row {
        return Some(row.clone());
    }
    if !attest::ledger_exists(ctx).unwrap_or(false) {
        return None;
    }
    attest::open_ledger(ctx).ok()?.get(run_id).ok().flatten()
}

/// `gate evidence show`: a past run from its bundle, in any format `gate
/// verify` prints (or the decoded predicate), with the ledger's word on
/// whether it is recorded. Nothing runs again.
pub(crate) fn show(
    ctx: &Context,
    target: &str,
    format: EvidenceFormat,
    keys: &[PathBuf],
) -> Result<u8, GateError> {
    let found = locate(ctx, target)?;
    let trusted = attest::trusted_keys(ctx, keys)?;
    let opened = open(&found, &trusted)?;
    let Some(verify_format) = format.as_verify() else {
        // The signed predicate as it is, not as this build would read it.
        let mut s = serde_json::to_string_pretty(&opened.statement.predicate)
            .map_err(GateError::encode("predicate"))?;
        s.push('\n');
        output::stdout(&s).map_err(GateError::stdout)?;
        return Ok(exit::PASS);
    };
    let Predicate {
        run: mut record,
        plan,
        ..
    } = read_run(&found, &opened)?;
    // Neither is in the bundle: both are known only once it exists.
    let row = ledger_row(ctx, &found, &record.run_id);
    record.recorded = row
        .as_ref()
        .is_some_and(|r| r.envelope_sha256 == opened.sha256);
    record.bundle = Some(found.at.clone());
    let mut text = String::new();
    if format == EvidenceFormat::Human {
        let _ = writeln!(
            text,
            "bundle {} (signed by {}, sha256 {})\nstarted {} · took {} ms · gate {}",
            shown(&found.at),
            opened.keyid,
            opened.sha256,
            shown(&record.started_at),
            record.duration_ms,
            shown(&record.tool_version)
        );
        if let Some(row) = row.as_ref().filter(|_| record.recorded) {
            let _ = writeln!(text, "ledger: row {}", row.seq);
        }
        if !plan.is_empty() {
            let _ = writeln!(text, "plan:");
            for p in &plan {
                let what = match &p.decision {
                    Decision::Carry { from_run, .. } => format!("carried from run {from_run}"),
                    Decision::Run { why } => format!("run: {why}"),
                    Decision::Skip { why } => format!("skip: {why}"),
                };
                let _ = writeln!(text, "  {} — {}", shown(&p.id), shown(&what));
            }
        }
        let observed = record
            .checks
            .iter()
            .map(|c| (&c.id, &c.observed))
            .chain(record.criteria.iter().map(|c| (&c.id, &c.observed)));
        for (id, o) in observed {
            let Some(o) = o else { continue };
            if !o.outside_inputs.is_empty() {
                let _ = writeln!(text, "{} read beyond its declared inputs:", shown(id));
                for file in &o.outside_inputs {
                    let _ = writeln!(text, "  {}", shown(file));
                }
            }
            if let Some(why) = &o.incomplete {
                let _ = writeln!(
                    text,
                    "{}: its trace is incomplete ({})",
                    shown(id),
                    shown(why)
                );
            }
        }
        base_tails(&mut text, &record);
        text.push('\n');
    }
    let site = Site::locate(&ctx.workspace, &ctx.workspace.join("gate.toml"));
    let style = Style {
        color: ctx.colors.stdout,
    };
    text.push_str(&output::render(verify_format, &record, &site, style));
    output::stdout(&text).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

/// What each criterion said on the base, when the run ran it there.
fn base_tails(text: &mut String, record: &crate::record::RunRecord) {
    for c in &record.criteria {
        let Some(base) = &c.base_status else { continue };
        let Some(tail) = base.output_tail.as_deref().filter(|t| !t.is_empty()) else {
            continue;
        };
        let why = base
            .reason
            .as_deref()
            .map(|r| format!(" ({})", shown(r)))
            .unwrap_or_default();
        let _ = writeln!(
            text,
            "{} on the base: {}{why}",
            shown(&c.id),
            base.status.as_str()
        );
        for line in tail.lines() {
            let _ = writeln!(text, "  │ {}", shown(line));
        }
    }
}

/// `gate evidence fetch`.
pub(crate) fn fetch(ctx: &Context, run: &str, to: &Path) -> Result<u8, GateError> {
    let found = locate(ctx, run)?;
    if let Some(row) = &found.row {
        let sha = bundle::digest(&found.bytes);
        if sha != row.envelope_sha256 {
            return Err(GateError::BadEvidence(format!(
                "the stored bundle of run {} was altered: sha256 {sha} ≠ recorded {}",
                row.entry.run_id, row.envelope_sha256
            )));
        }
    }
    let to = config::from_cwd(to);
    std::fs::write(&to, &found.bytes).map_err(|source| GateError::Write {
        path: to.clone(),
        source,
    })?;
    output::stdout(&format!("wrote {}\n", to.display())).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}
