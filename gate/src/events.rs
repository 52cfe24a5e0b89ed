//! What a run reports while it goes. The pipeline's stages emit
//! [`RunEvent`]s into an [`EventSink`] and never print; one dispatcher
//! ([`crate::output::stream`]) renders them: progress and heartbeats on
//! stderr, the JSON Lines stream on stdout.

use gate_harness::ItemKind;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::record::RunRecord;

/// Something that happened in a run.
#[derive(Debug, Clone)]
pub(crate) enum RunEvent {
    /// The run began.
    RunStarted {
        /// Its id.
        run_id: String,
        /// The spec's id.
        spec_id: String,
        /// When (RFC 3339, UTC).
        started_at: String,
    },
    /// The plan is made: every item and what this attempt does with it.
    Planned(Vec<PlannedEvent>),
    /// Something people should know of the run's set-up or progress (a
    /// key created, the ledger refusing a row); a warning shows even with `-q`.
    Note(Note),
    /// The harness reported on a check or plain-code criterion.
    Harness(gate_harness::Event),
    /// The review reported on its progress.
    Review(gate_review::events::Event),
    /// The review did not run.
    ReviewSkipped {
        /// Why.
        reason: String,
    },
    /// The run is decided: its whole record. The last event of a run.
    Verdict(Box<RunRecord>),
    /// The command stopped before a verdict.
    Failed {
        /// The error, as printed.
        message: String,
        /// The exit code it ends with.
        exit_code: u8,
    },
}

/// What a run tells people beside its results, as data: the renderers
/// word it (`output::notes`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "note", rename_all = "snake_case")]
pub(crate) enum Note {
    /// A base was given but the self-guard is off.
    SelfGuardOff {
        /// Why.
        reason: String,
    },
    /// What the run starts for the workspace runs without a sandbox.
    Unisolated {
        /// Why.
        reason: String,
    },
    /// Sandboxed, with a caveat (the host's network where a private one was asked).
    IsolationCaveat {
        /// What.
        reason: String,
    },
    /// Criteria whose verifiers read no file of the workspace, so nothing
    /// protects what decides them.
    Unprotected {
        /// Their ids.
        criteria: Vec<String>,
    },
    /// The ledger or the bundle store did not take the run; the bundle is kept.
    NotRecorded {
        /// Why.
        reason: String,
    },
    /// `GATE_ROUTING_URL`'s patch was not applied; the local table is used.
    RoutingOverrideFailed {
        /// The URL.
        url: String,
        /// Why.
        error: String,
    },
    /// `GATE_ROUTING_URL`'s patch was applied.
    RoutingOverrideApplied {
        /// The URL.
        url: String,
        /// What it changed.
        changed: Vec<String>,
    },
    /// A signing key was created (none was configured).
    KeyCreated {
        /// Where.
        path: String,
    },
    /// Criteria run on the base, before the checks run after them.
    BaseRuns {
        /// How many.
        criteria: usize,
        /// The base's commit.
        commit: String,
    },
    /// Which attempt of the series this is (from the second on).
    Attempt {
        /// Its number.
        attempt: u32,
    },
    /// The previous attempt's bundle cannot be used: everything runs again.
    PreviousUnusable {
        /// Why.
        reason: String,
    },
    /// The attempt history could not be read: this is taken as a first attempt.
    HistoryUnreadable {
        /// Why.
        reason: String,
    },
    /// The spec's attempt series could not be locked.
    SeriesUnlocked {
        /// Why.
        reason: String,
    },
    /// Another run of the spec holds the series; this one waits for it.
    SeriesBusy {
        /// The spec.
        spec_id: String,
    },
    /// The workspace's files differ from the commit it is at: the run
    /// verifies the working tree, not that commit.
    Uncommitted {
        /// How many files differ.
        files: usize,
        /// The commit.
        commit: String,
    },
    /// A retry runs only part of the plan.
    Rerunning {
        /// Items run again.
        rerun: usize,
        /// Items carried forward.
        carried: usize,
    },
    /// Carried items whose reads the run's items changed, run after all.
    Rechecking {
        /// Their ids, with the items they need run again with them.
        items: Vec<String>,
    },
}

impl Note {
    /// Whether people must see it even with `-q`.
    pub(crate) fn is_warning(&self) -> bool {
        matches!(
            self,
            Self::SelfGuardOff { .. }
                | Self::Unisolated { .. }
                | Self::IsolationCaveat { .. }
                | Self::Unprotected { .. }
                | Self::NotRecorded { .. }
                | Self::RoutingOverrideFailed { .. }
                | Self::HistoryUnreadable { .. }
                | Self::Uncommitted { .. }
        )
    }
}

/// One planned item, as events report it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlannedEvent {
    /// Its id.
    pub id: String,
    /// What it stands for.
    pub kind: ItemKind,
    /// Decided by a model rather than run by the harness.
    pub judged: bool,
    /// The task that owns it (a criterion, a task's tests), if any.
    pub task: Option<String>,
    /// A criterion's text (redacted like everything the run records).
    pub text: Option<String>,
    /// The plan's decision.
    pub decision: crate::plan::Decision,
}

/// Where stages send events. Cheap to clone; a sink whose dispatcher is
/// gone drops them.
#[derive(Debug, Clone)]
pub(crate) struct EventSink {
    tx: Option<UnboundedSender<RunEvent>>,
}

impl EventSink {
    /// A sink and the receiving end its dispatcher reads.
    pub(crate) fn channel() -> (Self, UnboundedReceiver<RunEvent>) {
        let (tx, rx) = unbounded_channel();
        (Self { tx: Some(tx) }, rx)
    }

    /// Sends an event; never blocks, never fails.
    pub(crate) fn emit(&self, event: RunEvent) {
        if let Some(tx) = &self.tx {
            // A closed dispatcher means nobody renders any more: nothing to do.
            let _ = tx.send(event);
        }
    }

    /// A sink for the review, whose events are sent on here as they come.
    pub(crate) fn review(&self) -> gate_review::events::EventSink {
        let sink = self.clone();
        gate_review::events::EventSink::new(move |event| sink.emit(RunEvent::Review(event)))
    }

    /// A sender for the harness, whose events are forwarded here until the
    /// harness drops it; await the handle to know all were forwarded.
    pub(crate) fn harness(
        &self,
    ) -> (
        UnboundedSender<gate_harness::Event>,
        tokio::task::JoinHandle<()>,
    ) {
        let (tx, mut rx) = unbounded_channel();
        let sink = self.clone();
        let forward = tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                sink.emit(RunEvent::Harness(event));
            }
        });
        (tx, forward)
    }
}
