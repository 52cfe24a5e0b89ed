use gate_tests::model_server::{Matcher, ModelServer, Reply};
use serde_json::{Value, json};

use crate::provider::test_support::{answer, client, openai, request, schema};
use crate::provider::{
    ContentShape, Finish, MaxTokensField, OpenAiProvider, Price, Provider, ProviderError,
    SYSTEM_PROMPT, StructuredOutput, Turn, Usage, WireShape, cost,
};

#[tokio::test]
async fn request_body_and_headers_follow_chat_completions() {
    for stream in [true, false] {
        let server = ModelServer::start();
        server.default_reply(Reply::openai(&answer()));
        let mut req = request(stream);
        req.followups = vec![Turn {
            assistant: "not json".to_owned(),
            user: "That was not JSON: expected value at line 1".to_owned(),
        }];
        openai(&server).complete(&req).await.expect("a reply");

        let sent = &server.requests()[0];
        assert_eq!(
            (sent.method.as_str(), sent.path.as_str()),
            ("POST", "/v1/chat/completions")
        );
        assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
        assert_eq!(sent.header("x-gate-role"), Some("quality"));
        assert_eq!(sent.header("x-gate-run"), Some("run-0193"));
        assert_eq!(sent.header("content-type"), Some("application/json"));

        let body = &sent.body;
        assert_eq!(body["model"], "model-x");
        let expected_parts: Vec<Value> = req
            .blocks
            .iter()
            .map(|b| json!({"type": "text", "text": b.text}))
            .collect();
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": expected_parts},
                {"role": "assistant", "content": "not json"},
                {"role": "user", "content": "That was not JSON: expected value at line 1"},
            ]),
            "blocks are separate parts, in order, byte for byte, with no cache markers"
        );
        assert_eq!(
            body["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "review", "strict": true, "schema": schema()}})
        );
        assert_eq!(body["max_completion_tokens"], 4096);
        assert!(
            body.get("max_tokens").is_none(),
            "OpenAI's reasoning models reject max_tokens"
        );
        assert_eq!(body["stream"], stream);
        assert_eq!(
            body.get("stream_options"),
            stream.then(|| json!({"include_usage": true})).as_ref()
        );
    }
}

#[tokio::test]
async fn a_keyless_server_gets_no_authorization() {
    let server = ModelServer::start();
    server.default_reply(Reply::openai(&answer()));
    let local = OpenAiProvider::new(client(), &format!("{}/v1", server.url()), None);
    local.complete(&request(false)).await.expect("a reply");
    assert_eq!(server.requests()[0].header("authorization"), None);
}

/// Each `[provider.X]` setting changes its own part of the body, and only it.
#[test]
fn the_request_takes_the_shape_the_provider_is_set_to() {
    let text_of = |body: &Value| -> String {
        match &body["messages"][1]["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .map(|p| p["text"].as_str().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n\n"),
            other => panic!("content is {other}"),
        }
    };
    let base = WireShape::default();
    // (shape, response_format, content is a string, token field, stream_options sent, schema in prompt)
    let cases = [
        (
            base,
            Some("json_schema"),
            false,
            "max_completion_tokens",
            true,
            false,
        ),
        (
            WireShape {
                structured_output: StructuredOutput::JsonObject,
                ..base
            },
            Some("json_object"),
            false,
            "max_completion_tokens",
            true,
            true,
        ),
        (
            WireShape {
                structured_output: StructuredOutput::None,
                content: ContentShape::Text,
                ..base
            },
            None,
            true,
            "max_completion_tokens",
            true,
            true,
        ),
        (
            WireShape {
                max_tokens_field: MaxTokensField::MaxTokens,
                stream_usage: false,
                ..base
            },
            Some("json_schema"),
            false,
            "max_tokens",
            false,
            false,
        ),
    ];
    for (shape, format, string, field, usage, in_prompt) in cases {
        let provider = OpenAiProvider::new(client(), "http://localhost/v1", None).with_shape(shape);
        let body = provider.request_body(&request(true));
        assert_eq!(
            body.pointer("/response_format/type")
                .and_then(Value::as_str),
            format,
            "{shape:?}"
        );
        assert_eq!(
            body["messages"][1]["content"].is_string(),
            string,
            "{shape:?}"
        );
        assert_eq!(body[field], 4096, "{shape:?}");
        let other = if field == "max_tokens" {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        assert!(
            body.get(other).is_none(),
            "{shape:?}: both limit fields sent"
        );
        assert_eq!(body.get("stream_options").is_some(), usage, "{shape:?}");
        let text = text_of(&body);
        assert_eq!(
            text.contains("follows this JSON schema"),
            in_prompt,
            "{shape:?}: {text}"
        );
        if in_prompt {
            assert!(text.contains(&serde_json::to_string(&schema()).unwrap()));
        }
        // The material itself is sent whole, in order, whatever the shape.
        let blocks: Vec<String> = request(true)
            .blocks
            .iter()
            .map(|b| b.text.clone())
            .collect();
        assert!(text.starts_with(&blocks.join("\n\n")), "{shape:?}");
    }
}

