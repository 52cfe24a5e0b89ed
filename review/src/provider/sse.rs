//! Server-sent events: a push parser for the `text/event-stream` format, and
//! a reader that pulls events off a response body under the inactivity and
//! deadline bounds.
//!
//! The parser follows the WHATWG rules: lines end in CRLF, LF or CR; a line
//! starting with `:` is a comment; `data:` lines of one event are joined with
//! `\n`; an empty line dispatches the event; an event cut off by the end of
//! the stream is dropped. Bytes are split into lines before they are decoded,
//! so a chunk boundary may fall anywhere, even inside a UTF-8 character or
//! between the `\r` and `\n` of one line end.

use std::collections::VecDeque;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::time::Instant;

use crate::provider::errors::ProviderError;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, `message` when the event named none.
    pub event: String,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// A push parser: feed it bytes as they arrive, take the events it completes.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    /// The last byte seen was a `\r`: a `\n` right after it ends no new line.
    after_cr: bool,
    /// Still at the very start of the stream, where a BOM is skipped.
    at_start: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self {
            at_start: true,
            ..Self::default()
        }
    }

    /// Feeds the next bytes and returns the events they complete, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &b in bytes {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\r' | b'\n' => {
                    self.after_cr = b == b'\r';
                    if let Some(event) = self.end_line() {
                        events.push(event);
                    }
                }
                _ => {
                    self.after_cr = false;
                    self.line.push(b);
                }
            }
        }
        events
    }

    fn end_line(&mut self) -> Option<SseEvent> {
        let raw = std::mem::take(&mut self.line);
        let mut line = String::from_utf8_lossy(&raw).into_owned();
        if std::mem::take(&mut self.at_start) && line.starts_with('\u{feff}') {
            line.remove(0);
        }
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_str(), ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // `id` and `retry` matter to reconnecting browsers, not to one request.
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        let data = std::mem::take(&mut self.data);
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        Some(SseEvent {
            event: if event.is_empty() {
                "message".to_owned()
            } else {
                event
            },
            data,
        })
    }
}

/// Pulls events off a streamed response body.
///
/// Every read is bounded by the deadline and by the inactivity bound, which
/// runs from the last event the caller marked with [`EventReader::activity`]:
/// comments never reach the caller and keep-alive events (Anthropic's `ping`)
/// are simply not marked, so neither keeps a silent stream alive.
pub struct EventReader {
    body: BoxStream<'static, reqwest::Result<Vec<u8>>>,
    parser: SseParser,
    pending: VecDeque<SseEvent>,
    /// Body bytes taken in so far, held to `MAX_REPLY_BYTES`.
    received: usize,
    last_activity: Instant,
    inactivity: Duration,
    deadline: Instant,
    started: Instant,
}

impl EventReader {
    /// Reads `response`'s body as events.
    pub fn new(response: reqwest::Response, inactivity: Duration, deadline: Instant) -> Self {
        let body = response
            .bytes_stream()
            .map(|chunk| chunk.map(|b| b.to_vec()))
            .boxed();
        let now = Instant::now();
        Self {
            body,
            parser: SseParser::new(),
            pending: VecDeque::new(),
            received: 0,
            last_activity: now,
            inactivity,
            deadline,
            started: now,
        }
    }

    /// Marks the stream as alive now.
    pub fn activity(&mut self) {
        self.last_activity = Instant::now();
    }

    /// The next event, or `None` when the body ended.
    pub async fn next(&mut self) -> Result<Option<SseEvent>, ProviderError> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Ok(Some(event));
            }
            let silent_at = self.last_activity + self.inactivity;
            let limit = silent_at.min(self.deadline);
            match tokio::time::timeout_at(limit, self.body.next()).await {
                Err(_) if limit == self.deadline => {
                    return Err(ProviderError::Deadline {
                        after: self.started.elapsed(),
                    });
                }
                Err(_) => {
                    return Err(ProviderError::Silent {
                        after: self.inactivity,
                    });
                }
                Ok(None) => return Ok(None),
                Ok(Some(Err(source))) => return Err(ProviderError::Transport { source }),
                Ok(Some(Ok(bytes))) => {
                    // A line that never ends or events that never stop
                    // would otherwise grow until the deadline.
                    self.received = self.received.saturating_add(bytes.len());
                    if self.received > crate::provider::exchange::MAX_REPLY_BYTES {
                        return Err(crate::provider::exchange::too_large());
                    }
                    self.pending.extend(self.parser.push(&bytes));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.to_owned(),
            data: data.to_owned(),
        }
    }

    /// Feeds `input` split at every pair of cut points and checks that the
    /// events never depend on where the chunks fall.
    fn check(input: &str, expect: &[SseEvent]) {
        let bytes = input.as_bytes();
        let whole = SseParser::new().push(bytes);
        assert_eq!(whole, expect, "input fed whole: {input:?}");
        for i in 0..=bytes.len() {
            for j in i..=bytes.len() {
                let mut parser = SseParser::new();
                let mut got = parser.push(&bytes[..i]);
                got.extend(parser.push(&bytes[i..j]));
                got.extend(parser.push(&bytes[j..]));
                assert_eq!(got, expect, "input {input:?} cut at {i} and {j}");
            }
        }
    }

    #[test]
    fn events_do_not_depend_on_chunk_boundaries() {
        let cases: &[(&str, Vec<SseEvent>)] = &[
            ("data: {\"a\":1}\n\n", vec![ev("message", "{\"a\":1}")]),
            (
                "event: ping\ndata: {}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
                vec![
                    ev("ping", "{}"),
                    ev("message_stop", "{\"type\":\"message_stop\"}"),
                ],
            ),
            // CRLF, CR and LF line ends, mixed.
            (
                "data: a\r\n\r\ndata: b\r\rdata: c\n\n",
                vec![ev("message", "a"), ev("message", "b"), ev("message", "c")],
            ),
            // Multi-line data joins with \n; only one leading space is dropped.
            (
                "data: one\ndata:  two\ndata:three\n\n",
                vec![ev("message", "one\n two\nthree")],
            ),
            // Comments (OpenRouter's keep-alive) produce nothing.
            (
                ": OPENROUTER PROCESSING\n\n: again\ndata: x\n\n",
                vec![ev("message", "x")],
            ),
            // A field without a colon, an empty data line, unknown fields.
            (
                "data\nid: 7\nretry: 10\nfoo: bar\n\n",
                vec![ev("message", "")],
            ),
            // Multi-byte UTF-8 characters survive any split.
            ("data: é€😀\n\n", vec![ev("message", "é€😀")]),
            // A BOM at the start is skipped.
            ("\u{feff}data: x\n\n", vec![ev("message", "x")]),
            // An event without data is not dispatched, and its name does not leak.
            ("event: lonely\n\ndata: y\n\n", vec![ev("message", "y")]),
            // An event cut off by the end of the stream is dropped.
            ("data: done\n\ndata: partial\n", vec![ev("message", "done")]),
        ];
        for (input, expect) in cases {
            check(input, expect);
        }
    }

    #[test]
    fn a_cr_at_a_chunk_end_followed_by_lf_ends_one_line() {
        let mut parser = SseParser::new();
        assert!(parser.push(b"data: a\r").is_empty());
        // The \n completes the CRLF of the data line; the next CRLF is the empty line.
        assert!(parser.push(b"\n").is_empty());
        assert_eq!(parser.push(b"\r\n"), vec![ev("message", "a")]);
    }
}
