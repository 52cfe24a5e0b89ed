//! A uid of the run's own, for the gate run as root: what runs for the
//! workspace never runs as host uid 0.
//!
//! Uid 0 keeps what capabilities do not guard (many kernel tunables check
//! mode bits alone), so when the gate runs as root each run leases a uid
//! no other run on the machine holds, the items drop to it, and the
//! folders they must write (the workspace, `writable` paths, the run's
//! private `/tmp` and home, a base's checkout) are handed to it for the
//! run. Ownership is given back when the run ends; a journal written
//! before anything is handed over lets the next run on the machine give
//! it back after a run that was killed.
//!
//! Leases live in [`LEASE_DIR`], one file per uid, held with an exclusive
//! `flock` for the run: a file whose lock can be taken belongs to no live
//! run, and its journal (if any) is restored by the next run that starts,
//! whichever uid it takes.
//!
//! Two runs never hold the same folder (or one inside the other) at once:
//! the second would take the first's files away mid-run, and give them
//! back to the first's uid. Journals are written under one lock of the
//! folder ([`REGISTRY`]), so a run reads every live journal whole, and
//! waits while another live run holds a folder it needs.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, lchown};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

/// Where the leases are: root's alone.
pub(crate) const LEASE_DIR: &str = "/run/gate/uids";

/// The first uid leased: above the ranges systemd gives to users, dynamic
/// users and containers, so no account of the machine has it.
pub(crate) const FIRST_UID: u32 = 0x7000_0000;

/// How many uids there are to lease.
const COUNT: u32 = 0x1_0000;

/// The lock file in the lease folder that journals are written under.
const REGISTRY: &str = ".journals.lock";

/// How long a run waits between looks at a folder another run holds.
const RETRY: std::time::Duration = std::time::Duration::from_millis(200);

/// What was handed over under one folder, and to whom it goes back.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct Given {
    /// The folder.
    root: PathBuf,
    /// Its owner before: everything found owned by the lease afterwards
    /// goes back to it, unless `others` names it.
    uid: u32,
    gid: u32,
    /// Paths that had another owner, with it.
    others: Vec<(PathBuf, u32, u32)>,
    /// Folders under `root` left as they were (read-only or hidden in the
    /// sandbox).
    skip: Vec<PathBuf>,
}

/// The journal of a lease: what to give back.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Journal {
    uid: u32,
    given: Vec<Given>,
}

/// A uid of the run's own, held until dropped, when everything handed
/// over goes back.
#[derive(Debug)]
pub(crate) struct Lease {
    uid: u32,
    file: Flock<File>,
    journal: Journal,
    /// The lease folder.
    dir: PathBuf,
}

/// The lease folder's journal lock, held.
struct Registry(#[allow(dead_code, reason = "held for its lock")] Flock<File>);

impl Registry {
    /// Waits for the lock of the lease folder `dir`.
    fn lock(dir: &Path) -> std::io::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(dir.join(REGISTRY))?;
        Flock::lock(file, FlockArg::LockExclusive)
            .map(Self)
            .map_err(|(_, e)| std::io::Error::from(e))
    }
}

impl Lease {
    /// Takes a uid no other run holds, giving back first what a killed run
    /// left with it.
    pub(crate) fn take() -> std::io::Result<Self> {
        Self::take_in(Path::new(LEASE_DIR), std::process::id())
    }

