//! What a verdict rests on, through the real binary: a glob that matches
//! nothing fails the run where it is written and never lets an item carry;
//! a task report `.gitignore` hides is still its tests item's evidence; a
//! retry rebuilds what a re-running service needs on a fresh checkout; the
//! parse check accepts what the formats accept, and a deliberate fixture is
//! exempted without turning the check off; every declared page has a line.

use gate_tests::{TestEnv, item, ran, status_of};
use serde_json::Value;

fn findings<'a>(doc: &'a Value, role: &str) -> Vec<&'a Value> {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["role"] == role)
        .collect()
}

fn verify(env: &TestEnv, args: &[&str]) -> gate_tests::RunOutput {
    let mut all = vec!["verify", "--format", "json"];
    all.extend_from_slice(args);
    env.gate(&all).run()
}

/// A Flask-like API whose spec has a typo in a task's `paths` and in a
/// criterion's `inputs` (`api/model.py` for `api/models.py`).
#[test]
fn a_glob_that_matches_nothing_fails_the_run_and_never_carries() {
    let outside = tempfile::tempdir().unwrap();
    let log = outside.path().join("ran.log");
    let env = TestEnv::new();
    let spec = format!(
        r#"[spec]
id = "likes"

[policy]
builtin_parse = false

[[task]]
id = "likes-model"
paths = ["api/model.py"]

[[task.criterion]]
id = "post-like"
text = "Post.like adds one like"
run = "echo post-like >> {log}; grep -q 'likes + 1' api/models.py"
inputs = ["api/model.py", "tests/test_likes.py"]

[[task.criterion]]
id = "feed"
text = "the feed lists posts"
run = "echo feed >> {log}; grep -q feed api/feed.py"
inputs = ["api/feed.py"]

[sandbox]
writable = ["{outside}"]
"#,
        log = log.display(),
        outside = outside.path().display()
    );
    env.write("gate.toml", &spec);
    env.write(".gitignore", ".gate/\n");
    env.write(
        "api/models.py",
        "def like(self): self.likes = self.likes + 1\n",
    );
    env.write("api/feed.py", "def feed(): pass\n");
    env.write("tests/test_likes.py", "def test_like(): pass\n");

    // Attempt 1: every command holds, but two globs name nothing.
    let out = verify(&env, &[]);
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(doc["verdict"], "fail");
    assert_eq!(status_of(&doc, "post-like"), "passed");
    let found = findings(&doc, "gate");
    let titles: Vec<&str> = found.iter().map(|f| f["title"].as_str().unwrap()).collect();
    assert_eq!(
        titles,
        [
            "The glob `api/model.py` in task `likes-model`'s `paths` matches no file",
            "The glob `api/model.py` in criterion `post-like`'s `inputs` matches no file",
            "criteria `post-like`, `feed` run no file of the workspace: nothing protects what decides them",
        ]
    );
    // Each at the place it is written: gate.toml, line and column.
    assert_eq!(found[0]["severity"], "critical");
    assert_eq!(found[0]["file"], "gate.toml");
    assert_eq!(found[0]["line"], 9);
    assert!(
        found[0]["detail"]
            .as_str()
            .unwrap()
            .starts_with("gate.toml:9:10: "),
        "{}",
        found[0]["detail"]
    );
    assert!(
        found[1]["detail"]
            .as_str()
            .unwrap()
            .starts_with("gate.toml:15:11: "),
        "{}",
        found[1]["detail"]
    );
    let human = env.gate(&["verify"]).run();
    human.assert_exit(1);
    human.stdout_has(
        "gate.toml:9  The glob `api/model.py` in task `likes-model`'s `paths` matches no file",
    );
    human.stdout_has("critical finding in gate.toml: The glob `api/model.py`");

    // Attempt 3 breaks Post.like. Its inputs name no file, so nothing shows
    // its earlier pass still holds: it re-runs, and fails. `feed`, whose
    // inputs are there and unchanged, is carried.
    std::fs::remove_file(&log).unwrap();
    env.write("api/models.py", "def like(self): self.likes = 0\n");
    let out = verify(&env, &[]);
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(status_of(&doc, "post-like"), "failed");
    assert_eq!(status_of(&doc, "feed"), "carried");
    assert_eq!(ran(&log), ["post-like"]);
    let shown = env.shown(doc["run_id"].as_str().unwrap());
    let plan = shown["plan"].as_array().unwrap();
    let why = plan.iter().find(|p| p["id"] == "post-like").unwrap();
    assert_eq!(why["decision"], "run");
    assert_eq!(why["why"], "its input glob `api/model.py` matches no file");

    // The typo fixed, the next run passes once the model is fixed too.
    env.write("gate.toml", &spec.replace("api/model.py", "api/models.py"));
    env.write(
        "api/models.py",
        "def like(self): self.likes = self.likes + 1\n",
    );
    let out = verify(&env, &[]);
    out.assert_exit(0);
    let doc = out.json();
    let mut found = findings(&doc, "gate");
    found.retain(|f| !gate_tests::unprotected(f));
    assert!(found.is_empty(), "{found:?}");
}

