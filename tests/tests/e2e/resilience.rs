//! Review that survives its providers: the real `gate` binary against a
//! fault-injecting model server on loopback. Every run has its own time
//! bound; none can hang the suite.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use gate_tests::model_server::{Matcher, ModelServer, Reply, SseStep, routes_to};
use gate_tests::{RunOutput, TestEnv, free_port};
use serde_json::{Value, json};

const PRIMARY: &str = "m-primary";
const FALLBACK: &str = "m-fallback";

/// Short bounds so faults cost seconds, not minutes.
const FAST_POLICY: &str = "
specialist_timeout_s = 20
review_timeout_s = 40
inactivity_timeout_s = 1
connect_timeout_s = 1
min_attempt_time_s = 2
";

/// A routing table: every role on every tier routed to `primary` (on
/// `primary_url`), which falls back to `fallback` (on `fallback_url`).
fn routing_toml(primary_url: &str, fallback_url: &str, primary_extra: &str) -> String {
    format!(
        r#"
[provider.first]
api = "openai"
base_url = "{primary_url}/v1"

[provider.second]
api = "openai"
base_url = "{fallback_url}/v1"

[model.primary]
provider = "first"
name = "{PRIMARY}"
fallback = ["fallback"]
price = {{ input = 1.0, output = 2.0 }}
{primary_extra}

[model.fallback]
provider = "second"
name = "{FALLBACK}"
price = {{ input = 1.0, output = 2.0 }}

{}"#,
        routes_to("primary")
    )
}

/// A trivial-tier spec: one task, one plain criterion, one file in the change.
fn trivial_spec(policy: &str) -> String {
    format!(
        r#"
[spec]
id = "resilience"
[[task]]
id = "t"
paths = ["src/**"]
[[task.criterion]]
id = "c"
text = "holds"
run = "true"
[policy]
{FAST_POLICY}{policy}
"#
    )
}

fn answer() -> Value {
    json!({"findings": [], "criteria": [], "rules": []})
}

fn workspace(spec: &str, routing: &str) -> TestEnv {
    let env = TestEnv::new();
    env.write("gate.toml", spec);
    env.write("routing.toml", routing);
    env.write("src/app.py", "def main():\n    return 1\n");
    env
}

fn verify(env: &TestEnv, bound: Duration) -> (RunOutput, Duration) {
    let started = Instant::now();
    let out = env
        .gate(&["verify", "--format", "json"])
        .timeout(bound + Duration::from_secs(30))
        .run();
    let took = started.elapsed();
    assert!(
        took <= bound,
        "took {took:?}, bound {bound:?}\n--- stderr\n{}",
        out.stderr
    );
    (out, took)
}

fn specialist<'a>(doc: &'a Value, role: &str) -> &'a Value {
    doc["review"]["specialists"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["role"] == role))
        .unwrap_or_else(|| panic!("no {role} specialist in {doc}"))
}

fn attempts(s: &Value) -> Vec<(String, String)> {
    s["attempts"]
        .as_array()
        .expect("attempts is an array")
        .iter()
        .map(|a| {
            let text = |key: &str| a[key].as_str().expect("a string").to_owned();
            (text("model"), text("outcome"))
        })
        .collect()
}

fn requests_to(server: &ModelServer, model: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.body.get("model").and_then(Value::as_str) == Some(model))
        .count()
}

/// How the chain meets a fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Position {
    /// The primary is faulty; the fallback answers.
    First,
    /// The primary fails retryably (503); the fallback, last in the chain, is faulty.
    Last,
}

/// One fault of the matrix.
struct Fault {
    name: &'static str,
    /// The faulty model's reply (`None`: nobody listens on its port).
    reply: Option<Reply>,
    /// `retryable`, `malformed` (the chain moves on, the breaker is not
    /// told), `fatal`, or `quota` (fatal for every model on the same
    /// endpoint and key: in the matrix both models are on one server,
    /// keyless, so the other is not asked either).
    class: &'static str,
    /// Attempts on the faulty model (a fitting Retry-After is waited out once).
    tries: usize,
    /// Requests the faulty model receives (a malformed reply gets one repair).
    requests: usize,
    /// The least time the fault must cost.
    at_least: Duration,
}

