//! The runs: the base's first (criteria that ask for it, in a checkout of
//! the gate's own, gone before anything of the change runs), then the
//! change's cross-checks and criteria, then the workspace looked at again.

use crate::base_runs;
use crate::errors::GateError;
use crate::interrupt::Interrupt;
use crate::pages;
use crate::record::{Finding, PageRecord};
use crate::rules::RuleSet;
use crate::rules::design::PageShots;
use crate::{guard, verifiers};

use super::harness::{self, Harnessed};
use super::planning::Planned;
use super::stage::Stage;
use super::survey::Survey;

/// What running the plan gave.
pub(super) struct Exercised {
    /// The base's results, for the criteria that asked for them.
    pub base_results: base_runs::Outcome,
    /// The change's results.
    pub harnessed: Harnessed,
    /// Fingerprinted files the items changed.
    pub tampered: Vec<Finding>,
    /// The pages as the record keeps them.
    pub page_records: Vec<PageRecord>,
    /// Pages whose check passed, with their screenshots, for review.
    pub page_shots: Vec<PageShots>,
}

/// Runs the base's criteria, then the change's plan. A verifier that did
/// not exist when its item was to start, or a base already broken for a
/// pass-to-pass criterion, is the spec's fault (exit 2).
pub(super) async fn exercise(
    run: &Stage<'_>,
    survey: &Survey,
    planned: &Planned,
    launcher: gate_harness::Launcher,
    interrupt: &Interrupt,
) -> Result<Exercised, GateError> {
    let Stage {
        ctx,
        req,
        events,
        start,
        setup,
        trust,
        ..
    } = *run;
    let spec = &setup.spec;
    let mut base_ledger = if trust.base_commit.is_some() {
        crate::attest::open_ledger(ctx).ok()
    } else {
        None
    };
    let base_results = base_runs::decide(base_runs::Inputs {
        spec,
        plan: &planned.plan,
        workspace: &ctx.workspace,
        snapshot: &survey.snapshot,
        base: trust.base_commit.as_deref().map(|c| (&setup.git, c)),
        turned_off: req.no_base_runs,
        isolation: &setup.isolation,
        ledger: base_ledger.as_mut(),
        run_id: &start.run_id,
        redact: planned.redact.clone(),
        interrupt,
        output_cap: usize::try_from(spec.policy.output_cap_bytes).unwrap_or(usize::MAX),
        events,
    })
    .await?;
    drop(base_ledger);
    if let Some(commit) = &trust.base_commit {
        let problems = base_results.spec_problems(spec, commit);
        if !problems.is_empty() {
            return Err(GateError::Usage(format!(
                "{}: {}",
                setup.spec_file,
                problems.join("; ")
            )));
        }
    }
    let harnessed = harness::run(harness::HarnessInput {
        ctx,
        events,
        spec,
        plan: &planned.plan,
        snapshot: &survey.snapshot,
        has_base: trust.base.is_some(),
        changed: &survey.changed,
        redact: planned.redact.clone(),
        interrupt,
        launcher,
        required: &survey.protection.required,
        run_clock: start.clock,
    })
    .await?;
    if let Some(why) = harnessed
        .results
        .values()
        .find_map(|r| r.spec_error.clone())
    {
        return Err(GateError::Usage(format!("{}: {why}", setup.spec_file)));
    }
    // What the items changed of the fingerprinted workspace.
    let after = harness::fingerprint(ctx, spec, &req.own_files).await?;
    let mut tampered = tamper_findings(
        &survey.snapshot,
        &after,
        &setup.spec_file,
        &survey.protection,
        &survey.rule_set,
    );
    tampered.extend(crate::interpreters::replaced(
        &survey.interpreters,
        &ctx.workspace,
    ));
    let (page_records, page_shots) = pages::collect(
        spec,
        &survey.changed,
        &harnessed.results,
        &planned.shots_dir,
    );
    Ok(Exercised {
        base_results,
        harnessed,
        tampered,
        page_records,
        page_shots,
    })
}

/// Findings for fingerprinted files that changed while the items ran:
/// critical for the spec, the gate's other inputs and protected verifiers
/// (which the sandbox keeps read-only, so only an unisolated run can change
/// them), a warning for the rest.
fn tamper_findings(
    before: &gate_evidence::Snapshot,
    after: &gate_evidence::Snapshot,
    spec_file: &str,
    protection: &verifiers::Protection,
    rule_set: &RuleSet,
) -> Vec<Finding> {
    let guarded = |path: &str| {
        path == spec_file
            || path == ".git"
            || rule_set.files.iter().any(|(p, _)| p == path)
            || protection.paths.iter().any(|p| {
                path.strip_prefix(p.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
    };
    before
        .entries()
        .filter(|(path, entry)| after.get(path).is_none_or(|now| now.digest != entry.digest))
        .map(|(path, _)| {
            let critical = guarded(path);
            let title = format!("`{path}` changed while the checks ran");
            Finding {
                id: crate::findings::finding_id(guard::GUARD_ROLE, path, &title),
                severity: if critical { "critical" } else { "warning" }.to_owned(),
                role: guard::GUARD_ROLE.to_owned(),
                file: path.to_owned(),
                line: None,
                title,
                detail: if critical {
                    "It is part of the exam the change is judged by; what the gate runs must not \
                     change it."
                        .to_owned()
                } else {
                    "What the gate ran changed a file the change is made of, so the run looked \
                     at something other than the change."
                        .to_owned()
                },
                confidence: 1.0,
                lineage: crate::record::Lineage::raised(
                    guard::GUARD_ROLE,
                    if critical { "critical" } else { "warning" },
                ),
            }
        })
        .collect()
}
