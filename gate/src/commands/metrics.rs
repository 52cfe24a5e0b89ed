//! `gate metrics`: the scorecard as Prometheus text.

use gate_evidence::ledger::ReportScope;

use crate::cli::MetricsArgs;
use crate::config::{self, Context};
use crate::errors::GateError;
use crate::exit;
use crate::output;
use gate_scorecard::prometheus;
use gate_scorecard::scorecard::Scorecard;

/// `gate metrics [-o FILE]`: on stdout, or written atomically to FILE (what
/// node_exporter's textfile collector needs: it must never read half a file).
pub(crate) fn metrics(ctx: &Context, args: &MetricsArgs) -> Result<u8, GateError> {
    let (ledger, none_yet) = super::report::existing_or_empty(ctx)?;
    if let Some(why) = &none_yet {
        output::stderr(&format!("gate: {why}"));
    }
    let trusted = super::report::report_keys(ctx);
    let scope = ReportScope::default();
    let store = crate::attest::bundle_store(ctx)?;
    let vouched = super::report::vouched(ctx, &ledger.ledger, &store, &trusted, &scope)?;
    let card = Scorecard::build_with(
        &ledger.ledger,
        &scope,
        &trusted,
        crate::cli::hundredths(args.min_confidence),
        &vouched,
    )?;
    let text = prometheus::render(&card);
    match &args.output {
        Some(path) => {
            let path = config::from_cwd(path);
            super::report::write_atomically(ctx, &path, text.as_bytes())?;
        }
        None => output::stdout(&text).map_err(GateError::stdout)?,
    }
    Ok(exit::PASS)
}
