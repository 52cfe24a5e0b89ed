//! The one place a running run is rendered: a dispatcher task reads the
//! [`EventSink`]'s channel and hands every event, in order, to each
//! observer (progress on stderr, the JSON Lines stream), and on a steady
//! tick tells them what is still running or waiting (the heartbeat).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gate_review::events::Event as ReviewEvent;
use tokio::task::JoinHandle;

use crate::events::{EventSink, RunEvent};

/// How often the heartbeat looks at what is still going.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(30);

/// Something that renders events.
pub(crate) trait Observer: Send {
    /// One event, in the order they were emitted.
    fn event(&mut self, event: &RunEvent);
    /// What has been running or waiting for at least one heartbeat.
    fn heartbeat(&mut self, _waiting: &[Waiting]) {}
}

/// Something still going at a heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Waiting {
    /// A check or criterion running, or a reviewer waiting on its model.
    pub what: WaitingOn,
    /// The item's id or the reviewer's role.
    pub id: String,
    /// How long so far.
    pub elapsed: Duration,
}

/// What is being waited on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WaitingOn {
    /// A harness item is running.
    Item,
    /// A reviewer waits on this model.
    Model(String),
}

/// What has started and not yet finished.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    items: BTreeMap<String, Instant>,
    reviewers: BTreeMap<String, (String, Instant)>,
}

impl Pending {
    /// Updates from one event seen at `now`.
    pub(crate) fn observe(&mut self, event: &RunEvent, now: Instant) {
        match event {
            RunEvent::Harness(gate_harness::Event::Started { id }) => {
                self.items.insert(id.clone(), now);
            }
            // A service is up once ready; what follows is its dependents' time.
            RunEvent::Harness(
                gate_harness::Event::Ready { id } | gate_harness::Event::Stopped { id },
            ) => {
                self.items.remove(id);
            }
            RunEvent::Harness(gate_harness::Event::Finished(r)) => {
                self.items.remove(&r.id);
            }
            RunEvent::Review(ReviewEvent::Started { seats, .. }) => {
                for seat in seats {
                    self.reviewers
                        .insert(seat.role.clone(), (seat.model.clone(), now));
                }
            }
            RunEvent::Review(ReviewEvent::SpecialistStarted(seat)) => {
                self.reviewers
                    .insert(seat.role.clone(), (seat.model.clone(), now));
            }
            // Failing back: the same reviewer, since it started, now waits
            // on another model.
            RunEvent::Review(ReviewEvent::AttemptStarted(seat)) => {
                if let Some((model, _)) = self.reviewers.get_mut(&seat.role) {
                    model.clone_from(&seat.model);
                }
            }
            RunEvent::Review(ReviewEvent::SpecialistFinished { record, .. }) => {
                self.reviewers.remove(&record.role);
            }
            RunEvent::Verdict(_) | RunEvent::Failed { .. } => {
                self.items.clear();
                self.reviewers.clear();
            }
            _ => {}
        }
    }

    /// What has been going for at least `min` at `now`, items first.
    pub(crate) fn overdue(&self, now: Instant, min: Duration) -> Vec<Waiting> {
        let items = self.items.iter().map(|(id, since)| Waiting {
            what: WaitingOn::Item,
            id: id.clone(),
            elapsed: now.saturating_duration_since(*since),
        });
        let reviewers = self.reviewers.iter().map(|(role, (model, since))| Waiting {
            what: WaitingOn::Model(model.clone()),
            id: role.clone(),
            elapsed: now.saturating_duration_since(*since),
        });
        items
            .chain(reviewers)
            .filter(|w| w.elapsed >= min)
            .collect()
    }
}

/// The running dispatcher; [`Dispatcher::finish`] waits until every event
/// was rendered.
pub(crate) struct Dispatcher {
    task: JoinHandle<Vec<Box<dyn Observer>>>,
}

