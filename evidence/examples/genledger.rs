//! Generates a ledger of N signed runs WITH their bundle files, for the
//! `gate ledger verify` benchmark (`bench/evidence.sh`): a key pair, N bundle
//! files and N chained rows, in `DIR` laid out like a state directory.
//! (`gen_ledger` writes rows only, for the report benchmark.)
//!
//! Usage: genledger DIR N
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;

use chrono::Utc;
use gate_evidence::ledger::RunEntry;
use gate_evidence::{Ledger, SigningKey, Statement, Subject, bundle};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(n)) = (args.next(), args.next()) else {
        eprintln!("usage: genledger DIR N");
        std::process::exit(2);
    };
    let dir = PathBuf::from(dir);
    let n: u64 = n.parse()?;
    let key = SigningKey::from_seed(&[7u8; 32]);
    key.write_pair(&dir.join("keys"))?;
    let bundles = dir.join("bundles");
    std::fs::create_dir_all(&bundles)?;
    let mut ledger = Ledger::open(dir.join("ledger.db"))?;
    let started = Utc::now();
    let mut batch: Vec<(RunEntry, Vec<u8>)> = Vec::new();
    for i in 0..n {
        let run_id = format!("run-{i:08}");
        let statement = Statement::new(
            vec![Subject::from_bytes(
                "gate.toml",
                format!("spec {}", i % 17).as_bytes(),
            )],
            "https://gate.dev/attestation/run/v1",
            json!({"format_version": 1, "run": {"run_id": run_id, "verdict": "pass", "attempt": 1}}),
        );
        let envelope = bundle::seal(&statement, &key);
        // A generator needs no durability: plain writes, not bundle::write's
        // fsyncs (which make 100,000 files take many minutes).
        let path = bundle::path_for(&bundles, &run_id)?;
        std::fs::write(&path, &envelope)?;
        batch.push((
            RunEntry {
                run_id,
                spec_id: format!("spec-{}", i % 17),
                attempt: 1,
                verdict: "pass".into(),
                tier: "light".into(),
                started_at: started,
                finished_at: started,
                input_tokens: 0,
                cached_input_tokens: 0,
                output_tokens: 0,
                cost_usd: None,
                bundle_path: path.display().to_string(),
                extra: json!({}),
            },
            envelope,
        ));
        if batch.len() == 5000 || i + 1 == n {
            ledger.append_all(batch.iter().map(|(e, b)| (e, b.as_slice())))?;
            batch.clear();
        }
    }
    println!("{n} runs in {}", dir.display());
    Ok(())
}
