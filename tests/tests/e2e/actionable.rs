//! Output an agent and an operator can act on, end to end: a failure's own
//! words in the JSON (and the agent-harness loop of the docs handing them
//! on), any past run in any format without a new attempt, an escalated run
//! no format shows as clean, "unreviewed" on the verdict line, the same
//! answers from a subdirectory, and every typo of a spec in one run.

use std::collections::HashSet;
use std::process::Command;

use gate_tests::model_server::{Matcher, ModelServer, Reply, routes_to};
use gate_tests::{TestEnv, peers};
use serde_json::{Value, json};

/// A Flask-like API with a task whose end-to-end criterion fails with an
/// assertion of its own, in a git repository.
const LIKES: &str = r#"
[spec]
id = "likes"
summary = "Likes on posts"

[[check]]
id = "build"
run = "echo built"

[[task]]
id = "likes"
title = "Like a post"
paths = ["api/**"]
tests = { run = "echo 'tests ok'" }

[[task.criterion]]
id = "likes-e2e"
text = "liking a post twice counts it once"
run = "echo 'FAILED tests/test_likes.py::test_like_twice - AssertionError: assert 2 == 1'; exit 1"
"#;

fn likes() -> TestEnv {
    let env = TestEnv::new();
    env.write("gate.toml", LIKES);
    env.write("api/likes.py", "def like(post):\n    post.likes += 1\n");
    env.git(&["init", "-q", "-b", "main"]);
    env.git(&["add", "-A"]);
    env.git(&["commit", "-q", "-m", "likes"]);
    env
}

/// The `feedback` function of the loop in docs/agent-harness.md, as written.
fn docs_feedback() -> String {
    let doc = std::fs::read_to_string(gate_tests::repo_root().join("docs/agent-harness.md"))
        .expect("docs/agent-harness.md");
    let start = doc
        .find("def feedback(")
        .expect("the loop defines feedback()");
    let body: Vec<&str> = doc[start..]
        .lines()
        .enumerate()
        .take_while(|(i, l)| *i == 0 || l.is_empty() || l.starts_with(' '))
        .map(|(_, l)| l)
        .collect();
    body.join("\n")
}

