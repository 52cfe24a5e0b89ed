//! Fail-to-pass evidence: the criteria that ask for it, run on the base.
//!
//! A criterion's pass shows the feature only if it would have failed
//! without the change. With a base commit, each criterion whose expectation
//! (`expect`, else `[policy] expect_default`) is other than `any` — every
//! code-decided one under `base_runs = "always"` — is run on the base: the
//! commit is checked out into a folder of the gate's, outside the
//! workspace, by the gate's own git into a fresh repository that borrows
//! the workspace's objects (so nothing of the workspace's configuration,
//! hooks, filters or attributes applies); the checks the criterion runs
//! `after` and the base's version of its verifiers run there, through the
//! same scheduler, in a sandbox of their own in which that folder is the one
//! writable workspace and the change's workspace is out of sight. A verifier
//! the base does not have (self-certified) is copied in from the change: it
//! runs against the base's code. A criterion that runs such a verifier and
//! says nothing (`any`) is fail-to-pass by definition: a test written with
//! the change must fail without it, so it is run on the base too. All of it happens before any item of the
//! change runs, and the folder is removed before they start, so nothing of
//! the change can reach it.
//!
//! Results are kept in the ledger by base commit, criterion, definition
//! (with the checks it runs after) and verifier digest: a series runs the
//! base once. Only a pass or a failure is kept; a base run that could not
//! run is tried again next time.

mod cache;
pub(crate) mod folder;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gate_evidence::{Digest, Snapshot};
use gate_harness::{ItemResult, RunOptions, Status};
use gate_review::findings::{Finding, Lineage, finding_id};
use gate_specs::{BaseRuns, Expect, Spec};

use crate::errors::GateError;
use crate::events::{EventSink, Note, RunEvent};
use crate::git::{Git, Repository};
use crate::guard::GUARD_ROLE;
use crate::interrupt::Interrupt;
use crate::isolation::Isolation;
use crate::plan::Plan;
use crate::record::{BaseRunsRecord, BaseState, BaseStatus, CriterionRecord, ItemStatus};
use folder::BaseFolder;

/// What deciding the base results needs.
pub(crate) struct Inputs<'a> {
    /// The spec.
    pub spec: &'a Spec,
    /// The run's plan (each item's definition as the harness runs it).
    pub plan: &'a Plan,
    /// The workspace (canonical).
    pub workspace: &'a Path,
    /// Its files now.
    pub snapshot: &'a Snapshot,
    /// The base commit and the gate's git, when there is a base.
    pub base: Option<(&'a Git, &'a str)>,
    /// `--no-base-runs`.
    pub turned_off: bool,
    /// The run's isolation (the base's own sandbox is made from it).
    pub isolation: &'a Isolation,
    /// The ledger the results are kept in, when it can be opened.
    pub ledger: Option<&'a mut gate_evidence::Ledger>,
    /// The run's id (kept with each result it runs).
    pub run_id: &'a str,
    /// Secret values to redact from captured output.
    pub redact: Vec<String>,
    /// Stops the base runs.
    pub interrupt: &'a Interrupt,
    /// Bytes of output kept per item.
    pub output_cap: usize,
    /// Where the run's progress goes.
    pub events: &'a EventSink,
    /// What each criterion read on the series' previous attempt
    /// (workspace-relative paths), by criterion id.
    pub previous_reads: BTreeMap<String, Vec<String>>,
    /// The build cache's folder, when there is one.
    pub cache_dir: Option<PathBuf>,
}

/// The base results of a run, by criterion id.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Each criterion asked of the base (or run there), and its result.
    pub statuses: BTreeMap<String, BaseStatus>,
    /// Criteria that said nothing (`any`) but run a verifier the base does
    /// not have: written with the change, they are fail-to-pass by
    /// definition.
    pub self_certified: BTreeSet<String>,
    /// What the record says of base runs; `None` when no criterion asks.
    pub record: Option<BaseRunsRecord>,
}

/// A criterion to be run on the base, with the key its result is kept under.
struct Wanted {
    id: String,
    definition: String,
    verifiers: String,
    /// Verifier files the base does not have, copied in from the change.
    copies: Vec<String>,
    /// Exam files of its test runner that the change created or altered,
    /// copied in from the change: the base run asks whether the change's
    /// own tests fail without it.
    exam: Vec<String>,
}

impl Outcome {
    /// Pass-to-pass criteria that fail on the base: the spec's problem (the
    /// base was already broken), one sentence each.
    pub(crate) fn spec_problems(&self, spec: &Spec, base: &str) -> Vec<String> {
        spec.criteria()
            .filter(|(_, c)| c.expectation(&spec.policy) == Expect::PassToPass)
            .filter_map(|(_, c)| {
                let s = self.statuses.get(&c.id)?;
                (s.status == BaseState::Failed).then(|| {
                    format!(
                        "criterion `{}` expects pass-to-pass but fails on the base ({}): {}; \
                         the base was already broken, so the criterion cannot show that the \
                         change kept it working",
                        c.id,
                        short(base),
                        s.reason.as_deref().unwrap_or("it failed")
                    )
                })
            })
            .collect()
    }
}

