//! Shared fixtures of the provider tests: a review request, its answer, and
//! providers pointed at a scripted model server.

use std::time::Duration;

use gate_tests::model_server::ModelServer;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::provider::{
    AnthropicProvider, Block, ModelRequest, OpenAiProvider, Timeouts, http_client,
};

/// The reviewer answer schema, strict-mode shaped.
pub(crate) fn schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["findings", "criteria", "rules"],
        "properties": {
            "findings": {"type": "array", "items": {"type": "object"}},
            "criteria": {"type": "array", "items": {"type": "object"}},
            "rules": {"type": "array", "items": {"type": "object"}}
        }
    })
}

/// An answer that follows [`schema`], with non-ASCII text to survive streaming.
pub(crate) fn answer() -> Value {
    json!({
        "findings": [{
            "severity": "critical",
            "file": "src/pay.rs",
            "line": 42,
            "title": "Refund ignores the currency — “€” vs “$”",
            "detail": "The refund path adds amounts of different currencies.",
            "confidence": 0.9
        }],
        "criteria": [{"id": "refunds", "met": 0.2, "why": "see finding"}],
        "rules": []
    })
}

/// Generous bounds for tests that should succeed.
pub(crate) fn timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(2),
        inactivity: Duration::from_secs(5),
        deadline: Instant::now() + Duration::from_secs(20),
    }
}

/// A quality review request: shared context and remit content marked for
/// caching, the role's instructions last.
pub(crate) fn request(stream: bool) -> ModelRequest {
    ModelRequest {
        role: "quality".to_owned(),
        run_id: "run-0193".to_owned(),
        model: "model-x".to_owned(),
        blocks: vec![
            Block::cached("## Change\nspec summary, task graph, criteria, file list\n"),
            Block::cached("## Files\n<<<fence-n0nce\nfn pay() {}\nfence-n0nce>>>\n"),
            Block::new("## Your role\nFlag real bugs only.\n"),
        ],
        schema_name: "review".to_owned(),
        schema: schema(),
        max_output_tokens: 4096,
        stream,
        followups: Vec::new(),
        timeouts: timeouts(),
    }
}

/// The shared HTTP client.
pub(crate) fn client() -> reqwest::Client {
    http_client(Duration::from_secs(2)).expect("an HTTP client")
}

/// An OpenAI-compatible provider at `server`, with a key.
pub(crate) fn openai(server: &ModelServer) -> OpenAiProvider {
    OpenAiProvider::new(
        client(),
        &format!("{}/v1/", server.url()),
        Some("sk-test".to_owned()),
    )
}

/// An Anthropic provider at `server`, with a key.
pub(crate) fn anthropic(server: &ModelServer) -> AnthropicProvider {
    AnthropicProvider::new(client(), &server.url(), Some("ak-test".to_owned()))
}