fn faults() -> Vec<Fault> {
    let ms = Duration::from_millis;
    let fault = |name, reply: Option<Reply>, class, tries, requests, at_least| Fault {
        name,
        reply,
        class,
        tries,
        requests,
        at_least,
    };
    let chunk = json!({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": "{\"findings\""}, "finish_reason": null}]});
    vec![
        fault(
            "429 with Retry-After",
            Some(
                Reply::openai_error(429, "requests", "rate_limit_exceeded", "Rate limit reached")
                    .retry_after("1"),
            ),
            "retryable",
            2,
            2,
            ms(1000),
        ),
        fault(
            "429 without Retry-After",
            Some(Reply::openai_error(
                429,
                "tokens",
                "rate_limit_exceeded",
                "Rate limit reached",
            )),
            "retryable",
            1,
            1,
            ms(0),
        ),
        fault(
            "500",
            Some(Reply::openai_error(
                500,
                "server_error",
                "",
                "The server had an error",
            )),
            "retryable",
            1,
            1,
            ms(0),
        ),
        fault(
            "503",
            Some(Reply::openai_error(
                503,
                "server_error",
                "",
                "The engine is currently overloaded",
            )),
            "retryable",
            1,
            1,
            ms(0),
        ),
        fault(
            "529 overloaded",
            Some(Reply::anthropic_error(
                529,
                "overloaded_error",
                "Overloaded",
            )),
            "retryable",
            1,
            1,
            ms(0),
        ),
        fault("connection refused", None, "retryable", 1, 0, ms(0)),
        fault(
            "accepts and never answers",
            Some(Reply::hang()),
            "retryable",
            1,
            1,
            // the inactivity bound, before a response head
            ms(1000),
        ),
        fault(
            "one chunk, then silence",
            Some(Reply::sse(vec![
                SseStep::data(&chunk),
                SseStep::Pause(Duration::from_secs(60)),
            ])),
            "retryable",
            1,
            1,
            ms(1000),
        ),
        fault(
            "a reply that is not JSON",
            Some(Reply::openai_text("The change looks fine to me.")),
            "malformed",
            1,
            2,
            ms(0),
        ),
        fault(
            "a reply that breaks the schema twice",
            Some(Reply::openai(&json!({"verdict": "looks good"}))),
            "malformed",
            1,
            2,
            ms(0),
        ),
        fault(
            "401",
            Some(Reply::openai_error(
                401,
                "invalid_request_error",
                "invalid_api_key",
                "Incorrect API key provided",
            )),
            "fatal",
            1,
            1,
            ms(0),
        ),
        fault(
            "LiteLLM 429 budget_exceeded",
            Some(Reply::litellm_budget(
                429,
                "Budget has been exceeded! Current cost: 5.02, Max budget: 5.0",
            )),
            "quota",
            1,
            1,
            ms(0),
        ),
        fault(
            "LiteLLM 422 ExceededBudget",
            Some(Reply::litellm_budget(
                422,
                "ExceededBudget: User=ci-bot over budget. Spend=20.1, Budget=20.0",
            )),
            "quota",
            1,
            1,
            ms(0),
        ),
        fault(
            "OpenRouter 402",
            Some(Reply::openrouter_error(
                402,
                "Insufficient credits. Add more using https://openrouter.ai/credits",
            )),
            "quota",
            1,
            1,
            ms(0),
        ),
        fault(
            "OpenAI 429 insufficient_quota",
            Some(Reply::openai_error(
                429,
                "insufficient_quota",
                "insufficient_quota",
                "You exceeded your current quota, please check your plan and billing details.",
            )),
            "quota",
            1,
            1,
            ms(0),
        ),
        fault(
            "Azure 403 out of call volume quota",
            Some(Reply::azure_error(
                403,
                "Out of call volume quota for OpenAI F0 pricing tier. Please retry after 15 days.",
            )),
            "quota",
            1,
            1,
            ms(0),
        ),
        fault(
            "Bedrock 429 daily token quota",
            Some(Reply::bedrock_error(
                429,
                "ThrottlingException",
                "Too many tokens per day, please wait before trying again.",
            )),
            "quota",
            1,
            1,
            ms(0),
        ),
        fault(
            "Bedrock 400 ServiceQuotaExceededException",
            Some(Reply::bedrock_error(
                400,
                "ServiceQuotaExceededException",
                "Your request exceeds the service quota for your account.",
            )),
            "quota",
            1,
            1,
            ms(0),
        ),
        fault(
            "400 context length",
            Some(Reply::openai_error(
                400,
                "invalid_request_error",
                "context_length_exceeded",
                "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
            )),
            "fatal",
            1,
            1,
            ms(0),
        ),
    ]
}

