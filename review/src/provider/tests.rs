//! Cross-provider behaviour: cost, classification of real HTTP failures, and
//! the time bounds.

use std::time::Duration;

use gate_tests::model_server::{ModelServer, Reply, SseStep};
use serde_json::json;
use tokio::time::Instant;

use crate::provider::test_support::{answer, anthropic, client, openai, request};
use crate::provider::{
    Class, ErrorCode, ModelRequest, OpenAiProvider, Price, Provider, ProviderError, Timeouts,
    Usage, cost,
};

#[test]
fn cost_charges_each_kind_of_token_at_its_price() {
    let price = Price {
        input: 3.0,
        cached_input: 0.3,
        cache_write: 3.75,
        output: 15.0,
    };
    let usage = |input, cached, written, output, reported| Usage {
        input_tokens: input,
        cached_input_tokens: cached,
        cache_write_tokens: written,
        output_tokens: output,
        cost_usd: reported,
    };
    let cases = [
        // 1M uncached input at $3 + 1M output at $15.
        (
            usage(Some(1_000_000), None, None, Some(1_000_000), None),
            Some(18.0),
        ),
        // 1.25M input of which 1M cached ($0.30) and 200k written ($0.75): 50k uncached ($0.15).
        (
            usage(
                Some(1_250_000),
                Some(1_000_000),
                Some(200_000),
                Some(0),
                None,
            ),
            Some(1.2),
        ),
        // OpenAI-style: 1200 input, 1024 cached, 80 output.
        (
            usage(Some(1200), Some(1024), None, Some(80), None),
            Some((176.0 * 3.0 + 1024.0 * 0.3 + 80.0 * 15.0) / 1e6),
        ),
        // The provider's own figure wins, even when the counts are unknown.
        (
            usage(Some(1_000_000), None, None, Some(0), Some(0.42)),
            Some(0.42),
        ),
        (usage(None, None, None, None, Some(0.0)), Some(0.0)),
        // Unknown input or output: unknown cost.
        (usage(None, None, None, Some(10), None), None),
        (usage(Some(10), Some(5), None, None, None), None),
        (Usage::default(), None),
    ];
    for (usage, expect) in cases {
        let got = cost(&usage, &price);
        match (got, expect) {
            (Some(g), Some(e)) => assert!((g - e).abs() < 1e-9, "{usage:?}: {g} != {e}"),
            _ => assert_eq!(got, expect, "{usage:?}"),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Api {
    OpenAi,
    Anthropic,
}

/// Sends one request of `api` to a server answering `reply`.
async fn call(
    api: Api,
    reply: Reply,
    req: &ModelRequest,
) -> Result<crate::provider::ModelReply, ProviderError> {
    let server = ModelServer::start();
    server.default_reply(reply);
    match api {
        Api::OpenAi => openai(&server).complete(req).await,
        Api::Anthropic => anthropic(&server).complete(req).await,
    }
}

fn openai_chunk(delta: &serde_json::Value) -> SseStep {
    SseStep::data(&json!({
        "id": "gen-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": null}]
    }))
}

#[tokio::test]
async fn failures_are_classified_as_providers_really_send_them() {
    use Api::{Anthropic, OpenAi};
    use Class::{Auth, Fatal, Quota, Retryable};
    let anthropic_event = |name: &str, data: serde_json::Value| SseStep::event(name, &data);
    // Error statuses are checked on streamed and whole requests alike; error
    // events only exist in streams.
    const BOTH: &[bool] = &[true, false];
    const STREAM: &[bool] = &[true];
    let cases: Vec<(&str, Api, Reply, Class, &[bool])> = vec![
        (
            "OpenAI 429 rate limit",
            OpenAi,
            Reply::openai_error(
                429,
                "tokens",
                "rate_limit_exceeded",
                "Rate limit reached for gpt-4o on tokens per min (TPM). Please try again in 1.2s.",
            )
            .retry_after("2"),
            Retryable,
            BOTH,
        ),
        (
            "OpenAI 429 without Retry-After",
            OpenAi,
            Reply::openai_error(429, "requests", "rate_limit_exceeded", "Rate limit reached for requests"),
            Retryable,
            BOTH,
        ),
        (
            "OpenRouter 429 with a numeric code",
            OpenAi,
            Reply::openrouter_error(429, "Rate limit exceeded: free-models-per-min").retry_after("5"),
            Retryable,
            BOTH,
        ),
        (
            "OpenRouter 503 no provider available",
            OpenAi,
            Reply::openrouter_error(503, "No endpoints found that can handle the request"),
            Retryable,
            BOTH,
        ),
        (
            "OpenRouter 401 with a numeric code",
            OpenAi,
            Reply::openrouter_error(401, "No auth credentials found"),
            Auth,
            BOTH,
        ),
        (
            "Anthropic 500 api_error",
            Anthropic,
            Reply::anthropic_error(500, "api_error", "Internal server error"),
            Retryable,
            BOTH,
        ),
        (
            "Anthropic 403 permission_error",
            Anthropic,
            Reply::anthropic_error(403, "permission_error", "Your API key does not have permission to use the specified resource."),
            Auth,
            BOTH,
        ),
        (
            "OpenAI refusal",
            OpenAi,
            Reply::openai(&json!({})).refusal("I can't help with that."),
            Fatal,
            BOTH,
        ),
        (
            "Anthropic stop_reason refusal",
            Anthropic,
            Reply::anthropic_text("").finish("refusal"),
            Fatal,
            BOTH,
        ),
        (
            "OpenAI 429 insufficient_quota",
            OpenAi,
            Reply::openai_error(
                429,
                "insufficient_quota",
                "insufficient_quota",
                "You exceeded your current quota, please check your plan and billing details.",
            ),
            Quota,
            BOTH,
        ),
        (
            "OpenAI 401",
            OpenAi,
            Reply::openai_error(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-x."),
            Auth,
            BOTH,
        ),
        (
            "OpenAI 403",
            OpenAi,
            Reply::openai_error(403, "invalid_request_error", "unsupported_country_region_territory", "Country not supported"),
            Auth,
            BOTH,
        ),
        (
            "OpenAI 400 context_length_exceeded",
            OpenAi,
            Reply::openai_error(
                400,
                "invalid_request_error",
                "context_length_exceeded",
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
            ),
            Fatal,
            BOTH,
        ),
        (
            "OpenAI 400 invalid schema",
            OpenAi,
            Reply::openai_error(400, "invalid_request_error", "invalid_json_schema", "Invalid schema for response_format 'review'"),
            Fatal,
            BOTH,
        ),
        ("500", OpenAi, Reply::openai_error(500, "server_error", "", "The server had an error"), Retryable, BOTH),
        ("502", OpenAi, Reply::json(502, json!({"error": {"message": "Bad gateway"}})), Retryable, BOTH),
        ("503", OpenAi, Reply::openai_error(503, "server_error", "", "The engine is currently overloaded"), Retryable, BOTH),
        ("504", OpenAi, Reply::json(504, json!({"detail": "Gateway Timeout"})), Retryable, BOTH),
        ("404 unknown model", OpenAi, Reply::openai_error(404, "invalid_request_error", "model_not_found", "The model does not exist"), Fatal, BOTH),
        (
            "Anthropic 529 overloaded_error",
            Anthropic,
            Reply::anthropic_error(529, "overloaded_error", "Overloaded"),
            Retryable,
            BOTH,
        ),
        (
            "Anthropic 429 rate_limit_error",
            Anthropic,
            Reply::anthropic_error(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")
                .retry_after("30"),
            Retryable,
            BOTH,
        ),
        (
            "Anthropic 429 tier spend cap",
            Anthropic,
            Reply::json(
                429,
                json!({"type": "error", "error": {
                    "type": "rate_limit_error",
                    "message": "You have reached your API usage limits: your organization has crossed its monthly API usage threshold. You will regain access on 2026-09-01 at 00:00 UTC.",
                    "details": {"error_code": "enforced_spend_limit_reached"}
                }, "request_id": "req_1"}),
            ),
            Quota,
            BOTH,
        ),
        (
            "Anthropic 400 credit balance",
            Anthropic,
            Reply::anthropic_error(
                400,
                "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
            ),
            Quota,
            BOTH,
        ),
        (
            "Anthropic 400 workspace spend limit",
            Anthropic,
            Reply::anthropic_error(
                400,
                "invalid_request_error",
                "You have reached your specified workspace API usage limits. You will regain access on 2026-04-01 at 00:00 UTC.",
            ),
            Quota,
            BOTH,
        ),
        (
            "Anthropic 400 prompt too long",
            Anthropic,
            Reply::anthropic_error(400, "invalid_request_error", "prompt is too long: 215000 tokens > 200000 maximum"),
            Fatal,
            BOTH,
        ),
        (
            "Anthropic 413 request_too_large",
            Anthropic,
            Reply::anthropic_error(413, "request_too_large", "Request exceeds the maximum allowed number of bytes."),
            Fatal,
            BOTH,
        ),
        ("Anthropic 401", Anthropic, Reply::anthropic_error(401, "authentication_error", "invalid x-api-key"), Auth, BOTH),
        ("Anthropic 402", Anthropic, Reply::anthropic_error(402, "billing_error", "Payment required"), Quota, BOTH),
        (
            "OpenAI 429 billing_not_active",
            OpenAi,
            Reply::openai_error(
                429,
                "billing_not_active",
                "billing_not_active",
                "Your account is not active, please check your billing details on our website.",
            ),
            Quota,
            BOTH,
        ),
        (
            "LiteLLM 429 budget_exceeded",
            OpenAi,
            Reply::litellm_budget(429, "Budget has been exceeded! Current cost: 5.02, Max budget: 5.0"),
            Quota,
            BOTH,
        ),
        (
            "LiteLLM 400 budget_exceeded",
            OpenAi,
            Reply::litellm_budget(400, "Budget has been exceeded! Current cost: 78.99, Max budget: 65.0"),
            Quota,
            BOTH,
        ),
        (
            "LiteLLM 422 ExceededBudget, on its Anthropic API",
            Anthropic,
            Reply::litellm_budget(422, "ExceededBudget: User=ci-bot over budget. Spend=20.1, Budget=20.0"),
            Quota,
            BOTH,
        ),
        (
            "LiteLLM 401 auth_error naming ExceededBudget (older releases)",
            OpenAi,
            Reply::openai_error(
                401,
                "auth_error",
                "401",
                "Authentication Error, ExceededBudget: Team=platform over budget. Spend=51.0, Budget=50.0",
            ),
            Quota,
            BOTH,
        ),
        (
            "LiteLLM 400 wrapping Anthropic's credit balance",
            OpenAi,
            Reply::openai_error(
                400,
                "None",
                "400",
                "litellm.BadRequestError: AnthropicException - {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.\"}}",
            ),
            Quota,
            BOTH,
        ),
        (
            "LiteLLM 429 wrapping Bedrock's daily token quota",
            OpenAi,
            Reply::openai_error(
                429,
                "throttling_error",
                "429",
                "litellm.RateLimitError: BedrockException - {\"message\":\"Too many tokens per day, please wait before trying again.\"}",
            ),
            Quota,
            BOTH,
        ),
        (
            "LiteLLM 429 rate limit (not a budget)",
            OpenAi,
            Reply::openai_error(429, "throttling_error", "429", "litellm.RateLimitError: Rate limit exceeded: Crossed TPM / RPM limit"),
            Retryable,
            BOTH,
        ),
        (
            "Azure 403 out of call volume quota",
            OpenAi,
            Reply::azure_error(
                403,
                "Out of call volume quota for OpenAI F0 pricing tier. Please retry after 15 days. To increase your call volume switch to a paid tier.",
            ),
            Quota,
            BOTH,
        ),
        (
            "Azure 429 token rate limit (a rate limit, not a quota)",
            OpenAi,
            Reply::azure_error(
                429,
                "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 7 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.",
            )
            .retry_after("7"),
            Retryable,
            BOTH,
        ),
        (
            "Bedrock 429 daily token quota",
            OpenAi,
            Reply::bedrock_error(429, "ThrottlingException", "Too many tokens per day, please wait before trying again."),
            Quota,
            BOTH,
        ),
        (
            "Bedrock 400 ServiceQuotaExceededException",
            OpenAi,
            Reply::bedrock_error(
                400,
                "ServiceQuotaExceededException",
                "Your request exceeds the service quota for your account. You can view your quotas at Viewing service quotas. You can resubmit your request later.",
            ),
            Quota,
            BOTH,
        ),
        (
            "Bedrock 429 ThrottlingException (a rate limit, not a quota)",
            OpenAi,
            Reply::bedrock_error(429, "ThrottlingException", "Too many requests, please wait before trying again."),
            Retryable,
            BOTH,
        ),
        (
            "LiteLLM budget error event mid-stream",
            OpenAi,
            Reply::sse(vec![
                openai_chunk(&json!({"role": "assistant", "content": "{\"find"})),
                SseStep::data(&json!({"error": {
                    "message": "Budget has been exceeded! Current cost: 5.02, Max budget: 5.0",
                    "type": "budget_exceeded", "param": null, "code": "429"
                }})),
            ]),
            Quota,
            STREAM,
        ),
        (
            "OpenRouter 402 with a numeric code",
            OpenAi,
            Reply::openrouter_error(402, "Insufficient credits. Add more using https://openrouter.ai/credits"),
            Quota,
            BOTH,
        ),
        (
            "OpenRouter 403 moderation",
            OpenAi,
            Reply::json(
                403,
                json!({"error": {"code": 403, "message": "Input flagged", "metadata": {"reasons": ["harassment"], "flagged_input": "…"}}}),
            ),
            Fatal,
            BOTH,
        ),
        ("OpenRouter 408", OpenAi, Reply::openrouter_error(408, "Request timed out"), Retryable, BOTH),
        (
            "OpenRouter error chunk mid-stream",
            OpenAi,
            Reply::sse(vec![
                openai_chunk(&json!({"role": "assistant", "content": "{\"find"})),
                SseStep::data(&json!({
                    "id": "gen-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                    "error": {"code": 502, "message": "Provider disconnected"},
                    "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]
                })),
            ]),
            Retryable,
            STREAM,
        ),
        (
            "OpenAI error event mid-stream",
            OpenAi,
            Reply::sse(vec![
                openai_chunk(&json!({"content": "{"})),
                SseStep::Data(r#"{"error": {"message": "The server had an error while processing your request.", "type": "server_error"}}"#.to_owned()),
            ]),
            Retryable,
            STREAM,
        ),
        (
            "Anthropic event: error mid-stream",
            Anthropic,
            Reply::sse(vec![
                anthropic_event("message_start", json!({"type": "message_start", "message": {"model": "c", "usage": {"input_tokens": 5}}})),
                anthropic_event("error", json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})),
            ]),
            Retryable,
            STREAM,
        ),
        ("the connection closes without a response", OpenAi, Reply::close(), Retryable, BOTH),
        (
            "a proxy's HTML page with 200",
            OpenAi,
            Reply::json(200, json!("<html>maintenance</html>")),
            Retryable,
            BOTH,
        ),
    ];
    for (what, api, reply, class, modes) in cases {
        for &stream in modes {
            let err = call(api, reply.clone(), &request(stream))
                .await
                .expect_err(what);
            assert_eq!(err.classify(), class, "{what} (stream {stream}): {err}");
            // The provider's own words survive into the one-line error.
            if let ProviderError::Http { error, .. } | ProviderError::StreamError { error, .. } =
                &err
            {
                assert!(err.to_string().contains(&error.message), "{what}: {err}");
            }
            if modes == STREAM {
                assert!(
                    matches!(err, ProviderError::StreamError { .. }),
                    "{what}: {err:?}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_gateway_budget_error_reads_as_its_type_and_words() {
    let err = call(
        Api::OpenAi,
        Reply::litellm_budget(
            429,
            "Budget has been exceeded! Current cost: 5.02, Max budget: 5.0",
        ),
        &request(false),
    )
    .await
    .expect_err("429");
    assert_eq!(
        err.to_string(),
        "HTTP 429 from the model provider: budget_exceeded: Budget has been exceeded! \
         Current cost: 5.02, Max budget: 5.0"
    );
    assert!(err.is_quota());
    let err = call(
        Api::OpenAi,
        Reply::bedrock_error(
            400,
            "ServiceQuotaExceededException",
            "Your request exceeds the service quota for your account.",
        ),
        &request(false),
    )
    .await
    .expect_err("400");
    assert_eq!(
        err.to_string(),
        "HTTP 400 from the model provider: ServiceQuotaExceededException: \
         Your request exceeds the service quota for your account."
    );
}

#[tokio::test]
async fn what_classification_needs_is_kept() {
    let req = request(true);
    let err = call(
        Api::OpenAi,
        Reply::openai_error(429, "tokens", "rate_limit_exceeded", "slow down").retry_after("2"),
        &req,
    )
    .await
    .expect_err("429");
    assert_eq!(err.status(), Some(429));
    assert_eq!(err.retry_after(), Some(Duration::from_secs(2)));
    let ProviderError::Http { error, body, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        error.code,
        Some(ErrorCode::Text("rate_limit_exceeded".to_owned()))
    );
    assert!(body.contains("slow down"));

    let date = httpdate_in(Duration::from_secs(60));
    let err = call(
        Api::Anthropic,
        Reply::anthropic_error(529, "overloaded_error", "Overloaded").retry_after(&date),
        &req,
    )
    .await
    .expect_err("529");
    let wait = err.retry_after().expect("an HTTP-date Retry-After");
    assert!(
        wait > Duration::from_secs(55) && wait <= Duration::from_secs(60),
        "{wait:?}"
    );

    let err = call(
        Api::OpenAi,
        Reply::openrouter_error(402, "Insufficient credits"),
        &req,
    )
    .await
    .expect_err("402");
    let ProviderError::Http { error, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(error.code, Some(ErrorCode::Number(402)));
    assert!(err.is_quota() && !err.is_context_length());

    let err = call(
        Api::OpenAi,
        Reply::openai_error(
            400,
            "invalid_request_error",
            "context_length_exceeded",
            "too long",
        ),
        &req,
    )
    .await
    .expect_err("400");
    assert!(err.is_context_length() && !err.is_quota());
    let err = call(
        Api::Anthropic,
        Reply::anthropic_error(413, "request_too_large", "Request too large"),
        &req,
    )
    .await
    .expect_err("413");
    assert!(err.is_context_length());
}

fn httpdate_in(d: Duration) -> String {
    let at = chrono::Utc::now() + chrono::Duration::from_std(d).expect("a small duration");
    at.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

fn quick(connect_ms: u64, inactivity_ms: u64, deadline_ms: u64) -> Timeouts {
    Timeouts {
        connect: Duration::from_millis(connect_ms),
        inactivity: Duration::from_millis(inactivity_ms),
        deadline: Instant::now() + Duration::from_millis(deadline_ms),
    }
}

#[tokio::test]
async fn a_closed_port_is_a_retryable_connection_error() {
    let port = gate_tests::free_port();
    let provider = OpenAiProvider::new(client(), &format!("http://127.0.0.1:{port}/v1"), None);
    let started = Instant::now();
    let err = provider
        .complete(&request(true))
        .await
        .expect_err("nobody listens");
    assert!(matches!(err, ProviderError::Transport { .. }), "{err:?}");
    assert_eq!(err.classify(), Class::Retryable);
    assert!(err.to_string().to_lowercase().contains("refused"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_bounds_quickly() {
    // Not streamed: only the deadline bounds the wait.
    let mut req = request(false);
    req.timeouts = quick(100, 100, 400);
    let started = Instant::now();
    let err = call(Api::OpenAi, Reply::hang(), &req)
        .await
        .expect_err("no answer");
    assert!(matches!(err, ProviderError::Deadline { .. }), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(err.classify(), Class::Retryable);

    // Streamed: no response head within the inactivity bound, which the
    // connect allowance does not lengthen.
    let mut req = request(true);
    req.timeouts = quick(400, 600, 10_000);
    let started = Instant::now();
    let err = call(Api::Anthropic, Reply::hang(), &req)
        .await
        .expect_err("no answer");
    assert!(matches!(err, ProviderError::NoResponse { .. }), "{err:?}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(600) && took < Duration::from_millis(950),
        "{took:?}"
    );
    assert_eq!(err.classify(), Class::Retryable);
}

#[tokio::test]
async fn a_stream_that_goes_silent_fails_and_keep_alives_do_not_count() {
    let long = Duration::from_secs(30);
    let keep_alives = |step: &dyn Fn() -> SseStep| {
        (0..40)
            .flat_map(|_| [step(), SseStep::Pause(Duration::from_millis(50))])
            .collect::<Vec<_>>()
    };
    let mut openai_silent = vec![openai_chunk(&json!({"role": "assistant", "content": "{"}))];
    openai_silent.push(SseStep::Pause(long));
    let mut openai_comments = vec![openai_chunk(&json!({"role": "assistant", "content": "{"}))];
    openai_comments.extend(keep_alives(&|| {
        SseStep::Comment("OPENROUTER PROCESSING".to_owned())
    }));
    let start = SseStep::event(
        "message_start",
        &json!({"type": "message_start", "message": {"model": "c", "usage": {"input_tokens": 5, "output_tokens": 1}}}),
    );
    let mut anthropic_pings = vec![start];
    anthropic_pings.extend(keep_alives(&|| {
        SseStep::event("ping", &json!({"type": "ping"}))
    }));

    let cases = [
        ("one chunk, then nothing", Api::OpenAi, openai_silent),
        (
            "one chunk, then only comments",
            Api::OpenAi,
            openai_comments,
        ),
        (
            "message_start, then only pings",
            Api::Anthropic,
            anthropic_pings,
        ),
    ];
    for (what, api, steps) in cases {
        let mut req = request(true);
        req.timeouts = quick(500, 300, 10_000);
        let started = Instant::now();
        let err = call(api, Reply::sse(steps), &req).await.expect_err(what);
        assert!(
            matches!(err, ProviderError::Silent { .. }),
            "{what}: {err:?}"
        );
        assert_eq!(err.classify(), Class::Retryable);
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_secs(2),
            "{what}: {took:?}"
        );
    }
}

#[tokio::test]
async fn real_events_keep_a_slow_stream_alive_but_not_past_the_deadline() {
    // Each piece arrives 100 ms after the last: well within an 800 ms
    // inactivity bound, though the whole reply takes longer than that.
    let text = answer().to_string();
    let mut steps = vec![openai_chunk(&json!({"role": "assistant", "content": ""}))];
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(chars.len() / 12 + 1) {
        steps.push(SseStep::Pause(Duration::from_millis(100)));
        steps.push(openai_chunk(
            &json!({"content": piece.iter().collect::<String>()}),
        ));
    }
    steps.push(SseStep::data(&json!({
        "id": "gen-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    })));
    steps.push(SseStep::Data("[DONE]".to_owned()));

    let mut req = request(true);
    req.timeouts = quick(500, 800, 10_000);
    let reply = call(Api::OpenAi, Reply::sse(steps.clone()), &req)
        .await
        .expect("a slow but live stream completes");
    assert_eq!(reply.answer, answer());
    assert!(
        reply.latency > Duration::from_millis(800),
        "{:?}",
        reply.latency
    );

    req.timeouts = quick(500, 800, 350);
    let started = Instant::now();
    let err = call(Api::OpenAi, Reply::sse(steps), &req)
        .await
        .expect_err("past the deadline");
    assert!(matches!(err, ProviderError::Deadline { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_stream_cut_before_its_end_is_retryable() {
    let start = || {
        vec![openai_chunk(
            &json!({"role": "assistant", "content": "{\"findings\": ["}),
        )]
    };
    // The connection closed with no end marker.
    let err = call(Api::OpenAi, Reply::sse(start()), &request(true))
        .await
        .expect_err("cut");
    assert!(matches!(err, ProviderError::StreamEnded), "{err:?}");
    assert_eq!(err.classify(), Class::Retryable);
    // `[DONE]` with no finish reason (llama-cpp-python ends one stream so
    // when another request waits): a cut reply, not an empty one.
    for steps in [vec![], start()] {
        let mut steps = steps;
        steps.push(SseStep::Data("[DONE]".to_owned()));
        let err = call(Api::OpenAi, Reply::sse(steps), &request(true))
            .await
            .expect_err("cut");
        assert!(matches!(err, ProviderError::StreamCut), "{err:?}");
        assert_eq!(err.classify(), Class::Retryable);
        assert_eq!(
            err.to_string(),
            "the server ended the stream without finishing the reply (no finish reason)"
        );
    }
}

/// A small real PNG.
fn png(width: u32, height: u32) -> Vec<u8> {
    let img = image::RgbImage::from_pixel(width, height, image::Rgb([10, 200, 30]));
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut out, image::ImageFormat::Png)
        .expect("encode a PNG");
    out.into_inner()
}

#[tokio::test]
async fn images_follow_their_block_s_text_in_each_provider_s_shape() {
    use base64::Engine as _;
    let desktop = crate::provider::Image::fit(&png(12, 9)).expect("fits");
    let phone = crate::provider::Image::fit(&png(4, 9)).expect("fits");
    let mut req = request(false);
    req.blocks[1] = crate::provider::Block {
        images: vec![desktop.clone(), phone.clone()],
        ..crate::provider::Block::cached("## The page\nscreenshots follow\n")
    };
    let b64 = |i: &crate::provider::Image| base64::engine::general_purpose::STANDARD.encode(&i.png);

    let server = ModelServer::start();
    server.default_reply(Reply::openai(&answer()));
    openai(&server).complete(&req).await.expect("a reply");
    let content = server.requests()[0].body["messages"][1]["content"].clone();
    let image_part = |i: &crate::provider::Image| json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", b64(i)), "detail": "high"}});
    assert_eq!(
        content,
        json!([
            {"type": "text", "text": req.blocks[0].text},
            {"type": "text", "text": req.blocks[1].text},
            image_part(&desktop),
            image_part(&phone),
            {"type": "text", "text": req.blocks[2].text},
        ])
    );

    let server = ModelServer::start();
    server.default_reply(Reply::anthropic(&answer()));
    anthropic(&server).complete(&req).await.expect("a reply");
    let content = server.requests()[0].body["messages"][0]["content"].clone();
    let ephemeral = json!({"type": "ephemeral"});
    let image_block = |i: &crate::provider::Image| json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(i)}});
    let mut last_image = image_block(&phone);
    // The block's cache marker goes on its last part: the last image.
    last_image["cache_control"] = ephemeral.clone();
    assert_eq!(
        content,
        json!([
            {"type": "text", "text": req.blocks[0].text, "cache_control": ephemeral},
            {"type": "text", "text": req.blocks[1].text},
            image_block(&desktop),
            last_image,
            {"type": "text", "text": req.blocks[2].text},
        ])
    );
}

#[tokio::test]
async fn a_reply_past_the_size_limit_is_cut_off_not_held() {
    let huge = "x".repeat(crate::provider::exchange::MAX_REPLY_BYTES + 1);
    // (what, reply, streamed)
    let cases = [
        (
            "a whole reply",
            Reply::json(200, json!({"pad": huge})),
            false,
        ),
        (
            "an event whose line never ends in time",
            Reply::sse(vec![openai_chunk(&json!({"content": huge}))]),
            true,
        ),
    ];
    for (what, reply, stream) in cases {
        let err = call(Api::OpenAi, reply, &request(stream))
            .await
            .expect_err(what);
        assert!(
            matches!(&err, ProviderError::Protocol { detail, .. } if detail == "the reply passed 64 MiB"),
            "{what}: {err}"
        );
        assert_eq!(err.classify(), Class::Retryable, "{what}");
    }
    // An error body that size is read only as far as the error keeps it.
    let err = call(
        Api::OpenAi,
        Reply::json(500, json!({"error": {"message": huge}})),
        &request(false),
    )
    .await
    .expect_err("a 500");
    match err {
        ProviderError::Http { status, body, .. } => {
            assert_eq!(status, 500);
            assert!(body.len() <= 64 * 1024, "{} bytes kept", body.len());
        }
        other => panic!("{other:?}"),
    }
}
