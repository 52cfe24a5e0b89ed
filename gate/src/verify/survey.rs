//! What the run looks at before anything of the workspace runs: the
//! workspace fingerprinted, the change, the house rules, the verifiers
//! compared with their reference (and everything the gate reads made
//! read-only to what it runs), and what the spec's globs cover.

use std::path::{Path, PathBuf};

use gate_evidence::Snapshot;
use gate_review::findings::Finding;
use gate_review::rules::{self, RuleSet};
use gate_specs::InputGlobs;

use crate::config::Context;
use crate::errors::GateError;
use crate::events::{Note, RunEvent};
use crate::{change, coverage, verifiers};

use super::setup::Setup;
use super::stage::Stage;
use super::start::VerifyRequest;
use super::trust::Trust;

/// The workspace as the run found it.
pub(super) struct Survey {
    /// Every file's digest.
    pub snapshot: Snapshot,
    /// The changed files, workspace-relative, the gate's own left out.
    pub changed: Vec<String>,
    /// The house rules.
    pub rule_set: RuleSet,
    /// The verifiers compared with their reference.
    pub protection: verifiers::Protection,
    /// Globs that match nothing, (with a base) files nothing names, and
    /// interpreters in the workspace nothing vouches for.
    pub findings: Vec<Finding>,
    /// Whether a glob of the spec matches no file (no model is asked then).
    pub globs_unmatched: bool,
    /// The programs that run verifiers which the items' `PATH` finds in
    /// the workspace, as they were before the items ran.
    pub interpreters: Vec<crate::interpreters::Interpreter>,
    /// The commit and branch the workspace is at, and how far from it.
    pub verified: crate::record::Verified,
    /// The tasks' reports the change committed: never accepted.
    pub committed_reports: Vec<crate::task_reports::Committed>,
}

/// Surveys the workspace; returns the launcher the items run through
/// beside it (the read-only paths and overlays the survey decided).
pub(super) async fn survey(run: &Stage<'_>) -> Result<(Survey, gate_harness::Launcher), GateError> {
    let Stage {
        ctx,
        req,
        events,
        setup,
        trust,
        history,
        ..
    } = *run;
    let spec = &setup.spec;
    let snapshot = super::harness::fingerprint(ctx, spec, &req.own_files).await?;
    let verified =
        change::verified(&setup.git, &ctx.workspace, &snapshot, &trust.head, &ctx.env).await;
    if let (Some(commit), true) = (&verified.commit, verified.uncommitted > 0) {
        events.emit(RunEvent::Note(Note::Uncommitted {
            files: verified.uncommitted,
            commit: commit.clone(),
        }));
    }
    let changed = changed(ctx, req, setup, trust, &snapshot).await?;
    let committed_reports = committed_reports(run, verified.commit.as_deref()).await;
    // House rules are configuration: a broken rules file stops the run
    // before anything runs.
    let rule_files: Vec<String> = snapshot
        .regular_files()
        .filter(|p| rules::discover::is_rules_file(p))
        .map(str::to_owned)
        .collect();
    let rule_set = RuleSet::load(&ctx.workspace, &rule_files)?;

    // The exam out of the examinee's reach: verifiers compared with the
    // base (or the series' first attempt), and everything the gate reads
    // read-only to what it runs.
    let protection = verifiers::protect(verifiers::Inputs {
        spec,
        base_spec: trust.base_spec.as_ref(),
        workspace: &ctx.workspace,
        snapshot: &snapshot,
        base: trust.base_commit.as_deref().map(|c| (&setup.git, c)),
        previous: history
            .previous
            .as_ref()
            .map(|p| &p.record.protected_reference)
            .filter(|r| trust.base_commit.is_none() && !r.is_empty()),
        base_dir: setup.isolation.base_dir(),
    })
    .await?;
    let config_files: Vec<PathBuf> =
        super::setup::config_files(req, &setup.routing, &setup.prompts)
            .into_iter()
            .map(Path::to_path_buf)
            .collect();
    let mut read_only = config_files.clone();
    read_only.extend(
        rule_set
            .files
            .iter()
            .map(|(path, _)| ctx.workspace.join(path)),
    );
    read_only.push(ctx.workspace.join(".git"));
    read_only.extend(protection.read_only.iter().cloned());
    let launcher = setup
        .isolation
        .items(read_only, protection.overlays.clone());
    let items_path = launcher
        .env()
        .iter()
        .find(|(n, _)| n == "PATH")
        .map(|(_, v)| v.as_os_str());
    let interpreters = crate::interpreters::in_workspace(spec, items_path, &ctx.workspace);
    let unvouched = crate::interpreters::unvouched(
        &interpreters,
        items_path,
        &ctx.workspace,
        &crate::interpreters::Reference {
            git: &setup.git,
            head: verified.commit.as_deref(),
            base: trust.base_commit.as_deref(),
        },
    )
    .await;
    if !protection.unprotected.is_empty() {
        events.emit(RunEvent::Note(Note::Unprotected {
            criteria: protection.unprotected.clone(),
        }));
    }

    // What the spec's globs cover: one that matches no file fails the run;
    // with a base, changed files nothing of the spec names are a warning.
    let mut findings = coverage::unmatched_globs(
        spec,
        &coverage::SpecSource {
            file: &setup.spec_file,
            text: &setup.spec_text,
            format: gate_specs::Format::from_path(&req.spec_path),
        },
        &snapshot,
    );
    let globs_unmatched = !findings.is_empty();
    findings.extend(unprotected(&setup.spec_file, &protection.unprotected));
    findings.extend(unvouched);
    findings.extend(crate::startup_hooks::unvouched(&ctx.workspace));
    findings.extend(committed_reports.iter().map(|c| c.finding.clone()));
    if trust.base.is_some() {
        let mut own = change::relative_to(&ctx.workspace, &config_files);
        own.extend(rule_files.iter().cloned());
        findings.extend(coverage::uncovered_changes(
            spec,
            &setup.spec_file,
            &changed,
            &own,
        ));
    }
    Ok((
        Survey {
            snapshot,
            changed,
            rule_set,
            protection,
            findings,
            globs_unmatched,
            interpreters,
            verified,
            committed_reports,
        },
        launcher,
    ))
}

