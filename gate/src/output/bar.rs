//! A progress bar on stderr for audits that take a while (`gate ledger
//! verify` fetching every bundle): one line redrawn in place on a terminal,
//! nothing at all otherwise, so logs and pipes stay clean.
//!
//! [`fn@line`] is the whole format; [`Bar`] only decides when to draw it.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::config::Context;

/// How often the bar redraws.
const TICK: Duration = Duration::from_millis(100);
/// Cells in the bar itself.
const CELLS: u64 = 30;

/// One bar line: `label [=========>          ] 120/400`.
pub(crate) fn line(label: &str, done: u64, total: u64) -> String {
    let done = done.min(total);
    let filled = (done * CELLS).checked_div(total).unwrap_or(CELLS);
    let mut bar = "=".repeat(filled as usize);
    if filled < CELLS {
        bar.push('>');
        bar.push_str(&" ".repeat((CELLS - filled - 1) as usize));
    }
    format!("{label} [{bar}] {done}/{total}")
}

/// A running bar; [`Bar::inc`] counts one item done, from any thread.
/// Dropping it stops the bar and clears its line.
pub(crate) struct Bar {
    done: Arc<AtomicU64>,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Bar {
    /// Starts a bar over `total` items, drawn only when stderr is a
    /// terminal that can redraw a line and progress is not silenced.
    pub(crate) fn start(label: &str, total: u64, ctx: &Context) -> Self {
        let draws = total > 0 && super::heartbeat::spins(ctx);
        let writer: Option<Box<dyn Write + Send>> = draws.then(|| Box::new(std::io::stderr()) as _);
        Self::to(writer, label, total)
    }

    /// A bar drawn to `out` (tests), or not at all.
    pub(crate) fn to(out: Option<Box<dyn Write + Send>>, label: &str, total: u64) -> Self {
        let done = Arc::new(AtomicU64::new(0));
        let Some(mut out) = out else {
            return Self {
                done,
                stop: None,
                thread: None,
            };
        };
        let (stop, stopped) = mpsc::channel::<()>();
        let label = label.to_owned();
        let counter = Arc::clone(&done);
        let thread = std::thread::spawn(move || {
            let mut last = None;
            loop {
                let now = counter.load(Ordering::Relaxed);
                if last != Some(now) {
                    // Nothing sensible is left to do when stderr itself is gone.
                    let _ = write!(out, "\r\x1b[2K{}", line(&label, now, total));
                    let _ = out.flush();
                    last = Some(now);
                }
                match stopped.recv_timeout(TICK) {
                    Err(RecvTimeoutError::Timeout) => {}
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            let _ = write!(out, "\r\x1b[2K");
            let _ = out.flush();
        });
        Self {
            done,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// One more item done.
    pub(crate) fn inc(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    /// Stops the bar and clears its line (what dropping it does, said where
    /// the work ends).
    pub(crate) fn finish(self) {
        drop(self);
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn lines() {
        let cases = [
            (0, 4, "x [>                             ] 0/4"),
            (1, 4, "x [=======>                      ] 1/4"),
            (4, 4, "x [==============================] 4/4"),
            (9, 4, "x [==============================] 4/4"),
            (0, 0, "x [==============================] 0/0"),
        ];
        for (done, total, want) in cases {
            assert_eq!(line("x", done, total), want, "{done}/{total}");
        }
    }

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

    #[test]
    fn draws_counts_from_many_threads_and_clears_its_line() {
        let out = Shared::default();
        let bar = Bar::to(Some(Box::new(out.clone())), "checking", 8);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| bar.inc());
            }
        });
        std::thread::sleep(TICK * 3);
        bar.finish();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(text.starts_with("\r\x1b[2Kchecking ["), "{text:?}");
        assert!(text.contains("] 8/8"), "{text:?}");
        assert!(text.ends_with("\r\x1b[2K"), "{text:?}");

        // Off a terminal: nothing drawn, counting still works.
        let quiet = Bar::to(None, "checking", 8);
        quiet.inc();
        quiet.finish();
    }
}
