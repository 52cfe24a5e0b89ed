//! The exam's public types ([`Exam`], its files and runner configurations,
//! [`LaunchChange`]), the [`Tree`] it is read from, and the two ways every
//! runner's configuration change is reported ([`whole_file`], [`changed_keys`]).

use std::collections::BTreeMap;

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
    /// it with [`entry_fate`](super::entry_fate).
    ScriptEntry {
        /// The key path, `scripts.NAME`.
        key: String,
    },
    /// A file of the code under test that the runner builds into the test
    /// binary with the tests (a non-test `.go` file of a package `go test`
    /// runs): changing it is the change's work, but what of it runs when the
    /// binary starts (`init()`, an exit) decides whether any test runs, so
    /// that part is the exam; compare it with [`package_code_gain`](super::package_code_gain).
    PackageCode,
}

/// What the lines a change added to an exam file can do.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Gain {
    /// Nothing that runs: no line was added (or only comments and blank lines).
    Nothing,
    /// Test functions or cases only: they run as tests of their own, and
    /// every test from before still runs as it did.
    Tests,
    /// Something that runs when the file is imported, its package starts or
    /// the test binary starts, or that changes what an old test does: the
    /// exam itself is edited.
    Runs {
        /// The 1-based line in the file now.
        line: usize,
        /// What it does, as a sentence fragment (`adds \`TestMain\`, …`).
        why: String,
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
    /// Python's module search for `python -m pytest` or `-m unittest`: the
    /// working directory comes first, so a `pytest.py` there is run in
    /// place of the installed runner.
    Module,
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

impl LaunchChange {
    /// Whether the change is to a file read as a whole, not to one key.
    pub fn is_whole_file(&self) -> bool {
        self.key == WHOLE_FILE
    }
}

/// The key of a change to a file that counts as a whole.
pub(super) const WHOLE_FILE: &str = "the whole file";

/// A change to a file read as a whole: any change counts.
pub(super) fn whole_file(base: Option<&[u8]>, now: Option<&[u8]>) -> Vec<LaunchChange> {
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
pub(super) fn changed_keys(
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
