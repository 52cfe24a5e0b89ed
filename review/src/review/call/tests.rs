//! One reviewer's call over a scripted model server on loopback: Retry-After,
//! circuit breakers, misconfiguration, truncation and repair.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use gate_tests::model_server::{Matcher, ModelServer, Reply};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::*;
use crate::review::breaker::{BreakerPolicy, Breakers};
use crate::review::watch::Watch;
use crate::role::Role;
use crate::routing::{Origin, Routing};
use crate::tier::Tier;

const PRIMARY: &str = "m-primary";
const FALLBACK: &str = "m-fallback";

fn empty_answer() -> Value {
    json!({"findings": [], "criteria": [], "rules": []})
}

/// A table whose quality.trivial chain is primary → fallback, both on `server`.
fn routing(server: &ModelServer) -> Routing {
    let text = format!(
        r#"
[provider.local]
api = "openai"
base_url = "{}/v1"
[model.primary]
provider = "local"
name = "{PRIMARY}"
fallback = ["fallback"]
[model.fallback]
provider = "local"
name = "{FALLBACK}"
[route]
"quality.trivial" = "primary"
"#,
        server.url()
    );
    Routing {
        table: gate_specs::from_toml_str(&text, Path::new("routing.toml")).unwrap(),
        origin: Origin::File("routing.toml".into()),
        overridden: Vec::new(),
    }
}

struct Rig {
    server: ModelServer,
    clients: Clients,
    plan_chain: Vec<ChainModel>,
    breakers: Breakers,
    watch: Watch,
}

impl Rig {
    fn new() -> Self {
        let server = ModelServer::start();
        let routing = routing(&server);
        let keys = BTreeMap::from([("local".to_owned(), None)]);
        let clients = clients(&routing, &keys, Duration::from_secs(2)).unwrap();
        Self {
            plan_chain: routing.chain(Role::Quality, Tier::Trivial),
            server,
            clients,
            breakers: Breakers::in_memory(BreakerPolicy::with_cooldown(120)),
            watch: Watch::default(),
        }
    }

    fn plan(&self, budget: Duration) -> CallPlan {
        CallPlan {
            role: "quality".into(),
            run_id: "run-1".into(),
            chain: self.plan_chain.clone(),
            connect: Duration::from_secs(2),
            inactivity: Duration::from_secs(2),
            deadline: Instant::now() + budget,
            min_attempt: Duration::from_secs(1),
            expect: crate::review::answer::Expect::Review,
            budget: crate::review::budget::Budget::unlimited(),
            slots: crate::review::slots::Slots::default(),
            held: None,
        }
    }

    async fn ask(&self, budget: Duration) -> CallResult {
        self.ask_with(&self.plan(budget)).await
    }

    async fn ask_with(&self, plan: &CallPlan) -> CallResult {
        let live = self.watch.start("quality");
        ask(
            plan,
            &self.clients,
            &[Block::new("review this")],
            &self.breakers,
            &live,
        )
        .await
    }

    fn requests_to(&self, model: &str) -> Vec<Value> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.body.get("model").and_then(Value::as_str) == Some(model))
            .map(|r| r.body)
            .collect()
    }
}

fn outcomes(result: &CallResult) -> Vec<(String, AttemptOutcome)> {
    result
        .attempts
        .iter()
        .map(|a| (a.model.clone(), a.outcome))
        .collect()
}

fn o(model: &str, outcome: AttemptOutcome) -> (String, AttemptOutcome) {
    (model.to_owned(), outcome)
}

