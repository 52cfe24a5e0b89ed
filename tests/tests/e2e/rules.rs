//! House rules through the real binary: listing what applies, checking,
//! testing against the scripted model server, the rules reviewer in
//! `gate verify`, and model qualification.

use gate_tests::TestEnv;
use gate_tests::model_server::{Matcher, ModelServer, Reply, routes_to};
use serde_json::{Value, json};

const ROOT_RULES: &str = r#"# The whole repository's conventions.
[[rule]]
id = "errors-bubble-up"
applies = ["**/*.rs"]   # Rust only
mistake = "The change catches an error and returns None instead of letting it propagate"
fix = "Let the error propagate"
reference = "src/retry.rs"
[[rule.cases.violating]]
file = "src/lookup.rs"
diff = "+    Err(_) => return None,"
[[rule.cases.compliant]]
file = "src/lookup.rs"
diff = "+    Err(e) => return Err(LookupError::from(e)),"

[[rule]]
id = "modules-named-for-contents"
judge = false
statement = "Modules are named for what they hold"
fix = "Rename the module after what it holds"
"#;

const API_RULES: &str = r#"
[[rule]]
id = "no-product-branch"
statement = "Shared code has no branch on a product name"
fix = "Move the product-specific part behind a trait"
reference = "services/api/src/plugin.rs"
severity = "critical"
[[rule.cases.violating]]
file = "services/api/src/a.rs"
diff = "+ if product == \"acme\" {"
[[rule.cases.compliant]]
file = "services/api/src/a.rs"
diff = "+ let plugin = registry.get(product);"
"#;

const WEB_RULES: &str = r#"
[[rule]]
id = "web-only"
judge = false
mistake = "The change adds inline styles"
fix = "Use the stylesheet"
"#;

fn fixture() -> TestEnv {
    let env = TestEnv::new();
    env.write("docs/review/rules.toml", ROOT_RULES);
    env.write("services/api/docs/review/rules.toml", API_RULES);
    env.write("services/web/docs/review/rules.toml", WEB_RULES);
    env.write("src/retry.rs", "fn retry() -> Result<(), E> { op()? }\n");
    env.write("services/api/src/plugin.rs", "pub trait Plugin {}\n");
    env
}

fn routing(server: &ModelServer) -> String {
    format!(
        "[provider.local]\napi = \"openai\"\nbase_url = \"{}/v1\"\n\n\
         [model.good]\nprovider = \"local\"\nname = \"good-model\"\nfallback = [\"bad\"]\nstream = false\n\n\
         [model.bad]\nprovider = \"local\"\nname = \"bad-model\"\nstream = false\n\n{}",
        server.url(),
        routes_to("good")
    )
}

fn answer(rules: &[(&str, f64)]) -> Reply {
    Reply::openai(&json!({
        "findings": [], "criteria": [],
        "rules": rules.iter().map(|(id, p)| json!({"id": id, "p": p, "why": "scripted"})).collect::<Vec<_>>(),
    }))
}

/// Answers each labelled case by its diff text, for one model.
fn script_cases(server: &ModelServer, model: &str, cases: &[(&str, &str, f64)]) {
    for (id, diff, p) in cases {
        server.script(
            Matcher::any()
                .role("rules")
                .model(model)
                .body_contains(diff),
            vec![answer(&[(id, *p)])],
        );
    }
}

/// Scores that separate both judged rules' cases on `good-model`.
fn good_answers(server: &ModelServer) {
    script_cases(
        server,
        "good-model",
        &[
            ("errors-bubble-up", "return None,", 0.9),
            ("errors-bubble-up", "LookupError::from", 0.05),
            ("no-product-branch", "product == ", 0.1),
            ("no-product-branch", "registry.get", 0.95),
        ],
    );
}

