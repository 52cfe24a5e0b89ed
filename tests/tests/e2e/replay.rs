//! `gate replay` through the real binary: runs reviewed by a baseline model
//! against the scripted model server, labelled through `gate outcome`, then
//! replayed from their kept requests with a candidate model that answers
//! differently, the result scored and sealed.

use gate_tests::model_server::{Matcher, ModelServer, Reply, routes_to};
use gate_tests::{TestEnv, peers};
use std::time::Duration;

use serde_json::{Value, json};

/// In the broken run's file: what the candidate recognises.
const BACKDOOR: &str = "BACKDOOR-MARKER";

/// A table sending every role to `model` on `server`, priced.
fn routing(server: &ModelServer, model: &str) -> String {
    format!(
        "[provider.local]\napi = \"openai\"\nbase_url = \"{}/v1\"\n\n\
         [model.m]\nprovider = \"local\"\nname = \"{model}\"\n\
         price = {{ input = 1.0, cached_input = 0.1, cache_write = 1.25, output = 2.0 }}\n\n{}",
        server.url(),
        routes_to("m")
    )
}

fn answer(findings: &Value) -> Reply {
    Reply::openai(&json!({"findings": findings, "criteria": [], "rules": []}))
}

/// The server: the baseline model finds nothing; the candidate raises a
/// critical on a request that holds the backdoor, and nothing otherwise.
fn server() -> ModelServer {
    let server = ModelServer::start();
    server
        .script(
            Matcher::any().model("slow-model"),
            vec![answer(&json!([])).after(Duration::from_millis(500))],
        )
        .script(
            Matcher::any()
                .model("candidate-model")
                .body_contains(BACKDOOR),
            vec![answer(&json!([{
                "severity": "critical", "file": "src/auth.py", "line": 2,
                "title": "Hard-coded backdoor password", "detail": "anyone knowing it logs in",
                "confidence": 0.95
            }]))],
        )
        .script(Matcher::any(), vec![answer(&json!([]))]);
    server
}

const SPEC: &str = r#"
[spec]
id = "login"
summary = "Log users in"
[[task]]
id = "auth"
title = "Password login"
paths = ["src/**"]
[[task.criterion]]
id = "logs-in"
text = "the login module exists"
run = "sh -c 'echo ran >> criterion.log; test -f src/auth.py' # plain-deploy-passphrase-77"
"#;

/// One recorded run of `auth` in series `series`; its id.
fn run(env: &TestEnv, series: &str, auth: &str, extra: &[(&str, &str)]) -> String {
    env.write("src/auth.py", auth);
    let mut cmd = env.gate(&["verify", "--series", series, "--format", "json"]);
    for (k, v) in extra {
        cmd = cmd.env(k, v);
    }
    let out = cmd.run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["review"]["status"], "ran", "{doc}");
    doc["run_id"].as_str().unwrap().to_owned()
}

fn outcome(env: &TestEnv, run: &str, what: &str) {
    env.gate(&["outcome", run, what, "--reason", "checked by hand"])
        .run()
        .assert_exit(0);
}

/// A workspace with four recorded runs, reviewed by the baseline model:
/// one with the backdoor labelled broken, two fine, and one fine whose
/// request was not kept.
struct Recorded {
    server: ModelServer,
    env: TestEnv,
    broken: String,
    fine: [String; 2],
    unkept: String,
}