/// With a base, a changed file no task owns and no item names is one
/// warning listing them; it does not fail the run.
#[test]
fn changed_files_no_task_owns_are_one_warning() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        r#"[spec]
id = "own"
[policy]
builtin_parse = false
[[task]]
id = "feed"
paths = ["api/feed.py"]
[[task.criterion]]
id = "feed-lists"
text = "the feed lists posts"
run = "grep -q feed api/feed.py"
"#,
    );
    env.write(".gitignore", ".gate/\n");
    env.write("api/feed.py", "def feed(): pass\n");
    env.write("api/models.py", "class Post: pass\n");
    env.git(&["init", "-q", "-b", "main"]);
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "base"]);
    env.write("api/feed.py", "def feed(): return 'feed'\n");
    env.write("api/models.py", "class Post:\n    likes = 0\n");
    env.write("api/helpers.py", "def helper(): pass\n");
    let out = verify(&env, &["--base", "main"]);
    out.assert_exit(0);
    let doc = out.json();
    let mut found = findings(&doc, "gate");
    found.retain(|f| !gate_tests::unprotected(f));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["severity"], "warning");
    assert_eq!(
        found[0]["title"],
        "The changed files `api/helpers.py`, `api/models.py` belong to no task and are named \
         by no item's inputs"
    );
    assert!(
        found[0]["detail"]
            .as_str()
            .unwrap()
            .starts_with("api/helpers.py, api/models.py: "),
        "{}",
        found[0]["detail"]
    );
}

/// `reports/` in `.gitignore` is the natural set-up; a report that turns
/// failing there is a change like any other.
#[test]
fn an_ignored_report_that_turns_failing_fails_the_retry() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        r#"[spec]
id = "store"
[policy]
builtin_parse = false
[[task]]
id = "store"
paths = ["src/store/**"]
tests = { report = "reports/store.xml" }
[[task]]
id = "cart"
paths = ["src/cart/**"]
[[task.criterion]]
id = "cart-total"
text = "the cart totals its lines"
run = "grep -q total src/cart/cart.py"
"#,
    );
    env.write(".gitignore", ".gate/\nreports/\n");
    env.write("src/store/store.py", "def get(): pass\n");
    env.write("src/cart/cart.py", "def lines(): pass\n");
    let passing = r#"<testsuite name="store" tests="2" failures="0"><testcase name="a"/><testcase name="b"/></testsuite>"#;
    let failing = r#"<testsuite name="store" tests="2" failures="1"><testcase name="a"/><testcase name="b"><failure message="boom">boom</failure></testcase></testsuite>"#;
    std::thread::sleep(std::time::Duration::from_millis(20));
    env.write("reports/store.xml", passing);

    // Attempt 1: the report holds; the cart does not.
    let out = verify(&env, &[]);
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(status_of(&doc, "store.tests"), "passed");
    assert_eq!(status_of(&doc, "cart-total"), "failed");

    // Attempt 2: the cart is fixed and the store's own tests now fail.
    env.write("src/cart/cart.py", "def total(): pass\n");
    env.write("reports/store.xml", failing);
    let out = verify(&env, &[]);
    out.assert_exit(1);
    let doc = out.json();
    assert_eq!(doc["attempt"], 2);
    assert_eq!(status_of(&doc, "cart-total"), "passed");
    assert_eq!(status_of(&doc, "store.tests"), "failed", "{doc}");
    // The bundle names the ignored report as a subject of the run.
    let statement = gate_tests::statement(&env, &doc);
    let subjects: Vec<&str> = statement["subject"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(subjects.contains(&"reports/store.xml"), "{subjects:?}");
}

