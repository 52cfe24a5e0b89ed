//! The run's eBPF tracer, loaded in the background: loading its programs
//! into the kernel takes a few hundred milliseconds, which the run spends
//! surveying the workspace (git, the fingerprint) instead of waiting. The
//! first launcher of items waits for it, so no item starts untraced by it.

use std::sync::{Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;

use gate_harness::bpf::Watching;

/// The eBPF tracer of a run: none, loaded, or loading.
#[derive(Debug, Default)]
pub(crate) struct Watcher {
    loading: Mutex<Option<JoinHandle<Option<Watching>>>>,
    loaded: OnceLock<Option<Watching>>,
}

impl Watcher {
    /// A tracer already loaded, or none.
    pub(crate) fn ready(watching: Option<Watching>) -> Self {
        let loaded = OnceLock::new();
        let _ = loaded.set(watching);
        Self {
            loading: Mutex::new(None),
            loaded,
        }
    }

    /// A tracer loading on `thread`, which gives none when it could not
    /// load (the run then traces with `strace`).
    pub(crate) fn loading(thread: JoinHandle<Option<Watching>>) -> Self {
        Self {
            loading: Mutex::new(Some(thread)),
            loaded: OnceLock::new(),
        }
    }

    /// The tracer, once loaded: waits for a load under way.
    pub(crate) fn get(&self) -> Option<Watching> {
        self.loaded
            .get_or_init(|| {
                let thread = self
                    .loading
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                thread.and_then(|t| t.join().ok().flatten())
            })
            .clone()
    }
}
