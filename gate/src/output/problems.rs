//! The problems of a run, each at a place in the repository: failed checks
//! (one per location a built-in pointed at, else at the check's line in the
//! spec), failed criteria (at their line in the spec) and review findings.
//! SARIF, GitHub annotations and the GitLab report are views of this list.
//! It only reads statuses and severities; it decides nothing.

use crate::record::{
    CheckKind, CheckRecord, CriterionRecord, ItemStatus, RunRecord, Verdict, verdict_line,
};

use super::site::Site;
use super::text::{shown, shown_block};

/// How bad a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Level {
    /// A failed check or criterion: the run fails on it.
    Failed,
    /// A critical finding.
    Critical,
    /// A warning finding.
    Warning,
    /// A suggestion, or a severity the gate does not know.
    Suggestion,
}

impl Level {
    /// A finding's severity word as a level.
    pub(crate) fn of_severity(severity: &str) -> Self {
        match severity {
            "critical" => Self::Critical,
            "warning" => Self::Warning,
            _ => Self::Suggestion,
        }
    }
}

/// One problem at one place.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Problem {
    /// The rule it falls under: a check kind (`check`, `task-tests`,
    /// `criterion`, `builtin.secrets`, …) or a reviewer (`review.security`).
    pub rule: String,
    /// How bad.
    pub level: Level,
    /// One line, [`shown`].
    pub title: String,
    /// What is wrong, in full: lines of [`shown`] record text, a captured
    /// tail [`shown_block`].
    pub message: String,
    /// Repository-relative file, exact (a place, not text to read).
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// Stable across runs for the same problem: a finding's id, or the item
    /// and its place.
    pub key: String,
}

/// Lines of a failing item's output a problem message quotes.
const TAIL_LINES: usize = 5;

/// The rule a verdict that is not a clean pass falls under.
pub(crate) const VERDICT_RULE: &str = "verdict";

/// The verdict itself, when it is not a clean pass: an escalated or
/// incomplete run is an error (a failed one too when nothing else says it
/// failed, as when a reviewer that policy requires did not run), a pass
/// that was unreviewed or under-reviewed a warning. It points at the spec,
/// whose series it belongs to.
pub(crate) fn verdict_problem(record: &RunRecord, site: &Site) -> Option<Problem> {
    let line = verdict_line(record);
    let level = match record.verdict {
        Verdict::Pass if record.qualifier.is_some() && !record.overridden => Level::Warning,
        Verdict::Pass => return None,
        Verdict::Fail | Verdict::Incomplete | Verdict::Escalate => Level::Failed,
    };
    let title = match record.verdict {
        Verdict::Escalate => format!("gate: {line}: hand this series to a human"),
        Verdict::Incomplete => format!("gate: {line}: the gate could not decide"),
        _ => format!("gate: {line}"),
    };
    let mut message = format!(
        "{title} (spec `{}`, attempt {})",
        shown(&record.spec_id),
        record.attempt
    );
    for r in &record.verdict_reasons {
        message.push_str("\n- ");
        message.push_str(&shown(&r.why));
    }
    Some(Problem {
        rule: VERDICT_RULE.to_owned(),
        level,
        title,
        message,
        file: site.spec_file.clone(),
        line: 1,
        key: format!("verdict:{}", record.spec_id),
    })
}

/// Every problem of `record`: the verdict when it is not a clean pass
/// (see [`verdict_problem`]), then failed items (in record order), then
/// findings worst first.
pub(crate) fn collect(record: &RunRecord, site: &Site) -> Vec<Problem> {
    let mut out = items_and_findings(record, site);
    let said = out
        .iter()
        .any(|p| matches!(p.level, Level::Failed | Level::Critical));
    if let Some(v) = verdict_problem(record, site)
        && !(record.verdict == Verdict::Fail && said)
    {
        out.insert(0, v);
    }
    out
}