fn recorded() -> Recorded {
    let server = server();
    let env = TestEnv::new();
    env.write("gate.toml", SPEC);
    env.write("routing.toml", &routing(&server, "baseline-model"));
    env.write("candidate.toml", &routing(&server, "candidate-model"));
    let broken = run(
        &env,
        "pr:1",
        &format!(
            "def login(user, password):\n    if password == \"{BACKDOOR}\":\n        return True\n    return check(user, password)\n"
        ),
        &[("DEPLOY_PASSWORD", "plain-deploy-passphrase-77")],
    );
    let fine = [
        run(
            &env,
            "pr:2",
            "def login(user, password):\n    return check(user, password)\n",
            &[],
        ),
        run(
            &env,
            "pr:3",
            "def login(user, password):\n    return check(user, password.strip())\n",
            &[],
        ),
    ];
    // A run whose request was not kept is listed as skipped, with why.
    let unkept = run(
        &env,
        "pr:4",
        "def login(user, password):\n    return False\n",
        &[("GATE_REQUEST_RETENTION_DAYS", "0")],
    );
    outcome(&env, &broken, "--broken");
    for f in &fine {
        outcome(&env, f, "--fine");
    }
    outcome(&env, &unkept, "--fine");

    Recorded {
        server,
        env,
        broken,
        fine,
        unkept,
    }
}

