//! Pipeline integration, end to end: several report formats in one run,
//! each checked by an independent reader; the JSON Lines stream read while
//! the run goes; `--print-config`; colour; a closed stdout; a panic; and
//! snapshots of the human output with times, paths and ids redacted.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read};
use std::process::Command;
use std::time::{Duration, Instant};

use gate_tests::{TestEnv, gate_bin, hermetic, peers};
use serde_json::Value;

/// A spec with one of each outcome: a failing check, a passing one, one
/// skipped behind the failure, a failing and a passing criterion, and a
/// model-judged one nobody judges (offline).
const MIXED: &str = r#"
[spec]
id = "mixed"
summary = "Add the checkout flow"

[[check]]
id = "build"
run = "echo compiling; echo 'error: boom at 100%, really'; exit 3"

[[check]]
id = "lint"
run = "true"

[[check]]
id = "deploy-check"
run = "true"
after = ["build"]

[[task]]
id = "orders"
paths = ["src/**"]

[[task.criterion]]
id = "orders-201"
text = "POST /orders returns 201"
run = "echo 'expected 201, got 500'; exit 1"

[[task.criterion]]
id = "orders-file"
text = "the handler exists"
run = "test -f src/handler.py"

[[task.criterion]]
id = "orders-no-pii"
text = "No handler logs an email"
judge = "model"
"#;

fn mixed() -> TestEnv {
    let env = TestEnv::new();
    env.write("gate.toml", MIXED);
    env.write("src/handler.py", "def handle():\n    return 201\n");
    // A committed private key in a file whose name needs escaping everywhere.
    env.write(
        "src/config, prod:1%.pem",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----\n",
    );
    env
}

