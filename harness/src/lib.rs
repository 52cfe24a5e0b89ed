//! Plain-code cross-checks, run before any model is asked anything.
//!
//! # Layout
//! - [`process`]: one subprocess in its own process group, with a timeout,
//!   concurrent capped capture of stdout and stderr, and a group kill.
//! - [`probe`]: readiness probes for service checks (TCP, HTTP, a log line).
//! - [`schedule`]: runs a set of [`Item`]s in `after` order with bounded
//!   concurrency, keeps services up while their dependents run.
//! - [`junit`]: the per-task unit-test report precondition.
//! - [`builtin`]: built-in checks (conflict markers, secrets, parse checks).
//! - [`page`]: page checks: a page of the workspace's server captured in
//!   headless Chromium at desktop and phone width, overflow and contrast
//!   measured.
//! - [`secrets`]: the secret shapes the secrets check looks for and that
//!   captured output is redacted of.
//! - [`sandbox`]: the isolation policy every process for the workspace runs
//!   under, and the one place it becomes a bubblewrap command line.
//! - [`file_calls`]: every system call that names or reaches a file, per
//!   calling convention, watched by the tracers or refused by the sandbox.
//! - [`seccomp`]: the system calls refused inside every sandbox.
//! - [`system`]: the host's system folders, read-only in every sandbox.
//! - [`netns`]: the process that holds a run's private network namespace.
//! - [`inside`]: what the gate's executable runs inside that namespace (the
//!   probes and the browser bridge a [`sandbox::Helper`] asks for).
//!
//! Workers report [`Event`]s over a channel and never print.

// Test code may run long: a scenario reads best whole.
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod bpf;
pub mod builtin;
pub mod errors;
pub mod file_calls;
pub mod inside;
pub mod junit;
pub mod netns;
pub mod page;
pub mod probe;
pub mod process;
pub mod sandbox;
pub mod schedule;
pub mod seccomp;
pub mod secrets;
pub mod seed;
pub mod system;
#[cfg(test)]
mod testutil;
pub mod trace;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use gate_specs::Starts;
use serde::{Deserialize, Serialize};

pub use errors::HarnessError;
pub use sandbox::{Launcher, Sandbox};
pub use schedule::run;

/// What kind of spec entry an item stands for (for grouping in reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// A `[[check]]`.
    Check,
    /// A task's `tests` precondition (`<task>.tests`).
    TaskTests,
    /// A plain-code `[[task.criterion]]`.
    Criterion,
    /// A built-in check.
    Builtin,
    /// A `[[page]]`: captured in a headless browser, overflow and contrast measured.
    Page,
}

/// One unit of work for the harness.
#[derive(Debug, Clone)]
pub struct Item {
    /// Unique id (the spec's id; `<task>.tests`; `builtin.<name>`).
    pub id: String,
    /// What it stands for.
    pub kind: ItemKind,
    /// What to do.
    pub action: Action,
    /// Items that must pass first; a service named here stays up while this runs.
    pub after: Vec<String>,
    /// Time limit for a command (a service's readiness window is in `starts`).
    pub timeout: Duration,
}

/// A workspace path an item's command names, which must exist when the
/// item is about to start (after the checks it runs `after`): a verifier
/// the spec relies on, not one the change may create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// Workspace-relative.
    pub path: String,
    /// The command runs it directly, so it must be executable.
    pub direct: bool,
    /// It must exist: it did not before the change, so the change cannot
    /// have removed it (one that did is the protected-verifier rule's).
    pub must_exist: bool,
}

/// What an item does.
#[derive(Debug, Clone)]
pub enum Action {
    /// A shell command (`sh -c`); with `starts`, a service that must become ready.
    Command {
        /// The command line.
        run: String,
        /// Readiness rules when this starts a service.
        starts: Option<Starts>,
    },
    /// A task's JUnit report: must exist, parse, hold at least one test, no
    /// failure or error, and not be stale.
    JunitReport {
        /// Workspace-relative path of the report.
        report: String,
        /// Why the report is not the one for the task's files as they are,
        /// when the caller found it is not (decided by content).
        stale: Option<String>,
        /// Folders and files the report may not lead into (the gate's
        /// state and secrets): a report linked there is refused unread.
        refused: Vec<std::path::PathBuf>,
    },
    /// A check built into the gate.
    Builtin {
        /// Which one.
        check: Builtin,
        /// Files it does not look at (`[policy] builtin_exclude`).
        exclude: Option<gate_specs::InputGlobs>,
    },
    /// A page captured in a headless browser (boxed: it is much larger than the rest).
    Page(Box<page::PageCapture>),
}

