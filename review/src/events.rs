//! What a review reports while it goes. The review emits [`Event`]s into an
//! [`EventSink`] and never prints; the caller decides where they go (the
//! gate wraps each in its own run event, as it does the harness's).

use std::fmt;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use crate::record::SpecialistRecord;
use crate::tier::Tier;

/// Something that happened in a review.
#[derive(Debug, Clone)]
pub enum Event {
    /// The review began.
    Started {
        /// The run's tier.
        tier: Tier,
        /// Each reviewer and the model it asks first.
        seats: Vec<Seat>,
    },
    /// One more reviewer is asked after the panel (the model coordinator).
    SpecialistStarted(Seat),
    /// A reviewer sends a request to a model of its failback chain (the
    /// first, or the next one after a retryable failure).
    AttemptStarted(Seat),
    /// One reviewer finished, with or without an answer.
    SpecialistFinished {
        /// What it did.
        record: Box<SpecialistRecord>,
        /// Findings it raised (before the coordinator).
        raised: usize,
    },
}

/// One reviewer about to be asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seat {
    /// Its role.
    pub role: String,
    /// The first model of its failback chain (empty when none is routed).
    pub model: String,
}

/// Where a review sends its events. Cheap to clone; [`EventSink::discard`]
/// drops them. Sending is synchronous, so the caller sees them in the order
/// they happened, among its own.
#[derive(Clone)]
pub struct EventSink {
    send: Option<Arc<dyn Fn(Event) + Send + Sync>>,
}

impl fmt::Debug for EventSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventSink")
            .field("discards", &self.send.is_none())
            .finish()
    }
}

impl EventSink {
    /// A sink that hands every event to `send`.
    pub fn new(send: impl Fn(Event) + Send + Sync + 'static) -> Self {
        Self {
            send: Some(Arc::new(send)),
        }
    }

    /// A sink and the receiving end of the channel it sends into.
    pub fn channel() -> (Self, UnboundedReceiver<Event>) {
        let (tx, rx) = unbounded_channel();
        // A closed receiver means nobody listens any more: nothing to do.
        (
            Self::new(move |event| {
                let _ = tx.send(event);
            }),
            rx,
        )
    }

    /// A sink that drops every event.
    pub fn discard() -> Self {
        Self { send: None }
    }

    /// Sends an event; never blocks, never fails.
    pub fn emit(&self, event: Event) {
        if let Some(send) = &self.send {
            send(event);
        }
    }
}
