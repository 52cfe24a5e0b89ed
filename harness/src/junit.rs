//! The per-task unit-test report precondition.
//!
//! The report must exist, parse as JUnit XML (`<testsuites>` or a bare
//! `<testsuite>`), hold at least one test that ran, no failure or error, and
//! not be stale. The verdict counts the `<testcase>` elements and their
//! `<failure>`/`<error>` children itself; the summary attributes are only
//! believed when they report something wrong. Whether a report is stale is
//! decided by its content, never by file times (a checkout gives every file
//! a new time, and `touch` gives any file one): the caller passes why when
//! it is.

use std::path::{Path, PathBuf};

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use crate::Location;

/// Failing test names listed in a reason before "and N more".
const NAMES_SHOWN: usize = 5;

/// The largest report read (it is read whole): far above any real suite's,
/// and a bound on what a hostile workspace can make the gate hold.
const MAX_REPORT_BYTES: u64 = 256 * 1024 * 1024;

/// What a report that passed holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportSummary {
    /// Test cases that ran.
    pub tests: usize,
    /// Test cases marked skipped.
    pub skipped: usize,
}

/// Why a report does not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFailure {
    /// One line.
    pub reason: String,
    /// The failing tests.
    pub locations: Vec<Location>,
}

impl ReportFailure {
    fn new(reason: String) -> Self {
        Self {
            reason,
            locations: Vec::new(),
        }
    }
}

/// Checks the report at workspace-relative `report`; `stale` is why it is
/// not the report for the task's files as they are, when it is not. A
/// report that resolves into one of `refused` is refused before it is
/// opened.
pub fn check_report(
    workspace: &Path,
    report: &str,
    stale: Option<&str>,
    refused: &[PathBuf],
) -> Result<ReportSummary, ReportFailure> {
    let found = gate_specs::within(workspace, report).and_then(|full| {
        let meta = std::fs::metadata(&full)?;
        Ok((full, meta))
    });
    if let Ok((full, _)) = &found
        && refused.iter().any(|r| {
            full.starts_with(r) || r.canonicalize().is_ok_and(|real| full.starts_with(real))
        })
    {
        return Err(ReportFailure::new(format!(
            "report {report} leads into the gate's own state: a report is read only where the \
             tests could have written it"
        )));
    }
    let (full, meta) = match found {
        Ok(found) => found,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ReportFailure::new(format!("report {report} not found")));
        }
        Err(e) => {
            return Err(ReportFailure::new(format!(
                "cannot read report {report}: {e}"
            )));
        }
    };
    if !meta.is_file() {
        return Err(ReportFailure::new(format!("report {report} is not a file")));
    }
    if meta.len() > MAX_REPORT_BYTES {
        return Err(ReportFailure::new(format!(
            "report {report} is {} bytes, more than the {} MiB a report may be",
            meta.len(),
            MAX_REPORT_BYTES / (1024 * 1024)
        )));
    }
    let bytes = std::fs::read(&full)
        .map_err(|e| ReportFailure::new(format!("cannot read report {report}: {e}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| ReportFailure::new(format!("report {report} is not JUnit XML: not UTF-8")))?;
    let parsed = parse(&text)
        .map_err(|why| ReportFailure::new(format!("report {report} is not JUnit XML: {why}")))?;
    verdict(report, &parsed)?;
    if let Some(why) = stale {
        return Err(ReportFailure::new(why.to_owned()));
    }
    Ok(ReportSummary {
        tests: parsed.cases.iter().filter(|c| !c.skipped).count(),
        skipped: parsed.cases.iter().filter(|c| c.skipped).count(),
    })
}

/// One `<testcase>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Case {
    name: String,
    line: u32,
    failed: bool,
    errored: bool,
    skipped: bool,
    /// The first failure's or error's `message`.
    message: Option<String>,
}

/// What a report holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Parsed {
    cases: Vec<Case>,
    /// Sum of the `failures` attributes of the suites (or of the root).
    said_failures: u64,
    /// Sum of the `errors` attributes.
    said_errors: u64,
}

