//! Progress on stderr while a run goes: what started, finished, is up, and
//! a heartbeat for what is still running or waiting on a model.

use std::io::Write;
use std::time::Duration;

use gate_harness::{Event, Status};
use gate_review::events::Event as ReviewEvent;

use super::stream::{Observer, Waiting, WaitingOn};
use super::style::{Paint, Style};
use super::text::shown;
use crate::config::{Context, Verbosity};
use crate::events::RunEvent;
use crate::output::notes;
use crate::record::ItemStatus;

/// The stderr progress renderer.
pub(crate) struct Progress {
    out: Box<dyn Write + Send>,
    verbosity: Verbosity,
    style: Style,
    /// The review's spinner shows who waits on which model.
    spinner: bool,
}

impl Progress {
    /// Progress to stderr.
    pub(crate) fn stderr(ctx: &Context, style: Style) -> Self {
        let mut p = Self::to(Box::new(std::io::stderr()), ctx.verbosity, style);
        p.spinner = super::heartbeat::spins(ctx);
        p
    }

    /// Progress to any writer (tests).
    pub(crate) fn to(out: Box<dyn Write + Send>, verbosity: Verbosity, style: Style) -> Self {
        Self {
            out,
            verbosity,
            style,
            spinner: false,
        }
    }

    fn line(&mut self, text: &str) {
        // On a terminal with the review's spinner, take its line over first
        // (it redraws itself below).
        let clear = if self.spinner { "\r\x1b[2K" } else { "" };
        // Nothing sensible is left to do when stderr itself is gone.
        let _ = writeln!(self.out, "{clear}{text}");
        let _ = self.out.flush();
    }

    fn verbose(&self) -> bool {
        self.verbosity >= Verbosity::Verbose
    }
}

impl Observer for Progress {
    fn event(&mut self, event: &RunEvent) {
        if self.verbosity == Verbosity::Quiet {
            if let RunEvent::Note(note) = event
                && note.is_warning()
            {
                self.line(&shown(&notes::words(note)));
            }
            return;
        }
        let style = self.style;
        match event {
            RunEvent::RunStarted {
                run_id, spec_id, ..
            } => self.line(&format!(
                "gate: verifying `{}` (run {})",
                shown(spec_id),
                shown(run_id)
            )),
            RunEvent::Note(note) if note.is_warning() => {
                self.line(&style.paint(&shown(&notes::words(note)), Paint::Yellow));
            }
            RunEvent::Note(note) => self.line(&shown(&notes::words(note))),
            RunEvent::Review(ReviewEvent::AttemptStarted(seat)) if self.verbose() => {
                self.line(&format!(
                    "  {} {} asks {}",
                    style.paint("…", Paint::Dim),
                    shown(&seat.role),
                    shown(&seat.model)
                ));
            }
            RunEvent::Review(ReviewEvent::SpecialistStarted(seat)) if self.verbose() => {
                self.line(&format!(
                    "  {} {} ({})",
                    style.paint("…", Paint::Dim),
                    shown(&seat.role),
                    shown(&seat.model)
                ));
            }
            RunEvent::Harness(Event::Started { id }) if self.verbose() => {
                self.line(&format!("  {} {}", style.paint("…", Paint::Dim), shown(id)));
            }
            RunEvent::Harness(Event::Ready { id }) => {
                self.line(&format!(
                    "  {} {} is up",
                    style.paint("↑", Paint::Green),
                    shown(id)
                ));
            }
            RunEvent::Harness(Event::Stopped { id }) if self.verbose() => {
                self.line(&format!(
                    "  {} {} stopped",
                    style.paint("↓", Paint::Dim),
                    shown(id)
                ));
            }
            RunEvent::Harness(Event::Finished(r)) => {
                let mark = style.mark(match r.status {
                    Status::Passed => ItemStatus::Passed,
                    Status::Failed => ItemStatus::Failed,
                    Status::Skipped => ItemStatus::Skipped,
                });
                let why = r
                    .reason
                    .as_ref()
                    .map(|w| format!("  {}", shown(w)))
                    .unwrap_or_default();
                self.line(&format!(
                    "  {mark} {} ({}){why}",
                    shown(&r.id),
                    duration(r.duration)
                ));
            }
            RunEvent::Review(ReviewEvent::Started { tier, seats }) => {
                let roles: Vec<&str> = seats.iter().map(|s| s.role.as_str()).collect();
                self.line(&format!(
                    "gate: review ({tier} tier): {}",
                    if roles.is_empty() {
                        "nobody to ask".to_owned()
                    } else {
                        shown(&roles.join(", ")).into_owned()
                    }
                ));
            }
            RunEvent::Review(ReviewEvent::SpecialistFinished { record, raised }) => {
                let took = duration(Duration::from_millis(record.latency_ms));
                if record.status == "ok" {
                    let noun = if *raised == 1 { "finding" } else { "findings" };
                    self.line(&format!(
                        "  {} {} ({}, {took}, {raised} {noun})",
                        style.mark(ItemStatus::Passed),
                        shown(&record.role),
                        shown(&record.model)
                    ));
                } else if record.status == "skipped" {
                    self.line(&format!(
                        "  {} {} skipped: {}",
                        style.mark(ItemStatus::Skipped),
                        shown(&record.role),
                        shown(record.reason.as_deref().unwrap_or("nothing to review"))
                    ));
                } else {
                    self.line(&format!(
                        "  {} {} did not run: {}",
                        style.mark(ItemStatus::Unverified),
                        shown(&record.role),
                        shown(record.reason.as_deref().unwrap_or("no reason given"))
                    ));
                }
            }
            RunEvent::ReviewSkipped { reason } if self.verbose() => {
                self.line(&format!("gate: review did not run — {}", shown(reason)));
            }
            _ => {}
        }
    }