/// Runs one cell of the matrix; returns what went wrong, if anything.
fn run_cell(fault: &Fault, position: Position) -> Result<(), String> {
    let server = ModelServer::start();
    let faulty_model = match position {
        Position::First => PRIMARY,
        Position::Last => FALLBACK,
    };
    let refused = format!("http://127.0.0.1:{}", free_port());
    let faulty_url = if fault.reply.is_some() {
        server.url()
    } else {
        refused
    };
    if let Some(reply) = &fault.reply {
        server.script(Matcher::any().model(faulty_model), vec![reply.clone()]);
    }
    let (primary_url, fallback_url) = match position {
        Position::First => {
            server.script(
                Matcher::any().model(FALLBACK),
                vec![Reply::openai(&answer())],
            );
            (faulty_url, server.url())
        }
        Position::Last => {
            server.script(
                Matcher::any().model(PRIMARY),
                vec![Reply::openai_error(503, "server_error", "", "unavailable")],
            );
            (server.url(), faulty_url)
        }
    };
    let env = workspace(
        &trivial_spec("on_review_unavailable = \"fail\"\n"),
        &routing_toml(&primary_url, &fallback_url, ""),
    );
    let bound = fault.at_least + Duration::from_secs(8);
    let started = Instant::now();
    let out = env
        .gate(&["verify", "--format", "json"])
        .timeout(bound + Duration::from_secs(30))
        .run();
    let took = started.elapsed();
    let doc: Value = serde_json::from_str(&out.stdout)
        .map_err(|e| format!("no JSON ({e}); stderr:\n{}", out.stderr))?;
    let quality = specialist(&doc, "quality");

    let quota = fault.class == "quota";
    let recorded = if quota { "fatal" } else { fault.class };
    let faulty = (faulty_model.to_owned(), recorded.to_owned());
    let mut want_attempts = Vec::new();
    if position == Position::Last {
        want_attempts.push((PRIMARY.to_owned(), "retryable".to_owned()));
    }
    want_attempts.extend(std::iter::repeat_n(faulty, fault.tries));
    // A failure another model may not have moves down the chain; a quota
    // error only to another account, and here there is none.
    let answered = position == Position::First && !matches!(fault.class, "fatal" | "quota");
    if answered {
        want_attempts.push((FALLBACK.to_owned(), "ok".to_owned()));
    }
    if quota && position == Position::First {
        want_attempts.push((FALLBACK.to_owned(), "fatal".to_owned()));
        if requests_to(&server, FALLBACK) != 0 {
            return Err(format!(
                "the fallback on the same endpoint and key was asked\n--- stderr\n{}",
                out.stderr
            ));
        }
    }
    let (want_status, want_verdict, want_exit) = if answered {
        ("ok", "pass", 0)
    } else {
        ("did_not_run", "fail", 1)
    };
    let mut problems = Vec::new();
    let got_attempts = attempts(quality);
    if got_attempts != want_attempts {
        problems.push(format!("attempts {got_attempts:?}, want {want_attempts:?}"));
    }
    if quality["status"] != want_status {
        problems.push(format!("status {}, want {want_status}", quality["status"]));
    }
    if !answered && quality["reason"].as_str().is_none_or(str::is_empty) {
        problems.push("a specialist that did not run gives no reason".to_owned());
    }
    // A quota error's reason is the provider's own words, whatever came after.
    if quota {
        let said = fault
            .reply
            .as_ref()
            .and_then(Reply::message)
            .unwrap_or_default();
        let reason = quality["reason"].as_str().unwrap_or_default();
        if said.is_empty() || !reason.contains(said) {
            problems.push(format!("reason {reason:?} lacks the provider's {said:?}"));
        }
    }
    if doc["verdict"] != want_verdict || out.code != Some(want_exit) {
        problems.push(format!(
            "verdict {} exit {:?}, want {want_verdict} exit {want_exit}",
            doc["verdict"], out.code
        ));
    }
    let got_requests = requests_to(&server, faulty_model);
    let want_requests = if fault.reply.is_some() {
        fault.requests
    } else {
        0
    };
    if got_requests != want_requests {
        problems.push(format!(
            "{got_requests} requests to the faulty model, want {want_requests}"
        ));
    }
    if took < fault.at_least || took > bound {
        problems.push(format!(
            "took {took:?}, want between {:?} and {bound:?}",
            fault.at_least
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}\n--- stderr\n{}",
            problems.join("\n"),
            out.stderr
        ))
    }
}

