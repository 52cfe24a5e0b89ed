//! A scripted model server: a real HTTP/1.1 server on a loopback port that
//! answers like OpenAI Chat Completions or Anthropic Messages, or fails the
//! ways real providers fail.
//!
//! It runs on plain threads, so synchronous tests (driving the `gate` binary)
//! and async tests can both use it. Every reply closes its connection.
//! [`ModelServer::start_tls`] serves HTTPS with a certificate from a test's
//! own CA, as a self-hosted model server behind an internal CA does.
//!
//! ```no_run
//! use gate_tests::model_server::{Matcher, ModelServer, Reply};
//! use serde_json::json;
//!
//! let server = ModelServer::start();
//! server.script(
//!     Matcher::any().role("quality"),
//!     vec![
//!         Reply::openai_error(429, "requests", "rate_limit_exceeded", "Rate limit reached").retry_after("1"),
//!         Reply::openai(&json!({"findings": [], "criteria": [], "rules": []})),
//!     ],
//! );
//! // … point the gate at format!("{}/v1", server.url()) …
//! assert_eq!(server.requests().len(), 2);
//! ```

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long a connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How often waiting threads look whether the server is stopping.
const TICK: Duration = Duration::from_millis(20);

/// The running server; dropping it stops it.
pub struct ModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    stopping: AtomicBool,
    /// Set for HTTPS.
    tls: Option<Arc<rustls::ServerConfig>>,
}

/// A connection the server answers on: TCP, or TLS over it.
trait Conn: Read + Write {
    fn tcp(&self) -> &TcpStream;

    /// Ends the reply: a TLS peer is told the stream is complete (a body
    /// that runs to the connection's end is otherwise cut, to the client).
    fn finish(&mut self) {
        let _ = self.flush();
        let _ = self.tcp().shutdown(Shutdown::Both);
    }
}

impl Conn for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl Conn for rustls::StreamOwned<rustls::ServerConnection, TcpStream> {
    fn tcp(&self) -> &TcpStream {
        &self.sock
    }

    fn finish(&mut self) {
        self.conn.send_close_notify();
        let _ = self.flush();
        let _ = self.sock.shutdown(Shutdown::Both);
    }
}

struct State {
    scripts: Vec<Script>,
    default: Reply,
    requests: Vec<Request>,
    /// Report each completion's input tokens as [`Request::tokens`] counts them.
    count_usage: bool,
    /// Requests being answered now, and the most there ever were at once.
    in_flight: usize,
    max_in_flight: usize,
}

struct Script {
    matcher: Matcher,
    replies: Vec<Reply>,
    served: usize,
}

impl ModelServer {
    /// Starts a server on an ephemeral loopback port.
    pub fn start() -> Self {
        Self::serve(None)
    }

    /// Starts an HTTPS server whose certificate `ca` issued, for
    /// `127.0.0.1` and `localhost`.
    pub fn start_tls(ca: &crate::tls::Ca) -> Self {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let (cert, key) = ca.issue("model server", &["localhost", "127.0.0.1"]);
        let certs = CertificateDer::pem_slice_iter(cert.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .expect("the server certificate");
        let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("the server key");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .expect("a server TLS configuration");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Self::serve(Some(Arc::new(config)))
    }

    fn serve(tls: Option<Arc<rustls::ServerConfig>>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener.local_addr().expect("the listener's address");
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                scripts: Vec::new(),
                default: Reply::json(
                    404,
                    json!({"error": {"message": "no scripted reply for this request", "type": "not_found_error"}}),
                ),
                requests: Vec::new(),
                count_usage: false,
                in_flight: 0,
                max_in_flight: 0,
            }),
            stopping: AtomicBool::new(false),
            tls,
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || accept_loop(&listener, &shared))
        };
        Self {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// `http://127.0.0.1:<port>` (`https://` for TLS), without a trailing slash.
    pub fn url(&self) -> String {
        let scheme = if self.shared.tls.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Answers requests that `matcher` selects with `replies`, in order, the
    /// last one repeating. Scripts are tried in the order they were added.
    pub fn script(&self, matcher: Matcher, replies: Vec<Reply>) -> &Self {
        assert!(!replies.is_empty(), "a script needs at least one reply");
        self.state().scripts.push(Script {
            matcher,
            replies,
            served: 0,
        });
        self
    }

    /// The reply to requests no script selects (by default a 404).
    pub fn default_reply(&self, reply: Reply) -> &Self {
        self.state().default = reply;
        self
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.state().requests.clone()
    }

    /// From now on, every completion reports as its input tokens what the
    /// server counts of its request ([`Request::tokens`]), as a provider
    /// reports what it billed.
    pub fn count_usage(&self) -> &Self {
        self.state().count_usage = true;
        self
    }

    /// The most requests the server was answering at one time.
    pub fn max_in_flight(&self) -> usize {
        self.state().max_in_flight
    }

    /// The input tokens of every request received so far, as
    /// [`Request::tokens`] counts them.
    pub fn tokens_received(&self) -> u64 {
        self.state().requests.iter().map(Request::tokens).sum()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.shared)
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wake the blocking accept so the loop sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    // A panicking handler thread must not take every later test down with it.
    shared
        .state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            break;
        }
        let Ok(mut stream) = stream else { continue };
        let shared = Arc::clone(shared);
        std::thread::spawn(move || match &shared.tls {
            None => handle(&mut stream, &shared),
            Some(config) => {
                let Ok(conn) = rustls::ServerConnection::new(Arc::clone(config)) else {
                    return;
                };
                handle(&mut rustls::StreamOwned::new(conn, stream), &shared);
            }
        });
    }
}

