//! `gate rules test` and model qualification against the scripted model
//! server (real HTTP on loopback).

use std::path::Path;

use gate_review::rules::{RuleSet, discover};
use gate_review::tier::Tier;
use gate_tests::house_rules::{ROOT_RULES, answer, routing_toml, rules_request, workspace, write};
use gate_tests::model_server::{Matcher, ModelServer};

use crate::cli::{RoutingArgs, RulesTestArgs};
use crate::config::Context;

fn context(ws: &Path) -> Context {
    Context::quiet(ws.canonicalize().unwrap())
}

/// Scripts each case's answer by its diff: `(diff text, model, p)`.
fn script_cases(server: &ModelServer, id: &str, cases: &[(&str, &str, f64)]) {
    for (diff, model, p) in cases {
        server.script(
            Matcher::any()
                .role("rules")
                .model(model)
                .body_contains(diff)
                .body_contains(&format!("- id `{id}`")),
            vec![answer(&[(id, *p, "scripted")])],
        );
    }
}

#[tokio::test]
async fn rule_tests_compute_margins_and_write_them_back() {
    let dir = workspace();
    let ws = dir.path();
    let server = ModelServer::start();
    write(ws, "routing.toml", &routing_toml(&server));
    // errors-bubble-up (a mistake): violating p 0.9 → 0.10, compliant p 0.05 → 0.95.
    script_cases(
        &server,
        "errors-bubble-up",
        &[
            ("return None,", "good-model", 0.9),
            ("LookupError::from", "good-model", 0.05),
        ],
    );
    // no-product-branch (a statement): 0.2 and 0.6 → margin 0.4, below 0.5.
    script_cases(
        &server,
        "no-product-branch",
        &[
            ("product == ", "good-model", 0.2),
            ("registry.get", "good-model", 0.6),
        ],
    );
    let ctx = context(ws);
    let args = |rule: &str| RulesTestArgs {
        rule: Some(rule.to_owned()),
        tier: Tier::Full,
        routing: RoutingArgs {
            routing: None,
            spec: None,
        },
    };
    let before = std::fs::read_to_string(ws.join("docs/review/rules.toml")).unwrap();
    let (report, code) = crate::commands::rules::test_report(&ctx, &args("errors-bubble-up"))
        .await
        .unwrap();
    assert!(report.contains("errors-bubble-up (docs/review/rules.toml): pass  margin 0.85"));
    assert_eq!(code, crate::exit::PASS);
    // Every case on its own: two requests, one question each.
    let requests = rules_request(&server);
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.text().matches("- id `").count(), 1);
    }
    let after = std::fs::read_to_string(ws.join("docs/review/rules.toml")).unwrap();
    let set = RuleSet::load(ws, &discover::all(ws, None)).unwrap();
    let rule = set.with_id("errors-bubble-up")[0];
    let tested = rule.tested.clone().unwrap();
    assert!((tested.margin - 0.85).abs() < 1e-9, "{tested:?}");
    assert_eq!(tested.model, "good-model");
    assert_eq!(tested.hash, rule.hash());
    // Only the one line was added.
    let added: Vec<&str> = after
        .lines()
        .filter(|l| !before.lines().any(|b| b == *l))
        .collect();
    assert_eq!(added.len(), 1);
    assert!(added[0].starts_with("tested = { margin = 0.85, model = \"good-model\""));
    assert_eq!(after.replace(&format!("{}\n", added[0]), ""), before);

    // A tested rule passes the check; the untested ones do not.
    let files = discover::workspace_files(ws, None);
    let problems = crate::commands::rules::problems(&set, &files, 15);
    assert!(
        !problems.iter().any(|p| p.contains("errors-bubble-up")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains("`no-unwrap` never tested"))
    );

    // A rule whose cases are not separated fails and is recorded as such.
    let (_, code) = crate::commands::rules::test_report(&ctx, &args("no-product-branch"))
        .await
        .unwrap();
    assert_eq!(code, crate::exit::FAIL);
    let set = RuleSet::load(ws, &discover::all(ws, None)).unwrap();
    let rule = set.with_id("no-product-branch")[0];
    assert!((rule.tested.as_ref().unwrap().margin - 0.4).abs() < 1e-9);
    let problems = crate::commands::rules::problems(&set, &files, 15);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("`no-product-branch` its last test scored a margin of 0.40"))
    );

    // Editing the wording without retesting fails the check.
    let edited = after.replace(
        "returns None instead of letting it propagate",
        "returns None or a default",
    );
    write(ws, "docs/review/rules.toml", &edited);
    let set = RuleSet::load(ws, &discover::all(ws, None)).unwrap();
    let problems = crate::commands::rules::problems(&set, &files, 15);
    assert!(
        problems.iter().any(|p| p.starts_with(
            "docs/review/rules.toml:3:1: rule `errors-bubble-up` its wording or cases changed"
        )),
        "{problems:?}"
    );

    // A reference that is not there is reported too.
    std::fs::remove_file(ws.join("src/retry.rs")).unwrap();
    let files = discover::workspace_files(ws, None);
    let problems = crate::commands::rules::problems(&set, &files, 15);
    assert!(problems.iter().any(|p| p.contains(
        "rule `errors-bubble-up` names reference `src/retry.rs`, which is not a file of the workspace"
    )));
}

#[tokio::test]
async fn qualification_flags_a_model_that_does_not_separate_the_cases() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let server = ModelServer::start();
    write(ws, "routing.toml", &routing_toml(&server));
    write(
        ws,
        "docs/review/rules.toml",
        &ROOT_RULES[..ROOT_RULES.find("[[rule]]\nid = \"guide-only\"").unwrap()],
    );
    script_cases(
        &server,
        "errors-bubble-up",
        &[
            ("return None,", "good-model", 0.95),
            ("LookupError::from", "good-model", 0.1),
            // The failback model scores both kinds alike.
            ("return None,", "bad-model", 0.5),
            ("LookupError::from", "bad-model", 0.45),
        ],
    );
    let ctx = context(ws);
    let args = RoutingArgs {
        routing: None,
        spec: None,
    };
    let routing = crate::commands::routing_table(&ctx, &args).unwrap();
    let models: Vec<String> = crate::commands::rules::rules_models(&routing)
        .into_iter()
        .map(|(m, _, _)| m)
        .collect();
    assert_eq!(models, ["local/good-model", "local/bad-model"]);
    let (results, rules) = crate::commands::rules::qualify(&ctx, &routing, &args)
        .await
        .unwrap();
    assert_eq!(rules, 1);
    let good = &results[0];
    assert!(good.qualified(), "{good:?}");
    assert_eq!(good.lowest, Some(("errors-bubble-up".to_owned(), 0.85)));
    let bad = &results[1];
    assert!(!bad.qualified());
    assert_eq!(bad.below, [("errors-bubble-up".to_owned(), 0.05)]);
    // Each model was asked on its own, never through the other.
    for r in rules_request(&server) {
        assert!(matches!(
            r.body["model"].as_str(),
            Some("good-model" | "bad-model")
        ));
    }
    assert_eq!(rules_request(&server).len(), 4);
}
