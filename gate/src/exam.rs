//! The exam as each ecosystem runs it, compared with the base.
//!
//! `gate_specs::exam` reads from a check's or criterion's command line the
//! files a test runner makes its exam of (`cargo test --test server` runs
//! `tests/server.rs` and the helpers it includes, `npm test` the script
//! entry and the files it names, `make check` the makefile) and the runner
//! configuration that decides how the runner starts (`.cargo/config.toml`,
//! `.npmrc`, `pytest.ini`, `vitest.config.ts`). Here each is compared with
//! the base:
//!
//! - an exam file whose existing lines the change modified or deleted is
//!   critical, and the items run the base's version; one that only gained
//!   lines, or that the change created, is judged by what the added lines
//!   can do (`gate_specs::gain`): test functions and cases only are a
//!   created verifier (a warning: its new tests run, its old ones still
//!   do); code that runs at import, package init or the test binary's
//!   start, a hook, a build constraint, a decorator or line put into an old
//!   test is an edit, critical, and the items run the base's version;
//! - a Go file of the base's exam that the command no longer builds (a
//!   build constraint or file name the change gave it leaves it out) is
//!   critical, and the items run the base's version;
//! - a file of the code under test that `go test` builds into the tests
//!   is the change's to write, but code it adds there that runs when the
//!   test binary starts (`init()`, an exit) is critical;
//! - a changed script entry is critical;
//! - a configuration key that changes how the runner is launched or what
//!   it runs is critical, naming the key, and the items run the base's
//!   copy of a file that configures only the runner (a file the base did
//!   not have is shown empty);
//! - tests that live in the code under test, and what could not be
//!   resolved, are warnings that say so.
//!
//! Without a base, the exam files and configuration files present join the
//! protected verifiers: read-only while the items run, and compared with
//! the series' first attempt; an exam file the first attempt did not have
//! is judged by what it can do, as one the change created is with a base.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use gate_harness::sandbox::Overlay;
use gate_review::findings::Finding;
use gate_specs::{Exam, ExamKind, Gain, LineFate, Runner, RunnerConfig, Spec, Tree};

use crate::git::Git;
use crate::guard::GUARD_ROLE;

/// The workspace as the fingerprint saw it.
struct Now<'a> {
    workspace: &'a Path,
    files: &'a BTreeSet<&'a str>,
}

impl Tree for Now<'_> {
    fn read(&self, path: &str) -> Option<Vec<u8>> {
        if !self.files.contains(path) {
            return None;
        }
        let full = self.workspace.join(path);
        // A link is never followed out of the workspace.
        if !std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_file()) {
            return None;
        }
        std::fs::read(full).ok()
    }

    fn files_under(&self, dir: &str) -> Vec<String> {
        under(self.files, dir)
    }
}

/// The base commit, read through the gate's git (each file once).
struct Base<'a> {
    git: &'a Git,
    commit: &'a str,
    workspace: &'a Path,
    files: &'a BTreeSet<&'a str>,
    read: RefCell<BTreeMap<String, Option<Vec<u8>>>>,
}

impl Tree for Base<'_> {
    fn read(&self, path: &str) -> Option<Vec<u8>> {
        if !self.files.contains(path) {
            return None;
        }
        if let Some(kept) = self.read.borrow().get(path) {
            return kept.clone();
        }
        let full = self.workspace.join(path);
        // The resolver is sync; the gate's git is async, on a runtime with
        // threads to spare.
        let bytes = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(self.git.read_at(self.commit, &full))
        })
        .ok()
        .flatten();
        self.read
            .borrow_mut()
            .insert(path.to_owned(), bytes.clone());
        bytes
    }

    fn files_under(&self, dir: &str) -> Vec<String> {
        under(self.files, dir)
    }
}

/// The files under `dir` ("": all of them).
fn under(files: &BTreeSet<&str>, dir: &str) -> Vec<String> {
    let found = if dir.is_empty() {
        files.iter().copied().collect()
    } else {
        crate::workspace_files::under(files, dir)
    };
    found
        .into_iter()
        .filter(|f| *f != dir)
        .map(str::to_owned)
        .collect()
}