/// Reads a JUnit document; the error is why it is not one.
fn parse(text: &str) -> Result<Parsed, String> {
    let lines = LineIndex::new(text);
    let mut reader = Reader::from_str(text);
    let mut parsed = Parsed::default();
    // Element names from the root down to the current one.
    let mut stack: Vec<String> = Vec::new();
    let mut seen_root = false;
    let mut root_counts: Option<(u64, u64)> = None;
    let mut suite_counts = (0_u64, 0_u64);
    loop {
        let at = reader.buffer_position();
        let event = reader.read_event().map_err(|e| {
            format!(
                "line {}: {e}",
                lines.line_of(usize::try_from(reader.error_position()).unwrap_or(0))
            )
        })?;
        match event {
            Event::Start(el) | Event::Empty(el) if stack.is_empty() && seen_root => {
                let name = local_name(&el);
                return Err(format!("a second root element <{name}>"));
            }
            Event::Start(ref el) | Event::Empty(ref el) => {
                let name = local_name(el);
                let empty = matches!(event, Event::Empty(_));
                if stack.is_empty() {
                    if name != "testsuites" && name != "testsuite" {
                        return Err(format!(
                            "the root element is <{name}>, not <testsuites> or <testsuite>"
                        ));
                    }
                    seen_root = true;
                    root_counts = Some(counts(el));
                }
                match name.as_str() {
                    "testsuite" => {
                        let (f, e) = counts(el);
                        suite_counts.0 += f;
                        suite_counts.1 += e;
                    }
                    "testcase" => parsed.cases.push(Case {
                        name: case_name(el),
                        line: lines.line_of(usize::try_from(at).unwrap_or(0)),
                        ..Case::default()
                    }),
                    "failure" | "error" | "skipped"
                        if stack.last().is_some_and(|p| p == "testcase") =>
                    {
                        if let Some(case) = parsed.cases.last_mut() {
                            match name.as_str() {
                                "failure" => case.failed = true,
                                "error" => case.errored = true,
                                _ => case.skipped = true,
                            }
                            if name != "skipped" && case.message.is_none() {
                                case.message = attr(el, "message");
                            }
                        }
                    }
                    _ => {}
                }
                if !empty {
                    stack.push(name);
                }
            }
            Event::End(_) => {
                stack.pop();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !seen_root {
        return Err("no root element".to_owned());
    }
    if !stack.is_empty() {
        return Err(format!("<{}> is never closed", stack.join("> <")));
    }
    // `<testsuites>` may carry the totals itself, or leave them to its suites.
    let (root_f, root_e) = root_counts.unwrap_or_default();
    parsed.said_failures = root_f.max(suite_counts.0);
    parsed.said_errors = root_e.max(suite_counts.1);
    Ok(parsed)
}

/// Fails on failing or erroring cases, on summary counts that say so, and on
/// a report in which no test ran.
fn verdict(report: &str, parsed: &Parsed) -> Result<(), ReportFailure> {
    let failed: Vec<&Case> = parsed.cases.iter().filter(|c| c.failed).collect();
    let errored: Vec<&Case> = parsed
        .cases
        .iter()
        .filter(|c| c.errored && !c.failed)
        .collect();
    if !failed.is_empty() || !errored.is_empty() {
        let mut counts = Vec::new();
        if !failed.is_empty() {
            counts.push(plural(failed.len(), "failure"));
        }
        if !errored.is_empty() {
            counts.push(plural(errored.len(), "error"));
        }
        let bad: Vec<&Case> = failed.iter().chain(errored.iter()).copied().collect();
        let mut names: Vec<&str> = bad
            .iter()
            .take(NAMES_SHOWN)
            .map(|c| c.name.as_str())
            .collect();
        let more = bad.len().saturating_sub(NAMES_SHOWN);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        names.dedup();
        return Err(ReportFailure {
            reason: format!("{}: {}{more}", counts.join(", "), names.join(", ")),
            locations: bad
                .iter()
                .map(|c| Location {
                    file: report.to_owned(),
                    line: Some(c.line),
                    message: match &c.message {
                        Some(m) => format!(
                            "{} {}: {m}",
                            c.name,
                            if c.failed { "failed" } else { "errored" }
                        ),
                        None => {
                            format!("{} {}", c.name, if c.failed { "failed" } else { "errored" })
                        }
                    },
                })
                .collect(),
        });
    }
    if parsed.said_failures > 0 || parsed.said_errors > 0 {
        return Err(ReportFailure::new(format!(
            "the report's summary says {} and {}",
            plural(
                usize::try_from(parsed.said_failures).unwrap_or(usize::MAX),
                "failure"
            ),
            plural(
                usize::try_from(parsed.said_errors).unwrap_or(usize::MAX),
                "error"
            ),
        )));
    }
    let ran = parsed.cases.iter().filter(|c| !c.skipped).count();
    if ran == 0 {
        let skipped = parsed.cases.len();
        return Err(ReportFailure::new(if skipped == 0 {
            "no tests".to_owned()
        } else {
            format!("no tests ran ({skipped} skipped)")
        }));
    }
    Ok(())
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

fn local_name(el: &BytesStart<'_>) -> String {
    String::from_utf8_lossy(el.local_name().as_ref()).into_owned()
}

fn attr(el: &BytesStart<'_>, name: &str) -> Option<String> {
    let a = el.try_get_attribute(name).ok().flatten()?;
    a.unescape_value().ok().map(|v| v.trim().to_owned())
}

/// `failures` and `errors` attributes (absent or unreadable: 0).
fn counts(el: &BytesStart<'_>) -> (u64, u64) {
    let n = |name| attr(el, name).and_then(|v| v.parse().ok()).unwrap_or(0);
    (n("failures"), n("errors"))
}

/// `classname.name`, or whichever of them is there.
fn case_name(el: &BytesStart<'_>) -> String {
    match (attr(el, "classname"), attr(el, "name")) {
        (Some(class), Some(name)) if !class.is_empty() => format!("{class}.{name}"),
        (_, Some(name)) => name,
        (Some(class), None) => class,
        (None, None) => "(unnamed test)".to_owned(),
    }
}

/// Byte offset → 1-based line.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Self { starts }
    }

    fn line_of(&self, offset: usize) -> u32 {
        let line = match self.starts.binary_search(&offset) {
            Ok(i) => i + 1,
            Err(i) => i,
        };
        u32::try_from(line).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{ago, write_file};

    const PASS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="2" failures="0" errors="0">
  <testsuite name="orders" tests="2">
    <testcase classname="orders" name="creates"/>
    <testcase classname="orders" name="rejects_empty"><system-out>ok</system-out></testcase>
  </testsuite>
</testsuites>
"#;

    /// Builds a workspace with `src/orders/create.rs` (written 100 s ago)
    /// and the report (written `report_age` s ago: file times decide
    /// nothing), and checks it as not stale.
    fn check(report: Option<&str>, report_age: i64) -> Result<ReportSummary, ReportFailure> {
        let ws = tempfile::tempdir().unwrap();
        write_file(
            ws.path(),
            "src/orders/create.rs",
            b"fn create() {}",
            ago(100),
        );
        write_file(ws.path(), "src/other.rs", b"fn other() {}", ago(0));
        if let Some(xml) = report {
            write_file(
                ws.path(),
                "reports/orders.junit.xml",
                xml.as_bytes(),
                ago(report_age),
            );
        }
        check_report(ws.path(), "reports/orders.junit.xml", None, &[])
    }

    #[test]
    fn report_cases() {
        let bare_suite = r#"<testsuite name="s" tests="1"><testcase name="t"/></testsuite>"#;
        let no_tests = r#"<testsuites tests="0"><testsuite name="s"/></testsuites>"#;
        let all_skipped = r#"<testsuite><testcase name="t"><skipped/></testcase></testsuite>"#;
        let failure = r#"<testsuites>
<testsuite name="s">
<testcase classname="m" name="test_a"><failure message="expected 201, got 500">trace</failure></testcase>
<testcase classname="m" name="ok"/>
<testcase classname="m" name="test_b"><failure/></testcase>
</testsuite>
</testsuites>"#;
        let error =
            r#"<testsuite><testcase name="test_c"><error message="boom"/></testcase></testsuite>"#;
        let lying_summary = r#"<testsuite tests="1" failures="1"><testcase name="t"/></testsuite>"#;
        let lying_root =
            r#"<testsuites errors="2"><testsuite><testcase name="t"/></testsuite></testsuites>"#;
        let wrong_root = r"<html><body>nope</body></html>";
        let unclosed = "<testsuite>\n<testcase name=\"t\">\n";
        let mismatched = "<testsuite>\n<testcase name=\"t\"></testsuite>";
        let not_xml = "{\"tests\": 3}";
        // Entities a DTD declares are not expanded ("billion laughs").
        let laughs = r#"<?xml version="1.0"?>
<!DOCTYPE t [<!ENTITY a "lolololol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
<testsuite><testcase name="&b;&b;&b;"/></testsuite>"#;
        // (report, its age in s, Ok(tests) or the reason's start)
        let cases: Vec<(Option<&str>, i64, Result<usize, &str>)> = vec![
            (Some(PASS), 10, Ok(2)),
            (Some(bare_suite), 10, Ok(1)),
            (Some(no_tests), 10, Err("no tests")),
            (Some(all_skipped), 10, Err("no tests ran (1 skipped)")),
            (Some(failure), 10, Err("2 failures: m.test_a, m.test_b")),
            (Some(error), 10, Err("1 error: test_c")),
            (
                Some(lying_summary),
                10,
                Err("the report's summary says 1 failure and 0 errors"),
            ),
            (
                Some(lying_root),
                10,
                Err("the report's summary says 0 failures and 2 errors"),
            ),
            // Older than the task's files: a checkout's times say nothing.
            (Some(PASS), 200, Ok(2)),
            (None, 10, Err("report reports/orders.junit.xml not found")),
            (
                Some(""),
                10,
                Err("report reports/orders.junit.xml is not JUnit XML: no root element"),
            ),
            (
                Some(wrong_root),
                10,
                Err("report reports/orders.junit.xml is not JUnit XML: the root element is <html>"),
            ),
            (
                Some(unclosed),
                10,
                Err("report reports/orders.junit.xml is not JUnit XML: "),
            ),
            (
                Some(mismatched),
                10,
                Err("report reports/orders.junit.xml is not JUnit XML: line 2"),
            ),
            (
                Some(not_xml),
                10,
                Err("report reports/orders.junit.xml is not JUnit XML"),
            ),
            (Some(laughs), 10, Ok(1)),
        ];
        for (report, age, want) in cases {
            let got = check(report, age);
            match (want, &got) {
                (Ok(tests), Ok(summary)) => assert_eq!(summary.tests, tests, "{report:?}"),
                (Err(reason), Err(failure)) => assert!(
                    failure.reason.starts_with(reason),
                    "{report:?}: want `{reason}`, got `{}`",
                    failure.reason
                ),
                _ => panic!("{report:?}: want {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn a_report_linked_into_the_gates_state_is_refused_unread() {
        let ws = tempfile::tempdir().unwrap();
        let state = ws.path().join(".gate");
        std::fs::create_dir_all(state.join("keys")).unwrap();
        // Valid JUnit, so only where it lies can refuse it.
        let passing = br#"<testsuite tests="1"><testcase name="a"/></testsuite>"#;
        std::fs::write(state.join("keys/signing.key"), passing).unwrap();
        std::fs::write(ws.path().join("plain.xml"), passing).unwrap();
        std::fs::create_dir_all(ws.path().join("reports")).unwrap();
        std::os::unix::fs::symlink("../.gate/keys/signing.key", ws.path().join("reports/r.xml"))
            .unwrap();
        let refused = [state];
        let failure = check_report(ws.path(), "reports/r.xml", None, &refused).unwrap_err();
        assert!(
            failure.reason.contains("leads into the gate's own state"),
            "{}",
            failure.reason
        );
        assert!(check_report(ws.path(), "plain.xml", None, &refused).is_ok());
        assert!(check_report(ws.path(), "reports/r.xml", None, &[]).is_ok());
    }

    #[test]
    fn a_report_too_large_to_read_whole_is_refused_unread() {
        let ws = tempfile::tempdir().unwrap();
        write_file(ws.path(), "r.xml", b"", ago(0));
        // Sparse: its size, not its bytes, is what is refused.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(ws.path().join("r.xml"))
            .unwrap();
        file.set_len(MAX_REPORT_BYTES + 1).unwrap();
        let failure = check_report(ws.path(), "r.xml", None, &[]).unwrap_err();
        assert_eq!(
            failure.reason,
            "report r.xml is 268435457 bytes, more than the 256 MiB a report may be"
        );
    }

    #[test]
    fn failures_point_at_their_test_cases() {
        let xml = "<testsuite>\n<testcase name=\"a\">\n<failure message=\"bad\"/>\n</testcase>\n</testsuite>\n";
        let failure = check(Some(xml), 10).unwrap_err();
        assert_eq!(
            failure.locations,
            vec![Location {
                file: "reports/orders.junit.xml".to_owned(),
                line: Some(2),
                message: "a failed: bad".to_owned(),
            }]
        );
    }

    #[test]
    fn a_stale_report_fails_with_why_once_it_is_read() {
        let ws = tempfile::tempdir().unwrap();
        write_file(ws.path(), "r.xml", PASS.as_bytes(), ago(-100));
        let why = "report r.xml is the one accepted for an earlier version of the task's files";
        let failure = check_report(ws.path(), "r.xml", Some(why), &[]).unwrap_err();
        assert_eq!(failure.reason, why);
        // A report that fails says its failures first.
        write_file(ws.path(), "r.xml", b"<testsuite/>", ago(0));
        let failure = check_report(ws.path(), "r.xml", Some(why), &[]).unwrap_err();
        assert_eq!(failure.reason, "no tests");
    }
}
