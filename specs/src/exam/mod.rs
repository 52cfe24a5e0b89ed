//! The exam a command line sets beyond the scripts it names: the test
//! files, script entries and runner configuration that decide its result.
//!
//! [`verifier_paths`](crate::verifier_paths) reads the paths a command line runs by
//! name. A test runner's targets are not in the words: `cargo test --test
//! server` runs `tests/server.rs`, `npm test` runs `scripts.test` of
//! package.json, `make check` the Makefile's recipe; and a runner's
//! configuration (`.cargo/config.toml`, `.npmrc`, `pytest.ini`) changes
//! what it does. [`exam`] resolves them from a [`Tree`] (the workspace, or
//! a commit: this crate reads no files itself); [`launch_changes`] says
//! which keys of a configuration a change altered in a way that changes
//! how the runner is launched or what it runs; [`line_fate`] tells an exam
//! file that only gained lines from one whose lines were altered.
//!
//! Command lines are followed where they lead: `sh -c`, shell scripts run
//! by path, package scripts and make recipes are read as command lines of
//! their own (and the paths they name are exam files there). Besides the
//! tests a runner selects, the exam holds what they are judged by: the
//! helpers they pull in (Rust modules, Python imports, relative JS imports,
//! Go packages of the module), golden files and snapshots, and test-support
//! crates, where these lie on the tests' side of the workspace (a directory
//! named for tests or fixtures); elsewhere they are the code under test.
//! What cannot be known from the text is said in [`Exam::unresolved`].

mod cargo;
mod fate;
mod go;
mod ini;
mod make;
mod node;
mod python;
mod rust;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};

use crate::verifier::{self, Word};

pub use fate::{LineFate, entry_fate, gained_lines, line_fate, script_entry};

/// A tree of files the exam is read from: the workspace now, or a commit.
pub trait Tree {
    /// The file's bytes, `None` when it is absent (paths are
    /// workspace-relative, `/`-separated, normalised).
    fn read(&self, path: &str) -> Option<Vec<u8>>;
    /// Every file path under `dir` ("" = the root), recursively, sorted.
    fn files_under(&self, dir: &str) -> Vec<String>;
    /// Whether the file is present; the exam asks this of many candidates,
    /// so a tree that can answer without reading the file should.
    fn exists(&self, path: &str) -> bool {
        self.read(path).is_some()
    }
}

/// What a command line's result depends on beyond the scripts it names.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Exam {
    /// The exam's files and script entries, each once.
    pub files: Vec<ExamFile>,
    /// The runner configuration files the command depends on, present or
    /// not in the tree read (a file the change adds is seen by comparing).
    pub configs: Vec<RunnerConfig>,
    /// Tests the command runs that live in the code under test (unit tests,
    /// doctests) and cannot be told apart from it: warnings.
    pub in_code: Vec<String>,
    /// What could not be resolved, each a sentence naming what.
    pub unresolved: Vec<String>,
}

/// One part of the exam.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExamFile {
    /// The file, workspace-relative.
    pub path: String,
    /// Why it is part of the exam (e.g. "`cargo test --test server` runs it").
    pub why: String,
    /// The whole file, or one entry of it.
    pub kind: ExamKind,
}

/// Whether an exam part is a whole file or one entry of one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExamKind {
    /// The whole file.
    File,
    /// One script of a package.json, by its key (`scripts.test`); compare
    /// it with [`entry_fate`].
    ScriptEntry {
        /// The key path, `scripts.NAME`.
        key: String,
    },
}

/// A runner configuration file the command depends on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct RunnerConfig {
    /// The file, workspace-relative.
    pub path: String,
    /// The runner it configures, which decides how it is read.
    pub runner: Runner,
    /// The part of the file that configures the runner (`tool.pytest` of
    /// pyproject.toml, `jest` of package.json); `None` for the whole file.
    pub section: Option<String>,
}

