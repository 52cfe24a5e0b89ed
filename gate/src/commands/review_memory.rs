//! `gate dismiss` and `gate override`: what a human decides about a run.

use std::fmt::Write;

use gate_evidence::ledger::{self, Dismissal, OverrideEntry};
use gate_evidence::store::BundleRef;
use gate_evidence::{Statement, Subject, bundle};
use serde_json::json;

use crate::attest;
use crate::commands::evidence;
use crate::config::Context;
use crate::errors::GateError;
use crate::exit;
use crate::memory::AGENT;
use crate::output;
use crate::output::text::shown;
use crate::predicate::Predicate;
use crate::record::{RunRecord, Verdict};

pub(crate) use crate::predicate::OVERRIDE_PREDICATE_TYPE;

/// A run from the ledger, its bundle verified.
struct Loaded {
    record: RunRecord,
    bundle_sha256: String,
    subjects: Vec<Subject>,
    bytes: Vec<u8>,
}

fn load_run(ctx: &Context, run: &str) -> Result<Loaded, GateError> {
    let found = evidence::locate(ctx, run)?;
    if found.row.is_none() {
        return Err(GateError::Usage(format!(
            "{run}: give a run id from the ledger (see `gate runs`), not a file"
        )));
    }
    let trusted = attest::trusted_keys(ctx, &[])?;
    let opened = evidence::open(&found, &trusted)?;
    let record = Predicate::read(&opened.statement.predicate)
        .map_err(|e| {
            GateError::BadEvidence(format!("run {run}: its bundle holds no readable run: {e}"))
        })?
        .run;
    Ok(Loaded {
        record,
        bundle_sha256: opened.sha256,
        subjects: opened.statement.subject,
        bytes: found.bytes,
    })
}

/// `gate dismiss RUN FINDING --reason T`: the finding is not raised again in
/// later attempts of the spec unless the code under it changes.
pub(crate) fn dismiss(
    ctx: &Context,
    run: &str,
    finding: &str,
    reason: &str,
) -> Result<u8, GateError> {
    if reason.trim().is_empty() {
        return Err(GateError::Usage("--reason must say why".to_owned()));
    }
    let loaded = load_run(ctx, run)?;
    let matches: Vec<_> = loaded
        .record
        .findings
        .iter()
        .chain(
            loaded
                .record
                .dropped_findings
                .iter()
                .filter(|f| f.lineage.by == Some(gate_review::findings::FateBy::Dismissal)),
        )
        .filter(|f| f.id.starts_with(finding))
        .collect();
    let f = match matches.as_slice() {
        [f] => *f,
        [] => {
            let run_id = &loaded.record.run_id;
            let ids: Vec<&str> = loaded
                .record
                .findings
                .iter()
                .map(|f| f.id.as_str())
                .collect();
            return Err(GateError::Usage(if ids.is_empty() {
                format!("run {run_id} has no findings to dismiss")
            } else {
                format!(
                    "run {run_id} has no finding {finding} (its findings: {})",
                    ids.join(", ")
                )
            }));
        }
        _ => {
            return Err(GateError::Usage(format!(
                "finding id prefix {finding} is ambiguous in run {}",
                loaded.record.run_id
            )));
        }
    };
    // The code the finding was about, as that run saw it.
    let code_digest = loaded
        .subjects
        .iter()
        .find(|s| s.name == f.file)
        .map(|s| s.digest.blake3.clone());
    let mut ledger = attest::open_existing_ledger(ctx)?;
    // Signed: a dismissal the gate cannot vouch for quiets nothing.
    let (key, _) = attest::signing_key(ctx)?;
    let dismissal = Dismissal {
        run_id: loaded.record.run_id.clone(),
        spec_id: loaded.record.spec_id.clone(),
        finding_id: f.id.clone(),
        reason: reason.to_owned(),
        code_digest,
        recorded_at: chrono::Utc::now(),
        envelope: None,
        // From inside an agent's session: the agent's, whatever it claims.
        by: ctx.env.advisory().then(|| AGENT.to_owned()),
    };
    ledger.add_dismissal(&ledger::seal(&dismissal, &key))?;
    let quiet = if f.role == crate::guard::GUARD_ROLE && !crate::memory::dismissable_by_gate(f) {
        "a critical finding the gate raised stays raised whatever is dismissed; `gate override` \
         lets a run past it"
            .to_owned()
    } else if dismissal.by.is_some() && crate::memory::serious(&f.severity) {
        "recorded as the agent's; a critical or warning finding stays raised, the dismissal \
         shown beside it"
            .to_owned()
    } else {
        format!("it stays quiet until {} changes", shown(&f.file))
    };
    output::stdout(&format!(
        "dismissed {} ({}: {}) in `{}`; {quiet}\n",
        shown(&f.id),
        shown(&f.role),
        shown(&f.title),
        shown(&loaded.record.spec_id),
    ))
    .map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

/// `gate override RUN --reason T --by NAME`: break glass. A signed override
/// bundle linked to the run; the next `gate verify` of the spec on the same
/// content passes, shown as overridden, and the override is counted.
pub(crate) fn override_run(
    ctx: &Context,
    run: &str,
    reason: &str,
    by: &str,
) -> Result<u8, GateError> {
    if reason.trim().is_empty() || by.trim().is_empty() {
        return Err(GateError::Usage(
            "--reason and --by must both be given".to_owned(),
        ));
    }
    let loaded = load_run(ctx, run)?;
    let record = &loaded.record;
    // An override on a pass would change nothing but the override count.
    if record.verdict == Verdict::Pass {
        let how = if record.overridden {
            "already passed by an override"
        } else {
            "passed"
        };
        return Err(GateError::Usage(format!(
            "run {} {how}: there is nothing to override",
            record.run_id
        )));
    }
    let (key, _) = attest::signing_key(ctx)?;
    let at = chrono::Utc::now();
    let predicate = json!({
        "format_version": 1,
        "run_id": record.run_id,
        "spec_id": record.spec_id,
        "overridden_verdict": record.verdict,
        "content_digest": record.content_digest,
        "run_bundle_sha256": loaded.bundle_sha256,
        "reason": reason,
        "by": by,
        "at": at.to_rfc3339(),
    });
    let subject = Subject::from_bytes(format!("{}.dsse.json", record.run_id), &loaded.bytes);
    let statement = Statement::new(vec![subject], OVERRIDE_PREDICATE_TYPE, predicate);
    let envelope = bundle::seal(&statement, &key);
    let stored =
        attest::bundle_store(ctx)?.put(&format!("{}.override", record.run_id), &envelope)?;
    let mut ledger = attest::open_existing_ledger(ctx)?;
    if matches!(stored, BundleRef::Ledger { .. }) {
        // No run row carries it in: kept on its own, before the override's row.
        ledger.put_bundle(&envelope)?;
    }
    ledger.add_override(&OverrideEntry {
        run_id: record.run_id.clone(),
        spec_id: record.spec_id.clone(),
        reason: reason.to_owned(),
        by: by.to_owned(),
        content_digest: record.content_digest.clone(),
        bundle_path: stored.to_string(),
        bundle_sha256: bundle::digest(&envelope),
        recorded_at: at,
    })?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "override of run {} ({}) recorded by {by}: {}",
        record.run_id, record.verdict, stored
    );
    let _ = writeln!(
        out,
        "the next `gate verify` of `{}` on the same content passes, shown as overridden",
        record.spec_id
    );
    output::stdout(&out).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}
