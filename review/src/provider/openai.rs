//! OpenAI Chat Completions, and every server that speaks it: OpenAI,
//! OpenRouter, vLLM, Ollama, llama.cpp, Workers AI.
//!
//! `POST {base_url}/chat/completions`, where `base_url` ends in the API
//! version as in the OpenAI SDKs: `https://api.openai.com/v1`,
//! `https://openrouter.ai/api/v1`, `http://localhost:11434/v1`.
//!
//! Usage: `prompt_tokens` already includes the cached
//! `prompt_tokens_details.cached_tokens` (and OpenRouter's
//! `cache_write_tokens`), so it is the total input as is. OpenRouter's
//! `usage.cost` is kept as the provider-reported cost.

use std::fmt;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::provider::errors::{ApiError, ProviderError};
use crate::provider::exchange::{
    Collected, Finish, ModelReply, ModelRequest, Part, Provider, SYSTEM_PROMPT, capped,
    content_blocks, is_event_stream, protocol, read_body, send, within_deadline,
};
use crate::provider::shape::{ContentShape, StructuredOutput, WireShape};
use crate::provider::sse::EventReader;
use crate::provider::usage::Usage;

/// A client of one OpenAI-compatible endpoint.
#[derive(Clone)]
pub struct OpenAiProvider {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    shape: WireShape,
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("shape", &self.shape)
            .finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    /// A provider at `base_url` (ending in the version, e.g. `…/v1`); the key,
    /// when given, is sent as `Authorization: Bearer <key>` (local servers
    /// need none).
    pub fn new(client: reqwest::Client, base_url: &str, api_key: Option<String>) -> Self {
        Self {
            client,
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key: api_key.filter(|k| !k.is_empty()),
            shape: WireShape::default(),
        }
    }

    /// Shapes requests as `shape` says (what the server can take).
    #[must_use]
    pub fn with_shape(mut self, shape: WireShape) -> Self {
        self.shape = shape;
        self
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    /// The JSON body for `req`.
    ///
    /// OpenAI deprecated `max_tokens` for `max_completion_tokens`, and its
    /// reasoning models reject `max_tokens` (also beside the new one), so the
    /// default sends only the new name; llama-cpp-python and Ollama read only
    /// the old one (`max_tokens_field`). With `structured_output` other than
    /// `json_schema` the schema travels in the last text part instead.
    pub fn request_body(&self, req: &ModelRequest) -> Value {
        let shape = self.shape;
        let in_prompt = shape.structured_output != StructuredOutput::JsonSchema;
        let schema_text = in_prompt.then(|| schema_instruction(&req.schema));
        let mut blocks: Vec<(Part<'_>, bool)> = content_blocks(&req.blocks);
        if let Some(text) = &schema_text {
            blocks.push((Part::Text(text), false));
        }
        let has_image = blocks.iter().any(|(p, _)| matches!(p, Part::Image(_)));
        let content = if shape.content == ContentShape::Text && !has_image {
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(|(p, _)| match p {
                    Part::Text(t) => Some(*t),
                    Part::Image(_) => None,
                })
                .collect();
            json!(texts.join("\n\n"))
        } else {
            Value::Array(
                blocks
                    .into_iter()
                    .map(|(part, _)| match part {
                        Part::Text(text) => json!({"type": "text", "text": text}),
                        Part::Image(image) => json!({
                            "type": "image_url",
                            "image_url": {"url": image.data_url(), "detail": "high"},
                        }),
                    })
                    .collect(),
            )
        };
        let mut messages = vec![
            json!({"role": "system", "content": SYSTEM_PROMPT}),
            json!({"role": "user", "content": content}),
        ];
        for turn in &req.followups {
            messages.push(json!({"role": "assistant", "content": turn.assistant}));
            messages.push(json!({"role": "user", "content": turn.user}));
        }
        let mut body = json!({"model": req.model, "messages": messages});
        match shape.structured_output {
            StructuredOutput::JsonSchema => {
                body["response_format"] = json!({
                    "type": "json_schema",
                    "json_schema": {"name": req.schema_name, "strict": true, "schema": req.schema},
                });
            }
            StructuredOutput::JsonObject => {
                body["response_format"] = json!({"type": "json_object"});
            }
            StructuredOutput::None => {}
        }
        body[shape.max_tokens_field.name()] = json!(req.max_output_tokens);
        body["stream"] = json!(req.stream);
        if req.stream && shape.stream_usage {
            // Without it OpenAI sends no usage on a stream.
            body["stream_options"] = json!({"include_usage": true});
        }
        body
    }

    async fn call(&self, req: &ModelRequest) -> Result<ModelReply, ProviderError> {
        let started = Instant::now();
        let mut builder = self
            .client
            .post(self.endpoint())
            .json(&self.request_body(req));
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        tracing::debug!(role = %req.role, model = %req.model, url = %self.endpoint(), "model request");
        let response = send(builder, req).await?;
        let collected = if req.stream && is_event_stream(&response) {
            read_stream(response, req).await?
        } else {
            read_whole(&read_body(response).await?)?
        };
        let latency = started.elapsed();
        tracing::debug!(role = %req.role, model = %collected.model, ?latency, "model reply");
        collected.conclude(latency)
    }
}

impl Provider for OpenAiProvider {
    fn complete<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelReply, ProviderError>> {
        within_deadline(req, self.call(req)).boxed()
    }
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptDetails>,
    /// OpenRouter: the cost in credits (USD).
    cost: Option<f64>,
}

#[derive(Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
    /// OpenRouter, for providers that bill cache writes.
    cache_write_tokens: Option<u64>,
}

impl WireUsage {
    fn normalise(self) -> Usage {
        let details = self.prompt_tokens_details;
        Usage {
            input_tokens: self.prompt_tokens,
            cached_input_tokens: details.as_ref().and_then(|d| d.cached_tokens),
            cache_write_tokens: details.as_ref().and_then(|d| d.cache_write_tokens),
            output_tokens: self.completion_tokens,
            cost_usd: self.cost,
        }
    }
}

#[derive(Deserialize)]
struct Chunk {
    model: Option<String>,
    choices: Option<Vec<StreamChoice>>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct StreamChoice {
    #[serde(default)]
    index: u32,
    delta: Option<Message>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Completion {
    model: Option<String>,
    choices: Option<Vec<Choice>>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: u32,
    message: Option<Message>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    content: Option<String>,
    refusal: Option<String>,
}

fn finish(reason: &str) -> Finish {
    match reason {
        "stop" => Finish::Stop,
        "length" => Finish::Length,
        "content_filter" => Finish::Refusal,
        other => Finish::Other(other.to_owned()),
    }
}

/// An error reported inside a 200: a top-level `error` (OpenAI's mid-stream
/// shape, OpenRouter's error chunk), or `finish_reason: "error"`.
fn error_in(value: &Value, raw: &str) -> Option<ProviderError> {
    let named = value.get("error").is_some_and(|e| !e.is_null());
    let finished_in_error = value
        .get("choices")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.get("finish_reason").and_then(Value::as_str) == Some("error"))
        });
    if !named && !finished_in_error {
        return None;
    }
    let error = ApiError::from_value(value).unwrap_or_else(|| ApiError {
        message: "the reply finished with finish_reason \"error\"".to_owned(),
        ..ApiError::default()
    });
    Some(ProviderError::StreamError {
        error: Box::new(error),
        raw: capped(raw),
    })
}