/// The runners whose configuration is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Runner {
    /// `cargo test` (Cargo.toml, `.cargo/config.toml`).
    Cargo,
    /// `cargo nextest` (`.config/nextest.toml`).
    Nextest,
    /// The toolchain rustup picks (`rust-toolchain.toml`).
    Rustup,
    /// npm, pnpm or yarn (`.npmrc`, `.yarnrc.yml`, package.json).
    Npm,
    /// Vitest (`vitest.config.*`, `vite.config.*`).
    Vitest,
    /// Jest (`jest.config.*`, package.json `jest`, babel configuration).
    Jest,
    /// Mocha (`.mocharc.*`, package.json `mocha`).
    Mocha,
    /// pytest (`pytest.ini`, pyproject.toml `tool.pytest`, `conftest.py`).
    Pytest,
    /// `go test` (`go.work`, go.mod).
    Go,
    /// make (a makefile that would take precedence, or an `-include`d one).
    Make,
}

/// A key of a runner configuration whose change alters how the runner is
/// launched or what it runs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LaunchChange {
    /// The key, dotted within the file (`target.x86_64-unknown-linux-gnu.runner`,
    /// `script-shell`), or "the whole file".
    pub key: String,
    /// Its value at the base, `None` when unset.
    pub was: Option<String>,
    /// Its value now, `None` when unset.
    pub now: Option<String>,
}

/// The key of a change to a file that counts as a whole.
pub(crate) const WHOLE_FILE: &str = "the whole file";

/// Runners (and task runners) whose own selection of what runs is not read.
const UNREAD: [&str; 14] = [
    "tox", "nox", "gradle", "gradlew", "mvn", "mvnw", "dotnet", "ctest", "just", "task", "rake",
    "bazel", "bazelisk", "sbt",
];

/// How deep command lines are followed into scripts, recipes and `sh -c`.
const MAX_DEPTH: usize = 6;

/// The files that define `run`'s result beyond the scripts it names by path
/// (which [`verifier_paths`](crate::verifier_paths) reads), resolved in `tree`.
pub fn exam(run: &str, tree: &dyn Tree) -> Exam {
    let ctx = Ctx {
        tree,
        listings: RefCell::new(BTreeMap::new()),
    };
    let mut out = Found::default();
    ctx.line(
        run,
        "",
        &Scope {
            depth: 0,
            via: String::new(),
            named: false,
        },
        &mut out,
    );
    out.exam
}

/// Which keys of `config` the change from `base` to `now` altered in a way
/// that changes how the runner is launched or what it runs (`None`: the
/// file is absent).
pub fn launch_changes(
    config: &RunnerConfig,
    base: Option<&[u8]>,
    now: Option<&[u8]>,
) -> Vec<LaunchChange> {
    if base == now {
        return Vec::new();
    }
    let name = file_name(&config.path);
    let section = config.section.as_deref();
    match config.runner {
        Runner::Cargo if name == "Cargo.toml" => cargo::manifest_changes(base, now),
        Runner::Cargo => cargo::config_changes(base, now),
        Runner::Rustup => cargo::toolchain_changes(base, now),
        Runner::Npm => node::npm_changes(name, base, now),
        Runner::Vitest | Runner::Jest | Runner::Mocha => node::runner_changes(section, base, now),
        Runner::Pytest => python::pytest_changes(name, section, base, now),
        Runner::Go if name == "go.mod" => go::mod_changes(base, now),
        Runner::Make if section.is_some() => {
            make::make_changes(section.unwrap_or_default(), base, now)
        }
        Runner::Nextest | Runner::Go | Runner::Make => whole_file(base, now),
    }
}

/// A change to a file read as a whole: any change counts.
pub(crate) fn whole_file(base: Option<&[u8]>, now: Option<&[u8]>) -> Vec<LaunchChange> {
    if base == now {
        return Vec::new();
    }
    let size = |b: &[u8]| format!("{} bytes", b.len());
    vec![LaunchChange {
        key: WHOLE_FILE.to_owned(),
        was: base.map(size),
        now: now.map(size),
    }]
}

