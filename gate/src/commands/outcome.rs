//! `gate outcome`: what happened after a run's decision.

use gate_evidence::ledger::{self, OutcomeEntry};

use crate::attest;
use crate::cli::OutcomeArgs;
use crate::config::Context;
use crate::errors::GateError;
use crate::exit;
use crate::output;
use crate::output::text::shown;

/// `gate outcome RUN (--broken|--fine) [--reason T] [--source T]`: appends
/// an outcome, signed by the gate's key (the report counts no outcome it
/// cannot vouch for); earlier ones stay as history and the latest counts.
pub(crate) fn record(ctx: &Context, args: &OutcomeArgs) -> Result<u8, GateError> {
    let mut ledger = attest::open_existing_ledger(ctx)?;
    let run = ledger.resolve(&args.run)?.entry;
    let (key, _) = attest::signing_key(ctx)?;
    let unsigned = OutcomeEntry {
        run_id: run.run_id.clone(),
        broken: args.broken,
        reason: args.reason.clone().filter(|r| !r.trim().is_empty()),
        source: args.source.clone().filter(|s| !s.trim().is_empty()),
        recorded_at: chrono::Utc::now(),
        envelope: None,
    };
    let outcome = ledger::seal(&unsigned, &key);
    ledger.add_outcome(&outcome)?;
    let history = ledger.outcomes(&run.run_id)?.len();
    let what = if args.broken { "broken" } else { "fine" };
    let because = outcome
        .reason
        .as_deref()
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    let earlier = match history {
        0 | 1 => String::new(),
        n => format!(
            "; {} earlier outcomes kept as history, this one counts",
            n - 1
        ),
    };
    output::stdout(&format!(
        "recorded: run {} (spec {}, verdict {}) was {what}{because}{earlier}\n",
        shown(&run.run_id),
        shown(&run.spec_id),
        run.verdict
    ))
    .map_err(GateError::stdout)?;
    Ok(exit::PASS)
}
