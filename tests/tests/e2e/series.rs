//! Attempt series through the real binary, in real git repositories: each
//! branch or pull request keeps its own attempts and carries nothing from
//! another's, `--series` names one outright, the series key is signed and
//! checked, and an escalation holds for the spec on every branch.

use gate_tests::{TestEnv, ran, status_of};
use serde_json::Value;

/// A repository on `branch` holding `spec` and `src/x.txt`, committed.
fn repository(spec: &str, branch: &str) -> TestEnv {
    let env = TestEnv::new();
    env.git(&["init", "-q", "-b", branch]);
    env.write("gate.toml", spec);
    env.write("src/x.txt", "not yet\n");
    env.git(&["add", "-A"]);
    env.git(&["commit", "-q", "-m", "start"]);
    env
}

/// `gate verify --format json` with `args` and `vars`, expecting `exit`.
fn verify(env: &TestEnv, args: &[&str], vars: &[(&str, &str)], exit: i32) -> Value {
    let mut all = vec!["verify", "--format", "json"];
    all.extend_from_slice(args);
    let mut cmd = env.gate(&all);
    for (k, v) in vars {
        cmd = cmd.env(k, v);
    }
    let out = cmd.run();
    out.assert_exit(exit);
    out.json()
}

fn series_of(doc: &Value) -> (String, String) {
    let s = &doc["series"];
    (
        s["key"].as_str().unwrap_or("none").to_owned(),
        s["from"].as_str().unwrap_or("none").to_owned(),
    )
}

