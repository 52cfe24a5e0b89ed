//! Review on a server of one's own: the request shaped as the server can
//! take it, a concurrency limit held, and what a server refuses, cuts or
//! fails said plainly. Scripted servers stand in for the shapes; the last
//! test runs a real llama-cpp-python server with a real small model.

use std::time::Duration;

use gate_tests::TestEnv;
use gate_tests::local_model::LocalModel;
use gate_tests::model_server::{Matcher, ModelServer, Reply, Request, SseStep};
use serde_json::{Value, json};

const SMALL_ANSWER: &str = r#"{"findings": [], "criteria": [], "rules": []}"#;

/// A light-tier workspace (three reviewers at once: quality, security,
/// performance) whose routing table sends every role to one model at
/// `base_url` in one route line, the provider set as `settings` says.
fn workspace(base_url: &str, settings: &str, model: &str, class: &str) -> TestEnv {
    let env = TestEnv::new();
    env.write(
        "gate.toml",
        r#"
[spec]
id = "local"
summary = "A cart total"
[[task]]
id = "cart"
title = "The cart"
paths = ["src/**"]
[[task.criterion]]
id = "exists"
text = "the cart module exists"
run = "test -f src/cart.py"
[[task]]
id = "orders"
title = "Orders"
paths = ["src/**"]
after = ["cart"]
[[task.criterion]]
id = "orders-exist"
text = "the orders module exists"
run = "test -f src/orders.py"
"#,
    );
    env.write(
        "routing.toml",
        &format!(
            "[provider.local]\napi = \"openai\"\nbase_url = \"{base_url}\"\n{settings}\n\n\
             [model.m]\nprovider = \"local\"\nname = \"{model}\"\n{class}\n\n\
             [route]\n\"*\" = \"m\"\n"
        ),
    );
    env.write(
        "src/cart.py",
        "def total_cents(items):\n    return sum(int(i['price'] * 100) for i in items)\n",
    );
    env.write(
        "src/orders.py",
        "from src.cart import total_cents\n\ndef order(items):\n    return {'total': total_cents(items)}\n",
    );
    env
}

/// The run's reviewers; a run that asked none fails the test.
fn specialists(doc: &Value) -> Vec<Value> {
    let all = doc["review"]["specialists"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(all.len() >= 3, "the light tier asks three reviewers: {doc}");
    all
}

/// Every attempt's error text of a run, joined.
fn attempt_errors(doc: &Value) -> String {
    specialists(doc)
        .iter()
        .flat_map(|s| s["attempts"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a["error"].as_str().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_server_with_less_than_the_hosted_apis_is_asked_in_its_own_shape_one_at_a_time() {
    let server = ModelServer::start();
    server.default_reply(Reply::openai_text(SMALL_ANSWER).after(Duration::from_millis(300)));
    let env = workspace(
        &format!("{}/v1", server.url()),
        "structured_output = \"json_object\"\ncontent = \"text\"\n\
         max_tokens_field = \"max_tokens\"\nstream_usage = false\nconcurrency = 1",
        "tiny",
        "",
    );
    let out = env.gate(&["verify", "--format", "json"]).run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["review"]["status"], "ran");
    let requests = server.requests();
    assert!(requests.len() >= 3, "the light tier asks three reviewers");
    assert_eq!(server.max_in_flight(), 1, "concurrency = 1 was not held");
    for r in &requests {
        let body = &r.body;
        assert_eq!(body["response_format"], json!({"type": "json_object"}));
        let content = body["messages"][1]["content"].as_str();
        assert!(
            content.is_some_and(|c| c.contains("follows this JSON schema")),
            "the content is one string ending in the schema: {body}"
        );
        assert!(body["max_tokens"].is_u64());
        assert!(body.get("max_completion_tokens").is_none());
        assert!(body.get("stream_options").is_none());
    }
    // One line routed every role: nothing is missing, as `routing show` says.
    let shown = env.gate(&["routing", "show"]).run();
    shown
        .assert_exit(0)
        .stdout_has("security.light           ← *: m (local/tiny)");
}

#[test]
fn a_refused_parameter_names_its_setting_and_never_opens_the_breaker() {
    let server = ModelServer::start();
    // llama-cpp-python's own answer to `response_format: json_schema`.
    server.default_reply(Reply::json(
        500,
        json!({"error": {"message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}", "type": "internal_server_error", "param": null, "code": null}}),
    ));
    let env = workspace(&format!("{}/v1", server.url()), "", "tiny", "");
    for run in 0..3 {
        let out = env.gate(&["verify", "--format", "json"]).run();
        let doc = out.json();
        for s in specialists(&doc) {
            let reason = s["reason"].as_str().unwrap_or_default();
            assert!(
                reason.starts_with(
                    "the server does not take response_format json_schema: set \
                     structured_output = \"json_object\" under [provider.local] (HTTP 500"
                ),
                "run {run}: {reason}"
            );
            assert!(!reason.contains("circuit breaker"), "run {run}: {reason}");
        }
        assert!(
            !attempt_errors(&doc).contains("circuit breaker"),
            "run {run} skipped the model: a refused parameter opened its breaker"
        );
    }
}

#[test]
fn an_open_breaker_says_what_opened_it_and_a_cut_stream_is_a_cut() {
    let server = ModelServer::start();
    server.default_reply(Reply::json(
        503,
        json!({"error": {"message": "Loading model", "type": "unavailable_error", "code": 503}}),
    ));
    let env = workspace(&format!("{}/v1", server.url()), "", "tiny", "");
    // Three reviewers fail at once: the breaker opens.
    env.gate(&["verify", "--format", "json"]).run();
    let out = env.gate(&["verify", "--format", "json"]).run();
    for s in specialists(&out.json()) {
        let reason = s["reason"].as_str().unwrap_or_default();
        assert!(
            reason.starts_with(
                "circuit breaker open on: HTTP 503 from the model provider: unavailable_error: \
                 Loading model (3 of its last 3 calls failed"
            ),
            "{reason}"
        );
    }

    // A stream that ends with `[DONE]` and no finish reason.
    let server = ModelServer::start();
    server.default_reply(Reply::sse(vec![
        SseStep::data(&json!({"id": "c", "object": "chat.completion.chunk", "model": "tiny",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "{\"find"}, "finish_reason": null}]})),
        SseStep::Data("[DONE]".to_owned()),
    ]));
    let env = workspace(&format!("{}/v1", server.url()), "", "tiny", "");
    let out = env.gate(&["verify", "--format", "json"]).run();
    let errors = attempt_errors(&out.json());
    assert!(
        errors.contains("the server ended the stream without finishing the reply"),
        "{errors}"
    );
    assert!(!errors.contains("empty"), "{errors}");
}