impl Action {
    /// Whether it starts processes (a command, a page's browser): the
    /// built-in checks and report reading run inside the gate.
    pub fn starts_processes(&self) -> bool {
        matches!(self, Self::Command { .. } | Self::Page(_))
    }
}

/// The built-in checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Builtin {
    /// Unresolved merge-conflict markers.
    Conflicts,
    /// Committed private keys and common API-token shapes.
    Secrets,
    /// JSON, TOML and YAML files that do not parse.
    Parse,
}

impl Builtin {
    /// Every built-in check, in the order a run lists them.
    pub const ALL: [Self; 3] = [Self::Conflicts, Self::Secrets, Self::Parse];

    /// Its name in `[policy]` (`builtin_<name>`, `builtin_exclude.<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Conflicts => "conflicts",
            Self::Secrets => "secrets",
            Self::Parse => "parse",
        }
    }

    /// The item id the gate gives this check.
    pub fn id(self) -> &'static str {
        match self {
            Self::Conflicts => "builtin.conflicts",
            Self::Secrets => "builtin.secrets",
            Self::Parse => "builtin.parse",
        }
    }
}

/// How a run of items is carried out.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The workspace: every command's working directory, every path's root.
    pub workspace: PathBuf,
    /// At most this many items run at once (at least 1).
    pub concurrency: usize,
    /// Bytes of output kept per item; the rest is counted.
    pub output_cap: usize,
    /// Workspace-relative files (from the snapshot) the built-in checks and
    /// report freshness look at; symlinks are never in it.
    pub files: Arc<Vec<String>>,
    /// Ids verified earlier and not re-run: they count as passed for `after`.
    pub satisfied: HashSet<String>,
    /// Exact strings (secret environment values) to redact from captured output.
    pub redact: Arc<Vec<String>>,
    /// How every process is started: its environment and its sandbox.
    pub launcher: Arc<Launcher>,
    /// By item id: how the processes of an item that has folders of its
    /// own start (`launcher` with its `/tmp`, `/var/tmp` and home and what
    /// it starts from, [`Launcher::with_private`]); an item not named here
    /// uses `launcher`.
    pub launchers: Arc<std::collections::HashMap<String, Arc<Launcher>>>,
    /// By item id: workspace paths its command names that must be there
    /// when it is about to start.
    pub requires: Arc<std::collections::HashMap<String, Vec<Requirement>>>,
}

/// Final state of one item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Exit 0, ready in time, or no problem found.
    Passed,
    /// Anything else.
    Failed,
    /// Not run because something it depends on failed (or the run was cancelled).
    Skipped,
}

/// Captured output of an item: a bounded tail, and a digest of all of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Output {
    /// The last bytes kept (at most the cap), lossily decoded, secrets redacted.
    pub tail: String,
    /// Bytes the process wrote in all.
    pub total_bytes: u64,
    /// Bytes dropped because of the cap.
    pub dropped_bytes: u64,
    /// blake3 (hex) over every byte written, in arrival order, before redaction.
    pub digest: String,
}

/// A problem a built-in or report check found at a place in the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Location {
    /// Workspace-relative file.
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<u32>,
    /// What is wrong there.
    pub message: String,
}

/// The result of one item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemResult {
    /// The item's id.
    pub id: String,
    /// What it stands for.
    pub kind: ItemKind,
    /// Final state.
    pub status: Status,
    /// The command's exit code, when it exited on its own (a service that
    /// exited while its dependents ran has one too, though it passed).
    pub exit_code: Option<i32>,
    /// Wall time from start to final state (for a service: until it was ready).
    pub duration: Duration,
    /// Why it failed or was skipped, in one line ("exited with status 2",
    /// "timed out after 5 s", "dependency `build` failed", …).
    pub reason: Option<String>,
    /// Captured output.
    pub output: Output,
    /// Places a built-in or report check pointed at.
    pub locations: Vec<Location>,
    /// Set when the item could not start because the spec names a verifier
    /// that is not there: a fault of the spec, not of the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_error: Option<String>,
    /// What its processes touched in the workspace, when they were traced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<Box<crate::trace::Accesses>>,
}

/// Progress, reported as it happens.
#[derive(Debug, Clone)]
pub enum Event {
    /// An item started.
    Started {
        /// Its id.
        id: String,
    },
    /// A service check became ready (it keeps running).
    Ready {
        /// Its id.
        id: String,
    },
    /// An item reached its final state (a service: once its group is
    /// stopped, after [`Event::Stopped`], so its output is complete).
    Finished(ItemResult),
    /// A service's process group was stopped.
    Stopped {
        /// Its id.
        id: String,
    },
}
