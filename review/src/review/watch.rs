//! The review's calls as they run: who is waiting on which model, and what
//! each call has done so far. Each attempt is reported as an event (the
//! heartbeat and the JSON Lines stream follow a fallback by it); the
//! terminal spinner reads who is running; the review's hard deadline falls
//! back on it when it has to cut a call short.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::events::{Event, EventSink, Seat};
use crate::record::{Attempt, AttemptOutcome, millis};
use crate::review::result::CallResult;

/// Every call of a review, running or finished.
#[derive(Clone)]
pub struct Watch {
    calls: Arc<Mutex<Vec<Arc<Live>>>>,
    events: EventSink,
}

impl Default for Watch {
    fn default() -> Self {
        Self::reporting_to(EventSink::discard())
    }
}

/// A specialist still running, as the heartbeat names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Running {
    /// The role.
    pub role: String,
    /// The model it is waiting on (`None` between attempts).
    pub model: Option<String>,
    /// Since the specialist started.
    pub elapsed: Duration,
    /// Attempts it has finished so far.
    pub attempts: usize,
}

/// One call's progress.
pub struct Live {
    role: String,
    started: Instant,
    state: Mutex<LiveState>,
    events: EventSink,
}

struct LiveState {
    result: CallResult,
    in_flight: Option<(String, Instant)>,
    pausing: Option<String>,
    done: bool,
}

impl Watch {
    /// A watch that reports each attempt to `events`.
    pub fn reporting_to(events: EventSink) -> Self {
        Self {
            calls: Arc::new(Mutex::new(Vec::new())),
            events,
        }
    }

    /// Registers a call of `role` starting now.
    pub fn start(&self, role: &str) -> Arc<Live> {
        let live = Arc::new(Live {
            role: role.to_owned(),
            started: Instant::now(),
            events: self.events.clone(),
            state: Mutex::new(LiveState {
                result: CallResult::empty(),
                in_flight: None,
                pausing: None,
                done: false,
            }),
        });
        lock(&self.calls).push(Arc::clone(&live));
        live
    }

    /// The calls still running, in the order they started.
    pub fn running(&self) -> Vec<Running> {
        let now = Instant::now();
        lock(&self.calls)
            .iter()
            .filter_map(|live| {
                let state = lock(&live.state);
                (!state.done).then(|| Running {
                    role: live.role.clone(),
                    model: state
                        .in_flight
                        .as_ref()
                        .map(|(m, _)| m.clone())
                        .or_else(|| state.pausing.clone()),
                    elapsed: now.saturating_duration_since(live.started),
                    attempts: state.result.attempts.len(),
                })
            })
            .collect()
    }
}

impl Live {
    /// An attempt on `model` begins.
    pub fn attempting(&self, model: &str) {
        {
            let mut state = lock(&self.state);
            state.in_flight = Some((model.to_owned(), Instant::now()));
            state.pausing = None;
        }
        self.events.emit(Event::AttemptStarted(Seat {
            role: self.role.clone(),
            model: model.to_owned(),
        }));
    }

    /// The call waits out `model`'s Retry-After before trying it again.
    pub fn pausing(&self, model: &str, wait: Duration) {
        lock(&self.state).pausing = Some(format!(
            "{model} (Retry-After {:.0} s)",
            wait.as_secs_f64().ceil()
        ));
    }

    /// The call's result so far (the attempt in flight is not in it).
    pub fn publish(&self, result: &CallResult) {
        let mut state = lock(&self.state);
        state.result = result.clone();
        state.in_flight = None;
    }

    /// The call ended.
    pub fn finish(&self) {
        lock(&self.state).done = true;
    }

    /// What the call had done when it was cut short: its attempts so far,
    /// plus the one in flight, recorded as cut by `why`.
    pub fn cut(&self, why: &str) -> CallResult {
        let mut state = lock(&self.state);
        state.done = true;
        let mut result = state.result.clone();
        if let Some((model, since)) = state.in_flight.take() {
            result.model.clone_from(&model);
            result.attempts.push(Attempt {
                model,
                outcome: AttemptOutcome::Retryable,
                latency_ms: millis(since.elapsed()),
                error: Some(why.to_owned()),
            });
        }
        result.answer = Err(why.to_owned());
        result.latency = self.started.elapsed();
        result
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_lists_unfinished_calls_and_a_cut_keeps_what_was_done() {
        let watch = Watch::default();
        let quality = watch.start("quality");
        let security = watch.start("security");
        security.attempting("m-1");
        let mut so_far = CallResult::empty();
        so_far.attempts.push(Attempt {
            model: "m-0".into(),
            outcome: AttemptOutcome::Retryable,
            latency_ms: 5,
            error: Some("HTTP 503".into()),
        });
        quality.publish(&so_far);
        quality.attempting("m-2");
        let running = watch.running();
        let names: Vec<(&str, Option<&str>)> = running
            .iter()
            .map(|r| (r.role.as_str(), r.model.as_deref()))
            .collect();
        assert_eq!(names, [("quality", Some("m-2")), ("security", Some("m-1"))]);

        let cut = quality.cut("the review's time ran out");
        assert_eq!(cut.attempts.len(), 2);
        assert_eq!(cut.attempts[1].model, "m-2");
        assert_eq!(cut.model, "m-2");
        assert_eq!(cut.answer, Err("the review's time ran out".to_owned()));
        security.finish();
        assert!(watch.running().is_empty());
    }

    #[tokio::test]
    async fn each_attempt_is_reported_as_an_event() {
        let (sink, mut rx) = EventSink::channel();
        let watch = Watch::reporting_to(sink);
        let live = watch.start("judge");
        live.attempting("m-1");
        live.attempting("m-2");
        drop((live, watch));
        let mut seen = Vec::new();
        while let Some(Event::AttemptStarted(seat)) = rx.recv().await {
            seen.push((seat.role, seat.model));
        }
        assert_eq!(
            seen,
            [
                ("judge".to_owned(), "m-1".to_owned()),
                ("judge".to_owned(), "m-2".to_owned())
            ]
        );
    }
}