/// What llama-cpp-python 0.3.36 does with each part of the default shape:
/// a 500 for `json_schema`; for content parts a stream that ends at once
/// (its chat template fails after the response head).
fn llama_like(r: &Request) -> Reply {
    if r.body["response_format"]["type"] == "json_schema" {
        return Reply::json(
            500,
            json!({"error": {"message": "Input should be 'text' or 'json_object' (response_format.type)", "type": "internal_server_error"}}),
        );
    }
    if r.body["messages"][1]["content"].is_array() {
        return Reply::sse(vec![]);
    }
    Reply::openai_text(SMALL_ANSWER).usage(json!({"prompt_tokens": 60, "completion_tokens": 12}))
}

#[test]
fn doctor_probes_only_when_asked_and_names_each_refusal_with_its_fix() {
    let server = ModelServer::start();
    server.default_reply(Reply::computed(llama_like));
    server.script(
        Matcher::any().path("/v1/models"),
        vec![Reply::json(
            200,
            json!({"object": "list", "data": [{"id": "tiny", "object": "model"}]}),
        )],
    );
    let env = workspace(&format!("{}/v1", server.url()), "", "tiny", "");
    env.write(
        "routing.toml",
        &format!(
            "{}\n[model.ghost]\nprovider = \"local\"\nname = \"not-served\"\n",
            env.read("routing.toml")
        ),
    );

    // Without --probe: the list is read, no request is sent, and it says so.
    let plain = env.gate(&["doctor", "--format", "json"]).run();
    let doc = plain.json();
    let check = |name: &str| check_named(&doc, name);
    assert!(
        check("probe")["message"]
            .as_str()
            .unwrap()
            .contains("no model request was tried")
    );
    let provider = check("provider.local");
    assert_eq!(provider["level"], "warning");
    assert!(
        provider["message"]
            .as_str()
            .unwrap()
            .contains("but not `not-served`")
    );
    assert!(
        !server
            .requests()
            .iter()
            .any(|r| r.path.ends_with("/chat/completions")),
        "doctor sent a model request without --probe"
    );

    let probed = env.gate(&["doctor", "--probe", "--format", "json"]).run();
    probed.assert_exit(1);
    let doc = probed.json();
    let tiny = check_named(&doc, "probe.local/tiny");
    assert_eq!(tiny["level"], "error");
    let message = tiny["message"].as_str().unwrap();
    assert!(
        message.contains("does not take response_format json_schema"),
        "{message}"
    );
    assert!(
        message.contains("does not take content as an array of parts"),
        "{message}"
    );
    assert_eq!(
        tiny["fix"],
        "under [provider.local] set structured_output = \"json_object\", content = \"text\""
    );
    // Every probe request asked for a few tokens only.
    for r in server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
    {
        assert_eq!(r.body["max_completion_tokens"], 16, "{}", r.body);
    }

    // With the settings it named, the probe passes.
    env.write(
        "routing.toml",
        &env.read("routing.toml").replace(
            "base_url",
            "structured_output = \"json_object\"\ncontent = \"text\"\nbase_url",
        ),
    );
    let fixed = env.gate(&["doctor", "--probe", "--format", "json"]).run();
    let doc = fixed.json();
    let tiny = check_named(&doc, "probe.local/tiny");
    assert_eq!(tiny["level"], "ok", "{tiny}");
}

