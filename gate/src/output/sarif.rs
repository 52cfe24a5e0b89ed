//! `--format sarif`: SARIF 2.1.0 as GitHub code scanning takes it.
//!
//! One run; `tool.driver` names the gate with a rule per check kind and per
//! reviewer role; every failed check (each place a built-in pointed at),
//! failed criterion and finding is a result with a level (failed and
//! critical → error, warning → warning, suggestion → note), a location
//! relative to the repository root (`%SRCROOT%`) with a start line, and a
//! `partialFingerprints` entry from the finding id (or the item and its place),
//! so code scanning tracks one alert across runs.

use std::collections::HashMap;
use std::fmt::Write;

use serde_json::{Value, json};

use super::problems::{self, Level, Problem};
use super::site::Site;
use crate::record::{RunRecord, Verdict};

/// SARIF's JSON schema.
pub(crate) const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
/// Where people learn about the tool.
pub(crate) const INFORMATION_URI: &str = "https://gate.dev";
/// The base the result paths are relative to: the repository root.
pub(crate) const SRCROOT: &str = "%SRCROOT%";
/// The `partialFingerprints` key.
const FINGERPRINT_KEY: &str = "gateFindingId/v1";

/// One rule: id, name, short and full description.
struct Rule {
    id: &'static str,
    name: &'static str,
    short: &'static str,
    full: &'static str,
    level: &'static str,
}

/// Every rule the gate reports under, in `ruleIndex` order.
const RULES: &[Rule] = &[
    Rule {
        id: "verdict",
        name: "VerdictShortOfPass",
        short: "The run did not pass cleanly",
        full: "The gate escalated the series (a doom loop or the attempt budget), could not decide (incomplete), failed without a failed item to show, or passed with review missing (unreviewed, under-reviewed).",
        level: "error",
    },
    Rule {
        id: "check",
        name: "FailedCheck",
        short: "A cross-check failed",
        full: "A [[check]] of the spec failed: its command exited non-zero, timed out, or its service did not become ready.",
        level: "error",
    },
    Rule {
        id: "task-tests",
        name: "FailedTaskTests",
        short: "A task's own tests did not pass",
        full: "A task's tests precondition failed: its test command failed, or its JUnit report is missing, stale, empty or has failures.",
        level: "error",
    },
    Rule {
        id: "criterion",
        name: "UnmetCriterion",
        short: "An acceptance criterion is not met",
        full: "An acceptance criterion of a task is not met: its command failed, or the judge scored it below its threshold.",
        level: "error",
    },
    Rule {
        id: "builtin.secrets",
        name: "CommittedSecret",
        short: "A private key or API token is in the change",
        full: "The built-in secrets check found a private key or a known API-token shape in a file.",
        level: "error",
    },
    Rule {
        id: "builtin.conflicts",
        name: "ConflictMarker",
        short: "An unresolved merge-conflict marker",
        full: "The built-in conflicts check found an unresolved merge-conflict marker.",
        level: "error",
    },
    Rule {
        id: "builtin.parse",
        name: "UnparsableFile",
        short: "A JSON, TOML or YAML file does not parse",
        full: "The built-in parse check found a JSON, TOML or YAML file that does not parse.",
        level: "error",
    },
    Rule {
        id: "review.quality",
        name: "QualityFinding",
        short: "Quality review: a real bug, swallowed error or broken contract",
        full: "The quality reviewer found a real bug, a swallowed error or a broken contract in the change.",
        level: "warning",
    },
    Rule {
        id: "review.security",
        name: "SecurityFinding",
        short: "Security review: an exploitable issue",
        full: "The security reviewer found an exploitable issue in the change.",
        level: "warning",
    },
    Rule {
        id: "review.performance",
        name: "PerformanceFinding",
        short: "Performance review: a concrete regression",
        full: "The performance reviewer found a concrete regression on realistic input.",
        level: "warning",
    },
    Rule {
        id: "review.docs",
        name: "DocsFinding",
        short: "Docs review: docs that contradict the code",
        full: "The docs reviewer found documentation or agent instructions that contradict the code or were not updated.",
        level: "warning",
    },
    Rule {
        id: "review.integration",
        name: "IntegrationFinding",
        short: "Integration review: tasks that do not fit together",
        full: "The integration reviewer found mismatched interfaces or missing wiring between tasks.",
        level: "warning",
    },
    Rule {
        id: "review.rules",
        name: "HouseRuleFinding",
        short: "A house rule is not followed",
        full: "A house rule from docs/review/rules.toml scored below its threshold for the change.",
        level: "warning",
    },
    Rule {
        id: "review.unseen",
        name: "UnreviewedBytes",
        short: "Part of a changed file was not reviewed",
        full: "Bytes of a changed file were not shown to a reviewer: past what the review's requests (up to 8 per remit, 256 KiB of a file in each) or its input-token budget could send. The result names the byte range.",
        level: "warning",
    },
    Rule {
        id: "review.coordinator",
        name: "CoordinatorFinding",
        short: "A finding re-categorised by the coordinator",
        full: "A finding the review coordinator kept under its own name.",
        level: "warning",
    },
];