#[test]
fn several_reports_in_one_run_each_read_by_its_own_reader() {
    let env = mixed();
    let summary = env.path().join("step-summary.md");
    std::fs::write(&summary, "# an earlier step\n").unwrap();
    let out = env
        .gate(&[
            "verify",
            "--offline",
            "--format",
            "json",
            "--report",
            "sarif=reports/gate.sarif",
            "--report",
            "junit=reports/gate.junit.xml",
            "--report",
            "gitlab=reports/codequality.json",
            "--report",
            "markdown=reports/comment.md",
            "--report",
            "jsonl=reports/events.jsonl",
            "--report",
            "github=reports/annotations.txt",
        ])
        .env("GITHUB_STEP_SUMMARY", &summary)
        .run();
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(doc["verdict"], "fail");

    // Every file is whole and alone: no temporary file left beside them.
    let mut names: Vec<String> = std::fs::read_dir(env.path().join("reports"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "annotations.txt",
            "codequality.json",
            "comment.md",
            "events.jsonl",
            "gate.junit.xml",
            "gate.sarif"
        ]
    );

    // SARIF: GitHub's and SARIF's rules find no error.
    let sarif_path = env.path().join("reports/gate.sarif");
    let errors = peers::sarif_errors(&sarif_path);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let sarif: Value = serde_json::from_str(&env.read("reports/gate.sarif")).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let uris: HashSet<&str> = results
        .iter()
        .map(|r| {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert!(uris.contains("gate.toml"), "{uris:?}");
    assert!(uris.contains("src/config%2C%20prod%3A1%25.pem"), "{uris:?}");

    // JUnit: a real parser sees the stages and the failures.
    let junit = peers::junit_read(&env.path().join("reports/gate.junit.xml"));
    let suites: Vec<&str> = junit["suites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(suites, ["checks", "criteria", "review", "verdict"]);
    let checks = &junit["suites"][0];
    let build = checks["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "build")
        .unwrap();
    assert_eq!(build["results"], serde_json::json!(["Failure"]));
    assert!(
        build["texts"][0][1]
            .as_str()
            .unwrap()
            .contains("error: boom at 100%, really")
    );

    // GitLab: an array of issues with unique fingerprints.
    let cq: Value = serde_json::from_str(&env.read("reports/codequality.json")).unwrap();
    let issues = cq.as_array().unwrap();
    let prints: HashSet<&str> = issues
        .iter()
        .map(|i| i["fingerprint"].as_str().unwrap())
        .collect();
    assert_eq!(prints.len(), issues.len());
    assert!(
        issues
            .iter()
            .any(|i| i["location"]["path"] == "src/config, prod:1%.pem"
                && i["severity"] == "blocker")
    );

    // JSON Lines: every line parses; the last is the verdict with the JSON document's fields.
    let events = env.read("reports/events.jsonl");
    let lines: Vec<Value> = events
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["event"], "run_started");
    let last = lines.last().unwrap();
    assert_eq!(last["event"], "verdict");
    for (k, v) in doc.as_object().unwrap() {
        assert_eq!(&last[k], v, "field {k}");
    }

    // GitHub: annotations with escaped properties, and the job summary appended.
    let gh = env.read("reports/annotations.txt");
    assert!(
        gh.lines()
            .any(|l| l.starts_with("::error file=src/config%2C prod%3A1%25.pem,line=1,")),
        "{gh}"
    );
    let summary = std::fs::read_to_string(&summary).unwrap();
    assert!(summary.starts_with("# an earlier step\n"));
    assert!(
        summary.contains("## ❌ gate: FAIL — `mixed`, attempt 1"),
        "{summary}"
    );
    assert_eq!(
        env.read("reports/comment.md"),
        summary["# an earlier step\n\n".len()..]
    );
}

#[test]
fn the_jsonl_stream_arrives_while_the_run_is_in_progress() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        r#"
[spec]
id = "stream"
[[check]]
id = "quick"
run = "true"
[[check]]
id = "held"
run = "while [ ! -f release ]; do sleep 0.05; done"
after = ["quick"]
timeout_s = 60
"#,
    );
    let mut child = env.gate(&["verify", "--format", "jsonl"]).spawn();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let mut seen: Vec<Value> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    // Read until `held` has started: the run cannot end before we release it.
    while !seen
        .iter()
        .any(|e| e["event"] == "check_started" && e["id"] == "held")
    {
        assert!(
            Instant::now() < deadline,
            "no check_started for held: {seen:?}"
        );
        let line = lines.next().expect("a line before the run ends").unwrap();
        let event: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not one JSON object per line ({e}): {line:?}"));
        assert_eq!(event["format_version"], 1, "{line}");
        seen.push(event);
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the run ended before its events were read"
    );
    std::fs::write(env.path().join("release"), "").unwrap();
    for line in lines {
        seen.push(serde_json::from_str(&line.unwrap()).unwrap());
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));

    let names: Vec<&str> = seen.iter().map(|e| e["event"].as_str().unwrap()).collect();
    let at = |name: &str, id: Option<&str>| {
        seen.iter()
            .position(|e| e["event"] == name && id.is_none_or(|id| e["id"] == id))
            .unwrap_or_else(|| panic!("no {name} {id:?} in {names:?}"))
    };
    assert_eq!(names[0], "run_started");
    assert!(at("run_started", None) < at("plan", None));
    assert!(at("plan", None) < at("check_started", Some("quick")));
    assert!(at("check_started", Some("quick")) < at("check_finished", Some("quick")));
    assert!(at("check_finished", Some("quick")) < at("check_started", Some("held")));
    assert!(at("check_started", Some("held")) < at("check_finished", Some("held")));
    assert_eq!(*names.last().unwrap(), "verdict");
    assert_eq!(seen.last().unwrap()["verdict"], "pass");
}

#[test]
fn print_config_shows_each_value_and_where_it_came_from() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"cfg\"\nbase = \"main\"\n\n[policy]\nmax_attempts = 3\n",
    );
    let state = tempfile::tempdir().unwrap();
    let out = env
        .gate(&["verify", "--print-config", "--report", "sarif=out.sarif"])
        .env("GATE_STATE_DIR", state.path())
        .env("GATE_FORMAT", "sarif")
        .env("GATE_OFFLINE", "1")
        .run();
    out.assert_exit(0);
    let has = |name: &str, value: &str, source: &str| {
        assert!(
            out.stdout.lines().any(|l| l.starts_with(name)
                && l.contains(value)
                && l.trim_end().ends_with(&format!("({source})"))),
            "no `{name} {value} ({source})` in\n{}",
            out.stdout
        );
    };
    has(
        "state_dir",
        &state.path().display().to_string(),
        "env GATE_STATE_DIR",
    );
    has("format", "sarif", "env GATE_FORMAT");
    has("offline", "true", "env GATE_OFFLINE");
    has("base", "main", "gate.toml:3");
    has("spec", "gate.toml", "default: gate.toml in the workspace");
    has("routing ", "built-in", "default: built into the binary");
    has("reports", "out.sarif", "--report");
    has("color", "stdout off, stderr off", "env NO_COLOR");
    has("max_attempts", "3", "gate.toml:6");
    has("judge_threshold", "0.8", "default");
    // Nothing ran: no key, no ledger, no report.
    assert!(std::fs::read_dir(state.path()).unwrap().next().is_none());
    assert!(!env.path().join("out.sarif").exists());

    // A flag beats the environment; --format json prints one document.
    let out = env
        .gate(&[
            "verify",
            "--print-config",
            "--format",
            "json",
            "--base",
            "dev",
        ])
        .env("GATE_FORMAT", "sarif")
        .run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["format"]["value"], "json");
    assert_eq!(doc["format"]["source"], "--format");
    assert_eq!(doc["base"]["value"], "dev");
    assert_eq!(doc["base"]["source"], "--base");
    assert_eq!(doc["policy"]["max_attempts"]["source"], "gate.toml:6");
    assert!(!env.path().join(".gate").exists());

    // A bad environment value is a usage error, named.
    env.gate(&["verify", "--print-config"])
        .env("GATE_FORMAT", "xml")
        .run()
        .assert_exit(2)
        .stderr_has("GATE_FORMAT=xml is not a format");
}

