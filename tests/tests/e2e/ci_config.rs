//! The CI integrations as their platforms read them: the GitHub Action
//! (`action.yml`), the GitLab CI component (`templates/gate.yml`) and every
//! workflow and pipeline the docs print, checked by real linters —
//! actionlint, and check-jsonschema with its vendored GitHub Actions and
//! GitLab CI schemas. Each linter is first shown a broken file it must
//! reject, so a linter that checks nothing fails the test.

use std::path::{Path, PathBuf};

use gate_tests::peers::{actionlint, check_jsonschema, python};
use gate_tests::repo_root;

/// A workflow that references the action by path, as a repository holding
/// the gate would, using every output.
const SAMPLE_WORKFLOW: &str = r#"name: gate
on:
  pull_request:
  push:
    branches: [main]
permissions:
  contents: read
  security-events: write
jobs:
  gate:
    runs-on: ubuntu-latest
    env:
      GATE_SIGNING_KEY: ${{ secrets.GATE_SIGNING_KEY }}
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0
      - id: gate
        uses: ./
        with:
          spec: gate.toml
          routing: routing.toml
          args: --offline --full
          sarif-category: gate-offline
      - if: always()
        run: echo "verdict ${{ steps.gate.outputs.verdict }} (exit ${{ steps.gate.outputs.exit-code }}), reports in ${{ steps.gate.outputs.reports }}"
"#;

/// What the docs printed before: `runner` is not available in a job's `env`.
const BROKEN_WORKFLOW: &str = r"name: gate
on:
  pull_request:
jobs:
  gate:
    runs-on: ubuntu-latest
    env:
      GATE_STATE_DIR: ${{ runner.temp }}/gate-state
    steps:
      - run: gate verify
";

/// The fenced ```yaml blocks of a Markdown file.
fn yaml_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match &mut current {
            None if line.trim_start().starts_with("```yaml") => current = Some(String::new()),
            Some(block) if line.trim_start().starts_with("```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    blocks
}

/// Every Markdown page of the product: README and docs/.
fn pages() -> Vec<PathBuf> {
    let root = repo_root();
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// Whether a YAML document is a GitHub workflow (it has `jobs:` at the top).
fn is_workflow(yaml: &str) -> bool {
    yaml.lines().any(|l| l.starts_with("jobs:"))
}

#[test]
fn every_workflow_in_the_docs_and_one_using_the_action_pass_actionlint() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    // The linter works: it rejects what the docs used to print.
    let broken = write("broken.yml", BROKEN_WORKFLOW);
    let found = actionlint(&[broken]);
    assert!(
        found
            .iter()
            .any(|f| f.contains("context \"runner\" is not allowed here")),
        "actionlint let a known-bad workflow through: {found:?}"
    );

    let mut files = vec![write("sample.yml", SAMPLE_WORKFLOW)];
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (i, block) in yaml_blocks(&text).into_iter().enumerate() {
            if is_workflow(&block) {
                let name = format!("{}-{i}.yml", page.file_stem().unwrap().to_string_lossy());
                files.push(write(&name, &block));
            }
        }
    }
    assert!(
        files.iter().any(|f| f
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("github-actions-")),
        "docs/github-actions.md prints no workflow: {files:?}"
    );
    let found = actionlint(&files);
    assert!(found.is_empty(), "actionlint: {found:#?}");
}

#[test]
fn workflows_use_only_the_inputs_and_outputs_the_action_declares() {
    // (workflow, inputs and outputs it uses that the action lacks)
    let dir = tempfile::tempdir().unwrap();
    let sample = dir.path().join("sample.yml");
    std::fs::write(&sample, SAMPLE_WORKFLOW).unwrap();
    let wrong = dir.path().join("wrong.yml");
    std::fs::write(
        &wrong,
        SAMPLE_WORKFLOW
            .replace("sarif-category:", "category:")
            .replace("outputs.verdict", "outputs.result"),
    )
    .unwrap();
    let mut docs = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (i, block) in yaml_blocks(&text).into_iter().enumerate() {
            if is_workflow(&block) && block.contains("uses: ") {
                let path = dir.path().join(format!("doc-{i}-{}.yml", docs.len()));
                std::fs::write(&path, block).unwrap();
                docs.push(path);
            }
        }
    }
    let cases: Vec<(PathBuf, Vec<String>)> = [
        (sample, vec![]),
        (
            wrong.clone(),
            vec!["input category".to_owned(), "output result".to_owned()],
        ),
    ]
    .into_iter()
    .chain(docs.into_iter().map(|d| (d, vec![])))
    .collect();
    for (workflow, want) in cases {
        assert_eq!(
            undeclared(&workflow),
            want,
            "{}",
            std::fs::read_to_string(&workflow).unwrap()
        );
    }
}

