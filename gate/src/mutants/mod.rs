//! Mutation-scored acceptance criteria: what `gate mutants` and `gate
//! verify` under `[policy] mutants` run.
//!
//! The mutants, their scores and their record are the `gate-mutants`
//! crate's (the change's own lines, parsed per language); this module runs
//! them. The criteria run once on
//! the workspace, traced as `gate verify` traces them (`runs`), so each
//! one's reads say which changed files it depends on (`scope`); each
//! mutant is then written into a copy of the workspace of its own
//! (`copy`), shown where the workspace is, and only the criteria that read
//! its file run against it, with the checks they run after, through the
//! same harness and sandbox. `lines` reads the changed lines.

mod copy;
mod lines;
mod runs;
mod scope;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use gate_evidence::Snapshot;
use gate_harness::{Action, ItemKind, ItemResult, Status as ItemStatus};
use gate_mutants::report::{self, Document, MutantRecord, Survivor};
use gate_mutants::score::{self, Outcome};
use gate_mutants::{Language, Mutant, Status};
use gate_specs::{InputGlobs, Spec};

use crate::config::Context;
use crate::errors::GateError;
use crate::git::Git;
use crate::interrupt::Interrupt;
use crate::isolation::Isolation;
use crate::plan;

/// What scoring a change's criteria by its mutants needs.
pub(crate) struct Inputs<'a> {
    /// The run's context.
    pub ctx: &'a Context,
    /// The spec.
    pub spec: &'a Spec,
    /// The run's isolation.
    pub isolation: &'a Isolation,
    /// The gate's own git.
    pub git: &'a Git,
    /// The workspace's files now.
    pub snapshot: &'a Snapshot,
    /// The commit the change is measured from (the merge-base).
    pub base_commit: &'a str,
    /// The changed files, workspace-relative.
    pub changed: &'a [String],
    /// Only this task's criteria and files.
    pub task: Option<&'a str>,
    /// At most this many mutants run.
    pub max: Option<usize>,
    /// Each criterion's time limit against a mutant.
    pub timeout: Option<Duration>,
    /// Every criterion runs against every mutant, whatever it read.
    pub unscoped: bool,
    /// Stops the runs.
    pub interrupt: &'a Interrupt,
    /// The criteria's results on the workspace, when they already ran
    /// traced (`gate verify`): not run again.
    pub unmutated: Option<&'a HashMap<String, ItemResult>>,
    /// Where progress goes (one line each: what runs, each mutant's fate).
    pub progress: &'a (dyn Fn(&str) + Sync),
}

/// The criteria (and task tests run as commands) scored: every one, or
/// the task's.
fn scored_items(spec: &Spec, plan: &plan::Plan, task: Option<&str>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for t in spec
        .tasks
        .iter()
        .filter(|t| task.is_none_or(|id| t.id == id))
    {
        for c in t.criteria.iter().filter(|c| c.run.is_some()) {
            out.insert(c.id.clone(), t.id.clone());
        }
        let tests = format!("{}.tests", t.id);
        let runs = plan.items.iter().any(|i| {
            i.id == tests
                && i.kind == ItemKind::TaskTests
                && i.work
                    .as_ref()
                    .is_some_and(|w| matches!(w.action, Action::Command { .. }))
        });
        if runs {
            out.insert(tests, t.id.clone());
        }
    }
    out
}

/// The changed files mutants are made of, with their text: a language the
/// engine parses, not a test or a generated file, not the spec, under the
/// task's `paths` when one is named; and the other changed files (under
/// the task's `paths`) with why none is made of them.
fn mutable_files(inputs: &Inputs<'_>) -> (Vec<(String, String)>, BTreeMap<String, String>) {
    let task_paths = inputs.task.and_then(|id| {
        let task = inputs.spec.tasks.iter().find(|t| t.id == id)?;
        InputGlobs::new(&task.paths).ok()
    });
    let mut files = Vec::new();
    let mut not_mutated = BTreeMap::new();
    for f in inputs
        .changed
        .iter()
        .filter(|f| task_paths.as_ref().is_none_or(|p| p.is_match(f)))
    {
        let why = if Language::of(f).is_none() {
            NO_GRAMMAR.to_owned()
        } else if let Some(text) = copy::read_regular(&inputs.ctx.workspace, f) {
            if let Some(why) = gate_mutants::language::never_mutated(f, &text) {
                why.to_owned()
            } else {
                files.push((f.clone(), text));
                continue;
            }
        } else {
            "a link, gone, or not a regular UTF-8 file".to_owned()
        };
        not_mutated.insert(f.clone(), why);
    }
    (files, not_mutated)
}

/// Why a changed file in no language the engine parses has no mutant.
pub(crate) const NO_GRAMMAR: &str = "no grammar for its language";

/// The mutants of each file's changed lines, with the file's text; a file
/// that does not parse goes to `not_mutated` with why.
fn make<'a>(
    files: &'a [(String, String)],
    lines: &gate_mutants::diff::ChangedLines,
    not_mutated: &mut BTreeMap<String, String>,
) -> Vec<(Mutant, &'a str)> {
    let mut made = Vec::new();
    for (file, text) in files {
        let (Some(lang), Some(changed)) = (Language::of(file), lines.get(file)) else {
            continue;
        };
        match gate_mutants::generate(file, lang, text, changed) {
            Ok(found) => made.extend(found.into_iter().map(|m| (m, text.as_str()))),
            Err(e) => {
                not_mutated.insert(file.clone(), format!("does not parse: {e}"));
            }
        }
    }
    made
}

