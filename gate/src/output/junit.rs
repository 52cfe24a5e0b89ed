//! `--format junit`: JUnit XML, one test suite per stage — `checks`,
//! `criteria`, and one per reviewer (`review.quality`, …; a single `review`
//! suite when the review did not run) — and one test case per item.
//!
//! Failed items carry a `<failure>` with their output tail; skipped,
//! unverified and not-run items a `<skipped>` with the reason; times are in
//! seconds, a suite's the wall time its items spanned (they run
//! concurrently), never more than the run's. A last `verdict` suite holds
//! one case, failed unless the run passed, its output the verdict line
//! (`PASS (unreviewed: …)` included).

use std::fmt::Write;

use gate_review::findings::Finding;
use gate_review::record::{ByteRange, ReviewStatus, SpecialistRecord};

use super::text::{shown, shown_block, xml_escape};
use crate::record::{CheckRecord, CriterionRecord, ItemStatus, RunRecord, Verdict, verdict_line};

/// The JUnit document of a run.
pub(crate) fn render(record: &RunRecord) -> String {
    let mut suites = vec![checks_suite(record), criteria_suite(record)];
    suites.extend(review_suites(record));
    suites.push(verdict_suite(record));
    let total = |f: fn(&Suite) -> usize| suites.iter().map(f).sum::<usize>();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{}\" timestamp=\"{}\">",
        xml_escape(&format!("gate: {}", shown(&record.spec_id))),
        total(|s| s.cases.len()),
        total(Suite::failures),
        total(Suite::skipped),
        seconds(record.duration_ms),
        xml_escape(&record.started_at),
    );
    for suite in &suites {
        suite.write(&mut out, record);
    }
    out.push_str("</testsuites>\n");
    out
}

/// One test suite.
struct Suite {
    name: String,
    cases: Vec<Case>,
    /// Its wall time when known (items that ran concurrently), else the
    /// sum of its cases'.
    wall_ms: Option<u64>,
}

/// One test case and how it ended.
struct Case {
    name: String,
    classname: String,
    ms: u64,
    end: End,
    /// Shown in `<system-out>`.
    out: Option<String>,
}

enum End {
    Passed,
    Failed {
        message: String,
        kind: String,
        text: String,
    },
    Skipped {
        message: String,
    },
}

impl Suite {
    fn failures(&self) -> usize {
        self.cases
            .iter()
            .filter(|c| matches!(c.end, End::Failed { .. }))
            .count()
    }

    fn skipped(&self) -> usize {
        self.cases
            .iter()
            .filter(|c| matches!(c.end, End::Skipped { .. }))
            .count()
    }

    fn write(&self, out: &mut String, record: &RunRecord) {
        let ms = self
            .wall_ms
            .unwrap_or_else(|| self.cases.iter().map(|c| c.ms).sum())
            .min(record.duration_ms);
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{}\" timestamp=\"{}\">",
            xml_escape(&shown(&self.name)),
            self.cases.len(),
            self.failures(),
            self.skipped(),
            seconds(ms),
            xml_escape(&record.started_at),
        );
        let _ = writeln!(out, "    <properties>");
        for (name, value) in [
            ("gate.run_id", record.run_id.as_str()),
            ("gate.spec_id", record.spec_id.as_str()),
            ("gate.verdict", record.verdict.as_str()),
            ("gate.verdict_line", verdict_line(record).as_str()),
            ("gate.tier", record.tier.as_str()),
        ] {
            let _ = writeln!(
                out,
                "      <property name=\"{name}\" value=\"{}\"/>",
                xml_escape(&shown(value))
            );
        }
        let _ = writeln!(out, "    </properties>");
        for case in &self.cases {
            case.write(out);
        }
        let _ = writeln!(out, "  </testsuite>");
    }
}

impl Case {
    fn write(&self, out: &mut String) {
        let _ = write!(
            out,
            "    <testcase name=\"{}\" classname=\"{}\" time=\"{}\"",
            xml_escape(&shown(&self.name)),
            xml_escape(&shown(&self.classname)),
            seconds(self.ms)
        );
        if matches!(self.end, End::Passed) && self.out.is_none() {
            out.push_str("/>\n");
            return;
        }
        out.push_str(">\n");
        match &self.end {
            End::Passed => {}
            End::Failed {
                message,
                kind,
                text,
            } => {
                let _ = writeln!(
                    out,
                    "      <failure message=\"{}\" type=\"{}\">{}</failure>",
                    xml_escape(&shown(message)),
                    xml_escape(&shown(kind)),
                    xml_escape(&shown_block(text))
                );
            }
            End::Skipped { message } => {
                let _ = writeln!(
                    out,
                    "      <skipped message=\"{}\"/>",
                    xml_escape(&shown(message))
                );
            }
        }
        if let Some(text) = &self.out {
            let _ = writeln!(
                out,
                "      <system-out>{}</system-out>",
                xml_escape(&shown_block(text))
            );
        }
        out.push_str("    </testcase>\n");
    }
}