/// Decides each asking criterion's base result: kept in the ledger, run
/// now, or not run (and why).
pub(crate) async fn decide(inputs: Inputs<'_>) -> Result<Outcome, GateError> {
    let spec = inputs.spec;
    let policy = spec.policy.base_runs;
    let asks = |c: &gate_specs::Criterion| match policy {
        BaseRuns::Always => c.run.is_some(),
        BaseRuns::Never | BaseRuns::Expected => c.expectation(&spec.policy) != Expect::Any,
    };
    let asking: Vec<&gate_specs::Criterion> = spec
        .criteria()
        .map(|(_, c)| c)
        .filter(|c| asks(c))
        .collect();
    // A criterion that says nothing may still run a verifier written with
    // the change: found once the base's files are listed, below.
    let unsaid: Vec<&gate_specs::Criterion> = spec
        .criteria()
        .map(|(_, c)| c)
        .filter(|c| c.run.is_some() && c.expectation(&spec.policy) == Expect::Any && !asks(c))
        .collect();
    if asking.is_empty() && (unsaid.is_empty() || inputs.base.is_none()) {
        return Ok(Outcome::default());
    }
    let mut record = BaseRunsRecord {
        policy: policy.as_str().to_owned(),
        turned_off: inputs.turned_off,
        ran: 0,
        reused: 0,
    };
    let not_run = |why: &str| BaseStatus {
        status: BaseState::CouldNotRun,
        reason: Some(why.to_owned()),
        output_digest: None,
        from_run: None,
        output_tail: None,
    };
    let mut statuses = BTreeMap::new();
    let none_ran = |why: &str, record| Outcome {
        statuses: asking
            .iter()
            .map(|c| (c.id.clone(), not_run(why)))
            .collect(),
        record: Some(record),
        ..Outcome::default()
    };
    let Some((git, commit)) = inputs.base else {
        return Ok(none_ran(
            "no base given: pass `--base REV` to run it on the base",
            record,
        ));
    };
    if policy == BaseRuns::Never {
        if asking.is_empty() {
            return Ok(Outcome::default());
        }
        return Ok(none_ran("[policy] base_runs = \"never\"", record));
    }

    let tree = BaseTree::list(git, inputs.workspace, commit).await?;
    let change = Change {
        workspace: inputs.workspace,
        snapshot: inputs.snapshot,
        files: inputs.snapshot.regular_files().collect(),
        previous_reads: &inputs.previous_reads,
    };
    let mut keyed: Vec<Wanted> = asking
        .iter()
        .map(|c| key(spec, c, &tree, &change))
        .collect();
    let mut self_certified = BTreeSet::new();
    for c in unsaid {
        let w = key(spec, c, &tree, &change);
        if !w.copies.is_empty() {
            self_certified.insert(c.id.clone());
            keyed.push(w);
        }
    }
    keep_base_start_up(git, commit, inputs.workspace, &mut keyed).await;
    if keyed.is_empty() {
        return Ok(Outcome::default());
    }
    let wanted = reuse_kept(&inputs, commit, keyed, &mut record, &mut statuses);
    if wanted.is_empty() {
        return Ok(Outcome {
            statuses,
            record: Some(record),
            self_certified,
        });
    }

    announce(inputs.events, wanted.len(), commit);
    let ran = run_on_base(&inputs, git, commit, &tree, &wanted).await;
    let results = match ran {
        Ok(results) => results,
        Err(why) => {
            for w in &wanted {
                statuses.insert(
                    w.id.clone(),
                    not_run(&format!("the base could not be checked out: {why}")),
                );
            }
            return Ok(Outcome {
                statuses,
                record: Some(record),
                self_certified,
            });
        }
    };
    let run_id = inputs.run_id;
    keep_results(
        inputs.ledger,
        commit,
        run_id,
        &wanted,
        &results,
        &mut record,
        &mut statuses,
    );
    name_absent_environments(inputs.workspace, &tree, &wanted, &mut statuses);
    Ok(Outcome {
        statuses,
        record: Some(record),
        self_certified,
    })
}

/// Says how many criteria run on the base.
fn announce(events: &EventSink, count: usize, commit: &str) {
    events.emit(RunEvent::Note(Note::BaseRuns {
        criteria: count,
        commit: commit.to_owned(),
    }));
}

/// The wanted criteria whose base result the ledger keeps (for this
/// commit, definition and verifiers) are not run again; with base runs
/// turned off the rest could not run. Returns what is still to run.
fn reuse_kept(
    inputs: &Inputs<'_>,
    commit: &str,
    keyed: Vec<Wanted>,
    record: &mut BaseRunsRecord,
    statuses: &mut BTreeMap<String, BaseStatus>,
) -> Vec<Wanted> {
    let mut wanted: Vec<Wanted> = Vec::new();
    for w in keyed {
        let kept = match inputs.ledger.as_deref() {
            Some(ledger) => ledger
                .base_result(commit, &w.id, &w.definition, &w.verifiers)
                .unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "cannot read a kept base result");
                    None
                }),
            None => None,
        };
        match kept {
            Some(k) => {
                record.reused += 1;
                statuses.insert(
                    w.id.clone(),
                    BaseStatus {
                        status: if k.status == "passed" {
                            BaseState::Passed
                        } else {
                            BaseState::Failed
                        },
                        reason: k.reason,
                        output_digest: Some(k.output_digest),
                        from_run: Some(k.run_id),
                        output_tail: None,
                    },
                );
            }
            None if inputs.turned_off => {
                statuses.insert(
                    w.id.clone(),
                    BaseStatus {
                        status: BaseState::CouldNotRun,
                        reason: Some("base runs were turned off (`--no-base-runs`)".to_owned()),
                        output_digest: None,
                        from_run: None,
                        output_tail: None,
                    },
                );
            }
            None => wanted.push(w),
        }
    }
    wanted
}

/// Each base run's status, kept in the ledger when it passed or failed so a
/// later attempt of the series does not pay for it again.
fn keep_results(
    mut ledger: Option<&mut gate_evidence::Ledger>,
    commit: &str,
    run_id: &str,
    wanted: &[Wanted],
    results: &HashMap<String, ItemResult>,
    record: &mut BaseRunsRecord,
    statuses: &mut BTreeMap<String, BaseStatus>,
) {
    let now = chrono::Utc::now();
    for w in wanted {
        let status = status_of(results.get(&w.id), run_id);
        record.ran += 1;
        if let (Some(ledger), BaseState::Passed | BaseState::Failed) =
            (ledger.as_deref_mut(), status.status)
        {
            let kept = gate_evidence::ledger::BaseResult {
                base_commit: commit.to_owned(),
                item_id: w.id.clone(),
                definition_digest: w.definition.clone(),
                verifier_digest: w.verifiers.clone(),
                status: status.status.as_str().to_owned(),
                reason: status.reason.clone(),
                output_digest: status.output_digest.clone().unwrap_or_default(),
                run_id: run_id.to_owned(),
                recorded_at: now,
            };
            if let Err(e) = ledger.put_base_result(&kept) {
                tracing::warn!(error = %e, "cannot keep a base result");
            }
        }
        statuses.insert(w.id.clone(), status);
    }
}

/// A criterion's base result from what the harness made of it.
fn status_of(result: Option<&ItemResult>, run_id: &str) -> BaseStatus {
    let Some(r) = result else {
        return BaseStatus {
            status: BaseState::CouldNotRun,
            reason: Some("it was not run on the base".to_owned()),
            output_digest: None,
            from_run: None,
            output_tail: None,
        };
    };
    let ran = |status| BaseStatus {
        status,
        reason: r.reason.clone(),
        output_digest: Some(r.output.digest.clone()),
        from_run: Some(run_id.to_owned()),
        output_tail: Some(r.output.tail.clone()),
    };
    match r.status {
        Status::Passed => BaseStatus {
            reason: None,
            ..ran(BaseState::Passed)
        },
        // Only an exit of its own is a result: a timeout, a signal or a
        // command that could not start says nothing of the base, and nor
        // does an exam that never ran (a missing test target or command).
        Status::Failed if r.exit_code.is_some() && r.spec_error.is_none() => {
            match exam_did_not_run(r.exit_code, &r.output.tail) {
                Some(why) => BaseStatus {
                    status: BaseState::CouldNotRun,
                    reason: Some(format!("{EXAM_DID_NOT_RUN}{why}")),
                    ..ran(BaseState::CouldNotRun)
                },
                None => ran(BaseState::Failed),
            }
        }
        Status::Failed | Status::Skipped => BaseStatus {
            status: BaseState::CouldNotRun,
            reason: Some(
                r.spec_error
                    .clone()
                    .or_else(|| r.reason.clone())
                    .unwrap_or_else(|| "it did not finish".to_owned()),
            ),
            output_digest: (r.status == Status::Failed).then(|| r.output.digest.clone()),
            from_run: None,
            output_tail: (r.status == Status::Failed).then(|| r.output.tail.clone()),
        },
    }
}

