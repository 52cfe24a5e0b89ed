//! House rules: conventions tests cannot check, written next to the code in
//! `docs/review/rules.toml` files and asked of a model as yes/no questions.
//!
//! # Layout
//! - [`model`]: a rule as written and as used; parsing and located errors.
//! - [`discover`]: finding rules files (all of them, or walking up from files).
//! - [`scope`]: the rules in effect and which apply to a file; the cap.
//! - [`ask`]: rules as questions in review, answers as findings.
//! - [`design`]: design rules, asked of a page's screenshots.
//! - [`trial`]: rule tests over labelled cases, and their margin.
//! - [`tested`]: writing a test's result back into the rules file.
//! - [`errors`]: what can go wrong, located.
//!
//! A rule applies to its home (the folder holding its `docs/review/`) and
//! below, narrowed by `applies` globs relative to the home; `reference` and
//! a case's `file` are relative to the workspace root.

pub mod ask;
pub mod design;
pub mod discover;
pub mod errors;
pub mod model;
pub mod scope;
pub mod tested;
pub mod trial;

pub use errors::RulesError;
pub use scope::RuleSet;

#[cfg(test)]
mod tests;