#[test]
fn fault_matrix() {
    // Each cell is its own workspace, state directory and server; four run
    // at a time.
    let cells: Vec<(Fault, Position)> = faults()
        .into_iter()
        .flat_map(|f| {
            let again = Fault {
                reply: f.reply.clone(),
                ..f
            };
            [(f, Position::First), (again, Position::Last)]
        })
        .collect();
    let failures = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some((fault, position)) = cells.get(i) else {
                        break;
                    };
                    if let Err(e) = run_cell(fault, *position) {
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("{} at {position:?}: {e}", fault.name));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} cells failed:\n\n{}",
        failures.len(),
        cells.len(),
        failures.join("\n\n")
    );
}

#[test]
fn what_did_not_run_is_said_and_the_policy_decides() {
    let server = ModelServer::start();
    server.script(
        Matcher::any().model(PRIMARY),
        vec![Reply::openai_error(
            401,
            "invalid_request_error",
            "invalid_api_key",
            "Incorrect API key provided",
        )],
    );
    let routing = routing_toml(&server.url(), &server.url(), "");

    // Default policy: a reviewer that did not run does not block.
    let env = workspace(&trivial_spec(""), &routing);
    let out = env.gate(&["verify"]).timeout(Duration::from_secs(60)).run();
    out.assert_exit(0)
        .stdout_has("review (1 of 1 did not run)")
        .stdout_has("verdict: PASS");
    assert!(
        out.stdout.lines().any(|l| l.contains("quality")
            && l.contains(PRIMARY)
            && l.contains("did not run — HTTP 401")
            && l.contains("Incorrect API key")),
        "{}",
        out.stdout
    );

    // A model-judged criterion nobody could judge: incomplete, whatever the policy.
    let env = workspace(
        &format!(
            r#"
[spec]
id = "judged"
[[task]]
id = "t"
paths = ["src/**"]
[[task.criterion]]
id = "no-pii"
text = "No handler logs an email"
judge = "model"
[policy]
{FAST_POLICY}"#
        ),
        &routing,
    );
    let (out, _) = verify(&env, Duration::from_secs(20));
    out.assert_exit(4);
    let doc = out.json();
    assert_eq!(doc["verdict"], "incomplete");
    assert_eq!(specialist(&doc, "judge")["status"], "did_not_run");
    assert_eq!(doc["criteria"][0]["status"], "unverified");
}

/// A full-tier spec: 5 tasks × 21 plain criteria.
fn full_spec() -> String {
    let mut spec = format!("[spec]\nid = \"full\"\n[policy]\n{FAST_POLICY}\n");
    for t in 0..5 {
        let _ = writeln!(spec, "[[task]]\nid = \"t{t}\"\npaths = [\"src/t{t}/**\"]");
        let n = if t == 0 { 5 } else { 4 };
        for c in 0..n {
            let _ = writeln!(
                spec,
                "[[task.criterion]]\nid = \"t{t}-c{c}\"\ntext = \"holds\"\nrun = \"true\""
            );
        }
    }
    spec
}