/// The keys of two flattened configurations whose values differ, among
/// those `counts` says alter the launch.
pub(crate) fn changed_keys(
    base: &BTreeMap<String, String>,
    now: &BTreeMap<String, String>,
    counts: impl Fn(&str) -> bool,
) -> Vec<LaunchChange> {
    let mut keys: Vec<&String> = base.keys().chain(now.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| counts(k) && base.get(*k) != now.get(*k))
        .map(|k| LaunchChange {
            key: k.clone(),
            was: base.get(k).cloned(),
            now: now.get(k).cloned(),
        })
        .collect()
}

/// An exam being collected, with its files and configurations indexed:
/// an exam may list thousands of files, each added once.
#[derive(Default)]
struct Found {
    exam: Exam,
    file_index: HashSet<(String, ExamKind)>,
    config_index: HashSet<RunnerConfig>,
}

impl std::ops::Deref for Found {
    type Target = Exam;

    fn deref(&self) -> &Exam {
        &self.exam
    }
}

impl Found {
    fn file(&mut self, path: &str, why: String, kind: ExamKind) {
        if self.file_index.insert((path.to_owned(), kind.clone())) {
            self.exam.files.push(ExamFile {
                path: path.to_owned(),
                why,
                kind,
            });
        }
    }

    fn config(&mut self, path: &str, runner: Runner, section: Option<&str>) {
        let config = RunnerConfig {
            path: path.to_owned(),
            runner,
            section: section.map(str::to_owned),
        };
        if self.config_index.insert(config.clone()) {
            self.exam.configs.push(config);
        }
    }

    fn in_code(&mut self, sentence: String) {
        if !self.exam.in_code.contains(&sentence) {
            self.exam.in_code.push(sentence);
        }
    }

    fn unresolved(&mut self, sentence: String) {
        if !self.exam.unresolved.contains(&sentence) {
            self.exam.unresolved.push(sentence);
        }
    }
}

/// The tree being read, with its directory listings kept once read.
struct Ctx<'a> {
    tree: &'a dyn Tree,
    listings: RefCell<BTreeMap<String, Vec<String>>>,
}

/// Where in the nesting of command lines a line is read.
#[derive(Clone)]
struct Scope {
    depth: usize,
    /// How the line was reached (" (from `npm test`)"), for the `why`s.
    via: String,
    /// Whether the paths the line names are exam files here: they are in a
    /// script or recipe, not on the criterion's own line (where the gate
    /// protects them already).
    named: bool,
}

/// One simple command of a runner, as the ecosystems read it.
struct Call<'a> {
    ctx: &'a Ctx<'a>,
    /// The directory it runs in, workspace-relative.
    dir: &'a str,
    /// The words after the command's name.
    args: &'a [Word],
    /// The command as written, for the `why`s.
    text: String,
    scope: &'a Scope,
}

impl Call<'_> {
    /// Why a file this command selects is part of the exam.
    fn why(&self) -> String {
        format!("`{}` runs it{}", self.text, self.scope.via)
    }

    /// The scope of a command line this command runs.
    fn nested(&self, named: bool) -> Scope {
        Scope {
            depth: self.scope.depth + 1,
            via: format!(" (from `{}`{})", self.text, self.scope.via),
            named,
        }
    }

    /// Reads a command line this command runs (a script, a recipe) in `dir`.
    fn run_line(&self, line: &str, dir: &str, out: &mut Found) {
        self.ctx.line(line, dir, &self.nested(true), out);
    }

    fn read_text(&self, path: &str) -> Option<String> {
        self.ctx.read_text(path)
    }
}

