//! End-to-end tests: the real `gate` binary over fixture workspaces.

// Helpers here are test code: a panic is the failure report.
#![allow(
    clippy::unwrap_used,
    clippy::missing_panics_doc,
    clippy::too_many_lines
)]

mod actionable;
mod audit;
mod base_runs;
mod ci_config;
mod completions;
mod doctor;
mod eval;
mod evidence;
mod exam;
mod example;
mod file_calls;
mod grounds;
mod harvest;
mod harvest_peer;
mod hooks;
mod hostile;
mod interrupt;
mod local_server;
mod mcp;
mod mutants;
mod outputs;
mod pages;
mod private_folders;
mod replay;
mod resilience;
mod retry;
mod review;
mod rules;
mod sandbox;
mod schemas;
mod series;
mod shared_ledger;
mod store;
mod verify;
