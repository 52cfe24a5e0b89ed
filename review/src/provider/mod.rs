//! The provider boundary: one model request in, one parsed JSON answer out.
//!
//! Two wire protocols cover every provider the routing table names:
//! [`OpenAiProvider`] speaks OpenAI Chat Completions (OpenAI, OpenRouter,
//! vLLM, Ollama, llama.cpp, …) and [`AnthropicProvider`] speaks Anthropic
//! Messages. Both take the same [`ModelRequest`], share one HTTP client
//! ([`http_client`]), stream by server-sent events ([`sse`]) when asked, and
//! return the same [`ModelReply`] or a [`ProviderError`] that
//! [`ProviderError::classify`] labels retryable, fatal or auth.
//!
//! # What a request looks like on the wire
//! - The system prompt is [`SYSTEM_PROMPT`], identical for every role, so the
//!   cacheable prefix is shared across a run.
//! - The user message holds the request's [`Block`]s as separate text parts,
//!   in order, byte for byte (empty blocks are left out: Anthropic rejects
//!   empty text parts, and they add nothing); a block's images follow its
//!   text as image parts (OpenAI `image_url` with a base64 data URL,
//!   Anthropic `image` with a base64 source).
//! - The answer is constrained by the request's JSON schema: OpenAI's
//!   `response_format` of type `json_schema` (strict), Anthropic's forced
//!   `answer` tool whose `input_schema` is the schema.
//! - Every request carries `X-Gate-Role` and `X-Gate-Run`.
//!
//! # Time bounds
//! A request never outlives [`Timeouts::deadline`]. A streamed request must
//! get its response head within `inactivity` of being sent (connecting
//! included, and never less than the connect bound), and then a real event
//! at least every `inactivity` (SSE comments and Anthropic `ping`s do not
//! count). So a server that accepts and never answers costs the inactivity
//! bound, not inactivity plus connect. The TCP/TLS connect itself is bounded
//! by the shared client ([`http_client`]).

pub mod anthropic;
pub mod errors;
mod exchange;
pub mod image;
pub mod openai;
pub mod shape;
pub mod sse;
mod usage;

pub use anthropic::AnthropicProvider;
pub use errors::{ApiError, BadReply, Class, ErrorCode, ProviderError};
pub use exchange::{
    Block, Finish, ModelReply, ModelRequest, Provider, ROLE_HEADER, RUN_HEADER, SYSTEM_PROMPT,
    Timeouts, Turn, estimated_input_tokens, http_client, unpooled_http_client,
};
pub use image::Image;
pub use openai::OpenAiProvider;
pub use shape::{ContentShape, MaxTokensField, StructuredOutput, WireShape};
pub use usage::{Price, Usage, cost};

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