impl Ctx<'_> {
    fn read_text(&self, path: &str) -> Option<String> {
        self.tree
            .read(path)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    fn exists(&self, path: &str) -> bool {
        self.tree.exists(path)
    }

    /// The files under `dir`, listed once.
    fn files_under(&self, dir: &str) -> Vec<String> {
        if let Some(list) = self.listings.borrow().get(dir) {
            return list.clone();
        }
        let list = self.tree.files_under(dir);
        self.listings
            .borrow_mut()
            .insert(dir.to_owned(), list.clone());
        list
    }

    /// Whether `dir` holds any file.
    fn is_dir(&self, dir: &str) -> bool {
        !self.files_under(dir).is_empty()
    }

    /// Reads one command line run in `dir`.
    fn line(&self, run: &str, dir: &str, scope: &Scope, out: &mut Found) {
        if scope.depth > MAX_DEPTH {
            out.unresolved(format!(
                "`{}` is nested more than {MAX_DEPTH} deep{}: it was not read",
                first_line(run),
                scope.via
            ));
            return;
        }
        if scope.named {
            self.named_paths(run, dir, scope, out);
        }
        let mut cwd = dir.to_owned();
        for words in verifier::simple_commands(run) {
            if words[0].text == "cd" && !words[0].expands {
                let Some(next) = cd_target(&cwd, &words) else {
                    out.unresolved(format!(
                        "`{}` moves into a directory not known from the text{}: what follows it was not read",
                        text_of(&words),
                        scope.via
                    ));
                    return;
                };
                cwd = next;
                continue;
            }
            self.command(&words, &cwd, scope, out);
        }
    }

    /// The files a script or recipe names by path (`node x.js`, `./t.sh`).
    fn named_paths(&self, run: &str, dir: &str, scope: &Scope, out: &mut Found) {
        for found in verifier::verifier_paths(run) {
            let path = verifier::join(dir, &found.path);
            if found.module && !self.exists(&path) {
                continue;
            }
            let lines: Vec<&str> = run.lines().filter(|l| !l.trim().is_empty()).collect();
            let why = match lines[..] {
                [one] => format!("`{}` runs it{}", one.trim(), scope.via),
                _ => format!("it is run by name{}", scope.via),
            };
            if self.is_dir(&path) && !self.exists(&path) {
                // A runner given a directory: its own module reads it.
                continue;
            }
            out.file(&path, why, ExamKind::File);
        }
    }

    /// Reads one simple command: a runner's, a shell's, or a script run by path.
    fn command(&self, words: &[Word], dir: &str, scope: &Scope, out: &mut Found) {
        let i = verifier::command_index(words);
        let Some(cmd) = words.get(i) else { return };
        // The command index skips expansions: one before it may be the command.
        if cmd.expands
            || words[..i]
                .iter()
                .any(|w| w.expands && !verifier::is_assignment(&w.text))
        {
            out.unresolved(format!(
                "`{}` names its command through an expansion{}: what it runs is not known",
                text_of(words),
                scope.via
            ));
            return;
        }
        let call = Call {
            ctx: self,
            dir,
            args: &words[i + 1..],
            text: text_of(&words[i..]),
            scope,
        };
        let name = verifier::base_name(&cmd.text);
        match name {
            "cargo" => cargo::exam(&call, out),
            "go" => go::exam(&call, out),
            "npm" | "pnpm" | "yarn" => node::package_manager(name, &call, out),
            "vitest" | "jest" | "mocha" => node::runner(name, &call, out),
            "make" | "gmake" => make::exam(&call, out),
            "pytest" | "py.test" => python::pytest(&call, call.args, out),
            "uv" | "poetry" | "pdm" | "pipenv" | "hatch" | "rye" => {
                // `uv run pytest`: the command after `run` is the runner.
                if let Some(at) = call.args.iter().position(|w| w.text == "run") {
                    let rest = &call.args[at + 1..];
                    let skip = rest.iter().take_while(|w| w.text.starts_with('-')).count();
                    self.command(&rest[skip..], dir, scope, out);
                }
            }
            n if n.starts_with("python") => python::interpreter(&call, out),
            n if UNREAD.contains(&n)
                || (matches!(n, "bun" | "deno")
                    && call.args.first().is_some_and(|w| w.text == "test")) =>
            {
                out.unresolved(format!(
                    "`{}` runs what `{n}` selects, which is not read{}",
                    call.text, scope.via
                ));
            }
            _ => self.other(words, dir, scope, out),
        }
    }

    /// A shell's `-c` line, or a shell script the command runs by path,
    /// whose text is read as a command line of its own.
    fn other(&self, words: &[Word], dir: &str, scope: &Scope, out: &mut Found) {
        let mut found = Vec::new();
        if let Some(line) = verifier::runs(words, &mut found) {
            let nested = Scope {
                depth: scope.depth + 1,
                ..scope.clone()
            };
            self.line(&line, dir, &nested, out);
            return;
        }
        for script in found.into_iter().filter(|f| !f.module) {
            let path = verifier::join(dir, &script.path);
            let Some(text) = self.read_text(&path) else {
                continue;
            };
            if !is_shell_script(&path, &text) {
                continue;
            }
            let nested = Scope {
                depth: scope.depth + 1,
                via: format!(" (from `{path}`{})", scope.via),
                named: true,
            };
            // A script runs in its caller's directory; `$0` is its path
            // as the caller wrote it.
            let own_dir = dir_word(parent(&script.path));
            let text = SCRIPT_DIR
                .iter()
                .fold(text, |t, form| t.replace(form, &own_dir));
            self.line(&text, dir, &nested, out);
        }
    }
}