fn add(into: &mut Option<String>, piece: Option<String>) {
    if let Some(piece) = piece {
        into.get_or_insert_with(String::new).push_str(&piece);
    }
}

async fn read_stream(
    response: reqwest::Response,
    req: &ModelRequest,
) -> Result<Collected, ProviderError> {
    let mut reader = EventReader::new(response, req.timeouts.inactivity, req.timeouts.deadline);
    let mut out = Collected::default();
    let mut text: Option<String> = None;
    let mut done = false;
    while let Some(event) = reader.next().await? {
        reader.activity();
        if event.data == "[DONE]" {
            done = true;
            break;
        }
        let value: Value = serde_json::from_str(&event.data)
            .map_err(|e| protocol(format!("a stream event is not JSON: {e}"), &event.data))?;
        if let Some(error) = error_in(&value, &event.data) {
            return Err(error);
        }
        let chunk: Chunk = serde_json::from_value(value).map_err(|e| {
            protocol(
                format!("a stream event is not a completion chunk: {e}"),
                &event.data,
            )
        })?;
        if let Some(model) = chunk.model {
            out.model = model;
        }
        if let Some(usage) = chunk.usage {
            out.usage = usage.normalise();
        }
        // One completion was asked for (n = 1): choice 0 is the answer.
        for choice in chunk
            .choices
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.index == 0)
        {
            if let Some(delta) = choice.delta {
                add(&mut text, delta.content);
                add(&mut out.refusal, delta.refusal);
            }
            if let Some(reason) = choice.finish_reason {
                out.finish = Some(finish(&reason));
            }
        }
    }
    // Every server sends a finish reason with the last choice; `[DONE]`
    // without one is a reply the server gave up on (llama-cpp-python does
    // it to one stream when another request waits), not an empty answer.
    match (out.finish.is_some(), done) {
        (false, true) => return Err(ProviderError::StreamCut),
        (false, false) => return Err(ProviderError::StreamEnded),
        _ => {}
    }
    out.text = text.unwrap_or_default();
    Ok(out)
}

/// The schema as the prompt states it, for a server that cannot hold the
/// reply to it: the reply is still validated against it as always.
fn schema_instruction(schema: &Value) -> String {
    format!(
        "Your answer is one JSON object that follows this JSON schema:\n{}",
        serde_json::to_string(schema).unwrap_or_default()
    )
}

/// A whole (not streamed) reply body as the client reads it: the answer, or
/// why it cannot be used. Public for the reply-parser fuzz target.
pub fn parse_body(body: &str) -> Result<ModelReply, ProviderError> {
    read_whole(body)?.conclude(std::time::Duration::ZERO)
}

fn read_whole(body: &str) -> Result<Collected, ProviderError> {
    let value: Value = serde_json::from_str(body)
        .map_err(|e| protocol(format!("the reply is not JSON: {e}"), body))?;
    if let Some(error) = error_in(&value, body) {
        return Err(error);
    }
    let completion: Completion = serde_json::from_value(value)
        .map_err(|e| protocol(format!("the reply is not a chat completion: {e}"), body))?;
    let choice = completion
        .choices
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.index == 0)
        .ok_or_else(|| protocol("the reply has no choices", body))?;
    let message = choice
        .message
        .ok_or_else(|| protocol("the reply's choice has no message", body))?;
    Ok(Collected {
        text: message.content.unwrap_or_default(),
        refusal: message.refusal,
        finish: choice.finish_reason.as_deref().map(finish),
        usage: completion
            .usage
            .map(WireUsage::normalise)
            .unwrap_or_default(),
        model: completion.model.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests;
