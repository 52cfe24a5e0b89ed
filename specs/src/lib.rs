//! The gate's spec file: tasks, acceptance criteria, cross-checks and policy.
//!
//! # Layout
//! - [`model`]: the typed spec, one struct per table of `gate.toml`.
//! - [`errors`]: every way a spec can be wrong, each with file, line and column.
//! - [`globs`]: input and path globs, compiled once, matched on workspace-relative paths.
//! - [`graph`]: the task graph and the check graph (petgraph), cycle reports.
//! - [`locate`]: key paths to line and column, for TOML and JSON alike.
//!
//! This crate does no I/O beyond reading the spec file and depends on no other
//! crate of the workspace.

pub mod errors;
pub mod globs;
pub mod graph;
pub mod locate;
pub mod model;
mod parse;
mod validate;

use std::path::Path;

pub use errors::{SpecError, SpecErrorKind, SpecErrors};
pub use globs::InputGlobs;
pub use graph::{CheckGraph, GraphCycle, ItemKind, TaskGraph};
pub use locate::{Locator, Position, Seg};
pub use model::{
    Check, Criterion, Decider, LedgerSection, OnReviewUnavailable, Page, Policy, Spec, SpecMeta,
    Starts, Task, TaskTests,
};
pub use parse::from_toml_str;

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
    let bytes = std::fs::read(path).map_err(|e| {
        SpecErrors::from(SpecError::new(
            path,
            0,
            0,
            SpecErrorKind::Read(e.to_string()),
        ))
    })?;
    parse_str(text_of(&bytes, path)?, path, Format::from_path(path))
}

/// A TOML or JSON file's bytes as text. Both formats are UTF-8, so a byte
/// that is not is an error at its line and column, never a silent
/// replacement.
pub fn text_of<'a>(bytes: &'a [u8], file: &Path) -> Result<&'a str, SpecError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let good = e.valid_up_to();
        // The bytes before the bad one are UTF-8 by definition.
        let before = std::str::from_utf8(&bytes[..good]).unwrap_or_default();
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        SpecError::new(
            file,
            before.matches('\n').count() + 1,
            before[line_start..].chars().count() + 1,
            SpecErrorKind::NotUtf8 {
                byte: bytes.get(good).copied().unwrap_or_default(),
            },
        )
    })
}

/// Parses and validates spec text; `file` is only used to name it in errors.
pub fn parse_str(text: &str, file: &Path, format: Format) -> Result<Spec, SpecErrors> {
    let spec = parse::parse(text, file, format)?;
    validate::validate(&spec, text, file, format)?;
    Ok(spec)
}