/// How scripts write their own directory (`cd "$(dirname "$0")/.."`).
const SCRIPT_DIR: [&str; 5] = [
    "$(dirname \"$0\")",
    "$(dirname $0)",
    "$(dirname \"${BASH_SOURCE[0]}\")",
    "$(dirname ${BASH_SOURCE[0]})",
    "$(dirname \"$BASH_SOURCE\")",
];

/// A directory as a word `cd` can take (`.` for the root).
fn dir_word(dir: &str) -> String {
    if dir.is_empty() {
        ".".to_owned()
    } else {
        dir.to_owned()
    }
}

/// Whether a file is a shell script: by its extension or its `#!` line.
fn is_shell_script(path: &str, text: &str) -> bool {
    if [".sh", ".bash"].iter().any(|e| path.ends_with(e)) {
        return true;
    }
    text.lines().next().is_some_and(|l| {
        l.starts_with("#!")
            && ["sh", "bash", "dash", "zsh", "ksh"]
                .iter()
                .any(|s| l.split(['/', ' ']).any(|w| w == *s))
    })
}

/// Where `cd` moves from `cwd`, when the text says.
fn cd_target(cwd: &str, words: &[Word]) -> Option<String> {
    match words.get(1) {
        Some(w) if !w.expands && words.len() == 2 => resolve(cwd, &w.text),
        _ => None,
    }
}

