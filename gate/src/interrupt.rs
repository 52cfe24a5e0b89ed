//! Stopping a run on request. Ctrl-C sends SIGINT; a CI runner cancelling a
//! job, a container being stopped or a scheduler pre-empting one send
//! SIGTERM; a closed terminal sends SIGHUP. The first of any of them
//! interrupts the run: the harness stops every process group it started,
//! review is not asked (or stops waiting), and the run is recorded as
//! interrupted, so it ends incomplete with its verdict printed. A second
//! signal ends the process at once, as a second Ctrl-C does elsewhere,
//! killing what the harness still runs; the ledger is transactional, so
//! that loses nothing recorded.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

/// Folders a run made that a second signal removes before the process
/// exits, each with how to remove it (no destructor runs on that path).
static ON_EXIT: Mutex<Vec<ExitCleanup>> = Mutex::new(Vec::new());

/// A folder, and how to remove it.
type ExitCleanup = (PathBuf, fn(&Path));

fn on_exit() -> MutexGuard<'static, Vec<ExitCleanup>> {
    ON_EXIT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Has `remove(path)` run if a second signal ends the process while `path`
/// is registered (until [`forget_on_exit`]).
pub(crate) fn remove_on_exit(path: &Path, remove: fn(&Path)) {
    on_exit().push((path.to_path_buf(), remove));
}

/// Takes `path` off the list a second signal removes.
pub(crate) fn forget_on_exit(path: &Path) {
    on_exit().retain(|(p, _)| p != path);
}

fn run_exit_cleanups() {
    for (path, remove) in on_exit().drain(..) {
        remove(&path);
    }
}

/// Whether the run was asked to stop, shared by the stages that must stop.
#[derive(Debug, Clone)]
pub(crate) struct Interrupt {
    asked: watch::Receiver<bool>,
}

impl Interrupt {
    /// Starts listening for SIGINT, SIGTERM and SIGHUP on the current
    /// runtime. Signals that cannot be listened for (a platform without
    /// them) simply never interrupt.
    pub(crate) fn listen() -> Self {
        let (tx, asked) = watch::channel(false);
        tokio::spawn(async move {
            let kinds = [
                (SignalKind::interrupt(), 2),
                (SignalKind::terminate(), 15),
                (SignalKind::hangup(), 1),
            ];
            let mut streams = Vec::new();
            for (kind, number) in kinds {
                if ignored_at_start(number) {
                    // `nohup` ignores SIGHUP, a script's `cmd &` SIGINT:
                    // what the gate was started deaf to stays ignored.
                    continue;
                }
                match signal(kind) {
                    Ok(stream) => streams.push((stream, number)),
                    Err(e) => {
                        tracing::warn!(signal = number, error = %e, "cannot listen for a signal");
                    }
                }
            }
            if streams.is_empty() {
                return;
            }
            loop {
                let waits = streams.iter_mut().map(|(stream, number)| {
                    let number = *number;
                    Box::pin(async move { stream.recv().await.map(|()| number) })
                });
                let (got, _, _) = futures::future::select_all(waits).await;
                let Some(number) = got else {
                    return;
                };
                // The value is replaced even once the run has stopped
                // listening, so the second signal is always known as one.
                if tx.send_replace(true) {
                    // Nothing started may outlive the gate; then the
                    // shell's convention for a death by signal.
                    gate_harness::process::kill_all_groups();
                    // No destructor runs on the way out: what the run
                    // made to be removed would outlive it.
                    run_exit_cleanups();
                    std::process::exit(128 + number);
                }
                tracing::info!(signal = number, "interrupted: stopping the run");
            }
        });
        Self { asked }
    }

    /// Resolves once a stop is asked for; never, if none is.
    pub(crate) async fn wait(&self) {
        let mut asked = self.asked.clone();
        if asked.wait_for(|asked| *asked).await.is_err() {
            // The listener is gone without being asked: nothing will ask.
            std::future::pending::<()>().await;
        }
    }
}

/// Whether the gate was started with signal `number` ignored. Linux lists
/// a process's ignored signals in `/proc/self/status` (`SigIgn`, a hex mask
/// of bit `number - 1`); elsewhere none is taken as ignored.
fn ignored_at_start(number: i32) -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (number - 1)) != 0)
}
