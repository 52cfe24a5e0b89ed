//! The exam out of the examinee's reach: the verifiers the checks and
//! criteria run, compared with what they were before the change.
//!
//! A verifier is every workspace path a check's or criterion's `run` runs
//! (`./scripts/e2e.sh`, `python3 tests/accept.py`, `pytest
//! tests/acceptance`: see `gate_specs::verifier`), and every file
//! `[spec] protected` matches. Each is
//! compared with its reference: the base commit when there is one, else the
//! series' first attempt (carried from attempt to attempt in the record).
//! One that existed there and that the change modified, deleted, made
//! non-executable or replaced by a link is a critical finding, and the
//! items run the base's version where the sandbox can show it. A path a
//! `run` names that never existed is the spec's fault (found when the item
//! is about to start, so a file a build check makes counts); one the change
//! created is a warning: the acceptance is self-certified.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use gate_evidence::Snapshot;
use gate_evidence::snapshot::EntryKind;
use gate_harness::Requirement;
use gate_harness::sandbox::Overlay;
use gate_review::findings::{Finding, Lineage, finding_id};
use gate_specs::{InputGlobs, Spec};

use crate::errors::GateError;
use crate::git::Git;
use crate::guard::GUARD_ROLE;
use crate::record::ProtectedState;
use crate::workspace_files::under;

/// Who protects a path: the items whose `run` names it, or the spec's
/// `protected` globs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Namers {
    /// Ids of the checks and criteria whose `run` names it.
    pub items: BTreeSet<String>,
    /// Whether `[spec] protected` matches it.
    pub glob: bool,
}

impl Namers {
    fn describe(&self) -> String {
        let mut parts: Vec<String> = self.items.iter().map(|i| format!("`{i}`")).collect();
        if self.glob {
            parts.push("`[spec] protected`".to_owned());
        }
        if parts.is_empty() {
            return "what the series' first attempt ran".to_owned();
        }
        parts.join(", ")
    }
}

/// What the comparison found, and what the items' sandbox needs.
#[derive(Debug, Default)]
pub(crate) struct Protection {
    /// Protected paths present now (absolute): read-only inside the sandbox.
    pub read_only: Vec<PathBuf>,
    /// The base's versions of modified verifiers, shown over them.
    pub overlays: Vec<Overlay>,
    /// Critical and warning findings.
    pub findings: Vec<Finding>,
    /// Per item id: the paths its `run` names that no reference knows, to be
    /// checked when it is about to start.
    pub required: BTreeMap<String, Vec<Requirement>>,
    /// What the next attempt compares with when there is no base.
    pub reference: BTreeMap<String, ProtectedState>,
    /// Every protected path, workspace-relative (present now or not).
    pub paths: Vec<String>,
    /// Criteria whose `run` runs no file of the workspace, while `[spec]
    /// protected` is empty: nothing protects what decides them.
    pub unprotected: Vec<String>,
}

/// The files the reference holds (the base commit's, the series' first
/// attempt's, or without either the workspace's own), and the first
/// attempt's states when that is the reference.
async fn reference_files<'a>(
    inputs: &Inputs<'a>,
    now_files: &BTreeSet<&str>,
) -> Result<
    (
        BTreeSet<String>,
        Option<&'a BTreeMap<String, ProtectedState>>,
    ),
    GateError,
> {
    Ok(match inputs.base {
        Some((git, commit)) => {
            let listing = git
                .run(
                    inputs.workspace,
                    &[
                        "ls-tree",
                        "-r",
                        "-z",
                        "--full-name",
                        "--name-only",
                        commit,
                        "--",
                        ".",
                    ],
                )
                .await
                .map_err(|why| GateError::Base {
                    base: commit.to_owned(),
                    reason: why,
                })?;
            let prefix = workspace_prefix(git, inputs.workspace).await?;
            let files: BTreeSet<String> = listing
                .split(|b| *b == 0)
                .filter_map(|p| std::str::from_utf8(p).ok())
                .filter_map(|p| p.strip_prefix(prefix.as_str()).map(str::to_owned))
                .filter(|p| !p.is_empty())
                .collect();
            (files, None)
        }
        None => match inputs.previous {
            Some(previous) => (previous.keys().cloned().collect(), Some(previous)),
            None => (now_files.iter().map(|p| (*p).to_owned()).collect(), None),
        },
    })
}

