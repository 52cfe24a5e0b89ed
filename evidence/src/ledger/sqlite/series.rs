//! The SQLite store's attempt-series lock: one lock file per spec in a
//! folder beside the database, held with `flock` for as long as a run of
//! the spec goes. The kernel drops the lock when its process dies, so a
//! killed run never leaves a series locked.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::ledger::error::LedgerError;

/// A held series lock; dropping it releases the lock.
#[derive(Debug)]
pub struct SeriesFile {
    #[cfg(unix)]
    _lock: nix::fcntl::Flock<File>,
    path: PathBuf,
}

impl SeriesFile {
    /// Takes the lock for `spec_id` of the ledger at `db`, waiting at most
    /// `wait`; `None` when it is still held by then.
    pub(super) fn lock(
        db: &Path,
        spec_id: &str,
        wait: Duration,
    ) -> Result<Option<Self>, LedgerError> {
        let mut dir = db.as_os_str().to_owned();
        dir.push("-series");
        let dir = PathBuf::from(dir);
        // Lock files are never removed: removing one another process waits
        // on would let two holders in.
        let key = blake3::hash(spec_id.as_bytes()).to_hex();
        let path = dir.join(format!("{}.lock", &key[..32]));
        let io_err = |source| LedgerError::LockFile {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(io_err)?;
        let deadline = Instant::now() + wait;
        let mut pause = Duration::from_millis(10);
        loop {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(io_err)?;
            if let Some(lock) = try_lock(file).map_err(io_err)? {
                return Ok(Some(Self {
                    #[cfg(unix)]
                    _lock: lock,
                    path,
                }));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(Duration::from_millis(250));
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(unix)]
fn try_lock(file: File) -> std::io::Result<Option<nix::fcntl::Flock<File>>> {
    use nix::errno::Errno;
    use nix::fcntl::{Flock, FlockArg};
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(Some(lock)),
        Err((_, Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, e)) => Err(e.into()),
    }
}

/// Without `flock`, runs of one spec are not serialised here; the append
/// still refuses an attempt that does not continue the series.
#[cfg(not(unix))]
fn try_lock(_file: File) -> std::io::Result<Option<()>> {
    Ok(Some(()))
}
