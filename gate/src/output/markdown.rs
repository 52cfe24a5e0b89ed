//! `--format markdown`: one concise review comment a pipeline can post on a
//! pull or merge request as is — the verdict and why, what failed (with the
//! output's tail), the findings worst first, what an earlier attempt's
//! result was carried for, and what did not run. Every
//! piece of user text is escaped, so a title cannot inject links, HTML or
//! mentions. Also the GitHub job summary.

use std::fmt::Write;
use std::time::Duration;

use gate_review::findings::Finding;
use gate_review::record::ReviewStatus;

use super::problems::{self, Level};
use super::progress::duration;
use super::text::{code_block, last_lines, md_inline, md_quoting, shown, shown_block};
use crate::record::{GuardStatus, ItemStatus, RunRecord, Verdict, verdict_line};

/// Lines of a failing item's output quoted.
const TAIL_LINES: usize = 20;
/// Failed items and findings listed at most.
const MAX_ROWS: usize = 50;

/// The comment.
pub(crate) fn render(record: &RunRecord) -> String {
    let mut out = String::new();
    heading(&mut out, record);
    failed(&mut out, record);
    findings(&mut out, record);
    carried(&mut out, record);
    did_not_run(&mut out, record);
    let mut foot = format!("run `{}`", record.run_id);
    if let Some(bundle) = &record.bundle {
        let _ = write!(foot, " · evidence {}", code(bundle));
    }
    if !record.recorded {
        foot.push_str(" · **not recorded in the ledger**");
    }
    let _ = write!(foot, " · gate {}", md_inline(&record.tool_version));
    while out.ends_with("\n\n") {
        out.pop();
    }
    let _ = writeln!(out, "\n<sub>{foot}</sub>");
    out
}

fn heading(out: &mut String, record: &RunRecord) {
    let icon = match record.verdict {
        Verdict::Pass if record.qualifier.is_some() && !record.overridden => "☑️",
        Verdict::Pass => "✅",
        Verdict::Fail => "❌",
        Verdict::Incomplete => "⚠️",
        Verdict::Escalate => "🛑",
    };
    let _ = writeln!(
        out,
        "## {icon} gate: {} — {}, attempt {}\n",
        md_inline(&verdict_line(record)),
        code(&record.spec_id),
        record.attempt
    );
    let mut line = Vec::new();
    if !record.summary.is_empty() {
        line.push(md_inline(&record.summary));
    }
    line.push(format!(
        "tier **{}** ({})",
        record.tier,
        md_inline(&record.tier_reason)
    ));
    if let Some(series) = &record.series {
        line.push(format!(
            "series {}",
            md_inline(&crate::output::human::series_line(series))
        ));
    }
    if let Some(verified) = &record.verified {
        line.push(md_inline(&crate::output::human::verified_line(verified)));
    }
    if record.isolation.unisolated() {
        line.push(format!(
            "**unisolated** ({})",
            md_inline(&crate::output::human::isolation_line(&record.isolation))
        ));
    }
    line.push(duration(Duration::from_millis(record.duration_ms)));
    let _ = writeln!(out, "{}\n", line.join(" · "));
    for r in &record.verdict_reasons {
        let _ = writeln!(out, "- {}", md_quoting(&r.why));
    }
}

fn failed(out: &mut String, record: &RunRecord) {
    let checks = record
        .checks
        .iter()
        .filter(|c| c.status == ItemStatus::Failed)
        .map(|c| ("check", &c.id, c.reason.clone(), problems::check_output(c)));
    let criteria = record
        .criteria
        .iter()
        .filter(|c| c.status == ItemStatus::Failed)
        .map(|c| {
            let why = match (c.met, c.threshold) {
                (Some(met), Some(t)) => Some(format!("judged {met:.2}, needs {t:.2}")),
                _ => c.reason.clone(),
            };
            ("criterion", &c.id, why, c.output.tail.clone())
        });
    let items: Vec<_> = checks.chain(criteria).collect();
    if items.is_empty() {
        return;
    }
    section(out, "Failed");
    for (kind, id, why, text) in items.iter().take(MAX_ROWS) {
        let why = why
            .as_deref()
            .map(|w| format!(" — {}", md_inline(w)))
            .unwrap_or_default();
        let _ = writeln!(out, "- ✗ {kind} {}{why}", code(id));
        let tail = last_lines(&shown_block(text), TAIL_LINES);
        if !tail.trim().is_empty() {
            let _ = writeln!(out, "\n  <details><summary>output</summary>\n");
            for line in code_block(&tail).lines() {
                let _ = writeln!(out, "  {line}");
            }
            let _ = writeln!(out, "  </details>\n");
        }
    }
    more(out, items.len());
}