    fn take_in(dir: &Path, seed: u32) -> std::io::Result<Self> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        let registry = Registry::lock(dir)?;
        for_each_lease(dir, None, &mut |_, _| {})?;
        drop(registry);
        for i in 0..COUNT {
            let uid = FIRST_UID + (seed.wrapping_add(i) % COUNT);
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(dir.join(uid.to_string()))?;
            let Ok(mut file) = Flock::lock(file, FlockArg::LockExclusiveNonblock) else {
                continue;
            };
            give_back_journal(&mut file)?;
            return Ok(Self {
                uid,
                file,
                journal: Journal {
                    uid,
                    given: Vec::new(),
                },
                dir: dir.to_path_buf(),
            });
        }
        Err(std::io::Error::other(format!(
            "every uid from {FIRST_UID} on is held by another run"
        )))
    }

    /// The uid (its gid is the same number).
    pub(crate) fn uid(&self) -> u32 {
        self.uid
    }

    /// Hands `root` and everything under it, but `skip`, to the lease; the
    /// journal says how to give it back before anything changes.
    /// Waits first while another live run holds `root`, a folder inside it
    /// or one it is inside.
    pub(crate) fn give(&mut self, root: &Path, skip: &[PathBuf]) -> std::io::Result<()> {
        let root = std::fs::canonicalize(root)?;
        let root = root.as_path();
        let mut waited = false;
        let registry = loop {
            let registry = Registry::lock(&self.dir)?;
            let mut holder = None;
            for_each_lease(&self.dir, Some(self.uid), &mut |uid, journal| {
                if let Some(given) = journal
                    .given
                    .iter()
                    .find(|g| g.root.starts_with(root) || root.starts_with(&g.root))
                {
                    holder.get_or_insert((uid, given.root.clone()));
                }
            })?;
            let Some((uid, held)) = holder else {
                break registry;
            };
            drop(registry);
            if !waited {
                waited = true;
                tracing::warn!(
                    folder = %held.display(),
                    uid,
                    "waiting for another run on this machine, which has this folder handed to its uid"
                );
            }
            std::thread::sleep(RETRY);
        };
        let meta = std::fs::symlink_metadata(root)?;
        let mut given = Given {
            root: root.to_path_buf(),
            uid: meta.uid(),
            gid: meta.gid(),
            others: Vec::new(),
            skip: skip
                .iter()
                .filter(|s| s.starts_with(root))
                .cloned()
                .collect(),
        };
        // Claimed before anything is read or changed: a run that starts
        // now waits, and a kill leaves a journal that restores nothing yet.
        self.journal.given.push(given.clone());
        self.write_journal(&registry)?;
        drop(registry);
        let mut entries = Vec::new();
        walk(root, &given.skip, &mut |path, meta| {
            if (meta.uid(), meta.gid()) != (given.uid, given.gid) {
                given
                    .others
                    .push((path.to_path_buf(), meta.uid(), meta.gid()));
            }
            entries.push(path.to_path_buf());
        })?;
        if let Some(last) = self.journal.given.last_mut() {
            *last = given;
        }
        let registry = Registry::lock(&self.dir)?;
        self.write_journal(&registry)?;
        drop(registry);
        for path in entries {
            lchown(&path, Some(self.uid), Some(self.uid))?;
        }
        Ok(())
    }

    /// Writes the journal; only under the folder's lock, so every reader
    /// sees it whole.
    fn write_journal(&mut self, _held: &Registry) -> std::io::Result<()> {
        let text = serde_json::to_vec(&self.journal).map_err(std::io::Error::other)?;
        self.file.set_len(0)?;
        self.file.rewind()?;
        self.file.write_all(&text)?;
        self.file.sync_all()
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        for given in &self.journal.given {
            if let Err(e) = give_back(given, self.uid) {
                tracing::warn!(folder = %given.root.display(), error = %e, "cannot give the run's files back");
            }
        }
        self.journal.given.clear();
        if let Ok(registry) = Registry::lock(&self.dir) {
            let _ = self.write_journal(&registry);
        }
    }
}

/// Calls `each` with the journal of every live lease in `dir` but `own`'s;
/// gives back what a lease no live run holds names. Only with the folder's
/// lock held.
fn for_each_lease(
    dir: &Path,
    own: Option<u32>,
    each: &mut dyn FnMut(u32, &Journal),
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let Some(uid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if Some(uid) == own {
            continue;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(entry.path())?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(mut dead) => give_back_journal(&mut dead)?,
            Err((mut live, _)) => {
                let mut text = Vec::new();
                live.read_to_end(&mut text)?;
                if let Ok(journal) = serde_json::from_slice::<Journal>(&text) {
                    each(uid, &journal);
                }
            }
        }
    }
    Ok(())
}

/// Gives back what the journal in `file` (a lease that no live run holds)
/// names, and empties it.
fn give_back_journal(file: &mut File) -> std::io::Result<()> {
    let mut text = Vec::new();
    file.rewind()?;
    file.read_to_end(&mut text)?;
    if text.is_empty() {
        return Ok(());
    }
    if let Ok(journal) = serde_json::from_slice::<Journal>(&text) {
        for given in &journal.given {
            if let Err(e) = give_back(given, journal.uid) {
                tracing::warn!(folder = %given.root.display(), error = %e, "cannot give a killed run's files back");
            }
        }
    }
    file.set_len(0)?;
    file.sync_all()
}

