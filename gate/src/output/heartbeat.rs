//! The review's spinner: on a terminal, one line redrawn in place naming
//! every specialist still running, the model it waits on and for how long
//! ("security: waiting on claude-opus-4-5, 95 s"). Off a terminal the event
//! dispatcher's heartbeat lines say the same ([`super::progress`]), and
//! [`super::progress::Progress`] leaves model waits to the spinner when it
//! runs.
//!
//! [`fn@line`] is the whole format; [`spinner`] only decides when to draw it.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use gate_review::review::watch::{Running, Watch};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::text::shown;
use crate::config::{Context, Verbosity};

/// How often the spinner redraws.
const SPIN: Duration = Duration::from_millis(120);
const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/// The widest line drawn: a wrapped line cannot be redrawn in place.
const WIDTH: usize = 100;

/// Whether the review draws a spinner: stderr is a terminal that can
/// redraw a line, and progress is not silenced.
pub(crate) fn spins(ctx: &Context) -> bool {
    ctx.verbosity != Verbosity::Quiet && std::io::stderr().is_terminal() && !ctx.env.dumb_terminal()
}

/// One heartbeat line: every running specialist, what it waits on and for
/// how long. `None` when nothing is running.
pub(crate) fn line(running: &[Running]) -> Option<String> {
    if running.is_empty() {
        return None;
    }
    let parts: Vec<String> = running
        .iter()
        .map(|r| {
            let secs = r.elapsed.as_secs();
            match &r.model {
                Some(model) => format!("{}: waiting on {}, {secs} s", shown(&r.role), shown(model)),
                None if r.attempts == 0 => format!("{}: starting, {secs} s", shown(&r.role)),
                None => format!("{}: between attempts, {secs} s", shown(&r.role)),
            }
        })
        .collect();
    Some(parts.join(" · "))
}

/// A running spinner; [`Spinner::stop`] ends it and clears its line.
pub(crate) struct Spinner {
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

/// Starts the spinner over `watch` when [`spins`] says so; otherwise a
/// spinner that does nothing.
pub(crate) fn spinner(watch: Watch, ctx: &Context) -> Spinner {
    if !spins(ctx) {
        return Spinner {
            stop: None,
            task: None,
        };
    }
    let (tx, mut rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + SPIN, SPIN);
        let mut frame = 0usize;
        loop {
            tokio::select! {
                _ = &mut rx => break,
                _ = ticker.tick() => {}
            }
            if let Some(text) = line(&watch.running()) {
                frame = (frame + 1) % FRAMES.len();
                redraw(&format!("{} {text}", FRAMES[frame]));
            }
        }
        redraw("");
    });
    Spinner {
        stop: Some(tx),
        task: Some(task),
    }
}

impl Spinner {
    /// Stops the spinner and waits until its line is cleared.
    pub(crate) async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

/// Replaces the current terminal line with `text`.
fn redraw(text: &str) {
    let text: String = text.chars().take(WIDTH).collect();
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K{text}");
    let _ = err.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_each_running_specialist() {
        let running = |role: &str, model: Option<&str>, secs: u64| Running {
            role: role.into(),
            model: model.map(str::to_owned),
            elapsed: Duration::from_millis(secs * 1000 + 400),
            attempts: 1,
        };
        let cases: Vec<(Vec<Running>, Option<&str>)> = vec![
            (vec![], None),
            (
                vec![running("security", Some("claude-opus-4-5"), 95)],
                Some("security: waiting on claude-opus-4-5, 95 s"),
            ),
            (
                vec![
                    running("quality", Some("gpt-5"), 30),
                    running("judge", None, 31),
                ],
                Some("quality: waiting on gpt-5, 30 s · judge: between attempts, 31 s"),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(line(&input).as_deref(), want);
        }
        let mut fresh = running("docs", None, 0);
        fresh.attempts = 0;
        assert_eq!(line(&[fresh]).as_deref(), Some("docs: starting, 0 s"));
    }
}
