//! Progress on stderr while the harness runs.

use std::time::Duration;

use gate_harness::{Event, Status};
use tokio::sync::mpsc::UnboundedReceiver;

use super::stderr;
use crate::config::Verbosity;

/// Prints harness events until the channel closes.
pub async fn render(mut events: UnboundedReceiver<Event>, verbosity: Verbosity) {
    while let Some(event) = events.recv().await {
        if verbosity == Verbosity::Quiet {
            continue;
        }
        match event {
            Event::Started { id } => {
                if verbosity >= Verbosity::Verbose {
                    stderr(&format!("  … {id}"));
                }
            }
            Event::Ready { id } => stderr(&format!("  ↑ {id} is up")),
            Event::Stopped { id } => {
                if verbosity >= Verbosity::Verbose {
                    stderr(&format!("  ↓ {id} stopped"));
                }
            }
            Event::Finished(r) => {
                let mark = match r.status {
                    Status::Passed => "✓",
                    Status::Failed => "✗",
                    Status::Skipped => "–",
                };
                let why = r.reason.map(|w| format!("  {w}")).unwrap_or_default();
                stderr(&format!(
                    "  {mark} {} ({}){why}",
                    r.id,
                    duration(r.duration)
                ));
            }
        }
    }
}

/// A duration the way people read it: "812 ms", "4.2 s", "3 m 05 s".
pub fn duration(d: Duration) -> String {
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
}
