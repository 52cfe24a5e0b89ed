//! From plan and results to the records of a run, and what its bundle names.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use gate_evidence::Snapshot;
use gate_harness::trace::Accesses;
use gate_harness::{ItemKind, Status};
use gate_review::record::ReviewRecord;
use gate_review::review;
use gate_specs::{InputGlobs, Spec};

use crate::config::Context;
use crate::observed::Observed;
use crate::plan::{Decision, Plan};
use crate::predicate::PlanEntry;
use crate::record::{CheckRecord, CriterionRecord, DecidedBy, ItemStatus, RunRecord};
use crate::retry::delta::Previous;

/// Turns the plan, the harness results and (for carried items) the previous
/// attempt into check and criterion records.
pub(super) fn records(
    spec: &Spec,
    plan: &Plan,
    harnessed: &super::harness::Harnessed,
    review: &ReviewRecord,
    previous: Option<&Previous>,
    (snapshot, workspace): (&Snapshot, &Path),
) -> (Vec<CheckRecord>, Vec<CriterionRecord>) {
    let results = &harnessed.results;
    let observed = observed(spec, harnessed, previous, (snapshot, workspace));
    let interrupted = harnessed.interrupted;
    let tests_of: HashMap<String, &str> = spec
        .tasks
        .iter()
        .filter(|t| t.tests.is_some())
        .map(|t| (Spec::tests_check_id(t), t.id.as_str()))
        .collect();
    let criteria_of: HashMap<&str, (&gate_specs::Task, &gate_specs::Criterion)> = spec
        .criteria()
        .map(|(t, c)| (c.id.as_str(), (t, c)))
        .collect();
    let prev_met: HashMap<&str, Option<f64>> = previous
        .map(|p| {
            p.record
                .criteria
                .iter()
                .map(|c| (c.id.as_str(), c.met))
                .collect()
        })
        .unwrap_or_default();
    let mut checks = Vec::new();
    let mut criteria = Vec::new();
    for item in &plan.items {
        let (carried_from, carried_bundle) = match &item.decision {
            Decision::Carry {
                from_run,
                from_bundle,
            } => (Some(from_run.clone()), Some(from_bundle.clone())),
            Decision::Run { .. } | Decision::Skip { .. } => (None, None),
        };
        let planned_skip = match &item.decision {
            Decision::Skip { why } => Some(why.clone()),
            Decision::Run { .. } | Decision::Carry { .. } => None,
        };
        let result = results.get(&item.id);
        let status = if carried_from.is_some() {
            ItemStatus::Carried
        } else if planned_skip.is_some() {
            ItemStatus::Skipped
        } else {
            result.map_or(ItemStatus::Unverified, |r| match r.status {
                Status::Passed => ItemStatus::Passed,
                Status::Failed => ItemStatus::Failed,
                Status::Skipped if interrupted => ItemStatus::Unverified,
                Status::Skipped => ItemStatus::Skipped,
            })
        };
        let exit_code = result.and_then(|r| r.exit_code);
        let duration_ms = result.map_or(0, |r| gate_review::record::millis(r.duration));
        let started_ms = harnessed.started_ms.get(&item.id).copied();
        let output = result.map(|r| r.output.clone()).unwrap_or_default();
        if item.kind == ItemKind::Criterion {
            let Some((task, c)) = criteria_of.get(item.id.as_str()) else {
                continue;
            };
            let model = item.work.is_none();
            let reason = if let Some(why) = &planned_skip {
                Some(why.clone())
            } else if model && carried_from.is_none() {
                Some(match &review.reason {
                    Some(r) => format!("review did not run ({r})"),
                    None => "the judge gave no answer".to_owned(),
                })
            } else {
                result.and_then(|r| r.reason.clone())
            };
            let met = if carried_from.is_some() {
                prev_met.get(item.id.as_str()).copied().flatten()
            } else {
                None
            };
            criteria.push(CriterionRecord {
                id: item.id.clone(),
                task: task.id.clone(),
                text: c.text.clone(),
                decided_by: if model {
                    DecidedBy::Model
                } else {
                    DecidedBy::Code
                },
                command: (!model).then(|| item.command.clone()),
                status,
                met,
                threshold: model.then(|| c.threshold.unwrap_or(spec.policy.judge_threshold)),
                exit_code,
                duration_ms,
                started_ms,
                inputs_digest: item.inputs_digest.to_hex(),
                carried_from,
                carried_bundle,
                reason,
                output,
                expect: c.expectation(&spec.policy),
                base_status: None,
                observed: observed.get(item.id.as_str()).cloned(),
            });
        } else {
            checks.push(CheckRecord {
                id: item.id.clone(),
                kind: item.kind,
                task: tests_of.get(item.id.as_str()).map(|t| (*t).to_owned()),
                command: item.command.clone(),
                status,
                exit_code,
                duration_ms,
                started_ms,
                inputs_digest: item.inputs_digest.to_hex(),
                carried_from,
                carried_bundle,
                reason: planned_skip.or_else(|| result.and_then(|r| r.reason.clone())),
                output,
                locations: result.map(|r| r.locations.clone()).unwrap_or_default(),
                observed: observed.get(item.id.as_str()).cloned(),
            });
        }
    }
    (checks, criteria)
}