/// A critical finding for each verifier the change tampered with, and a
/// warning for each file it added beside one; `base_shown` says the items
/// ran the base's version of a modified one.
fn tampering_findings(
    fates: &BTreeMap<String, (Tampering, String)>,
    added: &BTreeMap<String, String>,
    base_shown: bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for (file, (fate, by)) in fates {
        out.push(Finding {
            id: finding_id(
                GUARD_ROLE,
                file,
                &format!("The change {} the verifier", fate.verb()),
            ),
            severity: "critical".to_owned(),
            role: GUARD_ROLE.to_owned(),
            file: file.clone(),
            line: None,
            title: format!("The change {} the verifier `{file}`", fate.verb()),
            detail: format!(
                "It decides {by} and existed before the change; a change must not alter \
                 the exam it is judged by.{}",
                if matches!(fate, Tampering::Modified | Tampering::NotExecutable) && base_shown {
                    " The items ran the base's version."
                } else {
                    ""
                }
            ),
            confidence: 1.0,
            lineage: Lineage::raised(GUARD_ROLE, "critical"),
        });
    }
    for (file, folder) in added {
        let title = if file == folder {
            format!("The change adds `{file}`, which `[spec] protected` covers")
        } else {
            format!("The change adds `{file}` to the protected verifier `{folder}`")
        };
        out.push(warning(
            file,
            title,
            "A file added beside a verifier runs with it (a test runner collects it); \
             its pass shows what its author chose to test."
                .to_owned(),
        ));
    }
    out
}

/// The base's version of each verifier the change modified or made
/// non-executable, for the sandbox to show over the changed file.
async fn overlays(
    inputs: &Inputs<'_>,
    fates: &BTreeMap<String, (Tampering, String)>,
    was: &BTreeMap<String, Was>,
) -> Vec<Overlay> {
    let mut out = Vec::new();
    if let (Some((git, commit)), Some(dir)) = (inputs.base, &inputs.base_dir) {
        for (file, (fate, _)) in fates {
            if !matches!(fate, Tampering::Modified | Tampering::NotExecutable) {
                continue;
            }
            if let Some(overlay) = base_version(
                git,
                inputs.workspace,
                commit,
                file,
                was.get(file.as_str()),
                dir,
            )
            .await
            {
                out.push(overlay);
            }
        }
    }
    out
}

/// What the next attempt compares with when there is no base: the first
/// attempt's states carried on, or (on a first attempt) the files now.
fn reference_kept(
    inputs: &Inputs<'_>,
    protected: &BTreeMap<String, Namers>,
    now_files: &BTreeSet<&str>,
) -> BTreeMap<String, ProtectedState> {
    match (inputs.base, inputs.previous) {
        (None, Some(previous)) => previous.clone(),
        _ => protected
            .keys()
            .flat_map(|p| under(now_files, p))
            .filter_map(|f| {
                let s = state_now(inputs.workspace, inputs.snapshot, f)?;
                Some((
                    f.to_owned(),
                    ProtectedState {
                        digest: s.digest,
                        executable: s.executable,
                        link: s.link,
                    },
                ))
            })
            .collect(),
    }
}

