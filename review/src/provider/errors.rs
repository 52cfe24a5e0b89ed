//! What can go wrong talking to a model provider, and the one place that
//! decides what each failure means for failback: [`ProviderError::classify`].

use std::error::Error as _;
use std::fmt;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::provider::shape::Refused;
use crate::provider::usage::Usage;

/// What a failure means for the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Transient: fail back down the chain, count it for the circuit breaker.
    Retryable,
    /// Another attempt (or another model) would fail the same way.
    Fatal,
    /// The credentials were refused (401/403): fatal, and worth saying so.
    Auth,
    /// Quota, credits or a budget ran out: fatal for every model behind the
    /// same endpoint and key (a gateway's budget covers all its models), and
    /// nothing to do with any model's health.
    Quota,
    /// The server refused a part of the request's shape (a parameter it
    /// does not take): a configuration problem, fatal for that model and
    /// nothing to do with its health; a model elsewhere may take it.
    Unsupported,
}

/// An error `code` as providers send it: OpenAI a string, OpenRouter and
/// llama.cpp a number (the HTTP status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorCode {
    /// A numeric code.
    Number(i64),
    /// A textual code such as `insufficient_quota`.
    Text(String),
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::Text(s) => f.write_str(s),
        }
    }
}

/// What a provider said about an error, read from an error body or an error
/// event. Every field is optional because every provider spells it differently.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiError {
    /// `error.type` (OpenAI `insufficient_quota`, Anthropic `overloaded_error`,
    /// LiteLLM `budget_exceeded`), or Bedrock's `x-amzn-ErrorType` header.
    pub kind: Option<String>,
    /// `error.code` (OpenAI `context_length_exceeded`, OpenRouter `402`).
    pub code: Option<ErrorCode>,
    /// Anthropic's `error.details.error_code` (`enforced_spend_limit_reached`).
    pub detail_code: Option<String>,
    /// The human-readable message.
    pub message: String,
    /// `error.param` (OpenAI): the request parameter it is about.
    pub param: Option<String>,
    /// OpenRouter flagged the input (`error.metadata.reasons`): a moderation
    /// block, not an authentication failure.
    pub flagged: bool,
}

impl ApiError {
    /// Reads the error shapes in use: OpenAI and Ollama
    /// `{"error":{"message","type","param","code"}}`, OpenRouter and llama.cpp
    /// `{"error":{"code":<number>,"message","metadata"}}`, Anthropic
    /// `{"type":"error","error":{"type","message","details"}}`, vLLM's flat
    /// `{"object":"error","message","type","code"}`, `{"error":"text"}` and
    /// `{"detail":"text"}`. `None` when the body is none of them.
    pub fn parse(body: &str) -> Option<Self> {
        let value: Value = serde_json::from_str(body).ok()?;
        Self::from_value(&value)
    }

    /// As [`ApiError::parse`], from parsed JSON.
    pub fn from_value(value: &Value) -> Option<Self> {
        let obj = match value.get("error") {
            Some(Value::String(message)) => {
                return Some(Self {
                    message: message.clone(),
                    ..Self::default()
                });
            }
            Some(inner @ Value::Object(_)) => inner,
            _ if value.get("message").is_some() => value,
            _ => {
                let detail = value.get("detail")?.as_str()?;
                return Some(Self {
                    message: detail.to_owned(),
                    ..Self::default()
                });
            }
        };
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let code = match obj.get("code") {
            Some(Value::Number(n)) => n.as_i64().map(ErrorCode::Number),
            Some(Value::String(s)) => Some(ErrorCode::Text(s.clone())),
            _ => None,
        };
        let metadata = obj.get("metadata");
        Some(Self {
            kind: text(obj.get("type")),
            code,
            detail_code: text(obj.pointer("/details/error_code")),
            message: text(obj.get("message")).unwrap_or_default(),
            param: text(obj.get("param")),
            flagged: metadata
                .is_some_and(|m| m.get("reasons").is_some() || m.get("flagged_input").is_some()),
        })
    }

    fn code_is(&self, wanted: &[&str]) -> bool {
        let named = |s: &Option<String>| s.as_deref().is_some_and(|s| wanted.contains(&s));
        named(&self.kind)
            || named(&self.detail_code)
            || matches!(&self.code, Some(ErrorCode::Text(c)) if wanted.contains(&c.as_str()))
    }

    fn numeric_code(&self) -> Option<i64> {
        match self.code {
            Some(ErrorCode::Number(n)) => Some(n),
            _ => None,
        }
    }