/// The inputs a workflow gives the gate's action (`uses: ./` or a
/// reference to the gate's repository ending in the action) and the outputs
/// it reads, that `action.yml` does not declare.
fn undeclared(workflow: &Path) -> Vec<String> {
    const SCRIPT: &str = r#"
import re, sys
from ruamel.yaml import YAML
yaml = YAML(typ="safe")
action = yaml.load(open(sys.argv[1]))
flow = yaml.load(open(sys.argv[2]))
inputs, outputs = set(action["inputs"]), set(action["outputs"])
wrong = []
for job in flow["jobs"].values():
    ids = set()
    for step in job.get("steps", []):
        uses = step.get("uses", "")
        if uses == "./" or re.search(r"/gate@", uses):
            ids.add(step.get("id"))
            wrong += ["input " + k for k in step.get("with", {}) if k not in inputs]
    text = open(sys.argv[2]).read()
    for sid in ids - {None}:
        for name in re.findall(r"steps\." + re.escape(sid) + r"\.outputs\.([A-Za-z0-9_-]+)", text):
            if name not in outputs:
                wrong.append("output " + name)
print("\n".join(wrong))
"#;
    #[allow(clippy::disallowed_methods)] // a YAML reader of the peer venv
    let out = std::process::Command::new(python())
        .args(["-c", SCRIPT])
        .arg(repo_root().join("action.yml"))
        .arg(workflow)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The GitLab component's `spec:` header and its job document (after `---`).
fn component() -> (String, String) {
    let text = std::fs::read_to_string(repo_root().join("templates/gate.yml")).unwrap();
    let (header, job) = text
        .split_once("\n---\n")
        .expect("a component is a spec: header, ---, then the job");
    (header.to_owned(), job.to_owned())
}

#[test]
fn the_action_and_the_component_pass_their_platforms_schemas() {
    let root = repo_root();
    let dir = tempfile::tempdir().unwrap();

    // The validator works: an action step without its shell, and a job
    // whose artifacts are kept "sometimes", are refused.
    let action = std::fs::read_to_string(root.join("action.yml")).unwrap();
    let broken = dir.path().join("action.yml");
    std::fs::write(&broken, action.replace("shell: bash", "")).unwrap();
    assert!(check_jsonschema("vendor.github-actions", &broken).is_err());
    let (header, job) = component();
    let broken = dir.path().join("broken-job.yml");
    std::fs::write(&broken, job.replace("when: always", "when: sometimes")).unwrap();
    assert!(check_jsonschema("vendor.gitlab-ci", &broken).is_err());

    check_jsonschema("vendor.github-actions", &root.join("action.yml"))
        .unwrap_or_else(|e| panic!("action.yml: {e}"));
    let job_file = dir.path().join("gate-job.yml");
    std::fs::write(&job_file, &job).unwrap();
    check_jsonschema("vendor.gitlab-ci", &job_file)
        .unwrap_or_else(|e| panic!("templates/gate.yml's job: {e}"));

    // Every input the job uses is declared, and every declared one used.
    assert!(header.starts_with("spec:\n  inputs:\n"), "{header}");
    let declared: Vec<&str> = header
        .lines()
        .filter(|l| l.starts_with("    ") && !l.starts_with("     ") && l.ends_with(':'))
        .map(|l| l.trim().trim_end_matches(':'))
        .collect();
    let used: Vec<&str> = job
        .split("$[[ inputs.")
        .skip(1)
        .filter_map(|rest| rest.split_once(" ]]").map(|(name, _)| name))
        .collect();
    for name in &used {
        assert!(
            declared.contains(name),
            "the job uses undeclared input {name}"
        );
    }
    for name in &declared {
        assert!(
            used.contains(name),
            "input {name} is declared but never used"
        );
    }
    // The reports GitLab shows: Code Quality and JUnit, from the gate's own formats.
    for needle in [
        "codequality: .gate/reports/codequality.json",
        "junit: .gate/reports/junit.xml",
        "--report gitlab=.gate/reports/codequality.json",
        "--report junit=.gate/reports/junit.xml",
    ] {
        assert!(job.contains(needle), "the job lacks {needle}");
    }

    // Every GitLab pipeline the docs print passes the schema too.
    let text = std::fs::read_to_string(root.join("docs/gitlab-ci.md")).unwrap();
    let blocks = yaml_blocks(&text);
    assert!(!blocks.is_empty(), "docs/gitlab-ci.md prints no pipeline");
    for (i, block) in blocks.iter().enumerate() {
        let file = dir.path().join(format!("gitlab-{i}.yml"));
        std::fs::write(&file, block).unwrap();
        check_jsonschema("vendor.gitlab-ci", &file)
            .unwrap_or_else(|e| panic!("docs/gitlab-ci.md block {i}: {e}\n{block}"));
    }
}
