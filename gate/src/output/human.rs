//! The short readable summary of a run.

use std::fmt::Write;
use std::time::Duration;

use gate_review::record::{Attempt, AttemptOutcome, ReviewStatus, SpecialistRecord};

use super::progress::duration;
use super::style::Style;
use super::text::{shown, shown_block};
use crate::record::{GuardStatus, ItemStatus, RunRecord, verdict_line};

/// Lines of a failing item's output shown.
const TAIL_LINES: usize = 12;

/// Renders `record` for a log or a file: no colour.
pub(crate) fn render(record: &RunRecord) -> String {
    render_styled(record, Style::PLAIN)
}

/// The commit, branch and working tree a run verified, in one line.
pub(crate) fn verified_line(v: &crate::record::Verified) -> String {
    let Some(commit) = &v.commit else {
        return "a working tree with no commit".to_owned();
    };
    let mut line = format!("commit {}", shown(commit.get(..12).unwrap_or(commit)));
    if let Some(branch) = &v.branch {
        let _ = write!(line, " on {}", shown(branch));
    }
    if v.uncommitted > 0 {
        let _ = write!(
            line,
            ", with {} uncommitted file{}",
            v.uncommitted,
            if v.uncommitted == 1 { "" } else { "s" }
        );
    }
    line
}

/// The series a run is an attempt of, and where its key came from.
pub(crate) fn series_line(s: &crate::record::Series) -> String {
    format!("{} (from {})", shown(&s.key), shown(&s.from))
}

/// How the run's processes were isolated, in one line.
pub(crate) fn isolation_line(isolation: &crate::record::RunIsolation) -> String {
    let reason = isolation.reason.as_deref().map(shown);
    match (&reason, isolation.unisolated()) {
        (Some(why), true) => format!("none — {why}"),
        (None, true) => "none".to_owned(),
        (Some(why), false) => format!(
            "{} sandbox, {} network — {why}",
            isolation.kind, isolation.network
        ),
        (None, false) => format!("{} sandbox, {} network", isolation.kind, isolation.network),
    }
}

/// What a run's `tracer` means, for a reader.
fn tracer_line(tracer: &str) -> String {
    match tracer {
        "strace" => "strace".to_owned(),
        "ebpf" => "eBPF".to_owned(),
        "none" => "nothing (a retry runs every command again)".to_owned(),
        other => shown(other).into_owned(),
    }
}

/// Renders `record` for a terminal: marks and the verdict in colour when
/// `style` says so.
pub(crate) fn render_styled(record: &RunRecord, style: Style) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "gate · {} · attempt {} · run {}",
        shown(&record.spec_id),
        record.attempt,
        shown(&record.run_id)
    );
    if let Some(note) = &record.override_note {
        let _ = writeln!(out, "overridden: {}", shown(note));
    }
    let _ = writeln!(
        out,
        "tier: {} ({})",
        record.tier,
        shown(&record.tier_reason)
    );
    let _ = writeln!(out, "isolation: {}", isolation_line(&record.isolation));
    if let Some(tracer) = &record.isolation.tracer {
        let _ = writeln!(out, "reads traced by: {}", tracer_line(tracer));
    }
    if let Some(series) = &record.series {
        let _ = writeln!(out, "series: {}", series_line(series));
    }
    if let Some(verified) = &record.verified {
        let _ = writeln!(out, "verified: {}", verified_line(verified));
    }
    if record.advisory {
        let _ = writeln!(
            out,
            "advisory: run from the agent's session with a key of the user's own; the \
             pipeline's `gate verify` is the decision of record"
        );
    }

    checks_section(&mut out, record, style);
    criteria_section(&mut out, record, style);

    let _ = writeln!(out);
    match record.review.status {
        ReviewStatus::DidNotRun => {
            let _ = writeln!(
                out,
                "review: did not run — {}",
                shown(record.review.reason.as_deref().unwrap_or("no reason given"))
            );
        }
        ReviewStatus::Ran => review_lines(&mut out, &record.review.specialists),
    }
    // Beside the review: both say what backs the verdict.
    if let (GuardStatus::Off, Some(why)) = (record.self_guard.status, &record.self_guard.reason) {
        let _ = writeln!(out, "self-guard: off — {}", shown(why));
    }
    if let Some(o) = &record.routing_override {
        let url = shown(&o.url);
        let _ = match (o.status.as_str(), &o.error) {
            ("applied", _) if o.changed.is_empty() => {
                writeln!(out, "routing override: {url} applied, no change")
            }
            ("applied", _) => writeln!(
                out,
                "routing override: {url} applied ({})",
                shown(&o.changed.join(", "))
            ),
            (status, why) => writeln!(
                out,
                "routing override: {url} {} — {}; the local table was used",
                shown(status),
                shown(why.as_deref().unwrap_or("no reason given"))
            ),
        };
    }
    if !record.findings.is_empty() {
        let _ = writeln!(out, "\nfindings");
        for f in &record.findings {
            let at = f.line.map(|l| format!(":{l}")).unwrap_or_default();
            let _ = writeln!(
                out,
                "  {:<10} {}{at}  {}  ({}, {})",
                shown(&f.severity),
                shown(&f.file),
                shown(&f.title),
                shown(&f.role),
                shown(&f.id)
            );
        }
    }
    if let Some(line) = super::fates::line(record, &|s| shown(s).into_owned()) {
        let _ = writeln!(out, "{line}");
    }
    let resolved = record
        .finding_fates
        .iter()
        .filter(|f| f.disposition == crate::memory::Disposition::Resolved)
        .count();
    if resolved > 0 {
        let _ = writeln!(out, "earlier findings: {resolved} resolved");
    }
    if let Some(d) = &record.doom_loop {
        let _ = writeln!(out, "\n{}", shown(&d.message));
    }

    let verdict = style.strong(
        &shown(&verdict_line(record)),
        Style::verdict_paint(record.verdict),
    );
    let _ = writeln!(out, "\nverdict: {verdict}");
    for r in &record.verdict_reasons {
        let _ = writeln!(out, "  · {}", shown(&r.why));
    }
    if let Some(bundle) = &record.bundle {
        let _ = writeln!(out, "evidence: {}", shown(bundle));
    }
    if !record.recorded {
        let _ = writeln!(out, "not recorded in the ledger");
    }
    out
}