/// Everything under `given.root` the lease's `uid` owns goes back to its
/// owner before the run.
fn give_back(given: &Given, uid: u32) -> std::io::Result<()> {
    if std::fs::symlink_metadata(&given.root).is_err() {
        return Ok(());
    }
    let others: std::collections::HashMap<&Path, (u32, u32)> = given
        .others
        .iter()
        .map(|(p, u, g)| (p.as_path(), (*u, *g)))
        .collect();
    let mut owned = Vec::new();
    walk(&given.root, &given.skip, &mut |path, meta| {
        if meta.uid() == uid || meta.gid() == uid {
            owned.push(path.to_path_buf());
        }
    })?;
    for path in owned {
        let (u, g) = others
            .get(path.as_path())
            .copied()
            .unwrap_or((given.uid, given.gid));
        lchown(&path, Some(u), Some(g))?;
    }
    Ok(())
}

/// Hands `root` and everything under it to `uid` for good: a folder the
/// run made and removes (a base's checkout), nothing to give back.
pub(crate) fn hand(root: &Path, uid: u32) -> std::io::Result<()> {
    let mut entries = Vec::new();
    walk(root, &[], &mut |path, _| entries.push(path.to_path_buf()))?;
    for path in entries {
        lchown(&path, Some(uid), Some(uid))?;
    }
    Ok(())
}

/// Calls `each` for `root` and every path under it, links not followed,
/// folders in `skip` left out with all they hold.
fn walk(
    root: &Path,
    skip: &[PathBuf],
    each: &mut dyn FnMut(&Path, &std::fs::Metadata),
) -> std::io::Result<()> {
    let mut todo = vec![root.to_path_buf()];
    while let Some(path) = todo.pop() {
        if skip.iter().any(|s| s == &path) {
            continue;
        }
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            // Gone since it was listed (a build removing its output).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        each(&path, &meta);
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                todo.push(entry?.path());
            }
        }
    }
    Ok(())
}