#[test]
fn colour_follows_the_flag_then_no_color_then_the_terminal() {
    let env = mixed();
    // (args, NO_COLOR set, colour expected on stdout and on stderr)
    let cases: &[(&[&str], bool, bool)] = &[
        // Each run starts a new series: repeated identical failures would
        // otherwise (rightly) escalate as a doom loop.
        (&["verify", "--offline", "--new-series"], true, false),
        (&["verify", "--offline", "--new-series"], false, false), // pipes are not terminals
        (
            &["verify", "--offline", "--new-series", "--color", "never"],
            false,
            false,
        ),
        (
            &["verify", "--offline", "--new-series", "--color", "always"],
            false,
            true,
        ),
        (
            &["--color", "always", "verify", "--offline", "--new-series"],
            true,
            true,
        ), // the flag beats NO_COLOR
    ];
    for (args, no_color, colour) in cases {
        let cmd = env.gate(args);
        let cmd = if *no_color {
            cmd.env("NO_COLOR", "1")
        } else {
            cmd.env_remove("NO_COLOR")
        };
        let out = cmd.run();
        out.assert_exit(1);
        for (stream, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            assert_eq!(
                text.contains("\x1b["),
                *colour,
                "{args:?} NO_COLOR={no_color}: {stream}\n{text}"
            );
        }
        if *colour {
            out.stdout_has("\x1b[1;31mFAIL\x1b[0m");
        }
    }
}

#[test]
fn a_closed_stdout_ends_the_run_quietly() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"pipe\"\n[[check]]\nid = \"a\"\nrun = \"true\"\n[[check]]\nid = \"b\"\nrun = \"true\"\n",
    );
    for format in ["human", "jsonl", "json", "sarif"] {
        // The reader is gone before the gate writes anything.
        let mut child = env.gate(&["verify", "--format", format]).spawn();
        drop(child.stdout.take());
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{format}: {stderr}");
        for noise in ["Broken pipe", "panicked", "internal error", "cannot write"] {
            assert!(!stderr.contains(noise), "{format}: {stderr}");
        }
    }

    // The way people do it: `gate verify --format jsonl | head -1`.
    #[allow(clippy::disallowed_methods)] // a real shell pipeline
    let out = hermetic(&mut Command::new("bash"))
        .args([
            "-c",
            "\"$GATE\" verify --format jsonl | head -1; echo \"gate exited ${PIPESTATUS[0]}\" >&2",
        ])
        .env("GATE", gate_bin())
        .current_dir(env.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.starts_with("{\"format_version\":1,\"event\":"));
    assert!(stderr.contains("gate exited 0"), "{stderr}");
    assert!(
        !stderr.contains("Broken pipe") && !stderr.contains("panicked"),
        "{stderr}"
    );
}

