//! `--format jsonl`: the run as a stream of events, one JSON object a line,
//! each written and flushed as it happens, ending with the `verdict` event
//! (the same fields as `--format json`).
//!
//! Every line starts `{"format_version":1,"event":"…"`.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use gate_harness::{Event, ItemKind, ItemResult};
use gate_review::events::{Event as ReviewEvent, Seat};
use serde_json::Value;

use super::json::{Document, FORMAT_VERSION};
use super::lines::{
    CriterionFinished, EventLine, Finished, Line, NoteLine, PlanItem, SeatLine, SpecialistLine,
    Started, WaitOn, WaitingLine,
};
use super::notes;
use super::stream::{Observer, Waiting, WaitingOn};
use crate::events::{PlannedEvent, RunEvent};
use crate::record::DecidedBy;

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

    fn write(&mut self, value: Option<Value>) {
        let Some(value) = value.filter(|_| !self.closed) else {
            return;
        };
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
        self.write(value);
    }

    fn heartbeat(&mut self, waiting: &[Waiting]) {
        let waiting = waiting
            .iter()
            .map(|w| WaitingLine {
                id: &w.id,
                on: match w.what {
                    WaitingOn::Item => WaitOn::Item,
                    WaitingOn::Model(_) => WaitOn::Model,
                },
                model: match &w.what {
                    WaitingOn::Item => None,
                    WaitingOn::Model(model) => Some(model),
                },
                elapsed_s: w.elapsed.as_secs_f64().round() as u64,
            })
            .collect();
        let value = encode(&Line {
            format_version: FORMAT_VERSION,
            event: EventLine::Heartbeat { waiting },
        });
        self.write(value);
    }
}

/// An event as one JSON object. `planned` gives an item's kind, task and
/// text (a start or a result names only the id).
pub(crate) fn event_json(event: &RunEvent, planned: &Planned) -> Option<Value> {
    encode(&Line {
        format_version: FORMAT_VERSION,
        event: event_line(event, planned),
    })
}

/// A line as JSON. Every field is a string, number, bool, list or map of
/// those, so this cannot fail; were it to, the line is left out and the
/// log says so (a made-up line would claim an event or an exit code that
/// never was).
fn encode(line: &Line<'_>) -> Option<Value> {
    serde_json::to_value(line)
        .inspect_err(|e| tracing::error!(error = %e, "a jsonl line could not be written"))
        .ok()
}

/// The line an event is written as.
fn event_line<'a>(event: &'a RunEvent, planned: &'a Planned) -> EventLine<'a> {
    match event {
        RunEvent::RunStarted {
            run_id,
            spec_id,
            started_at,
        } => EventLine::RunStarted {
            run_id,
            spec_id,
            started_at,
        },
        RunEvent::Planned(items) => EventLine::Plan {
            items: items
                .iter()
                .map(|i| PlanItem {
                    id: &i.id,
                    kind: i.kind,
                    decided_by: if i.judged {
                        DecidedBy::Model
                    } else {
                        DecidedBy::Code
                    },
                    task: i.task.as_deref(),
                    decision: &i.decision,
                })
                .collect(),
        },
        RunEvent::Note(note) => {
            let line = NoteLine {
                message: notes::words(note),
                note,
            };
            if note.is_warning() {
                EventLine::Warning(line)
            } else {
                EventLine::Notice(line)
            }
        }
        RunEvent::Review(ReviewEvent::SpecialistStarted(seat)) => {
            EventLine::SpecialistStarted(seat_line(seat))
        }
        RunEvent::Review(ReviewEvent::AttemptStarted(seat)) => {
            EventLine::AttemptStarted(seat_line(seat))
        }
        RunEvent::Harness(Event::Started { id }) => {
            let kind = planned.get(id).map_or(ItemKind::Check, |p| p.kind);
            let started = Started { id, kind };
            if kind == ItemKind::Criterion {
                EventLine::CriterionStarted(started)
            } else {
                EventLine::CheckStarted(started)
            }
        }
        RunEvent::Harness(Event::Ready { id }) => EventLine::ServiceReady { id },
        RunEvent::Harness(Event::Stopped { id }) => EventLine::ServiceStopped { id },
        RunEvent::Harness(Event::Finished(r)) => {
            let planned = planned.get(&r.id);
            let result = finished(r, planned);
            if r.kind == ItemKind::Criterion {
                EventLine::CriterionFinished(CriterionFinished {
                    result,
                    text: planned.and_then(|p| p.text.as_deref()),
                })
            } else {
                EventLine::CheckFinished(result)
            }
        }
        RunEvent::Review(ReviewEvent::Started { tier, seats }) => EventLine::ReviewStarted {
            tier: *tier,
            specialists: seats.iter().map(seat_line).collect(),
        },
        RunEvent::Review(ReviewEvent::SpecialistFinished { record, raised }) => {
            EventLine::SpecialistFinished(SpecialistLine {
                role: &record.role,
                model: &record.model,
                status: &record.status,
                reason: record.reason.as_deref(),
                latency_ms: record.latency_ms,
                input_tokens: record.input_tokens,
                cached_input_tokens: record.cached_input_tokens,
                output_tokens: record.output_tokens,
                cost_usd: record.cost_usd,
                findings: *raised,
            })
        }
        RunEvent::ReviewSkipped { reason } => EventLine::ReviewSkipped { reason },
        RunEvent::Verdict(record) => EventLine::Verdict(Box::new(Document::of(record))),
        RunEvent::Failed { message, exit_code } => EventLine::Error {
            message,
            exit_code: *exit_code,
        },
    }
}

