//! The `--format jsonl` stream's lines: the one type that defines each
//! event's fields, in the order they are written. `jsonl` fills them from
//! the run's events; the `events` schema is generated from them.

use gate_harness::{ItemKind, Location, Status};
use gate_review::tier::Tier;
use serde::Serialize;

use super::json::Document;
use crate::events::Note;
use crate::plan::Decision;
use crate::record::DecidedBy;

/// One line: `{"format_version":1,"event":"…", …}`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(title = "gate verify --format jsonl: one line")]
pub(crate) struct Line<'a> {
    /// The stream's format version.
    pub format_version: u32,
    /// The event and its fields.
    #[serde(flatten)]
    pub event: EventLine<'a>,
}

/// Each event the stream writes.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(crate) enum EventLine<'a> {
    /// The run began.
    RunStarted {
        /// Its id.
        run_id: &'a str,
        /// The spec's id.
        spec_id: &'a str,
        /// When (RFC 3339, UTC).
        started_at: &'a str,
    },
    /// Every item, and what this attempt does with it.
    Plan {
        /// The items.
        items: Vec<PlanItem<'a>>,
    },
    /// Something people should know.
    Notice(NoteLine<'a>),
    /// Something people must know.
    Warning(NoteLine<'a>),
    /// A check started.
    CheckStarted(Started<'a>),
    /// A plain-code criterion started.
    CriterionStarted(Started<'a>),
    /// A check finished.
    CheckFinished(Finished<'a>),
    /// A plain-code criterion finished.
    CriterionFinished(CriterionFinished<'a>),
    /// A service check is ready.
    ServiceReady {
        /// Its id.
        id: &'a str,
    },
    /// A service check was stopped.
    ServiceStopped {
        /// Its id.
        id: &'a str,
    },
    /// What is still running, every 30 s.
    Heartbeat {
        /// Each thing waited on.
        waiting: Vec<WaitingLine<'a>>,
    },
    /// The review began.
    ReviewStarted {
        /// The run's tier.
        tier: Tier,
        /// Each reviewer and the model it asks first.
        specialists: Vec<SeatLine<'a>>,
    },
    /// One more reviewer is asked after the panel (the model coordinator).
    SpecialistStarted(SeatLine<'a>),
    /// A request to a model of a reviewer's failback chain.
    AttemptStarted(SeatLine<'a>),
    /// A reviewer finished.
    SpecialistFinished(SpecialistLine<'a>),
    /// The review did not run.
    ReviewSkipped {
        /// Why.
        reason: &'a str,
    },
    /// The run's decision: the `--format json` document. The last line.
    Verdict(Box<Document<'a>>),
    /// The command stopped before a verdict. The last line.
    Error {
        /// The error, as printed.
        message: &'a str,
        /// The exit code it ends with.
        exit_code: u8,
    },
}

/// A note: its words for people, then what it is, as data.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct NoteLine<'a> {
    /// As people read it.
    pub message: String,
    /// What it says.
    #[serde(flatten)]
    pub note: &'a Note,
}

/// One planned item.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct PlanItem<'a> {
    /// Its id.
    pub id: &'a str,
    /// What it stands for.
    pub kind: ItemKind,
    /// Whether code or a model decides it.
    pub decided_by: DecidedBy,
    /// The task that owns it, if any.
    pub task: Option<&'a str>,
    /// What this attempt does with it.
    #[serde(flatten)]
    pub decision: &'a Decision,
}

/// An item that started.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Started<'a> {
    /// Its id.
    pub id: &'a str,
    /// What it stands for.
    pub kind: ItemKind,
}

/// An item's result, with what an agent acts on when it failed.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Finished<'a> {
    /// Its id.
    pub id: &'a str,
    /// What it stands for.
    pub kind: ItemKind,
    /// The task that owns it, if any.
    pub task: Option<&'a str>,
    /// How it ended.
    pub status: Status,
    /// Its exit status, for a process.
    pub exit_code: Option<i32>,
    /// How long it took.
    pub duration_ms: u64,
    /// Why it failed or was skipped.
    pub reason: Option<&'a str>,
    /// The redacted tail of its output, for a failed item.
    pub output_tail: Option<&'a str>,
    /// Where a built-in check pointed, for a failed item.
    pub locations: &'a [Location],
}

/// A criterion's result: an item's, and its text.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct CriterionFinished<'a> {
    /// The result.
    #[serde(flatten)]
    pub result: Finished<'a>,
    /// The criterion's text (redacted like everything the run records).
    pub text: Option<&'a str>,
}

/// Something a heartbeat waits on.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct WaitingLine<'a> {
    /// The item's id or the reviewer's role.
    pub id: &'a str,
    /// What it waits on.
    pub on: WaitOn,
    /// The model, when a reviewer waits on one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<&'a str>,
    /// Seconds so far.
    pub elapsed_s: u64,
}

/// What a heartbeat's entry waits on.
#[derive(Debug, Clone, Copy, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WaitOn {
    /// A check or criterion running.
    Item,
    /// A reviewer's model.
    Model,
}

/// A reviewer and a model it asks.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct SeatLine<'a> {
    /// Its role.
    pub role: &'a str,
    /// The model (empty when none is routed).
    pub model: &'a str,
}

/// A reviewer that finished.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct SpecialistLine<'a> {
    /// Its role.
    pub role: &'a str,
    /// The model that answered (or the last one asked).
    pub model: &'a str,
    /// `ok`, `skipped` or `did_not_run`.
    pub status: &'a str,
    /// Why it did not run.
    pub reason: Option<&'a str>,
    /// How long it took.
    pub latency_ms: u64,
    /// Input tokens, as the provider reported them.
    pub input_tokens: Option<u64>,
    /// Of those, served from a prompt cache.
    pub cached_input_tokens: Option<u64>,
    /// Output tokens, as the provider reported them.
    pub output_tokens: Option<u64>,
    /// Cost in US dollars, when known.
    pub cost_usd: Option<f64>,
    /// Findings it raised, before the coordinator.
    pub findings: usize,
}
