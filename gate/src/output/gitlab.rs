//! `--format gitlab`: a GitLab Code Quality report — a JSON array of issues,
//! each with `description`, `check_name`, a `fingerprint` unique in the
//! report, `severity` (info, minor, major, critical, blocker) and
//! `location.path` + `location.lines.begin`, for the merge-request widget
//! (`artifacts: reports: codequality:`).

use std::collections::HashMap;

use serde_json::{Value, json};

use super::problems::{self, Level, Problem};
use super::site::Site;
use super::text;
use crate::record::RunRecord;

/// Longest description kept (GitLab shows it on one line).
const DESCRIPTION_MAX: usize = 1000;

/// GitLab's severity for a problem: a failed item blocks the merge.
pub(crate) fn severity(level: Level) -> &'static str {
    match level {
        Level::Failed => "blocker",
        Level::Critical => "critical",
        Level::Warning => "major",
        Level::Suggestion => "minor",
    }
}

/// The Code Quality report of a run.
pub(crate) fn render(record: &RunRecord, site: &Site) -> Value {
    Value::Array(issues(&problems::collect(record, site)))
}

/// One issue per problem, fingerprints unique within the list.
pub(crate) fn issues(problems: &[Problem]) -> Vec<Value> {
    let mut seen: HashMap<(&str, &str), u32> = HashMap::new();
    problems
        .iter()
        .map(|p| {
            let n = seen.entry((p.rule.as_str(), p.key.as_str())).or_insert(0);
            *n += 1;
            json!({
                "description": description(p),
                "check_name": format!("gate.{}", p.rule),
                "fingerprint": fingerprint(p, *n),
                "severity": severity(p.level),
                "location": {"path": p.file, "lines": {"begin": p.line.max(1)}},
            })
        })
        .collect()
}

/// Stable across runs for the same problem (the rule and the finding id or
/// the item and its place); the n-th repeat within one report differs.
fn fingerprint(p: &Problem, occurrence: u32) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(p.rule.as_bytes());
    hasher.update(b"\0");
    hasher.update(p.key.as_bytes());
    if occurrence > 1 {
        hasher.update(format!("\0{occurrence}").as_bytes());
    }
    hasher.finalize().to_hex()[..32].to_owned()
}

/// The message on one line: its first line, then the rest after a dash.
fn description(p: &Problem) -> String {
    let message = text::shown_block(&p.message);
    let collapse = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let (first, rest) = message.split_once('\n').unwrap_or((&message, ""));
    let rest = collapse(rest);
    let one_line = if rest.is_empty() {
        collapse(first)
    } else {
        format!("{} — {rest}", collapse(first))
    };
    let short = text::truncate_bytes(&one_line, DESCRIPTION_MAX);
    if short.len() < one_line.len() {
        format!("{short}…")
    } else {
        one_line
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use gate_review::findings::Finding;

    use super::*;
    use crate::output::fixture;

    fn finding(id: &str, role: &str, file: &str, line: Option<u32>, title: &str) -> Finding {
        Finding {
            id: id.into(),
            severity: "warning".into(),
            role: role.into(),
            file: file.into(),
            line,
            title: title.into(),
            detail: String::new(),
            confidence: 0.9,
            lineage: gate_review::findings::Lineage::raised(role, "warning"),
        }
    }

    #[test]
    fn fingerprints_are_unique_over_duplicate_looking_findings() {
        let same = || {
            finding(
                "aaaaaaaaaaaa",
                "quality",
                "src/a.rs",
                Some(3),
                "Error swallowed",
            )
        };
        let cases: Vec<(&str, Vec<Finding>)> = vec![
            ("identical twins", vec![same(), same()]),
            ("three of a kind", vec![same(), same(), same()]),
            (
                "same id, other lines",
                vec![
                    same(),
                    finding(
                        "aaaaaaaaaaaa",
                        "quality",
                        "src/a.rs",
                        Some(90),
                        "Error swallowed",
                    ),
                ],
            ),
            (
                "same title, other roles",
                vec![
                    same(),
                    finding(
                        "bbbbbbbbbbbb",
                        "security",
                        "src/a.rs",
                        Some(3),
                        "Error swallowed",
                    ),
                ],
            ),
            (
                "same title, other files",
                vec![
                    same(),
                    finding(
                        "cccccccccccc",
                        "quality",
                        "src/b.rs",
                        Some(3),
                        "Error swallowed",
                    ),
                ],
            ),
            (
                "no line at all",
                vec![
                    finding("dddddddddddd", "docs", "README.md", None, "Stale"),
                    finding("dddddddddddd", "docs", "README.md", None, "Stale"),
                ],
            ),
        ];
        for (name, findings) in cases {
            let mut record = fixture::record();
            record.findings = findings;
            let report = render(&record, &fixture::site());
            let issues = report.as_array().unwrap();
            let prints: HashSet<&str> = issues
                .iter()
                .map(|i| i["fingerprint"].as_str().unwrap())
                .collect();
            assert_eq!(prints.len(), issues.len(), "{name}: {report:#}");
        }
    }

    #[test]
    fn a_finding_keeps_its_fingerprint_across_runs() {
        let alone = {
            let mut r = fixture::record();
            r.findings.truncate(1);
            render(&r, &fixture::site())
        };
        let with_others = render(&fixture::record(), &fixture::site());
        let print = |doc: &Value, check: &str| {
            doc.as_array()
                .unwrap()
                .iter()
                .find(|i| i["check_name"] == check)
                .map(|i| i["fingerprint"].clone())
                .unwrap()
        };
        assert_eq!(
            print(&alone, "gate.review.quality"),
            print(&with_others, "gate.review.quality")
        );
    }

    #[test]
    fn shape_and_severity_mapping() {
        let report = render(&fixture::record(), &fixture::site());
        let issues = report.as_array().unwrap();
        let got: Vec<(&str, &str, &str, u64)> = issues
            .iter()
            .map(|i| {
                (
                    i["check_name"].as_str().unwrap(),
                    i["severity"].as_str().unwrap(),
                    i["location"]["path"].as_str().unwrap(),
                    i["location"]["lines"]["begin"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("gate.check", "blocker", "gate.toml", 5),
                ("gate.builtin.secrets", "blocker", "src/config, prod.rs", 3),
                ("gate.builtin.secrets", "blocker", "keys/id_rsa", 1),
                ("gate.criterion", "blocker", "gate.toml", 20),
                (
                    "gate.review.security",
                    "critical",
                    "src/orders/handler.rs",
                    42
                ),
                ("gate.review.quality", "major", "src/orders/handler.rs", 7),
                ("gate.review.quality", "major", "src/orders/handler.rs", 90),
                ("gate.review.docs", "minor", "README.md", 1),
            ]
        );
        for i in issues {
            let d = i["description"].as_str().unwrap();
            assert!(
                !d.contains('\n') && !d.contains('\x1b') && !d.is_empty(),
                "{d:?}"
            );
            assert_eq!(i["fingerprint"].as_str().unwrap().len(), 32);
        }
    }
}