/// What people write in a pipeline: the result redirected to a file in the
/// workspace, a report kept there too. While the gate runs, the shell's
/// file is empty (not JSON) and the report holds the previous run's: both
/// are the run's own output, not the change, so neither fails
/// `builtin.parse` nor moves a check's inputs, with or without a base
/// (git lists both as untracked).
#[test]
fn results_written_into_the_workspace_are_not_part_of_the_change() {
    for base in [None, Some("HEAD")] {
        let env = TestEnv::new();
        env.write(
            "gate.toml",
            "[spec]\nid = \"own\"\n[[check]]\nid = \"build\"\nrun = \"true\"\n",
        );
        env.write("src/app.py", "print('hello')\n");
        env.write(".gitignore", ".gate/\n");
        if base.is_some() {
            env.git(&["init", "-q", "-b", "main"]);
            env.git(&["add", "."]);
            env.git(&["commit", "-qm", "base"]);
            env.write("src/app.py", "print('hello, world')\n");
        }
        let base_arg = base.map_or(String::new(), |b| format!("--base {b}"));
        let mut digests = Vec::new();
        for attempt in 1..=2 {
            #[allow(clippy::disallowed_methods)] // a real shell redirect
            let out = hermetic(&mut Command::new("bash"))
                .args([
                    "-c",
                    &format!(
                        "\"$GATE\" verify {base_arg} --format json \
                         --report json=reports/gate.json > result.json"
                    ),
                ])
                .env("GATE", gate_bin())
                .current_dir(env.path())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            let doc: Value = serde_json::from_str(&env.read("result.json"))
                .unwrap_or_else(|e| panic!("{base:?} #{attempt}: result.json: {e}; {stderr}"));
            assert_eq!(out.status.code(), Some(0), "{base:?} #{attempt}: {doc:#}");
            assert_eq!(doc["verdict"], "pass", "{base:?} #{attempt}");
            let build = gate_tests::item(&doc, "build").expect("the build check");
            digests.push(build["inputs_digest"].clone());
        }
        assert_eq!(
            digests[0], digests[1],
            "{base:?}: the report moved the inputs"
        );
    }
}

#[test]
fn a_panic_is_a_short_message_and_exit_101() {
    let env = TestEnv::new();
    env.write("gate.toml", "[spec]\nid = \"p\"\n");
    let out = env
        .gate(&["verify"])
        .env("GATE_TEST_PANIC", "1")
        .env("RUST_BACKTRACE", "1")
        .run();
    out.assert_exit(101);
    out.stderr_has("gate: internal error: GATE_TEST_PANIC is set")
        .stderr_has("RUST_LOG=debug");
    assert!(out.stderr.lines().count() <= 3, "{}", out.stderr);
    assert!(!out.stderr.contains("stack backtrace"), "{}", out.stderr);
    assert!(out.stdout.is_empty());
    assert!(!env.path().join(".gate").exists(), "nothing ran");

    // A panic in a task the runtime spawned exits 101 too.
    let out = env
        .gate(&["verify", "--offline"])
        .env("GATE_TEST_PANIC", "task")
        .run();
    out.assert_exit(101);
    out.stderr_has("gate: internal error: GATE_TEST_PANIC is set: panicking in a task");
}

/// Times, temporary paths, run ids and digests vary between runs.
fn redactions() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "[RUN-ID]",
        ),
        // Right-aligned times: the padding goes with the digits.
        (r" +\d+(\.\d)? (ms|s)\b", " [TIME]"),
        (r" +\d+ m \d\d s\b", " [TIME]"),
        (r"/[^\s:]*gate-e2e-[^\s/:]+", "[WORKSPACE]"),
        (r"\b[0-9a-f]{64}\b", "[DIGEST]"),
    ]
}

#[test]
fn the_human_output_as_people_read_it() {
    let env = mixed();
    let out = env.gate(&["verify", "--offline"]).run();
    out.assert_exit(1);
    insta::with_settings!({filters => redactions(), prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("human_mixed", out.stdout);
    });

    let passing = TestEnv::new();
    passing.write(
        "gate.toml",
        "[spec]\nid = \"ok\"\n[[check]]\nid = \"build\"\nrun = \"true\"\n[[task]]\nid = \"t\"\n[[task.criterion]]\nid = \"c\"\ntext = \"holds\"\nrun = \"true\"\n",
    );
    let out = passing.gate(&["verify"]).run();
    out.assert_exit(0);
    insta::with_settings!({filters => redactions(), prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("human_pass", out.stdout);
    });
}

