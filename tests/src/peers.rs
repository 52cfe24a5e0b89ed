//! Independent tools the tests check the gate's output with: Microsoft's
//! SARIF Multitool (GitHub's rules included) and Python's junitparser.
//! `scripts/test` installs both; without them these helpers fail the test
//! with the set-up to run, never pass silently.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The peer venv's Python (`GATE_TEST_PYTHON`).
pub fn python() -> String {
    std::env::var("GATE_TEST_PYTHON").unwrap_or_else(|_| {
        panic!(
            "GATE_TEST_PYTHON is not set: run `scripts/peer-venv.sh target/peer-venv` from the \
             repository root and export GATE_TEST_PYTHON=$PWD/target/peer-venv/bin/python \
             (scripts/test does both)"
        )
    })
}

/// The SARIF Multitool binary (`GATE_TEST_SARIF_MULTITOOL`).
pub fn sarif_multitool() -> PathBuf {
    std::env::var_os("GATE_TEST_SARIF_MULTITOOL").map_or_else(
        || {
            panic!(
                "GATE_TEST_SARIF_MULTITOOL is not set: run `scripts/peer-npm.sh target/peer-npm` \
                 from the repository root and export GATE_TEST_SARIF_MULTITOOL=$PWD/target/peer-npm/\
                 node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool (scripts/test does both)"
            )
        },
        PathBuf::from,
    )
}

/// Validates the SARIF log at `log` with `Sarif.Multitool validate
/// --rule-kind "Gh;Sarif"` (SARIF's rules and GitHub code scanning's) and
/// returns its results of level error, one line each.
pub fn sarif_errors(log: &Path) -> Vec<String> {
    let tool = sarif_multitool();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out_path = dir.path().join("validation.sarif");
    #[allow(clippy::disallowed_methods)] // tests drive the real validator
    let out = Command::new(&tool)
        // The self-contained .NET binary needs ICU unless told not to.
        .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
        .args(["validate", "--rule-kind", "Gh;Sarif", "--output"])
        .arg(&out_path)
        .arg(log)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", tool.display()));
    assert!(
        out.status.success(),
        "the multitool failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(
        &std::fs::read(&out_path).expect("the multitool writes its validation log"),
    )
    .expect("the validation log is JSON");
    assert!(
        report["runs"][0]["tool"]["driver"]["name"].is_string(),
        "not a validation log: {report}"
    );
    report["runs"][0]["results"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|r| r["level"] == "error")
        .map(|r| format!("{} {}", r["ruleId"], r["message"]))
        .collect()
}

/// Reads a JUnit XML file with Python's junitparser and returns what it
/// saw: `{"tests", "failures", "time", "suites": [{"name", "tests", "failures",
/// "skipped", "time", "cases": [{"name", "classname", "time", "results",
/// "texts", "out"}]}]}`.
pub fn junit_read(path: &Path) -> Value {
    const SCRIPT: &str = r#"
import json, sys
from junitparser import JUnitXml
xml = JUnitXml.fromfile(sys.argv[1])
suites = []
for suite in xml:
    cases = []
    for case in suite:
        cases.append({"name": case.name, "classname": case.classname, "time": case.time,
                      "results": [type(r).__name__ for r in case.result],
                      "texts": [[r.message, r.text] for r in case.result],
                      "out": case.system_out})
    suites.append({"name": suite.name, "tests": suite.tests, "failures": suite.failures,
                   "skipped": suite.skipped, "time": suite.time, "cases": cases})
print(json.dumps({"tests": xml.tests, "failures": xml.failures, "time": xml.time,
                  "suites": suites}))
"#;
    #[allow(clippy::disallowed_methods)] // tests drive the real parser
    let out = Command::new(python())
        .args(["-c", SCRIPT])
        .arg(path)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "junitparser could not read {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the script prints JSON")
}