    fn message_has(&self, needles: &[&str]) -> bool {
        let message = self.message.to_lowercase();
        needles.iter().any(|n| message.contains(n))
    }

    /// Quota, credit, billing or a gateway's budget exhausted: waiting a
    /// minute will not help, whatever the status says. OpenAI sends
    /// `insufficient_quota` and `billing_not_active` as 429s, Anthropic its
    /// tier spend cap as a 429 without `retry-after`; LiteLLM its
    /// `budget_exceeded` as a 429, 400 or 422 (older releases: a 401
    /// `auth_error` saying `ExceededBudget`), and wraps an upstream's own
    /// words into its message; OpenRouter a 402; Azure its exhausted call
    /// volume as a 403; Bedrock its daily token quota as a 429
    /// `ThrottlingException` and its service quota as a 400
    /// `ServiceQuotaExceededException`.
    fn is_quota(&self) -> bool {
        self.code_is(&[
            "insufficient_quota",
            "billing_error",
            "billing_hard_limit_reached",
            "billing_not_active",
            "enforced_spend_limit_reached",
            "budget_exceeded",
            "ServiceQuotaExceededException",
        ]) || self.numeric_code() == Some(402)
            || self.message_has(&[
                "credit balance is too low",
                "reached your specified api usage limits",
                "reached your specified workspace api usage limits",
                "reached your api usage limits",
                "exceeded your current quota",
                "insufficient credits",
                "your account is not active, please check your billing",
                "budget has been exceeded",
                "exceededbudget",
                "exceededtokenbudget",
                "out of call volume quota",
                "too many tokens per day",
                "exceeds the service quota for your account",
            ])
    }

    /// The part of the request's shape the error says the server does not
    /// take: OpenAI's `unsupported_parameter`/`unsupported_value` with its
    /// `param`; llama-cpp-python's validation error on `response_format`
    /// ("Input should be 'text' or 'json_object'") and its chat template's
    /// "can only concatenate str (not \"list\")"; a message naming
    /// `stream_options` or a token-limit field as unknown or unsupported.
    pub fn refused(&self) -> Option<Refused> {
        let message = self.message.to_lowercase();
        let unsupported = self.code_is(&["unsupported_parameter", "unsupported_value"])
            || [
                "unsupported parameter",
                "unsupported value",
                "not supported",
                "unrecognized request argument",
                "unknown field",
                "extra inputs are not permitted",
                "extra_forbidden",
                "input should be",
                "literal_error",
                "unknown parameter",
            ]
            .iter()
            .any(|n| message.contains(n));
        let names = |p: &str| self.param.as_deref() == Some(p) || message.contains(p);
        if message.contains("can only concatenate str (not \"list\")") {
            return Some(Refused::Content);
        }
        if !unsupported {
            return None;
        }
        if names("max_completion_tokens") || names("max_tokens") {
            Some(Refused::MaxTokensField)
        } else if names("response_format") || names("json_schema") {
            Some(Refused::StructuredOutput)
        } else if names("stream_options") {
            Some(Refused::StreamUsage)
        } else if self.code_is(&["unsupported_parameter", "unsupported_value"]) {
            self.param.clone().map(Refused::Parameter)
        } else {
            None
        }
    }

    fn is_context_length(&self) -> bool {
        self.code_is(&["context_length_exceeded", "request_too_large"])
            || self.message_has(&[
                "context length",
                "context_length",
                "context window",
                "prompt is too long",
            ])
    }

