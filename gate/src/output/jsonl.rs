//! `--format jsonl`: the run as a stream of events, one JSON object a line,
//! each written and flushed as it happens, ending with the `verdict` event
//! (the same fields as `--format json`).
//!
//! Every line starts `{"format_version":1,"event":"…"`.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use gate_harness::{Event, ItemKind, ItemResult};
use serde_json::{Map, Value, json};

use super::json::{FORMAT_VERSION, kind_str};
use super::stream::{Observer, Waiting, WaitingOn};
use crate::events::{PlannedEvent, RunEvent};

/// The planned items by id: what a start or a result names only by its id.
pub(crate) type Planned = HashMap<String, PlannedEvent>;

/// Writes events as JSON lines.
pub(crate) struct JsonlWriter {
    out: Box<dyn Write + Send>,
    planned: Planned,
    closed: bool,
}

impl JsonlWriter {
    /// Lines to stdout, flushed one by one.
    pub(crate) fn stdout() -> Self {
        Self::to(Box::new(io::stdout()))
    }

    /// Lines into a shared buffer (a `--report jsonl=PATH`, written at the end).
    pub(crate) fn buffer(buf: Arc<Mutex<Vec<u8>>>) -> Self {
        Self::to(Box::new(SharedBuf(buf)))
    }

    fn to(out: Box<dyn Write + Send>) -> Self {
        Self {
            out,
            planned: HashMap::new(),
            closed: false,
        }
    }

    fn write(&mut self, value: &Value) {
        if self.closed {
            return;
        }
        let mut line = value.to_string();
        line.push('\n');
        let written = self
            .out
            .write_all(line.as_bytes())
            .and_then(|()| self.out.flush());
        if written.is_err() {
            // A reader that went away (`| head -1`) ends the stream, not the
            // run: the run still decides and records; stdout stays quiet.
            self.closed = true;
        }
    }
}

impl Observer for JsonlWriter {
    fn event(&mut self, event: &RunEvent) {
        if let RunEvent::Planned(items) = event {
            for i in items {
                self.planned.insert(i.id.clone(), i.clone());
            }
        }
        let value = event_json(event, &self.planned);
        self.write(&value);
    }

    fn heartbeat(&mut self, waiting: &[Waiting]) {
        let waiting: Vec<Value> = waiting
            .iter()
            .map(|w| match &w.what {
                WaitingOn::Item => {
                    json!({"id": w.id, "on": "item", "elapsed_s": w.elapsed.as_secs_f64().round() as u64})
                }
                WaitingOn::Model(model) => json!({"id": w.id, "on": "model", "model": model,
                    "elapsed_s": w.elapsed.as_secs_f64().round() as u64}),
            })
            .collect();
        let value = line("heartbeat", json!({ "waiting": waiting }));
        self.write(&value);
    }
}