/// What each item was seen to read: from this run's trace for the items
/// that ran, and as the run that verified it recorded for those carried
/// (so the next attempt can still tell what they depend on).
fn observed(
    spec: &Spec,
    harnessed: &super::harness::Harnessed,
    previous: Option<&Previous>,
    (snapshot, workspace): (&Snapshot, &Path),
) -> HashMap<String, Observed> {
    let (results, started_ms) = (&harnessed.results, &harnessed.started_ms);
    let commands = commands(spec);
    // What each read, less the caches that do not decide its result.
    let settled: HashMap<&str, Accesses> = results
        .iter()
        .filter_map(|(id, r)| {
            let mut accesses = r.observed.as_deref()?.clone();
            let command = commands.get(id.as_str()).copied().unwrap_or("");
            super::caches::settle(&mut accesses, command, workspace);
            Some((id.as_str(), accesses))
        })
        .collect();
    let traced: Vec<gate_harness::trace::Traced<'_>> = results
        .iter()
        .filter_map(|(id, r)| {
            let accesses = settled.get(id.as_str())?;
            let start = started_ms.get(id).copied().unwrap_or(0);
            let end = start.saturating_add(gate_review::record::millis(r.duration));
            Some((id.as_str(), accesses, (start, end)))
        })
        .collect();
    let fed = gate_harness::trace::fed_by(&traced);
    let made = crate::observed::links_made(&traced, workspace);
    let none = BTreeSet::new();
    let mut out: HashMap<String, Observed> = traced
        .iter()
        .map(|(id, accesses, _)| {
            let fed_by = fed.get(id).unwrap_or(&none);
            let mut observed = Observed::new(accesses, snapshot, (workspace, &made), fed_by);
            if observed.incomplete.is_none() {
                observed.incomplete.clone_from(&made.leads_back);
            }
            ((*id).to_owned(), observed)
        })
        .collect();
    if let Some(previous) = previous {
        let earlier = previous
            .record
            .checks
            .iter()
            .map(|c| (&c.id, &c.observed))
            .chain(
                previous
                    .record
                    .criteria
                    .iter()
                    .map(|c| (&c.id, &c.observed)),
            );
        for (id, observed) in earlier {
            if let Some(observed) = observed
                && !results.contains_key(id)
            {
                out.insert(id.clone(), observed.clone());
            }
        }
    }
    note_outside(spec, &mut out);
    out
}

/// Each item's command line, by id.
fn commands(spec: &Spec) -> HashMap<String, &str> {
    let checks = spec.checks.iter().map(|c| (c.id.clone(), c.run.as_str()));
    let tests = spec.tasks.iter().filter_map(|t| {
        let run = t.tests.as_ref()?.run.as_deref()?;
        Some((Spec::tests_check_id(t), run))
    });
    let criteria = spec
        .criteria()
        .filter_map(|(_, c)| Some((c.id.clone(), c.run.as_deref()?)));
    checks.chain(tests).chain(criteria).collect()
}

/// Notes, in each traced item's observation, the files it read beyond
/// what it declares: a check's `inputs`, a criterion's (or its task's
/// `paths`), a task's tests' `paths`. A check without `inputs` declares
/// the whole workspace.
fn note_outside(spec: &Spec, observed: &mut HashMap<String, Observed>) {
    let mut declared: HashMap<String, &[String]> = HashMap::new();
    for check in &spec.checks {
        declared.insert(check.id.clone(), &check.inputs);
    }
    for task in &spec.tasks {
        declared.insert(Spec::tests_check_id(task), &task.paths);
        for criterion in &task.criteria {
            let globs = if criterion.inputs.is_empty() {
                &task.paths
            } else {
                &criterion.inputs
            };
            declared.insert(criterion.id.clone(), globs);
        }
    }
    for (id, o) in observed.iter_mut() {
        if let Some(globs) = declared.get(id.as_str()).filter(|g| !g.is_empty())
            && let Ok(globs) = InputGlobs::new(globs)
        {
            o.note_outside(&globs);
        }
    }
}