#[test]
fn the_system_prompt_and_shared_prefix_are_the_same_for_every_role() {
    let provider = OpenAiProvider::new(client(), "http://localhost/v1", None);
    let mut security = request(true);
    security.role = "security".to_owned();
    security.blocks[2].text = "## Your role\nFlag exploitable issues only.\n".to_owned();
    let a = provider.request_body(&request(true));
    let b = provider.request_body(&security);
    assert_eq!(a["messages"][0], b["messages"][0]);
    assert_eq!(
        a["messages"][1]["content"][0],
        b["messages"][1]["content"][0]
    );
    assert_eq!(
        a["messages"][1]["content"][1],
        b["messages"][1]["content"][1]
    );
    assert_ne!(
        a["messages"][1]["content"][2],
        b["messages"][1]["content"][2]
    );
}

#[tokio::test]
async fn replies_parse_streamed_and_whole_with_usage_normalised() {
    let cases = [
        (
            "OpenAI: prompt_tokens already includes the cached tokens",
            Reply::openai(&answer()).model("gpt-5-2025").usage(json!({
                "prompt_tokens": 1200, "completion_tokens": 80, "total_tokens": 1280,
                "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0}
            })),
            Usage {
                input_tokens: Some(1200),
                cached_input_tokens: Some(1024),
                cache_write_tokens: None,
                output_tokens: Some(80),
                cost_usd: None,
            },
        ),
        (
            "OpenRouter: cost reported, cache writes counted",
            Reply::openai(&answer()).model("gpt-5-2025").usage(json!({
                "prompt_tokens": 194, "completion_tokens": 2, "total_tokens": 196, "cost": 0.95,
                "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 100}
            })),
            Usage {
                input_tokens: Some(194),
                cached_input_tokens: Some(0),
                cache_write_tokens: Some(100),
                output_tokens: Some(2),
                cost_usd: Some(0.95),
            },
        ),
        (
            "a local server without cache details",
            Reply::openai(&answer())
                .model("gpt-5-2025")
                .usage(json!({"prompt_tokens": 10, "completion_tokens": 3})),
            Usage {
                input_tokens: Some(10),
                output_tokens: Some(3),
                ..Usage::default()
            },
        ),
        (
            "no usage at all: unknown, not zero",
            Reply::openai(&answer()).model("gpt-5-2025").no_usage(),
            Usage::default(),
        ),
    ];
    for (what, reply, usage) in cases {
        for stream in [true, false] {
            let server = ModelServer::start();
            server.script(
                Matcher::any().path("/v1/chat/completions"),
                vec![reply.clone()],
            );
            let got = openai(&server)
                .complete(&request(stream))
                .await
                .unwrap_or_else(|e| panic!("{what} (stream {stream}): {e}"));
            assert_eq!(got.answer, answer(), "{what} (stream {stream})");
            assert_eq!(serde_json::from_str::<Value>(&got.raw).ok(), Some(answer()));
            assert_eq!(got.usage, usage, "{what} (stream {stream})");
            assert_eq!(got.finish, Finish::Stop);
            assert_eq!(got.model, "gpt-5-2025");
            assert!(got.latency > std::time::Duration::ZERO);
        }
    }
}

#[test]
fn openrouter_cost_is_preferred_over_the_table() {
    let price = Price {
        input: 3.0,
        cached_input: 0.3,
        cache_write: 3.75,
        output: 15.0,
    };
    let usage = Usage {
        input_tokens: Some(194),
        output_tokens: Some(2),
        cost_usd: Some(0.95),
        ..Usage::default()
    };
    assert_eq!(cost(&usage, &price), Some(0.95));
}

#[tokio::test]
async fn finish_reasons_refusals_and_malformed_replies() {
    let truncated = r#"{"findings": [{"severity": "critical", "file": "src/pa"#;
    for stream in [true, false] {
        let complete = |reply: Reply| async move {
            let server = ModelServer::start();
            server.default_reply(reply);
            openai(&server).complete(&request(stream)).await
        };

        let cut = complete(Reply::openai_text(truncated).finish("length")).await;
        let Err(ProviderError::Truncated(bad)) = cut else {
            panic!("finish_reason length with cut JSON (stream {stream}): {cut:?}")
        };
        assert_eq!(bad.raw, truncated);
        assert_eq!(
            bad.usage.output_tokens,
            Some(80),
            "a failed reply still reports its usage"
        );

        let whole_but_long = complete(Reply::openai(&answer()).finish("length")).await;
        assert_eq!(
            whole_but_long.expect("it still parses").finish,
            Finish::Length
        );

        let refused = complete(Reply::openai(&answer()).refusal("I can't help with that.")).await;
        let Err(ProviderError::Refusal(bad)) = refused else {
            panic!("a refusal (stream {stream}): {refused:?}")
        };
        assert_eq!(bad.detail, "I can't help with that.");

        let filtered = complete(Reply::openai_text("").finish("content_filter")).await;
        assert!(
            matches!(filtered, Err(ProviderError::Refusal(_))),
            "{filtered:?}"
        );

        for text in [
            "Here is my review:\n```json\n{\"findings\": []}\n```",
            "[]",
            "",
        ] {
            let malformed = complete(Reply::openai_text(text)).await;
            let Err(ProviderError::Malformed(bad)) = &malformed else {
                panic!("{text:?} (stream {stream}): {malformed:?}")
            };
            assert_eq!(bad.raw, text);
            assert!(!bad.detail.is_empty());
        }

        let other = complete(Reply::openai(&answer()).finish("tool_calls")).await;
        assert_eq!(
            other.expect("parses").finish,
            Finish::Other("tool_calls".to_owned())
        );
    }
}