#[test]
fn the_breaker_opens_and_later_runs_skip_the_dead_model() {
    let server = ModelServer::start();
    server
        .script(
            Matcher::any().model(PRIMARY),
            vec![Reply::openai_error(503, "server_error", "", "unavailable")],
        )
        .script(
            Matcher::any().model(FALLBACK).role("coordinator"),
            vec![Reply::openai(&json!({"findings": [], "dropped": []}))],
        )
        .script(
            Matcher::any().model(FALLBACK),
            vec![Reply::openai(&json!({
                "findings": [{"severity": "warning", "file": "src/t0/a.py", "line": 1,
                    "title": "Return value ignored", "detail": "The caller drops it.", "confidence": 0.9}],
                "criteria": [], "rules": []
            }))],
        );
    let env = workspace(
        &full_spec(),
        &routing_toml(&server.url(), &server.url(), ""),
    );
    for t in 0..5 {
        env.write(&format!("src/t{t}/a.py"), "x = 1\n");
    }

    let (out, _) = verify(&env, Duration::from_secs(20));
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["tier"], "full");
    let panel = ["quality", "security", "performance", "integration"];
    for role in panel {
        assert_eq!(
            attempts(specialist(&doc, role)),
            [
                (PRIMARY.to_owned(), "retryable".to_owned()),
                (FALLBACK.to_owned(), "ok".to_owned())
            ],
            "{role}"
        );
    }
    // Four failures in a row opened the primary's breaker: the coordinator,
    // asked after the panel, skips it in the same run.
    assert_eq!(
        attempts(specialist(&doc, "coordinator")),
        [
            (PRIMARY.to_owned(), "breaker_open".to_owned()),
            (FALLBACK.to_owned(), "ok".to_owned())
        ]
    );
    let sent = requests_to(&server, PRIMARY);
    assert_eq!(sent, panel.len());

    // A second run reads the breaker from the ledger: no request to the
    // primary, no time lost on it.
    let (out, _) = verify(&env, Duration::from_secs(20));
    out.assert_exit(0);
    let doc = out.json();
    for role in panel.iter().chain(&["coordinator"]) {
        let s = specialist(&doc, role);
        assert_eq!(
            attempts(s),
            [
                (PRIMARY.to_owned(), "breaker_open".to_owned()),
                (FALLBACK.to_owned(), "ok".to_owned())
            ],
            "{role}"
        );
        assert_eq!(s["attempts"][0]["latency_ms"], 0);
    }
    assert_eq!(requests_to(&server, PRIMARY), sent);

    // The audit checks the breaker's state as signed: edited in the
    // database, it is named.
    env.gate(&["ledger", "verify"]).run().assert_exit(0);
    let db = rusqlite::Connection::open(env.path().join(".gate/ledger.db")).unwrap();
    db.execute("UPDATE breakers SET cooldown_s = 999999", [])
        .unwrap();
    drop(db);
    let out = env.gate(&["ledger", "verify", "--format", "json"]).run();
    out.assert_exit(1);
    let problems = out.json()["problems"].clone();
    assert!(
        problems.as_array().unwrap().iter().any(|p| {
            p["kind"] == "event_not_signed"
                && p["column"] == "cooldown_s"
                && p["table"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("breaker ") && t.ends_with(PRIMARY))
        }),
        "{problems:#}"
    );
}

/// A routing table for one gateway (LiteLLM, say) at `gateway_url`, both
/// of its APIs with one key: the primary on its OpenAI API falls back to a
/// model on its Anthropic API, and that, when `other_url` is given, to a
/// model of another account there.
fn gateway_routing(gateway_url: &str, other_url: Option<&str>) -> String {
    let mut out = format!(
        r#"
[provider.gateway]
api = "openai"
base_url = "{gateway_url}/v1"
api_key_env = "GATEWAY_KEY"

[provider.gateway_messages]
api = "anthropic"
base_url = "{gateway_url}"
api_key_env = "GATEWAY_KEY"

[model.primary]
provider = "gateway"
name = "{PRIMARY}"
fallback = ["fallback"]

[model.fallback]
provider = "gateway_messages"
name = "{FALLBACK}"
"#
    );
    if let Some(other) = other_url {
        let _ = write!(
            out,
            r#"fallback = ["elsewhere"]

[provider.other]
api = "openai"
base_url = "{other}/v1"

[model.elsewhere]
provider = "other"
name = "m-elsewhere"
"#
        );
    }
    out.push_str(&routes_to("primary"));
    out
}

