//! Takes a snapshot of a folder and prints what it found and how long it took.
//!
//! ```text
//! cargo run --release -p gate-evidence --example snapshot -- DIR [--state DIR] [--include GLOB]... [--list]
//! ```
//!
//! Prints one line: `files=N bytes=B elapsed_ms=T peak_rss_kib=K` (the peak
//! resident set from `/proc/self/status`, 0 where there is none). With
//! `--list`, first every entry as `b3sum` prints it (`<hex>  <path>`). Used
//! by `bench/fingerprint.sh`.

#![allow(
    clippy::print_stdout,
    reason = "a command-line example reports on stdout"
)]
#![allow(
    clippy::print_stderr,
    reason = "a command-line example reports usage errors"
)]

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use gate_evidence::{Snapshot, WalkOptions};
use gate_specs::InputGlobs;

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("snapshot: {message}");
            ExitCode::from(2)
        }
    }
}

fn run(args: Vec<String>) -> Result<(), String> {
    let mut root = None;
    let mut opts = WalkOptions::default();
    let mut include = Vec::new();
    let mut list = false;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--state" => opts.state_dir = Some(args.next().ok_or("--state needs a folder")?.into()),
            "--include" => include.push(args.next().ok_or("--include needs a glob")?),
            "--list" => list = true,
            _ if root.is_none() && !arg.starts_with("--") => root = Some(PathBuf::from(arg)),
            _ => return Err(format!("unexpected argument `{arg}`")),
        }
    }
    let root = root.ok_or("usage: snapshot DIR [--state DIR] [--include GLOB]... [--list]")?;
    if !include.is_empty() {
        opts.force_include = Some(InputGlobs::new(&include).map_err(|e| e.to_string())?);
    }
    let started = Instant::now();
    let snapshot = Snapshot::take(&root, &opts).map_err(|e| e.to_string())?;
    let elapsed = started.elapsed();
    match report(&snapshot, elapsed, list) {
        // A reader that stopped early (`| head`) is not a failure.
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(format!("writing: {e}")),
        _ => Ok(()),
    }
}

fn report(snapshot: &Snapshot, elapsed: Duration, list: bool) -> io::Result<()> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    if list {
        for (path, entry) in snapshot.entries() {
            writeln!(out, "{}  {path}", entry.digest)?;
        }
    }
    let bytes: u64 = snapshot.entries().map(|(_, e)| e.size).sum();
    writeln!(
        out,
        "files={} bytes={bytes} elapsed_ms={:.1} peak_rss_kib={}",
        snapshot.len(),
        elapsed.as_secs_f64() * 1000.0,
        peak_rss_kib()
    )?;
    out.flush()
}

/// The process's peak resident set (`VmHWM`), in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