/// What each check's and criterion's `run` runs, now and in the reference:
/// protected where either has it, required where the reference does not,
/// self-certified where the change created it, and a criterion that runs no
/// workspace file is unprotected. Returns the verifiers run directly that
/// the reference has.
fn name_verifiers(
    inputs: &Inputs<'_>,
    by_item: &[(String, bool, Vec<gate_specs::VerifierPath>)],
    (now_files, ref_set): (&BTreeSet<&str>, &BTreeSet<&str>),
    protected: &mut BTreeMap<String, Namers>,
    out: &mut Protection,
) -> Vec<(String, String)> {
    let spec = inputs.spec;
    let mut direct_known: Vec<(String, String)> = Vec::new();
    for (id, is_criterion, paths) in by_item {
        let mut names_any = false;
        for named in paths {
            let now = present(now_files, &named.path);
            let before = present(ref_set, &named.path);
            // A module's candidate file the workspace never had: the module
            // is an installed one, not the workspace's.
            if named.module && !now && !before {
                continue;
            }
            // A file the line runs counts even when missing: that is a spec
            // error of its own, not a verifier nothing protects.
            names_any = true;
            if now || before {
                protected
                    .entry(named.path.clone())
                    .or_default()
                    .items
                    .insert(id.clone());
            }
            if !before && !named.module {
                out.required
                    .entry(id.clone())
                    .or_default()
                    .push(Requirement {
                        path: named.path.clone(),
                        direct: named.direct,
                        must_exist: named.first,
                    });
            } else if named.direct {
                direct_known.push((id.clone(), named.path.clone()));
            }
            if !before && now && (inputs.base.is_some() || inputs.previous.is_some()) {
                out.findings.push(warning(
                    &named.path,
                    format!(
                        "`{id}` runs `{}`, which the change created: its acceptance is self-certified",
                        named.path
                    ),
                    "A verifier that did not exist before the change was written with it; \
                     its pass shows what its author chose to test. Add it to the spec's \
                     base so later changes are measured against it."
                        .to_owned(),
                ));
            }
        }
        if *is_criterion && !names_any && spec.spec.protected.is_empty() {
            out.unprotected.push(id.clone());
        }
    }
    direct_known
}

/// Each protected file compared with its reference: what the change did to
/// the verifiers that existed (deleted, replaced by a link, modified, made
/// non-executable), and the files it added beside one, by the protected
/// path they sit under.
fn compare(
    inputs: &Inputs<'_>,
    protected: &BTreeMap<String, Namers>,
    (now_files, ref_set): (&BTreeSet<&str>, &BTreeSet<&str>),
    was: &BTreeMap<String, Was>,
) -> (
    BTreeMap<String, (Tampering, String)>,
    BTreeMap<String, String>,
) {
    let has_reference = inputs.base.is_some() || inputs.previous.is_some();
    let mut fates: BTreeMap<String, (Tampering, String)> = BTreeMap::new();
    let mut added: BTreeMap<String, String> = BTreeMap::new();
    for (path, namers) in protected {
        let mut files: BTreeSet<&str> = under(ref_set, path).into_iter().collect();
        files.extend(under(now_files, path));
        for file in files {
            let now = state_now(inputs.workspace, inputs.snapshot, file);
            match (was.get(file), now) {
                (Some(_), None) => {
                    fates.insert(file.to_owned(), (Tampering::Deleted, namers.describe()));
                }
                (Some(before), Some(mut now)) => {
                    if inputs.base.is_some() {
                        now.git_id = git_id_now(inputs.workspace, file, &now, &before.id);
                    }
                    let fate = if now.link && !before.link {
                        Some(Tampering::ReplacedByLink)
                    } else if inputs.base.is_some() {
                        base_fate(before, &now)
                    } else if now.digest != before.id {
                        Some(Tampering::Modified)
                    } else if before.executable && !now.executable {
                        Some(Tampering::NotExecutable)
                    } else {
                        None
                    };
                    if let Some(fate) = fate {
                        fates.insert(file.to_owned(), (fate, namers.describe()));
                    }
                }
                // A file that is new beside a protected one: named paths
                // the change created are reported above.
                (None, Some(_)) if has_reference && (file != path || namers.items.is_empty()) => {
                    added.insert(file.to_owned(), path.clone());
                }
                (None, _) => {}
            }
        }
    }
    (fates, added)
}