#[test]
fn a_gateway_budget_stops_the_review_in_its_own_words_run_after_run() {
    let words = "Budget has been exceeded! Current cost: 5.02, Max budget: 5.0";
    let gateway = ModelServer::start();
    gateway.default_reply(Reply::litellm_budget(429, words));
    let env = workspace(&full_spec(), &gateway_routing(&gateway.url(), None));
    for t in 0..5 {
        env.write(&format!("src/t{t}/a.py"), "x = 1\n");
    }
    let panel = ["quality", "security", "performance", "integration"];
    let mut asked = 0;
    for run in 1..=2 {
        let started = Instant::now();
        let out = env
            .gate(&["verify", "--format", "json"])
            .env("GATEWAY_KEY", "sk-test")
            .timeout(Duration::from_secs(60))
            .run();
        assert!(started.elapsed() < Duration::from_secs(20), "run {run}");
        let doc = out.json();
        assert_eq!(doc["tier"], "full");
        for role in panel {
            let s = specialist(&doc, role);
            // Asked on the primary; the fallback, on the same gateway and
            // key, is not asked at all.
            assert_eq!(
                attempts(s),
                [
                    (PRIMARY.to_owned(), "fatal".to_owned()),
                    (FALLBACK.to_owned(), "fatal".to_owned())
                ],
                "run {run} {role}: {s}"
            );
            assert_eq!(s["status"], "did_not_run");
            let reason = s["reason"].as_str().unwrap_or_default();
            assert!(
                reason.starts_with("HTTP 429 from the model provider: budget_exceeded: ")
                    && reason.contains(words),
                "run {run} {role}: {reason}"
            );
        }
        assert!(
            !out.stdout.contains("circuit breaker"),
            "run {run}: {}",
            out.stdout
        );
        assert_eq!(requests_to(&gateway, FALLBACK), 0, "run {run}");
        // No breaker opened: the next run asks the primary again.
        let now = requests_to(&gateway, PRIMARY);
        assert!(now > asked, "run {run} asked nobody");
        asked = now;
    }

    // The human view says it in the same words.
    let out = env
        .gate(&["verify"])
        .env("GATEWAY_KEY", "sk-test")
        .timeout(Duration::from_secs(60))
        .run();
    assert!(
        out.stdout.lines().any(|l| l.contains("quality")
            && l.contains("did not run — HTTP 429 from the model provider: budget_exceeded: Budget has been exceeded!")),
        "{}",
        out.stdout
    );

    // The budget raised, every model is healthy: nothing of the above
    // stayed in a breaker.
    gateway.script(
        Matcher::any().role("coordinator"),
        vec![Reply::openai(&json!({"findings": [], "dropped": []}))],
    );
    gateway.script(Matcher::any(), vec![Reply::openai(&answer())]);
    let out = env
        .gate(&["verify", "--format", "json"])
        .env("GATEWAY_KEY", "sk-test")
        .timeout(Duration::from_secs(60))
        .run();
    out.assert_exit(0);
    let doc = out.json();
    for role in panel {
        assert_eq!(
            attempts(specialist(&doc, role)),
            [(PRIMARY.to_owned(), "ok".to_owned())],
            "{role}"
        );
    }
}

#[test]
fn a_budget_spent_on_one_account_fails_back_to_another() {
    let gateway = ModelServer::start();
    gateway.default_reply(Reply::litellm_budget(
        400,
        "ExceededBudget: User=ci-bot over budget. Spend=20.1, Budget=20.0",
    ));
    let other = ModelServer::start();
    other.default_reply(Reply::openai(&answer()));
    let env = workspace(
        &trivial_spec(""),
        &gateway_routing(&gateway.url(), Some(&other.url())),
    );
    let out = env
        .gate(&["verify", "--format", "json"])
        .env("GATEWAY_KEY", "sk-test")
        .timeout(Duration::from_secs(60))
        .run();
    out.assert_exit(0);
    let doc = out.json();
    let quality = specialist(&doc, "quality");
    assert_eq!(
        attempts(quality),
        [
            (PRIMARY.to_owned(), "fatal".to_owned()),
            (FALLBACK.to_owned(), "fatal".to_owned()),
            ("m-elsewhere".to_owned(), "ok".to_owned())
        ],
        "{quality}"
    );
    assert!(
        quality["attempts"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("ExceededBudget: User=ci-bot over budget")),
        "{quality}"
    );
    assert_eq!(requests_to(&gateway, FALLBACK), 0);
}

#[test]
fn the_overall_timeout_cuts_a_slow_review() {
    let server = ModelServer::start();
    server.default_reply(Reply::hang());
    // The model may stay silent for a minute (a reasoning model), the
    // specialist for a minute: only the review's 2 s bound can cut it.
    let env = workspace(
        "[spec]\nid = \"slow\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n[policy]\n\
         review_timeout_s = 2\nspecialist_timeout_s = 60\nmin_attempt_time_s = 1\n\
         on_review_unavailable = \"fail\"\n",
        &routing_toml(&server.url(), &server.url(), "inactivity_timeout_s = 60"),
    );
    let (out, took) = verify(&env, Duration::from_secs(10));
    assert!(took >= Duration::from_secs(2), "{took:?}");
    out.assert_exit(1);
    let doc = out.json();
    let quality = specialist(&doc, "quality");
    assert_eq!(quality["status"], "did_not_run");
    assert!(
        quality["reason"]
            .as_str()
            .is_some_and(|r| r.contains("overall timeout")),
        "{quality}"
    );
    assert_eq!(
        attempts(quality),
        [(PRIMARY.to_owned(), "retryable".to_owned())]
    );
    assert!(requests_to(&server, FALLBACK) == 0);
}