/// Starts a dispatcher over `observers`, ticking every `heartbeat`.
pub(crate) fn start(
    observers: Vec<Box<dyn Observer>>,
    heartbeat: Duration,
) -> (EventSink, Dispatcher) {
    let (sink, mut rx) = EventSink::channel();
    let task = tokio::spawn(async move {
        let mut observers = observers;
        let mut pending = Pending::default();
        let mut ticker =
            tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                event = rx.recv() => {
                    let Some(event) = event else { break };
                    pending.observe(&event, Instant::now());
                    for o in &mut observers {
                        o.event(&event);
                    }
                }
                _ = ticker.tick() => {
                    // Half a beat: what started just after the last tick
                    // still shows at this one.
                    let waiting = pending.overdue(Instant::now(), heartbeat / 2);
                    if !waiting.is_empty() {
                        for o in &mut observers {
                            o.heartbeat(&waiting);
                        }
                    }
                }
            }
        }
        observers
    });
    (sink, Dispatcher { task })
}

impl Dispatcher {
    /// Drops `sink` (the last handle the caller holds) and waits until the
    /// dispatcher rendered everything sent before.
    pub(crate) async fn finish(self, sink: EventSink) {
        drop(sink);
        // A panicking observer already reported itself through the panic hook.
        let _ = self.task.await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use gate_harness::{Event, ItemKind, ItemResult, Output, Status};
    use gate_review::events::Seat;
    use gate_review::tier::Tier;

    use super::*;

    fn finished(id: &str) -> RunEvent {
        RunEvent::Harness(Event::Finished(ItemResult {
            id: id.to_owned(),
            kind: ItemKind::Check,
            status: Status::Passed,
            exit_code: Some(0),
            duration: Duration::from_millis(5),
            reason: None,
            output: Output::default(),
            locations: Vec::new(),
            spec_error: None,
            observed: None,
        }))
    }

    #[test]
    fn pending_reports_only_what_is_overdue() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut p = Pending::default();
        p.observe(
            &RunEvent::Harness(Event::Started { id: "build".into() }),
            t0,
        );
        p.observe(
            &RunEvent::Harness(Event::Started { id: "lint".into() }),
            t0 + s(10),
        );
        p.observe(&finished("lint"), t0 + s(11));
        p.observe(
            &RunEvent::Review(ReviewEvent::Started {
                tier: Tier::Light,
                seats: vec![Seat {
                    role: "quality".into(),
                    model: "standard".into(),
                }],
            }),
            t0 + s(20),
        );
        assert_eq!(
            p.overdue(t0 + s(45), s(15)),
            vec![
                Waiting {
                    what: WaitingOn::Item,
                    id: "build".into(),
                    elapsed: s(45)
                },
                Waiting {
                    what: WaitingOn::Model("standard".into()),
                    id: "quality".into(),
                    elapsed: s(25)
                },
            ]
        );
        assert!(p.overdue(t0 + s(14), s(15)).is_empty());
    }

    struct Recorder(Arc<Mutex<Vec<String>>>);

    impl Observer for Recorder {
        fn event(&mut self, event: &RunEvent) {
            let name = match event {
                RunEvent::Note(crate::events::Note::Attempt { attempt }) => format!("n{attempt}"),
                other => format!("{other:?}").chars().take(8).collect(),
            };
            self.0.lock().unwrap().push(name);
        }
    }

    #[tokio::test]
    async fn every_observer_sees_every_event_in_order_before_finish_returns() {
        let a = Arc::new(Mutex::new(Vec::new()));
        let b = Arc::new(Mutex::new(Vec::new()));
        let (sink, dispatcher) = start(
            vec![
                Box::new(Recorder(Arc::clone(&a))),
                Box::new(Recorder(Arc::clone(&b))),
            ],
            HEARTBEAT,
        );
        let worker = sink.clone();
        tokio::spawn(async move {
            for i in 0..100 {
                worker.emit(RunEvent::Note(crate::events::Note::Attempt { attempt: i }));
            }
        })
        .await
        .unwrap();
        dispatcher.finish(sink).await;
        let want: Vec<String> = (0..100).map(|i| format!("n{i}")).collect();
        assert_eq!(*a.lock().unwrap(), want);
        assert_eq!(*b.lock().unwrap(), want);
    }
}