#[test]
fn retry_after_waits_only_when_it_fits() {
    let s = Duration::from_secs;
    let cases = [
        // retry_after, left, min_attempt, waited already → decision
        (None, s(300), s(120), false, AfterRetryable::MoveOn),
        (
            Some(s(5)),
            s(300),
            s(120),
            false,
            AfterRetryable::Wait(s(5)),
        ),
        (
            Some(s(0)),
            s(300),
            s(120),
            false,
            AfterRetryable::Wait(s(0)),
        ),
        (
            Some(s(180)),
            s(300),
            s(120),
            false,
            AfterRetryable::Wait(s(180)),
        ),
        (Some(s(181)), s(300), s(120), false, AfterRetryable::MoveOn),
        (Some(s(5)), s(300), s(120), true, AfterRetryable::MoveOn),
        (Some(s(5)), s(100), s(120), false, AfterRetryable::MoveOn),
        (
            Some(Duration::MAX),
            s(300),
            s(120),
            false,
            AfterRetryable::MoveOn,
        ),
    ];
    for (retry_after, left, min, waited, want) in cases {
        assert_eq!(
            after_retryable(retry_after, left, min, waited),
            want,
            "{retry_after:?} {left:?} {min:?} {waited}"
        );
    }
    // The minimum attempt shrinks with a small budget, never grows.
    assert_eq!(min_attempt(s(120), s(300)), s(120));
    assert_eq!(min_attempt(s(120), s(1500)), s(120));
    assert_eq!(min_attempt(s(120), s(10)), s(4));
    assert_eq!(min_attempt(s(1), s(10)), s(1));
}

#[tokio::test]
async fn a_retry_after_that_fits_is_waited_out_on_the_same_model() {
    let rig = Rig::new();
    rig.server.script(
        Matcher::any().model(PRIMARY),
        vec![
            Reply::openai_error(429, "requests", "rate_limit_exceeded", "slow down")
                .retry_after("1"),
            Reply::openai(&empty_answer()),
        ],
    );
    let started = Instant::now();
    let result = rig.ask(Duration::from_secs(10)).await;
    let took = started.elapsed();
    assert!(result.answer.is_ok(), "{result:?}");
    assert_eq!(
        outcomes(&result),
        [
            o(PRIMARY, AttemptOutcome::Retryable),
            o(PRIMARY, AttemptOutcome::Ok)
        ]
    );
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert!(rig.requests_to(FALLBACK).is_empty());
}

#[tokio::test]
async fn a_retry_after_longer_than_the_time_left_moves_on_at_once() {
    let rig = Rig::new();
    rig.server
        .script(
            Matcher::any().model(PRIMARY),
            vec![
                Reply::openai_error(429, "requests", "rate_limit_exceeded", "slow down")
                    .retry_after("30"),
            ],
        )
        .script(
            Matcher::any().model(FALLBACK),
            vec![Reply::openai(&empty_answer())],
        );
    let started = Instant::now();
    let result = rig.ask(Duration::from_secs(10)).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        outcomes(&result),
        [
            o(PRIMARY, AttemptOutcome::Retryable),
            o(FALLBACK, AttemptOutcome::Ok)
        ]
    );
    assert_eq!(result.model, FALLBACK);
}

#[tokio::test]
async fn an_open_breaker_skips_its_model_without_a_request() {
    let rig = Rig::new();
    rig.server
        .script(
            Matcher::any().model(PRIMARY),
            vec![Reply::openai_error(503, "server_error", "", "overloaded")],
        )
        .script(
            Matcher::any().model(FALLBACK),
            vec![Reply::openai(&empty_answer())],
        );
    for _ in 0..3 {
        let result = rig.ask(Duration::from_secs(10)).await;
        assert_eq!(
            outcomes(&result),
            [
                o(PRIMARY, AttemptOutcome::Retryable),
                o(FALLBACK, AttemptOutcome::Ok)
            ]
        );
    }
    let started = Instant::now();
    let result = rig.ask(Duration::from_secs(10)).await;
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(
        outcomes(&result),
        [
            o(PRIMARY, AttemptOutcome::BreakerOpen),
            o(FALLBACK, AttemptOutcome::Ok)
        ]
    );
    assert!(
        result.attempts[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("circuit breaker open")),
        "{:?}",
        result.attempts[0]
    );
    assert_eq!(result.attempts[0].latency_ms, 0);
    assert_eq!(rig.requests_to(PRIMARY).len(), 3);
}