/// The verifiers of `spec`: every path each check's and criterion's `run`
/// runs, by item, and whether the item is a criterion.
fn named(spec: &Spec) -> Vec<(String, bool, Vec<gate_specs::VerifierPath>)> {
    let mut out = Vec::new();
    for check in &spec.checks {
        out.push((
            check.id.clone(),
            false,
            gate_specs::verifier_paths(&check.run),
        ));
    }
    for (_, criterion) in spec.criteria() {
        if let Some(run) = &criterion.run {
            out.push((criterion.id.clone(), true, gate_specs::verifier_paths(run)));
        }
    }
    out
}

/// Whether `path` is a file of `files`, or a folder holding one.
fn present(files: &BTreeSet<&str>, path: &str) -> bool {
    if files.contains(path) {
        return true;
    }
    let prefix = format!("{path}/");
    files
        .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
        .next()
        .is_some_and(|f| f.starts_with(&prefix))
}

/// A verifier file at its reference, as far as the comparison needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Was {
    executable: bool,
    link: bool,
    /// The git object id (with a base) or blake3 (without).
    id: String,
}

/// What became of a verifier file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tampering {
    Modified,
    NotExecutable,
    Deleted,
    ReplacedByLink,
}

impl Tampering {
    fn verb(self) -> &'static str {
        match self {
            Self::Modified => "modifies",
            Self::NotExecutable => "makes non-executable",
            Self::Deleted => "deletes or renames",
            Self::ReplacedByLink => "replaces with a symbolic link",
        }
    }
}

/// The inputs of the comparison.
pub(crate) struct Inputs<'a> {
    /// The spec.
    pub spec: &'a Spec,
    /// The spec at the base, when there is one: what its commands run is
    /// protected too (a verifier the change renamed away from the spec is
    /// still the exam).
    pub base_spec: Option<&'a Spec>,
    /// The workspace (canonical).
    pub workspace: &'a Path,
    /// Its files now.
    pub snapshot: &'a Snapshot,
    /// The base commit and the git to read it with.
    pub base: Option<(&'a Git, &'a str)>,
    /// Without a base: the series' first attempt's verifiers, when this is a
    /// retry.
    pub previous: Option<&'a BTreeMap<String, ProtectedState>>,
    /// Where the base's versions of modified verifiers are written (out of
    /// the items' sight); `None` when no sandbox can show them.
    pub base_dir: Option<PathBuf>,
}