#[test]
fn rules_for_files_walk_up_and_skip_siblings() {
    let env = fixture();
    let out = env
        .gate(&[
            "rules",
            "--files",
            "services/api/src/new.rs",
            "--format",
            "json",
        ])
        .run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["format_version"], 1);
    assert_eq!(doc["files"], json!(["services/api/src/new.rs"]));
    let ids: Vec<&str> = doc["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "errors-bubble-up",
            "modules-named-for-contents",
            "no-product-branch"
        ]
    );
    let rule = &doc["rules"][0];
    assert_eq!(rule["kind"], "mistake");
    assert_eq!(rule["fix"], "Let the error propagate");
    assert_eq!(rule["reference"], "src/retry.rs");
    assert_eq!(rule["scope"], "**/*.rs");

    env.gate(&["rules", "--files", "services/api/src/new.rs"])
        .run()
        .assert_exit(0)
        .stdout_has("3 house rules apply to services/api/src/new.rs")
        .stdout_has("  avoid  The change catches an error and returns None")
        .stdout_has("  do     Let the error propagate")
        .stdout_has("  see    src/retry.rs")
        .stdout_has("no-product-branch · critical · in services/api/**")
        .stdout_has("modules-named-for-contents · guide");
    // `applies` narrows: a Markdown file gets the guide entry only.
    let out = env
        .gate(&["rules", "--files", "README.md", "--format", "json"])
        .run();
    out.assert_exit(0);
    assert_eq!(
        out.json()["rules"].as_array().unwrap().len(),
        1,
        "{}",
        out.stdout
    );
    // Without --files: every rule.
    let out = env.gate(&["rules", "--format", "json"]).run();
    assert_eq!(out.json()["rules"].as_array().unwrap().len(), 4);
    env.gate(&["rules", "--files", "../elsewhere.rs"])
        .run()
        .assert_exit(2)
        .stderr_has("outside the workspace");
}

#[test]
fn broken_rules_files_are_located() {
    let cases: &[(&str, &str)] = &[
        (
            "[[rule]]\nid = \"a\"\nmistake = \"m\"\nfix = \"f\"\njudge = false\ncolour = \"red\"\n",
            "docs/review/rules.toml:6:1: unknown key `colour`",
        ),
        (
            "[[rule]]\nid = \"a\"\nmistake = \"m\"\nstatement = \"s\"\nfix = \"f\"\njudge = false\n",
            "docs/review/rules.toml:4:1: rule `a` has both `mistake` and `statement`",
        ),
        (
            "[[rule]]\nid = \"a\"\nmistake = \"m\"\nfix = \"f\"\n",
            "docs/review/rules.toml:1:1: rule `a` is judged but has no violating case",
        ),
    ];
    for (text, want) in cases {
        let env = TestEnv::new();
        env.write("docs/review/rules.toml", text);
        for args in [
            &["rules"][..],
            &["rules", "check"],
            &["rules", "--files", "a.rs"],
        ] {
            env.gate(args).run().assert_exit(2).stderr_has(want);
        }
    }
    // A rules file is configuration for verify too: nothing runs.
    let env = TestEnv::new();
    env.write("docs/review/rules.toml", cases[0].0);
    env.write(
        "gate.toml",
        "[spec]\nid = \"x\"\n[[check]]\nid = \"c\"\nrun = \"touch ran\"\n",
    );
    env.gate(&["verify"])
        .run()
        .assert_exit(2)
        .stderr_has("unknown key `colour`");
    assert!(!env.path().join("ran").exists());
}