/// How the reason of a base run whose runner ran no test starts.
const EXAM_DID_NOT_RUN: &str = "the exam did not run on the base: ";

/// Adds to the reason of each base run whose runner ran no test the
/// workspace's virtual environments that no commit holds: the base's
/// checkout has tracked files only, so a runner started from one of them
/// (`env/bin/python -m pytest`) is missing there, which is the likely why.
fn name_absent_environments(
    workspace: &Path,
    tree: &BaseTree,
    wanted: &[Wanted],
    statuses: &mut BTreeMap<String, BaseStatus>,
) {
    let absent: Vec<String> = crate::startup_hooks::environments(workspace)
        .iter()
        .filter_map(|v| v.strip_prefix(workspace).ok())
        .map(|rel| rel.to_string_lossy().into_owned())
        .filter(|rel| tree.under(rel).is_empty())
        .map(|rel| format!("`{rel}/`"))
        .collect();
    if absent.is_empty() {
        return;
    }
    let named = absent.join(", ");
    for w in wanted {
        let Some(s) = statuses.get_mut(&w.id) else {
            continue;
        };
        if let (BaseState::CouldNotRun, Some(reason)) = (s.status, &s.reason)
            && reason.starts_with(EXAM_DID_NOT_RUN)
        {
            s.reason = Some(format!(
                "{reason}; the workspace's virtual environment {named} is in no commit, so the \
                 base's checkout does not have it"
            ));
        }
    }
}

/// What a runner says when it did not run the exam at all, by exit code
/// and by the words of its output, with how the gate names it. A failure
/// is evidence only when tests ran and failed (or would not compile
/// against the base's code); these are none of that.
const DID_NOT_RUN: [(Option<i32>, &str, &str); 22] = [
    (Some(126), "", "its command cannot be executed"),
    (Some(127), "", "its command is not found"),
    (
        None,
        "no test target named",
        "cargo has no such test target",
    ),
    (None, "no bin target named", "cargo has no such target"),
    (None, "no example target named", "cargo has no such target"),
    (None, "error: no such command", "cargo has no such command"),
    // The change's manifests over the base's code: a member or a
    // dependency the base cannot have is no failure of the exam.
    (
        None,
        "failed to load manifest for workspace member",
        "cargo could not load a workspace member",
    ),
    (
        None,
        "failed to parse manifest at",
        "cargo could not read a manifest",
    ),
    (
        None,
        "no matching package named",
        "cargo could not resolve a dependency",
    ),
    (
        None,
        "failed to select a version for",
        "cargo could not resolve a dependency",
    ),
    (None, "code ETARGET", "npm could not resolve a dependency"),
    (None, "code E404", "npm could not resolve a dependency"),
    (None, "npm error Missing script", "npm has no such script"),
    (None, "npm ERR! Missing script", "npm has no such script"),
    (
        Some(4),
        "ERROR: file or directory not found",
        "pytest found no such file",
    ),
    (Some(5), "no tests ran", "pytest collected no tests"),
    // `-k`/`-m` left nothing to run: pytest's exit 5 says no test was
    // selected, whatever the summary line holds.
    (
        Some(5),
        " deselected",
        "pytest selected no tests: every test it collected was deselected",
    ),
    // `python -m pytest` where the interpreter has no pytest (a workspace
    // environment the base's checkout lacks, say); an import a test fails
    // on reads "No module named 'x'", quoted, and is a failure of the exam.
    (
        Some(1),
        "No module named pytest",
        "its test runner did not start: the Python that ran it has no module `pytest`",
    ),
    (None, "No rule to make target", "make has no such target"),
    (None, "matched no packages", "go found no such package"),
    // A build constraint (one the change added, say) that leaves a package
    // no file to build: nothing was tested, so nothing failed.
    (
        None,
        "build constraints exclude all Go files",
        "go built no file of the package: its build constraints exclude them all",
    ),
    (None, "no Go files in", "go found no Go file in the package"),
];

/// Why a runner's failing exit says nothing of the base, if it does not.
fn exam_did_not_run(exit: Option<i32>, tail: &str) -> Option<&'static str> {
    // pytest's exit 5 with `-qq` prints nothing at all: no test is seen to
    // have run, and a test that failed would have said so.
    if exit == Some(5) && tail.trim().is_empty() {
        return Some(
            "it exited 5 (pytest's exit when no test was collected or selected) and printed nothing",
        );
    }
    DID_NOT_RUN
        .iter()
        .find(|(code, words, _)| {
            code.is_none_or(|c| exit == Some(c)) && (words.is_empty() || tail.contains(words))
        })
        .map(|(_, _, why)| *why)
}

/// The base commit's files, workspace-relative, with their modes and object
/// ids, and where the workspace sits in the repository.
struct BaseTree {
    /// `rev-parse --show-prefix`: the workspace's folder in the repository.
    prefix: String,
    /// Workspace-relative path → "mode oid".
    files: BTreeMap<String, String>,
}

impl BaseTree {
    async fn list(git: &Git, workspace: &Path, commit: &str) -> Result<Self, GateError> {
        let err = |why: String| GateError::Base {
            base: commit.to_owned(),
            reason: why,
        };
        let prefix = git.prefix(workspace).await.map_err(err)?;
        let listing = git
            .run(
                workspace,
                &["ls-tree", "-r", "-z", "--full-tree", commit, "--"],
            )
            .await
            .map_err(err)?;
        let files = crate::git::tree_entries(&listing)
            .into_iter()
            .filter_map(|(path, entry)| {
                let rel = path.strip_prefix(prefix.as_str())?;
                Some((rel.to_owned(), format!("{} {}", entry.mode, entry.id)))
            })
            .collect();
        Ok(Self { prefix, files })
    }

    /// The base's files that `path` is or holds.
    fn under(&self, path: &str) -> Vec<(&str, &str)> {
        let folder = format!("{path}/");
        self.files
            .iter()
            .filter(|(p, _)| *p == path || p.starts_with(&folder))
            .map(|(p, id)| (p.as_str(), id.as_str()))
            .collect()
    }
}

/// The key a criterion's base result is kept under: its definition with
/// the checks it runs after (transitively), and its verifiers as the base
/// run sees them (the base's, or the change's where the base has none).
/// The change's workspace as the run fingerprinted it.
struct Change<'a> {
    workspace: &'a Path,
    snapshot: &'a Snapshot,
    /// Its regular files, for resolving exams.
    files: BTreeSet<&'a str>,
    /// What each criterion read on the previous attempt.
    previous_reads: &'a BTreeMap<String, Vec<String>>,
}

