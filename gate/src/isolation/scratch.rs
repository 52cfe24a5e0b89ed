//! The run's scratch folder: the private `/tmp`, `/var/tmp` and `HOME` of
//! each group of its items (under `groups/`, made before they run) and
//! those the sandbox's probe runs with, and a base's checkout. Removed when
//! the run ends; a run that was
//! killed cannot remove it, so every run first removes the scratch folders
//! of runs that are no longer alive.
//!
//! Each folder holds a lock file the run keeps locked (`flock`) for as long
//! as it lives: the kernel lets go of it however the run ends, so a lock
//! that can be taken marks a folder no live run uses.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

/// What the folders are named from.
const PREFIX: &str = "gate-run-";

/// The lock file in each.
const ALIVE: &str = ".alive";

/// The lock file's name until it is locked.
const MAKING: &str = ".making";

/// The subfolders made in each.
const PARTS: [&str; 4] = ["tmp", "var-tmp", "home", "base"];

/// A run's scratch folder, locked while it is held and removed when dropped.
#[derive(Debug)]
pub(crate) struct Scratch {
    // Removed before the lock is let go: a run that sweeps never sees it
    // unlocked and still there.
    dir: tempfile::TempDir,
    _alive: Flock<File>,
}

impl Scratch {
    /// Removes what killed runs left in the temporary folder, then makes
    /// this run's.
    pub(crate) fn make() -> std::io::Result<Self> {
        let parent = std::env::temp_dir();
        sweep(&parent);
        let dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .tempdir_in(&parent)?;
        // Locked before it takes its name: a run sweeping meanwhile would
        // otherwise find the lock file free and remove the folder.
        let making = dir.path().join(MAKING);
        let file = File::create(&making)?;
        let alive = Flock::lock(file, FlockArg::LockExclusiveNonblock)
            .map_err(|(_, e)| std::io::Error::from(e))?;
        std::fs::rename(&making, dir.path().join(ALIVE))?;
        for part in PARTS {
            std::fs::create_dir(dir.path().join(part))?;
        }
        Ok(Self { dir, _alive: alive })
    }

    /// The folder.
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Removes every scratch folder in `parent` that this user owns and no live
/// run holds. A folder without its lock file is left: it may be one being
/// made.
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let me = nix::unistd::geteuid().as_raw();
    for entry in entries.flatten() {
        let path = entry.path();
        if !entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(PREFIX))
        {
            continue;
        }
        if let Err(e) = remove_if_dead(&path, me) {
            tracing::debug!(folder = %path.display(), error = %e, "a scratch folder was left");
        }
    }
}

/// Removes `path` when it is a folder `uid` owns whose lock no run holds.
fn remove_if_dead(path: &Path, uid: u32) -> std::io::Result<()> {
    // Never through a link, and never another user's folder.
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.is_dir() || meta.uid() != uid {
        return Ok(());
    }
    let lock: PathBuf = path.join(ALIVE);
    let lock_meta = std::fs::symlink_metadata(&lock)?;
    if !lock_meta.is_file() || lock_meta.uid() != uid {
        return Ok(());
    }
    let file = File::open(&lock)?;
    let Ok(_held) = Flock::lock(file, FlockArg::LockExclusiveNonblock) else {
        return Ok(());
    };
    std::fs::remove_dir_all(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder whose run is gone is removed; one a run holds, one without
    /// its lock file (or with it still being made), and one of another
    /// name are left.
    #[test]
    fn only_the_folders_of_runs_no_longer_alive_are_swept() {
        let parent = tempfile::tempdir().unwrap();
        let made = |name: &str, lock: bool| {
            let dir = parent.path().join(name);
            std::fs::create_dir_all(dir.join("tmp")).unwrap();
            std::fs::write(dir.join("tmp/left.txt"), "x").unwrap();
            if lock {
                std::fs::write(dir.join(ALIVE), "").unwrap();
            }
            dir
        };
        let dead = made("gate-run-dead", true);
        let live = made("gate-run-live", true);
        let _held = Flock::lock(
            File::open(live.join(ALIVE)).unwrap(),
            FlockArg::LockExclusiveNonblock,
        )
        .unwrap();
        let new = made("gate-run-new", false);
        // One whose lock file is not locked yet: it keeps another name.
        let making = made("gate-run-making", false);
        std::fs::write(making.join(MAKING), "").unwrap();
        let other = made("other-dead", true);
        sweep(parent.path());
        assert!(!dead.exists());
        for kept in [live, new, making, other] {
            assert!(kept.join("tmp/left.txt").exists(), "{}", kept.display());
        }
    }
}
