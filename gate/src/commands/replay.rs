//! `gate replay [plan | run PLAN]`: recorded reviews replayed with a
//! candidate routing table or prompts, scored against outcomes
//! (`crate::replay` is the glue, `gate_review::replay` the replay).

use std::fmt::Write;

use gate_scorecard::replays::{Rate, Side};

use crate::cli::{ReplayArgs, ReplayCommand, ShowFormat};
use crate::config::Context;
use crate::errors::GateError;
use crate::exit;
use crate::output;
use crate::output::text::shown;
use crate::replay::report::ReplayReport;
use crate::replay::{execute, plan, select};

/// `gate replay`.
pub(crate) async fn replay(ctx: &Context, args: &ReplayArgs) -> Result<u8, GateError> {
    let (report, format) = match &args.command {
        Some(ReplayCommand::Plan(p)) => {
            let sha = plan::write(ctx, p)?;
            let line = format!(
                "plan {} written to {} (sha256 {sha}); run it with `gate replay run {}`\n",
                shown(&p.output.display().to_string()),
                shown(&p.output.display().to_string()),
                shown(&p.output.display().to_string()),
            );
            output::stdout(&line).map_err(GateError::stdout)?;
            return Ok(exit::PASS);
        }
        Some(ReplayCommand::Run(r)) => (plan::run(ctx, &r.plan, &r.keys).await?, r.format),
        None => {
            let flags = &args.replay;
            let selection = select::settled(flags.selection.clone())?;
            let (mut report, subjects) = execute::execute(
                ctx,
                &selection,
                &flags.candidate,
                execute::Limits::checked(flags.limits)?,
                flags.min_sample,
                None,
            )
            .await?;
            execute::seal(ctx, subjects, &mut report)?;
            (report, args.format)
        }
    };
    let text = match format {
        ShowFormat::Json => output::json_document(&report),
        ShowFormat::Human => human(&report),
    };
    output::stdout(&text).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

fn rate(r: &Rate) -> String {
    match (r.rate, r.low, r.high) {
        _ if r.below_minimum => format!("{}/{} (below the minimum sample)", r.hits, r.of),
        (Some(rate), Some(low), Some(high)) => {
            format!("{}/{} = {rate:.2} [{low:.2}, {high:.2}]", r.hits, r.of)
        }
        _ => format!("{}/{}", r.hits, r.of),
    }
}

fn side_line(name: &str, s: &Side) -> String {
    let recall = Rate {
        hits: s.recall.caught,
        of: s.recall.of,
        rate: s.recall.rate,
        low: s.recall.low,
        high: s.recall.high,
        below_minimum: s.recall.below_minimum,
    };
    format!(
        "  {name:<9} recall {}  noise {}  findings/run {}  ${:.4}  tokens {} in ({} cached), {} out  {} ms  failures {}",
        rate(&recall),
        rate(&s.noise),
        s.findings_per_run
            .map_or("-".to_owned(), |f| format!("{f:.2}")),
        s.cost_usd,
        s.tokens.input,
        s.tokens.cached_input,
        s.tokens.output,
        s.latency_ms,
        s.failures.timeouts + s.failures.refusals + s.failures.breaker_skips + s.failures.other,
    )
}

fn human(r: &ReplayReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "replay {} of {} runs with {} ({} skipped)",
        shown(&r.replay_id),
        r.runs.len(),
        shown(&r.routing.origin),
        r.skipped.len()
    );
    if let Some(seed) = r.selection.seed {
        let _ = writeln!(out, "  seed {seed}");
    }
    let _ = writeln!(out, "{}", side_line("baseline", &r.baseline));
    let _ = writeln!(out, "{}", side_line("candidate", &r.candidate));
    let _ = writeln!(out, "  agreement {}", rate(&r.agreement));
    for s in &r.strata {
        let _ = writeln!(
            out,
            "  {}={}: {} runs",
            shown(&s.by),
            shown(&s.value),
            s.scored.runs
        );
        let _ = writeln!(out, "  {}", side_line("baseline", &s.scored.baseline));
        let _ = writeln!(out, "  {}", side_line("candidate", &s.scored.candidate));
    }
    for s in &r.skipped {
        let _ = writeln!(out, "  skipped {}: {}", shown(&s.run_id), shown(&s.why));
    }
    for t in &r.targets {
        let value = t
            .value
            .map_or("nothing to measure".to_owned(), |v| format!("{v:.4}"));
        let verdict = if t.met { "met" } else { "not met" };
        let _ = writeln!(out, "  target {}: {verdict} ({value})", shown(&t.target));
    }
    if let Some(b) = &r.bundle {
        let _ = writeln!(out, "  bundle {}", shown(b));
    }
    out
}