fn key(spec: &Spec, c: &gate_specs::Criterion, tree: &BaseTree, change: &Change<'_>) -> Wanted {
    let snapshot = change.snapshot;
    let mut definition = blake3::Hasher::new();
    definition.update(&serde_json::to_vec(c).unwrap_or_default());
    for check in after_closure(spec, &c.after) {
        if let Some(found) = spec.checks.iter().find(|k| k.id == check) {
            definition.update(b"\0check\0");
            definition.update(&serde_json::to_vec(found).unwrap_or_default());
        } else {
            definition.update(b"\0item\0");
            definition.update(check.as_bytes());
        }
    }
    let mut verifiers = blake3::Hasher::new();
    let mut copies = Vec::new();
    let named = c
        .run
        .as_deref()
        .map(gate_specs::verifier_paths)
        .unwrap_or_default();
    let paths: BTreeSet<String> = named.iter().map(|v| v.path.clone()).collect();
    for path in &paths {
        let at_base = tree.under(path);
        if at_base.is_empty() {
            // Self-certified: the change's copy runs against the base.
            let folder = format!("{path}/");
            for (file, entry) in snapshot
                .entries()
                .filter(|(p, _)| *p == path.as_str() || p.starts_with(&folder))
            {
                verifiers.update(format!("{file}\0change\0{}\n", entry.digest.to_hex()).as_bytes());
                copies.push(file.to_owned());
            }
        } else {
            for (file, id) in at_base {
                verifiers.update(format!("{file}\0base\0{id}\n").as_bytes());
            }
        }
    }
    // Only a fail-to-pass criterion asks whether the change's tests need
    // the change; a pass-to-pass one asks whether the base's still hold.
    let exam = if c.expectation(&spec.policy) == Expect::FailToPass {
        // A file a test runner is given (`pytest tests/test_parser.py`) is
        // part of its exam, not a script the base keeps its own version
        // of: the change's added tests in it must run on the base. A file
        // the base lacks is already among the copies.
        let scripts: BTreeSet<String> = named
            .iter()
            .filter(|v| !v.runner)
            .map(|v| v.path.clone())
            .chain(copies.iter().cloned())
            .collect();
        changed_exam(c, tree, change, &scripts)
    } else {
        Vec::new()
    };
    for file in &exam {
        if let Some(entry) = snapshot.get(file) {
            verifiers.update(format!("{file}\0exam\0{}\n", entry.digest.to_hex()).as_bytes());
        }
    }
    Wanted {
        id: c.id.clone(),
        definition: Digest::from(definition.finalize()).to_hex(),
        verifiers: Digest::from(verifiers.finalize()).to_hex(),
        copies,
        exam,
    }
}

/// The files the base run of `c` takes from the change (beyond the
/// verifiers it runs by path or copies, `verifiers`), each only where the
/// change created it or its content differs from the base's: the exam files of
/// its test runner, the files under test conventions it read on the
/// previous attempt (a test a runner found by itself), and the change's
/// dependency manifests and lock files. A test the change wrote or
/// rewrote runs on the base as the change has it, with the dependencies it
/// needs (as a benchmark applies its test patch and builds the
/// environment), so a pass there shows the test does not need the change,
/// and a failure is not a missing dependency.
fn changed_exam(
    c: &gate_specs::Criterion,
    tree: &BaseTree,
    change: &Change<'_>,
    verifiers: &BTreeSet<String>,
) -> Vec<String> {
    let Some(run) = c.run.as_deref() else {
        return Vec::new();
    };
    let workspace = change.workspace;
    let mut files: BTreeSet<String> = crate::exam::files_now(run, workspace, &change.files)
        .into_iter()
        .collect();
    files.extend(
        change
            .previous_reads
            .get(&c.id)
            .into_iter()
            .flatten()
            .filter(|f| change.files.contains(f.as_str()) && under_test_convention(f))
            .cloned(),
    );
    files.extend(
        change
            .files
            .iter()
            .filter(|f| is_dependency_manifest(f))
            .map(|f| (*f).to_owned()),
    );
    files
        .into_iter()
        .filter(|file| !verifiers.contains(file))
        .filter(|file| match tree.files.get(file.as_str()) {
            None => true,
            Some(entry) => {
                let id = entry.split(' ').nth(1).unwrap_or_default();
                crate::verifiers::blob_id_on_disk(&workspace.join(file), false, id)
                    .is_none_or(|now| now != id)
            }
        })
        .collect()
}

/// The exam files a base run may take from the change: not a Python or Go
/// file whose change adds code that runs at import, package init or the
/// test binary's start (`gate_specs::gain`: a module-level statement,
/// `init()`, `TestMain`, a hook, a build constraint, an exit) — the change's
/// own run holds such an addition critical, and on the base the file stays
/// as the base has it (a new one stays out), so the base's result is never
/// the work of start-up code the change wrote. A file rewritten (old lines
/// altered) counts when its new text holds start-up code at all.
async fn keep_base_start_up(git: &Git, commit: &str, workspace: &Path, wanted: &mut [Wanted]) {
    for w in wanted {
        let exam = std::mem::take(&mut w.exam);
        w.exam = without_start_up_code(git, commit, workspace, exam).await;
    }
}

/// The files of `exam` without those [`keep_base_start_up`] keeps out.
async fn without_start_up_code(
    git: &Git,
    commit: &str,
    workspace: &Path,
    exam: Vec<String>,
) -> Vec<String> {
    let mut kept = Vec::new();
    for file in exam {
        let code = Path::new(&file)
            .extension()
            .is_some_and(|e| e == "py" || e == "go");
        if !code {
            kept.push(file);
            continue;
        }
        let full = workspace.join(&file);
        let Ok(now) = std::fs::read(&full) else {
            kept.push(file);
            continue;
        };
        let was = git.read_at(commit, &full).await.ok().flatten();
        let runs = |g: gate_specs::Gain| matches!(g, gate_specs::Gain::Runs { .. });
        let starts = match &was {
            None => runs(gate_specs::gain(&file, None, &now)),
            Some(was) => match gate_specs::line_fate(was, &now) {
                gate_specs::LineFate::OnlyGained => runs(gate_specs::gain(&file, Some(was), &now)),
                _ => runs(gate_specs::gain(&file, None, &now)),
            },
        };
        if starts {
            tracing::info!(
                file,
                "the base run keeps the base's version of an exam file with start-up code added"
            );
        } else {
            kept.push(file);
        }
    }
    kept
}

/// Whether `path` is where a test runner looks for tests by itself:
/// under `tests/`, `__tests__/` or `spec/`, or named `*_test.go`,
/// `test_*.py` or `*.test.*`.
fn under_test_convention(path: &str) -> bool {
    let (dirs, name) = path.rsplit_once('/').unwrap_or(("", path));
    dirs.split('/')
        .any(|d| matches!(d, "tests" | "__tests__" | "spec"))
        || name.ends_with("_test.go")
        || (name.starts_with("test_") && has_extension(name, "py"))
        || name.contains(".test.")
}

/// Whether `path` names a package's dependencies or pins them.
fn is_dependency_manifest(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    matches!(
        name,
        "Cargo.toml"
            | "Cargo.lock"
            | "package.json"
            | "package-lock.json"
            | "npm-shrinkwrap.json"
            | "yarn.lock"
            | "pnpm-lock.yaml"
            | "pyproject.toml"
            | "poetry.lock"
            | "uv.lock"
            | "Pipfile"
            | "Pipfile.lock"
            | "go.mod"
            | "go.sum"
            | "Gemfile"
            | "Gemfile.lock"
    ) || (name.starts_with("requirements") && has_extension(name, "txt"))
}

