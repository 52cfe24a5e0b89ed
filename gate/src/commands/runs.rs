//! `gate runs`: the ledger, listed and filtered.

use std::fmt::Write;

use gate_evidence::LedgerRow;
use gate_evidence::ledger::{RunFilter, SeriesFilter};
use serde_json::{Value, json};

use crate::attest;
use crate::cli::{RunsArgs, ShowFormat};
use crate::config::{Context, parse_date};
use crate::errors::GateError;
use crate::exit;
use crate::output;
use crate::output::text::shown;

/// `gate runs`.
pub(crate) fn list(ctx: &Context, args: &RunsArgs) -> Result<u8, GateError> {
    if let Some(v) = &args.verdict
        && !matches!(v.as_str(), "pass" | "fail" | "escalate" | "incomplete")
    {
        return Err(GateError::Usage(format!(
            "--verdict {v:?}: one of pass, fail, escalate, incomplete"
        )));
    }
    let filter = RunFilter {
        spec_id: args.spec.clone(),
        series: args.series.clone().map(SeriesFilter::Key),
        verdict: args.verdict.clone(),
        since: args
            .since
            .as_deref()
            .map(|t| parse_date("--since", t))
            .transpose()?,
        limit: args.limit,
    };
    // Listing never creates a ledger: with none, there are no runs yet.
    let (rows, none_yet) = match attest::open_existing_ledger(ctx) {
        Ok(ledger) => (ledger.list(&filter)?, None),
        Err(e @ GateError::NoLedger { .. }) => (Vec::new(), Some(e.to_string())),
        Err(e) => return Err(e),
    };
    let text = match args.format {
        ShowFormat::Json => {
            if let Some(why) = &none_yet {
                output::stderr(&format!("gate: {why}"));
            }
            let runs: Vec<Value> = rows.iter().map(json_row).collect();
            output::json_document(&json!({"format_version": 1, "runs": runs}))
        }
        ShowFormat::Human => {
            let mut out = String::new();
            if let Some(why) = &none_yet {
                let _ = writeln!(out, "{why}");
            } else if rows.is_empty() {
                let _ = writeln!(out, "no runs");
            } else {
                let _ = writeln!(
                    out,
                    "{:>5}  {:<16}  {:<36}  {:<20} {:<20} {:<3} {:<10} {:<7} {:<12} {:<20} cost",
                    "seq",
                    "started (UTC)",
                    "run",
                    "spec",
                    "series",
                    "#",
                    "verdict",
                    "tier",
                    "commit",
                    "branch"
                );
            }
            for r in &rows {
                let e = &r.entry;
                let cost = e
                    .cost_usd
                    .map_or_else(|| "-".to_owned(), |c| format!("${c:.4}"));
                // What the run verified; `+` marks a working tree that
                // differed from its commit. Rows of older runs have none.
                let (commit, branch) = commit_and_branch(&e.extra);
                let mut commit: String =
                    commit.map_or_else(|| "-".to_owned(), |c| c.chars().take(11).collect());
                if e.extra["verified"]["uncommitted"]
                    .as_u64()
                    .is_some_and(|n| n > 0)
                {
                    commit.push('+');
                }
                let branch = branch.unwrap_or("-");
                // A run without a key is of the spec's own series.
                let series = e.series.as_deref().unwrap_or("-");
                let _ = writeln!(
                    out,
                    "{:>5}  {}  {}  {:<20} {:<20} #{:<2} {:<10} {:<7} {:<12} {:<20} {cost}",
                    r.seq,
                    e.started_at.format("%Y-%m-%d %H:%M"),
                    shown(&e.run_id),
                    shown(&e.spec_id),
                    shown(series),
                    e.attempt,
                    e.verdict,
                    e.tier,
                    shown(&commit),
                    shown(branch),
                );
            }
            out
        }
    };
    output::stdout(&text).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

/// The commit and branch a row's run verified, from its `extra` (rows of
/// runs from before they were recorded have none).
fn commit_and_branch(extra: &Value) -> (Option<&str>, Option<&str>) {
    let verified = &extra["verified"];
    (verified["commit"].as_str(), verified["branch"].as_str())
}

/// A row as `--format json` lists it: as stored, with its series, commit
/// and branch at the top (null when it has none).
fn json_row(row: &LedgerRow) -> Value {
    let mut value = serde_json::to_value(row).unwrap_or(Value::Null);
    let (commit, branch) = commit_and_branch(&row.entry.extra);
    if let Value::Object(fields) = &mut value {
        fields.insert("series".to_owned(), json!(row.entry.series));
        fields.insert("commit".to_owned(), json!(commit));
        fields.insert("branch".to_owned(), json!(branch));
    }
    value
}