/// An event as one JSON object. `planned` gives an item's kind, task and
/// text (a start or a result names only the id).
pub(crate) fn event_json(event: &RunEvent, planned: &Planned) -> Value {
    match event {
        RunEvent::RunStarted {
            run_id,
            spec_id,
            started_at,
        } => line(
            "run_started",
            json!({"run_id": run_id, "spec_id": spec_id, "started_at": started_at}),
        ),
        RunEvent::Planned(items) => {
            let items: Vec<Value> = items
                .iter()
                .map(|i| {
                    let mut o = Map::new();
                    o.insert("id".into(), i.id.clone().into());
                    o.insert("kind".into(), kind_str(i.kind).into());
                    o.insert(
                        "decided_by".into(),
                        (if i.judged { "model" } else { "code" }).into(),
                    );
                    o.insert("task".into(), i.task.clone().into());
                    if let Value::Object(d) = &i.decision {
                        o.extend(d.clone());
                    }
                    Value::Object(o)
                })
                .collect();
            line("plan", json!({ "items": items }))
        }
        RunEvent::Notice(text) => line("notice", json!({ "message": text })),
        RunEvent::Warning(text) => line("warning", json!({ "message": text })),
        RunEvent::SpecialistStarted(seat) => line(
            "specialist_started",
            json!({"role": seat.role, "model": seat.model}),
        ),
        RunEvent::AttemptStarted(seat) => line(
            "attempt_started",
            json!({"role": seat.role, "model": seat.model}),
        ),
        RunEvent::Harness(Event::Started { id }) => {
            let kind = planned.get(id).map_or(ItemKind::Check, |p| p.kind);
            line(
                &format!("{}_started", stage(kind)),
                json!({"id": id, "kind": kind_str(kind)}),
            )
        }
        RunEvent::Harness(Event::Ready { id }) => line("service_ready", json!({ "id": id })),
        RunEvent::Harness(Event::Stopped { id }) => line("service_stopped", json!({ "id": id })),
        RunEvent::Harness(Event::Finished(r)) => line(
            &format!("{}_finished", stage(r.kind)),
            finished(r, planned.get(&r.id)),
        ),
        RunEvent::ReviewStarted { tier, seats } => {
            let seats: Vec<Value> = seats
                .iter()
                .map(|s| json!({"role": s.role, "model": s.model}))
                .collect();
            line(
                "review_started",
                json!({"tier": tier.as_str(), "specialists": seats}),
            )
        }
        RunEvent::SpecialistFinished { record, raised } => line(
            "specialist_finished",
            json!({
                "role": record.role,
                "model": record.model,
                "status": record.status,
                "reason": record.reason,
                "latency_ms": record.latency_ms,
                "input_tokens": record.input_tokens,
                "cached_input_tokens": record.cached_input_tokens,
                "output_tokens": record.output_tokens,
                "cost_usd": record.cost_usd,
                "findings": raised,
            }),
        ),
        RunEvent::ReviewSkipped { reason } => line("review_skipped", json!({ "reason": reason })),
        RunEvent::Verdict(record) => line("verdict", super::json::render(record)),
        RunEvent::Failed { message, exit_code } => {
            line("error", json!({"message": message, "exit_code": exit_code}))
        }
    }
}

/// `{"format_version":1,"event":name, …fields}`, in that order.
fn line(name: &str, fields: Value) -> Value {
    let mut o = Map::new();
    o.insert("format_version".into(), FORMAT_VERSION.into());
    o.insert("event".into(), name.into());
    if let Value::Object(fields) = fields {
        for (k, v) in fields {
            if k != "format_version" {
                o.insert(k, v);
            }
        }
    }
    Value::Object(o)
}

/// An item's result, with what an agent acts on when it failed: its task,
/// a criterion's text, the output tail (redacted, as the bundle keeps it)
/// and the places a built-in pointed at.
fn finished(r: &ItemResult, planned: Option<&PlannedEvent>) -> Value {
    let failed = r.status == gate_harness::Status::Failed;
    let mut v = json!({
        "id": r.id,
        "kind": kind_str(r.kind),
        "task": planned.and_then(|p| p.task.clone()),
        "status": match r.status {
            gate_harness::Status::Passed => "passed",
            gate_harness::Status::Failed => "failed",
            gate_harness::Status::Skipped => "skipped",
        },
        "exit_code": r.exit_code,
        "duration_ms": u64::try_from(r.duration.as_millis()).unwrap_or(u64::MAX),
        "reason": r.reason,
        "output_tail": failed.then_some(r.output.tail.as_str()),
        "locations": if failed { json!(r.locations) } else { json!([]) },
    });
    if r.kind == ItemKind::Criterion
        && let Some(obj) = v.as_object_mut()
    {
        obj.insert("text".into(), planned.and_then(|p| p.text.clone()).into());
    }
    v
}

/// "check" or "criterion": the event family of an item.
fn stage(kind: ItemKind) -> &'static str {
    match kind {
        ItemKind::Criterion => "criterion",
        ItemKind::Check | ItemKind::TaskTests | ItemKind::Builtin | ItemKind::Page => "check",
    }
}