/// Writes the `/etc/passwd` and `/etc/group` shown to the items (where
/// `contents::account_files` says): the host's, and a line for the run's
/// uid, so tools that look their user up find one.
pub(crate) fn accounts(scratch: &Path, uid: u32, home: &Path) -> std::io::Result<()> {
    let (passwd, group) = super::contents::account_files(scratch);
    let mut p = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let mut g = std::fs::read_to_string("/etc/group").unwrap_or_default();
    for text in [&mut p, &mut g] {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
    }
    p += &[
        "gate-run:x:",
        &uid.to_string(),
        ":",
        &uid.to_string(),
        ":gate run:",
        &home.display().to_string(),
        ":/bin/sh\n",
    ]
    .concat();
    g += &["gate-run:x:", &uid.to_string(), ":\n"].concat();
    std::fs::write(&passwd, p)?;
    std::fs::write(&group, g)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(path: &Path) -> (u32, u32) {
        let m = std::fs::symlink_metadata(path).unwrap();
        (m.uid(), m.gid())
    }

    /// As root only: handing files over needs `chown`.
    #[test]
    fn files_handed_to_the_run_go_back_after_it_and_after_a_killed_one() {
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let leases = dir.path().join("leases");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/a.rs"), "a").unwrap();
        std::fs::write(ws.join("theirs"), "b").unwrap();
        lchown(ws.join("theirs"), Some(1234), Some(4321)).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", ws.join("link")).unwrap();

        let mut lease = Lease::take_in(&leases, 7).unwrap();
        let uid = lease.uid();
        assert_eq!(uid, FIRST_UID + 7);
        // A second run on the machine gets another uid.
        let other = Lease::take_in(&leases, 7).unwrap();
        assert_ne!(other.uid(), uid);
        drop(other);
        lease.give(&ws, &[ws.join(".git")]).unwrap();
        // (path, owner during the run)
        let during = [
            (ws.clone(), (uid, uid)),
            (ws.join("src/a.rs"), (uid, uid)),
            (ws.join("theirs"), (uid, uid)),
            (ws.join("link"), (uid, uid)),
            (ws.join(".git"), (0, 0)),
        ];
        for (path, want) in &during {
            assert_eq!(owner(path), *want, "{}", path.display());
        }
        // What the run makes goes to the folder's owner.
        std::fs::write(ws.join("made"), "c").unwrap();
        lchown(ws.join("made"), Some(uid), Some(uid)).unwrap();
        // Killed: the lease's file keeps the journal, and the next run
        // that takes the uid gives everything back first.
        std::mem::forget(lease);
        // The forgotten lock lasts until this process exits, so the
        // journal is given back here as the next run would.
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(leases.join(uid.to_string()))
            .unwrap();
        give_back_journal(&mut file).unwrap();
        // (path, owner after)
        let after = [
            (ws.clone(), (0, 0)),
            (ws.join("src/a.rs"), (0, 0)),
            (ws.join("theirs"), (1234, 4321)),
            (ws.join("made"), (0, 0)),
            (ws.join("link"), (0, 0)),
        ];
        for (path, want) in &after {
            assert_eq!(owner(path), *want, "{}", path.display());
        }
        assert_eq!(
            std::fs::metadata(leases.join(uid.to_string()))
                .unwrap()
                .len(),
            0
        );

        // A run that ends gives back by itself.
        let mut lease = Lease::take_in(&leases, 9).unwrap();
        lease.give(&ws, &[]).unwrap();
        assert_eq!(owner(&ws.join("src/a.rs")), (lease.uid(), lease.uid()));
        drop(lease);
        assert_eq!(owner(&ws.join("src/a.rs")), (0, 0));
        assert_eq!(owner(&ws.join("theirs")), (1234, 4321));
    }

    /// As root only: two runs that need the same folder (or one inside the
    /// other) take turns, and each gives back to the folder's owner.
    #[test]
    fn a_folder_another_run_holds_is_waited_for() {
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let leases = dir.path().join("leases");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("cache")).unwrap();
        std::fs::write(ws.join("cache/a"), "a").unwrap();
        let mut first = Lease::take_in(&leases, 1).unwrap();
        first.give(&ws, &[]).unwrap();
        for folder in [ws.clone(), ws.join("cache")] {
            let (tx, rx) = std::sync::mpsc::channel();
            let dir = leases.clone();
            let waiter = std::thread::spawn(move || {
                let mut second = Lease::take_in(&dir, 2).unwrap();
                second.give(&folder, &[]).unwrap();
                tx.send(owner(&folder).0).unwrap();
                drop(second);
            });
            assert!(
                rx.recv_timeout(std::time::Duration::from_millis(600))
                    .is_err(),
                "the second run took a folder the first holds"
            );
            // The first run ends: its files go back, then the second
            // takes them.
            drop(first);
            let second_uid = rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
            assert_eq!(second_uid, FIRST_UID + 2);
            waiter.join().unwrap();
            assert_eq!(owner(&ws.join("cache/a")), (0, 0));
            first = Lease::take_in(&leases, 1).unwrap();
            first.give(&ws, &[]).unwrap();
        }
        // A folder beside it is not waited for.
        let other = dir.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        let mut second = Lease::take_in(&leases, 2).unwrap();
        second.give(&other, &[]).unwrap();
        assert_eq!(owner(&other).0, second.uid());
    }

    /// As root only: a killed run's files go back when the next run
    /// starts, whichever uid that run takes.
    #[test]
    fn the_next_run_gives_back_what_any_killed_run_held() {
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let leases = dir.path().join("leases");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("a"), "a").unwrap();
        let mut killed = Lease::take_in(&leases, 3).unwrap();
        killed.give(&ws, &[]).unwrap();
        let uid = killed.uid();
        // What a kill leaves: the journal, and a lock no process holds.
        let journal = std::fs::read(leases.join(uid.to_string())).unwrap();
        std::mem::forget(killed);
        std::fs::remove_file(leases.join(uid.to_string())).unwrap();
        std::fs::write(leases.join(uid.to_string()), journal).unwrap();
        assert_eq!(owner(&ws.join("a")), (uid, uid));
        let next = Lease::take_in(&leases, 40).unwrap();
        assert_ne!(next.uid(), uid);
        assert_eq!(owner(&ws.join("a")), (0, 0));
    }
}