/// An item's end: failed with its reason and output, skipped or
/// unverified with its reason, passed or carried.
fn item_end(status: ItemStatus, kind: &str, reason: Option<&str>, text: String) -> End {
    match status {
        ItemStatus::Failed => End::Failed {
            message: reason.unwrap_or("failed").to_owned(),
            kind: kind.to_owned(),
            text,
        },
        ItemStatus::Skipped => End::Skipped {
            message: reason.unwrap_or("skipped").to_owned(),
        },
        ItemStatus::Unverified => End::Skipped {
            message: format!("unverified: {}", reason.unwrap_or("not decided")),
        },
        ItemStatus::Passed | ItemStatus::Carried => End::Passed,
    }
}

fn carried_note(status: ItemStatus, from: Option<&str>) -> Option<String> {
    (status == ItemStatus::Carried).then(|| {
        format!(
            "carried: verified in an earlier attempt ({}); none of its inputs changed",
            from.unwrap_or("earlier bundle")
        )
    })
}

/// The wall time items spanned: from the first start to the last end of
/// those that ran this attempt (none ran: `None`).
fn span<'a>(items: impl Iterator<Item = (Option<u64>, u64)> + 'a) -> Option<u64> {
    let (mut first, mut last) = (u64::MAX, 0);
    for (start, ms) in items {
        let Some(start) = start else { continue };
        first = first.min(start);
        last = last.max(start.saturating_add(ms));
    }
    (first <= last).then(|| last - first)
}

fn checks_suite(record: &RunRecord) -> Suite {
    let cases = record.checks.iter().map(check_case).collect();
    Suite {
        name: "checks".to_owned(),
        cases,
        wall_ms: span(
            record
                .checks
                .iter()
                .map(|c| (c.started_ms.filter(|_| ran(c.status)), c.duration_ms)),
        ),
    }
}

/// Whether an item ran this attempt (so its time counts).
fn ran(status: ItemStatus) -> bool {
    matches!(status, ItemStatus::Passed | ItemStatus::Failed)
}

/// One case: the verdict, failed unless the run passed.
fn verdict_suite(record: &RunRecord) -> Suite {
    let line = verdict_line(record);
    // One line each: a reason's line break cannot start a line of its own.
    let reasons: Vec<String> = record
        .verdict_reasons
        .iter()
        .map(|r| shown(&r.why).into_owned())
        .collect();
    let end = if record.verdict == Verdict::Pass {
        End::Passed
    } else {
        End::Failed {
            message: line.clone(),
            kind: record.verdict.as_str().to_owned(),
            text: reasons.join("\n"),
        }
    };
    let out = (record.verdict == Verdict::Pass).then(|| {
        let mut text = line.clone();
        for r in &reasons {
            text.push('\n');
            text.push_str(r);
        }
        text
    });
    Suite {
        name: "verdict".to_owned(),
        cases: vec![Case {
            name: "verdict".to_owned(),
            classname: "gate.verdict".to_owned(),
            ms: 0,
            end,
            out,
        }],
        wall_ms: Some(0),
    }
}

fn check_case(c: &CheckRecord) -> Case {
    let text = super::problems::check_output(c);
    Case {
        name: c.id.clone(),
        classname: format!("gate.checks.{}", super::json::kind_str(c.kind)),
        ms: run_ms(c.status, c.duration_ms),
        end: item_end(c.status, "check", c.reason.as_deref(), text),
        out: carried_note(c.status, c.carried_from.as_deref()),
    }
}

fn criteria_suite(record: &RunRecord) -> Suite {
    let cases = record.criteria.iter().map(criterion_case).collect();
    Suite {
        name: "criteria".to_owned(),
        cases,
        wall_ms: span(
            record
                .criteria
                .iter()
                .map(|c| (c.started_ms.filter(|_| ran(c.status)), c.duration_ms)),
        ),
    }
}