/// The change: against the base, or (without one) the tasks' paths. The
/// gate's own files are never the change, though git lists them as
/// untracked when nothing ignores them: the state directory (the signing
/// key, the ledger, bundles) and what this run writes its results to.
async fn changed(
    ctx: &Context,
    req: &VerifyRequest,
    setup: &Setup,
    trust: &Trust,
    snapshot: &Snapshot,
) -> Result<Vec<String>, GateError> {
    let task_paths = InputGlobs::new(
        &setup
            .spec
            .tasks
            .iter()
            .flat_map(|t| t.paths.iter())
            .collect::<Vec<_>>(),
    )
    .map_err(|e| GateError::Usage(e.to_string()))?;
    let mut changed = match (&trust.base, &trust.base_commit) {
        (Some(base), Some(commit)) => {
            change::with_base(&setup.git, &ctx.workspace, snapshot, base, commit).await?
        }
        _ => change::by_paths(snapshot, &task_paths),
    };
    let own_paths: Vec<PathBuf> = req
        .own_files
        .iter()
        .cloned()
        .chain(ctx.state_inside_workspace())
        .collect();
    change::leave_out(
        &mut changed,
        &change::relative_to(&ctx.workspace, &own_paths),
    );
    Ok(changed)
}

/// The tasks' reports the change committed, `head` the commit the run
/// verifies.
async fn committed_reports(
    run: &Stage<'_>,
    head: Option<&str>,
) -> Vec<crate::task_reports::Committed> {
    let Stage {
        ctx, setup, trust, ..
    } = *run;
    crate::task_reports::committed(
        &setup.spec,
        &setup.spec_file,
        &setup.git,
        &ctx.workspace,
        head,
        trust.base_commit.as_deref(),
    )
    .await
}

/// A warning, in every output, for the criteria nothing protects: neither
/// a script they name nor a test runner's exam is a file of the workspace.
fn unprotected(spec_file: &str, ids: &[String]) -> Option<Finding> {
    let quoted: Vec<String> = ids.iter().map(|i| format!("`{i}`")).collect();
    let title = match quoted.as_slice() {
        [] => return None,
        [one] => format!(
            "criterion {one} runs no file of the workspace: nothing protects what decides it"
        ),
        many => format!(
            "criteria {} run no file of the workspace: nothing protects what decides them",
            many.join(", ")
        ),
    };
    Some(Finding::raised(
        crate::guard::GUARD_ROLE,
        "warning",
        spec_file.to_owned(),
        None,
        title,
        "Neither a script they name nor a test runner's own exam is a file of the workspace, \
         so a change could alter what decides them unseen; name the files they depend on in \
         `[spec] protected`."
            .to_owned(),
        1.0,
    ))
}
