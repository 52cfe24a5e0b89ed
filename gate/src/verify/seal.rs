//! The evidence: the run sealed into its signed bundle and appended to the
//! ledger, with every file it rests on named.

use std::time::Instant;

use gate_evidence::Digest;
use gate_review::record::millis;

use super::tested::Tested;
use crate::attest;
use crate::config::Context;
use crate::errors::GateError;
use crate::events::{Note, RunEvent};
use crate::predicate::{PlanEntry, Predicate, PromptUsed, RoutingUsed, RulesUsed};
use crate::record::RunRecord;

use super::planning::Planned;
use super::records;
use super::setup::Setup;
use super::stage::Stage;
use super::survey::Survey;

/// Seals `record` and records it; a ledger that cannot take it leaves the
/// bundle spooled, and the run says so.
pub(super) fn seal(
    run: &Stage<'_>,
    survey: &Survey,
    planned: &Planned,
    tested: &Tested,
    record: &mut RunRecord,
) -> Result<(), GateError> {
    let Stage {
        ctx,
        req,
        events,
        start,
        setup,
        ..
    } = *run;
    let (rules, snapshot) = (&survey.rule_set, &survey.snapshot);
    let evidence_started = Instant::now();
    let config_files = super::setup::config_files(req, &setup.routing, &setup.prompts);
    let mut names = records::subject_names(ctx, &config_files, &setup.spec, snapshot, record);
    names.extend(rules.files.iter().map(|(path, _)| path.clone()));
    names.sort();
    names.dedup();
    let rules = rules
        .files
        .iter()
        .map(|(path, bytes)| RulesUsed {
            file: path.clone(),
            blake3: Digest::of(bytes).to_hex(),
        })
        .collect();
    let sealed = Sealed {
        subject_names: &names,
        tested: Some(tested),
        plan: records::plan_entries(&planned.plan),
        rules,
    };
    if let Some(reason) = finish(ctx, setup, record, sealed)? {
        events.emit(RunEvent::Note(Note::NotRecorded { reason }));
    }
    // What the evidence step adds to a run (bench/evidence.sh reads this).
    tracing::info!(
        target: "gate::timings",
        run_ms = millis(start.clock.elapsed()),
        evidence_ms = millis(evidence_started.elapsed()),
        "run timings"
    );
    Ok(())
}

/// What the bundle records beside the run: the files it rests on, the
/// plan, the house rules' digests.
pub(super) struct Sealed<'a> {
    /// The subjects, workspace-relative.
    pub subject_names: &'a [String],
    /// What the items ran on, for the files they changed: recorded
    /// instead of the disk (a file whose tested content is gone is left out).
    pub tested: Option<&'a Tested>,
    /// The plan as the predicate keeps it.
    pub plan: Vec<PlanEntry>,
    /// The house rules files and their digests.
    pub rules: Vec<RulesUsed>,
}

/// Seals the run into its bundle and appends its ledger row; a warning when
/// the ledger could not take it.
pub(super) fn finish(
    ctx: &Context,
    setup: &Setup,
    record: &mut RunRecord,
    sealed: Sealed<'_>,
) -> Result<Option<String>, GateError> {
    let (store, key, routing, prompts) = (&setup.store, &setup.key, &setup.routing, &setup.prompts);
    record.advisory = ctx.env.advisory();
    let Sealed {
        subject_names,
        tested,
        plan,
        rules,
    } = sealed;
    let predicate = Predicate {
        format_version: crate::record::FORMAT_VERSION,
        run: record.clone(),
        policy: setup.spec.policy.clone(),
        routing: RoutingUsed {
            origin: routing.origin.to_string(),
            blake3: routing.digest().to_hex(),
            patch: record.routing_override.clone(),
        },
        prompts: prompts
            .digests()
            .into_iter()
            .map(|(prompt, digest, path)| PromptUsed {
                prompt,
                blake3: digest.to_hex(),
                file: path.map(|p| p.display().to_string()),
            })
            .collect(),
        rules,
        plan,
        previous_bundle_sha256: record.previous_bundle.clone(),
    };
    let subjects = tested_subjects(&ctx.workspace, subject_names, tested);
    attest::record_run(ctx, store, record, key, subjects, &predicate)
}

/// The subjects of `names`: from the disk, but for the files the items
/// changed, which are recorded as they were when the items started (from
/// the commit), or left out where that is gone.
fn tested_subjects(
    workspace: &std::path::Path,
    names: &[String],
    tested: Option<&Tested>,
) -> Vec<gate_evidence::Subject> {
    let Some(tested) = tested else {
        return attest::subjects(workspace, names);
    };
    let (altered, untouched): (Vec<String>, Vec<String>) = names
        .iter()
        .cloned()
        .partition(|n| tested.altered(n).is_some());
    let mut subjects = attest::subjects(workspace, &untouched);
    subjects.extend(altered.iter().filter_map(|name| {
        let bytes = tested.altered(name)?.bytes.as_deref()?;
        Some(gate_evidence::Subject::from_bytes(name.clone(), bytes))
    }));
    subjects.sort_by(|a, b| a.name.cmp(&b.name));
    subjects
}