#[test]
fn a_role_timeout_cuts_its_specialist_only() {
    let server = ModelServer::start();
    server
        .script(Matcher::any().role("quality"), vec![Reply::hang()])
        .default_reply(Reply::openai(&json!({
            "findings": [], "criteria": [{"id": "no-pii", "met": 0.95, "why": "no logging"}], "rules": []
        })));
    // quality gets 2 s; the judge keeps the 60 s default, and answers.
    let env = workspace(
        "[spec]\nid = \"roles\"\n[[task]]\nid = \"t\"\npaths = [\"src/**\"]\n\
         [[task.criterion]]\nid = \"no-pii\"\ntext = \"No handler logs an email\"\njudge = \"model\"\n\
         [policy]\nspecialist_timeout_s = 60\nmin_attempt_time_s = 1\n\
         [policy.role_timeout_s]\nquality = 2\n",
        &routing_toml(&server.url(), &server.url(), "inactivity_timeout_s = 60"),
    );
    let (out, took) = verify(&env, Duration::from_secs(10));
    assert!(took >= Duration::from_secs(2), "{took:?}");
    out.assert_exit(0);
    let doc = out.json();
    let quality = specialist(&doc, "quality");
    assert_eq!(quality["status"], "did_not_run");
    assert_eq!(quality["reason"], "cut at the quality timeout (2 s)");
    assert_eq!(specialist(&doc, "judge")["status"], "ok");
    assert_eq!(doc["criteria"][0]["status"], "passed");
}