/// `gate doctor --format json`'s check called `name`.
fn check_named(doc: &Value, name: &str) -> Value {
    doc["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["check"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no {name} check in {doc}"))
}

/// The settings docs/model-review.md gives for llama-cpp-python.
const LLAMA_CPP_PYTHON: &str = "structured_output = \"json_object\"\ncontent = \"text\"\n\
                                max_tokens_field = \"max_tokens\"\nconcurrency = 1";

#[test]
fn a_real_llama_cpp_python_server_reviews_with_the_documented_settings() {
    let model = LocalModel::start();
    let url = model.base_url();

    // The defaults: the probe names both things this server cannot take.
    let env = workspace(&url, "", &model.name(), "stream = false");
    let probed = env
        .gate(&["doctor", "--probe"])
        .timeout(Duration::from_secs(300))
        .run();
    probed
        .assert_exit(1)
        .stdout_has("does not take response_format json_schema")
        .stdout_has("does not take content as an array of parts")
        .stdout_has("fix: under [provider.local] set structured_output = \"json_object\", content = \"text\"");

    // The documented settings: every request is taken, usage recorded, one
    // at a time; what the tiny model answers is used or refused, never a
    // finding made up from a malformed reply.
    let env = workspace(
        &url,
        LLAMA_CPP_PYTHON,
        &model.name(),
        "stream = false\nmax_output_tokens = 512",
    );
    let out = env
        .gate(&["verify", "--format", "json"])
        .timeout(Duration::from_secs(600))
        .run();
    let doc = out.json();
    let errors = attempt_errors(&doc);
    assert!(!errors.contains("HTTP "), "a request was refused: {errors}");
    assert!(
        !errors.contains("ended the stream"),
        "a stream was cut: {errors}"
    );
    for s in specialists(&doc) {
        assert!(
            s["input_tokens"].as_u64().is_some_and(|t| t > 0),
            "usage not recorded: {s}"
        );
        let reason = s["reason"].as_str().unwrap_or_default();
        // A tiny model's answer is used, or refused as malformed or as cut
        // at the output limit; never a request the server refused.
        assert!(
            s["status"] == "ok"
                || reason.starts_with("malformed output")
                || reason.starts_with("the reply was cut off at the output limit"),
            "{s}"
        );
    }

    // That run replayed against the same server from its kept request alone
    // (the workspace's change gone): every request taken, usage counted,
    // and the replay a signed bundle of its own.
    std::fs::remove_file(env.path().join("src/orders.py")).unwrap();
    let out = env
        .gate(&["replay", "--routing", "routing.toml", "--format", "json"])
        .timeout(Duration::from_secs(600))
        .run();
    out.assert_exit(0);
    let replay = out.json();
    let runs = replay["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{replay}");
    assert!(
        replay["candidate"]["tokens"]["input"]
            .as_u64()
            .is_some_and(|t| t > 0),
        "{replay}"
    );
    assert_eq!(
        replay["candidate"]["failures"]["refusals"], 0,
        "a request was refused: {replay}"
    );
    env.gate(&["evidence", "verify", replay["bundle"].as_str().unwrap()])
        .run()
        .assert_exit(0)
        .stdout_has("signature: ok");

    // Streamed with no limit, three requests at once: the server cuts a
    // stream when another request waits, and the gate says it was cut.
    // Whether the requests overlap is the server's timing: two tries.
    let env = workspace(
        &url,
        "structured_output = \"json_object\"\ncontent = \"text\"\nmax_tokens_field = \"max_tokens\"",
        &model.name(),
        "max_output_tokens = 512",
    );
    let mut seen = Vec::new();
    for _ in 0..2 {
        let out = env
            .gate(&["verify", "--format", "json", "--new-series"])
            .timeout(Duration::from_secs(600))
            .run();
        let errors = attempt_errors(&out.json());
        assert!(!errors.contains("the reply is empty"), "{errors}");
        if errors.contains("the server ended the stream without finishing the reply") {
            return;
        }
        seen.push(errors);
    }
    panic!("no stream was cut in two tries, or a cut was not said: {seen:#?}");
}
