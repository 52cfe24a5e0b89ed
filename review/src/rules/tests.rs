//! The rules reviewer and rule tests against the scripted model server
//! (real HTTP on loopback).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use gate_tests::house_rules::{answer, routing_toml, rules_request, workspace};
use gate_tests::model_server::{Matcher, ModelServer};

use crate::findings::finding_id;
use crate::review::context::{Fence, read_change};
use crate::review::house_rules::{self, Asked};
use crate::review::prompts::Prompts;
use crate::review::{self, ReviewInput, call};
use crate::routing::{Origin, Routing};
use crate::rules::{RuleSet, discover};
use crate::tier::{Tier, TierDecision};

/// The rules seat: one request, one question per judged rule that applies,
/// prefixed with its scope; mistakes flipped; the threshold; worst first;
/// fix and reference in the finding.
#[tokio::test]
async fn the_rules_reviewer_asks_once_and_scores_compliance() {
    let dir = workspace();
    let ws = dir.path();
    let server = ModelServer::start();
    server.script(Matcher::any().role("quality"), vec![answer(&[])]);
    server.script(
        Matcher::any().role("rules"),
        vec![answer(&[
            (
                "errors-bubble-up",
                0.9,
                "src/lookup.rs:1 returns None on error",
            ),
            ("no-product-branch", 0.3, "handler.rs branches on acme"),
            ("no-unwrap", 0.1, "no unwrap"),
            ("at-threshold", 0.8, "mostly documented"),
            ("just-below", 0.79, "one println"),
        ])],
    );
    let routing = Routing {
        table: gate_specs::from_toml_str(&routing_toml(&server), Path::new("routing.toml"))
            .unwrap(),
        origin: Origin::File("routing.toml".into()),
        overridden: Vec::new(),
    };
    let keys = BTreeMap::from([("local".to_owned(), None)]);
    let clients = call::clients(&routing, &keys, Duration::from_secs(2)).unwrap();
    let spec = gate_specs::parse_str(
        "[spec]\nid = \"s\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\", \"services/**\"]\n",
        Path::new("gate.toml"),
        gate_specs::Format::Toml,
    )
    .unwrap();
    let changed = vec![
        "services/api/src/handler.rs".to_owned(),
        "src/lookup.rs".to_owned(),
    ];
    let change = read_change(ws, &changed, &std::collections::BTreeMap::new());
    let set = RuleSet::load(ws, &discover::all(ws, None)).unwrap();
    let asked = house_rules::asked(&set, &changed);
    let keys: Vec<&str> = asked.iter().map(|a| a.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "errors-bubble-up",
            "no-unwrap",
            "at-threshold",
            "just-below",
            "no-product-branch"
        ]
    );
    let references = read_change(
        ws,
        &house_rules::references(&asked),
        &std::collections::BTreeMap::new(),
    );
    let fence = Fence::with_nonce("n0nce");
    let tier = TierDecision {
        tier: Tier::Trivial,
        reason: "1 task × 0 criteria".into(),
    };
    let prompts = Prompts::builtin();
    let policy = gate_specs::Policy::default();
    let out = review::run(&ReviewInput {
        run_id: "run-1",
        spec: &spec,
        tier: &tier,
        change: &change,
        judged: &[],
        judge_files: &[],
        rules: &asked,
        pages: &[],
        rule_references: &references,
        code_criteria: &[],
        routing: &routing,
        prompts: &prompts,
        clients: &clients,
        policy: &policy,
        fence: &fence,
        carried: &std::collections::BTreeMap::new(),
        earlier: &[],
        breakers: &crate::review::breaker::Breakers::in_memory(
            crate::review::breaker::BreakerPolicy::with_cooldown(120),
        ),
        slots: None,
        watch: &crate::review::watch::Watch::default(),
        events: &crate::events::EventSink::discard(),
    })
    .await;

    let requests = rules_request(&server);
    assert_eq!(requests.len(), 1, "one request for every rule");
    let text = requests[0].text();
    for (id, question) in [
        (
            "errors-bubble-up",
            "In **/*.rs: The change catches an error and returns None",
        ),
        (
            "no-unwrap",
            "In the whole workspace: The change calls unwrap",
        ),
        (
            "no-product-branch",
            "In services/api/**: Shared code has no branch on a product name",
        ),
    ] {
        assert!(
            text.contains(&format!("- id `{id}`: {question}")),
            "{id} in {text}"
        );
    }
    assert_eq!(text.matches("- id `").count(), 5, "{text}");
    assert!(
        !text.contains("guide-only"),
        "guide entries are never asked"
    );
    assert!(
        !text.contains("docs-current"),
        "it applies to no changed file"
    );
    // References travel fenced, with their contents.
    assert!(text.contains(
        "<<<gate-data-n0nce file=\"src/retry.rs\">>>\nfn retry() -> Result<(), E> { op()? }\n<<<end-gate-data-n0nce>>>"
    ));
    assert!(text.contains("file=\"services/api/src/good.rs\""));
    // The files the rules apply to are the code remit: the same bytes as
    // the code reviewer's, for the providers' prefix caches.
    let code_block = "## Code\n<<<gate-data-n0nce file=\"services/api/src/handler.rs\">>>";
    assert!(text.contains(code_block));
    let quality = server
        .requests()
        .into_iter()
        .find(|r| r.header("x-gate-role") == Some("quality"))
        .unwrap();
    assert!(quality.text().contains(code_block));

    let rules_seat: Vec<_> = out
        .record
        .specialists
        .iter()
        .filter(|s| s.role == "rules")
        .collect();
    assert_eq!(rules_seat.len(), 1);
    assert_eq!(rules_seat[0].status, "ok");
    assert!(
        rules_seat[0]
            .coverage
            .files
            .contains(&"src/retry.rs".to_owned())
    );

    let got: Vec<(&str, &str, &str)> = out
        .findings
        .iter()
        .map(|f| (f.severity.as_str(), f.role.as_str(), f.file.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("critical", "rules", "services/api/src/handler.rs"),
            ("warning", "rules", "src/lookup.rs"),
            ("suggestion", "rules", "services/api/src/handler.rs"),
        ]
    );
    let [critical, warning, suggestion] = &out.findings[..] else {
        unreachable!()
    };
    assert!(critical.title.contains("no-product-branch"));
    assert!(
        critical
            .detail
            .contains("compliance 0.30, below the rule threshold 0.80")
    );
    assert!(
        critical
            .detail
            .contains("fix: Move the product-specific part behind a trait")
    );
    assert!(
        critical
            .detail
            .contains("reference: services/api/src/good.rs")
    );
    // The mistake's 0.9 reads as compliance 0.10.
    assert!(warning.title.contains("errors-bubble-up"));
    assert!(warning.detail.contains("compliance 0.10"));
    assert!((warning.confidence - 0.9).abs() < 1e-9);
    assert!(warning.detail.contains("reference: src/retry.rs"));
    assert_eq!(
        warning.id,
        finding_id("rules", &warning.file, &warning.title)
    );
    assert!(suggestion.title.contains("just-below"));
}

