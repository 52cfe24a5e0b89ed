//! Scheduling overhead: 40 independent `sleep 0.5` items at concurrency 4.
//!
//! Ideal wall time is 40 × 0.5 s / 4 = 5 s; the target is at most 1.15× that.
//! As a same-run baseline, the same 40 sleeps go through `xargs -P 4`.
//! Run with `cargo bench -p gate-harness --bench schedule`.

#![allow(
    clippy::print_stdout,
    reason = "a benchmark reports on stdout; it is not part of the gate"
)]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gate_harness::{Action, Item, ItemKind, RunOptions, Status};

const ITEMS: usize = 40;
const CONCURRENCY: usize = 4;
const SLEEP_S: f64 = 0.5;
const TARGET_RATIO: f64 = 1.15;

#[tokio::main]
async fn main() {
    let workspace = std::env::temp_dir();
    let ideal = ITEMS as f64 * SLEEP_S / CONCURRENCY as f64;

    let items: Vec<Item> = (0..ITEMS)
        .map(|i| Item {
            id: format!("sleep-{i}"),
            kind: ItemKind::Check,
            action: Action::Command {
                run: format!("sleep {SLEEP_S}"),
                starts: None,
            },
            after: Vec::new(),
            timeout: Duration::from_secs(30),
        })
        .collect();
    let launcher = Arc::new(gate_harness::Launcher::new(
        std::env::var_os("PATH")
            .map(|p| vec![("PATH".into(), p)])
            .unwrap_or_default(),
    ));
    let opts = RunOptions {
        workspace: workspace.clone(),
        concurrency: CONCURRENCY,
        output_cap: 1 << 20,
        files: Arc::new(Vec::new()),
        satisfied: HashSet::new(),
        redact: Arc::new(Vec::new()),
        launcher: Arc::clone(&launcher),
        launchers: Arc::default(),
        requires: Arc::default(),
    };
    let started = Instant::now();
    let results = gate_harness::run(items, opts, None, std::future::pending())
        .await
        .expect("the plan is valid");
    let harness = started.elapsed().as_secs_f64();
    let passed = results
        .iter()
        .filter(|r| r.status == Status::Passed)
        .count();
    assert_eq!(passed, ITEMS, "every sleep passes");

    let started = Instant::now();
    let xargs = format!("seq {ITEMS} | xargs -P {CONCURRENCY} -I{{}} sleep {SLEEP_S}");
    let out = gate_harness::process::run_argv(
        &["sh", "-c", &xargs],
        &workspace,
        Duration::from_secs(120),
        1 << 16,
        &launcher,
    )
    .await
    .expect("sh runs");
    let baseline = started.elapsed().as_secs_f64();
    assert_eq!(out.exit_code, Some(0), "xargs baseline failed");

    let ratio = harness / ideal;
    println!("{ITEMS} × sleep {SLEEP_S} at concurrency {CONCURRENCY}");
    println!("  ideal            {ideal:.3} s");
    println!(
        "  gate-harness     {harness:.3} s  ratio {ratio:.3} (target ≤ {TARGET_RATIO}): {}",
        if ratio <= TARGET_RATIO {
            "met"
        } else {
            "MISSED"
        }
    );
    println!(
        "  xargs -P {CONCURRENCY}       {baseline:.3} s  ratio {:.3}",
        baseline / ideal
    );
    println!("  harness / xargs  {:.3}", harness / baseline);
}