fn seat_line(seat: &Seat) -> SeatLine<'_> {
    SeatLine {
        role: &seat.role,
        model: &seat.model,
    }
}

/// An item's result, with what an agent acts on when it failed: its task,
/// the output tail (redacted, as the bundle keeps it)
/// and the places a built-in pointed at.
fn finished<'a>(r: &'a ItemResult, planned: Option<&'a PlannedEvent>) -> Finished<'a> {
    let failed = r.status == gate_harness::Status::Failed;
    Finished {
        id: &r.id,
        kind: r.kind,
        task: planned.and_then(|p| p.task.as_deref()),
        status: r.status,
        exit_code: r.exit_code,
        duration_ms: u64::try_from(r.duration.as_millis()).unwrap_or(u64::MAX),
        reason: r.reason.as_deref(),
        output_tail: failed.then_some(r.output.tail.as_str()),
        locations: if failed { &r.locations } else { &[] },
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

    use serde_json::json;

    use super::*;
    use crate::events::Note;
    use crate::output::fixture;
    use crate::plan::Decision;

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
                decision: Decision::Run {
                    why: "first attempt".into(),
                },
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
            observed: None,
        };
        let failed = event_json(
            &RunEvent::Harness(Event::Finished(result.clone())),
            &planned,
        )
        .unwrap();
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
                    decision: Decision::Run {
                        why: "first attempt".into(),
                    },
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
            let v = event_json(&event, &planned).unwrap();
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
        use gate_review::events::Seat;
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
        let seat = |role: &str| Seat {
            role: role.into(),
            model: "m".into(),
        };
        let planned_item = |kind, text: Option<&str>| PlannedEvent {
            id: "c1".into(),
            kind,
            judged: false,
            task: Some("orders".into()),
            text: text.map(str::to_owned),
            decision: Decision::Run {
                why: "first attempt".into(),
            },
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
            observed: None,
        };
        let mut lines: Vec<Value> = [
            RunEvent::RunStarted {
                run_id: "r".into(),
                spec_id: "s".into(),
                started_at: "t".into(),
            },
            RunEvent::Planned(vec![planned_item(ItemKind::Criterion, None)]),
            RunEvent::Note(Note::Rerunning {
                rerun: 1,
                carried: 2,
            }),
            RunEvent::Note(Note::Unprotected {
                criteria: vec!["c1".into()],
            }),
            RunEvent::Harness(Event::Started { id: "c1".into() }),
            RunEvent::Harness(Event::Started { id: "build".into() }),
            RunEvent::Harness(Event::Finished(failed("c1", ItemKind::Criterion))),
            RunEvent::Harness(Event::Finished(failed("build", ItemKind::Check))),
            RunEvent::Harness(Event::Ready { id: "db".into() }),
            RunEvent::Harness(Event::Stopped { id: "db".into() }),
            RunEvent::Review(ReviewEvent::Started {
                tier: gate_review::tier::Tier::Full,
                seats: vec![seat("quality")],
            }),
            RunEvent::Review(ReviewEvent::SpecialistStarted(seat("coordinator"))),
            RunEvent::Review(ReviewEvent::AttemptStarted(seat("quality"))),
            RunEvent::Review(ReviewEvent::SpecialistFinished {
                record: Box::new(fixture::specialist("quality", "ok", None)),
                raised: 2,
            }),
            RunEvent::ReviewSkipped {
                reason: "offline".into(),
            },
            RunEvent::Failed {
                message: "boom".into(),
                exit_code: 2,
            },
        ]
        .iter()
        .map(|e| event_json(e, &planned).unwrap())
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
        )
        .unwrap();
        let doc = serde_json::to_value(Document::of(&record)).unwrap();
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
        let note = RunEvent::Note(Note::Attempt { attempt: 2 });
        w.event(&note);
        assert!(w.closed);
        w.event(&note);
    }
}