#[test]
fn questions_split_only_past_the_limits() {
    let rule = |i: usize| {
        format!(
            "[[rule]]\nid = \"r{i}\"\nstatement = \"claim {i}\"\nfix = \"f\"\ncases.violating = [{{ file = \"a\", diff = \"b\" }}]\ncases.compliant = [{{ file = \"a\", diff = \"c\" }}]\n"
        )
    };
    let text: String = (0..=house_rules::MAX_QUESTIONS).map(rule).collect();
    let set = RuleSet::from_files(vec![(
        "docs/review/rules.toml".to_owned(),
        text.into_bytes(),
    )])
    .unwrap();
    let asked = house_rules::asked(&set, &["src/a.rs".to_owned()]);
    let sizes: Vec<usize> = house_rules::chunks(&asked)
        .iter()
        .map(|c| c.len())
        .collect();
    assert_eq!(sizes, [house_rules::MAX_QUESTIONS, 1]);
    assert_eq!(house_rules::chunks(&asked[..3]).len(), 1);
    assert!(house_rules::chunks(&[]).is_empty());
    // Siblings sharing an id are asked under keys that tell them apart.
    let set = RuleSet::from_files(vec![
        ("a/docs/review/rules.toml".to_owned(), rule(1).into_bytes()),
        ("b/docs/review/rules.toml".to_owned(), rule(1).into_bytes()),
    ])
    .unwrap();
    let asked: Vec<Asked> = house_rules::asked(&set, &["a/x.rs".to_owned(), "b/y.rs".to_owned()]);
    let keys: Vec<&str> = asked.iter().map(|a| a.key.as_str()).collect();
    assert_eq!(keys, ["r1@a", "r1@b"]);
}
