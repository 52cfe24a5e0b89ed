//! The gate's spec file: tasks, acceptance criteria, cross-checks and policy.
//!
//! # Layout
//! - [`model`]: the typed spec, one struct per table of `gate.toml`.
//! - [`errors`]: every way a spec can be wrong, each with file, line and column.
//! - [`exam`](mod@exam): the test files, script entries and runner configuration a
//!   command line's result depends on beyond the scripts it names.
//! - [`globs`]: input and path globs, compiled once, matched on workspace-relative paths.
//! - [`graph`]: the task graph and the check graph (petgraph), cycle reports.
//! - [`locate`]: key paths to line and column, for TOML and JSON alike.
//! - [`source`]: reading the files the gate is configured by, bounded in
//!   size, and their bytes as UTF-8 text.
//! - [`verifier`]: the workspace paths a check's or criterion's command
//!   line runs (the verifiers the gate protects).
//!
//! This crate does no I/O beyond reading configuration files and depends on
//! no other crate of the workspace.

pub mod errors;
pub mod exam;
pub mod globs;
pub mod graph;
pub mod locate;
pub mod model;
mod parse;
pub mod source;
mod validate;
pub mod verifier;

use std::path::Path;

pub use errors::{MAX_ERRORS, SpecError, SpecErrorKind, SpecErrors};
pub use exam::{
    Exam, ExamFile, ExamKind, Gain, LaunchChange, LineFate, Runner, RunnerConfig, Tree, entry_fate,
    exam, gain, gained_lines, launch_changes, line_fate, package_code_gain, script_entry,
};
pub use globs::InputGlobs;
pub use graph::{CheckGraph, GraphCycle, NodeKind, TaskGraph};
pub use locate::{Locator, Position, Seg};
pub use model::{
    BaseRuns, BuiltinExclude, BuiltinExcludeByCheck, Check, Criterion, Decider, EvalSection,
    Expect, LedgerSection, MutantsPolicy, OnBelow, OnReviewUnavailable, Page, Policy,
    ReviewUnavailable, SandboxMode, SandboxNetwork, SandboxSection, Spec, SpecMeta, Starts, Task,
    TaskTests,
};
pub use parse::from_toml_str;
pub use source::{TEXT_MAX_BYTES, read_bounded, read_text_bounded, text_of, within};
pub use verifier::{VerifierPath, verifier_paths, verifier_programs};

/// The two spellings of a spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `gate.toml`.
    Toml,
    /// The same schema as JSON.
    Json,
}

impl Format {
    /// JSON for a `.json` file, TOML otherwise.
    pub fn from_path(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("json") => Self::Json,
            _ => Self::Toml,
        }
    }
}

/// Reads, parses and validates the spec at `path`.
pub fn load(path: &Path) -> Result<Spec, SpecErrors> {
    let bytes = read_bounded(path, TEXT_MAX_BYTES).map_err(|e| {
        SpecErrors::from(SpecError::new(
            path,
            0,
            0,
            SpecErrorKind::Read(e.to_string()),
        ))
    })?;
    parse_str(text_of(&bytes, path)?, path, Format::from_path(path))
}

/// Parses and validates spec text; `file` is only used to name it in errors.
pub fn parse_str(text: &str, file: &Path, format: Format) -> Result<Spec, SpecErrors> {
    let spec = parse::parse(text, file, format)?;
    validate::validate(&spec, text, file, format).map_err(|e| SpecErrors::capped(e.0))?;
    Ok(spec)
}