/// Runs the docs' `feedback` over a JSON document with the peer Python.
fn feedback_of(doc: &Value) -> String {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("feedback.py");
    std::fs::write(
        &script,
        format!(
            "import json, sys\n\n{}\n\nprint(feedback(json.load(open(sys.argv[1]))))\n",
            docs_feedback()
        ),
    )
    .unwrap();
    let input = dir.path().join("run.json");
    std::fs::write(&input, doc.to_string()).unwrap();
    #[allow(clippy::disallowed_methods)] // the peer Python runs the docs' code
    let out = Command::new(peers::python())
        .arg(&script)
        .arg(&input)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_agent_gets_the_failures_own_words_from_the_json_alone() {
    let env = likes();
    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(1);
    let doc = out.json();
    let e2e = gate_tests::item(&doc, "likes-e2e").unwrap();
    assert_eq!(e2e["task"], "likes");
    assert_eq!(e2e["text"], "liking a post twice counts it once");
    assert!(
        e2e["output_tail"]
            .as_str()
            .unwrap()
            .contains("AssertionError: assert 2 == 1"),
        "{e2e}"
    );
    assert_eq!(
        gate_tests::item(&doc, "likes.tests").unwrap()["task"],
        "likes",
        "a task's tests item names its task"
    );
    assert_eq!(
        doc["verdict_reasons"],
        json!([{"kind": "criterion", "id": "likes-e2e", "verdict": "fail",
                "why": "criterion `likes-e2e` failed: exited with status 1"}])
    );

    // The loop of docs/agent-harness.md hands all of it on.
    let message = feedback_of(&doc);
    for needle in [
        "The integration gate says FAIL:",
        "- criterion `likes-e2e` failed: exited with status 1",
        "likes-e2e (task likes): liking a post twice counts it once",
        "AssertionError: assert 2 == 1",
    ] {
        assert!(message.contains(needle), "{needle:?} not in\n{message}");
    }

    // The stream says the same as it happens.
    let out = env.gate(&["verify", "--format", "jsonl"]).run();
    out.assert_exit(1);
    let finished: Value = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"] == "criterion_finished" && e["id"] == "likes-e2e")
        .expect("a criterion_finished event");
    assert_eq!(finished["task"], "likes");
    assert_eq!(finished["text"], "liking a post twice counts it once");
    assert!(
        finished["output_tail"]
            .as_str()
            .unwrap()
            .contains("AssertionError"),
        "{finished}"
    );
}

/// Every format of `gate verify`, with the file extension a report gets.
const FORMATS: [(&str, &str); 7] = [
    ("human", "txt"),
    ("json", "json"),
    ("markdown", "md"),
    ("sarif", "sarif"),
    ("junit", "xml"),
    ("github", "txt"),
    ("gitlab", "json"),
];

#[test]
fn any_past_run_in_any_format_without_a_new_attempt() {
    let env = likes();
    let mut args = vec![
        "verify".to_owned(),
        "--format".to_owned(),
        "json".to_owned(),
    ];
    for (format, ext) in FORMATS {
        args.push("--report".to_owned());
        args.push(format!("{format}=.gate/reports/{format}.{ext}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = env.gate(&args).run();
    out.assert_exit(1);
    let run = out.json()["run_id"].as_str().unwrap().to_owned();
    let bundle = env
        .path()
        .join(out.json()["bundle"].as_str().unwrap())
        .display()
        .to_string();

    for target in [run.as_str(), bundle.as_str()] {
        for (format, ext) in FORMATS {
            let shown = env
                .gate(&["evidence", "show", target, "--format", format])
                .run();
            shown.assert_exit(0);
            let report = env.read(&format!(".gate/reports/{format}.{ext}"));
            match format {
                // The same document, with the ledger's word on it.
                "json" => {
                    let (mut a, mut b) = (
                        shown.json(),
                        serde_json::from_str::<Value>(&report).unwrap(),
                    );
                    assert_eq!(a["recorded"], true, "{target}");
                    a["bundle"] = Value::Null;
                    b["bundle"] = Value::Null;
                    assert_eq!(a, b, "{target}");
                }
                "sarif" | "gitlab" => {
                    let (a, b): (Value, Value) =
                        (shown.json(), serde_json::from_str(&report).unwrap());
                    let results = |v: &Value| {
                        if format == "sarif" {
                            v["runs"][0]["results"].clone()
                        } else {
                            v.clone()
                        }
                    };
                    assert_eq!(results(&a), results(&b), "{format} of {target}");
                }
                "human" => {
                    shown.stdout_has("verdict: FAIL");
                    shown.stdout_has("AssertionError: assert 2 == 1");
                    assert!(
                        !shown.stdout.contains("not recorded in the ledger"),
                        "{target}: {}",
                        shown.stdout
                    );
                }
                "markdown" => {
                    assert_eq!(
                        shown.stdout.lines().next(),
                        report.lines().next(),
                        "{target}"
                    );
                    assert!(!shown.stdout.contains("not recorded"), "{}", shown.stdout);
                }
                "junit" => {
                    shown.stdout_has("<failure message=\"FAIL\" type=\"fail\">");
                }
                _ => {
                    shown.stdout_has("::error file=gate.toml");
                }
            }
        }
    }
    // Nothing ran again: one run in the ledger, and the next verify is attempt 2.
    let runs = env.gate(&["runs", "--format", "json"]).run();
    runs.assert_exit(0);
    assert_eq!(runs.json()["runs"].as_array().unwrap().len(), 1);
    let next = env.gate(&["verify", "--format", "json"]).run();
    assert_eq!(next.json()["attempt"], 2);
}

/// An escalated run is not a clean run in any format, neither the one
/// that escalated nor the next, which runs nothing.
#[test]
fn an_escalated_run_no_format_shows_as_clean() {
    let env = likes();
    for _ in 0..2 {
        env.gate(&["verify", "-q"]).run().assert_exit(1);
    }
    for escalating in [true, false] {
        let mut args = vec!["verify".to_owned(), "-q".to_owned()];
        for (format, ext) in FORMATS {
            args.push("--report".to_owned());
            args.push(format!("{format}=.gate/reports/{format}.{ext}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        env.gate(&args).run().assert_exit(3);
        let report = |format: &str, ext: &str| env.read(&format!(".gate/reports/{format}.{ext}"));
        let case = if escalating {
            "escalating"
        } else {
            "escalated"
        };

        let sarif: Value = serde_json::from_str(&report("sarif", "sarif")).unwrap();
        let invocation = &sarif["runs"][0]["invocations"][0];
        assert_eq!(invocation["executionSuccessful"], false, "{case}");
        assert_eq!(
            invocation["toolExecutionNotifications"][0]["level"], "error",
            "{case}"
        );
        let levels: Vec<&str> = sarif["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["level"].as_str().unwrap())
            .collect();
        assert!(levels.contains(&"error"), "{case}: {levels:?}");
        let sarif_path = env.path().join(".gate/reports/sarif.sarif");
        let errors = peers::sarif_errors(&sarif_path);
        assert!(errors.is_empty(), "{case}: {}", errors.join("\n"));

        let junit = peers::junit_read(&env.path().join(".gate/reports/junit.xml"));
        let verdict = junit["suites"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "verdict")
            .expect("a verdict suite");
        assert_eq!(verdict["failures"], 1, "{case}");

        let github = report("github", "txt");
        assert!(
            github
                .lines()
                .any(|l| l.starts_with("::error") && l.contains("ESCALATE")),
            "{case}: {github}"
        );
        let gitlab: Value = serde_json::from_str(&report("gitlab", "json")).unwrap();
        assert!(
            gitlab
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["severity"] == "blocker" && i["check_name"] == "gate.verdict"),
            "{case}: {gitlab}"
        );
        assert!(report("markdown", "md").contains("ESCALATE"), "{case}");
        assert!(
            report("human", "txt").contains("verdict: ESCALATE"),
            "{case}"
        );
        let doc: Value = serde_json::from_str(&report("json", "json")).unwrap();
        assert_eq!(doc["verdict"], "escalate");
        assert_eq!(doc["verdict_reasons"][0]["kind"], "doom_loop", "{case}");
    }
}

/// A workspace in its own repository whose change touches a migration (the
/// full tier), with `policy` added to the spec.
fn migration(policy: &str) -> TestEnv {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        &format!(
            "[spec]\nid = \"orders\"\n[[task]]\nid = \"db\"\npaths = [\"migrations/**\"]\n\
             [[task.criterion]]\nid = \"up\"\ntext = \"the migration applies\"\nrun = \"true\"\n{policy}"
        ),
    );
    env.write(
        "migrations/001_orders.sql",
        "create table orders (id int);\n",
    );
    env
}

#[test]
fn no_review_reads_as_unreviewed_and_may_be_required_by_tier() {
    // No provider: a pass, but not a bare one, in every format that says a verdict.
    let env = migration("");
    let summary = env.path().join("summary.md");
    let out = env
        .gate(&[
            "verify",
            "--report",
            "markdown=.gate/comment.md",
            "--report",
            "github=.gate/annotations.txt",
            "--report",
            "json=.gate/run.json",
        ])
        .env("GITHUB_STEP_SUMMARY", &summary)
        .run();
    out.assert_exit(0);
    out.stdout_has("verdict: PASS (unreviewed: no provider configured)");
    assert!(
        env.read(".gate/comment.md")
            .starts_with("## ☑️ gate: PASS (unreviewed: no provider configured)"),
        "{}",
        env.read(".gate/comment.md")
    );
    let summary = std::fs::read_to_string(&summary).unwrap();
    assert!(
        summary.contains("PASS (unreviewed: no provider configured)"),
        "{summary}"
    );
    assert!(
        env.read(".gate/annotations.txt")
            .lines()
            .any(|l| l.starts_with("::warning") && l.contains("unreviewed")),
        "{}",
        env.read(".gate/annotations.txt")
    );
    let doc: Value = serde_json::from_str(&env.read(".gate/run.json")).unwrap();
    assert_eq!(doc["tier"], "full");
    assert_eq!(
        doc["qualifier"],
        json!({"kind": "unreviewed", "why": "no provider configured"})
    );

    // A full run that policy says needs its review is incomplete without it;
    // a trivial one still passes.
    let env = migration(
        "[policy]\non_review_unavailable = { trivial = \"pass\", light = \"pass\", full = \"incomplete\" }\n",
    );
    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(4);
    let doc = out.json();
    assert_eq!(doc["verdict"], "incomplete");
    assert_eq!(doc["verdict_reasons"][0]["kind"], "review");
    assert!(
        doc["verdict_reasons"][0]["why"]
            .as_str()
            .unwrap()
            .contains("on_review_unavailable = \"incomplete\""),
        "{doc}"
    );
    let env = migration(
        "[policy]\non_review_unavailable = { full = \"incomplete\" }\nsensitive_paths = []\n",
    );
    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(0);
    assert_eq!(out.json()["tier"], "trivial");
}

#[test]
fn a_base_without_the_spec_says_the_self_guard_is_off() {
    let env = migration("");
    env.write("README.md", "orders\n");
    env.git(&["init", "-q", "-b", "main"]);
    env.git(&["add", "README.md"]);
    env.git(&["commit", "-q", "-m", "before the gate"]);
    let out = env.gate(&["verify", "--base", "main"]).run();
    out.assert_exit(0);
    out.stdout_has("self-guard: off — base `main` has no gate.toml");
    out.stderr_has("the self-guard is off");
    env.git(&["add", "-A"]);
    env.git(&["commit", "-q", "-m", "the gate"]);
    let out = env
        .gate(&["verify", "--base", "main", "--format", "json"])
        .run();
    assert_eq!(
        out.json()["self_guard"],
        json!({"status": "on", "reason": null})
    );
}

/// A light run where two of its three reviewers did not run passes, and
/// says it was under-reviewed, whatever `on_review_unavailable` says.
#[test]
fn most_reviewers_missing_reads_as_under_reviewed() {
    let server = ModelServer::start();
    server.script(
        Matcher::any().role("quality"),
        vec![Reply::openai(
            &json!({"findings": [], "criteria": [], "rules": []}),
        )],
    );
    server.default_reply(Reply::openai_error(
        401,
        "invalid_request_error",
        "invalid_api_key",
        "bad key",
    ));
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"two\"\n[[task]]\nid = \"a\"\npaths = [\"src/a/**\"]\n\
         [[task]]\nid = \"b\"\npaths = [\"src/b/**\"]\n",
    );
    env.write(
        "routing.toml",
        &format!(
            "[provider.local]\napi = \"openai\"\nbase_url = \"{}/v1\"\n\n[model.m]\n\
             provider = \"local\"\nname = \"m\"\n\n{}",
            server.url(),
            routes_to("m")
        ),
    );
    env.write("src/a/x.py", "x = 1\n");
    env.write("src/b/y.py", "y = 2\n");
    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["tier"], "light");
    assert_eq!(doc["qualifier"]["kind"], "under_reviewed", "{doc}");
    assert!(
        doc["verdict_line"]
            .as_str()
            .unwrap()
            .starts_with("PASS (under-reviewed: 2 of 3 reviewers did not run"),
        "{}",
        doc["verdict_line"]
    );
}

#[test]
fn the_same_answers_from_a_subdirectory_and_reads_create_nothing() {
    let env = likes();
    std::fs::create_dir_all(env.path().join("api/deep")).unwrap();
    let sub = env.path().join("api/deep");
    let in_sub = |args: &[&str]| env.gate(args).current_dir(&sub).run();
    // Before any run: read-only commands say there is no ledger yet and
    // create no state directory, here or at the workspace.
    for args in [
        &["runs"][..],
        &["report"],
        &["metrics"],
        &["ledger", "verify"],
        &["evidence", "show", "0190"],
    ] {
        let out = in_sub(args);
        let said = format!("{}{}", out.stdout, out.stderr);
        assert!(said.contains("no ledger yet"), "{args:?}: {said}");
    }
    assert!(!env.path().join(".gate").exists());
    assert!(!sub.join(".gate").exists());

    let from_sub = in_sub(&["verify", "--format", "json"]);
    from_sub.assert_exit(1);
    let from_root = env.gate(&["verify", "--full", "--format", "json"]).run();
    from_root.assert_exit(1);
    let (a, b) = (from_sub.json(), from_root.json());
    assert_eq!(a["spec_id"], b["spec_id"]);
    assert_eq!(
        (&a["attempt"], &b["attempt"]),
        (&json!(1), &json!(2)),
        "one series"
    );
    let ids = |d: &Value| -> Vec<(String, String)> {
        d["checks"]
            .as_array()
            .unwrap()
            .iter()
            .chain(d["criteria"].as_array().unwrap())
            .map(|i| (i["id"].to_string(), i["status"].to_string()))
            .collect()
    };
    assert_eq!(ids(&a), ids(&b));
    assert!(!sub.join(".gate").exists());
    let runs = in_sub(&["runs"]);
    runs.assert_exit(0);
    assert!(
        runs.stdout.starts_with("  seq  started (UTC)"),
        "{}",
        runs.stdout
    );
    assert_eq!(runs.stdout.lines().count(), 3, "a header and two runs");
}

#[test]
fn three_typos_in_one_run() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        r#"[spec]
id = "likes"
sumary = "Likes on posts"

[[check]]
id = "build"
run = "make"

[[task]]
id = "likes"
tests = "pytest tests/test_likes.py"

[[task.criterion]]
id = "likes-e2e"
txt = "liking twice counts once"
run = "./e2e.sh"
after = ["biuld"]
"#,
    );
    let out = env.gate(&["verify"]).run();
    out.assert_exit(2);
    for needle in [
        "gate.toml:3:1: unknown key `sumary`; did you mean `summary`?",
        "gate.toml:11:9: `task[0].tests`: invalid type: string \"pytest tests/test_likes.py\", \
         expected a table; write `tests = { run = \"pytest tests/test_likes.py\" }`",
        "gate.toml:15:1: unknown key `txt`; did you mean `text`?",
        "gate.toml:17:10: `after` names `biuld`, which is not a check; did you mean `build`?",
    ] {
        out.stderr_has(needle);
    }
    // In GitHub output each is an error annotation at its place.
    let out = env.gate(&["verify", "--format", "github"]).run();
    out.assert_exit(2);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", out.stdout);
    assert!(
        lines[0].starts_with("::error file=gate.toml,line=3,col=1,title=gate%3A spec error::"),
        "{}",
        lines[0]
    );
}

#[test]
fn cosmetics_a_retry_says_verifying_once_and_suite_times_are_wall_times() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"slow\"\n\
         [[check]]\nid = \"a\"\nrun = \"sleep 1\"\n\
         [[check]]\nid = \"b\"\nrun = \"sleep 1\"\n\
         [[check]]\nid = \"c\"\nrun = \"sleep 1; exit 1\"\n",
    );
    let first = env
        .gate(&["verify", "--report", "junit=.gate/junit.xml"])
        .run();
    first.assert_exit(1);
    let junit = peers::junit_read(&env.path().join(".gate/junit.xml"));
    let run_s = junit["time"].as_f64().unwrap();
    let checks = &junit["suites"][0];
    assert_eq!(checks["name"], "checks");
    let cases: f64 = checks["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["time"].as_f64().unwrap())
        .sum();
    let suite = checks["time"].as_f64().unwrap();
    assert!(
        suite <= run_s,
        "the suite ({suite} s) took longer than the run ({run_s} s)"
    );
    assert!(
        cases >= 3.0 && suite < cases,
        "concurrent checks: {suite} s of wall time, {cases} s summed"
    );

    let retry = env.gate(&["verify"]).run();
    retry.assert_exit(1);
    assert_eq!(
        retry.stderr.matches("verifying").count(),
        1,
        "{}",
        retry.stderr
    );
    retry.stderr_has("attempt 2 of the series");

    // In CI with no signing key, the refusal is an annotation too.
    let env = TestEnv::new();
    env.write("gate.toml", "[spec]\nid = \"ci\"\n");
    let out = env
        .gate(&["verify", "--format", "github"])
        .env("CI", "true")
        .run();
    out.assert_exit(2);
    out.stderr_has("no signing key is configured");
    assert!(
        out.stdout
            .starts_with("::error title=gate%3A usage or configuration error::CI is set"),
        "{}",
        out.stdout
    );
    let names: HashSet<&str> = out.stdout.lines().collect();
    assert_eq!(names.len(), 1, "{}", out.stdout);
}
