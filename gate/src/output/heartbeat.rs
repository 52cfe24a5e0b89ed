//! The heartbeat while the review waits on models: every interval, one line
//! on stderr naming who is still running and for how long
//! ("security: waiting on claude-opus-4-5, 95 s"); on a terminal, a spinner
//! line redrawn in place instead.
//!
//! [`line`] is the whole format; [`start`] only decides when to print it.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::config::Verbosity;
use crate::review::watch::{Running, Watch};

/// How often the spinner redraws.
const SPIN: Duration = Duration::from_millis(120);
const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// How the heartbeat shows itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Nothing (`--quiet`).
    Off,
    /// A line every interval (logs, CI).
    Lines,
    /// One line redrawn in place (a terminal).
    Spinner,
}

impl Style {
    /// Lines, or a spinner when stderr is a terminal; nothing when quiet.
    pub fn for_stderr(verbosity: Verbosity) -> Self {
        let dumb = crate::config::dumb_terminal();
        if verbosity == Verbosity::Quiet {
            Self::Off
        } else if std::io::stderr().is_terminal() && !dumb {
            Self::Spinner
        } else {
            Self::Lines
        }
    }
}

/// One heartbeat line: every running specialist, what it waits on and for
/// how long. `None` when nothing is running.
pub fn line(running: &[Running]) -> Option<String> {
    if running.is_empty() {
        return None;
    }
    let parts: Vec<String> = running
        .iter()
        .map(|r| {
            let secs = r.elapsed.as_secs();
            match &r.model {
                Some(model) => format!("{}: waiting on {model}, {secs} s", r.role),
                None => format!("{}: between attempts, {secs} s", r.role),
            }
        })
        .collect();
    Some(parts.join(" · "))
}

/// A running heartbeat; [`Heartbeat::stop`] ends it (and clears a spinner).
pub struct Heartbeat {
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

/// Starts the heartbeat over `watch`: a line every `interval`, or a spinner.
pub fn start(watch: Watch, interval: Duration, style: Style) -> Heartbeat {
    if style == Style::Off {
        return Heartbeat {
            stop: None,
            task: None,
        };
    }
    let (tx, mut rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let tick = if style == Style::Spinner {
            SPIN
        } else {
            interval.max(Duration::from_millis(10))
        };
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + tick, tick);
        let mut frame = 0usize;
        loop {
            tokio::select! {
                _ = &mut rx => break,
                _ = ticker.tick() => {}
            }
            let Some(text) = line(&watch.running()) else {
                continue;
            };
            if style == Style::Spinner {
                frame = (frame + 1) % FRAMES.len();
                redraw(&format!("{} {text}", FRAMES[frame]));
            } else {
                super::stderr(&format!("  … {text}"));
            }
        }
        if style == Style::Spinner {
            redraw("");
        }
    });
    Heartbeat {
        stop: Some(tx),
        task: Some(task),
    }
}

impl Heartbeat {
    /// Stops the heartbeat and waits until it has cleaned up.
    pub async fn stop(mut self) {
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
    let mut err = std::io::stderr().lock();
    let width = 100;
    let text: String = text.chars().take(width).collect();
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
    }
}
