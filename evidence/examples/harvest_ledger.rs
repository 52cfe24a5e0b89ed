//! Writes a ledger of runs over a repository's commits, for the harvest
//! benchmark (`bench/harvest.sh`): one run per line of stdin,
//! `RUN_ID<TAB>VERDICT<TAB>STARTED_UNIX<TAB>HEAD<TAB>ROOT`, each recording
//! HEAD as the commit it verified and ROOT as its repository's root.
//!
//! ```text
//! cargo run --release -p gate-evidence --example harvest_ledger -- DB < runs.tsv
//! ```
//!
//! Prints one line: `runs=N`.

#![allow(
    clippy::print_stdout,
    reason = "a command-line example reports on stdout"
)]
#![allow(
    clippy::print_stderr,
    reason = "a command-line example reports usage errors"
)]

use std::io::BufRead as _;
use std::process::ExitCode;

use chrono::{TimeZone as _, Utc};
use gate_evidence::Ledger;
use gate_evidence::ledger::RunEntry;

fn entry(line: &str) -> Option<RunEntry> {
    let mut f = line.split('\t');
    let (id, verdict, started, head, root) =
        (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
    let started_at = Utc.timestamp_opt(started.parse().ok()?, 0).single()?;
    Some(RunEntry {
        run_id: id.to_owned(),
        spec_id: format!("spec-{id}"),
        attempt: 1,
        series: None,
        verdict: verdict.to_owned(),
        tier: "light".to_owned(),
        started_at,
        finished_at: started_at,
        input_tokens: 0,
        cached_input_tokens: 0,
        output_tokens: 0,
        cost_usd: None,
        bundle_path: format!("/nowhere/{id}.dsse.json"),
        extra: serde_json::json!({"verified": {"commit": head, "branch": "feature",
                                               "uncommitted": 0, "root_commits": [root]}}),
    })
}

fn main() -> ExitCode {
    let Some(db) = std::env::args().nth(1) else {
        eprintln!("usage: harvest_ledger DB < runs.tsv");
        return ExitCode::from(2);
    };
    let entries: Vec<RunEntry> = std::io::stdin()
        .lock()
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| entry(&l))
        .collect();
    let envelopes: Vec<Vec<u8>> = entries
        .iter()
        .map(|e| format!("envelope of {}", e.run_id).into_bytes())
        .collect();
    let written = Ledger::open(std::path::Path::new(&db)).and_then(|mut ledger| {
        ledger.append_all(entries.iter().zip(envelopes.iter().map(Vec::as_slice)))
    });
    match written {
        Ok(_) => {
            println!("runs={}", entries.len());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("harvest_ledger: {e}");
            ExitCode::FAILURE
        }
    }
}