#[test]
fn a_candidate_that_finds_the_backdoor_is_scored_against_the_outcomes() {
    let Recorded {
        server,
        env,
        broken,
        fine,
        unkept,
    } = recorded();
    // The request is kept beside the bundles, named in the signed record by digest.
    let shown = env.shown(&broken);
    let kept = &shown["run"]["review"]["request"];
    let at = kept["at"].as_str().unwrap();
    assert!(
        at.ends_with(&format!(
            "{}.request.json",
            kept["sha256"].as_str().unwrap()
        )),
        "{at}"
    );
    let kept_text = std::fs::read_to_string(at).unwrap();
    assert!(kept_text.contains(BACKDOOR));
    // Secret-looking values are scrubbed from what is kept, as from the record.
    assert!(kept_text.contains("criterion.log"));
    assert!(
        !kept_text.contains("plain-deploy-passphrase-77"),
        "{kept_text}"
    );

    let criteria_before = env.read("criterion.log").lines().count();
    let before = server.requests().len();
    // Nothing of the workspace is read: the change is gone from it.
    std::fs::remove_file(env.path().join("src/auth.py")).unwrap();
    let out = env
        .gate(&[
            "replay",
            "--routing",
            "candidate.toml",
            "--labelled",
            "--format",
            "json",
        ])
        .run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(
        peers::schema_errors("replay", std::slice::from_ref(&doc)),
        Vec::<String>::new()
    );

    assert_eq!(doc["candidate"]["recall"]["caught"], 1, "{doc}");
    assert_eq!(doc["candidate"]["recall"]["of"], 1);
    assert_eq!(doc["baseline"]["recall"]["caught"], 0);
    assert_eq!(doc["baseline"]["recall"]["of"], 1);
    // The gate's own findings are not the baseline review's.
    assert_eq!(doc["baseline"]["findings_per_run"], 0.0);
    assert_eq!(
        doc["candidate"]["recall"]["low"].as_f64().map(|l| l > 0.2),
        Some(true)
    );
    assert_eq!(doc["candidate"]["noise"]["hits"], 0);
    assert_eq!(doc["candidate"]["noise"]["of"], 2);
    assert!(
        doc["candidate"]["cost_usd"].as_f64().unwrap() > 0.0,
        "{doc}"
    );
    assert!(doc["candidate"]["tokens"]["input"].as_u64().unwrap() > 0);
    assert!(doc["baseline"]["cost_usd"].as_f64().unwrap() > 0.0);
    let runs: Vec<&str> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(runs, [broken.as_str(), fine[0].as_str(), fine[1].as_str()]);
    let skipped = doc["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{doc}");
    assert_eq!(skipped[0]["run_id"], unkept.as_str());
    assert!(
        skipped[0]["why"]
            .as_str()
            .unwrap()
            .contains("GATE_REQUEST_RETENTION_DAYS is 0"),
        "{doc}"
    );
    let tier = doc["strata"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["by"] == "tier")
        .unwrap();
    assert_eq!(tier["candidate"]["recall"]["below_minimum"], true);
    assert_eq!(tier["candidate"]["recall"]["rate"], Value::Null);

    // Only the candidate was asked, with the recorded content; no criterion ran.
    let asked: Vec<_> = server.requests().split_off(before);
    assert!(!asked.is_empty());
    assert!(asked.iter().all(|r| r.body["model"] == "candidate-model"));
    assert!(asked.iter().any(|r| r.text().contains(BACKDOOR)));
    assert_eq!(env.read("criterion.log").lines().count(), criteria_before);
    let listed = env.gate(&["runs", "--format", "json"]).run();
    assert_eq!(listed.json()["runs"].as_array().unwrap().len(), 4);

    // The report shows the newest replay of each candidate table, per stratum.
    let report = env.gate(&["report", "--format", "json"]).run();
    report.assert_exit(0);
    let replays = &report.json()["replays"];
    assert_eq!(replays.as_array().unwrap().len(), 1, "{replays}");
    assert_eq!(replays[0]["replay_id"], doc["replay_id"]);
    assert_eq!(replays[0]["candidate"]["recall"]["caught"], 1);
    assert_eq!(replays[0]["strata"], doc["strata"]);
    env.gate(&["report", "--html", "report.html"])
        .run()
        .assert_exit(0);
    let page = env.read("report.html");
    assert!(page.contains(r#"<section id="replays">"#), "{page}");
    assert!(page.contains("tier = trivial"), "{page}");
    env.gate(&["report"])
        .run()
        .assert_exit(0)
        .stdout_has("replays (the newest per candidate routing table)");

    // A replay's row edited behind the gate's back (its baseline made to
    // look better) is shown no more, and the report says one was left out.
    crate::evidence::sql(
        &env,
        "UPDATE replays SET summary = json_set(summary, '$.baseline.recall.caught', 1);",
    );
    let edited = env.gate(&["report", "--format", "json"]).run();
    edited.assert_exit(0);
    let edited = edited.json();
    assert_eq!(edited["replays"], json!([]), "{edited}");
    assert_eq!(edited["left_out"]["replays"], 1, "{edited}");

    // The replay is a signed bundle of its own.
    let bundle = doc["bundle"].as_str().unwrap();
    env.gate(&["evidence", "verify", bundle])
        .run()
        .assert_exit(0)
        .stdout_has("signature: ok")
        .stdout_has("replay");
}

#[test]
fn a_plan_fixed_in_advance_says_which_targets_were_met() {
    let Recorded {
        env,
        server: _server,
        ..
    } = recorded();
    let plan = |out: &str, extra: &[&str]| {
        let mut args = vec![
            "replay",
            "plan",
            "--routing",
            "candidate.toml",
            "--labelled",
            "--sample",
            "10",
            "--target",
            "recall >= 1",
            "--target",
            "cost_ratio <= 0.01",
            "-o",
            out,
        ];
        args.extend_from_slice(extra);
        env.gate(&args).run()
    };
    plan("plan.dsse.json", &[])
        .assert_exit(0)
        .stdout_has("sha256");
    // A plan is never rewritten.
    plan("plan.dsse.json", &[])
        .assert_exit(2)
        .stderr_has("never rewritten");
    plan("bad.dsse.json", &["--target", "precision >= 1"])
        .assert_exit(2)
        .stderr_has("unknown figure");
    let signed = gate_tests::statement_of(&env.path().join("plan.dsse.json"));
    let seed = signed["predicate"]["selection"]["seed"].as_u64().unwrap();

    let out = env
        .gate(&["replay", "run", "plan.dsse.json", "--format", "json"])
        .run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(
        peers::schema_errors("replay", std::slice::from_ref(&doc)),
        Vec::<String>::new()
    );
    assert_eq!(doc["selection"]["seed"], seed);
    assert_eq!(doc["runs"].as_array().unwrap().len(), 3, "{doc}");
    assert_eq!(doc["plan_sha256"].as_str().unwrap().len(), 64);
    assert_eq!(
        doc["targets"],
        json!([
            {"target": "recall >= 1", "value": 1.0, "met": true},
            {"target": "cost_ratio <= 0.01", "value": doc["targets"][1]["value"], "met": false}
        ])
    );
    assert!(doc["targets"][1]["value"].as_f64().unwrap() > 0.01);

    // A candidate changed since the plan is refused: that is a new plan.
    let table = env
        .read("candidate.toml")
        .replace("output = 2.0", "output = 3.0");
    env.write("candidate.toml", &table);
    env.gate(&["replay", "run", "plan.dsse.json"])
        .run()
        .assert_exit(2)
        .stderr_has("changed since plan");
    plan("plan-2.dsse.json", &[]).assert_exit(0);
    let kept = std::fs::read_dir(env.path().join(".gate/bundles"))
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().starts_with("replay-plan-")
        })
        .count();
    assert_eq!(kept, 2);

    // A plan edited after it was signed does not verify.
    let mut bytes = std::fs::read(env.path().join("plan-2.dsse.json")).unwrap();
    let at = bytes.len() / 2;
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    std::fs::write(env.path().join("plan-2.dsse.json"), bytes).unwrap();
    env.gate(&["replay", "run", "plan-2.dsse.json"])
        .run()
        .assert_exit(1);
}