/// The files of the exam `run` makes of the workspace as it is now (whole
/// files only: a script entry is a part of a manifest, not a file to copy).
pub(crate) fn files_now(run: &str, workspace: &Path, files: &BTreeSet<&str>) -> Vec<String> {
    let now = Now { workspace, files };
    gate_specs::exam(run, &now)
        .files
        .into_iter()
        .filter(|f| f.kind == ExamKind::File && files.contains(f.path.as_str()))
        .map(|f| f.path)
        .collect()
}

/// What the exam comparison found, and what the items' sandbox needs.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// Critical and warning findings.
    pub findings: Vec<Finding>,
    /// The base's versions of altered exam and configuration files.
    pub overlays: Vec<Overlay>,
    /// Exam and configuration files present now (workspace-relative): kept
    /// read-only while the items run, and compared with the first attempt
    /// when there is no base.
    pub paths: Vec<String>,
    /// Items whose exam holds a file of the workspace.
    pub covered: BTreeSet<String>,
}

/// One item's command line and its id.
struct Item<'a> {
    id: &'a str,
    run: &'a str,
}

fn items(spec: &Spec) -> Vec<Item<'_>> {
    let checks = spec.checks.iter().map(|c| Item {
        id: &c.id,
        run: &c.run,
    });
    let criteria = spec.criteria().filter_map(|(_, c)| {
        Some(Item {
            id: &c.id,
            run: c.run.as_deref()?,
        })
    });
    checks.chain(criteria).collect()
}

/// A configuration's place: its path, section and runner.
type ConfigKey = (String, Option<String>, Runner);

/// The exam of every item, read in `tree`: by file, the item ids and why.
#[derive(Default)]
struct Gathered {
    /// By path and entry key (empty for a whole file): the part, the items
    /// and why.
    files: BTreeMap<(String, String), (ExamKind, BTreeSet<String>, String)>,
    /// The paths of the exam read in the workspace as it is now.
    now: BTreeSet<String>,
    /// By path, section and runner: the configuration and the items.
    configs: BTreeMap<ConfigKey, (RunnerConfig, BTreeSet<String>)>,
    notes: Vec<(String, String)>,
}

impl Gathered {
    fn add(&mut self, id: &str, exam: Exam, notes: bool) {
        for file in exam.files {
            if notes {
                self.now.insert(file.path.clone());
            }
            let key = match &file.kind {
                ExamKind::File => String::new(),
                ExamKind::PackageCode => "package code".to_owned(),
                ExamKind::ScriptEntry { key } => key.clone(),
            };
            let entry = self
                .files
                .entry((file.path, key))
                .or_insert_with(|| (file.kind, BTreeSet::new(), file.why));
            entry.1.insert(id.to_owned());
        }
        for config in exam.configs {
            let key = (config.path.clone(), config.section.clone(), config.runner);
            let entry = self
                .configs
                .entry(key)
                .or_insert_with(|| (config, BTreeSet::new()));
            entry.1.insert(id.to_owned());
        }
        if notes {
            for text in exam.in_code.into_iter().chain(exam.unresolved) {
                self.notes.push((id.to_owned(), text));
            }
        }
    }
}

/// The inputs of the comparison.
pub(crate) struct Inputs<'a> {
    pub spec: &'a Spec,
    pub base_spec: Option<&'a Spec>,
    pub workspace: &'a Path,
    /// The files the fingerprint saw.
    pub now_files: &'a BTreeSet<&'a str>,
    /// The base commit, its files and the git to read it with.
    pub base: Option<(&'a Git, &'a str, &'a BTreeSet<&'a str>)>,
    /// Where the base's versions are written (out of the items' sight).
    pub base_dir: Option<&'a Path>,
    /// Without a base: the files the series' first attempt protected, when
    /// this is a retry.
    pub previous: Option<&'a BTreeMap<String, crate::record::ProtectedState>>,
}