/// A fresh checkout (`rm -rf dist`, the same tracked content): the retry
/// re-runs the criterion that failed, so the service it needs is started
/// again, and the build that service needs is built again first — though
/// no input of the build changed.
#[test]
fn a_fresh_checkout_rebuilds_before_the_carried_build_serves() {
    let outside = tempfile::tempdir().unwrap();
    let log = outside.path().join("ran.log");
    // What the criterion waits for lies outside the workspace: the retry
    // changes nothing the gate fingerprints.
    let upstream = outside.path().join("upstream-ready");
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        &format!(
            r#"[spec]
id = "serve"
[policy]
builtin_parse = false
[[check]]
id = "build"
run = "echo build >> {log}; mkdir -p dist && cp src/app.js dist/app.js"
[[check]]
id = "server-starts"
run = "echo server-starts >> {log}; cat dist/app.js > /dev/null && echo listening && exec sleep 60"
after = ["build"]
starts = {{ within_s = 10, ready_log = "listening" }}
[[task]]
id = "feed"
paths = ["src/**"]
[[task.criterion]]
id = "feed-served"
text = "the feed is served"
run = "echo feed-served >> {log}; test -f {upstream}"
after = ["server-starts"]
[sandbox]
writable = ["{outside}"]
"#,
            log = log.display(),
            upstream = upstream.display(),
            outside = outside.path().display()
        ),
    );
    env.write(".gitignore", ".gate/\ndist/\n");
    env.write("src/app.js", "serve(feed);\n");

    // Attempt 1 builds and serves; the criterion fails.
    let out = verify(&env, &[]);
    out.assert_exit(1);
    assert_eq!(status_of(&out.json(), "feed-served"), "failed");

    // A fresh checkout of the same content: what the build made is gone.
    std::fs::remove_dir_all(env.path().join("dist")).unwrap();
    std::fs::remove_file(&log).unwrap();
    std::fs::write(&upstream, "").unwrap();
    let out = verify(&env, &[]);
    out.assert_exit(0);
    let doc = out.json();
    for id in ["build", "server-starts", "feed-served"] {
        assert_eq!(status_of(&doc, id), "passed", "{id}: {doc}");
    }
    assert_eq!(ran(&log), ["build", "server-starts", "feed-served"]);
    let shown = env.shown(doc["run_id"].as_str().unwrap());
    let why = |id: &str| {
        shown["plan"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == id)
            .map(|p| p["why"].clone())
            .unwrap()
    };
    assert_eq!(why("feed-served"), "failed last time");
    assert_eq!(why("server-starts"), "started for `feed-served`");
    assert_eq!(
        why("build"),
        "needed by `server-starts`, which re-runs (what it makes is not in the fingerprint)"
    );
}

/// What ESLint, rustc and cargo's own test suite keep in a workspace:
/// valid YAML 1.2 the parse check once refused, diagnostic streams saved
/// as `.json` and a `Cargo.toml` invalid on purpose.
#[test]
fn cargo_like_fixtures_pass_by_exemption_with_the_check_still_on() {
    let env = TestEnv::new();
    let spec = r#"[spec]
id = "fixtures"
[[check]]
id = "build"
run = "true"
"#;
    env.write("gate.toml", spec);
    env.write(
        ".eslintrc.yml",
        "rules:\n  no-console: [2, allow: [warn, error]]\n  nested: [a: [b], c: {d: e}]\n",
    );
    env.write("events.jsonl", "{\"a\": 1}\n{\"b\": 2}\n");
    env.write(
        "tests/testsuite/data/diagnostics.json",
        "{\"reason\":\"compiler-message\",\"message\":\"unused\"}\n{\"reason\":\"build-finished\",\"success\":true}\n",
    );
    env.write(
        "tests/testsuite/fixtures/bad_manifest/Cargo.toml",
        "[package]\nname = \"bad\"\nversion = \n",
    );
    env.write(
        "Cargo.toml",
        "[package]\nname = \"fine\"\nversion = \"0.1.0\"\n",
    );

    let out = verify(&env, &[]);
    out.assert_exit(1);
    let shown = env.shown(out.json()["run_id"].as_str().unwrap());
    let parse = item(&shown["run"], "builtin.parse").unwrap();
    assert_eq!(parse["status"], "failed");
    let files: Vec<&str> = parse["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["file"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        [
            "tests/testsuite/data/diagnostics.json",
            "tests/testsuite/fixtures/bad_manifest/Cargo.toml"
        ],
        "the ESLint YAML and the JSON Lines are accepted"
    );
    // The failure names the way out.
    assert!(
        parse["reason"]
            .as_str()
            .unwrap()
            .contains("[policy] builtin_exclude = { parse = [\"<glob>\"] }"),
        "{parse}"
    );

    // Exempting the fixtures turns the run green, the check still on.
    let exempt = format!(
        "{spec}[policy]\nbuiltin_exclude = {{ parse = [\"tests/testsuite/data/**\", \"tests/testsuite/fixtures/**\"] }}\n"
    );
    env.write("gate.toml", &exempt);
    let out = verify(&env, &[]);
    out.assert_exit(0);
    let shown = env.shown(out.json()["run_id"].as_str().unwrap());
    let parse = item(&shown["run"], "builtin.parse").unwrap();
    assert_eq!(parse["status"], "passed");
    assert!(
        parse["output"]["tail"]
            .as_str()
            .unwrap()
            .contains("2 files exempt by [policy] builtin_exclude"),
        "{parse}"
    );
    // A broken file outside the exemption still fails it.
    env.write("config/app.json", "{\"port\": }\n");
    let out = verify(&env, &[]);
    out.assert_exit(1);
    let shown = env.shown(out.json()["run_id"].as_str().unwrap());
    let parse = item(&shown["run"], "builtin.parse").unwrap();
    assert_eq!(parse["locations"][0]["file"], "config/app.json");
}