/// The SARIF log of a run.
pub(crate) fn render(record: &RunRecord, site: &Site) -> Value {
    let problems = problems::collect(record, site);
    let mut rules: Vec<Value> = RULES.iter().map(rule_json).collect();
    let mut index: HashMap<String, usize> = RULES
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.to_owned(), i))
        .collect();
    // A rule the catalogue does not know (a new role) still gets a descriptor.
    for p in &problems {
        if !index.contains_key(&p.rule) {
            index.insert(p.rule.clone(), rules.len());
            rules.push(json!({
                "id": p.rule,
                "shortDescription": {"text": format!("gate: {}", p.rule)},
                "fullDescription": {"text": format!("Problems the gate reports under {}.", p.rule)},
                "help": {"text": format!("Problems the gate reports under {}.", p.rule)},
                "defaultConfiguration": {"level": "warning"},
                "properties": {"tags": ["gate"]},
            }));
        }
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    let results: Vec<Value> = problems
        .iter()
        .map(|p| result_json(p, index[&p.rule], &mut seen))
        .collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "gate",
                "version": record.tool_version,
                "semanticVersion": record.tool_version,
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }},
            "automationDetails": {"id": format!("gate/{}/{}", record.spec_id, record.run_id)},
            "invocations": [invocation(record, site)],
            "results": results,
            "properties": {
                "verdict": record.verdict.as_str(),
                "attempt": record.attempt,
                "tier": record.tier.as_str(),
                "bundle": record.bundle,
            },
        }],
    })
}

/// The invocation: an escalated or incomplete run did not execute
/// successfully, and says why in an error notification; a pass that was
/// unreviewed or under-reviewed says so in a warning one.
fn invocation(record: &RunRecord, site: &Site) -> Value {
    let mut inv = json!({
        "executionSuccessful": !matches!(record.verdict, Verdict::Escalate | Verdict::Incomplete),
        "startTimeUtc": record.started_at,
    });
    if let Some(p) = problems::verdict_problem(record, site)
        && record.verdict != Verdict::Fail
    {
        inv["toolExecutionNotifications"] = json!([{
            "level": if p.level == Level::Warning { "warning" } else { "error" },
            "message": {"text": p.message},
            "descriptor": {"id": problems::VERDICT_RULE},
        }]);
    }
    inv
}

fn rule_json(r: &Rule) -> Value {
    json!({
        "id": r.id,
        "name": r.name,
        "shortDescription": {"text": r.short},
        "fullDescription": {"text": r.full},
        "help": {"text": r.full},
        "defaultConfiguration": {"level": r.level},
        "properties": {"tags": ["gate"]},
    })
}

fn result_json(p: &Problem, rule_index: usize, seen: &mut HashMap<String, usize>) -> Value {
    let level = match p.level {
        Level::Failed | Level::Critical => "error",
        Level::Warning => "warning",
        Level::Suggestion => "note",
    };
    // Findings keep their id; other problems get a digest of their place.
    let base = if p.rule.starts_with("review.") {
        p.key.clone()
    } else {
        let digest = blake3::hash(format!("{}\0{}", p.rule, p.key).as_bytes());
        digest.to_hex()[..16].to_owned()
    };
    let n = seen.entry(base.clone()).or_insert(0);
    *n += 1;
    let fingerprint = if *n == 1 { base } else { format!("{base}#{n}") };
    json!({
        "ruleId": p.rule,
        "ruleIndex": rule_index,
        "level": level,
        "message": {"text": p.message},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": {"uri": uri_path(&p.file), "uriBaseId": SRCROOT},
                "region": {"startLine": p.line.max(1)},
            },
        }],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
    })
}