fn items_and_findings(record: &RunRecord, site: &Site) -> Vec<Problem> {
    let mut out = Vec::new();
    for c in record
        .checks
        .iter()
        .filter(|c| c.status == ItemStatus::Failed)
    {
        check_problems(c, site, &mut out);
    }
    for c in record
        .criteria
        .iter()
        .filter(|c| c.status == ItemStatus::Failed)
    {
        out.push(criterion_problem(c, site));
    }
    let mut findings: Vec<&gate_review::findings::Finding> = record.findings.iter().collect();
    findings.sort_by_key(|f| Level::of_severity(&f.severity));
    for f in findings {
        out.push(Problem {
            rule: format!("review.{}", f.role),
            level: Level::of_severity(&f.severity),
            title: shown(&f.title).into_owned(),
            message: if f.detail.is_empty() {
                shown(&f.title).into_owned()
            } else {
                format!("{}\n\n{}", shown(&f.title), shown(&f.detail))
            },
            file: site.path(&f.file),
            line: f.line.unwrap_or(1).max(1),
            key: f.id.clone(),
        });
    }
    // A pass that rests on part of a file is a warning at that file.
    for (range, roles) in record.review.unseen() {
        let title = format!("not reviewed: {}", shown(&range.words()));
        out.push(Problem {
            rule: UNSEEN_RULE.to_owned(),
            level: Level::Warning,
            message: format!(
                "{title}: these bytes of a changed file were not shown to {} (too large for \
                 the review's requests or its budget)",
                shown(&roles.join(", "))
            ),
            title,
            file: site.path(&range.file),
            line: 1,
            key: format!("unseen:{}:{}-{}", range.file, range.start, range.end),
        });
    }
    out
}

/// The rule part of the change no reviewer was shown falls under.
pub(crate) const UNSEEN_RULE: &str = "review.unseen";

/// The rule a check falls under.
pub(crate) fn check_rule(c: &CheckRecord) -> String {
    match c.kind {
        CheckKind::Check => "check".to_owned(),
        CheckKind::TaskTests => "task-tests".to_owned(),
        CheckKind::Criterion => "criterion".to_owned(),
        CheckKind::Builtin => c.id.clone(),
        CheckKind::Page => "page".to_owned(),
    }
}

fn check_problems(c: &CheckRecord, site: &Site, out: &mut Vec<Problem>) {
    let rule = check_rule(c);
    let why = shown(c.reason.as_deref().unwrap_or("failed"));
    let id = shown(&c.id);
    if c.locations.is_empty() {
        out.push(Problem {
            rule,
            level: Level::Failed,
            title: format!("check `{id}` failed"),
            message: with_tail(&format!("check `{id}` failed: {why}"), &c.output.tail),
            file: site.spec_file.clone(),
            line: site.line_of(&c.id),
            key: c.id.clone(),
        });
        return;
    }
    for loc in &c.locations {
        let line = loc.line.unwrap_or(1).max(1);
        out.push(Problem {
            rule: rule.clone(),
            level: Level::Failed,
            title: format!("{id}: {}", shown(first_line(&loc.message))),
            message: shown_block(&loc.message).into_owned(),
            file: site.path(&loc.file),
            line,
            key: format!("{}:{}:{}", c.id, loc.file, first_line(&loc.message)),
        });
    }
}

fn criterion_problem(c: &CriterionRecord, site: &Site) -> Problem {
    let why = match (c.met, c.threshold) {
        (Some(met), Some(t)) => format!("judged {met:.2}, needs {t:.2}"),
        _ => c.reason.clone().unwrap_or_else(|| "failed".to_owned()),
    };
    let (id, why) = (shown(&c.id), shown(&why));
    let text = if c.text.is_empty() {
        format!("criterion `{id}` not met: {why}")
    } else {
        format!("criterion `{id}` ({}) not met: {why}", shown(&c.text))
    };
    Problem {
        rule: "criterion".to_owned(),
        level: Level::Failed,
        title: format!("criterion `{id}` not met"),
        message: with_tail(&text, &c.output.tail),
        file: site.spec_file.clone(),
        line: site.line_of(&c.id),
        key: c.id.clone(),
    }
}