/// The redactions of the machine formats: besides [`redactions`], times
/// and durations, key ids and the values that name this machine.
fn wire_redactions() -> Vec<(&'static str, &'static str)> {
    let mut all = vec![
        (
            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)",
            "[TIME]",
        ),
        (r#""(\w+_ms)":( ?)\d+"#, r#""$1":$2"[MS]""#),
        (r#""(\w+_s)":( ?)\d+(\.\d+)?"#, r#""$1":$2"[S]""#),
    ];
    all.extend(redactions());
    // Who the items ran as, and where this machine keeps git, sh and strace.
    all.push((r#""(uid|gid)":( ?)\d+"#, r#""$1":$2"[ID]""#));
    all.push((
        r#""path":( ?)"[^"]*/(git|sh|dash|bash|strace|gate-drop)""#,
        r#""path":$1"[TOOL]""#,
    ));
    // After the run ids and digests those name.
    all.push((r"\b[0-9a-f]{12,40}\b", "[HEX]"));
    all
}

/// The `--format json` document, the JSONL stream and the bundle's
/// predicate of one run, as their readers get them: a change to any of
/// these formats is a reviewed change to its snapshot. The stream's lines
/// are in text order, since concurrent items finish in any order.
#[test]
fn the_wire_formats_as_their_readers_get_them() {
    let env = mixed();
    let out = env
        .gate(&[
            "verify",
            "--offline",
            "--format",
            "json",
            "--report",
            "jsonl=reports/events.jsonl",
        ])
        .run();
    out.assert_exit(1);
    let doc = out.json();
    let run = doc["run_id"].as_str().unwrap().to_owned();
    let mut events: Vec<String> = env
        .read("reports/events.jsonl")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            serde_json::to_string(&v).unwrap()
        })
        .collect();
    events.sort();
    let predicate = env.shown(&run);
    insta::with_settings!({filters => wire_redactions(), prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("json_mixed", serde_json::to_string_pretty(&doc).unwrap());
        insta::assert_snapshot!("jsonl_mixed", events.join("\n"));
        insta::assert_snapshot!("predicate_mixed", serde_json::to_string_pretty(&predicate).unwrap());
    });
    // And each conforms to its published schema, by a validator of its own.
    let lines: Vec<Value> = events
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (schema, instances) in [
        ("verify", vec![doc.clone()]),
        ("events", lines),
        ("predicate", vec![predicate]),
    ] {
        let errors = peers::schema_errors(schema, &instances);
        assert!(errors.is_empty(), "{schema}: {}", errors.join("\n"));
    }
    // A schema that let anything through would prove nothing.
    let mut wrong = doc;
    wrong["verdict"] = "maybe".into();
    wrong["checks"][0]["status"] = 3.into();
    let errors = peers::schema_errors("verify", &[wrong]);
    assert_eq!(errors.len(), 2, "{errors:?}");
}

#[test]
fn the_markdown_comment_as_a_reviewer_reads_it() {
    let env = mixed();
    let out = env
        .gate(&["verify", "--offline", "--format", "markdown"])
        .run();
    out.assert_exit(1);
    insta::with_settings!({filters => redactions(), prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("markdown_mixed", out.stdout);
    });
}

/// A run whose review does run (a scripted provider on loopback): the
/// stream reports each reviewer, and a finding reaches SARIF, GitHub and
/// GitLab at its file and line.
#[test]
fn a_reviewed_run_streams_its_reviewers_and_points_findings_at_their_lines() {
    use gate_tests::model_server::{Matcher, ModelServer, Reply};

    let server = ModelServer::start();
    server.script(
        Matcher::any().role("quality"),
        vec![Reply::openai(&serde_json::json!({
            "findings": [{
                "severity": "critical",
                "file": "src/app.py",
                "line": 2,
                "title": "Division by zero: total, count",
                "detail": "count is 0 for an empty cart\nand the handler crashes",
                "confidence": 0.9
            }],
            "criteria": [],
            "rules": []
        }))],
    );
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"reviewed\"\n[[task]]\nid = \"cart\"\npaths = [\"src/**\"]\n",
    );
    env.write(
        "src/app.py",
        "def average(total, count):\n    return total / count\n",
    );
    env.write(
        "routing.toml",
        &format!(
            r#"
[provider.local]
api = "openai"
base_url = "{}/v1"
api_key_env = "SCRIPTED_MODEL_KEY"

[model.cheap]
provider = "local"
name = "scripted"

[route]
"quality.trivial" = "cheap"
"judge.trivial" = "cheap"
"rules.trivial" = "cheap"
"#,
            server.url()
        ),
    );
    let out = env
        .gate(&[
            "verify",
            "--format",
            "jsonl",
            "--report",
            "sarif=.gate/reports/gate.sarif",
            "--report",
            "github=.gate/reports/gh.txt",
            "--report",
            "gitlab=.gate/reports/cq.json",
        ])
        .env("SCRIPTED_MODEL_KEY", "test-key-not-secret")
        .run();
    out.assert_exit(1);
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    let at = |name: &str| {
        names
            .iter()
            .position(|n| *n == name)
            .unwrap_or_else(|| panic!("no {name}: {names:?}"))
    };
    // Model text is one line: the detail's line break became a space.
    assert!(at("review_started") < at("specialist_finished"));
    assert!(at("specialist_finished") < at("verdict"));
    let started = &events[at("review_started")];
    assert_eq!(started["specialists"][0]["role"], "quality");
    assert_eq!(started["specialists"][0]["model"], "scripted");
    let finished = &events[at("specialist_finished")];
    assert_eq!(finished["status"], "ok");
    assert_eq!(finished["findings"], 1);
    let verdict = events.last().unwrap();
    let finding_id = verdict["findings"][0]["id"].as_str().unwrap();
    let errors = peers::schema_errors("events", &events);
    assert!(errors.is_empty(), "{}", errors.join("\n"));

    let sarif_path = env.path().join(".gate/reports/gate.sarif");
    let errors = peers::sarif_errors(&sarif_path);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let sarif: Value = serde_json::from_str(&env.read(".gate/reports/gate.sarif")).unwrap();
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["ruleId"], "review.quality");
    assert_eq!(result["level"], "error");
    let location = &result["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], "src/app.py");
    assert_eq!(location["region"]["startLine"], 2);
    assert_eq!(
        result["partialFingerprints"]["gateFindingId/v1"],
        finding_id
    );

    let gh = env.read(".gate/reports/gh.txt");
    assert!(
        gh.lines().any(|l| l
            == "::error file=src/app.py,line=2,title=Division by zero%3A total%2C count::\
                Division by zero: total, count%0A%0Acount is 0 for an empty cart and the handler crashes"),
        "{gh}"
    );
    let cq: Value = serde_json::from_str(&env.read(".gate/reports/cq.json")).unwrap();
    assert_eq!(cq[0]["severity"], "critical");
    assert_eq!(cq[0]["location"]["path"], "src/app.py");
    assert_eq!(cq[0]["location"]["lines"]["begin"], 2);
}