/// The checks, one line each; a failed one with its output.
fn checks_section(out: &mut String, record: &RunRecord, style: Style) {
    if !record.checks.is_empty() {
        let _ = writeln!(out, "\nchecks");
        let width = id_width(record.checks.iter().map(|c| c.id.as_str()));
        for c in &record.checks {
            let carried = c.carried_from.as_ref().map(|r| format!("from run {r}"));
            item_line(
                out,
                style,
                width,
                &Row {
                    id: &c.id,
                    by: "",
                    status: c.status,
                    ms: c.duration_ms,
                    reason: carried.as_deref().or(c.reason.as_deref()),
                    base: None,
                },
            );
            if c.status == ItemStatus::Failed {
                tail(out, &super::problems::check_output(c));
            }
        }
    }
}

/// The criteria, one line each, with who decided and the base's word; a
/// failed one with its output.
fn criteria_section(out: &mut String, record: &RunRecord, style: Style) {
    if !record.criteria.is_empty() {
        let _ = writeln!(out, "\ncriteria");
        let width = id_width(record.criteria.iter().map(|c| c.id.as_str()));
        for c in &record.criteria {
            let by = match c.decided_by {
                crate::record::DecidedBy::Code => "code ",
                crate::record::DecidedBy::Model => "model",
            };
            let reason = match (&c.carried_from, c.met, c.threshold) {
                (Some(r), _, _) => Some(format!("from run {r}")),
                (None, Some(met), Some(t)) => Some(format!("met {met:.2} (needs {t:.2})")),
                _ => c.reason.clone(),
            };
            let base = c.base_transition();
            item_line(
                out,
                style,
                width,
                &Row {
                    id: &c.id,
                    by,
                    status: c.status,
                    ms: c.duration_ms,
                    reason: reason.as_deref(),
                    base: base.as_deref(),
                },
            );
            if c.status == ItemStatus::Failed {
                tail(out, &c.output.tail);
            }
        }
    }
}