#[test]
fn a_replay_keeps_to_its_budget_and_to_each_providers_concurrency() {
    let Recorded { server, env, .. } = recorded();
    // A budget too small for any run: nothing is sent, every run says why.
    let before = server.requests().len();
    let out = env
        .gate(&[
            "replay",
            "--routing",
            "candidate.toml",
            "--budget",
            "0",
            "--format",
            "json",
        ])
        .run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["runs"].as_array().unwrap().len(), 0, "{doc}");
    assert_eq!(doc["budget_usd"], 0.0);
    let budget: Vec<&Value> = doc["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["why"].as_str().unwrap().starts_with("--budget 0"))
        .collect();
    assert_eq!(budget.len(), 3, "{doc}");
    assert_eq!(server.requests().len(), before);
    env.gate(&["replay", "--routing", "candidate.toml", "--budget", "0"])
        .run()
        .assert_exit(0)
        .stdout_has("of 0 runs with")
        .stdout_has("skipped")
        .stdout_has("--budget 0: its estimate");
    env.gate(&["replay", "--routing", "candidate.toml", "--budget=-1"])
        .run()
        .assert_exit(2)
        .stderr_has("--budget");
    env.gate(&["replay", "--labelled"])
        .run()
        .assert_exit(2)
        .stderr_has("--routing");

    // Runs are reviewed at once, up to --jobs, but never more at a
    // provider than its concurrency.
    let slow = routing(&server, "slow-model");
    env.write("slow.toml", &slow);
    env.write(
        "slow-one.toml",
        &slow.replace("api = \"openai\"\n", "api = \"openai\"\nconcurrency = 1\n"),
    );
    for (table, most) in [("slow.toml", 3), ("slow-one.toml", 1)] {
        let server_before = server.max_in_flight();
        assert!(server_before <= 3);
        let out = env
            .gate(&[
                "replay",
                "--routing",
                table,
                "--jobs",
                "3",
                "--format",
                "json",
            ])
            .run();
        out.assert_exit(0);
        let doc = out.json();
        assert_eq!(doc["runs"].as_array().unwrap().len(), 3, "{doc}");
        if most == 1 {
            // Three one-request runs one after another: at least 3 × 500 ms.
            assert!(doc["elapsed_ms"].as_u64().unwrap() >= 1500, "{doc}");
        } else {
            assert_eq!(server.max_in_flight(), 3);
            assert!(doc["elapsed_ms"].as_u64().unwrap() < 1500, "{doc}");
        }
    }
}