fn criterion_case(c: &CriterionRecord) -> Case {
    let reason = match (c.met, c.threshold) {
        (Some(met), Some(t)) if c.status == ItemStatus::Failed => {
            Some(format!("judged {met:.2}, needs {t:.2}"))
        }
        _ => c.reason.clone(),
    };
    let text = format!("{}\n{}", shown(&c.text), c.output.tail);
    let judged = match (c.met, c.threshold) {
        (Some(met), Some(t)) if c.status == ItemStatus::Passed => {
            Some(format!("judged {met:.2} (needs {t:.2})"))
        }
        _ => None,
    };
    Case {
        name: c.id.clone(),
        classname: format!("gate.criteria.{}", c.task),
        ms: run_ms(c.status, c.duration_ms),
        end: item_end(c.status, "criterion", reason.as_deref(), text),
        out: carried_note(c.status, c.carried_from.as_deref()).or(judged),
    }
}

fn review_suites(record: &RunRecord) -> Vec<Suite> {
    if record.review.status == ReviewStatus::DidNotRun {
        return vec![Suite {
            name: "review".to_owned(),
            cases: vec![Case {
                name: "review".to_owned(),
                classname: "gate.review".to_owned(),
                ms: 0,
                end: End::Skipped {
                    message: format!(
                        "did not run: {}",
                        record.review.reason.as_deref().unwrap_or("no reason given")
                    ),
                },
                out: None,
            }],
            wall_ms: None,
        }];
    }
    let mut roles: Vec<&str> = record
        .review
        .specialists
        .iter()
        .map(|s| s.role.as_str())
        .collect();
    for f in &record.findings {
        if !roles.contains(&f.role.as_str()) {
            roles.push(&f.role);
        }
    }
    roles
        .into_iter()
        .map(|role| {
            let mut cases: Vec<Case> = record
                .review
                .specialists
                .iter()
                .filter(|s| s.role == role)
                .map(specialist_case)
                .collect();
            cases.extend(
                record
                    .findings
                    .iter()
                    .filter(|f| f.role == role)
                    .map(finding_case),
            );
            Suite {
                name: format!("review.{role}"),
                cases,
                wall_ms: None,
            }
        })
        .collect()
}

fn specialist_case(s: &SpecialistRecord) -> Case {
    let end = if s.status == "ok" {
        End::Passed
    } else {
        let what = if s.status == "skipped" {
            "skipped"
        } else {
            "did not run"
        };
        End::Skipped {
            message: format!(
                "{what}: {}",
                s.reason.as_deref().unwrap_or("no reason given")
            ),
        }
    };
    Case {
        name: format!("{} review", s.role),
        classname: format!("gate.review.{}", s.role),
        ms: s.latency_ms,
        end,
        out: Some(format!(
            "model {}; {} input tokens ({} cached), {} output tokens{}",
            s.model,
            opt(s.input_tokens),
            opt(s.cached_input_tokens),
            opt(s.output_tokens),
            unseen_note(s)
        )),
    }
}

/// What a reviewer that ran was not shown, as a sentence of its own.
fn unseen_note(s: &SpecialistRecord) -> String {
    if s.status != "ok" || s.coverage.cut_ranges.is_empty() {
        return String::new();
    }
    let ranges: Vec<String> = s.coverage.cut_ranges.iter().map(ByteRange::words).collect();
    format!("; not reviewed: {}", ranges.join(", "))
}