fn handle(stream: &mut dyn Conn, shared: &Shared) {
    let _ = stream.tcp().set_read_timeout(Some(READ_TIMEOUT));
    let Some(request) = read_request(stream) else {
        return;
    };
    let reply = {
        let mut state = lock(shared);
        state.requests.push(request.clone());
        state.in_flight += 1;
        state.max_in_flight = state.max_in_flight.max(state.in_flight);
        let mut reply = choose(&mut state, &request);
        if let Kind::Computed(Compute(answer)) = &reply.kind {
            let (delay, headers) = (reply.delay, reply.headers.clone());
            reply = answer(&request);
            reply.delay += delay;
            reply.headers.extend(headers);
        }
        if state.count_usage {
            reply.counted(request.tokens())
        } else {
            reply
        }
    };
    if pause(shared, reply.delay) {
        let _ = serve(stream, shared, &reply, &request);
        stream.finish();
    }
    lock(shared).in_flight -= 1;
}

fn choose(state: &mut State, request: &Request) -> Reply {
    for script in &mut state.scripts {
        if script.matcher.matches(request) {
            let i = script.served.min(script.replies.len() - 1);
            script.served += 1;
            return script.replies[i].clone();
        }
    }
    state.default.clone()
}

/// Sleeps `d` unless the server stops first; false when it did.
fn pause(shared: &Shared, d: Duration) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if shared.stopping.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(TICK.min(until.saturating_duration_since(Instant::now())));
    }
    !shared.stopping.load(Ordering::SeqCst)
}

/// Selects requests by path, `X-Gate-Role` header, `model` field and text
/// in the body; an unset criterion matches anything.
#[derive(Debug, Clone, Default)]
pub struct Matcher {
    path: Option<String>,
    role: Option<String>,
    model: Option<String>,
    body: Vec<String>,
}

impl Matcher {
    /// Matches every request.
    pub fn any() -> Self {
        Self::default()
    }

    /// Only requests to `path` (e.g. `/v1/chat/completions`).
    #[must_use]
    pub fn path(mut self, path: &str) -> Self {
        self.path = Some(path.to_owned());
        self
    }

    /// Only requests whose `X-Gate-Role` is `role`.
    #[must_use]
    pub fn role(mut self, role: &str) -> Self {
        self.role = Some(role.to_owned());
        self
    }

    /// Only requests whose body's `model` is `model`.
    #[must_use]
    pub fn model(mut self, model: &str) -> Self {
        self.model = Some(model.to_owned());
        self
    }

    /// Only requests whose body holds `text` (in any of its strings, as
    /// sent: JSON escapes undone).
    #[must_use]
    pub fn body_contains(mut self, text: &str) -> Self {
        self.body.push(text.to_owned());
        self
    }