/// Whether file `name` ends in `.EXT`.
fn has_extension(name: &str, ext: &str) -> bool {
    Path::new(name)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

/// Every item `after` names, and every item those name, in a stable order.
fn after_closure(spec: &Spec, after: &[String]) -> Vec<String> {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut todo: Vec<String> = after.to_vec();
    while let Some(id) = todo.pop() {
        if !seen.insert(id.clone()) {
            continue;
        }
        if let Some(check) = spec.checks.iter().find(|k| k.id == id) {
            todo.extend(check.after.iter().cloned());
        }
    }
    seen.into_iter().collect()
}

/// Checks the base out, runs the wanted criteria and what they need there,
/// and removes the checkout. The error says why the base could not be
/// checked out.
///
/// Two stages: first the checks the criteria run after (the base's code
/// with the change's dependency manifests), from the build cache when it
/// holds them, which keeps what they leave when it did not; then the
/// change's exam files are copied in and the criteria run, after those
/// checks again when anything was copied (a build tool finds most of its
/// work done). Nothing of the exam is in the checkout while it can reach
/// the cache.
async fn run_on_base(
    inputs: &Inputs<'_>,
    git: &Git,
    commit: &str,
    tree: &BaseTree,
    wanted: &[Wanted],
) -> Result<HashMap<String, ItemResult>, String> {
    let folder = BaseFolder::new()?;
    let root = folder.path().join("tree");
    for sub in ["tree", "tmp", "home"] {
        std::fs::create_dir(folder.path().join(sub)).map_err(|e| e.to_string())?;
    }
    let shown_at = git.repository()?.work_tree().to_path_buf();
    let cwd = root.join(&tree.prefix);
    let stages = Stages::of(inputs, wanted);
    let manifests: BTreeSet<&str> = wanted
        .iter()
        .flat_map(|w| &w.exam)
        .map(String::as_str)
        .filter(|f| is_dependency_manifest(f))
        .collect();
    let key = cache_key(inputs, commit, &shown_at, &stages, &manifests);
    let cache = inputs.cache_dir.as_deref().map(cache::Cache::new);
    let mut warm =
        !stages.checks.is_empty() && cache.as_ref().is_some_and(|c| c.restore(&key, &root));
    if warm {
        let checked = restore_tracked(inputs, git, &root, &manifests, &tree.prefix).await;
        if let Err(e) = checked {
            // A copy git cannot vouch for is not used: a cold checkout.
            tracing::warn!(error = %e, "cannot check a base cache entry's files");
            cache::empty(&root);
            warm = false;
        }
    }
    if !warm {
        checkout(inputs, git, commit, &root).await?;
    }
    for file in &manifests {
        copy_in(inputs.workspace, &cwd, file)?;
    }
    let launcher = Arc::new(
        inputs
            .isolation
            .base_items(&root, &shown_at, folder.path())?,
    );
    // Folders for the items of both stages, in the base's folder: a
    // criterion of the second starts from what a check of the first it
    // runs after left.
    let items = crate::isolation::lineage::new_items(
        inputs.plan,
        |id| stages.checks.contains(id) || stages.exam.contains(id),
        |_| false,
    );
    let launchers = Arc::new(inputs.isolation.private_folders(
        &launcher,
        &items,
        Some(folder.path()),
        &HashMap::new(),
    )?);
    let options = |satisfied| RunOptions {
        workspace: cwd.clone(),
        concurrency: std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
        output_cap: inputs.output_cap,
        files: Arc::new(Vec::new()),
        satisfied,
        redact: Arc::new(inputs.redact.clone()),
        launcher: launcher.clone(),
        launchers: launchers.clone(),
        requires: Arc::new(HashMap::new()),
    };
    let items = |ids: &BTreeSet<String>| -> Vec<gate_harness::Item> {
        inputs
            .plan
            .items
            .iter()
            .filter(|i| ids.contains(&i.id))
            .filter_map(|i| i.work.clone())
            .collect()
    };

    let mut results: HashMap<String, ItemResult> = HashMap::new();
    if !stages.checks.is_empty() {
        let first = gate_harness::run(
            items(&stages.checks),
            options(HashSet::new()),
            None,
            inputs.interrupt.wait(),
        )
        .await
        .map_err(|e| e.to_string())?;
        let all_passed = first.iter().all(|r| r.status == Status::Passed);
        if let (false, true, Some(cache)) = (warm, all_passed, &cache) {
            cache.keep(&key, &root);
        }
        results.extend(first.into_iter().map(|r| (r.id.clone(), r)));
    }

    let first_passed: HashSet<String> = results
        .values()
        .filter(|r| r.status == Status::Passed)
        .map(|r| r.id.clone())
        .collect();
    let mut copied = Vec::new();
    for w in wanted {
        for file in w.copies.iter().chain(&w.exam) {
            if !manifests.contains(file.as_str()) {
                copied.extend(copy_in(inputs.workspace, &cwd, file)?);
            }
        }
    }
    inputs.isolation.hand_over(&copied)?;
    let (runnable, satisfied) = if copied.is_empty() {
        // The tree is as the checks left it: their results stand.
        let (runnable, blocked) = Stages::exam_items(items(&stages.exam), &results);
        results.extend(blocked.into_iter().map(|r| (r.id.clone(), r)));
        (runnable, first_passed.clone())
    } else {
        // A check may build what was copied in (a test target, compiled
        // tests): they run again over it, from the warm tree, so the
        // criteria never meet a build of the base's own exam.
        let all: BTreeSet<String> = stages.checks.union(&stages.exam).cloned().collect();
        results.clear();
        (items(&all), HashSet::new())
    };
    let mut second = gate_harness::run(runnable, options(satisfied), None, inputs.interrupt.wait())
        .await
        .map_err(|e| e.to_string())?;
    explain_exam_breaks(&mut second, &first_passed);
    results.extend(second.into_iter().map(|r| (r.id.clone(), r)));
    drop(folder);
    Ok(results)
}

/// What the build cache's entry for a base run is keyed on: the base, where
/// it is shown, the first stage's checks and the manifests copied in.
fn cache_key<'a>(
    inputs: &'a Inputs<'_>,
    commit: &'a str,
    shown_at: &'a Path,
    stages: &'a Stages,
    manifests: &BTreeSet<&'a str>,
) -> cache::Key<'a> {
    cache::Key {
        commit,
        shown_at,
        checks: stages
            .checks
            .iter()
            .filter_map(|id| inputs.spec.checks.iter().find(|k| &k.id == id))
            .map(|k| (k.id.as_str(), serde_json::to_vec(k).unwrap_or_default()))
            .collect(),
        manifests: manifests
            .iter()
            .map(|f| {
                let digest = inputs.snapshot.get(f).map(|e| e.digest.to_hex());
                (*f, digest.unwrap_or_default())
            })
            .collect(),
    }
}

