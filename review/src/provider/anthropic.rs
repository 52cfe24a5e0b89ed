//! Anthropic Messages.
//!
//! `POST {base_url}/v1/messages`, where `base_url` is the API root as in the
//! Anthropic SDKs: `https://api.anthropic.com` (a trailing `/v1` is accepted
//! and not doubled, so `https://api.anthropic.com/v1` works too).
//!
//! Structured output goes through a forced tool: the schema is the
//! `input_schema` of a tool named [`ANSWER_TOOL`] and `tool_choice` names it,
//! so the answer is that tool call's input. Anthropic caches only where
//! marked: each block with a cache breakpoint carries
//! `cache_control: {"type": "ephemeral"}` (at most four, the API's limit).
//!
//! Usage: `input_tokens` excludes `cache_read_input_tokens` and
//! `cache_creation_input_tokens`; the three are added up so
//! [`Usage::input_tokens`] is the whole input, as for OpenAI.

use std::collections::BTreeMap;
use std::fmt;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::provider::errors::{ApiError, ProviderError};
use crate::provider::exchange::{
    Collected, Finish, ModelReply, ModelRequest, Part as Sent, Provider, SYSTEM_PROMPT, capped,
    content_blocks, is_event_stream, protocol, read_body, send, within_deadline,
};
use crate::provider::sse::EventReader;
use crate::provider::usage::Usage;

/// The API version every request names.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// The forced tool whose input is the answer.
pub const ANSWER_TOOL: &str = "answer";
/// The most `cache_control` breakpoints one request may carry.
const MAX_BREAKPOINTS: usize = 4;

/// A client of the Anthropic Messages API (or a server that speaks it).
#[derive(Clone)]
pub struct AnthropicProvider {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
}

impl fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