/// A `Write` into a buffer shared with whoever writes it out later.
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| io::Error::other("the report buffer was poisoned"))?
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use gate_harness::{Output, Status};

    use super::*;
    use crate::output::fixture;

    #[test]
    fn every_line_starts_with_the_version_and_the_event_name() {
        let planned: Planned = [(
            "c1".to_owned(),
            PlannedEvent {
                id: "c1".into(),
                kind: ItemKind::Criterion,
                judged: false,
                task: Some("orders".into()),
                text: Some("POST /orders returns 201".into()),
                decision: json!({"decision": "run"}),
            },
        )]
        .into();
        let result = ItemResult {
            id: "c1".into(),
            kind: ItemKind::Criterion,
            status: Status::Failed,
            exit_code: Some(1),
            duration: Duration::from_millis(1500),
            reason: Some("exited with status 1".into()),
            output: Output {
                tail: "expected 201, got 500\n".into(),
                ..Output::default()
            },
            locations: Vec::new(),
            spec_error: None,
        };
        let failed = event_json(
            &RunEvent::Harness(Event::Finished(result.clone())),
            &planned,
        );
        assert_eq!(
            (
                &failed["task"],
                &failed["text"],
                &failed["output_tail"],
                &failed["reason"]
            ),
            (
                &json!("orders"),
                &json!("POST /orders returns 201"),
                &json!("expected 201, got 500\n"),
                &json!("exited with status 1")
            ),
            "a failed criterion's event carries what an agent acts on: {failed}"
        );
        let cases: Vec<(RunEvent, &str)> = vec![
            (
                RunEvent::RunStarted {
                    run_id: "r".into(),
                    spec_id: "s".into(),
                    started_at: "t".into(),
                },
                "run_started",
            ),
            (
                RunEvent::Planned(vec![PlannedEvent {
                    id: "c1".into(),
                    kind: ItemKind::Criterion,
                    judged: false,
                    task: Some("orders".into()),
                    text: None,
                    decision: json!({"decision": "run", "why": "first attempt"}),
                }]),
                "plan",
            ),
            (
                RunEvent::Harness(Event::Started { id: "c1".into() }),
                "criterion_started",
            ),
            (
                RunEvent::Harness(Event::Started { id: "build".into() }),
                "check_started",
            ),
            (
                RunEvent::Harness(Event::Finished(result)),
                "criterion_finished",
            ),
            (
                RunEvent::ReviewSkipped {
                    reason: "offline".into(),
                },
                "review_skipped",
            ),
            (RunEvent::Verdict(Box::new(fixture::record())), "verdict"),
            (
                RunEvent::Failed {
                    message: "boom".into(),
                    exit_code: 2,
                },
                "error",
            ),
        ];
        for (event, name) in cases {
            let v = event_json(&event, &planned);
            let text = v.to_string();
            assert!(
                text.starts_with(&format!("{{\"format_version\":1,\"event\":\"{name}\"")),
                "{text}"
            );
            assert!(!text.contains('\n'));
        }
    }

    /// Every event the stream writes, with its fields: `docs/output-formats.md`
    /// names each one in that event's row.
    #[test]
    fn every_event_and_field_is_documented() {
        use crate::events::SeatEvent;
        let page = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/output-formats.md"),
        )
        .expect("docs/output-formats.md");
        let from = page.find("## `jsonl` events").expect("its section");
        let rows: Vec<&str> = page[from..]
            .lines()
            .skip_while(|l| !l.starts_with("| event |"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .collect();
        let seat = |role: &str| SeatEvent {
            role: role.into(),
            model: "m".into(),
        };
        let planned_item = |kind, text: Option<&str>| PlannedEvent {
            id: "c1".into(),
            kind,
            judged: false,
            task: Some("orders".into()),
            text: text.map(str::to_owned),
            decision: json!({"decision": "run", "why": "first attempt"}),
        };
        let planned: Planned = [(
            "c1".to_owned(),
            planned_item(ItemKind::Criterion, Some("holds")),
        )]
        .into();
        let failed = |id: &str, kind| ItemResult {
            id: id.into(),
            kind,
            status: Status::Failed,
            exit_code: Some(1),
            duration: Duration::from_millis(5),
            reason: Some("exited with status 1".into()),
            output: Output::default(),
            locations: vec![gate_harness::Location {
                file: "a.json".into(),
                line: Some(3),
                message: "not JSON".into(),
            }],
            spec_error: None,
        };
        let mut lines: Vec<Value> = [
            RunEvent::RunStarted {
                run_id: "r".into(),
                spec_id: "s".into(),
                started_at: "t".into(),
            },
            RunEvent::Planned(vec![planned_item(ItemKind::Criterion, None)]),
            RunEvent::Notice("n".into()),
            RunEvent::Warning("w".into()),
            RunEvent::Harness(Event::Started { id: "c1".into() }),
            RunEvent::Harness(Event::Started { id: "build".into() }),
            RunEvent::Harness(Event::Finished(failed("c1", ItemKind::Criterion))),
            RunEvent::Harness(Event::Finished(failed("build", ItemKind::Check))),
            RunEvent::Harness(Event::Ready { id: "db".into() }),
            RunEvent::Harness(Event::Stopped { id: "db".into() }),
            RunEvent::ReviewStarted {
                tier: crate::record::Tier::Full,
                seats: vec![seat("quality")],
            },
            RunEvent::SpecialistStarted(seat("coordinator")),
            RunEvent::AttemptStarted(seat("quality")),
            RunEvent::SpecialistFinished {
                record: Box::new(fixture::specialist("quality", "ok", None)),
                raised: 2,
            },
            RunEvent::ReviewSkipped {
                reason: "offline".into(),
            },
            RunEvent::Failed {
                message: "boom".into(),
                exit_code: 2,
            },
        ]
        .iter()
        .map(|e| event_json(e, &planned))
        .collect();
        let buf = Arc::new(Mutex::new(Vec::new()));
        let mut writer = JsonlWriter::buffer(Arc::clone(&buf));
        writer.heartbeat(&[
            Waiting {
                what: WaitingOn::Item,
                id: "build".into(),
                elapsed: Duration::from_secs(30),
            },
            Waiting {
                what: WaitingOn::Model("m".into()),
                id: "quality".into(),
                elapsed: Duration::from_secs(60),
            },
        ]);
        let written = String::from_utf8(buf.lock().unwrap().clone()).unwrap();
        lines.push(serde_json::from_str(written.trim()).unwrap());

        fn keys(value: &Value, out: &mut Vec<String>) {
            match value {
                Value::Object(map) => {
                    for (k, v) in map {
                        out.push(k.clone());
                        // A location is the JSON document's, described there.
                        if k != "locations" {
                            keys(v, out);
                        }
                    }
                }
                Value::Array(items) => items.iter().for_each(|v| keys(v, out)),
                _ => {}
            }
        }
        let mut problems = Vec::new();
        for line in &lines {
            let name = line["event"].as_str().unwrap();
            let Some(row) = rows.iter().find(|r| {
                r.split(" | ")
                    .next()
                    .is_some_and(|c| c.contains(&format!("`{name}`")))
            }) else {
                problems.push(format!("no row for `{name}`"));
                continue;
            };
            let mut fields = Vec::new();
            keys(line, &mut fields);
            for field in fields {
                if matches!(field.as_str(), "format_version" | "event") {
                    continue;
                }
                if !row.contains(&format!("`{field}`")) {
                    problems.push(format!("`{name}`: `{field}`"));
                }
            }
        }
        assert!(problems.is_empty(), "undocumented: {problems:?}");
    }

    #[test]
    fn the_verdict_event_carries_the_json_documents_fields() {
        let record = fixture::record();
        let v = event_json(
            &RunEvent::Verdict(Box::new(record.clone())),
            &Planned::new(),
        );
        let doc = super::super::json::render(&record);
        for (k, want) in doc.as_object().unwrap() {
            assert_eq!(&v[k], want, "field {k}");
        }
    }

    #[test]
    fn a_closed_reader_ends_the_stream_quietly() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut w = JsonlWriter::to(Box::new(Closed));
        w.event(&RunEvent::Notice("a".into()));
        assert!(w.closed);
        w.event(&RunEvent::Notice("b".into()));
    }
}