/// Makes the mutants of the change's own lines, runs each against the
/// criteria that read its file, and scores the criteria and tasks.
pub(crate) async fn score(inputs: Inputs<'_>) -> Result<Document, GateError> {
    let plan = plan::first_attempt(inputs.spec, inputs.snapshot);
    let scored = scored_items(inputs.spec, &plan, inputs.task);
    let (files, mut not_mutated) = mutable_files(&inputs);
    let lines = lines::changed(
        inputs.git,
        &inputs.ctx.workspace,
        inputs.base_commit,
        &files,
    )
    .await
    .map_err(|reason| GateError::Base {
        base: inputs.base_commit.to_owned(),
        reason,
    })?;
    let made = make(&files, &lines, &mut not_mutated);
    let runner = runs::Runner {
        plan: &plan,
        isolation: inputs.isolation,
        workspace: &inputs.ctx.workspace,
        output_cap: usize::try_from(inputs.spec.policy.output_cap_bytes).unwrap_or(usize::MAX),
        interrupt: inputs.interrupt,
        timeout: inputs.timeout,
        not_copied: not_copied(inputs.ctx),
    };
    let ids: BTreeSet<String> = scored.keys().cloned().collect();
    // What the criteria read on the change itself: the run's results where
    // they ran in it (a retry carries some), the rest run now, traced.
    let mut unmutated: HashMap<String, ItemResult> = inputs.unmutated.cloned().unwrap_or_default();
    let missing: BTreeSet<String> = ids
        .iter()
        .filter(|id| !unmutated.contains_key(*id))
        .cloned()
        .collect();
    if !missing.is_empty() && made.iter().any(|(m, _)| m.set_apart.is_none()) {
        (inputs.progress)(&format!(
            "running {} criteria on the change, traced",
            missing.len()
        ));
        unmutated.extend(runner.on_workspace(&missing).await?);
    }
    if let Some(failing) = ids.iter().find(|id| {
        unmutated
            .get(*id)
            .is_some_and(|r| r.status != ItemStatus::Passed)
    }) {
        return Err(GateError::Unavailable(format!(
            "criterion `{failing}` does not pass on the change itself: mutants score \
             criteria that pass"
        )));
    }
    let scope = scope::Scope::of(inputs.spec, &plan, &ids, &unmutated);
    let runnable = made.iter().filter(|(m, _)| m.set_apart.is_none()).count();
    let limit = inputs.max.unwrap_or(usize::MAX);
    let mut records = Vec::new();
    let mut outcomes = Vec::new();
    let (mut run, mut left_out) = (0usize, 0usize);
    for (mutant, text) in &made {
        let mut record = MutantRecord::of(mutant);
        if mutant.set_apart.is_some() {
            records.push(record);
            continue;
        }
        if run >= limit {
            left_out += 1;
            continue;
        }
        run += 1;
        let criteria = if inputs.unscoped {
            ids.clone()
        } else {
            scope.criteria_for(&mutant.file)
        };
        if criteria.is_empty() {
            record.why = Some("no criterion read its file".to_owned());
            records.push(record);
            continue;
        }
        let outcome = runner
            .on_mutant(&criteria, &mutant.file, &mutant.apply(text))
            .await?;
        if outcome.status == Status::NotRun {
            return Err(GateError::Unavailable(format!(
                "the criteria did not run against {}: the run was interrupted",
                mutant.describe()
            )));
        }
        (inputs.progress)(&format!(
            "mutant {run}/{} {}: {}",
            runnable.min(limit),
            mutant.describe(),
            outcome.status.as_str()
        ));
        record.status = outcome.status;
        record.killed_by = outcome.killed_by.iter().cloned().collect();
        record.ran = outcome.ran.iter().cloned().collect();
        if outcome.status == Status::Unviable {
            record.why =
                Some("a check the criteria run after failed: it does not build".to_owned());
        }
        records.push(record);
        outcomes.push(outcome);
    }
    let mut doc = document(
        &inputs, &scored, &scope, files, records, &outcomes, left_out,
    );
    doc.not_mutated = not_mutated;
    Ok(doc)
}

/// What a mutant's copy leaves out: the repository and the gate's state.
fn not_copied(ctx: &Context) -> Vec<std::path::PathBuf> {
    let mut out = vec![std::path::PathBuf::from(".git")];
    if let Some(state) = ctx.state_inside_workspace()
        && let Ok(rel) = state.strip_prefix(&ctx.workspace)
    {
        out.push(rel.to_path_buf());
    }
    out
}

/// The document: the mutants, the tallies (every scored criterion and task
/// named, at zero when no mutant reached it), the survivors as findings.
fn document(
    inputs: &Inputs<'_>,
    scored: &BTreeMap<String, String>,
    scope: &scope::Scope,
    files: Vec<(String, String)>,
    mutants: Vec<MutantRecord>,
    outcomes: &[Outcome],
    left_out: usize,
) -> Document {
    let mut criteria = score::by_criterion(outcomes);
    let mut tasks = score::by_group(outcomes, |id| scored.get(id).map(String::as_str));
    for (id, task) in scored {
        criteria.entry(id.clone()).or_default();
        tasks.entry(task.clone()).or_default();
    }
    let findings = mutants
        .iter()
        .filter(|m| m.status == Status::Survived)
        .map(Survivor::of)
        .collect();
    let mut tools: BTreeMap<String, String> = gate_mutants::language::GRAMMARS
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    tools.insert("gate".to_owned(), env!("CARGO_PKG_VERSION").to_owned());
    Document {
        format_version: report::FORMAT_VERSION,
        base_commit: inputs.base_commit.to_owned(),
        files: files.into_iter().map(|(f, _)| f).collect(),
        total: score::overall(outcomes),
        mutants,
        left_out,
        criteria,
        tasks,
        untraced: scope.untraced(),
        not_mutated: BTreeMap::new(),
        findings,
        tools,
    }
}
