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

impl StructuredOutput {
    /// Its name in the routing table.
    pub fn name(self) -> &'static str {
        match self {
            Self::JsonSchema => "json_schema",
            Self::JsonObject => "json_object",
            Self::None => "none",
        }
    }
}

impl ContentShape {
    /// Its name in the routing table.
    pub fn name(self) -> &'static str {
        match self {
            Self::Parts => "parts",
            Self::Text => "text",
        }
    }
}

impl MaxTokensField {
    /// Its name in the routing table, which is the request field's.
    pub fn name(self) -> &'static str {
        match self {
            Self::MaxCompletionTokens => "max_completion_tokens",
            Self::MaxTokens => "max_tokens",
        }
    }

    /// The other field.
    #[must_use]
    pub fn other(self) -> Self {
        match self {
            Self::MaxCompletionTokens => Self::MaxTokens,
            Self::MaxTokens => Self::MaxCompletionTokens,
        }
    }
}

impl WireShape {
    /// This shape with the setting that avoids `refused` changed to its
    /// next value; `None` when no setting is left to change.
    pub fn avoiding(self, refused: &Refused) -> Option<Self> {
        let mut next = self;
        match refused {
            Refused::StructuredOutput => {
                next.structured_output = match self.structured_output {
                    StructuredOutput::JsonSchema => StructuredOutput::JsonObject,
                    StructuredOutput::JsonObject => StructuredOutput::None,
                    StructuredOutput::None => return None,
                };
            }
            Refused::Content if self.content == ContentShape::Parts => {
                next.content = ContentShape::Text;
            }
            Refused::MaxTokensField => next.max_tokens_field = self.max_tokens_field.other(),
            Refused::StreamUsage if self.stream_usage => next.stream_usage = false,
            _ => return None,
        }
        Some(next)
    }

    /// The routing-table line that gives `part` the value this shape has
    /// (`structured_output = "json_object"`); `None` for a parameter no
    /// setting controls.
    pub fn setting(&self, part: &Refused) -> Option<String> {
        Some(match part {
            Refused::StructuredOutput => {
                format!("structured_output = \"{}\"", self.structured_output.name())
            }
            Refused::Content => format!("content = \"{}\"", self.content.name()),
            Refused::MaxTokensField => {
                format!("max_tokens_field = \"{}\"", self.max_tokens_field.name())
            }
            Refused::StreamUsage => format!("stream_usage = {}", self.stream_usage),
            Refused::Parameter(_) => return None,
        })
    }
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
        let what = match self {
            Self::StructuredOutput if sent.structured_output == StructuredOutput::JsonSchema => {
                "response_format json_schema".to_owned()
            }
            Self::StructuredOutput => "response_format".to_owned(),
            Self::Content => "content as an array of parts".to_owned(),
            Self::MaxTokensField => sent.max_tokens_field.name().to_owned(),
            Self::StreamUsage => "stream_options".to_owned(),
            Self::Parameter(name) => format!("the parameter `{name}`"),
        };
        match sent.avoiding(self).and_then(|fix| fix.setting(self)) {
            Some(setting) => format!(
                "the server does not take {what}: set {setting} under [provider.{provider}]"
            ),
            None => format!(
                "the server does not take {what}: the routing table has no setting for it; \
                 use a server or model that does"
            ),
        }
    }
}