/// Says why an item was skipped when the check it waited for passed on the
/// base alone and failed once the change's exam files were copied in: the
/// check builds the exam, and the change's exam does not build on the base.
/// That shows nothing of the feature by itself (a check can fail for being
/// run twice), so the base result stays could-not-run, with what to change.
fn explain_exam_breaks(results: &mut [ItemResult], first_passed: &HashSet<String>) {
    let failed: HashSet<String> = results
        .iter()
        .filter(|r| r.status == Status::Failed && first_passed.contains(&r.id))
        .map(|r| r.id.clone())
        .collect();
    for r in results.iter_mut().filter(|r| r.status == Status::Skipped) {
        let root = r
            .reason
            .as_deref()
            .and_then(|why| why.strip_prefix("dependency `"))
            .and_then(|rest| rest.split_once('`'))
            .map(|(id, _)| id.to_owned());
        if let Some(root) = root.filter(|id| failed.contains(id)) {
            r.reason = Some(format!(
                "dependency `{root}` failed on the base once the change's exam files were \
                 copied in, and passed without them: it builds the exam, which does not build \
                 on the base's code; let `{root}` build the code and its dependencies without \
                 the tests (for cargo, `cargo test --no-run --lib`) and the criterion build \
                 its own"
            ));
        }
    }
}

/// The items of a base run in their two stages.
struct Stages {
    /// The checks the criteria run after that neither are nor wait for a
    /// service: they run before the exam is copied in, and what they leave
    /// is what the cache keeps.
    checks: BTreeSet<String>,
    /// The criteria and everything else they run after.
    exam: BTreeSet<String>,
}

impl Stages {
    fn of(inputs: &Inputs<'_>, wanted: &[Wanted]) -> Self {
        let spec = inputs.spec;
        let mut all: BTreeSet<String> = BTreeSet::new();
        for w in wanted {
            let after = spec
                .criteria()
                .find(|(_, c)| c.id == w.id)
                .map(|(_, c)| c.after.clone())
                .unwrap_or_default();
            all.extend(after_closure(spec, &after));
            all.insert(w.id.clone());
        }
        let criteria: BTreeSet<&str> = wanted.iter().map(|w| w.id.as_str()).collect();
        let plain = |id: &str| {
            spec.checks
                .iter()
                .find(|k| k.id == id)
                .filter(|k| k.starts.is_none() && !criteria.contains(id))
        };
        // A check joins the first stage once everything it waits for has.
        let mut checks: BTreeSet<String> = BTreeSet::new();
        loop {
            let before = checks.len();
            for id in &all {
                if let Some(k) = plain(id)
                    && k.after.iter().all(|a| checks.contains(a))
                {
                    checks.insert(id.clone());
                }
            }
            if checks.len() == before {
                break;
            }
        }
        let exam = all.difference(&checks).cloned().collect();
        Self { checks, exam }
    }

    /// The second stage's items that can run, and a skipped result for each
    /// that waits (itself or through another) for a first-stage check that
    /// did not pass, as the scheduler words it.
    fn exam_items(
        items: Vec<gate_harness::Item>,
        first: &HashMap<String, ItemResult>,
    ) -> (Vec<gate_harness::Item>, Vec<ItemResult>) {
        // Item id → the first-stage check whose failure it follows.
        let mut roots: HashMap<String, String> = first
            .values()
            .filter(|r| r.status != Status::Passed)
            .map(|r| (r.id.clone(), r.id.clone()))
            .collect();
        let mut blocked: Vec<ItemResult> = Vec::new();
        let mut runnable = items;
        loop {
            let (stuck, rest): (Vec<_>, Vec<_>) = runnable
                .into_iter()
                .partition(|i| i.after.iter().any(|a| roots.contains_key(a)));
            runnable = rest;
            if stuck.is_empty() {
                break;
            }
            for item in stuck {
                let via = item.after.iter().find(|a| roots.contains_key(*a)).cloned();
                let via = via.unwrap_or_default();
                let root = roots.get(&via).cloned().unwrap_or_else(|| via.clone());
                let reason = if via == root {
                    format!("dependency `{root}` failed")
                } else {
                    format!("dependency `{root}` failed (via `{via}`)")
                };
                roots.insert(item.id.clone(), root);
                blocked.push(ItemResult {
                    id: item.id.clone(),
                    kind: item.kind,
                    status: Status::Skipped,
                    exit_code: None,
                    duration: std::time::Duration::ZERO,
                    reason: Some(reason),
                    output: gate_harness::Output::default(),
                    locations: Vec::new(),
                    spec_error: None,
                    observed: None,
                });
            }
        }
        (runnable, blocked)
    }
}

/// After the cache's copy of the base's checkout: the tracked files are
/// checked against the commit (git hashes each whose times it cannot
/// vouch for), and any that differ are written again from it, except the
/// dependency manifests about to be copied in from the change. Untouched
/// files keep their times, so build output stays fresh.
async fn restore_tracked(
    inputs: &Inputs<'_>,
    git: &Git,
    root: &Path,
    manifests: &BTreeSet<&str>,
    prefix: &str,
) -> Result<(), String> {
    let repository = git.repository()?;
    let objects = repository.objects();
    let base_git = Git::new(
        inputs
            .isolation
            .base_tools(root, &objects, repository.work_tree())?,
        Ok(Repository::own(root)),
    );
    // The workspace's objects may have moved since the entry was kept.
    std::fs::write(
        root.join(".git/objects/info/alternates"),
        format!("{}\n", objects.to_string_lossy()),
    )
    .map_err(|e| e.to_string())?;
    base_git
        .run(root, &["update-index", "-q", "--refresh"])
        .await?;
    let dirty = base_git
        .run(root, &["diff-files", "--name-only", "-z"])
        .await?;
    let rewrite: Vec<String> = dirty
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .filter(|p| {
            p.strip_prefix(prefix)
                .is_none_or(|rel| !manifests.contains(rel))
        })
        .collect();
    for chunk in rewrite.chunks(200) {
        let mut args = vec!["checkout-index", "-f", "--"];
        args.extend(chunk.iter().map(String::as_str));
        base_git.run(root, &args).await?;
    }
    Ok(())
}

/// Checks `commit` out into `root`: a fresh repository (no configuration,
/// hooks or attributes of the workspace's) whose objects are borrowed from
/// the workspace's, read-only.
async fn checkout(inputs: &Inputs<'_>, git: &Git, commit: &str, root: &Path) -> Result<(), String> {
    let repository = git.repository()?;
    let objects = repository.objects();
    let base_git = Git::new(
        inputs
            .isolation
            .base_tools(root, &objects, repository.work_tree())?,
        Ok(Repository::own(root)),
    );
    base_git.init(root, root).await?;
    let info = root.join(".git/objects/info");
    std::fs::create_dir_all(&info).map_err(|e| e.to_string())?;
    std::fs::write(
        info.join("alternates"),
        format!("{}\n", objects.to_string_lossy()),
    )
    .map_err(|e| e.to_string())?;
    base_git
        .run(root, &["read-tree", "-u", "--reset", commit])
        .await?;
    base_git
        .run(root, &["update-ref", "--no-deref", "HEAD", commit])
        .await?;
    Ok(())
}