/// Every `[[page]]` has its line, with a base or without, and says why it
/// was not looked at; nothing here needs a browser, since neither page is
/// touched.
#[test]
fn every_declared_page_has_a_line_in_every_output() {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        r#"[spec]
id = "pages"
[policy]
builtin_parse = false
[[check]]
id = "serve"
run = "true"
[[task]]
id = "api"
paths = ["src/**"]
[[task.criterion]]
id = "api-ok"
text = "the API answers"
run = "true"
[[page]]
id = "home"
url = "http://127.0.0.1:8080/"
files = ["web/home/**"]
after = ["serve"]
[[page]]
id = "checkout"
url = "http://127.0.0.1:8080/checkout"
files = ["web/checkout/**"]
after = ["serve"]
"#,
    );
    env.write(".gitignore", ".gate/\n");
    env.write("src/api.py", "def api(): pass\n");
    env.write("web/home/index.html", "<h1>home</h1>\n");
    env.write("web/checkout/index.html", "<h1>checkout</h1>\n");

    let junit = env.path().join("report.junit.xml");
    let markdown = env.path().join("report.md");
    let jsonl = env.path().join("events.jsonl");
    let out = env
        .gate(&[
            "verify",
            "--format",
            "json",
            "--report",
            &format!("junit={}", junit.display()),
            "--report",
            &format!("markdown={}", markdown.display()),
            "--report",
            &format!("jsonl={}", jsonl.display()),
        ])
        .run();
    out.assert_exit(0);
    let doc = out.json();
    for page in ["home", "checkout"] {
        let line = item(&doc, page).unwrap_or_else(|| panic!("no line for page {page}: {doc}"));
        assert_eq!(line["status"], "skipped");
        assert_eq!(line["kind"], "page");
        let why = line["reason"].as_str().unwrap();
        assert!(why.contains("without a base"), "{why}");
    }
    let junit = std::fs::read_to_string(&junit).unwrap();
    assert!(junit.contains("name=\"home\""), "{junit}");
    assert!(
        junit.contains("<skipped message=\"not looked at: without a base"),
        "{junit}"
    );
    let markdown = std::fs::read_to_string(&markdown).unwrap();
    assert!(
        markdown.contains("page `checkout` skipped: not looked at"),
        "{markdown}"
    );
    let jsonl = std::fs::read_to_string(&jsonl).unwrap();
    assert!(jsonl.contains("\"decision\":\"skip\""), "{jsonl}");
    let human = env.gate(&["verify"]).run();
    human.assert_exit(0);
    human.stdout_has("home");
    human.stdout_has("skipped: not looked at: without a base");

    // With a base the change touches only the API: said as such.
    env.git(&["init", "-q", "-b", "main"]);
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "base"]);
    env.write("src/api.py", "def api(): return 1\n");
    let out = verify(&env, &["--base", "main"]);
    out.assert_exit(0);
    let doc = out.json();
    for page in ["home", "checkout"] {
        assert_eq!(
            item(&doc, page).unwrap()["reason"],
            "not looked at: the change touches none of its `files`"
        );
    }
}
