//! House rules: conventions tests cannot check, written next to the code in
//! `docs/review/rules.toml` files and asked of a model as yes/no questions.
//! This module holds the rules as data; asking them is the review's
//! ([`crate::review::house_rules`], [`crate::review::design_rules`],
//! [`crate::review::rule_trial`]), which reads them from here and never
//! the other way.
//!
//! # Layout
//! - [`model`]: a rule as written and as used; parsing and located errors.
//! - [`discover`]: finding rules files (all of them, or walking up from files).
//! - [`scope`]: the rules in effect and which apply to a file; the cap.
//! - [`write_back`]: writing a test's result back into the rules file.
//! - [`errors`]: what can go wrong, located.
//!
//! A rule applies to its home (the folder holding its `docs/review/`) and
//! below, narrowed by `applies` globs relative to the home; `reference` and
//! a case's `file` are relative to the workspace root.

pub mod discover;
pub mod errors;
pub mod model;
pub mod scope;
pub mod write_back;

pub use errors::RulesError;
pub use scope::RuleSet;

#[cfg(test)]
mod tests;
