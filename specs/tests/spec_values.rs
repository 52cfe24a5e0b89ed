//! Valid specs: the values they give, their defaults, and the two spellings.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gate_specs::{Check, Criterion, Page, SpecMeta, Starts, Task, TaskTests};
use gate_specs::{
    CheckGraph, Decider, Format, LedgerSection, Locator, OnReviewUnavailable, Policy, Position,
    ReviewUnavailable, SandboxSection, Spec, SpecErrorKind, TaskGraph, key_path, load, parse_str,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// `shop.toml`: the `orders` example plus the `db` task it builds on.
fn shop() -> Spec {
    Spec {
        spec: SpecMeta {
            id: "shop-checkout".into(),
            summary: "Add the checkout flow".into(),
            base: Some("main".into()),
            agent: Some("claude-code".into()),
            protected: vec![],
        },
        checks: vec![
            Check {
                id: "build".into(),
                run: "make build".into(),
                timeout_s: Some(300),
                after: vec![],
                inputs: vec![],
                starts: None,
            },
            Check {
                id: "server-starts".into(),
                run: "./scripts/serve.sh".into(),
                timeout_s: None,
                after: strings(&["build"]),
                inputs: vec![],
                starts: Some(Starts {
                    within_s: Some(10),
                    ready_tcp: Some("127.0.0.1:8080".into()),
                    ready_http: None,
                    ready_log: None,
                }),
            },
        ],
        tasks: vec![
            Task {
                id: "orders".into(),
                title: "Create-order endpoint".into(),
                paths: strings(&["src/orders/**"]),
                after: strings(&["db"]),
                tests: Some(TaskTests {
                    report: Some("reports/orders.junit.xml".into()),
                    run: None,
                    timeout_s: None,
                    after: Vec::new(),
                }),
                criteria: vec![
                    Criterion {
                        id: "orders-201".into(),
                        text: "POST /orders returns 201 with the new order id".into(),
                        run: Some("./scripts/check_orders.sh".into()),
                        judge: None,
                        inputs: strings(&["src/orders/**", "scripts/check_orders.sh"]),
                        after: vec![],
                        timeout_s: None,
                        threshold: None,
                        expect: None,
                    },
                    Criterion {
                        id: "orders-no-pii-logs".into(),
                        text: "No request handler logs a customer's email or address".into(),
                        run: None,
                        judge: Some("model".into()),
                        inputs: strings(&["src/orders/**"]),
                        after: vec![],
                        timeout_s: None,
                        threshold: None,
                        expect: None,
                    },
                ],
            },
            Task {
                id: "db".into(),
                title: "Orders table".into(),
                paths: strings(&["migrations/**"]),
                after: vec![],
                tests: Some(TaskTests {
                    report: None,
                    run: Some("cargo test -p db".into()),
                    timeout_s: Some(120),
                    after: Vec::new(),
                }),
                criteria: vec![],
            },
        ],
        pages: vec![Page {
            id: "checkout-page".into(),
            url: "http://127.0.0.1:8080/checkout".into(),
            files: strings(&["web/checkout/**"]),
            after: strings(&["server-starts"]),
            headers: BTreeMap::from([("Authorization".into(), "SHOP_TEST_AUTH".into())]),
            cookies: BTreeMap::from([("session".into(), "SHOP_TEST_SESSION".into())]),
            timeout_s: None,
        }],
        policy: Policy::default(),
        ledger: LedgerSection::default(),
        sandbox: SandboxSection::default(),
        eval: gate_specs::EvalSection::default(),
    }
}

#[test]
fn the_orders_example_names_a_task_it_does_not_define() {
    // The `orders` example on its own: its `orders` task builds on a `db`
    // task the example leaves out; everything else is valid.
    let path = fixture("orders-example.toml");
    let errors = load(&path).unwrap_err();
    let got: Vec<_> = errors.iter().map(|e| (e.line, e.column, &e.kind)).collect();
    assert_eq!(
        got,
        [(
            22,
            10,
            &SpecErrorKind::UnknownAfter {
                name: "db".into(),
                expected: "a task",
                suggestion: None,
            }
        )]
    );
}

#[test]
fn shop_toml_values() {
    let spec = load(&fixture("shop.toml")).unwrap();
    assert_eq!(spec, shop());
    // What the example leaves out takes the documented defaults.
    let p = &spec.policy;
    assert_eq!(
        (
            p.trivial_max_tasks,
            p.trivial_max_criteria,
            p.light_max_tasks,
            p.light_max_criteria
        ),
        (1, 5, 4, 20)
    );
    assert_eq!(p.sensitive_paths, strings(&Policy::DEFAULT_SENSITIVE_PATHS));
    assert!(p.builtin_secrets && p.builtin_conflicts && p.builtin_parse);
    assert!(p.builtin_overflow && p.builtin_contrast);
    assert_eq!(spec.pages[0].timeout_s(), 30);
    assert_eq!((p.check_timeout_s, p.output_cap_bytes), (300, 1_048_576));
    assert_eq!(
        (
            p.specialist_timeout_s,
            p.review_timeout_s,
            p.inactivity_timeout_s,
            p.connect_timeout_s,
            p.min_attempt_time_s,
            p.breaker_cooldown_s,
        ),
        (300, 1500, 60, 10, 120, 120)
    );
    assert!(p.role_timeout_s.is_empty());
    assert_eq!(
        p.on_review_unavailable,
        OnReviewUnavailable::all(ReviewUnavailable::Pass)
    );
    assert_eq!(
        (
            p.judge_threshold,
            p.rule_threshold,
            p.confidence_floor,
            p.min_coverage
        ),
        (0.8, 0.8, 0.5, 0.0)
    );
    assert_eq!(
        (
            p.max_input_tokens,
            p.max_attempts,
            p.repeat_attempts,
            p.no_progress_attempts
        ),
        (5_000_000, 6, 3, 4)
    );
    assert_eq!(spec.ledger.url, None);
    assert_eq!(spec.checks[1].starts.as_ref().unwrap().within_s(), 10);
    assert_eq!(
        spec.tasks[0].criteria[0].decider(),
        Decider::Code("./scripts/check_orders.sh")
    );
    assert_eq!(spec.tasks[0].criteria[1].decider(), Decider::Model);
    assert_eq!(spec.criteria_count(), 2);
    assert_eq!(Spec::tests_check_id(&spec.tasks[1]), "db.tests");
}

#[test]
fn json_and_toml_give_the_same_spec() {
    let toml = load(&fixture("shop.toml")).unwrap();
    let json = load(&fixture("shop.json")).unwrap();
    assert_eq!(toml, json);
}

#[test]
fn serialised_spec_parses_back() {
    let spec = shop();
    let text = serde_json::to_string_pretty(&spec).unwrap();
    assert_eq!(
        parse_str(&text, Path::new("x.json"), Format::Json).unwrap(),
        spec
    );
    let text = toml::to_string(&spec).unwrap();
    assert_eq!(
        parse_str(&text, Path::new("x.toml"), Format::Toml).unwrap(),
        spec
    );
}

#[test]
fn policy_overrides() {
    let text = r#"
[spec]
id = "p"

[policy]
trivial_max_tasks = 2
light_max_tasks = 2
sensitive_paths = ["infra/**"]
builtin_parse = false
on_review_unavailable = "fail"
judge_threshold = 1
min_coverage = 0.25
max_attempts = 1
output_cap_bytes = 1024
mutants = { min_score = 0.75, on_below = "fail", max = 40 }

[policy.role_timeout_s]
quality = 600
coordinator = 30

[ledger]
url = "postgres://gate@db/gate"
"#;
    let spec = parse_str(text, Path::new("gate.toml"), Format::Toml).unwrap();
    let p = &spec.policy;
    assert_eq!((p.trivial_max_tasks, p.light_max_tasks), (2, 2));
    assert_eq!(p.sensitive_paths, strings(&["infra/**"]));
    assert!(!p.builtin_parse && p.builtin_secrets);
    assert_eq!(
        p.on_review_unavailable,
        OnReviewUnavailable::all(ReviewUnavailable::Fail)
    );
    assert_eq!((p.judge_threshold, p.min_coverage), (1.0, 0.25));
    assert_eq!((p.max_attempts, p.output_cap_bytes), (1, 1024));
    assert_eq!(
        p.role_timeout_s,
        BTreeMap::from([("coordinator".to_owned(), 30), ("quality".to_owned(), 600)])
    );
    let mutants = p.mutants.as_ref().unwrap();
    assert_eq!(
        (mutants.min_score, mutants.on_below, mutants.max),
        (0.75, gate_specs::OnBelow::Fail, Some(40))
    );
    assert_eq!(p.trivial_max_criteria, 5, "unset keys keep their default");
    assert!(
        gate_specs::Policy::default().mutants.is_none(),
        "mutation scoring is off unless set"
    );
    assert_eq!(spec.ledger.url.as_deref(), Some("postgres://gate@db/gate"));
}

#[test]
fn builtin_exclude_as_a_list_or_by_check() {
    let parse = |policy: &str| {
        parse_str(
            &format!("[spec]\nid = \"x\"\n[policy]\n{policy}\n"),
            Path::new("gate.toml"),
            Format::Toml,
        )
        .unwrap()
        .policy
        .builtin_exclude
    };
    // (policy line, globs for conflicts, secrets, parse)
    let cases: &[(&str, [&[&str]; 3])] = &[
        ("", [&[], &[], &[]]),
        (
            r#"builtin_exclude = ["fixtures/**"]"#,
            [&["fixtures/**"], &["fixtures/**"], &["fixtures/**"]],
        ),
        (
            r#"builtin_exclude = { all = ["vendor/**"], parse = ["tests/**/*.json"], secrets = ["tests/keys/**"] }"#,
            [
                &["vendor/**"],
                &["vendor/**", "tests/keys/**"],
                &["vendor/**", "tests/**/*.json"],
            ],
        ),
    ];
    for (line, want) in cases {
        let exclude = parse(line);
        for (check, want) in ["conflicts", "secrets", "parse"].iter().zip(want) {
            assert_eq!(exclude.for_check(check), strings(want), "{line}: {check}");
        }
    }
    // JSON spells both shapes the same way.
    let json = parse_str(
        r#"{"spec": {"id": "x"}, "policy": {"builtin_exclude": {"parse": ["a/**"]}}}"#,
        Path::new("gate.json"),
        Format::Json,
    )
    .unwrap();
    assert_eq!(
        json.policy.builtin_exclude.for_check("parse"),
        strings(&["a/**"])
    );
    assert!(json.policy.builtin_exclude.for_check("secrets").is_empty());
}

#[test]
fn on_review_unavailable_by_tier_or_for_all() {
    use ReviewUnavailable::{Fail, Incomplete, Pass};
    // (the value as written, trivial, light, full)
    let cases = [
        ("\"incomplete\"", Incomplete, Incomplete, Incomplete),
        (
            "{ trivial = \"pass\", light = \"pass\", full = \"incomplete\" }",
            Pass,
            Pass,
            Incomplete,
        ),
        ("{ full = \"fail\" }", Pass, Pass, Fail),
    ];
    for (value, trivial, light, full) in cases {
        let text = format!("[spec]\nid = \"s\"\n[policy]\non_review_unavailable = {value}\n");
        let spec = parse_str(&text, Path::new("gate.toml"), Format::Toml).unwrap();
        let got = spec.policy.on_review_unavailable;
        assert_eq!(
            (got.trivial, got.light, got.full),
            (trivial, light, full),
            "{value}"
        );
        // It serialises back to what parses to the same value.
        let back = toml::to_string(&spec).unwrap();
        let again = parse_str(&back, Path::new("gate.toml"), Format::Toml).unwrap();
        assert_eq!(again.policy.on_review_unavailable, got, "{back}");
    }
}

#[test]
fn locate_in_nested_arrays_of_tables() {
    let cases: [(&[gate_specs::Seg], Position, Position); 5] = [
        (
            &key_path!["task", 0, "criterion", 1, "inputs", 0],
            Position {
                line: 35,
                column: 11,
            },
            Position {
                line: 35,
                column: 22,
            },
        ),
        (
            &key_path!["task", 0, "criterion", 1],
            Position {
                line: 31,
                column: 1,
            },
            Position {
                line: 31,
                column: 9,
            },
        ),
        (
            &key_path!["task", 1, "tests", "timeout_s"],
            Position {
                line: 41,
                column: 49,
            },
            Position {
                line: 43,
                column: 57,
            },
        ),
        (
            &key_path!["check", 1, "starts", "ready_tcp"],
            Position {
                line: 16,
                column: 39,
            },
            Position {
                line: 14,
                column: 47,
            },
        ),
        (
            &key_path!["spec", "agent"],
            Position { line: 5, column: 9 },
            Position {
                line: 6,
                column: 14,
            },
        ),
    ];
    let toml = Locator::new(
        &std::fs::read_to_string(fixture("shop.toml")).unwrap(),
        Format::Toml,
    );
    let json = Locator::new(
        &std::fs::read_to_string(fixture("shop.json")).unwrap(),
        Format::Json,
    );
    for (path, in_toml, in_json) in cases {
        assert_eq!(toml.value(path), Some(in_toml), "{path:?}");
        assert_eq!(json.value(path), Some(in_json), "{path:?}");
    }
}

#[test]
fn graphs_of_the_shop() {
    let spec = load(&fixture("shop.toml")).unwrap();
    let tasks = TaskGraph::new(&spec).unwrap();
    assert_eq!(tasks.topological_order(), ["db", "orders"]);
    assert_eq!(tasks.dependents("db"), ["orders"]);
    let checks = CheckGraph::new(&spec).unwrap();
    assert_eq!(
        checks
            .transitive_dependents(["build"])
            .into_iter()
            .collect::<Vec<_>>(),
        ["checkout-page", "server-starts"]
    );
    assert_eq!(
        checks.kind("db.tests"),
        Some(gate_specs::NodeKind::TaskTests)
    );
    // A page waits for the check that serves it.
    assert_eq!(checks.dependencies("checkout-page"), ["server-starts"]);
    assert_eq!(
        checks.kind("checkout-page"),
        Some(gate_specs::NodeKind::Page)
    );
}

#[test]
fn toml_1_1_inline_tables_are_located() {
    // TOML 1.1 lets an inline table span lines.
    let text = "[spec]\nid = \"s\"\n[[check]]\nid = \"a\"\nrun = \"x\"\nstarts = {\n  ready_log = \"up\",\n  within_s = 0,\n}\n";
    let errors = parse_str(text, Path::new("gate.toml"), Format::Toml).unwrap_err();
    let got: Vec<_> = errors.iter().map(|e| (e.line, e.column, &e.kind)).collect();
    assert_eq!(
        got,
        [(
            8,
            14,
            &SpecErrorKind::OutOfRange {
                key: "within_s".into(),
                reason: "must be at least 1".into(),
            }
        )]
    );
}