fn finding_case(f: &Finding) -> Case {
    let at = match f.line {
        Some(l) => format!("{}:{l}", f.file),
        None => f.file.clone(),
    };
    let name = format!("{} [{}] {} ({at})", f.id, f.severity, first_line(&f.title));
    let text = format!(
        "{}\n{}\n\n{}",
        shown(&at),
        shown(&f.title),
        shown(&f.detail)
    );
    let end = if f.severity == "critical" {
        End::Failed {
            message: first_line(&f.title).to_owned(),
            kind: "critical".to_owned(),
            text: text.clone(),
        }
    } else {
        End::Passed
    };
    Case {
        name,
        classname: format!("gate.review.{}", f.role),
        ms: 0,
        out: (f.severity != "critical").then_some(text),
        end,
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn opt(n: Option<u64>) -> String {
    n.map_or_else(|| "?".to_owned(), |n| n.to_string())
}

/// Only what ran this time took time.
fn run_ms(status: ItemStatus, ms: u64) -> u64 {
    match status {
        ItemStatus::Passed | ItemStatus::Failed => ms,
        _ => 0,
    }
}

/// Milliseconds as JUnit's seconds.
fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixture;

    /// Python's junitparser, a real JUnit reader, reads every suite, case,
    /// result and time back.
    #[test]
    fn junitparser_reads_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gate.junit.xml");
        std::fs::write(&path, render(&fixture::record())).unwrap();
        let doc = gate_tests::peers::junit_read(&path);
        let names: Vec<&str> = doc["suites"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "checks",
                "criteria",
                "review.quality",
                "review.security",
                "review.docs",
                "review.performance",
                "verdict"
            ]
        );
        let checks = &doc["suites"][0];
        assert_eq!(checks["tests"], 5);
        assert_eq!(checks["failures"], 2);
        assert_eq!(checks["skipped"], 1);
        let build = &checks["cases"][0];
        assert_eq!(build["name"], "build");
        assert_eq!(build["time"], 1.234);
        assert_eq!(build["results"], serde_json::json!(["Failure"]));
        assert_eq!(build["texts"][0][0], "exited with status 3");
        let tail = build["texts"][0][1].as_str().unwrap();
        assert!(
            tail.contains("warning: 100% <sure> & \"done\"") && tail.contains("error: boom"),
            "{tail}"
        );
        assert!(!tail.contains('\x1b'));
        let carried = &checks["cases"][4];
        assert_eq!(carried["results"], serde_json::json!([]));
        assert!(carried["out"].as_str().unwrap().contains("carried"));

        let criteria = &doc["suites"][1];
        assert_eq!(criteria["failures"], 1);
        assert_eq!(criteria["skipped"], 1);
        assert_eq!(
            criteria["cases"][2]["results"],
            serde_json::json!(["Skipped"])
        );

        // The critical finding fails its reviewer's suite; warnings do not.
        assert_eq!(doc["suites"][2]["failures"], 0);
        assert_eq!(doc["suites"][3]["failures"], 1);
        assert_eq!(doc["suites"][4]["skipped"], 1);
        // A reviewer with nothing to review is a skipped case that says so.
        let skipped = &doc["suites"][5];
        assert_eq!(skipped["skipped"], 1);
        assert_eq!(
            skipped["cases"][0]["texts"][0][0],
            "skipped: no code in the change"
        );
        assert_eq!(doc["suites"][6]["failures"], 1, "the verdict: FAIL");
        assert_eq!(doc["failures"], 5);
    }

    /// A suite's time is the wall time its items spanned: concurrent items
    /// do not add up past it, nor past the run's.
    #[test]
    fn a_suites_time_is_its_wall_time() {
        let mut record = fixture::record();
        record.duration_ms = 5_000;
        for c in &mut record.checks {
            // Three at once: 0–4 s, 0–4 s, 1–5 s.
            c.duration_ms = 4_000;
            c.started_ms = Some(0);
        }
        record.checks[2].started_ms = Some(1_000);
        let xml = render(&record);
        assert!(
            xml.contains("<testsuite name=\"checks\" tests=\"5\" failures=\"2\" errors=\"0\" skipped=\"1\" time=\"5.000\""),
            "{xml}"
        );
        // With no start times (older records) the sum is capped at the run's.
        for c in &mut record.checks {
            c.started_ms = None;
        }
        assert!(render(&record).contains("skipped=\"1\" time=\"5.000\""));
    }

    /// An escalated run is a failure, an unreviewed pass is said.
    #[test]
    fn the_verdict_is_a_case_of_its_own() {
        let mut record = fixture::record();
        record.verdict = Verdict::Escalate;
        let xml = render(&record);
        assert!(
            xml.contains("<failure message=\"ESCALATE\" type=\"escalate\">"),
            "{xml}"
        );
        record.verdict = Verdict::Pass;
        record.verdict_reasons.clear();
        record.qualifier = Some(crate::record::Qualifier {
            kind: crate::record::QualifierKind::Unreviewed,
            why: "no provider configured".into(),
            breakers_open: Vec::new(),
        });
        let xml = render(&record);
        assert!(
            xml.contains("<system-out>PASS (unreviewed: no provider configured)</system-out>"),
            "{xml}"
        );
    }

    #[test]
    fn a_review_that_did_not_run_is_one_skipped_case() {
        let mut record = fixture::record();
        record.review = gate_review::record::ReviewRecord::did_not_run("no provider configured");
        record.findings.clear();
        let xml = render(&record);
        assert!(xml.contains(
            "<testsuite name=\"review\" tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"1\""
        ));
        assert!(xml.contains("<skipped message=\"did not run: no provider configured\"/>"));
    }
}