    fn matches(&self, request: &Request) -> bool {
        self.path.as_ref().is_none_or(|p| *p == request.path)
            && self
                .role
                .as_ref()
                .is_none_or(|r| request.header("x-gate-role") == Some(r.as_str()))
            && self.model.as_ref().is_none_or(|m| {
                request.body.get("model").and_then(Value::as_str) == Some(m.as_str())
            })
            && (self.body.is_empty() || {
                let text = request.text();
                self.body.iter().all(|b| text.contains(b.as_str()))
            })
    }
}

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Request {
    /// `POST`, `GET`, …
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The headers, names lower-cased, in the order sent.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` when it is not JSON).
    pub body: Value,
    /// The body as text.
    pub raw_body: String,
}

impl Request {
    /// A header's value (the first one, name matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every string in the JSON body, joined by newlines: the text a model
    /// was sent, whichever provider's shape it came in.
    pub fn text(&self) -> String {
        fn walk(v: &Value, out: &mut String) {
            match v {
                Value::String(s) => {
                    out.push_str(s);
                    out.push('\n');
                }
                Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
                Value::Object(map) => map.values().for_each(|i| walk(i, out)),
                _ => {}
            }
        }
        let mut out = String::new();
        walk(&self.body, &mut out);
        out
    }

    /// The input tokens this server counts for the request: the bytes of
    /// every string in its body (what [`Request::text`] joins: system
    /// prompt, instructions, content, schema, follow-ups), divided by 4 and
    /// rounded up.
    pub fn tokens(&self) -> u64 {
        self.text().len().div_ceil(4) as u64
    }

    /// Whether the request asked for a streamed reply.
    pub fn wants_stream(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
    }
}

fn read_request(stream: &mut dyn Conn) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?;
    let path = target.split('?').next().unwrap_or(target).to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let raw_body = String::from_utf8_lossy(&body).into_owned();
    Some(Request {
        method,
        path,
        headers,
        body: serde_json::from_str(&raw_body).unwrap_or(Value::Null),
        raw_body,
    })
}

/// A scripted reply.
#[derive(Debug, Clone)]
pub struct Reply {
    kind: Kind,
    delay: Duration,
    headers: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
enum Kind {
    Json { status: u16, body: Value },
    OpenAi(Completion),
    Anthropic(Completion),
    Events(Vec<SseStep>),
    Hang,
    Close,
    Computed(Compute),
}

/// A reply worked out from the request it answers.
#[derive(Clone)]
struct Compute(Arc<dyn Fn(&Request) -> Reply + Send + Sync>);

impl std::fmt::Debug for Compute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Compute(…)")
    }
}

/// A model's answer, rendered in a provider's shape when served.
#[derive(Debug, Clone)]
struct Completion {
    content: Content,
    /// The tool an Anthropic `tool_use` block calls (`answer` unless set).
    tool: String,
    refusal: Option<String>,
    finish: String,
    model: String,
    usage: Option<Value>,
}

#[derive(Debug, Clone)]
enum Content {
    /// The answer's JSON text (Anthropic: the `answer` tool's input).
    Answer(String),
    /// Plain text (Anthropic: a text block instead of the tool call).
    Text(String),
}

impl Content {
    fn text(&self) -> &str {
        match self {
            Self::Answer(t) | Self::Text(t) => t,
        }
    }
}

/// One step of a raw event stream.
#[derive(Debug, Clone)]
pub enum SseStep {
    /// `data: <text>` and a blank line.
    Data(String),
    /// `event: <name>`, `data: <text>` and a blank line.
    Event(String, String),
    /// `: <text>` (a comment, as OpenRouter's keep-alive).
    Comment(String),
    /// Bytes as given, nothing added.
    Raw(String),
    /// Wait before the next step.
    Pause(Duration),
}

impl SseStep {
    /// A `data:` event holding `value` as JSON.
    pub fn data(value: &Value) -> Self {
        Self::Data(value.to_string())
    }

    /// A named event holding `value` as JSON.
    pub fn event(name: &str, value: &Value) -> Self {
        Self::Event(name.to_owned(), value.to_string())
    }
}

impl Reply {
    fn of(kind: Kind) -> Self {
        Self {
            kind,
            delay: Duration::ZERO,
            headers: Vec::new(),
        }
    }

    /// A JSON body with a status.
    pub fn json(status: u16, body: Value) -> Self {
        Self::of(Kind::Json { status, body })
    }

    /// An OpenAI error: `{"error":{"message","type","param","code"}}`.
    pub fn openai_error(status: u16, kind: &str, code: &str, message: &str) -> Self {
        Self::json(
            status,
            json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
        )
    }

    /// An Anthropic error: `{"type":"error","error":{"type","message"},"request_id"}`.
    pub fn anthropic_error(status: u16, kind: &str, message: &str) -> Self {
        Self::json(
            status,
            json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_test"}),
        )
    }

    /// An OpenRouter error: `{"error":{"code":<status>,"message"}}`.
    pub fn openrouter_error(status: u16, message: &str) -> Self {
        Self::json(
            status,
            json!({"error": {"code": status, "message": message}}),
        )
    }

    /// The error message a JSON reply carries (`error.message`, or a flat
    /// `message`), for a test that wants the provider's words kept.
    pub fn message(&self) -> Option<&str> {
        let Kind::Json { body, .. } = &self.kind else {
            return None;
        };
        body.pointer("/error/message")
            .or_else(|| body.get("message"))
            .and_then(Value::as_str)
    }

    /// LiteLLM's budget refusal as its proxy sends it (`ProxyException`:
    /// `type` `budget_exceeded`, `code` the status as text), with `message`
    /// its own words: "Budget has been exceeded! Current cost: …, Max
    /// budget: …" or "ExceededBudget: User=… over budget. Spend=…, Budget=…".
    pub fn litellm_budget(status: u16, message: &str) -> Self {
        Self::json(
            status,
            json!({"error": {"message": message, "type": "budget_exceeded", "param": null, "code": status.to_string()}}),
        )
    }

    /// An Azure OpenAI (Cognitive Services) error: `{"error":{"code":"<status>","message"}}`,
    /// as for its exhausted call volume (403 "Out of call volume quota …")
    /// or its per-minute token rate limit (429).
    pub fn azure_error(status: u16, message: &str) -> Self {
        Self::json(
            status,
            json!({"error": {"code": status.to_string(), "message": message}}),
        )
    }

    /// An Amazon Bedrock error: `{"message"}` with the exception named in
    /// `x-amzn-ErrorType` (`ThrottlingException` 429, `ServiceQuotaExceededException` 400).
    pub fn bedrock_error(status: u16, exception: &str, message: &str) -> Self {
        Self::json(status, json!({"message": message})).header(
            "x-amzn-ErrorType",
            &format!("{exception}:http://internal.amazon.com/coral/com.amazon.bedrock/"),
        )
    }

    /// A successful OpenAI chat completion whose content is `answer`, streamed
    /// when the request asked for it (usage then only with `include_usage`).
    pub fn openai(answer: &Value) -> Self {
        Self::of(Kind::OpenAi(Completion {
            content: Content::Answer(answer.to_string()),
            tool: "answer".to_owned(),
            refusal: None,
            finish: "stop".to_owned(),
            model: "gpt-test".to_owned(),
            usage: Some(
                json!({"prompt_tokens": 1200, "completion_tokens": 80, "total_tokens": 1280}),
            ),
        }))
    }

    /// As [`Reply::openai`], with `text` as the content, verbatim.
    pub fn openai_text(text: &str) -> Self {
        let mut reply = Self::openai(&Value::Null);
        reply.completion().content = Content::Text(text.to_owned());
        reply
    }

    /// A successful Anthropic message: an `answer` tool call with `answer` as
    /// its input (streamed as `input_json_delta` pieces when asked).
    pub fn anthropic(answer: &Value) -> Self {
        Self::anthropic_tool_input(&answer.to_string())
    }

    /// As [`Reply::anthropic`], with the tool input's JSON text given verbatim
    /// (it may be cut off).
    pub fn anthropic_tool_input(json_text: &str) -> Self {
        Self::of(Kind::Anthropic(Completion {
            content: Content::Answer(json_text.to_owned()),
            tool: "answer".to_owned(),
            refusal: None,
            finish: "tool_use".to_owned(),
            model: "claude-test".to_owned(),
            usage: Some(json!({
                "input_tokens": 300,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 80
            })),
        }))
    }

    /// An Anthropic message calling the tool `name` with `input`, as an
    /// agent's model asks its harness to run a tool (Claude Code's `Bash`).
    pub fn anthropic_tool_use(name: &str, input: &Value) -> Self {
        let mut reply = Self::anthropic_tool_input(&input.to_string());
        name.clone_into(&mut reply.completion().tool);
        reply
    }

    /// A streamed Responses API reply (`POST /v1/responses`, as OpenAI's
    /// Codex CLI reads it): one assistant message saying `text`.
    pub fn responses_text(text: &str) -> Self {
        let item = json!({"type": "message", "id": "msg_test", "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]});
        let mut added = item.clone();
        added["content"] = json!([]);
        added["status"] = json!("in_progress");
        Self::responses(
            &item,
            &added,
            Some(
                json!({"type": "response.output_text.delta", "item_id": "msg_test",
                        "output_index": 0, "content_index": 0, "delta": text}),
            ),
        )
    }

    /// A streamed Responses API reply calling the function `name` with
    /// `arguments` (Codex's `exec_command` runs `{"cmd": …}`).
    pub fn responses_call(name: &str, arguments: &Value) -> Self {
        let item = json!({"type": "function_call", "id": "fc_test", "call_id": "call_test",
            "name": name, "arguments": arguments.to_string(), "status": "completed"});
        let mut added = item.clone();
        added["arguments"] = json!("");
        Self::responses(&item, &added, None)
    }

    fn responses(item: &Value, added: &Value, delta: Option<Value>) -> Self {
        let event = |value: Value| {
            let name = value["type"].as_str().unwrap_or_default().to_owned();
            SseStep::event(&name, &value)
        };
        let mut steps = vec![
            event(json!({"type": "response.created", "response":
                {"id": "resp_test", "object": "response", "status": "in_progress", "output": []}})),
            event(json!({"type": "response.output_item.added", "output_index": 0, "item": added})),
        ];
        steps.extend(delta.map(event));
        steps.push(event(
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ));
        steps.push(event(json!({"type": "response.completed", "response": {
            "id": "resp_test", "object": "response", "status": "completed", "output": [item],
            "usage": {"input_tokens": 300, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": 320}}})));
        Self::sse(steps)
    }

    /// An Anthropic message with one text block instead of the tool call.
    pub fn anthropic_text(text: &str) -> Self {
        let mut reply = Self::anthropic_tool_input("");
        let completion = reply.completion();
        completion.content = Content::Text(text.to_owned());
        "end_turn".clone_into(&mut completion.finish);
        reply
    }

    /// A raw event stream (`text/event-stream`, status 200).
    pub fn sse(steps: Vec<SseStep>) -> Self {
        Self::of(Kind::Events(steps))
    }

    /// A reply worked out from the request it answers (as a model reads
    /// what it is sent): `answer` is called with the request and returns
    /// the reply to serve.
    pub fn computed(answer: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Self {
        Self::of(Kind::Computed(Compute(Arc::new(answer))))
    }

    /// Reads the request and never answers (until the server stops or the
    /// client hangs up).
    pub fn hang() -> Self {
        Self::of(Kind::Hang)
    }

    /// Reads the request and closes the connection without a byte.
    pub fn close() -> Self {
        Self::of(Kind::Close)
    }

    /// Waits `delay` before answering.
    #[must_use]
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Adds a response header.
    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Adds `Retry-After: <value>`.
    #[must_use]
    pub fn retry_after(self, value: &str) -> Self {
        self.header("Retry-After", value)
    }

    /// Replaces the completion's usage object (provider-shaped JSON).
    #[must_use]
    pub fn usage(mut self, usage: Value) -> Self {
        self.completion().usage = Some(usage);
        self
    }

    /// Sends no usage at all.
    #[must_use]
    pub fn no_usage(mut self) -> Self {
        self.completion().usage = None;
        self
    }

    /// Sets `finish_reason` (OpenAI) or `stop_reason` (Anthropic).
    #[must_use]
    pub fn finish(mut self, reason: &str) -> Self {
        reason.clone_into(&mut self.completion().finish);
        self
    }

    /// Sets the model the reply names.
    #[must_use]
    pub fn model(mut self, model: &str) -> Self {
        model.clone_into(&mut self.completion().model);
        self
    }

    /// An OpenAI refusal: `refusal` set, no content.
    #[must_use]
    pub fn refusal(mut self, message: &str) -> Self {
        let completion = self.completion();
        completion.refusal = Some(message.to_owned());
        completion.content = Content::Text(String::new());
        self
    }

    /// This reply with its usage reporting `input` input tokens (a
    /// completion's only; other replies are left as they are).
    fn counted(mut self, input: u64) -> Self {
        match &mut self.kind {
            Kind::OpenAi(c) => {
                c.usage = Some(json!({"prompt_tokens": input, "completion_tokens": 80,
                    "total_tokens": input + 80}));
            }
            Kind::Anthropic(c) => {
                c.usage = Some(
                    json!({"input_tokens": input, "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0, "output_tokens": 80}),
                );
            }
            _ => {}
        }
        self
    }

    fn completion(&mut self) -> &mut Completion {
        match &mut self.kind {
            Kind::OpenAi(c) | Kind::Anthropic(c) => c,
            other => panic!("only a completion reply takes this setting, not {other:?}"),
        }
    }
}

fn serve(
    stream: &mut dyn Conn,
    shared: &Shared,
    reply: &Reply,
    request: &Request,
) -> std::io::Result<()> {
    match &reply.kind {
        Kind::Close | Kind::Computed(_) => Ok(()),
        Kind::Hang => {
            hang(stream, shared);
            Ok(())
        }
        Kind::Json { status, body } => write_json(stream, *status, &reply.headers, body),
        Kind::OpenAi(c) if request.wants_stream() => {
            let steps = openai_stream(c, include_usage(request));
            write_events(stream, shared, &reply.headers, &steps)
        }
        Kind::OpenAi(c) => write_json(stream, 200, &reply.headers, &openai_body(c)),
        Kind::Anthropic(c) if request.wants_stream() => {
            write_events(stream, shared, &reply.headers, &anthropic_stream(c))
        }
        Kind::Anthropic(c) => write_json(stream, 200, &reply.headers, &anthropic_body(c)),
        Kind::Events(steps) => write_events(stream, shared, &reply.headers, steps),
    }
}

/// Holds the connection open until the server stops or the peer hangs up.
fn hang(stream: &mut dyn Conn, shared: &Shared) {
    let _ = stream.tcp().set_read_timeout(Some(TICK));
    let mut buf = [0u8; 256];
    while !shared.stopping.load(Ordering::SeqCst) {
        match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

fn include_usage(request: &Request) -> bool {
    request
        .body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        == Some(true)
}

fn head(
    status: u16,
    content_type: &str,
    length: Option<usize>,
    extra: &[(String, String)],
) -> String {
    let mut lines = vec![
        format!("HTTP/1.1 {status} {}", reason(status)),
        format!("Content-Type: {content_type}"),
    ];
    if let Some(length) = length {
        lines.push(format!("Content-Length: {length}"));
    }
    lines.push("Connection: close".to_owned());
    lines.extend(extra.iter().map(|(name, value)| format!("{name}: {value}")));
    lines.join("\r\n") + "\r\n\r\n"
}

fn write_json(
    stream: &mut dyn Conn,
    status: u16,
    extra: &[(String, String)],
    body: &Value,
) -> std::io::Result<()> {
    let body = body.to_string();
    stream.write_all(head(status, "application/json", Some(body.len()), extra).as_bytes())?;
    stream.write_all(body.as_bytes())
}

fn write_events(
    stream: &mut dyn Conn,
    shared: &Shared,
    extra: &[(String, String)],
    steps: &[SseStep],
) -> std::io::Result<()> {
    stream.write_all(head(200, "text/event-stream", None, extra).as_bytes())?;
    stream.flush()?;
    for step in steps {
        let text = match step {
            SseStep::Data(data) => format!("data: {data}\n\n"),
            SseStep::Event(name, data) => format!("event: {name}\ndata: {data}\n\n"),
            SseStep::Comment(text) => format!(": {text}\n\n"),
            SseStep::Raw(text) => text.clone(),
            SseStep::Pause(d) => {
                if !pause(shared, *d) {
                    return Ok(());
                }
                continue;
            }
        };
        stream.write_all(text.as_bytes())?;
        stream.flush()?;
    }
    Ok(())
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// `text` in pieces of a few characters, as a model streams it.
fn pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(7).map(|c| c.iter().collect()).collect()
}

fn openai_chunk(model: &str, choices: &Value) -> Value {
    json!({
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
        "choices": choices,
    })
}

fn openai_stream(c: &Completion, include_usage: bool) -> Vec<SseStep> {
    let delta = |delta: Value, finish: Value| {
        SseStep::data(&openai_chunk(
            &c.model,
            &json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]),
        ))
    };
    let mut steps = vec![delta(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for piece in pieces(c.content.text()) {
        steps.push(delta(json!({"content": piece}), Value::Null));
    }
    if let Some(refusal) = &c.refusal {
        for piece in pieces(refusal) {
            steps.push(delta(json!({"refusal": piece}), Value::Null));
        }
    }
    steps.push(delta(json!({}), json!(c.finish)));
    if let (true, Some(usage)) = (include_usage, &c.usage) {
        let mut chunk = openai_chunk(&c.model, &json!([]));
        chunk["usage"] = usage.clone();
        steps.push(SseStep::data(&chunk));
    }
    steps.push(SseStep::Data("[DONE]".to_owned()));
    steps
}

fn openai_body(c: &Completion) -> Value {
    let content = match (&c.refusal, c.content.text()) {
        (Some(_), "") => Value::Null,
        (_, text) => json!(text),
    };
    let mut body = json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": c.model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": c.refusal},
            "logprobs": null,
            "finish_reason": c.finish,
        }],
    });
    if let Some(usage) = &c.usage {
        body["usage"] = usage.clone();
    }
    body
}

fn anthropic_block(c: &Completion, empty: bool) -> Value {
    match &c.content {
        Content::Answer(text) => {
            let input = if empty {
                json!({})
            } else {
                serde_json::from_str(text).unwrap_or_else(|_| json!({}))
            };
            let id = format!("toolu_{}", c.tool.to_lowercase());
            json!({"type": "tool_use", "id": id, "name": c.tool, "input": input})
        }
        Content::Text(text) => json!({"type": "text", "text": if empty { "" } else { text }}),
    }
}

fn anthropic_stream(c: &Completion) -> Vec<SseStep> {
    // message_start carries the input side of usage; message_delta the
    // cumulative output count.
    let mut start_usage = c.usage.clone().unwrap_or_else(|| json!({}));
    let output = start_usage.get("output_tokens").cloned();
    if let (Some(obj), Some(_)) = (start_usage.as_object_mut(), &output) {
        obj.insert("output_tokens".to_owned(), json!(1));
    }
    let mut steps = vec![
        SseStep::event(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": "msg_test", "type": "message", "role": "assistant", "content": [],
                "model": c.model, "stop_reason": null, "stop_sequence": null, "usage": start_usage,
            }}),
        ),
        SseStep::event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0, "content_block": anthropic_block(c, true)}),
        ),
        SseStep::event("ping", &json!({"type": "ping"})),
    ];
    for piece in pieces(c.content.text()) {
        let delta = match c.content {
            Content::Answer(_) => json!({"type": "input_json_delta", "partial_json": piece}),
            Content::Text(_) => json!({"type": "text_delta", "text": piece}),
        };
        steps.push(SseStep::event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ));
    }
    let mut delta_usage = json!({});
    if let Some(output) = output {
        delta_usage["output_tokens"] = output;
    }
    steps.extend([
        SseStep::event("content_block_stop", &json!({"type": "content_block_stop", "index": 0})),
        SseStep::event(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": c.finish, "stop_sequence": null}, "usage": delta_usage}),
        ),
        SseStep::event("message_stop", &json!({"type": "message_stop"})),
    ]);
    steps
}

fn anthropic_body(c: &Completion) -> Value {
    json!({
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": c.model,
        "content": [anthropic_block(c, false)],
        "stop_reason": c.finish,
        "stop_sequence": null,
        "usage": c.usage.clone().unwrap_or_else(|| json!({})),
    })
}

/// Every role a tier can use, as the routing table names them.
pub const ROLES: [&str; 8] = [
    "quality",
    "security",
    "performance",
    "docs",
    "integration",
    "judge",
    "coordinator",
    "rules",
];

/// A routing table's `[route]` section sending every role of every tier to
/// the model class `class`.
pub fn routes_to(class: &str) -> String {
    let mut out = String::from("[route]\n");
    for role in ROLES {
        for tier in ["trivial", "light", "full"] {
            let _ = writeln!(out, "\"{role}.{tier}\" = \"{class}\"");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal HTTP/1.1 client: sends `body` to `path`, returns the whole
    /// response as text.
    fn post(server: &ModelServer, path: &str, headers: &[(&str, &str)], body: &Value) -> String {
        let mut stream = TcpStream::connect(server.addr()).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let body = body.to_string();
        let mut lines = vec![
            format!("POST {path} HTTP/1.1"),
            "Host: x".to_owned(),
            format!("Content-Length: {}", body.len()),
        ];
        lines.extend(headers.iter().map(|(n, v)| format!("{n}: {v}")));
        let request = format!("{}\r\n\r\n{body}", lines.join("\r\n"));
        stream.write_all(request.as_bytes()).expect("send");
        let mut out = String::new();
        let _ = stream.read_to_string(&mut out);
        out
    }

    #[test]
    fn scripts_match_by_path_role_and_model_and_repeat_their_last_reply() {
        let server = ModelServer::start();
        server
            .script(
                Matcher::any().role("quality"),
                vec![
                    Reply::json(429, json!({"n": 1})),
                    Reply::json(200, json!({"n": 2})),
                ],
            )
            .script(
                Matcher::any().model("m2").path("/v1/messages"),
                vec![Reply::json(200, json!({"n": 3}))],
            );
        let quality = [("X-Gate-Role", "quality")];
        assert!(post(&server, "/x", &quality, &json!({})).starts_with("HTTP/1.1 429"));
        for _ in 0..2 {
            let r = post(&server, "/x", &quality, &json!({}));
            assert!(
                r.starts_with("HTTP/1.1 200") && r.ends_with(r#"{"n":2}"#),
                "{r}"
            );
        }
        assert!(
            post(&server, "/v1/messages", &[], &json!({"model": "m2"})).ends_with(r#"{"n":3}"#)
        );
        assert!(
            post(&server, "/v1/other", &[], &json!({"model": "m2"})).starts_with("HTTP/1.1 404")
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 5);
        assert_eq!(requests[0].header("x-gate-role"), Some("quality"));
        assert_eq!(requests[3].body, json!({"model": "m2"}));
        assert_eq!(requests[4].path, "/v1/other");
        assert!(requests.iter().all(|r| r.method == "POST"));
    }

    #[test]
    fn completions_stream_only_when_asked_and_usage_only_with_include_usage() {
        let server = ModelServer::start();
        server.default_reply(Reply::openai(&json!({"findings": []})));
        let plain = post(
            &server,
            "/v1/chat/completions",
            &[],
            &json!({"stream": false}),
        );
        assert!(
            plain.contains("Content-Type: application/json")
                && plain.contains("\"prompt_tokens\":1200")
        );
        let streamed = post(
            &server,
            "/v1/chat/completions",
            &[],
            &json!({"stream": true}),
        );
        assert!(streamed.contains("text/event-stream") && streamed.ends_with("data: [DONE]\n\n"));
        assert!(
            !streamed.contains("prompt_tokens"),
            "usage without include_usage: {streamed}"
        );
        let with_usage = post(
            &server,
            "/v1/chat/completions",
            &[],
            &json!({"stream": true, "stream_options": {"include_usage": true}}),
        );
        assert!(with_usage.contains("\"prompt_tokens\":1200"));
    }

    #[test]
    fn a_delayed_reply_waits_and_carries_its_headers() {
        let server = ModelServer::start();
        server.default_reply(
            Reply::anthropic_error(529, "overloaded_error", "Overloaded")
                .retry_after("3")
                .after(Duration::from_millis(200)),
        );
        let started = Instant::now();
        let r = post(&server, "/v1/messages", &[], &json!({}));
        assert!(started.elapsed() >= Duration::from_millis(200));
        assert!(r.starts_with("HTTP/1.1 529 Overloaded\r\n"), "{r}");
        assert!(r.contains("\r\nRetry-After: 3\r\n") && r.contains("\r\nConnection: close\r\n"));
        assert!(
            r.contains(r#"{"type":"error","error":{"type":"overloaded_error""#),
            "{r}"
        );
    }

    #[test]
    fn close_and_hang_end_when_the_server_is_dropped() {
        let server = ModelServer::start();
        server.script(Matcher::any().path("/close"), vec![Reply::close()]);
        server.script(Matcher::any().path("/hang"), vec![Reply::hang()]);
        assert_eq!(post(&server, "/close", &[], &json!({})), "");
        let addr = server.addr();
        let waiter = std::thread::spawn(move || {
            let mut stream = TcpStream::connect(addr).expect("connect");
            stream
                .write_all(b"POST /hang HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
                .expect("send");
            let mut out = String::new();
            let _ = stream.read_to_string(&mut out);
            out
        });
        std::thread::sleep(Duration::from_millis(100));
        let started = Instant::now();
        drop(server);
        assert_eq!(waiter.join().expect("join"), "");
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