fn findings(out: &mut String, record: &RunRecord) {
    let fates = super::fates::line(record, &md_inline);
    if record.findings.is_empty() {
        if let Some(line) = fates {
            section(out, "Findings");
            let _ = writeln!(out, "{line}");
        }
        return;
    }
    let mut list: Vec<&Finding> = record.findings.iter().collect();
    list.sort_by_key(|f| Level::of_severity(&f.severity));
    section(out, "Findings");
    let _ = writeln!(out, "| severity | where | finding |");
    let _ = writeln!(out, "|---|---|---|");
    for f in list.iter().take(MAX_ROWS) {
        let icon = match Level::of_severity(&f.severity) {
            Level::Failed | Level::Critical => "🔴",
            Level::Warning => "🟠",
            Level::Suggestion => "🔵",
        };
        let at = match f.line {
            Some(l) => format!("{}:{l}", f.file),
            None => f.file.clone(),
        };
        let detail = if f.detail.is_empty() {
            String::new()
        } else {
            format!(" — {}", md_inline(&f.detail))
        };
        let _ = writeln!(
            out,
            "| {icon} {} | {} | **{}** ({}){detail} |",
            md_inline(&f.severity),
            code(&at),
            md_inline(&f.title),
            md_inline(&f.role)
        );
    }
    more(out, list.len());
    if let Some(line) = fates {
        let _ = writeln!(out, "\n{line}");
    }
}

/// The checks and criteria whose result an earlier attempt's run holds:
/// nothing they read changed, so this run did not run them again.
fn carried(out: &mut String, record: &RunRecord) {
    let checks = record
        .checks
        .iter()
        .filter(|c| c.status == ItemStatus::Carried)
        .map(|c| ("check", &c.id, c.carried_from.as_deref()));
    let criteria = record
        .criteria
        .iter()
        .filter(|c| c.status == ItemStatus::Carried)
        .map(|c| ("criterion", &c.id, c.carried_from.as_deref()));
    let items: Vec<_> = checks.chain(criteria).collect();
    if items.is_empty() {
        return;
    }
    section(out, "Carried");
    for (kind, id, from) in items.iter().take(MAX_ROWS) {
        let from = from
            .map(|r| format!(" from run {}", code(r)))
            .unwrap_or_default();
        let _ = writeln!(out, "- ↻ {kind} {}{from}", code(id));
    }
    more(out, items.len());
}

fn did_not_run(out: &mut String, record: &RunRecord) {
    let mut lines = Vec::new();
    if let (GuardStatus::Off, Some(why)) = (record.self_guard.status, &record.self_guard.reason) {
        lines.push(format!("self-guard: {}", md_quoting(why)));
    }
    if record.review.status == ReviewStatus::DidNotRun {
        lines.push(format!(
            "review: {}",
            md_inline(record.review.reason.as_deref().unwrap_or("no reason given"))
        ));
    }
    for s in record
        .review
        .specialists
        .iter()
        .filter(|s| s.status != "ok")
    {
        let skipped = if s.status == "skipped" {
            " skipped"
        } else {
            ""
        };
        lines.push(format!(
            "{} review{skipped}: {}",
            md_inline(&s.role),
            md_inline(s.reason.as_deref().unwrap_or("did not run"))
        ));
    }
    for (range, roles) in record.review.unseen() {
        lines.push(format!(
            "not reviewed: {} (not shown to {})",
            code(&range.words()),
            md_inline(&roles.join(", "))
        ));
    }
    for c in record
        .checks
        .iter()
        .filter(|c| c.status == ItemStatus::Skipped)
    {
        let what = if c.kind == crate::record::CheckKind::Page {
            "page"
        } else {
            "check"
        };
        lines.push(format!(
            "{what} {} skipped: {}",
            code(&c.id),
            md_quoting(c.reason.as_deref().unwrap_or("not run"))
        ));
    }
    for c in &record.criteria {
        let what = match c.status {
            ItemStatus::Skipped => "skipped",
            ItemStatus::Unverified => "unverified",
            _ => continue,
        };
        lines.push(format!(
            "criterion {} {what}: {}",
            code(&c.id),
            md_quoting(c.reason.as_deref().unwrap_or("not decided"))
        ));
    }
    if lines.is_empty() {
        return;
    }
    section(out, "Did not run");
    for l in &lines {
        let _ = writeln!(out, "- {l}");
    }
}

