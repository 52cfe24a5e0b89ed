//! What a request to one provider looks like on the wire: the settings of
//! `[provider.X]` that adapt the gate to a server's abilities (schema-held
//! output or not, content parts or a string, which token-limit field, usage
//! on a stream), each defaulting to what the hosted APIs take.

use serde::{Deserialize, Serialize};

/// `structured_output`: how a provider is asked for an answer that follows
/// the schema.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutput {
    /// `response_format: {"type": "json_schema", …}`: the server holds the
    /// reply to the schema (OpenAI, vLLM, llama.cpp's `llama-server`, Ollama).
    #[default]
    JsonSchema,
    /// `response_format: {"type": "json_object"}`, the schema in the prompt
    /// (llama-cpp-python, servers without schema-constrained output).
    JsonObject,
    /// No `response_format`; the schema in the prompt.
    None,
}

/// `content`: the shape of the user message's content.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ContentShape {
    /// An array of content parts (text and images).
    #[default]
    Parts,
    /// One string, the parts joined by blank lines (parts still where an
    /// image is attached): for chat templates that concatenate strings.
    Text,
}

/// `max_tokens_field`: which request field carries the output-token limit.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    /// `max_completion_tokens` (OpenAI, OpenRouter, vLLM, llama.cpp's `llama-server`).
    #[default]
    MaxCompletionTokens,
    /// `max_tokens` (llama-cpp-python, Ollama, LM Studio and older servers).
    MaxTokens,
}

/// What a request to one provider looks like on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireShape {
    /// How the schema is asked for.
    pub structured_output: StructuredOutput,
    /// The user content's shape.
    pub content: ContentShape,
    /// The output-token limit's field.
    pub max_tokens_field: MaxTokensField,
    /// Whether a stream asks for usage.
    pub stream_usage: bool,
}

impl Default for WireShape {
    /// What the hosted APIs take.
    fn default() -> Self {
        Self {
            structured_output: StructuredOutput::default(),
            content: ContentShape::default(),
            max_tokens_field: MaxTokensField::default(),
            stream_usage: true,
        }
    }
}

/// A part of the request shape a server refused, as its error names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// `response_format` with a JSON schema (or at all).
    StructuredOutput,
    /// The user content as an array of parts.
    Content,
    /// The output-token limit's field.
    MaxTokensField,
    /// `stream_options`.
    StreamUsage,
    /// Another parameter the server named as unsupported.
    Parameter(String),
}

impl Refused {
    /// What the server did not take and the `[provider.NAME]` setting that
    /// avoids it, given what was sent.
    pub fn hint(&self, provider: &str, sent: WireShape) -> String {
        let set = |what: &str, setting: &str| {
            format!("the server does not take {what}: set {setting} under [provider.{provider}]")
        };
        match self {
            Self::StructuredOutput => match sent.structured_output {
                StructuredOutput::JsonSchema => set(
                    "response_format json_schema",
                    "structured_output = \"json_object\"",
                ),
                _ => set("response_format", "structured_output = \"none\""),
            },
            Self::Content => set("content as an array of parts", "content = \"text\""),
            Self::MaxTokensField => match sent.max_tokens_field {
                MaxTokensField::MaxCompletionTokens => {
                    set("max_completion_tokens", "max_tokens_field = \"max_tokens\"")
                }
                MaxTokensField::MaxTokens => {
                    set("max_tokens", "max_tokens_field = \"max_completion_tokens\"")
                }
            },
            Self::StreamUsage => set("stream_options", "stream_usage = false"),
            Self::Parameter(name) => format!(
                "the server does not take the parameter `{name}`: the routing table has no \
                 setting for it; use a server or model that does"
            ),
        }
    }
}