/// Compares the verifiers with their reference.
pub(crate) async fn protect(inputs: Inputs<'_>) -> Result<Protection, GateError> {
    let spec = inputs.spec;
    let now_files: BTreeSet<&str> = inputs.snapshot.entries().map(|(p, _)| p).collect();
    let mut protected_globs = spec.spec.protected.clone();
    if let Some(base_spec) = inputs.base_spec {
        protected_globs.extend(base_spec.spec.protected.iter().cloned());
    }
    let globs = InputGlobs::new(&protected_globs).map_err(|e| GateError::Usage(e.to_string()))?;
    let by_item = named(spec);

    // The reference: what existed before the change.
    let (ref_files, diff) = reference_files(&inputs, &now_files).await?;
    let ref_set: BTreeSet<&str> = ref_files.iter().map(String::as_str).collect();

    // Which paths are protected, and by whom.
    let mut protected: BTreeMap<String, Namers> = BTreeMap::new();
    let mut out = Protection::default();
    // Verifiers run directly that existed before the change.
    let direct_known = name_verifiers(
        &inputs,
        &by_item,
        (&now_files, &ref_set),
        &mut protected,
        &mut out,
    );
    // The base's exam, and what the series' first attempt protected.
    if let Some(base_spec) = inputs.base_spec {
        for (id, _, paths) in named(base_spec) {
            for named in paths {
                if present(&ref_set, &named.path) {
                    protected
                        .entry(named.path)
                        .or_default()
                        .items
                        .insert(id.clone());
                }
            }
        }
    }
    if let Some(previous) = inputs.previous {
        for file in previous.keys() {
            protected.entry(file.clone()).or_default();
        }
    }
    if !globs.is_empty() {
        for file in now_files.iter().copied().chain(ref_set.iter().copied()) {
            if globs.is_match(file) {
                protected.entry(file.to_owned()).or_default().glob = true;
            }
        }
    }
    let exam = runners_exam(&inputs, (&now_files, &ref_set), &mut protected, &mut out);

    // Each protected file, compared with its reference.
    let was = match (inputs.base, diff) {
        (Some((git, commit)), _) => {
            base_states(git, inputs.workspace, commit, protected.keys(), &ref_set).await?
        }
        (None, Some(previous)) => previous
            .iter()
            .map(|(p, s)| {
                (
                    p.clone(),
                    Was {
                        executable: s.executable,
                        link: s.link,
                        id: s.digest.clone(),
                    },
                )
            })
            .collect(),
        (None, None) => BTreeMap::new(),
    };
    let has_reference = inputs.base.is_some() || inputs.previous.is_some();
    let (mut fates, added) = compare(&inputs, &protected, (&now_files, &ref_set), &was);
    let gained = only_gained(&inputs, &by_item, &protected, &mut fates).await;
    // One finding per file and cause: a test file a criterion names is in
    // that criterion's exam too, so the exam's finding on it already names
    // every item that runs it (one that reaches it through its folder as
    // well).
    out.findings.extend(
        gained
            .into_iter()
            .filter(|g| !exam.findings.iter().any(|f| f.file == g.file)),
    );
    // One run directly that was never executable is the spec's fault, as
    // one that never existed is; one the change made non-executable is not.
    for (id, path) in direct_known {
        let never_executable = match was.get(path.as_str()) {
            Some(before) => !before.executable,
            None => !has_reference,
        };
        if never_executable && !fates.contains_key(&path) {
            out.required.entry(id).or_default().push(Requirement {
                path,
                direct: true,
                must_exist: false,
            });
        }
    }
    // One finding per file and cause: a file the exam comparison already
    // holds critical is not reported again as a modified verifier.
    let reported: BTreeMap<String, (Tampering, String)> = fates
        .iter()
        .filter(|(file, _)| {
            !exam
                .findings
                .iter()
                .any(|f| f.severity == "critical" && f.file == **file)
        })
        .map(|(file, fate)| (file.clone(), fate.clone()))
        .collect();
    out.findings.extend(tampering_findings(
        &reported,
        &unjudged(added, &exam.findings),
        inputs.base.is_some() && inputs.base_dir.is_some(),
    ));

    // The base's versions of what was modified, for the sandbox to show.
    out.overlays = overlays(&inputs, &fates, &was).await;
    out.findings.extend(exam.findings);
    for overlay in exam.overlays {
        if !out.overlays.iter().any(|had| had.target == overlay.target) {
            out.overlays.push(overlay);
        }
    }

    let mut paths: BTreeSet<String> = protected.keys().cloned().collect();
    paths.extend(exam.paths);
    for path in &paths {
        let abs = inputs.workspace.join(path);
        if present(&now_files, path) {
            out.read_only.push(abs);
        }
    }
    out.paths = paths.into_iter().collect();
    out.reference = reference_kept(&inputs, &protected, &now_files);
    Ok(out)
}

/// The files added beside a verifier that the exam comparison did not
/// judge already: one finding per file and cause.
fn unjudged(added: BTreeMap<String, String>, exam: &[Finding]) -> BTreeMap<String, String> {
    added
        .into_iter()
        .filter(|(file, _)| !exam.iter().any(|f| f.file == *file))
        .collect()
}

