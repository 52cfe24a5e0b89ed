//! Appenders to one SQLite file take turns in a kernel queue (a blocking
//! `flock` on a file beside the database) before `BEGIN IMMEDIATE`. SQLite's
//! own wait for its write lock polls with growing sleeps, so under many
//! writers the lock sits free while they sleep; a blocked `flock` is woken
//! the moment the lock is released. A killed holder's turn ends with it.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::ledger::error::LedgerError;

/// The queue of one ledger file, opened on first use.
#[derive(Debug)]
pub(super) struct Queue {
    path: PathBuf,
    file: Option<File>,
}

/// This handle's turn; dropping it lets the next appender in.
pub(super) struct Turn<'a> {
    queue: &'a mut Queue,
    #[cfg(unix)]
    lock: Option<nix::fcntl::Flock<File>>,
}

impl Queue {
    pub(super) fn new(db: &Path) -> Self {
        let mut path = db.as_os_str().to_owned();
        path.push("-append");
        Self {
            path: PathBuf::from(path),
            file: None,
        }
    }

    /// Waits for this handle's turn.
    pub(super) fn wait(&mut self) -> Result<Turn<'_>, LedgerError> {
        let file = match self.file.take() {
            Some(f) => f,
            None => std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&self.path)
                .map_err(|source| LedgerError::LockFile {
                    path: self.path.clone(),
                    source,
                })?,
        };
        #[cfg(unix)]
        {
            use nix::fcntl::{Flock, FlockArg};
            let lock = Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| {
                LedgerError::LockFile {
                    path: self.path.clone(),
                    source: e.into(),
                }
            })?;
            Ok(Turn {
                queue: self,
                lock: Some(lock),
            })
        }
        #[cfg(not(unix))]
        {
            self.file = Some(file);
            Ok(Turn { queue: self })
        }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(lock) = self.lock.take() {
            // Unlocked, the file is kept for the next turn; if unlocking
            // fails, closing it releases the lock.
            if let Ok(file) = lock.unlock() {
                self.queue.file = Some(file);
            }
        }
        #[cfg(not(unix))]
        let _ = &self.queue;
    }
}