    fn is_auth(&self) -> bool {
        self.code_is(&[
            "authentication_error",
            "permission_error",
            "invalid_api_key",
        ]) || matches!(self.numeric_code(), Some(401 | 403))
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A code that is only the HTTP status again ("429", LiteLLM's and
        // Azure's way) says less than the type beside it.
        let code = self.code.as_ref().filter(|c| match c {
            ErrorCode::Number(_) => false,
            ErrorCode::Text(t) => !t.is_empty() && !t.bytes().all(|b| b.is_ascii_digit()),
        });
        let label = self
            .detail_code
            .clone()
            .or_else(|| code.map(ToString::to_string))
            .or_else(|| self.kind.clone())
            .or_else(|| self.code.as_ref().map(ToString::to_string))
            .filter(|l| !l.is_empty());
        match label {
            Some(label) if self.message.is_empty() => f.write_str(&label),
            Some(label) => write!(f, "{label}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// A reply that arrived but cannot be used, with what it said and what it
/// cost (a failed attempt is still billed).
#[derive(Debug, Clone, PartialEq)]
pub struct BadReply {
    /// The reply's text as received (the answer so far).
    pub raw: String,
    /// Why it cannot be used: the refusal, or the parse error.
    pub detail: String,
    /// Usage as reported.
    pub usage: Usage,
    /// The model as reported.
    pub model: String,
}

/// A failed model call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The request could not be built (a header value that is not valid HTTP).
    #[error("cannot build the model request: {0}")]
    Request(String),
    /// No HTTP exchange: connection refused or reset, DNS, TLS, a body cut off.
    #[error("model request failed: {}", chain(.source))]
    Transport {
        /// The client's error; its `source()` chain holds the I/O error.
        #[source]
        source: reqwest::Error,
    },
    /// The provider answered with an error status.
    #[error("HTTP {status} from the model provider: {error}")]
    Http {
        /// The HTTP status.
        status: u16,
        /// `Retry-After` (or `retry-after-ms`), when sent.
        retry_after: Option<Duration>,
        /// What the body said.
        error: Box<ApiError>,
        /// The body as received, capped.
        body: String,
    },
    /// No response head within the inactivity bound (connecting included).
    #[error("no response from the model provider within {after:?}")]
    NoResponse {
        /// How long the request waited.
        after: Duration,
    },
    /// The request's deadline passed before the reply was complete.
    #[error("no complete reply before the deadline ({after:?} after the request)")]
    Deadline {
        /// How long the request had run.
        after: Duration,
    },
    /// A streamed reply sent nothing but keep-alives for the inactivity bound.
    #[error("the reply stream went silent for {after:?}")]
    Silent {
        /// The inactivity bound.
        after: Duration,
    },
    /// The connection closed before the reply's end marker.
    #[error("the reply stream ended before the reply was complete")]
    StreamEnded,
    /// The stream's end marker came before any finish reason.
    #[error("the server ended the stream without finishing the reply (no finish reason)")]
    StreamCut,
    /// An error event after a 200: Anthropic `event: error`, an OpenRouter
    /// error chunk (`finish_reason: "error"`), an OpenAI `data: {"error":…}`.
    #[error("the model provider failed mid-reply: {error}")]
    StreamError {
        /// What the event said.
        error: Box<ApiError>,
        /// The event's data.
        raw: String,
    },
    /// A 200 whose body is not the API's shape (a proxy's HTML page, say).
    #[error("the reply does not follow the provider's API: {detail}")]
    Protocol {
        /// What was wrong.
        detail: String,
        /// The offending text, capped.
        raw: String,
    },
    /// The model declined to answer (OpenAI `refusal`, `content_filter`;
    /// Anthropic `stop_reason: "refusal"`).
    #[error("the model refused to answer: {}", .0.detail)]
    Refusal(Box<BadReply>),
    /// The reply hit the output-token limit before its JSON was complete.
    #[error("the reply was cut off at the output limit: {}", .0.detail)]
    Truncated(Box<BadReply>),
    /// The reply is not one JSON object; the caller may ask once for a repair.
    #[error("the reply is not a JSON object: {}", .0.detail)]
    Malformed(Box<BadReply>),
}

impl ProviderError {
    /// What the failure means: retryable failures fail back down the chain
    /// and count for the circuit breaker; fatal ones do neither.
    pub fn classify(&self) -> Class {
        match self {
            Self::Request(_) | Self::Refusal(_) | Self::Truncated(_) | Self::Malformed(_) => {
                Class::Fatal
            }
            Self::Transport { source } => classify_transport(source),
            Self::Http { status, error, .. } => classify_http(*status, error),
            Self::StreamError { error, .. } => {
                // A failure after the reply began is the provider's, except
                // when it names the account (rare, but then failback is moot).
                if error.is_quota() {
                    Class::Quota
                } else if error.is_auth() {
                    Class::Auth
                } else {
                    Class::Retryable
                }
            }
            Self::NoResponse { .. }
            | Self::Deadline { .. }
            | Self::Silent { .. }
            | Self::StreamEnded
            | Self::StreamCut
            | Self::Protocol { .. } => Class::Retryable,
        }
    }

    /// How long the provider asked us to wait, when it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The request is larger than the model's context (or the provider's
    /// size limit): narrowing it is the only fix.
    pub fn is_context_length(&self) -> bool {
        match self {
            Self::Http { status, error, .. } => *status == 413 || error.is_context_length(),
            _ => false,
        }
    }

    /// Quota, credits or billing exhausted.
    pub fn is_quota(&self) -> bool {
        match self {
            Self::Http { status, error, .. } => *status == 402 || error.is_quota(),
            Self::StreamError { error, .. } => error.is_quota(),
            _ => false,
        }
    }

    /// The part of the request's shape the server refused, for an error
    /// response classified [`Class::Unsupported`].
    pub fn refused(&self) -> Option<Refused> {
        match self {
            Self::Http { error, .. } if self.classify() == Class::Unsupported => error.refused(),
            _ => None,
        }
    }

    /// The HTTP status, for an error response.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The reply that could not be used (refused, cut off, malformed).
    pub fn bad_reply(&self) -> Option<&BadReply> {
        match self {
            Self::Refusal(bad) | Self::Truncated(bad) | Self::Malformed(bad) => Some(bad),
            _ => None,
        }
    }

    /// What the failed call used, when a reply arrived.
    pub fn usage(&self) -> Option<&Usage> {
        self.bad_reply().map(|bad| &bad.usage)
    }
}

fn classify_http(status: u16, error: &ApiError) -> Class {
    // Quota first: it arrives as 429 as often as 402, 400, 403 or 422.
    if status == 402 || error.is_quota() {
        return Class::Quota;
    }
    // A refused parameter arrives as a 400, a 422, or (llama-cpp-python)
    // a 500: whatever the status, trying again sends it again.
    if (400..=500).contains(&status) && !error.is_context_length() && error.refused().is_some() {
        return Class::Unsupported;
    }
    if error.flagged {
        return Class::Fatal;
    }
    match status {
        401 | 403 => Class::Auth,
        // 408: OpenRouter's request timeout. 529: Anthropic overloaded.
        408 | 429 | 529 => Class::Retryable,
        // Every server error but "not implemented" and "version not
        // supported" is transient; this includes Cloudflare's 520-524.
        500..=599 if status != 501 && status != 505 => Class::Retryable,
        _ if error.kind.as_deref() == Some("overloaded_error") => Class::Retryable,
        _ => Class::Fatal,
    }
}

fn classify_transport(error: &reqwest::Error) -> Class {
    if error.is_builder() || error.is_redirect() {
        return Class::Fatal;
    }
    if transient_io(error) || error.is_connect() || error.is_timeout() {
        return Class::Retryable;
    }
    // The request or its body failed on the wire (a peer closing early);
    // another attempt, or another model, may well succeed.
    if error.is_request() || error.is_body() || error.is_decode() {
        return Class::Retryable;
    }
    Class::Fatal
}

/// Whether an I/O error of a transient kind sits anywhere in `error`'s
/// `source()` chain.
fn transient_io(error: &(dyn std::error::Error + 'static)) -> bool {
    use std::io::ErrorKind as K;
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                K::ConnectionRefused
                    | K::ConnectionReset
                    | K::ConnectionAborted
                    | K::NotConnected
                    | K::BrokenPipe
                    | K::TimedOut
                    | K::UnexpectedEof
                    | K::Interrupted
            )
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// `error` and its causes, joined, so a one-line message names the root
/// cause ("connection refused") and not only the wrapper.
fn chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(e) = next {
        let cause = e.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
        next = e.source();
    }
    text
}

/// Reads `retry-after-ms` (OpenAI's, milliseconds) or `Retry-After`
/// (seconds, or an HTTP date relative to `now`). A date in the past is zero.
pub fn parse_retry_after(
    retry_after: Option<&str>,
    retry_after_ms: Option<&str>,
    now: SystemTime,
) -> Option<Duration> {
    let seconds = |s: &str, scale: f64| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .map(|v| Duration::from_secs_f64(v / scale))
    };
    if let Some(d) = retry_after_ms.and_then(|ms| seconds(ms, 1000.0)) {
        return Some(d);
    }
    let value = retry_after?.trim();
    if let Some(d) = seconds(value, 1.0) {
        return Some(d);
    }
    // IMF-fixdate ("Wed, 21 Oct 2015 07:28:00 GMT") is RFC 2822 syntax.
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let at = SystemTime::from(date);
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_dates_and_milliseconds() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_470); // 2015-10-21T07:27:50Z
        let cases: &[(Option<&str>, Option<&str>, Option<Duration>)] = &[
            (Some("7"), None, Some(Duration::from_secs(7))),
            (Some(" 0 "), None, Some(Duration::ZERO)),
            (Some("1.5"), None, Some(Duration::from_millis(1500))),
            (
                Some("Wed, 21 Oct 2015 07:28:00 GMT"),
                None,
                Some(Duration::from_secs(10)),
            ),
            (
                Some("Wed, 21 Oct 2015 07:00:00 GMT"),
                None,
                Some(Duration::ZERO),
            ),
            (Some("-3"), None, None),
            (Some("soon"), None, None),
            (None, None, None),
            (Some("20"), Some("250"), Some(Duration::from_millis(250))),
            (None, Some("oops"), None),
        ];
        for (header, ms, expect) in cases {
            assert_eq!(
                parse_retry_after(*header, *ms, now),
                *expect,
                "{header:?} / {ms:?}"
            );
        }
    }

    #[test]
    fn error_bodies_of_every_provider_shape_parse() {
        let cases: &[(&str, Option<&str>, Option<ErrorCode>, &str)] = &[
            (
                r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
                Some("insufficient_quota"),
                Some(ErrorCode::Text("insufficient_quota".into())),
                "You exceeded your current quota",
            ),
            (
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}"#,
                Some("overloaded_error"),
                None,
                "Overloaded",
            ),
            (
                r#"{"error":{"code":402,"message":"Insufficient credits"}}"#,
                None,
                Some(ErrorCode::Number(402)),
                "Insufficient credits",
            ),
            (
                r#"{"object":"error","message":"maximum context length is 4096 tokens","type":"BadRequestError","param":null,"code":400}"#,
                Some("BadRequestError"),
                Some(ErrorCode::Number(400)),
                "maximum context length is 4096 tokens",
            ),
            (
                r#"{"error":"model 'x' not found"}"#,
                None,
                None,
                "model 'x' not found",
            ),
            (r#"{"detail":"Not Found"}"#, None, None, "Not Found"),
        ];
        for (body, kind, code, message) in cases {
            let e = ApiError::parse(body).unwrap_or_else(|| panic!("{body} did not parse"));
            assert_eq!(e.kind.as_deref(), *kind, "{body}");
            assert_eq!(&e.code, code, "{body}");
            assert_eq!(e.message, *message, "{body}");
        }
        assert_eq!(ApiError::parse("<html>bad gateway</html>"), None);
        assert_eq!(ApiError::parse(r#"{"ok":true}"#), None);
    }

    /// Bodies as servers send them (llama-cpp-python 0.3.36's captured
    /// from the real server): which part of the shape each refuses, and
    /// how the error is then classified.
    #[test]
    fn a_refused_parameter_is_a_configuration_problem_not_an_outage() {
        let llama_schema = r#"{"error":{"message":"1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \"/venv/lib/python3.11/site-packages/llama_cpp/server/app.py\", line 376, in create_chat_completion\n    POST /v1/chat/completions","type":"internal_server_error","param":null,"code":null}}"#;
        let llama_parts = r#"{"error":{"message":"can only concatenate str (not \"list\") to str","type":"internal_server_error","param":null,"code":null}}"#;
        let openai_max_tokens = r#"{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}"#;
        let vllm_stream_options = r#"{"object":"error","message":"[{'type': 'extra_forbidden', 'loc': ('body', 'stream_options'), 'msg': 'Extra inputs are not permitted'}]","type":"BadRequestError","param":null,"code":400}"#;
        let openai_seed = r#"{"error":{"message":"Unsupported value: 'seed' does not support 7 with this model.","type":"invalid_request_error","param":"seed","code":"unsupported_value"}}"#;
        let context = r#"{"error":{"message":"This model's maximum context length is 8192 tokens; response_format is not supported beyond it","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let overloaded = r#"{"error":{"message":"the server is busy","type":"internal_server_error","param":null,"code":null}}"#;
        let cases: &[(u16, &str, Option<Refused>, Class)] = &[
            (
                500,
                llama_schema,
                Some(Refused::StructuredOutput),
                Class::Unsupported,
            ),
            (500, llama_parts, Some(Refused::Content), Class::Unsupported),
            (
                400,
                openai_max_tokens,
                Some(Refused::MaxTokensField),
                Class::Unsupported,
            ),
            (
                400,
                vllm_stream_options,
                Some(Refused::StreamUsage),
                Class::Unsupported,
            ),
            (
                400,
                openai_seed,
                Some(Refused::Parameter("seed".into())),
                Class::Unsupported,
            ),
            (400, context, None, Class::Fatal),
            (500, overloaded, None, Class::Retryable),
            // A gateway's 502 naming a parameter is still the gateway's outage.
            (502, llama_schema, None, Class::Retryable),
        ];
        for (status, body, refused, class) in cases {
            let error = ApiError::parse(body).unwrap_or_else(|| panic!("{body} did not parse"));
            let e = ProviderError::Http {
                status: *status,
                retry_after: None,
                error: Box::new(error),
                body: (*body).to_owned(),
            };
            assert_eq!(e.classify(), *class, "{status} {body}");
            assert_eq!(e.refused(), *refused, "{status} {body}");
        }
    }
}