#[tokio::test]
async fn an_auth_error_stops_the_chain_and_marks_the_model_for_the_run() {
    let rig = Rig::new();
    rig.server
        .script(
            Matcher::any().model(PRIMARY),
            vec![Reply::openai_error(
                401,
                "invalid_request_error",
                "invalid_api_key",
                "Incorrect API key",
            )],
        )
        .script(
            Matcher::any().model(FALLBACK),
            vec![Reply::openai(&empty_answer())],
        );
    let first = rig.ask(Duration::from_secs(10)).await;
    assert_eq!(outcomes(&first), [o(PRIMARY, AttemptOutcome::Fatal)]);
    assert!(first.answer.as_ref().is_err_and(|e| e.contains("401")));
    let second = rig.ask(Duration::from_secs(10)).await;
    assert_eq!(outcomes(&second), [o(PRIMARY, AttemptOutcome::Fatal)]);
    assert!(
        second
            .answer
            .as_ref()
            .is_err_and(|e| e.contains("misconfigured earlier in this run")),
        "{:?}",
        second.answer
    );
    assert_eq!(
        rig.requests_to(PRIMARY).len(),
        1,
        "the second call sent a request"
    );
    assert!(rig.requests_to(FALLBACK).is_empty());
    // Auth errors say nothing about the model's health.
    assert!(!rig.breakers.is_open(&format!("local/{PRIMARY}")).await);
}

#[tokio::test]
async fn a_budget_error_spares_the_breakers_and_every_model_on_its_account() {
    let rig = Rig::new();
    let words = "Budget has been exceeded! Current cost: 5.02, Max budget: 5.0";
    rig.server
        .script(
            Matcher::any().model(PRIMARY),
            vec![Reply::litellm_budget(429, words)],
        )
        .script(
            Matcher::any().model(FALLBACK),
            vec![Reply::openai(&empty_answer())],
        );
    let first = rig.ask(Duration::from_secs(10)).await;
    // The fallback is on the same endpoint and key: not asked.
    assert_eq!(
        outcomes(&first),
        [
            o(PRIMARY, AttemptOutcome::Fatal),
            o(FALLBACK, AttemptOutcome::Fatal)
        ]
    );
    let why = first.answer.as_ref().expect_err("no answer");
    assert!(
        why.starts_with(
            "HTTP 429 from the model provider: budget_exceeded: Budget has been exceeded!"
        ),
        "{why}"
    );
    assert!(rig.requests_to(FALLBACK).is_empty());
    // A later call of the run asks nobody on that account, and keeps the words.
    let second = rig.ask(Duration::from_secs(10)).await;
    assert!(
        second.answer.as_ref().is_err_and(|e| e.contains(words)),
        "{:?}",
        second.answer
    );
    assert_eq!(rig.requests_to(PRIMARY).len(), 1);
    for model in [PRIMARY, FALLBACK] {
        assert!(!rig.breakers.is_open(&format!("local/{model}")).await);
    }
}

#[test]
fn an_account_is_an_endpoint_origin_and_a_key_variable() {
    let step = |base_url: &str, key: Option<&str>| {
        let mut step = Rig::new().plan_chain[0].clone();
        step.provider.base_url = base_url.to_owned();
        step.provider.api_key_env = key.map(str::to_owned);
        account_key(&step)
    };
    let litellm = step("http://litellm:4000/v1", Some("LITELLM_KEY"));
    assert_eq!(
        litellm,
        step("http://litellm:4000/anthropic", Some("LITELLM_KEY"))
    );
    assert_ne!(litellm, step("http://litellm:4000/v1", Some("OTHER_KEY")));
    assert_ne!(litellm, step("http://litellm:4001/v1", Some("LITELLM_KEY")));
}

