//! Shared fixtures.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use gate_evidence::keys::SigningKey;
use gate_evidence::statement::{Statement, Subject};

/// The fixed seed of the golden tests.
pub(crate) const SEED: [u8; 32] = *b"gate-evidence golden seed 32byte";

/// The predicate type the fixtures use.
pub(crate) const PREDICATE_TYPE: &str = "https://gate.example/run/v1";

pub(crate) fn fixed_key() -> SigningKey {
    SigningKey::from_seed(&SEED)
}

/// A small workspace with a nested file, an empty file and one large
/// enough to be hashed in several chunks.
pub(crate) fn workspace(root: &Path) -> Vec<&'static str> {
    fs::create_dir_all(root.join("src/api")).unwrap();
    fs::write(root.join("gate.toml"), "[spec]\nid = \"shop\"\n").unwrap();
    fs::write(
        root.join("src/api/orders.rs"),
        "pub fn create() -> u16 { 201 }\n",
    )
    .unwrap();
    fs::write(root.join("empty.txt"), "").unwrap();
    let big: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    fs::write(root.join("big.bin"), big).unwrap();
    vec!["gate.toml", "src/api/orders.rs", "empty.txt", "big.bin"]
}

/// A statement over the workspace's files.
pub(crate) fn statement(root: &Path, names: &[&str], run: u32) -> Statement {
    let subjects = Subject::from_files(root, names).unwrap();
    Statement::new(
        subjects,
        PREDICATE_TYPE,
        serde_json::json!({"run": run, "verdict": "pass", "note": "ünïcode & <markup>"}),
    )
}

/// Runs a program; tests may spawn directly (the harness owns subprocesses in the gate itself).
#[allow(
    clippy::disallowed_methods,
    reason = "tests run independent tools directly"
)]
pub(crate) fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}