#[test]
fn test_writes_back_and_check_notices_edits() {
    let env = fixture();
    let server = ModelServer::start();
    env.write("routing.toml", &routing(&server));
    good_answers(&server);
    env.gate(&["rules", "check"])
        .run()
        .assert_exit(1)
        .stdout_has("docs/review/rules.toml:3:1: rule `errors-bubble-up` never tested");

    let before = env.read("docs/review/rules.toml");
    env.gate(&["rules", "test"])
        .run()
        .assert_exit(0)
        .stdout_has("errors-bubble-up (docs/review/rules.toml): pass  margin 0.85")
        .stdout_has("no-product-branch (services/api/docs/review/rules.toml): pass  margin 0.85")
        .stdout_has("2 passed");
    let after = env.read("docs/review/rules.toml");
    let tested: Vec<&str> = after
        .lines()
        .filter(|l| l.starts_with("tested = "))
        .collect();
    assert_eq!(tested.len(), 1, "{after}");
    assert!(tested[0].contains("margin = 0.85, model = \"good-model\""));
    // Comments and layout outside `tested` are untouched.
    assert_eq!(after.replace(&format!("{}\n", tested[0]), ""), before);

    env.gate(&["rules", "check"])
        .run()
        .assert_exit(0)
        .stdout_has("ok: 4 rules (2 judged)");
    env.gate(&["rules", "check", "--cap", "2"])
        .run()
        .assert_exit(1)
        .stdout_has("services/api/src/plugin.rs: 3 rules apply to it, more than the cap of 2");

    env.write(
        "docs/review/rules.toml",
        &after.replace(
            "\"src/lookup.rs\"\ndiff = \"+    Err(_)",
            "\"src/find.rs\"\ndiff = \"+    Err(_)",
        ),
    );
    env.gate(&["rules", "check"])
        .run()
        .assert_exit(1)
        .stdout_has(
            "rule `errors-bubble-up` its wording or cases changed since it was last tested",
        );

    // A rule whose wording does not separate its cases fails the test.
    let vague = ModelServer::start();
    env.write("routing.toml", &routing(&vague));
    script_cases(
        &vague,
        "good-model",
        &[
            ("no-product-branch", "product == ", 0.5),
            ("no-product-branch", "registry.get", 0.6),
        ],
    );
    env.gate(&["rules", "test", "--rule", "no-product-branch"])
        .run()
        .assert_exit(1)
        .stdout_has("FAIL  margin 0.10 (needs 0.5)");
    env.gate(&["rules", "test", "--rule", "nope"])
        .run()
        .assert_exit(2)
        .stderr_has("no rule `nope`");
}

const SPEC: &str = r#"
[spec]
id = "rules-run"
[[task]]
id = "api"
paths = ["services/api/src/**", "src/**"]
"#;

#[test]
fn verify_asks_the_rules_and_raises_findings() {
    let env = fixture();
    let server = ModelServer::start();
    env.write("routing.toml", &routing(&server));
    env.write("gate.toml", SPEC);
    env.write("src/lookup.rs", "fn find() -> Option<X> { None }\n");
    env.write(
        "services/api/src/handler.rs",
        "fn h(product: &str) { if product == \"acme\" {} }\n",
    );
    server.script(Matcher::any().role("quality"), vec![answer(&[])]);
    server.script(
        Matcher::any().role("rules"),
        vec![answer(&[
            ("errors-bubble-up", 0.3),
            ("no-product-branch", 0.2),
        ])],
    );
    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(1);
    let doc = out.json();
    let rules: Vec<&Value> = doc["review"]["specialists"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["role"] == "rules")
        .collect();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["status"], "ok");
    // Worst first: the critical statement (compliance 0.20), then the
    // mistake, whose 0.3 reads as compliance 0.70, below 0.80.
    let findings = doc["findings"].as_array().unwrap();
    let got: Vec<(&str, &str)> = findings
        .iter()
        .map(|f| {
            (
                f["severity"].as_str().unwrap(),
                f["title"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "critical",
                "house rule `no-product-branch` not followed: Shared code has no branch on a product name"
            ),
            (
                "warning",
                "house rule `errors-bubble-up`: The change catches an error and returns None instead of letting it propagate"
            ),
        ]
    );
    let f = &findings[0];
    assert_eq!(f["role"], "rules");
    assert_eq!(f["file"], "services/api/src/handler.rs");
    let detail = f["detail"].as_str().unwrap();
    assert!(detail.contains("compliance 0.20, below the rule threshold 0.80"));
    assert!(detail.contains("fix: Move the product-specific part behind a trait"));
    assert!(detail.contains("reference: services/api/src/plugin.rs"));
    assert_eq!(f["id"].as_str().unwrap().len(), 12);
    assert!(
        findings[1]["detail"]
            .as_str()
            .unwrap()
            .contains("compliance 0.70")
    );

    let requests: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.header("x-gate-role") == Some("rules"))
        .collect();
    assert_eq!(requests.len(), 1);
    let text = requests[0].text();
    assert!(
        text.contains("- id `no-product-branch`: In services/api/**: Shared code has no branch")
    );
    assert!(text.contains("- id `errors-bubble-up`: In **/*.rs: The change catches an error"));
    assert!(!text.contains("modules-named-for-contents"));
    assert!(text.contains("file=\"src/retry.rs\">>>\nfn retry()"));

    // The rules files' digests are in the bundle's predicate.
    let predicate = env.shown(doc["run_id"].as_str().unwrap());
    let files: Vec<&str> = predicate["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["file"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        [
            "docs/review/rules.toml",
            "services/api/docs/review/rules.toml",
            "services/web/docs/review/rules.toml"
        ]
    );
    assert_eq!(predicate["rules"][0]["blake3"].as_str().unwrap().len(), 64);
}

