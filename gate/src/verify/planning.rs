//! The plan: every check, criterion and page, what a retry carries, and the
//! secret values no output may show.

use std::path::PathBuf;

use gate_harness::secrets::Redactor;
use gate_specs::Spec;

use crate::events::PlannedEvent;
use crate::events::{Note, RunEvent};
use crate::pages;
use crate::plan::{self, Plan};
use crate::retry;
use crate::{attest, config};

use super::stage::Stage;
use super::survey::Survey;

/// What the run will do, and what it must not show.
pub(super) struct Planned {
    /// Every item, with what this attempt does with it.
    pub plan: Plan,
    /// Where this run's page screenshots go.
    pub shots_dir: PathBuf,
    /// The secret values of the run's environment.
    pub redact: Vec<String>,
    /// Those values and the secret shapes, as one redactor.
    pub redactor: Redactor,
}

/// Plans the run and says what it will do.
pub(super) fn plan(run: &Stage<'_>, survey: &Survey) -> Planned {
    let Stage {
        ctx,
        req,
        events,
        start,
        setup,
        trust,
        history,
    } = *run;
    let spec = &setup.spec;
    let mut plan = plan::first_attempt(spec, &survey.snapshot);
    // Every page is planned: those the change touches are looked at in a
    // browser, as checks; the others are skipped, with why.
    let shots_dir = pages::shots_dir(&ctx.state_dir, &start.run_id);
    plan.items.extend(pages::plan_items(
        spec,
        &survey.snapshot,
        &survey.changed,
        &pages::Surroundings {
            has_base: trust.base.is_some(),
            out_dir: shots_dir.clone(),
            browser: config::chromium(&ctx.env),
            axe: config::axe_core(&ctx.workspace, &ctx.env),
            env: &ctx.env,
        },
    ));
    retry::delta::apply(
        &mut plan,
        spec,
        crate::observed::Tree {
            snapshot: &survey.snapshot,
            workspace: &ctx.workspace,
        },
        history.previous.as_ref(),
        req.full,
        setup.isolation.record.toolchain.as_deref(),
    );
    mark_stale_reports(&mut plan, spec, survey, history);
    refuse_committed_reports(&mut plan, spec, &survey.committed_reports);
    refuse_reports_into(&mut plan, &attest::secret_paths(ctx, &setup.store));
    let mut secret_names = setup.routing.key_variables();
    secret_names.extend(pages::credential_variables(spec));
    let redact = ctx.env.secret_values(&secret_names);
    let redactor = Redactor::new(&redact);
    events.emit(RunEvent::Planned(planned_events(&plan, spec, &redactor)));
    let reruns = plan.items.iter().filter(|i| i.decision.runs()).count();
    let carried = plan.items.iter().filter(|i| i.decision.carries()).count();
    if history.previous.is_some() && !req.full {
        events.emit(RunEvent::Note(Note::Rerunning {
            rerun: reruns,
            carried,
        }));
    }
    Planned {
        plan,
        shots_dir,
        redact,
        redactor,
    }
}

/// Tells each task's report item why its report is stale, when the spec's
/// runs on this base accepted that content over other task files.
fn mark_stale_reports(plan: &mut Plan, spec: &Spec, survey: &Survey, history: &retry::History) {
    let stale = crate::task_reports::stale(spec, &survey.snapshot, &history.accepted_reports);
    for task in &spec.tasks {
        let Some(why) = stale.get(&task.id) else {
            continue;
        };
        let id = Spec::tests_check_id(task);
        if let Some(gate_harness::Item {
            action: gate_harness::Action::JunitReport { stale, .. },
            ..
        }) = plan
            .items
            .iter_mut()
            .find(|i| i.id == id)
            .and_then(|i| i.work.as_mut())
        {
            *stale = Some(why.clone());
        }
    }
}

/// Fails each task's report item whose report the change committed, with
/// why: such a report is read again (never carried) and never accepted.
fn refuse_committed_reports(
    plan: &mut Plan,
    spec: &Spec,
    committed: &[crate::task_reports::Committed],
) {
    for c in committed {
        let Some(task) = spec.tasks.iter().find(|t| t.id == c.task) else {
            continue;
        };
        let id = Spec::tests_check_id(task);
        let Some(item) = plan.items.iter_mut().find(|i| i.id == id) else {
            continue;
        };
        // A carried item is satisfied for what runs after it; this one
        // only reads a file.
        if item.decision.carries() {
            item.decision = plan::Decision::Run {
                why: "the change commits its report".to_owned(),
            };
        }
        if let Some(gate_harness::Item {
            action: gate_harness::Action::JunitReport { stale, .. },
            ..
        }) = item.work.as_mut()
        {
            *stale = Some(c.why.clone());
        }
    }
}

/// Keeps every task's report out of the gate's state and secrets, wherever
/// a link in the workspace leads by the time it is read.
fn refuse_reports_into(plan: &mut Plan, secrets: &[PathBuf]) {
    for item in plan.items.iter_mut().filter_map(|i| i.work.as_mut()) {
        if let gate_harness::Action::JunitReport { refused, .. } = &mut item.action {
            *refused = secrets.to_vec();
        }
    }
}

/// The plan as events report it, each item with its task and (a
/// criterion) its text.
fn planned_events(
    plan: &plan::Plan,
    spec: &Spec,
    redactor: &gate_harness::secrets::Redactor,
) -> Vec<PlannedEvent> {
    let mut owner: std::collections::HashMap<String, (String, Option<String>)> = spec
        .criteria()
        .map(|(t, c)| (c.id.clone(), (t.id.clone(), Some(redactor.redact(&c.text)))))
        .collect();
    owner.extend(
        spec.tasks
            .iter()
            .filter(|t| t.tests.is_some())
            .map(|t| (Spec::tests_check_id(t), (t.id.clone(), None))),
    );
    plan.items
        .iter()
        .map(|i| {
            let (task, text) = owner.get(&i.id).cloned().unzip();
            PlannedEvent {
                id: i.id.clone(),
                kind: i.kind,
                judged: i.work.is_none(),
                task,
                text: text.flatten(),
                decision: i.decision.clone(),
            }
        })
        .collect()
}