    fn heartbeat(&mut self, waiting: &[Waiting]) {
        if self.verbosity == Verbosity::Quiet {
            return;
        }
        for w in waiting {
            if self.spinner && matches!(w.what, WaitingOn::Model(_)) {
                continue;
            }
            let line = heartbeat_line(w);
            let dim = self.style.paint(&line, Paint::Dim);
            self.line(&dim);
        }
    }
}

/// "  … build: running, 45 s" / "  … quality: waiting on claude-sonnet-4-5, 45 s".
pub(crate) fn heartbeat_line(w: &Waiting) -> String {
    let secs = w.elapsed.as_secs_f64().round() as u64;
    match &w.what {
        WaitingOn::Item => format!("  … {}: running, {secs} s", shown(&w.id)),
        WaitingOn::Model(model) if model.is_empty() => {
            format!("  … {}: waiting on its model, {secs} s", shown(&w.id))
        }
        WaitingOn::Model(model) => format!(
            "  … {}: waiting on {}, {secs} s",
            shown(&w.id),
            shown(model)
        ),
    }
}

/// A duration the way people read it: "812 ms", "4.2 s", "3 m 05 s".
pub(crate) fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        let s = d.as_secs();
        format!("{} m {:02} s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[test]
    fn durations() {
        for (ms, want) in [
            (0, "0 ms"),
            (812, "812 ms"),
            (4_240, "4.2 s"),
            (59_900, "59.9 s"),
            (185_000, "3 m 05 s"),
        ] {
            assert_eq!(duration(Duration::from_millis(ms)), want);
        }
    }

    /// A writer tests can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[test]
    fn heartbeat_lines_name_the_item_or_the_model_and_quiet_prints_nothing() {
        let waiting = [
            Waiting {
                what: WaitingOn::Item,
                id: "build".into(),
                elapsed: Duration::from_millis(44_600),
            },
            Waiting {
                what: WaitingOn::Model("claude-sonnet-4-5".into()),
                id: "quality".into(),
                elapsed: Duration::from_secs(30),
            },
        ];
        for (verbosity, color, want) in [
            (
                Verbosity::Normal,
                false,
                "  … build: running, 45 s\n  … quality: waiting on claude-sonnet-4-5, 30 s\n",
            ),
            (Verbosity::Quiet, false, ""),
        ] {
            let buf = Shared::default();
            let mut p = Progress::to(Box::new(buf.clone()), verbosity, Style { color });
            p.heartbeat(&waiting);
            assert_eq!(buf.text(), want);
        }
        let buf = Shared::default();
        let mut p = Progress::to(
            Box::new(buf.clone()),
            Verbosity::Normal,
            Style { color: true },
        );
        p.heartbeat(&waiting);
        assert!(buf.text().contains("\x1b[2m"), "{:?}", buf.text());
    }
}
