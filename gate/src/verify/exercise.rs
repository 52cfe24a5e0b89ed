//! The runs: the base's first (criteria that ask for it, in a checkout of
//! the gate's own, gone before anything of the change runs), then the
//! change's cross-checks and criteria, then the workspace looked at again.

use gate_specs::InputGlobs;
use std::collections::{BTreeMap, HashSet};

use gate_review::findings::Finding;
use gate_review::review::design_rules::PageShots;
use gate_review::rules::RuleSet;

use super::tested::Tested;
use crate::base_runs;
use crate::errors::GateError;
use crate::events::{Note, RunEvent};
use crate::interrupt::Interrupt;
use crate::pages;
use crate::record::PageRecord;
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
    /// What those files held when the items started, where it is known.
    pub tested: Tested,
    /// The pages as the record keeps them.
    pub page_records: Vec<PageRecord>,
    /// Pages whose check passed, with their screenshots, for review.
    pub page_shots: Vec<PageShots>,
    /// The criteria's mutation scoring (`[policy] mutants`), when it ran
    /// (`Err` with why it could not).
    pub mutants: Option<Result<Box<gate_mutants::report::Document>, String>>,
}

/// The paths each criterion read on the series' previous attempt, by
/// criterion id (listings and names relative to an unknown folder left
/// out).
fn previous_reads(history: &crate::retry::History) -> BTreeMap<String, Vec<String>> {
    let Some(previous) = &history.previous else {
        return BTreeMap::new();
    };
    previous
        .record
        .criteria
        .iter()
        .filter_map(|c| {
            let read = c
                .observed
                .as_ref()?
                .read
                .keys()
                .filter(|k| !k.ends_with('/') && !k.starts_with("*/"))
                .cloned()
                .collect();
            Some((c.id.clone(), read))
        })
        .collect()
}

/// Runs the base's criteria, then the change's plan. A verifier that did
/// not exist when its item was to start, or a base already broken for a
/// pass-to-pass criterion, is the spec's fault (exit 2).
pub(super) async fn exercise(
    run: &Stage<'_>,
    survey: &Survey,
    planned: &mut Planned,
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
        history,
        ..
    } = *run;
    let spec = &setup.spec;
    let mut base_ledger = if trust.base_commit.is_some() {
        crate::attest::open_ledger(ctx).ok()
    } else {
        None
    };
    // The commit the workspace is at, before anything of it runs: what a
    // file the items change held is recovered from there.
    let head = setup.git.head(&ctx.workspace).await.ok();
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
        previous_reads: previous_reads(history),
        cache_dir: ctx.base_cache_dir(),
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
    let (harnessed, after) = rounds(run, survey, planned, launcher, interrupt).await?;
    let tested = Tested::recover(
        &setup.git,
        &ctx.workspace,
        head.as_deref(),
        &survey.snapshot,
        &after,
    )
    .await;
    let mut tampered = tamper_findings(
        &survey.snapshot,
        &after,
        &Guarded {
            spec_file: &setup.spec_file,
            protection: &survey.protection,
            rule_set: &survey.rule_set,
            task_paths: &task_paths(spec),
            tested: &tested,
        },
    );
    tampered.extend(crate::interpreters::replaced(
        &survey.interpreters,
        &ctx.workspace,
    ));
    // Start-up code an item left in an environment of the workspace.
    // Start-up code an item wrote and removed before the run ended.
    tampered.extend(crate::startup_hooks::written_and_gone(
        &ctx.workspace,
        harnessed.results.iter().flat_map(|(id, r)| {
            r.observed
                .as_deref()
                .into_iter()
                .flat_map(|a| a.written.iter())
                .map(move |p| (id.as_str(), p.as_str()))
        }),
    ));
    tampered.extend(crate::startup_hooks::new_since(
        &survey.findings,
        crate::startup_hooks::unvouched(&ctx.workspace),
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
        tested,
        page_records,
        page_shots,
        mutants: None,
    })
}