/// One line per specialist: model, status, tokens, cost, time, and what
/// fell back or did not run, and why.
fn review_lines(out: &mut String, specialists: &[SpecialistRecord]) {
    let missing = specialists
        .iter()
        .filter(|s| s.status == "did_not_run")
        .count();
    let _ = if missing == 0 {
        writeln!(out, "review")
    } else {
        writeln!(
            out,
            "review ({missing} of {} did not run)",
            specialists.len()
        )
    };
    for s in specialists {
        let spent = || {
            format!(
                "{} in / {} out tokens · {}",
                count(s.input_tokens),
                count(s.output_tokens),
                s.cost_usd
                    .map_or_else(|| "cost unknown".to_owned(), |c| format!("${c:.4}")),
            )
        };
        let what = match (&s.carried_from, s.status.as_str()) {
            (Some(run), _) => format!("carried from run {run}"),
            (None, "ok") => format!(
                "ok · {} · {}{}",
                spent(),
                duration(Duration::from_millis(s.latency_ms)),
                fell_back(&s.attempts)
                    .map(|f| format!(" · fell back: {f}"))
                    .unwrap_or_default()
            ),
            (None, "skipped") => format!(
                "skipped — {}",
                short(s.reason.as_deref().unwrap_or("nothing to review"))
            ),
            (None, _) => {
                let why = short(s.reason.as_deref().unwrap_or("no reason given"));
                if s.input_tokens.is_some() || s.output_tokens.is_some() {
                    format!("did not run — {why} · {}", spent())
                } else {
                    format!("did not run — {why}")
                }
            }
        };
        let _ = writeln!(
            out,
            "  {:<12} {:<24} {}",
            shown(&s.role),
            shown(&s.model),
            shown(&what)
        );
    }
}

/// The attempts before the one that answered, when there were any.
fn fell_back(attempts: &[Attempt]) -> Option<String> {
    let (_, before) = attempts.split_last()?;
    if before.is_empty() {
        return None;
    }
    let parts: Vec<String> = before
        .iter()
        .map(|a| {
            let outcome = match a.outcome {
                AttemptOutcome::Ok => "ok",
                AttemptOutcome::Retryable => "retryable",
                AttemptOutcome::Fatal => "fatal",
                AttemptOutcome::BreakerOpen => "breaker open",
                AttemptOutcome::Malformed => "malformed",
                AttemptOutcome::OverBudget => "over budget",
            };
            match &a.error {
                Some(e) if a.outcome != AttemptOutcome::BreakerOpen => {
                    format!("{} {outcome} ({})", a.model, short(e))
                }
                _ => format!("{} {outcome}", a.model),
            }
        })
        .collect();
    Some(parts.join(", "))
}

/// A reason cut to one readable line.
fn short(text: &str) -> String {
    const MAX: usize = 120;
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() <= MAX && !text.contains('\n') {
        return line.to_owned();
    }
    let cut: String = line.chars().take(MAX).collect();
    format!("{cut}…")
}

fn id_width<'a>(ids: impl Iterator<Item = &'a str>) -> usize {
    ids.map(|s| s.chars().count()).max().unwrap_or(0).min(40)
}

/// One check or criterion line.
struct Row<'a> {
    id: &'a str,
    /// "code " or "model" for criteria, empty for checks.
    by: &'a str,
    status: ItemStatus,
    ms: u64,
    reason: Option<&'a str>,
    /// A criterion's base result and its own ("fail→pass").
    base: Option<&'a str>,
}

fn item_line(out: &mut String, style: Style, width: usize, row: &Row<'_>) {
    let Row {
        id,
        by,
        status,
        ms,
        reason,
        base,
    } = *row;
    let mark = style.mark(status);
    let time = match status {
        ItemStatus::Passed | ItemStatus::Failed => duration(Duration::from_millis(ms)),
        _ => String::new(),
    };
    let (id, reason, base) = (shown(id), reason.map(shown), base.map(shown));
    let by = if by.is_empty() {
        String::new()
    } else {
        format!("{by}  ")
    };
    let what = match (status, reason.as_deref()) {
        (ItemStatus::Carried, Some(r)) => format!("carried {r}"),
        (ItemStatus::Passed, _) | (_, None) => status.as_str().to_owned(),
        (_, Some(r)) => format!("{}: {r}", status.as_str()),
    };
    let base = base.map(|b| format!("  {b}")).unwrap_or_default();
    let _ = writeln!(out, "  {mark} {id:<width$}  {by}{time:>9}  {what}{base}");
}

fn count(n: Option<u64>) -> String {
    n.map_or_else(|| "?".to_owned(), |n| n.to_string())
}

/// The last lines of an item's output, each behind the `│` margin, so no
/// line of it can pass for one of the gate's own.
fn tail(out: &mut String, text: &str) {
    // Captured control codes would repaint the reader's terminal.
    let text = shown_block(text);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(TAIL_LINES);
    if start > 0 {
        let _ = writeln!(out, "      │ … {start} earlier lines");
    }
    for line in &lines[start..] {
        let _ = writeln!(out, "      │ {line}");
    }
}
