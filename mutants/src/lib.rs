//! Mutants of a change's own lines: plausible wrong versions of the code a
//! change wrote, and how well a set of checks notices them.
//!
//! # Layout
//! - [`diff`]: the lines a change added or modified, read from a `git diff
//!   -U0` of the change against its base.
//! - [`language`]: which grammar parses a file (tree-sitter's Python, Rust,
//!   TypeScript, JavaScript and Go), and which files are never mutated
//!   (tests, generated files).
//! - [`operators`]: the mutation operators, per language, applied to the
//!   syntax tree of a file on its changed lines only.
//! - [`mutant`]: one mutant, its one-line diff, applying it, and what a
//!   run made of it ([`mutant::Status`]).
//! - [`score`]: per-criterion and per-group tallies and scores.
//! - [`report`]: the record of a scoring (a document with a JSON Schema)
//!   and its readable text.
//! - [`errors`]: what can go wrong.
//!
//! The crate runs nothing and reads no file: the caller hands it text and
//! changed lines, runs each mutant, and hands the results back to score.
//! It depends on no crate of the gate's.

pub mod diff;
pub mod errors;
pub mod language;
pub mod mutant;
pub mod operators;
pub mod report;
pub mod score;

pub use errors::MutantsError;
pub use language::Language;
pub use mutant::{Mutant, Operator, Status};
pub use operators::generate;
