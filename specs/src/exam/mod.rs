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
//! file that only gained lines from one whose lines were altered, and
//! [`gain`] what the lines it gained can do (a test of their own, or code
//! that runs at import, package init or the test binary's start).
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
//!
//! # Layout
//! Dependencies point one way: the ecosystems import the leaves, the
//! dispatch and [`launch_changes`] import the ecosystems, and this module
//! only declares and re-exports.
//! - `model`: the public types and [`Tree`]; the two ways a configuration
//!   change is reported.
//! - `path`: workspace-relative paths, globs, the tests' side.
//! - `walk`: the context a command line is read in, the exam being
//!   collected, and `Follow`, through which ecosystems read nested lines.
//! - `fate`: what a change did to an exam file or entry.
//! - `gain`: what the lines added to an exam file can do.
//! - `constraint`: Go build constraints, evaluated for one `go test`.
//! - `ini`: ini files (`.npmrc`, `pytest.ini`, `setup.cfg`).
//! - `cargo`, `rust`, `go`, `node`, `python`, `make`: each ecosystem's
//!   runners, their test files, helpers and configuration.
//! - `line`: the dispatch of a command line to the ecosystems, and [`exam`].
//! - `launch`: [`launch_changes`], by runner.

mod cargo;
mod constraint;
mod fate;
mod gain;
mod go;
mod ini;
mod launch;
mod line;
mod make;
mod model;
mod node;
mod path;
mod python;
mod rust;
mod walk;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod testutil;

pub use fate::{LineFate, entry_fate, gained_lines, line_fate, script_entry};
pub use gain::{gain, package_code_gain};
pub use launch::launch_changes;
pub use line::exam;
pub use model::{Exam, ExamFile, ExamKind, Gain, LaunchChange, Runner, RunnerConfig, Tree};