impl AnthropicProvider {
    /// A provider at `base_url` (the API root, `https://api.anthropic.com`);
    /// the key, when given, is sent as `x-api-key`.
    pub fn new(client: reqwest::Client, base_url: &str, api_key: Option<String>) -> Self {
        let root = base_url.trim_end_matches('/');
        let root = root.strip_suffix("/v1").unwrap_or(root);
        Self {
            client,
            base_url: root.to_owned(),
            api_key: api_key.filter(|k| !k.is_empty()),
        }
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> String {
        format!("{}/v1/messages", self.base_url)
    }

    /// The JSON body for `req`.
    pub fn request_body(&self, req: &ModelRequest) -> Value {
        let mut marks = 0;
        let parts: Vec<Value> = content_blocks(&req.blocks)
            .into_iter()
            .map(|(part, breakpoint)| {
                let mut part = match part {
                    Sent::Text(text) => json!({"type": "text", "text": text}),
                    Sent::Image(image) => json!({
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": image.base64()},
                    }),
                };
                if breakpoint && marks < MAX_BREAKPOINTS {
                    part["cache_control"] = json!({"type": "ephemeral"});
                    marks += 1;
                }
                part
            })
            .collect();
        let mut messages = vec![json!({"role": "user", "content": parts})];
        for turn in &req.followups {
            messages.push(json!({"role": "assistant", "content": [text_part(&turn.assistant)]}));
            messages.push(json!({"role": "user", "content": [text_part(&turn.user)]}));
        }
        json!({
            "model": req.model,
            "max_tokens": req.max_output_tokens,
            "system": SYSTEM_PROMPT,
            "messages": messages,
            "tools": [{
                "name": ANSWER_TOOL,
                "description": "Give your answer: its input is the one JSON object the schema describes. \
                                This is the only way to answer.",
                "input_schema": req.schema,
            }],
            "tool_choice": {"type": "tool", "name": ANSWER_TOOL},
            "stream": req.stream,
        })
    }

    async fn call(&self, req: &ModelRequest) -> Result<ModelReply, ProviderError> {
        let started = Instant::now();
        let mut builder = self
            .client
            .post(self.endpoint())
            .header("anthropic-version", ANTHROPIC_VERSION)
            .json(&self.request_body(req));
        if let Some(key) = &self.api_key {
            builder = builder.header("x-api-key", key);
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

impl Provider for AnthropicProvider {
    fn complete<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelReply, ProviderError>> {
        within_deadline(req, self.call(req)).boxed()
    }
}

/// A text part; the API rejects empty ones.
fn text_part(text: &str) -> Value {
    let text = if text.is_empty() { "(empty)" } else { text };
    json!({"type": "text", "text": text})
}

#[derive(Deserialize, Default)]
#[allow(clippy::struct_field_names)] // the API's names
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// `later`'s counts where it has them (`message_delta` counts are
    /// cumulative and may repeat the input side).
    fn update(&mut self, later: &Self) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = later
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
    }

    fn normalise(&self) -> Usage {
        let read = self.cache_read_input_tokens;
        let written = self.cache_creation_input_tokens;
        Usage {
            input_tokens: self
                .input_tokens
                .map(|fresh| fresh + read.unwrap_or(0) + written.unwrap_or(0)),
            cached_input_tokens: read,
            cache_write_tokens: written,
            output_tokens: self.output_tokens,
            cost_usd: None,
        }
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentBlock {
    ToolUse {
        name: String,
        #[serde(default)]
        input: Value,
    },
    Text {
        #[serde(default)]
        text: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(clippy::enum_variant_names)] // the API's names
enum Delta {
    InputJsonDelta {
        partial_json: String,
    },
    TextDelta {
        text: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct StartMessage {
    model: Option<String>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct MessageDelta {
    stop_reason: Option<String>,
}

/// A streaming event. New event types may appear at any time: they are
/// ignored.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    MessageDelta {
        delta: MessageDelta,
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error,
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct Message {
    model: Option<String>,
    #[serde(default)]
    content: Vec<ContentBlock>,
    stop_reason: Option<String>,
    usage: Option<WireUsage>,
}

fn finish(reason: &str) -> Finish {
    match reason {
        "end_turn" | "tool_use" | "stop_sequence" => Finish::Stop,
        "max_tokens" => Finish::Length,
        "refusal" => Finish::Refusal,
        other => Finish::Other(other.to_owned()),
    }
}

/// A content block as it streams in.
enum Part {
    /// The answer tool's input: the JSON pieces so far, and the input the
    /// block started with (used when no piece follows).
    Answer {
        json: String,
        start: Value,
    },
    Text(String),
    Ignored,
}

impl Part {
    fn from_block(block: ContentBlock) -> Self {
        match block {
            ContentBlock::ToolUse { name, input } if name == ANSWER_TOOL => Self::Answer {
                json: String::new(),
                start: input,
            },
            ContentBlock::Text { text } => Self::Text(text),
            ContentBlock::ToolUse { .. } | ContentBlock::Other => Self::Ignored,
        }
    }
}

/// The answer's text: the answer tool's input when the model called it, else
/// whatever text it wrote instead.
fn answer_text(parts: impl IntoIterator<Item = Part>) -> String {
    let mut texts = String::new();
    for part in parts {
        match part {
            Part::Answer { json, start } if json.is_empty() => return start.to_string(),
            Part::Answer { json, .. } => return json,
            Part::Text(text) => texts.push_str(&text),
            Part::Ignored => {}
        }
    }
    texts
}

fn conclude_parts(
    parts: Vec<Part>,
    stop: Option<&str>,
    usage: &WireUsage,
    model: String,
) -> Collected {
    let finish = stop.map(finish);
    let text = answer_text(parts);
    let refusal =
        (finish == Some(Finish::Refusal) && !text.trim().is_empty()).then(|| text.clone());
    Collected {
        text,
        refusal,
        finish,
        usage: usage.normalise(),
        model,
    }
}

async fn read_stream(
    response: reqwest::Response,
    req: &ModelRequest,
) -> Result<Collected, ProviderError> {
    let mut reader = EventReader::new(response, req.timeouts.inactivity, req.timeouts.deadline);
    let mut parts: BTreeMap<usize, Part> = BTreeMap::new();
    let mut usage = WireUsage::default();
    let mut model = String::new();
    let mut stop: Option<String> = None;
    let mut done = false;
    while let Some(event) = reader.next().await? {
        let value: Value = serde_json::from_str(&event.data)
            .map_err(|e| protocol(format!("a stream event is not JSON: {e}"), &event.data))?;
        let parsed: Event = serde_json::from_value(value.clone()).map_err(|e| {
            protocol(
                format!("a stream event does not follow the Messages API: {e}"),
                &event.data,
            )
        })?;
        if !matches!(parsed, Event::Ping) {
            reader.activity();
        }
        match parsed {
            Event::MessageStart { message } => {
                model = message.model.unwrap_or_default();
                if let Some(u) = message.usage {
                    usage.update(&u);
                }
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => {
                parts.insert(index, Part::from_block(content_block));
            }
            Event::ContentBlockDelta { index, delta } => match (parts.get_mut(&index), delta) {
                (Some(Part::Answer { json, .. }), Delta::InputJsonDelta { partial_json }) => {
                    json.push_str(&partial_json);
                }
                (Some(Part::Text(text)), Delta::TextDelta { text: piece }) => text.push_str(&piece),
                _ => {}
            },
            Event::MessageDelta {
                delta,
                usage: later,
            } => {
                stop = delta.stop_reason.or(stop);
                if let Some(u) = later {
                    usage.update(&u);
                }
            }
            Event::MessageStop => {
                done = true;
                break;
            }
            Event::Error => {
                let error = ApiError::from_value(&value).unwrap_or_default();
                return Err(ProviderError::StreamError {
                    error: Box::new(error),
                    raw: capped(&event.data),
                });
            }
            Event::Ping | Event::Other => {}
        }
    }
    if !done {
        return Err(ProviderError::StreamEnded);
    }
    Ok(conclude_parts(
        parts.into_values().collect(),
        stop.as_deref(),
        &usage,
        model,
    ))
}

/// A whole (not streamed) reply body as the client reads it: the answer, or
/// why it cannot be used. Public for the reply-parser fuzz target.
pub fn parse_body(body: &str) -> Result<ModelReply, ProviderError> {
    read_whole(body)?.conclude(std::time::Duration::ZERO)
}

fn read_whole(body: &str) -> Result<Collected, ProviderError> {
    let value: Value = serde_json::from_str(body)
        .map_err(|e| protocol(format!("the reply is not JSON: {e}"), body))?;
    if value.get("type").and_then(Value::as_str) == Some("error") {
        return Err(ProviderError::StreamError {
            error: Box::new(ApiError::from_value(&value).unwrap_or_default()),
            raw: capped(body),
        });
    }
    let message: Message = serde_json::from_value(value)
        .map_err(|e| protocol(format!("the reply is not a message: {e}"), body))?;
    let parts = message.content.into_iter().map(Part::from_block).collect();
    Ok(conclude_parts(
        parts,
        message.stop_reason.as_deref(),
        &message.usage.unwrap_or_default(),
        message.model.unwrap_or_default(),
    ))
}

#[cfg(test)]
mod tests;