/// Resolves every item's exam now (and at the base, with the base's spec)
/// and compares it with the base.
pub(crate) fn compare(inputs: &Inputs<'_>) -> Found {
    let now = Now {
        workspace: inputs.workspace,
        files: inputs.now_files,
    };
    let mut gathered = Gathered::default();
    for item in items(inputs.spec) {
        gathered.add(item.id, gate_specs::exam(item.run, &now), true);
    }
    let mut found = Found::default();
    let Some((git, commit, base_files)) = inputs.base else {
        if let Some(previous) = inputs.previous {
            found = added_since_first(&gathered, &now, previous, inputs);
        }
        notes(&gathered, &mut found);
        cover(&gathered, &now, &mut found);
        return found;
    };
    let base = Base {
        git,
        commit,
        workspace: inputs.workspace,
        files: base_files,
        read: RefCell::new(BTreeMap::new()),
    };
    if let Some(base_spec) = inputs.base_spec {
        for item in items(base_spec) {
            gathered.add(item.id, gate_specs::exam(item.run, &base), false);
        }
    }
    let mut compared = Compared {
        found,
        base_dir: inputs.base_dir,
        workspace: inputs.workspace,
        judged: BTreeSet::new(),
    };
    for ((path, _), (kind, ids, why)) in &gathered.files {
        let (was, is) = (base.read(path), now.read(path));
        if let (Some(was), Some(_)) = (&was, &is)
            && Path::new(path).extension().is_some_and(|e| e == "go")
            && !gathered.now.contains(path)
        {
            compared.unbuilt(path, ids, why, was);
            continue;
        }
        compared.exam_file(path, kind, ids, why, (was.as_deref(), is.as_deref()));
    }
    for (config, ids) in gathered.configs.values() {
        let (was, is) = (base.read(&config.path), now.read(&config.path));
        compared.config(config, ids, (was.as_deref(), is.as_deref()));
    }
    let mut found = compared.found;
    notes(&gathered, &mut found);
    cover(&gathered, &now, &mut found);
    found
}

/// Without a base, on a retry: each exam file the series' first attempt
/// did not have, judged as a file the change created is against a base
/// (`gate_specs::gain`): test functions and cases only are a warning, code
/// that runs at import, package init or the test binary's start critical.
/// Files the first attempt had are compared with it as verifiers are
/// (`crate::verifiers`): any change to them is critical. The code under
/// test (`ExamKind::PackageCode`) is not judged here: the first attempt
/// kept no state of it.
fn added_since_first(
    gathered: &Gathered,
    now: &Now<'_>,
    previous: &BTreeMap<String, crate::record::ProtectedState>,
    inputs: &Inputs<'_>,
) -> Found {
    let mut compared = Compared {
        found: Found::default(),
        base_dir: inputs.base_dir,
        workspace: inputs.workspace,
        judged: BTreeSet::new(),
    };
    for ((path, _), (kind, ids, why)) in &gathered.files {
        if *kind != ExamKind::File || previous.contains_key(path) || !gathered.now.contains(path) {
            continue;
        }
        if let Some(is) = now.read(path) {
            compared.exam_file(path, kind, ids, why, (None, Some(&is)));
        }
    }
    compared.found
}

/// The paths present now, and the items whose exam holds one.
fn cover(gathered: &Gathered, now: &Now<'_>, found: &mut Found) {
    let mut paths = BTreeSet::new();
    for ((path, _), (kind, ids, _)) in &gathered.files {
        // The code under test stays the change's to write.
        if *kind != ExamKind::PackageCode && now.files.contains(path.as_str()) {
            paths.insert(path.clone());
            found.covered.extend(ids.iter().cloned());
        }
    }
    for (path, _, _) in gathered.configs.keys() {
        if now.files.contains(path.as_str()) {
            paths.insert(path.clone());
        }
    }
    found.paths = paths.into_iter().collect();
}

/// A warning for each thing an item's exam could not be told from.
fn notes(gathered: &Gathered, found: &mut Found) {
    for (id, text) in &gathered.notes {
        found.findings.push(Finding::raised(
            GUARD_ROLE,
            "warning",
            String::new(),
            None,
            format!("`{id}`: {text}"),
            "The gate protects the files a runner makes its exam of; what it cannot tell \
             from the command line is not protected. Name such files in `[spec] protected`."
                .to_owned(),
            1.0,
        ));
    }
}

/// The comparison as it goes.
struct Compared<'a> {
    found: Found,
    base_dir: Option<&'a Path>,
    workspace: &'a Path,
    /// Files an exam-file finding already holds critical: one finding per
    /// file and cause, so their configuration is not reported again.
    judged: BTreeSet<String>,
}