#[test]
fn qualify_flags_a_model_that_does_not_separate_the_cases() {
    let env = fixture();
    let server = ModelServer::start();
    env.write("routing.toml", &routing(&server));
    good_answers(&server);
    script_cases(
        &server,
        "bad-model",
        &[
            ("errors-bubble-up", "return None,", 0.5),
            ("errors-bubble-up", "LookupError::from", 0.5),
            ("no-product-branch", "product == ", 0.1),
            ("no-product-branch", "registry.get", 0.95),
        ],
    );
    env.gate(&["routing", "check"])
        .run()
        .assert_exit(0)
        .stdout_has("ok");
    env.gate(&["routing", "check", "--qualify"])
        .run()
        .assert_exit(1)
        .stdout_has("  ok: local/good-model (good): lowest margin 0.85")
        .stdout_has("  error: local/bad-model (bad): does not separate the cases: below the margin on `errors-bubble-up` 0.00");
    // Qualification leaves the rules files as they were.
    assert!(!env.read("docs/review/rules.toml").contains("tested"));
}

/// With a base, a change that loosens the house rules (a judged rule
/// removed or reworded, a rules file deleted) fails the run, as a change
/// that drops a criterion does: the rules are the gate's exam too.
#[test]
fn a_change_that_loosens_the_house_rules_is_a_critical_finding() {
    // (what the change does to the rules, the finding's title; None: nothing loosened)
    let cases: [(&str, Option<&str>); 4] = [
        ("nothing", None),
        (
            "removes",
            Some("The change removes house rule `no-product-branch`"),
        ),
        (
            "rewords",
            Some("The change alters house rule `no-product-branch`"),
        ),
        (
            "deletes",
            Some("The change removes the house rules file `services/api/docs/review/rules.toml`"),
        ),
    ];
    for (change, want) in cases {
        let env = fixture();
        env.write("gate.toml", "[spec]\nid = \"rules-guard\"\n");
        env.write(".gitignore", ".gate/\n");
        env.git(&["init", "-q", "-b", "main"]);
        env.git(&["add", "."]);
        env.git(&["commit", "-q", "-m", "base"]);
        let api = "services/api/docs/review/rules.toml";
        match change {
            "removes" => {
                env.write(api, "\n");
            }
            "rewords" => {
                env.write(
                    api,
                    &API_RULES.replace("has no branch on a product name", "is fine"),
                );
            }
            "deletes" => std::fs::remove_file(env.path().join(api)).unwrap(),
            _ => {}
        }
        let out = env
            .gate(&["verify", "--base", "main", "--offline", "--format", "json"])
            .run();
        let doc = out.json();
        let critical: Vec<&str> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["severity"] == "critical")
            .map(|f| f["title"].as_str().unwrap())
            .collect();
        assert_eq!(critical, want.into_iter().collect::<Vec<_>>(), "{change}");
        out.assert_exit(i32::from(want.is_some()));
    }
}