/// Records of every item the spec declares, none of them run, each
/// `skipped` with `why`: a run that decided nothing of its own (an
/// escalated series) still lists what it did not look at.
pub(super) fn not_run(spec: &Spec, why: &str) -> (Vec<CheckRecord>, Vec<CriterionRecord>) {
    let mut plan = crate::plan::first_attempt(spec, &Snapshot::default());
    for item in &mut plan.items {
        item.decision = Decision::Skip {
            why: why.to_owned(),
        };
    }
    let review = ReviewRecord::did_not_run(why);
    let harnessed = super::harness::Harnessed {
        results: HashMap::new(),
        interrupted: false,
        started_ms: HashMap::new(),
    };
    let (mut checks, criteria) = records(
        spec,
        &plan,
        &harnessed,
        &review,
        None,
        (&Snapshot::default(), Path::new("")),
    );
    // Pages after the built-ins, where a run that plans them lists them.
    let pages = spec.pages.iter().map(|page| CheckRecord {
        id: page.id.clone(),
        kind: ItemKind::Page,
        task: None,
        command: format!("page {} at 1440×900 and 390×844", page.url),
        status: ItemStatus::Skipped,
        exit_code: None,
        duration_ms: 0,
        started_ms: None,
        inputs_digest: String::new(),
        carried_from: None,
        carried_bundle: None,
        reason: Some(why.to_owned()),
        output: gate_harness::Output::default(),
        locations: Vec::new(),
        observed: None,
    });
    checks.extend(pages);
    (checks, criteria)
}

/// Decides model-judged criteria from the judge's answers.
pub(super) fn apply_judgements(
    criteria: &mut [CriterionRecord],
    judgements: &BTreeMap<String, review::Judgement>,
) {
    for c in criteria
        .iter_mut()
        .filter(|c| c.decided_by == DecidedBy::Model && c.status != ItemStatus::Carried)
    {
        let Some(j) = judgements.get(&c.id) else {
            continue;
        };
        let threshold = c.threshold.unwrap_or(0.8);
        if let Some(met) = j.met {
            c.met = Some(met);
            c.status = if met >= threshold {
                ItemStatus::Passed
            } else {
                ItemStatus::Failed
            };
        } else {
            c.status = ItemStatus::Unverified;
        }
        c.reason = Some(j.why.clone());
    }
}

/// Files a bundle names as subjects: the spec, the routing table, prompt
/// and rules files, every file an item's inputs or a task's paths match,
/// every task's test report, and every file shown to a model — those
/// inside the workspace.
pub(super) fn subject_names(
    ctx: &Context,
    config_files: &[&Path],
    spec: &Spec,
    snapshot: &Snapshot,
    record: &RunRecord,
) -> Vec<String> {
    let mut names = BTreeSet::new();
    for p in config_files {
        if let Ok(rel) = p.strip_prefix(&ctx.workspace) {
            names.insert(rel.to_string_lossy().replace('\\', "/"));
        }
    }
    let globs: Vec<&String> = spec
        .checks
        .iter()
        .flat_map(|c| c.inputs.iter())
        .chain(spec.tasks.iter().flat_map(|t| t.paths.iter()))
        .chain(
            spec.tasks
                .iter()
                .filter_map(|t| t.tests.as_ref()?.report.as_ref()),
        )
        .chain(spec.criteria().flat_map(|(_, c)| c.inputs.iter()))
        .collect();
    if let Ok(globs) = InputGlobs::new(&globs)
        && !globs.is_empty()
    {
        names.extend(
            snapshot
                .regular_files()
                .filter(|p| globs.is_match(p))
                .map(str::to_owned),
        );
    }
    for s in &record.review.specialists {
        names.extend(s.coverage.files.iter().cloned());
    }
    names.into_iter().collect()
}

/// The plan as the bundle records it: each item, what was done with it, why.
pub(super) fn plan_entries(plan: &Plan) -> Vec<PlanEntry> {
    plan.items
        .iter()
        .map(|i| PlanEntry {
            decision: i.decision.clone(),
            id: i.id.clone(),
            inputs_digest: i.inputs_digest.to_hex(),
        })
        .collect()
}