/// A `###` heading with exactly one blank line before and after.
fn section(out: &mut String, title: &str) {
    while out.ends_with("\n\n") {
        out.pop();
    }
    let _ = writeln!(out, "\n### {title}\n");
}

fn more(out: &mut String, total: usize) {
    if total > MAX_ROWS {
        let _ = writeln!(
            out,
            "\n… and {} more (see the JSON or SARIF report)",
            total - MAX_ROWS
        );
    }
}

/// An id or path as inline code (escaped text when it holds a backtick),
/// its control characters [`shown`].
fn code(s: &str) -> String {
    let s = shown(s);
    if s.contains('`') {
        md_inline(&s)
    } else {
        format!("`{s}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixture;

    #[test]
    fn the_comment_says_what_failed_worst_first_and_what_did_not_run() {
        let md = render(&fixture::record());
        let at = |needle: &str| {
            md.find(needle)
                .unwrap_or_else(|| panic!("{needle:?} missing from\n{md}"))
        };
        assert!(md.starts_with("## ❌ gate: FAIL — `shop-checkout`, attempt 2\n"));
        // Sections in order, findings worst first.
        assert!(at("### Failed") < at("### Findings"));
        assert!(at("### Findings") < at("### Did not run"));
        assert!(at("🔴 critical") < at("🟠 warning"));
        assert!(at("🟠 warning") < at("🔵 suggestion"));
        at("- ✗ check `build` — exited with status 3");
        at("- ✗ criterion `orders-201` — exited with status 1");
        at("  warning: 100% <sure> & \"done\"");
        at("docs review: rate limited (429) on every model");
        at("performance review skipped: no code in the change");
        // What became of the findings that do not stand, in one escaped line.
        assert!(at("| 🔵 suggestion") < at("2 findings dropped by the coordinator: "));
        at("Loop \\*might\\* be slow \\| \\<b\\> (no realistic input makes it slow)");
        at("check `deploy-check` skipped: dependency `build` failed");
        assert!(at("### Findings") < at("### Carried"));
        assert!(at("### Carried") < at("### Did not run"));
        // Verdict bullets quote ids as code, not as escaped backticks.
        at("- check `build` failed: exited with status 3\n");
        at("criterion `orders-audit` unverified: the judge did not run: timed out");
        // No raw terminal codes; hostile title newlines do not break the table.
        assert!(!md.contains('\x1b'));
        for line in md.lines().filter(|l| l.starts_with("| ")) {
            assert_eq!(line.matches(" | ").count(), 2, "{line}");
        }
    }

    #[test]
    fn a_pass_with_nothing_to_say_is_short() {
        let mut record = fixture::record();
        record.verdict = Verdict::Pass;
        record.verdict_reasons.clear();
        record.checks.retain(|c| c.status == ItemStatus::Passed);
        record.criteria.retain(|c| c.status == ItemStatus::Passed);
        record.review.specialists.retain(|s| s.status == "ok");
        record.findings.clear();
        record.dropped_findings.clear();
        let md = render(&record);
        assert!(md.starts_with("## ✅ gate: PASS"));
        assert!(!md.contains("###"), "{md}");
        assert!(md.lines().count() < 8, "{md}");
    }

    /// A pass that carried items from an earlier attempt lists them, with
    /// the run that holds their result.
    #[test]
    fn a_pass_lists_what_it_carried() {
        let mut record = fixture::record();
        record.verdict = Verdict::Pass;
        record.verdict_reasons.clear();
        record
            .checks
            .retain(|c| matches!(c.status, ItemStatus::Passed | ItemStatus::Carried));
        record.criteria.retain(|c| c.status == ItemStatus::Passed);
        if let Some(c) = record.criteria.first_mut() {
            c.status = ItemStatus::Carried;
            c.carried_from = Some("run-1".to_owned());
        }
        record.review.specialists.retain(|s| s.status == "ok");
        record.findings.clear();
        record.dropped_findings.clear();
        let md = render(&record);
        assert!(md.contains("### Carried\n"), "{md}");
        assert!(md.contains("- ↻ check `lint`"), "{md}");
        assert!(md.contains(" from run `run-1`"), "{md}");
    }
}
