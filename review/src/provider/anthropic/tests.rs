use gate_tests::model_server::{ModelServer, Reply};
use serde_json::{Value, json};

use crate::provider::anthropic::{ANSWER_TOOL, ANTHROPIC_VERSION};
use crate::provider::test_support::{answer, anthropic, client, request, schema};
use crate::provider::{
    AnthropicProvider, Block, Finish, Provider, ProviderError, SYSTEM_PROMPT, Turn, Usage,
};

#[tokio::test]
async fn request_body_and_headers_follow_the_messages_api() {
    for stream in [true, false] {
        let server = ModelServer::start();
        server.default_reply(Reply::anthropic(&answer()));
        let mut req = request(stream);
        req.followups = vec![Turn {
            assistant: "{\"findings\": 3}".to_owned(),
            user: "findings must be an array".to_owned(),
        }];
        anthropic(&server).complete(&req).await.expect("a reply");

        let sent = &server.requests()[0];
        assert_eq!(
            (sent.method.as_str(), sent.path.as_str()),
            ("POST", "/v1/messages")
        );
        assert_eq!(sent.header("x-api-key"), Some("ak-test"));
        assert_eq!(sent.header("anthropic-version"), Some(ANTHROPIC_VERSION));
        assert_eq!(sent.header("content-type"), Some("application/json"));
        assert_eq!(sent.header("authorization"), None);
        assert_eq!(sent.header("x-gate-role"), Some("quality"));
        assert_eq!(sent.header("x-gate-run"), Some("run-0193"));

        let body = &sent.body;
        assert_eq!(body["model"], "model-x");
        assert_eq!(body["max_tokens"], 4096);
        assert_eq!(body["system"], SYSTEM_PROMPT);
        assert_eq!(body["stream"], stream);
        let ephemeral = json!({"type": "ephemeral"});
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [
                    {"type": "text", "text": req.blocks[0].text, "cache_control": ephemeral},
                    {"type": "text", "text": req.blocks[1].text, "cache_control": ephemeral},
                    {"type": "text", "text": req.blocks[2].text},
                ]},
                {"role": "assistant", "content": [{"type": "text", "text": "{\"findings\": 3}"}]},
                {"role": "user", "content": [{"type": "text", "text": "findings must be an array"}]},
            ]),
            "blocks are separate parts, in order, byte for byte, cache_control where marked"
        );
        assert_eq!(body["tools"][0]["name"], ANSWER_TOOL);
        assert_eq!(body["tools"][0]["input_schema"], schema());
        assert!(
            body["tools"][0]["description"]
                .as_str()
                .is_some_and(|d| !d.is_empty())
        );
        assert_eq!(
            body["tool_choice"],
            json!({"type": "tool", "name": ANSWER_TOOL})
        );
    }
}

#[test]
fn base_url_is_the_api_root_with_or_without_v1() {
    for base in [
        "https://api.anthropic.com",
        "https://api.anthropic.com/",
        "https://api.anthropic.com/v1",
    ] {
        let provider = AnthropicProvider::new(client(), base, None);
        assert_eq!(
            provider.endpoint(),
            "https://api.anthropic.com/v1/messages",
            "{base}"
        );
    }
}

#[test]
fn cache_markers_skip_empty_blocks_and_stop_at_four() {
    let provider = AnthropicProvider::new(client(), "https://api.anthropic.com", None);
    let mut req = request(true);
    req.blocks = vec![
        Block::new("a"),
        Block::cached(""),
        Block::cached("b"),
        Block::cached("c"),
        Block::cached("d"),
        Block::cached("e"),
        Block::new("f"),
    ];
    let body = provider.request_body(&req);
    let parts = body["messages"][0]["content"].as_array().expect("parts");
    let texts: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
    assert_eq!(texts, ["a", "b", "c", "d", "e", "f"]);
    let marked: Vec<bool> = parts
        .iter()
        .map(|p| p.get("cache_control").is_some())
        .collect();
    // The empty block's marker moves to "a"; the fifth marker ("e") is dropped.
    assert_eq!(marked, [true, true, true, true, false, false]);
}

#[tokio::test]
async fn replies_parse_streamed_and_whole_with_cache_tokens_added_to_input() {
    let cases = [
        (
            "input_tokens excludes cache reads and writes",
            Reply::anthropic(&answer())
                .model("claude-sonnet-x")
                .usage(json!({
                    "input_tokens": 50,
                    "cache_creation_input_tokens": 200,
                    "cache_read_input_tokens": 1000,
                    "output_tokens": 80
                })),
            Usage {
                input_tokens: Some(1250),
                cached_input_tokens: Some(1000),
                cache_write_tokens: Some(200),
                output_tokens: Some(80),
                cost_usd: None,
            },
        ),
        (
            "only the output count: the rest stays unknown",
            Reply::anthropic(&answer())
                .model("claude-sonnet-x")
                .usage(json!({"output_tokens": 5})),
            Usage {
                output_tokens: Some(5),
                ..Usage::default()
            },
        ),
    ];
    for (what, reply, usage) in cases {
        for stream in [true, false] {
            let server = ModelServer::start();
            server.default_reply(reply.clone());
            let got = anthropic(&server)
                .complete(&request(stream))
                .await
                .unwrap_or_else(|e| panic!("{what} (stream {stream}): {e}"));
            assert_eq!(got.answer, answer(), "{what} (stream {stream})");
            assert_eq!(serde_json::from_str::<Value>(&got.raw).ok(), Some(answer()));
            // The stream's message_start says output_tokens 1; message_delta's count wins.
            assert_eq!(got.usage, usage, "{what} (stream {stream})");
            assert_eq!(got.finish, Finish::Stop);
            assert_eq!(got.model, "claude-sonnet-x");
        }
    }
}

#[tokio::test]
async fn max_tokens_refusal_and_text_instead_of_the_tool() {
    for stream in [true, false] {
        let complete = |reply: Reply| async move {
            let server = ModelServer::start();
            server.default_reply(reply);
            anthropic(&server).complete(&request(stream)).await
        };

        if stream {
            // Only a stream shows the cut-off JSON text itself.
            let cut = r#"{"findings": [{"severity": "crit"#;
            let result = complete(Reply::anthropic_tool_input(cut).finish("max_tokens")).await;
            let Err(ProviderError::Truncated(bad)) = result else {
                panic!("stop_reason max_tokens with cut JSON: {result:?}")
            };
            assert_eq!(bad.raw, cut);
        }
        let long = complete(Reply::anthropic(&answer()).finish("max_tokens")).await;
        assert_eq!(long.expect("it still parses").finish, Finish::Length);

        let refused =
            complete(Reply::anthropic_text("I won't review this.").finish("refusal")).await;
        let Err(ProviderError::Refusal(bad)) = refused else {
            panic!("stop_reason refusal (stream {stream}): {refused:?}")
        };
        assert_eq!(bad.detail, "I won't review this.");

        let text = complete(Reply::anthropic_text("Looks good to me!")).await;
        let Err(ProviderError::Malformed(bad)) = text else {
            panic!("a text reply (stream {stream}): {text:?}")
        };
        assert_eq!(bad.raw, "Looks good to me!");
        assert_eq!(bad.usage.output_tokens, Some(80));
    }
}