/// A relative path as a URI reference: every byte but unreserved
/// characters and `/` percent-encoded.
pub(crate) fn uri_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.trim_start_matches('/').bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixture;

    #[test]
    fn paths_become_relative_uri_references() {
        for (path, want) in [
            ("src/a.rs", "src/a.rs"),
            ("src/config, prod.rs", "src/config%2C%20prod.rs"),
            ("100%/#x?.rs", "100%25/%23x%3F.rs"),
            ("/abs", "abs"),
            ("ünï.rs", "%C3%BCn%C3%AF.rs"),
        ] {
            assert_eq!(uri_path(path), want);
        }
    }

    /// An escalated run is no clean run: it did not execute successfully,
    /// a notification says so at error level, and a result too.
    #[test]
    fn an_escalated_run_is_not_clean() {
        let mut record = fixture::record();
        record.verdict = Verdict::Escalate;
        record.checks.clear();
        record.criteria.clear();
        record.findings.clear();
        let doc = render(&record, &fixture::site());
        let inv = &doc["runs"][0]["invocations"][0];
        assert_eq!(inv["executionSuccessful"], false);
        let note = &inv["toolExecutionNotifications"][0];
        assert_eq!(note["level"], "error");
        assert!(
            note["message"]["text"]
                .as_str()
                .unwrap()
                .contains("ESCALATE"),
            "{note}"
        );
        assert_eq!(doc["runs"][0]["results"][0]["ruleId"], "verdict");
        assert_eq!(doc["runs"][0]["results"][0]["level"], "error");
        // What the multitool, with GitHub's rules, accepts.
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("escalated.sarif");
        std::fs::write(&log, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
        let errors = gate_tests::peers::sarif_errors(&log);
        assert!(errors.is_empty(), "{}", errors.join("\n"));
        record.verdict = Verdict::Fail;
        let doc = render(&record, &fixture::site());
        assert_eq!(
            doc["runs"][0]["invocations"][0]["executionSuccessful"],
            true
        );
    }

    #[test]
    fn levels_rules_and_fingerprints() {
        let doc = render(&fixture::record(), &fixture::site());
        let run = &doc["runs"][0];
        let results = run["results"].as_array().unwrap();
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        let levels: Vec<(&str, &str)> = results
            .iter()
            .map(|r| (r["ruleId"].as_str().unwrap(), r["level"].as_str().unwrap()))
            .collect();
        assert_eq!(
            levels,
            vec![
                ("check", "error"),
                ("builtin.secrets", "error"),
                ("builtin.secrets", "error"),
                ("criterion", "error"),
                ("review.security", "error"),
                ("review.quality", "warning"),
                ("review.quality", "warning"),
                ("review.docs", "note"),
            ]
        );
        let mut fingerprints = std::collections::HashSet::new();
        for r in results {
            let i = usize::try_from(r["ruleIndex"].as_u64().unwrap()).unwrap();
            assert_eq!(rules[i]["id"], r["ruleId"]);
            let line = r["locations"][0]["physicalLocation"]["region"]["startLine"]
                .as_u64()
                .unwrap();
            assert!(line >= 1);
            assert!(fingerprints.insert(r["partialFingerprints"][FINGERPRINT_KEY].clone()));
        }
        assert_eq!(
            results[4]["partialFingerprints"][FINGERPRINT_KEY],
            "bbbbbbbbbbb2"
        );
        assert_eq!(
            results[6]["partialFingerprints"][FINGERPRINT_KEY],
            "aaaaaaaaaaa1#2"
        );
    }

    /// The SARIF Multitool's validator, with GitHub's rules (`Gh`) on top of
    /// SARIF's own: no result of level error.
    #[test]
    fn the_sarif_multitool_accepts_it_with_githubs_rules() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("gate.sarif");
        std::fs::write(
            &log,
            serde_json::to_vec_pretty(&render(&fixture::record(), &fixture::site())).unwrap(),
        )
        .unwrap();
        let errors = gate_tests::peers::sarif_errors(&log);
        assert!(
            errors.is_empty(),
            "the multitool reports errors:\n{}",
            errors.join("\n")
        );

        // The validator does catch what GitHub would reject (line 0, an
        // absolute path): this test can fail.
        let mut broken = render(&fixture::record(), &fixture::site());
        let location = &mut broken["runs"][0]["results"][0]["locations"][0]["physicalLocation"];
        location["region"]["startLine"] = json!(0);
        location["artifactLocation"]["uri"] = json!("/abs/gate.toml");
        let bad = dir.path().join("broken.sarif");
        std::fs::write(&bad, serde_json::to_vec(&broken).unwrap()).unwrap();
        assert!(!gate_tests::peers::sarif_errors(&bad).is_empty());
    }
}