#[test]
fn two_branches_keep_two_series_and_carry_nothing_across() {
    let outside = tempfile::tempdir().unwrap();
    let log = outside.path().join("ran.log");
    let spec = format!(
        r#"
[spec]
id = "ttl"
[sandbox]
writable = ["{outside}"]
[policy]
builtin_parse = false
[[check]]
id = "build"
run = "echo build >> {log}"
inputs = ["src/**"]
[[task]]
id = "t"
paths = ["src/**"]
tests = {{ run = "echo tests >> {log}; grep -qx done src/x.txt" }}
"#,
        outside = outside.path().display(),
        log = log.display()
    );
    let env = repository(&spec, "feature/a");

    // Attempt 1 on feature/a: the task's test fails.
    let doc = verify(&env, &[], &[], 1);
    assert_eq!(doc["attempt"], 1);
    assert_eq!(
        series_of(&doc),
        ("branch:feature/a".into(), "branch".into())
    );
    let mut first = ran(&log);
    first.sort();
    assert_eq!(first, ["build", "tests"]);

    // Another branch is another series: attempt 1, and nothing carried
    // from feature/a's run, though nothing changed.
    std::fs::remove_file(&log).unwrap();
    env.git(&["checkout", "-q", "-b", "feature/ttl"]);
    let doc = verify(&env, &[], &[], 1);
    assert_eq!(doc["attempt"], 1, "{doc:#}");
    assert_eq!(
        series_of(&doc),
        ("branch:feature/ttl".into(), "branch".into())
    );
    assert_eq!(status_of(&doc, "build"), "passed");
    let mut again = ran(&log);
    again.sort();
    assert_eq!(again, ["build", "tests"]);

    // Back on feature/a its own series goes on: attempt 2, build carried
    // from its own attempt 1.
    std::fs::remove_file(&log).unwrap();
    env.git(&["checkout", "-q", "feature/a"]);
    let doc = verify(&env, &[], &[], 1);
    assert_eq!(doc["attempt"], 2, "{doc:#}");
    assert_eq!(status_of(&doc, "build"), "carried");
    assert_eq!(ran(&log), ["tests"]);

    // `--series` names the series outright, over the branch and the CI.
    let doc = verify(
        &env,
        &["--series", "pr:9"],
        &[("GITHUB_REF", "refs/pull/7/merge")],
        1,
    );
    assert_eq!(doc["attempt"], 1);
    assert_eq!(series_of(&doc), ("pr:9".into(), "--series".into()));
    // The CI's pull request names it when no flag does; on a detached
    // checkout too.
    env.git(&["checkout", "-q", "--detach"]);
    let doc = verify(&env, &[], &[("GITHUB_REF", "refs/pull/7/merge")], 1);
    assert_eq!(doc["attempt"], 1);
    assert_eq!(series_of(&doc), ("pr:7".into(), "GITHUB_REF".into()));
    let doc = verify(&env, &[], &[("GITHUB_REF", "refs/pull/7/merge")], 1);
    assert_eq!(doc["attempt"], 2);
    let doc = verify(&env, &[], &[("CI_MERGE_REQUEST_IID", "12")], 1);
    assert_eq!(
        series_of(&doc),
        ("mr:12".into(), "CI_MERGE_REQUEST_IID".into())
    );
    // A detached checkout names the branch the CI names.
    let doc = verify(&env, &[], &[("BUILDKITE_BRANCH", "feature/ttl")], 1);
    assert_eq!(doc["attempt"], 2, "{doc:#}");
    assert_eq!(
        series_of(&doc),
        ("branch:feature/ttl".into(), "branch".into())
    );
    env.gate(&["verify", "--series", " "])
        .run()
        .assert_exit(2)
        .stderr_has("--series");

    // `gate runs` shows each run's series, commit and branch.
    let head = env.git(&["rev-parse", "HEAD"]).trim().to_owned();
    let out = env.gate(&["runs", "--format", "json"]).run();
    out.assert_exit(0);
    let runs = out.json()["runs"].as_array().unwrap().clone();
    assert_eq!(runs.len(), 8);
    let newest = &runs[0];
    assert_eq!(newest["series"], "branch:feature/ttl");
    assert_eq!(newest["branch"], "feature/ttl");
    assert_eq!(newest["commit"], head.as_str());
    let keys: Vec<&str> = runs.iter().map(|r| r["series"].as_str().unwrap()).collect();
    assert_eq!(
        keys,
        [
            "branch:feature/ttl",
            "mr:12",
            "pr:7",
            "pr:7",
            "pr:9",
            "branch:feature/a",
            "branch:feature/ttl",
            "branch:feature/a"
        ]
    );
    let human = env.gate(&["runs", "--series", "pr:7"]).run();
    human.assert_exit(0);
    let lines: Vec<&str> = human.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", human.stdout);
    assert!(
        lines[0].contains("series") && lines[0].contains("branch"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("pr:7") && lines[1].contains(&head[..11]),
        "{}",
        lines[1]
    );

    // The key is signed: a column moved to another series is named.
    env.gate(&["ledger", "verify"]).run().assert_exit(0);
    let db = rusqlite::Connection::open(env.path().join(".gate/ledger.db")).unwrap();
    db.execute_batch("UPDATE runs SET series = 'branch:main' WHERE seq = 1;")
        .unwrap();
    drop(db);
    env.gate(&["ledger", "verify"])
        .run()
        .assert_exit(1)
        .stdout_has(
            "series is \"branch:main\" in the ledger but \"branch:feature/a\" where signed",
        );
}

#[test]
fn an_escalation_holds_on_every_branch_until_a_human_lifts_it() {
    let outside = tempfile::tempdir().unwrap();
    let log = outside.path().join("ran.log");
    let spec = format!(
        r#"
[spec]
id = "loop"
[sandbox]
writable = ["{}"]
[[check]]
id = "stuck"
run = "echo ran >> {}; echo \"error at $(date +%s%N)\"; exit 1"
"#,
        outside.path().display(),
        log.display()
    );
    let env = repository(&spec, "feature/a");
    verify(&env, &[], &[], 1);
    verify(&env, &[], &[], 1);
    let doc = verify(&env, &[], &[], 3);
    assert_eq!(doc["doom_loop"]["pattern"], "repeat");
    assert_eq!(ran(&log).len(), 3);

    // A new branch, another pull request, another key: still escalated,
    // nothing runs.
    env.git(&["checkout", "-q", "-b", "feature/escape"]);
    let doc = verify(&env, &[], &[], 3);
    assert_eq!(
        series_of(&doc),
        ("branch:feature/escape".into(), "branch".into())
    );
    assert_eq!(status_of(&doc, "stuck"), "skipped");
    let why = doc["verdict_reasons"][0]["why"].as_str().unwrap();
    assert!(why.contains("in every series on this base"), "{why}");
    verify(&env, &[], &[("GITHUB_REF", "refs/pull/3/merge")], 3);
    verify(&env, &["--series", "fresh"], &[], 3);
    assert_eq!(ran(&log).len(), 3, "an escalated spec ran something");
    // Another base is another matter: the escalation is the spec's on its base.
    verify(&env, &["--base", "feature/a"], &[], 1);
    assert_eq!(ran(&log).len(), 4);
    verify(&env, &[], &[], 3);

    // An operator starts a new series: it runs, and lifts the escalation
    // for every series on the base.
    let doc = verify(&env, &["--new-series"], &[], 1);
    assert_eq!(doc["attempt"], 1);
    assert_eq!(ran(&log).len(), 5);
    env.git(&["checkout", "-q", "feature/a"]);
    let doc = verify(&env, &[], &[], 1);
    assert_eq!(doc["attempt"], 1, "{doc:#}");
    assert_eq!(ran(&log).len(), 6);
}