impl Compared<'_> {
    /// An exam part compared with the base; a whole file found critical is
    /// remembered.
    fn exam_file(
        &mut self,
        path: &str,
        kind: &ExamKind,
        ids: &BTreeSet<String>,
        why: &str,
        sides: (Option<&[u8]>, Option<&[u8]>),
    ) {
        let before = self.found.findings.len();
        self.exam_part(path, kind, ids, why, sides);
        let critical = self.found.findings[before..]
            .iter()
            .any(|f| f.severity == "critical");
        if critical && !matches!(kind, ExamKind::ScriptEntry { .. }) {
            self.judged.insert(path.to_owned());
        }
    }

    /// A Go file of the base's exam that the command no longer builds: its
    /// name or build constraints now leave it out.
    fn unbuilt(&mut self, path: &str, ids: &BTreeSet<String>, why: &str, was: &[u8]) {
        let shown = self.show_base(path, was);
        self.critical(
            path,
            format!(
                "The change stops {} from building the exam file `{path}`",
                named(ids)
            ),
            format!(
                "{why} at the base; now its build constraints or name leave it out of the \
                 build, so its tests and start-up code no longer run: a change must not take \
                 away the exam it is judged by.{}",
                ran_base(shown)
            ),
        );
        self.judged.insert(path.to_owned());
    }

    fn exam_part(
        &mut self,
        path: &str,
        kind: &ExamKind,
        ids: &BTreeSet<String>,
        why: &str,
        (was, is): (Option<&[u8]>, Option<&[u8]>),
    ) {
        let by = named(ids);
        match kind {
            ExamKind::ScriptEntry { key } => {
                if gate_specs::entry_fate(key, was, is) == LineFate::Altered {
                    self.critical(
                        path,
                        format!("The change alters `{key}` of `{path}`, which {by} runs"),
                        format!(
                            "{why}. A script entry is the exam's command line; was {}, now {}.",
                            shown(was.and_then(|b| script(b, key))),
                            shown(is.and_then(|b| script(b, key)))
                        ),
                    );
                }
            }
            ExamKind::PackageCode => {
                if let Some(is) = is
                    && let Gain::Runs { line, why: does } = gate_specs::package_code_gain(path, was, is)
                {
                    let shown = was.is_some_and(|was| self.show_base(path, was));
                    self.critical(
                        path,
                        format!(
                            "The change adds code that runs before the tests to `{path}`, which {by} builds into its tests"
                        ),
                        format!(
                            "{why}. Line {line} {does}. A test binary is the whole package: what runs \
                             when it starts decides whether the tests run, so it is part of the exam.{}",
                            ran_base(shown)
                        ),
                    );
                }
            }
            ExamKind::File => match (was, is) {
                (None, None) => {}
                (None, Some(is)) => match gate_specs::gain(path, None, is) {
                    Gain::Runs { line, why: does } => self.critical(
                        path,
                        format!("The change adds the exam file `{path}`, which {by} runs, with code that runs before its tests"),
                        format!(
                            "{why}. Line {line} {does}: a file added to the exam may add tests, \
                             not decide whether the others run."
                        ),
                    ),
                    _ => self.warning(
                        path,
                        format!("The change adds the exam file `{path}`, which {by} runs"),
                        format!(
                            "{why}. Tests written with the change show what their author chose \
                             to test: its acceptance is self-certified."
                        ),
                    ),
                },
                (Some(_), None) => self.critical(
                    path,
                    format!("The change deletes the exam file `{path}`, which {by} runs"),
                    format!("{why}; a change must not take away the exam it is judged by."),
                ),
                (Some(was), Some(is)) => match gate_specs::line_fate(was, is) {
                    LineFate::Same => {}
                    LineFate::OnlyGained => match gate_specs::gain(path, Some(was), is) {
                        Gain::Runs { line, why: does } => {
                            let shown = self.show_base(path, was);
                            self.critical(
                                path,
                                format!("The change edits the exam file `{path}`, which {by} runs, by adding lines"),
                                format!(
                                    "{why}. Line {line} {does}. Only added test functions and \
                                     cases leave the exam as it was.{}",
                                    ran_base(shown)
                                ),
                            );
                        }
                        _ => self.warning(
                            path,
                            format!("The change adds tests to the exam file `{path}`, which {by} runs"),
                            format!(
                                "{why}. It only gained test functions or cases, so its old tests \
                                 still run as they did; the new ones are self-certified."
                            ),
                        ),
                    },
                    LineFate::Altered => {
                        let shown = self.show_base(path, was);
                        self.critical(
                            path,
                            format!("The change modifies lines of the exam file `{path}`, which {by} runs"),
                            format!(
                                "{why}; a change must not alter the exam it is judged by.{}",
                                ran_base(shown)
                            ),
                        );
                    }
                },
            },
        }
    }

    fn config(
        &mut self,
        config: &RunnerConfig,
        ids: &BTreeSet<String>,
        (was, is): (Option<&[u8]>, Option<&[u8]>),
    ) {
        let changes = gate_specs::launch_changes(config, was, is);
        if changes.is_empty() {
            return;
        }
        let path = &config.path;
        if config.runner == Runner::Module {
            // Shown empty, a shadowing module would run as an empty one: it
            // is named, and the run fails on it.
            self.critical(
                path,
                format!(
                    "The change {} `{path}`, which `python -m` of {} would run in place of the installed runner",
                    if was.is_none() { "adds" } else { "changes" },
                    named(ids)
                ),
                "`python -m` puts the working directory first on `sys.path`, so a module \
                 there of the runner's name (or of a module the runner imports first) is \
                 found before the installed one: the runner's result would be whatever it \
                 prints."
                    .to_owned(),
            );
            return;
        }
        let keys: Vec<String> = changes
            .iter()
            .map(|c| {
                format!(
                    "{} (was {}, now {})",
                    c.key,
                    shown(c.was.clone()),
                    shown(c.now.clone())
                )
            })
            .collect();
        // A file that configures only the runner (pytest.ini too, though
        // the runner reads a section of it) is shown as the base had it; a
        // manifest (Cargo.toml, package.json, pyproject.toml) carries the
        // change's dependencies too, and a file other tools read (tox.ini,
        // setup.cfg) their settings: those are left as they are.
        let name = path.rsplit('/').next();
        let runner_only = match name {
            Some("pytest.ini" | ".pytest.ini") => true,
            Some("Cargo.toml" | "package.json" | "pyproject.toml" | "go.mod") => false,
            _ => config.section.is_none(),
        };
        let shown_base =
            runner_only && is.is_some() && self.show_base(path, was.unwrap_or_default());
        if self.judged.contains(path) {
            return;
        }
        self.critical(
            path,
            format!(
                "The change alters how the runner of {} starts: `{path}` {}",
                named(ids),
                changes
                    .iter()
                    .map(|c| if c.is_whole_file() {
                        "(the whole file)".to_owned()
                    } else {
                        format!("`{}`", c.key)
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!(
                "Runner configuration is part of the exam: {}.{}",
                keys.join("; "),
                match (shown_base, was) {
                    (false, _) => "",
                    (true, Some(_)) => " The items ran with the base's copy.",
                    (true, None) => " The base has no such file: the items ran with it empty.",
                }
            ),
        );
    }

    /// Shows `bytes` (the base's version) over `path`; whether it could.
    fn show_base(&mut self, path: &str, bytes: &[u8]) -> bool {
        let Some(dir) = self.base_dir else {
            return false;
        };
        let shown =
            crate::workspace_files::overlay(self.workspace, path, bytes, &dir.join("exam"), false);
        let could = shown.is_some();
        self.found.overlays.extend(shown);
        could
    }

    fn critical(&mut self, path: &str, title: String, detail: String) {
        self.found.findings.push(Finding::raised(
            GUARD_ROLE,
            "critical",
            path.to_owned(),
            None,
            title,
            detail,
            1.0,
        ));
    }

    fn warning(&mut self, path: &str, title: String, detail: String) {
        self.found.findings.push(Finding::raised(
            GUARD_ROLE,
            "warning",
            path.to_owned(),
            None,
            title,
            detail,
            1.0,
        ));
    }
}

/// What a finding adds when the items ran the base's version of its file.
fn ran_base(shown: bool) -> &'static str {
    if shown {
        " The items ran the base's version."
    } else {
        ""
    }
}

fn script(package_json: &[u8], key: &str) -> Option<String> {
    gate_specs::script_entry(package_json, key.strip_prefix("scripts.").unwrap_or(key))
}

fn shown(value: Option<String>) -> String {
    value.map_or_else(|| "unset".to_owned(), |v| format!("`{v}`"))
}

fn named(ids: &BTreeSet<String>) -> String {
    ids.iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