/// Copies a workspace file into the base's checkout at the same path,
/// unless the checkout's file there has the same content (a file kept from
/// the cache keeps its time). Returns the paths it made or wrote.
fn copy_in(workspace: &Path, cwd: &Path, file: &str) -> Result<Vec<PathBuf>, String> {
    let from = workspace.join(file);
    let to = cwd.join(file);
    let meta = std::fs::symlink_metadata(&from).map_err(|e| format!("{file}: {e}"))?;
    if !meta.is_file() {
        // A link or a folder is never followed out of the workspace.
        return Ok(Vec::new());
    }
    let mut made = Vec::new();
    if let Some(parent) = to.parent() {
        let mut missing = parent;
        while !missing.exists() && missing.starts_with(cwd) {
            made.push(missing.to_path_buf());
            missing = missing.parent().unwrap_or(cwd);
        }
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    let same = std::fs::symlink_metadata(&to).is_ok_and(|m| m.is_file())
        && std::fs::read(&to).ok() == std::fs::read(&from).ok();
    if !same {
        let _ = std::fs::remove_file(&to);
        std::fs::copy(&from, &to).map_err(|e| format!("{file}: {e}"))?;
        std::fs::set_permissions(
            &to,
            std::fs::Permissions::from_mode(meta.permissions().mode()),
        )
        .map_err(|e| format!("{file}: {e}"))?;
        made.push(to);
    }
    Ok(made)
}

/// What the base results mean for the change's criteria: each gets its
/// expectation and base status; a fail-to-pass criterion that passes on
/// the base is a critical finding; a criterion whose expectation went
/// unchecked cannot pass (unverified).
pub(crate) fn apply(
    criteria: &mut [CriterionRecord],
    outcome: &Outcome,
    spec_file: &str,
    base: Option<&str>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    for c in criteria.iter_mut() {
        c.base_status = outcome.statuses.get(&c.id).cloned();
        let self_certified = outcome.self_certified.contains(&c.id);
        if self_certified {
            c.expect = Expect::FailToPass;
        }
        let Some(base_status) = &c.base_status else {
            continue;
        };
        let passed = matches!(c.status, ItemStatus::Passed | ItemStatus::Carried);
        if !passed || c.expect == Expect::Any {
            continue;
        }
        match base_status.status {
            BaseState::Passed if c.expect == Expect::FailToPass => {
                let title = format!(
                    "criterion `{}` passes without the change: it does not show the feature",
                    c.id
                );
                findings.push(Finding {
                    id: finding_id(GUARD_ROLE, &c.id, &title),
                    severity: "critical".to_owned(),
                    role: GUARD_ROLE.to_owned(),
                    file: spec_file.to_owned(),
                    line: None,
                    title,
                    detail: format!(
                        "It {}, but it passed on the base{} as well, so its pass proves \
                         nothing about this change. Make it test what the change adds.",
                        if self_certified {
                            "runs a verifier written with the change, which must fail \
                             without it (fail-to-pass)"
                        } else {
                            "expects fail-to-pass"
                        },
                        base.map(|b| format!(" ({})", short(b))).unwrap_or_default()
                    ),
                    confidence: 1.0,
                    lineage: Lineage::raised(GUARD_ROLE, "critical"),
                });
            }
            BaseState::CouldNotRun => {
                c.status = ItemStatus::Unverified;
                c.reason = Some(format!(
                    "it passed, but `expect = \"{}\"` needs its base result and it could not \
                     run on the base: {}",
                    c.expect.as_str(),
                    base_status.reason.as_deref().unwrap_or("no reason given")
                ));
            }
            BaseState::Passed | BaseState::Failed => {}
        }
    }
    findings
}

/// A commit id's first twelve characters.
fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn criterion(
        status: ItemStatus,
        expect: Expect,
        base: Option<BaseState>,
    ) -> (CriterionRecord, Outcome) {
        let mut c = crate::output::fixture::record().criteria[0].clone();
        c.status = status;
        c.expect = expect;
        let mut outcome = Outcome::default();
        if let Some(state) = base {
            outcome.statuses.insert(
                c.id.clone(),
                BaseStatus {
                    status: state,
                    reason: Some("why".to_owned()),
                    output_digest: None,
                    from_run: None,
                    output_tail: None,
                },
            );
        }
        (c, outcome)
    }

    /// A criterion skipped for a check that passed before the exam was
    /// copied in and failed after says so; one skipped for a check that
    /// failed both times keeps the scheduler's words.
    #[test]
    fn a_check_broken_by_the_exam_is_named() {
        let result = |id: &str, status, reason: Option<&str>| ItemResult {
            id: id.to_owned(),
            kind: gate_harness::ItemKind::Check,
            status,
            exit_code: None,
            duration: std::time::Duration::ZERO,
            reason: reason.map(str::to_owned),
            output: gate_harness::Output::default(),
            locations: Vec::new(),
            spec_error: None,
            observed: None,
        };
        let mut results = vec![
            result("build", Status::Failed, Some("exited with status 101")),
            result("lint", Status::Failed, Some("exited with status 1")),
            result("ttl", Status::Skipped, Some("dependency `build` failed")),
            result("style", Status::Skipped, Some("dependency `lint` failed")),
        ];
        let first_passed: HashSet<String> = ["build".to_owned()].into();
        explain_exam_breaks(&mut results, &first_passed);
        let reason = |i: usize| results[i].reason.clone().unwrap_or_default();
        assert!(
            reason(2).contains("once the change's exam files were copied in"),
            "{}",
            reason(2)
        );
        assert_eq!(reason(3), "dependency `lint` failed");
    }

    /// The verdict rules: what each expectation makes of each pair of
    /// results (the change's status after, and whether a finding is raised).
    #[test]
    fn expectations_against_the_base() {
        use BaseState::{CouldNotRun, Failed, Passed};
        use Expect::{Any, FailToPass, PassToPass};
        let cases = [
            (
                ItemStatus::Passed,
                FailToPass,
                Some(Failed),
                ItemStatus::Passed,
                false,
                Some("fail→pass"),
            ),
            (
                ItemStatus::Passed,
                FailToPass,
                Some(Passed),
                ItemStatus::Passed,
                true,
                Some("pass→pass"),
            ),
            (
                ItemStatus::Failed,
                FailToPass,
                Some(Failed),
                ItemStatus::Failed,
                false,
                Some("fail→fail"),
            ),
            (
                ItemStatus::Failed,
                FailToPass,
                Some(Passed),
                ItemStatus::Failed,
                false,
                Some("pass→fail"),
            ),
            (
                ItemStatus::Passed,
                FailToPass,
                Some(CouldNotRun),
                ItemStatus::Unverified,
                false,
                Some("base could not run"),
            ),
            (
                ItemStatus::Failed,
                FailToPass,
                Some(CouldNotRun),
                ItemStatus::Failed,
                false,
                Some("base could not run"),
            ),
            (
                ItemStatus::Carried,
                FailToPass,
                Some(Passed),
                ItemStatus::Carried,
                true,
                Some("pass→pass"),
            ),
            (
                ItemStatus::Passed,
                PassToPass,
                Some(Passed),
                ItemStatus::Passed,
                false,
                Some("pass→pass"),
            ),
            (
                ItemStatus::Failed,
                PassToPass,
                Some(Passed),
                ItemStatus::Failed,
                false,
                Some("pass→fail"),
            ),
            (
                ItemStatus::Passed,
                PassToPass,
                Some(CouldNotRun),
                ItemStatus::Unverified,
                false,
                Some("base could not run"),
            ),
            (
                ItemStatus::Passed,
                Any,
                Some(Passed),
                ItemStatus::Passed,
                false,
                Some("pass→pass"),
            ),
            (
                ItemStatus::Passed,
                Any,
                Some(CouldNotRun),
                ItemStatus::Passed,
                false,
                Some("base could not run"),
            ),
            (
                ItemStatus::Passed,
                Any,
                None,
                ItemStatus::Passed,
                false,
                None,
            ),
        ];
        for (status, expect, base, after, finding, shown) in cases {
            let (c, outcome) = criterion(status, expect, base);
            let mut all = vec![c];
            let found = apply(&mut all, &outcome, "gate.toml", Some("0123456789abcdef"));
            let case = format!("{status:?} {expect:?} {base:?}");
            assert_eq!(all[0].status, after, "{case}");
            assert_eq!(found.len(), usize::from(finding), "{case}");
            assert_eq!(all[0].base_transition().as_deref(), shown, "{case}");
            if finding {
                assert_eq!(found[0].severity, "critical");
                assert!(
                    found[0].title.contains("passes without the change"),
                    "{case}"
                );
            }
        }
    }

    /// What a build left read-only (a Go module cache does) goes too.
    /// A runner's failing exit that ran no test says nothing of the base.
    #[test]
    fn an_exam_that_never_ran_is_no_base_result() {
        let cases: [(Option<i32>, &str, Option<&str>); 21] = [
            (
                Some(127),
                "sh: 1: cargo-nextest: not found",
                Some("its command is not found"),
            ),
            (
                Some(101),
                "error: no test target named `ttl` in default-run packages",
                Some("cargo has no such test target"),
            ),
            (
                Some(1),
                "npm error Missing script: \"e2e\"",
                Some("npm has no such script"),
            ),
            (
                Some(4),
                "ERROR: file or directory not found: tests/test_ttl.py",
                Some("pytest found no such file"),
            ),
            (
                Some(5),
                "no tests ran in 0.01s",
                Some("pytest collected no tests"),
            ),
            (
                Some(1),
                "package example.com/app/acceptance: build constraints exclude all Go files in /w/acceptance",
                Some("go built no file of the package: its build constraints exclude them all"),
            ),
            (
                Some(2),
                "make: *** No rule to make target 'ttl'.  Stop.",
                Some("make has no such target"),
            ),
            (
                Some(101),
                "test ttl ... FAILED\ntest result: FAILED. 0 passed; 1 failed",
                None,
            ),
            (
                Some(1),
                "E   AssertionError: assert 'ms' == 's'\n1 failed in 0.02s",
                None,
            ),
            (Some(5), "exit 5 of a script of its own", None),
            (
                Some(5),
                "\n",
                Some(
                    "it exited 5 (pytest's exit when no test was collected or selected) and printed nothing",
                ),
            ),
            (Some(1), "", None),
            (
                Some(5),
                "77 deselected in 0.31s",
                Some("pytest selected no tests: every test it collected was deselected"),
            ),
            (
                Some(1),
                "FAILED tests/test_ttl.py::test_ttl\n1 failed, 3 deselected in 0.02s",
                None,
            ),
            (
                Some(1),
                "/w/env/bin/python: No module named pytest",
                Some(
                    "its test runner did not start: the Python that ran it has no module `pytest`",
                ),
            ),
            (
                Some(1),
                "E   ModuleNotFoundError: No module named 'pytest_ttl'\n1 error in 0.1s",
                None,
            ),
            (
                Some(2),
                "E   ModuleNotFoundError: No module named 'app.ttl'\n1 error in 0.1s",
                None,
            ),
            (
                Some(127),
                "sh: 1: env/bin/python: not found",
                Some("its command is not found"),
            ),
            (
                Some(101),
                "error: failed to load manifest for workspace member `/w/crates/new`",
                Some("cargo could not load a workspace member"),
            ),
            (
                Some(101),
                "error: no matching package named `newdep` found",
                Some("cargo could not resolve a dependency"),
            ),
            (
                Some(1),
                "npm error code ETARGET\nnpm error notarget No matching version",
                Some("npm could not resolve a dependency"),
            ),
        ];
        for (exit, tail, want) in cases {
            assert_eq!(exam_did_not_run(exit, tail), want, "{tail}");
        }
    }

    #[test]
    fn what_a_base_run_takes_from_the_change_by_name() {
        // (path, under a test convention, a dependency manifest)
        let cases = [
            ("tests/ttl.rs", true, false),
            ("crates/a/tests/common/mod.rs", true, false),
            ("src/__tests__/cart.js", true, false),
            ("spec/models/user_spec.rb", true, false),
            ("pkg/ttl_test.go", true, false),
            ("test_ttl.py", true, false),
            ("src/cart.test.ts", true, false),
            ("src/ttl.rs", false, false),
            ("src/testing.py", false, false),
            ("Cargo.toml", false, true),
            ("crates/a/Cargo.lock", false, true),
            ("web/package-lock.json", false, true),
            ("requirements-dev.txt", false, true),
            ("go.sum", false, true),
            ("docs/requirements.md", false, false),
        ];
        for (path, test, manifest) in cases {
            assert_eq!(under_test_convention(path), test, "{path}");
            assert_eq!(is_dependency_manifest(path), manifest, "{path}");
        }
    }

    #[test]
    fn only_an_exit_of_its_own_is_a_base_result() {
        let result = |status, exit_code: Option<i32>, reason: &str| ItemResult {
            id: "c".into(),
            kind: gate_harness::ItemKind::Criterion,
            status,
            exit_code,
            duration: std::time::Duration::ZERO,
            reason: Some(reason.to_owned()),
            output: gate_harness::Output::default(),
            locations: Vec::new(),
            spec_error: None,
            observed: None,
        };
        let cases = [
            (result(Status::Passed, Some(0), ""), BaseState::Passed),
            (
                result(Status::Failed, Some(1), "exited with status 1"),
                BaseState::Failed,
            ),
            (
                result(Status::Failed, None, "timed out after 5 s"),
                BaseState::CouldNotRun,
            ),
            (
                result(Status::Skipped, None, "dependency `build` failed"),
                BaseState::CouldNotRun,
            ),
        ];
        for (r, want) in cases {
            assert_eq!(status_of(Some(&r), "run").status, want, "{r:?}");
        }
        assert_eq!(status_of(None, "run").status, BaseState::CouldNotRun);
    }
}