/// Runs the plan, then, on a retry, the carried items whose reads the
/// items just run changed (an ignored file written, a file probed for
/// made), round after round until none is left: each round only takes
/// carried items, so this ends. Returns the results and the workspace as
/// the items left it.
async fn rounds(
    run: &Stage<'_>,
    survey: &Survey,
    planned: &mut Planned,
    launcher: gate_harness::Launcher,
    interrupt: &Interrupt,
) -> Result<(Harnessed, gate_evidence::Snapshot), GateError> {
    let Stage {
        ctx,
        req,
        events,
        start,
        setup,
        trust,
        history,
        ..
    } = *run;
    let spec = &setup.spec;
    // Each item that starts a process gets a `/tmp`, `/var/tmp` and home
    // of its own when it runs, kept for later rounds.
    let mut launchers = harness::Launchers::new();
    let runs_now: HashSet<&str> = planned
        .plan
        .items
        .iter()
        .filter(|i| i.decision.runs())
        .map(|i| i.id.as_str())
        .collect();
    harness::make_folders(
        &planned.plan,
        &setup.isolation,
        &launcher,
        |id| runs_now.contains(id),
        &mut launchers,
    )?;
    let input = harness::HarnessInput {
        ctx,
        events,
        spec,
        snapshot: &survey.snapshot,
        has_base: trust.base.is_some(),
        changed: &survey.changed,
        redact: planned.redact.clone(),
        interrupt,
        required: &survey.protection.required,
        run_clock: start.clock,
    };
    let mut harnessed =
        harness::run(&input, &planned.plan, (launcher.clone(), &launchers), None).await?;
    // What the items changed of the fingerprinted workspace.
    let mut after = harness::fingerprint(ctx, spec, &req.own_files).await?;
    while let Some(previous) = history.previous.as_ref().filter(|_| !req.full) {
        if harnessed.interrupted {
            break;
        }
        let tree = crate::observed::Tree {
            snapshot: &after,
            workspace: &ctx.workspace,
        };
        let now = crate::retry::delta::recheck(&mut planned.plan, spec, previous, tree);
        if now.is_empty() {
            break;
        }
        events.emit(RunEvent::Note(Note::Rechecking {
            items: now.iter().cloned().collect(),
        }));
        harness::make_folders(
            &planned.plan,
            &setup.isolation,
            &launcher,
            |id| now.contains(id),
            &mut launchers,
        )?;
        let again = Some((&now, &harnessed.results));
        let more =
            harness::run(&input, &planned.plan, (launcher.clone(), &launchers), again).await?;
        harnessed.results.extend(more.results);
        harnessed.started_ms.extend(more.started_ms);
        harnessed.interrupted |= more.interrupted;
        after = harness::fingerprint(ctx, spec, &req.own_files).await?;
    }
    if let Some(why) = harnessed
        .results
        .values()
        .find_map(|r| r.spec_error.clone())
    {
        return Err(GateError::Usage(format!("{}: {why}", setup.spec_file)));
    }
    Ok((harnessed, after))
}

/// What decides how grave a change the items made is.
struct Guarded<'a> {
    spec_file: &'a str,
    protection: &'a verifiers::Protection,
    rule_set: &'a RuleSet,
    task_paths: &'a InputGlobs,
    tested: &'a Tested,
}

impl Guarded<'_> {
    /// Part of the exam: the spec, house rules, protected verifiers.
    fn exam(&self, path: &str) -> bool {
        path == self.spec_file
            || path == ".git"
            || self.rule_set.files.iter().any(|(p, _)| p == path)
            || self.protection.paths.iter().any(|p| {
                path.strip_prefix(p.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
    }

    /// A file of the change itself: under a task's `paths` and tracked by
    /// git (a build's output, such as `__pycache__`, is not).
    fn task_source(&self, path: &str) -> bool {
        self.task_paths.is_match(path) && self.tested.altered(path).is_some_and(|a| a.tracked)
    }
}

/// The tasks' `paths`, as one set of globs (validated with the spec, so
/// one that does not compile matches nothing here).
fn task_paths(spec: &gate_specs::Spec) -> InputGlobs {
    let globs: Vec<&String> = spec.tasks.iter().flat_map(|t| t.paths.iter()).collect();
    InputGlobs::new(&globs).unwrap_or_else(|_| InputGlobs::new::<&str>(&[]).expect("no globs"))
}

/// Findings for fingerprinted files that changed while the items ran:
/// critical for the spec, the gate's other inputs and protected verifiers
/// (which the sandbox keeps read-only, so only an unisolated run can change
/// them) and for a task's tracked source file (reviewers are then sent
/// what the commit holds, or nothing), a warning for the rest but build
/// output (`crate::build_output`).
fn tamper_findings(
    before: &gate_evidence::Snapshot,
    after: &gate_evidence::Snapshot,
    guarded: &Guarded<'_>,
) -> Vec<Finding> {
    before
        .entries()
        .filter(|(path, entry)| after.get(path).is_none_or(|now| now.digest != entry.digest))
        .filter_map(|(path, _)| {
            let exam = guarded.exam(path);
            let source = !exam && guarded.task_source(path);
            let critical = exam || source;
            // A runner's byte-code or a build's egg-info: its output, not the change.
            if !critical && crate::build_output::is_build_output(path) {
                return None;
            }
            let title = format!("`{path}` changed while the checks ran");
            let detail = if exam {
                "It is part of the exam the change is judged by; what the gate runs must not \
                 change it."
                    .to_owned()
            } else if source {
                let shown = if guarded
                    .tested
                    .altered(path)
                    .is_some_and(|a| a.bytes.is_some())
                {
                    "reviewers are sent the committed version, which the checks ran on"
                } else {
                    "what the checks ran on is not in the commit, so reviewers are not sent it"
                };
                format!(
                    "It is a file of the change: code that rewrites its own source while it runs \
                     hides from review what was tested; {shown}."
                )
            } else {
                "What the gate ran changed a file the change is made of, so the run looked \
                 at something other than the change."
                    .to_owned()
            };
            let severity = if critical { "critical" } else { "warning" };
            Some(Finding {
                id: gate_review::findings::finding_id(guard::GUARD_ROLE, path, &title),
                severity: severity.to_owned(),
                role: guard::GUARD_ROLE.to_owned(),
                file: path.to_owned(),
                line: None,
                title,
                detail,
                confidence: 1.0,
                lineage: gate_review::findings::Lineage::raised(guard::GUARD_ROLE, severity),
            })
        })
        .collect()
}