#[test]
fn the_heartbeat_and_the_stream_follow_a_fallback() {
    let server = ModelServer::start();
    server
        .script(
            Matcher::any().model(PRIMARY),
            vec![Reply::openai_error(503, "server_error", "", "unavailable")],
        )
        .script(
            Matcher::any().model(FALLBACK),
            vec![Reply::openai(&answer()).after(Duration::from_millis(1500))],
        );
    // The fallback takes 1.5 s to answer, within its 5 s inactivity bound.
    let env = workspace(
        &trivial_spec(""),
        &routing_toml(&server.url(), &server.url(), "").replace(
            &format!("name = \"{FALLBACK}\"\n"),
            &format!("name = \"{FALLBACK}\"\ninactivity_timeout_s = 5\n"),
        ),
    );
    let out = env
        .gate(&["verify"])
        .env("GATE_HEARTBEAT_MS", "300")
        .timeout(Duration::from_secs(30))
        .run();
    out.assert_exit(0)
        .stderr_has(&format!("quality: waiting on {FALLBACK}, 1 s"));

    // The JSON Lines stream reports each attempt as it starts.
    let out = env
        .gate(&["verify", "--format", "jsonl"])
        .timeout(Duration::from_secs(30))
        .run();
    out.assert_exit(0);
    let attempts: Vec<(String, String)> = out
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "attempt_started")
        .map(|e| {
            (
                e["role"].as_str().unwrap().to_owned(),
                e["model"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        attempts,
        [
            ("quality".to_owned(), PRIMARY.to_owned()),
            ("quality".to_owned(), FALLBACK.to_owned())
        ]
    );

    // Quiet means quiet.
    let out = env
        .gate(&["verify", "-q"])
        .env("GATE_HEARTBEAT_MS", "300")
        .timeout(Duration::from_secs(30))
        .run();
    out.assert_exit(0);
    assert!(!out.stderr.contains("waiting on"), "{}", out.stderr);
}

#[test]
fn a_routing_override_disables_a_model_before_any_request() {
    let server = ModelServer::start();
    server
        .script(
            Matcher::any().path("/routing-patch"),
            vec![Reply::json(200, json!({"disable_models": ["primary"]}))],
        )
        .default_reply(Reply::openai(&answer()));
    let env = workspace(
        &trivial_spec(""),
        &routing_toml(&server.url(), &server.url(), ""),
    );
    let url = format!("{}/routing-patch?token=s3cret", server.url());

    let out = env
        .gate(&["verify", "--format", "json"])
        .env("GATE_ROUTING_URL", &url)
        .timeout(Duration::from_secs(30))
        .run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(
        attempts(specialist(&doc, "quality")),
        [(FALLBACK.to_owned(), "ok".to_owned())]
    );
    assert_eq!(requests_to(&server, PRIMARY), 0);
    let status = &doc["routing_override"];
    assert_eq!(status["status"], "applied", "{status}");
    assert_eq!(status["changed"], json!(["model.primary: disabled"]));
    assert!(!status.to_string().contains("s3cret"));

    // The bundle records the effective table and the override.
    let run = doc["run_id"].as_str().unwrap();
    let predicate = env.shown(run);
    assert_eq!(predicate["routing"]["override"]["status"], "applied");
    let overridden_digest = predicate["routing"]["blake3"].clone();

    // `gate routing show` marks the row.
    let shown = env
        .gate(&["routing", "show"])
        .env("GATE_ROUTING_URL", &url)
        .timeout(Duration::from_secs(30))
        .run();
    shown.assert_exit(0);
    assert!(
        shown
            .stdout
            .lines()
            .any(|l| l.contains("primary") && l.contains("override: disabled")),
        "{}",
        shown.stdout
    );

    // --offline skips the fetch; the local table's digest differs.
    let before = server.requests().len();
    let out = env
        .gate(&["verify", "--format", "json", "--offline"])
        .env("GATE_ROUTING_URL", &url)
        .timeout(Duration::from_secs(30))
        .run();
    out.assert_exit(0);
    assert_eq!(out.json()["routing_override"]["status"], "skipped");
    assert_eq!(server.requests().len(), before);
    let run = out.json()["run_id"].as_str().unwrap().to_owned();
    let shown = env
        .gate(&["evidence", "show", &run, "--format", "predicate"])
        .timeout(Duration::from_secs(30))
        .run();
    assert_ne!(shown.json()["routing"]["blake3"], overridden_digest);
}

#[test]
fn a_routing_override_that_cannot_be_used_leaves_the_local_table() {
    let server = ModelServer::start();
    server
        .script(
            Matcher::any().path("/gone"),
            vec![Reply::json(404, json!({"error": "not found"}))],
        )
        .default_reply(Reply::openai(&answer()));
    let env = workspace(
        &trivial_spec(""),
        &routing_toml(&server.url(), &server.url(), ""),
    );
    let cases = [
        // Plain HTTP off this machine is refused before any connection.
        ("http://192.0.2.7/patch", "only https://"),
        (&*format!("{}/gone", server.url()), "HTTP 404"),
        // Something that is not a patch (here, a chat completion).
        (
            &*format!("{}/v1/chat/completions", server.url()),
            "does not parse",
        ),
    ];
    for (url, why) in cases {
        let started = Instant::now();
        let out = env
            .gate(&["verify", "--format", "json"])
            .env("GATE_ROUTING_URL", url)
            .timeout(Duration::from_secs(30))
            .run();
        assert!(started.elapsed() < Duration::from_secs(15), "{url}");
        out.assert_exit(0)
            .stderr_has("routing override from")
            .stderr_has("not applied")
            .stderr_has(why);
        let doc = out.json();
        assert_eq!(doc["routing_override"]["status"], "failed");
        assert!(
            doc["routing_override"]["error"]
                .as_str()
                .is_some_and(|e| e.contains(why))
        );
        assert_eq!(
            attempts(specialist(&doc, "quality")),
            [(PRIMARY.to_owned(), "ok".to_owned())]
        );
    }
}

#[test]
fn an_operator_override_is_not_a_change_the_self_guard_flags() {
    let server = ModelServer::start();
    server
        .script(
            Matcher::any().path("/routing-patch"),
            vec![Reply::json(200, json!({"disable_models": ["primary"]}))],
        )
        .default_reply(Reply::openai(&answer()));
    let env = workspace(
        &trivial_spec(""),
        &routing_toml(&server.url(), &server.url(), ""),
    );
    env.write(".gitignore", ".gate/\n");
    env.git(&["init", "-q", "-b", "main"]);
    env.git(&["add", "."]);
    env.git(&["commit", "-q", "-m", "base"]);
    env.write("src/app.py", "def main():\n    return 2\n");
    let out = env
        .gate(&["verify", "--base", "main", "--format", "json"])
        .env(
            "GATE_ROUTING_URL",
            format!("{}/routing-patch", server.url()),
        )
        .timeout(Duration::from_secs(30))
        .run();
    out.assert_exit(0);
    let doc = out.json();
    assert_eq!(doc["routing_override"]["status"], "applied");
    assert!(gate_tests::findings(&doc).is_empty(), "{}", doc["findings"]);
    assert_eq!(requests_to(&server, PRIMARY), 0);
}