#[test]
fn a_run_that_cannot_start_ends_its_stream_with_an_error_event() {
    let env = TestEnv::new();
    env.write("gate.toml", "[spec]\nid = \"x\"\n[[check]\nid = \"b\"\n");
    let out = env.gate(&["verify", "--format", "jsonl"]).run();
    out.assert_exit(2).stderr_has("gate.toml:3:");
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{}", out.stdout);
    assert_eq!(lines[0]["event"], "error");
    assert_eq!(lines[0]["exit_code"], 2);
    assert!(
        lines[0]["message"]
            .as_str()
            .unwrap()
            .contains("gate.toml:3:")
    );
}

#[test]
fn quiet_and_verbose_set_how_much_progress_goes_to_stderr() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        "[spec]\nid = \"q\"\n[[check]]\nid = \"build\"\nrun = \"true\"\n",
    );
    // (flag, stderr must hold, stderr must lack); stdout is the same result each time.
    let cases: &[(&str, &[&str], &[&str])] = &[
        ("-q", &[], &["gate: verifying", "✓ build"]),
        (
            "--color=never",
            &["gate: verifying `q`", "✓ build ("],
            &["… build"],
        ),
        ("-v", &["gate: verifying `q`", "… build", "✓ build ("], &[]),
    ];
    for (flag, has, lacks) in cases {
        let out = env.gate(&["verify", flag]).run();
        out.assert_exit(0).stdout_has("verdict: PASS");
        for needle in *has {
            assert!(
                out.stderr.contains(needle),
                "{flag}: lacks {needle:?}\n{}",
                out.stderr
            );
        }
        for needle in *lacks {
            assert!(
                !out.stderr.contains(needle),
                "{flag}: has {needle:?}\n{}",
                out.stderr
            );
        }
        if *flag == "-q" {
            assert!(out.stderr.is_empty(), "-q: {}", out.stderr);
        }
    }
}