/// A failed check's output as reports quote it: the places a built-in
/// pointed at (those its output does not already list), each one line
/// [`shown`] (a file name's line break cannot start a line of the block),
/// then the tail, [`shown_block`].
pub(crate) fn check_output(c: &CheckRecord) -> String {
    let mut text = String::new();
    if c.kind == CheckKind::Builtin {
        // A built-in's output is its summary line and its places, written
        // by the harness with the file names raw: each place is one line
        // again here.
        text.push_str(&shown(first_line(&c.output.tail)));
        text.push('\n');
        for loc in &c.locations {
            let at = loc.line.map(|l| format!(":{l}")).unwrap_or_default();
            text.push_str(&shown(&format!("{}{at}: {}", loc.file, loc.message)));
            text.push('\n');
        }
        return text;
    }
    for loc in &c.locations {
        let at = loc.line.map(|l| format!(":{l}")).unwrap_or_default();
        let line = format!("{}{at}: {}", loc.file, loc.message);
        if !c.output.tail.contains(&line) {
            text.push_str(&shown(&line));
            text.push('\n');
        }
    }
    text.push_str(&shown_block(&c.output.tail));
    text
}

fn with_tail(head: &str, tail: &str) -> String {
    let tail = shown_block(tail);
    let lines: Vec<&str> = tail.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return head.to_owned();
    }
    let start = lines.len().saturating_sub(TAIL_LINES);
    format!("{head}\n{}", lines[start..].join("\n"))
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixture;
    use crate::record::{Qualifier, QualifierKind};

    /// A run that did not pass cleanly never renders as one with no problem.
    #[test]
    fn a_verdict_short_of_a_clean_pass_is_a_problem() {
        let site = fixture::site();
        let bare = || {
            let mut r = fixture::record();
            r.checks.clear();
            r.criteria.clear();
            r.findings.clear();
            r.verdict_reasons.clear();
            r
        };
        let unreviewed = Some(Qualifier {
            kind: QualifierKind::Unreviewed,
            why: "no provider configured".into(),
            breakers_open: Vec::new(),
        });
        // (verdict, qualifier, the verdict problem's level)
        let cases = [
            (Verdict::Escalate, None, Some(Level::Failed)),
            (Verdict::Incomplete, None, Some(Level::Failed)),
            (Verdict::Fail, None, Some(Level::Failed)),
            (Verdict::Pass, unreviewed, Some(Level::Warning)),
            (Verdict::Pass, None, None),
        ];
        for (verdict, qualifier, want) in cases {
            let mut r = bare();
            r.verdict = verdict;
            r.qualifier = qualifier;
            let problems = collect(&r, &site);
            assert_eq!(
                problems.first().map(|p| (p.rule.as_str(), p.level)),
                want.map(|l| (VERDICT_RULE, l)),
                "{verdict:?}"
            );
        }
        // A failure its failed items already say is not said twice.
        let rules: Vec<String> = collect(&fixture::record(), &site)
            .into_iter()
            .map(|p| p.rule)
            .collect();
        assert!(!rules.contains(&VERDICT_RULE.to_owned()), "{rules:?}");
    }

    #[test]
    fn failed_items_then_findings_worst_first() {
        let record = fixture::record();
        let site = fixture::site();
        let problems = collect(&record, &site);
        let summary: Vec<(&str, Level, &str, u32)> = problems
            .iter()
            .map(|p| (p.rule.as_str(), p.level, p.file.as_str(), p.line))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("check", Level::Failed, "gate.toml", 5),
                ("builtin.secrets", Level::Failed, "src/config, prod.rs", 3),
                ("builtin.secrets", Level::Failed, "keys/id_rsa", 1),
                ("criterion", Level::Failed, "gate.toml", 20),
                (
                    "review.security",
                    Level::Critical,
                    "src/orders/handler.rs",
                    42
                ),
                ("review.quality", Level::Warning, "src/orders/handler.rs", 7),
                (
                    "review.quality",
                    Level::Warning,
                    "src/orders/handler.rs",
                    90
                ),
                ("review.docs", Level::Suggestion, "README.md", 1),
            ]
        );
        assert!(problems[0].message.contains("exited with status 3"));
        assert!(problems[0].message.contains("error: boom"));
    }
}