/// What the runners make their exam of (`crate::exam`): compared there by
/// its own rules with a base, else protected like the verifiers; the
/// criteria it covers are no longer unprotected.
fn runners_exam(
    inputs: &Inputs<'_>,
    (now_files, ref_set): (&BTreeSet<&str>, &BTreeSet<&str>),
    protected: &mut BTreeMap<String, Namers>,
    out: &mut Protection,
) -> crate::exam::Found {
    let exam = crate::exam::compare(&crate::exam::Inputs {
        spec: inputs.spec,
        base_spec: inputs.base_spec,
        workspace: inputs.workspace,
        now_files,
        base: inputs.base.map(|(git, commit)| (git, commit, ref_set)),
        base_dir: inputs.base_dir.as_deref(),
        previous: inputs.previous.filter(|_| inputs.base.is_none()),
    });
    if inputs.base.is_none() {
        for path in &exam.paths {
            protected.entry(path.clone()).or_default();
        }
    }
    out.unprotected.retain(|id| !exam.covered.contains(id));
    exam
}

/// The test files a runner is given (`pytest tests/x.py`) that the change
/// only added test functions or cases to, taken out of `fates`: a suite
/// that gained tests still runs its old ones, so each is a warning, as a
/// test runner's exam is (`crate::exam`); added lines that run at import
/// or before the tests (`gate_specs::gain`) leave it critical. A file `[spec] protected` names, or that a shell or
/// an interpreter runs, stays critical: a script that gained a line (an
/// `exit 0` at its top) may run nothing of what it did.
async fn only_gained(
    inputs: &Inputs<'_>,
    by_item: &[(String, bool, Vec<gate_specs::VerifierPath>)],
    protected: &BTreeMap<String, Namers>,
    fates: &mut BTreeMap<String, (Tampering, String)>,
) -> Vec<Finding> {
    let Some((git, commit)) = inputs.base else {
        return Vec::new();
    };
    let named = |path: &str| {
        by_item
            .iter()
            .flat_map(|(_, _, paths)| paths.iter())
            .filter(|p| {
                path.strip_prefix(p.path.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
            .collect::<Vec<_>>()
    };
    let mut out = Vec::new();
    let candidates: Vec<String> = fates
        .iter()
        .filter(|(_, (fate, _))| matches!(fate, Tampering::Modified))
        .map(|(path, _)| path.clone())
        .filter(|path| {
            let names = named(path);
            !names.is_empty()
                && names.iter().all(|n| n.runner)
                && !protected.get(path).is_some_and(|n| n.glob)
        })
        .collect();
    for path in candidates {
        let full = inputs.workspace.join(&path);
        let (Ok(Some(was)), Ok(now)) = (git.read_at(commit, &full).await, std::fs::read(&full))
        else {
            continue;
        };
        if gate_specs::line_fate(&was, &now) != gate_specs::LineFate::OnlyGained
            || matches!(
                gate_specs::gain(&path, Some(&was), &now),
                gate_specs::Gain::Runs { .. }
            )
        {
            continue;
        }
        if let Some((_, by)) = fates.remove(&path) {
            out.push(warning(
                &path,
                format!("The change adds tests to the exam file `{path}`, which {by} runs"),
                "Its lines from before the change are all still there, so its old tests \
                 still run; the new ones are self-certified."
                    .to_owned(),
            ));
        }
    }
    out
}

/// A file's state now.
#[derive(Debug, Clone)]
struct Now {
    digest: String,
    executable: bool,
    link: bool,
    /// The git blob id of its content, for comparing with a base.
    git_id: Option<String>,
}

fn state_now(workspace: &Path, snapshot: &Snapshot, file: &str) -> Option<Now> {
    let entry = snapshot.get(file)?;
    let meta = std::fs::symlink_metadata(workspace.join(file)).ok()?;
    let link = entry.kind == EntryKind::Symlink;
    Some(Now {
        digest: entry.digest.to_hex(),
        executable: !link && meta.permissions().mode() & 0o111 != 0,
        link,
        git_id: None,
    })
}

/// The git blob id of what `file` holds now (a link: its target), in the
/// object format of `like`.
fn git_id_now(workspace: &Path, file: &str, now: &Now, like: &str) -> Option<String> {
    blob_id_on_disk(&workspace.join(file), now.link, like)
}

/// The git blob id of what `path` holds on disk (a link, `link`: its
/// target), in the object format of `like`.
pub(crate) fn blob_id_on_disk(path: &Path, link: bool, like: &str) -> Option<String> {
    let bytes = if link {
        std::fs::read_link(path)
            .ok()?
            .into_os_string()
            .into_encoded_bytes()
    } else {
        std::fs::read(path).ok()?
    };
    Some(git_blob_id(&bytes, like))
}

/// How a file compares with its base version: its git mode and object id
/// against what the working tree holds now.
fn base_fate(before: &Was, now: &Now) -> Option<Tampering> {
    match &now.git_id {
        Some(id) if *id != before.id => Some(Tampering::Modified),
        _ if before.executable && !now.executable => Some(Tampering::NotExecutable),
        _ => None,
    }
}

/// The protected files' modes and object ids at `commit`.
async fn base_states(
    git: &Git,
    workspace: &Path,
    commit: &str,
    protected: impl Iterator<Item = &String>,
    ref_set: &BTreeSet<&str>,
) -> Result<BTreeMap<String, Was>, GateError> {
    let mut files: Vec<&str> = Vec::new();
    for path in protected {
        files.extend(under(ref_set, path));
    }
    if files.is_empty() {
        return Ok(BTreeMap::new());
    }
    let specs: Vec<String> = files.iter().map(|f| format!(":(literal){f}")).collect();
    let mut args: Vec<&str> = vec!["ls-tree", "-r", "-z", commit, "--"];
    args.extend(specs.iter().map(String::as_str));
    let listing = git
        .run(workspace, &args)
        .await
        .map_err(|why| GateError::Base {
            base: commit.to_owned(),
            reason: why,
        })?;
    // Paths relative to the workspace, where git runs.
    Ok(crate::git::tree_entries(&listing)
        .into_iter()
        .map(|(path, entry)| {
            let was = Was {
                executable: entry.mode == "100755",
                link: entry.mode == "120000",
                id: entry.id,
            };
            (path, was)
        })
        .collect())
}

/// The workspace's path inside its repository (`""` at the top, else
/// `sub/dir/`), since `ls-tree --full-name` lists paths from the top.
async fn workspace_prefix(git: &Git, workspace: &Path) -> Result<String, GateError> {
    git.prefix(workspace)
        .await
        .map_err(|why| GateError::Workspace {
            path: workspace.to_path_buf(),
            reason: why,
        })
}

/// Writes `file`'s base version under `dir` with its base mode, and the
/// overlay that shows it in the workspace.
async fn base_version(
    git: &Git,
    workspace: &Path,
    commit: &str,
    file: &str,
    was: Option<&Was>,
    dir: &Path,
) -> Option<Overlay> {
    let was = was?;
    if was.link {
        return None;
    }
    let target = workspace.join(file);
    if !crate::workspace_files::coverable(&target) {
        return None;
    }
    let bytes = git.read_at(commit, &target).await.ok()??;
    crate::workspace_files::overlay(workspace, file, &bytes, dir, was.executable)
}

/// The git blob id of `bytes`, in the object format `like` (an id of the
/// repository) shows: SHA-1, or SHA-256 for a 64-digit id.
pub(crate) fn git_blob_id(bytes: &[u8], like: &str) -> String {
    use sha2::Digest as _;
    let header = format!("blob {}\0", bytes.len());
    if like.len() == 64 {
        let mut h = sha2::Sha256::new();
        h.update(header.as_bytes());
        h.update(bytes);
        hex::encode(h.finalize())
    } else {
        let mut h = sha1::Sha1::new();
        h.update(header.as_bytes());
        h.update(bytes);
        hex::encode(h.finalize())
    }
}

fn warning(file: &str, title: String, detail: String) -> Finding {
    Finding {
        id: finding_id(GUARD_ROLE, file, &title),
        severity: "warning".to_owned(),
        role: GUARD_ROLE.to_owned(),
        file: file.to_owned(),
        line: None,
        title,
        detail,
        confidence: 1.0,
        lineage: Lineage::raised(GUARD_ROLE, "warning"),
    }
}