/// The words of a command as written, for messages.
fn text_of(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn first_line(run: &str) -> &str {
    run.lines().next().unwrap_or_default().trim()
}

/// `rel` from the workspace-relative directory `dir`, normalised; `None`
/// when it is absolute or leaves the workspace.
fn resolve(dir: &str, rel: &str) -> Option<String> {
    if rel.starts_with('/') || rel.contains('\0') || rel.contains("://") {
        return None;
    }
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// `name` in the directory `dir` ("" = the root).
fn in_dir(dir: &str, name: &str) -> String {
    verifier::join(dir, name)
}

/// The directory of a workspace-relative path ("" at the root).
fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// A file's extension, as written (`rs` of `a/b.rs`).
fn extension(path: &str) -> Option<&str> {
    file_name(path).rsplit_once('.').map(|(_, e)| e)
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `dir` and each directory above it, up to the root ("").
fn ancestors(dir: &str) -> Vec<String> {
    let mut out = vec![dir.to_owned()];
    let mut d = dir;
    while !d.is_empty() {
        d = parent(d);
        out.push(d.to_owned());
    }
    out
}

/// A glob over workspace-relative paths, `*` not crossing `/`.
fn glob(pattern: &str) -> Option<globset::GlobMatcher> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// Whether a file lies on the tests' side of a workspace: in a directory
/// named for tests or fixtures (`tests/`, `__tests__/`, `testutil/`,
/// `fixtures/`). A helper a test imports is part of the exam only there;
/// elsewhere it is the code under test.
fn test_side(path: &str) -> bool {
    let dir = parent(path);
    !dir.is_empty()
        && dir.split('/').any(|c| {
            let c = c.to_ascii_lowercase();
            c.starts_with("test")
                || c.ends_with("tests")
                || c.ends_with("_test")
                || c == "__tests__"
                || c == "spec"
                || c == "e2e"
                || c.contains("fixture")
        })
}

/// Whether a word holds glob characters.
fn is_glob(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// Whether an operand of a runner looks like a path rather than a filter:
/// it holds a `/` or ends in a file extension.
fn looks_like_path(text: &str) -> bool {
    text.contains('/')
        || text.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty() && !ext.is_empty() && ext.chars().all(|c| c.is_ascii_alphanumeric())
        })
}

#[cfg(test)]
pub(crate) mod testing {
    //! An in-memory [`Tree`] for the tables of each ecosystem.

    use super::Tree;
    use std::collections::BTreeMap;

    /// Files by path.
    pub(crate) struct Mem(pub(crate) BTreeMap<String, Vec<u8>>);

    impl Mem {
        pub(crate) fn new(files: &[(&str, &str)]) -> Self {
            Self(
                files
                    .iter()
                    .map(|(p, t)| ((*p).to_owned(), t.as_bytes().to_vec()))
                    .collect(),
            )
        }
    }

    impl Tree for Mem {
        fn read(&self, path: &str) -> Option<Vec<u8>> {
            self.0.get(path).cloned()
        }

        fn files_under(&self, dir: &str) -> Vec<String> {
            self.0
                .keys()
                .filter(|p| dir.is_empty() || p.starts_with(&format!("{dir}/")))
                .cloned()
                .collect()
        }
    }

    /// The exam's file paths (script entries as `path#key`).
    pub(crate) fn files(exam: &super::Exam) -> Vec<String> {
        exam.files
            .iter()
            .map(|f| match &f.kind {
                super::ExamKind::File => f.path.clone(),
                super::ExamKind::ScriptEntry { key } => format!("{}#{key}", f.path),
            })
            .collect()
    }

    /// The exam's config paths (with `#section`).
    pub(crate) fn configs(exam: &super::Exam) -> Vec<String> {
        exam.configs
            .iter()
            .map(|c| match &c.section {
                None => c.path.clone(),
                Some(s) => format!("{}#{s}", c.path),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{Mem, files};
    use super::*;

    #[test]
    fn scripts_and_nesting() {
        let tree = Mem::new(&[
            (
                "scripts/test.sh",
                "#!/bin/sh\nset -e\ncd \"$(dirname \"$0\")/..\"\ncargo test --test server\n",
            ),
            ("Cargo.toml", "[package]\nname = \"app\"\n"),
            ("tests/server.rs", "#[test] fn t() {}\n"),
            ("ci/run", "#!/usr/bin/env bash\npython3 tests/x.py\n"),
            (
                "app/scripts/t.sh",
                "#!/bin/bash\ncd \"$(dirname \"${BASH_SOURCE[0]}\")/..\"\ncargo test --test it\n",
            ),
            ("app/Cargo.toml", "[package]\nname = \"app2\"\n"),
            ("app/tests/it.rs", "\n"),
        ]);
        // (command line, exam files, whether something is unresolved)
        let cases: &[(&str, &[&str], bool)] = &[
            ("./scripts/test.sh", &["tests/server.rs"], false),
            (
                "sh -c 'cargo test --test server'",
                &["tests/server.rs"],
                false,
            ),
            ("ci/run", &["tests/x.py"], false),
            ("cd app && bash scripts/t.sh", &["app/tests/it.rs"], false),
            ("$RUNNER test", &[], true),
            ("tox -e py311", &[], true),
            ("./gradlew test", &[], true),
            ("cd \"$D\" && cargo test", &[], true),
            (
                "cd . && cargo test --test server",
                &["tests/server.rs"],
                false,
            ),
        ];
        for (run, want, unresolved) in cases {
            let got = exam(run, &tree);
            assert_eq!(files(&got), *want, "{run}");
            assert_eq!(!got.unresolved.is_empty(), *unresolved, "{run}: {got:?}");
        }
    }

    #[test]
    fn an_exam_serialises_for_the_evidence() {
        let tree = Mem::new(&[("package.json", r#"{"scripts": {"test": "jest"}}"#)]);
        let value = serde_json::to_value(exam("npm test", &tree)).unwrap();
        assert_eq!(
            value["files"][1]["kind"],
            serde_json::json!({"script-entry": {"key": "scripts.test"}})
        );
        assert_eq!(value["configs"][0]["runner"], "npm");
        assert_eq!(
            serde_json::to_value(LineFate::OnlyGained).unwrap(),
            "only-gained"
        );
    }

    /// Malformed files and command lines are read without a panic.
    #[test]
    fn what_is_malformed_is_read_without_a_panic() {
        let tree = Mem::new(&[
            ("Cargo.toml", "[package\nname = "),
            (
                "crates/a/Cargo.toml",
                "[package]\nname = \"a\"\n[[test]]\npath = 3\n",
            ),
            ("tests/x.rs", "mod \"é\"; /* unterminated r#\"x include!("),
            ("tests/y.rs", "'\\"),
            ("package.json", "{\"scripts\": {\"test\": \"npm test\"}"),
            ("Makefile", "check: $(\n\t$(MAKE) -C $${X\ninclude $(\n\\"),
            ("pytest.ini", "[pytest\naddopts"),
            ("pyproject.toml", "[tool.pytest.ini_options\n"),
            ("go.mod", "module\nreplace (\n=>\n"),
            ("é/ü.test.ts", "import x from '../../../../x'; require('"),
            ("scripts/loop.sh", "#!/bin/sh\n./scripts/loop.sh\n"),
        ]);
        let runs = [
            "cargo test --test x -p",
            "cargo test --manifest-path crates/a/Cargo.toml --test '['",
            "npm test",
            "npm run",
            "make check -C",
            "make -f",
            "pytest -c",
            "python -m",
            "go test -C",
            "go test ...",
            "vitest run '[' -c",
            "./scripts/loop.sh",
            "sh -c 'sh -c \"sh -c ./scripts/loop.sh\"'",
            "cd é && jest ü",
            "\"unterminated",
            "$(",
        ];
        for run in runs {
            let _ = exam(run, &tree);
        }
        for config in [
            "Cargo.toml",
            ".cargo/config",
            "rust-toolchain",
            "package.json",
            ".npmrc",
        ] {
            for runner in [
                Runner::Cargo,
                Runner::Rustup,
                Runner::Npm,
                Runner::Pytest,
                Runner::Make,
            ] {
                let c = RunnerConfig {
                    path: config.to_owned(),
                    runner,
                    section: Some("x | y".to_owned()),
                };
                let _ = launch_changes(&c, Some(b"\xff\xfe["), Some(b"[a]\nb = 1"));
            }
        }
        let _ = line_fate(b"\xff\n", b"");
    }

    #[test]
    fn paths_resolve_within_the_workspace() {
        let cases = [
            ("", "a/./b", Some("a/b")),
            ("x/y", "../z", Some("x/z")),
            ("x", "../..", None),
            ("", "/abs", None),
            ("x", ".", Some("x")),
        ];
        for (dir, rel, want) in cases {
            assert_eq!(resolve(dir, rel).as_deref(), want, "{dir} {rel}");
        }
        assert_eq!(ancestors("a/b"), ["a/b", "a", ""]);
    }
}