#[tokio::test]
async fn truncation_doubles_the_limit_once_and_malformed_output_gets_one_repair() {
    let token_limit = |body: &Value| {
        body.get("max_completion_tokens")
            .or_else(|| body.get("max_tokens"))
            .and_then(Value::as_u64)
    };
    let rig = Rig::new();
    rig.server.script(
        Matcher::any().model(PRIMARY),
        vec![
            Reply::openai(&empty_answer()).finish("length"),
            Reply::openai(&empty_answer()),
        ],
    );
    let result = rig.ask(Duration::from_secs(10)).await;
    assert!(result.answer.is_ok(), "{result:?}");
    let sent = rig.requests_to(PRIMARY);
    assert_eq!(sent.len(), 2);
    let (first, second) = (
        token_limit(&sent[0]).unwrap(),
        token_limit(&sent[1]).unwrap(),
    );
    assert_eq!(second, first * 2);

    // Still malformed after its one repair: that model's failure; the
    // chain moves on to the next, and the breaker is not told of an outage.
    let rig = Rig::new();
    rig.server
        .script(
            Matcher::any().model(PRIMARY),
            vec![Reply::openai_text("Sure! Here is my review:")],
        )
        .script(
            Matcher::any().model(FALLBACK),
            vec![Reply::openai(&empty_answer())],
        );
    let result = rig.ask(Duration::from_secs(10)).await;
    assert_eq!(
        outcomes(&result),
        [
            o(PRIMARY, AttemptOutcome::Malformed),
            o(FALLBACK, AttemptOutcome::Ok)
        ]
    );
    assert!(result.answer.is_ok(), "{:?}", result.answer);
    assert_eq!(rig.requests_to(PRIMARY).len(), 2);
    assert_eq!(rig.requests_to(FALLBACK).len(), 1);
    assert!(!rig.breakers.is_open(&format!("local/{PRIMARY}")).await);
}

#[tokio::test]
async fn no_attempt_starts_without_its_minimum_time() {
    let rig = Rig::new();
    rig.server
        .script(Matcher::any().model(PRIMARY), vec![Reply::hang()])
        .script(
            Matcher::any().model(FALLBACK),
            vec![Reply::openai(&empty_answer())],
        );
    // A 3 s budget: the primary hangs for its 2.5 s inactivity bound, which
    // leaves less than the fallback's minimum attempt (1 s).
    let mut plan = rig.plan(Duration::from_secs(3));
    plan.inactivity = Duration::from_millis(2500);
    let started = Instant::now();
    let result = rig.ask_with(&plan).await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(2500) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert_eq!(outcomes(&result), [o(PRIMARY, AttemptOutcome::Retryable)]);
    assert!(
        result
            .answer
            .as_ref()
            .is_err_and(|e| e.contains("out of time")),
        "{:?}",
        result.answer
    );
    assert!(rig.requests_to(FALLBACK).is_empty());
}

/// The run's budget, request by request: a request it cannot hold is not
/// sent; a repair it cannot hold ends that model's attempt, and the next
/// model's request, which it cannot hold either, ends the call.
#[tokio::test]
async fn a_request_the_budget_cannot_hold_is_not_sent() {
    let rig = Rig::new();
    rig.server.default_reply(Reply::openai_text("not json"));
    let blocks = [Block::new("review this")];
    let one = crate::provider::estimated_input_tokens(&blocks, &Expect::Review.schema(), &[]);
    // (budget, requests sent, outcomes)
    let cases = [
        (one - 1, 0, vec![o(PRIMARY, AttemptOutcome::OverBudget)]),
        (
            one + one / 2,
            1,
            vec![
                o(PRIMARY, AttemptOutcome::Malformed),
                o(FALLBACK, AttemptOutcome::OverBudget),
            ],
        ),
    ];
    let mut seen = 0;
    for (limit, sent, want) in cases {
        let mut plan = rig.plan(Duration::from_secs(10));
        plan.budget = Budget::new(limit);
        let result = rig.ask_with(&plan).await;
        assert_eq!(outcomes(&result), want, "budget {limit}");
        let why = result.answer.unwrap_err();
        assert!(why.starts_with("over budget"), "{why}");
        seen += sent;
        assert_eq!(rig.server.requests().len(), seen, "budget {limit}");
        // What was sent is what the budget counts: the usage reported.
        assert_eq!(plan.budget.sent(), 1200 * sent as u64);
    }
}
