//! From what ran to the run's record: the items' records, the findings that
//! stand (remembered across attempts), the verdict, and the doom loop and
//! override the verdict module weighs last.

use gate_review::findings::{FateBy, Finding};
use gate_review::review::ReviewOutput;
use gate_review::review::coordinator::sort_worst_first;
use gate_review::tier::TierDecision;

use crate::doom::Thresholds;
use crate::guard;
use crate::memory;
use crate::record::{CheckRecord, CriterionRecord, ItemStatus, RunRecord};
use crate::retry;
use crate::{base_runs, verdict};

use super::exercise::Exercised;
use super::planning::Planned;
use super::records;
use super::stage::Stage;
use super::survey::Survey;

/// The run's record, verdict and all.
pub(super) fn decide(
    run: &Stage<'_>,
    survey: &Survey,
    planned: &Planned,
    exercised: Exercised,
    tier: TierDecision,
    review: ReviewOutput,
) -> RunRecord {
    let Stage {
        start,
        setup,
        trust,
        history,
        ..
    } = *run;
    let spec = &setup.spec;
    let (checks, criteria, base_findings) =
        item_records(run, &survey.snapshot, planned, &exercised, &review);
    let earlier_digests = history
        .previous
        .as_ref()
        .map(|p| p.subjects.clone())
        .unwrap_or_default();
    let file_digest = |f: &str| survey.snapshot.get(f).map(|e| e.digest.to_hex());
    // Finding memory: ids kept across attempts, dismissals, resolutions.
    // The gate's own findings are decided afresh each run, never remembered.
    let earlier: Vec<Finding> = history
        .previous
        .as_ref()
        .map(|p| {
            p.record
                .findings
                .iter()
                .filter(|f| f.role != guard::GUARD_ROLE)
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let remembered = memory::remember(
        review.findings,
        &earlier,
        &history.dismissed,
        &earlier_digests,
        &file_digest,
    );
    let mut findings = remembered.findings;
    // The gate's own findings: a person's dismissal quiets a warning of
    // them too, until the file under it changes; never a critical.
    let mut own: Vec<Finding> = trust.findings.clone();
    own.extend(survey.protection.findings.iter().cloned());
    own.extend(exercised.tampered);
    own.extend(survey.findings.iter().cloned());
    own.extend(base_findings);
    if let (Some(policy), Some(scored)) = (&spec.policy.mutants, &exercised.mutants) {
        own.extend(super::mutation::findings(policy, scored, &setup.spec_file));
    }
    let (own, own_quiet) = memory::quiet_gate_findings(own, &history.dismissed, &file_digest);
    findings.extend(own);
    sort_worst_first(&mut findings);

    let decision = verdict::decide(&verdict::Inputs {
        checks: &checks,
        criteria: &criteria,
        review: &review.record,
        findings: &findings,
        on_review_unavailable: spec
            .policy
            .on_review_unavailable
            .for_tier(tier.tier.as_str()),
        on_review_cut: spec.policy.on_review_cut.for_tier(tier.tier.as_str()),
        review_incomplete: &review.incomplete,
    });

    let mut record = start.bare(spec, history, decision.verdict, decision.reasons);
    record.base.clone_from(&trust.base);
    record.base_commit.clone_from(&trust.base_commit);
    record.isolation = setup.isolation.record();
    record.base_runs = exercised.base_results.record;
    record.mutants = exercised.mutants.and_then(Result::ok);
    record
        .protected_reference
        .clone_from(&survey.protection.reference);
    record.tier = tier.tier;
    record.tier_reason = tier.reason;
    record.changed_files.clone_from(&survey.changed);
    record.verified = Some(survey.verified.clone());
    record.files_fingerprinted = survey.snapshot.len();
    record.checks = checks;
    record.criteria = criteria;
    record.review = review.record;
    record.findings = findings;
    record.content_digest = survey.snapshot.digest_of(None).to_hex();
    record.previous_bundle = history.previous.as_ref().map(|p| p.bundle_sha256.clone());
    record.finding_fates = remembered.fates;
    let mut dropped = review.dropped;
    dropped.extend(remembered.suppressed);
    dropped.extend(own_quiet);
    record.duplicates = dropped
        .iter()
        .filter(|f| f.lineage.by == Some(FateBy::Dedupe))
        .count();
    record.dropped_findings = dropped;
    record.failures = retry::failures(&record);
    record.routing_override.clone_from(&setup.routing_override);
    record.pages = exercised.page_records;
    let report_passed = |task: &str| {
        let id = spec
            .tasks
            .iter()
            .find(|t| t.id == task)
            .map(gate_specs::Spec::tests_check_id);
        record.checks.iter().any(|c| {
            Some(&c.id) == id.as_ref()
                && matches!(c.status, ItemStatus::Passed | ItemStatus::Carried)
        })
    };
    record.accepted_reports = crate::task_reports::accepted(
        spec,
        &survey.snapshot,
        &history.accepted_reports,
        &report_passed,
    );
    record.qualifier = decision.qualifier;
    record.self_guard = trust.self_guard.clone();

    verdict::escalate_on_doom(
        &mut record,
        &history.failing,
        Thresholds::from(&spec.policy),
    );
    verdict::apply_override(&mut record, &history.overrides);
    record
}

/// The checks' and criteria's records (commands and texts redacted: a key
/// pasted into one must not reach the bundle either), the judge's answers
/// applied, and what the base runs found.
fn item_records(
    run: &Stage<'_>,
    snapshot: &gate_evidence::Snapshot,
    planned: &Planned,
    exercised: &Exercised,
    review: &ReviewOutput,
) -> (Vec<CheckRecord>, Vec<CriterionRecord>, Vec<Finding>) {
    let Stage {
        ctx,
        setup,
        trust,
        history,
        ..
    } = *run;
    let (mut checks, mut criteria) = records::records(
        &setup.spec,
        &planned.plan,
        &exercised.harnessed,
        &review.record,
        history.previous.as_ref(),
        (snapshot, &ctx.workspace),
    );
    for c in &mut checks {
        c.command = planned.redactor.redact(&c.command);
    }
    for c in &mut criteria {
        c.command = c.command.as_deref().map(|t| planned.redactor.redact(t));
        c.text = planned.redactor.redact(&c.text);
    }
    records::apply_judgements(&mut criteria, &review.judgements);
    let base_findings = base_runs::apply(
        &mut criteria,
        &exercised.base_results,
        &setup.spec_file,
        trust.base_commit.as_deref(),
    );
    (checks, criteria, base_findings)
}
