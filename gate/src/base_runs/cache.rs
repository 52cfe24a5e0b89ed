//! The base runs' build cache: a base checkout as the base's own checks
//! left it, kept outside the workspace (`base-cache/` in the state
//! directory, or in the user's cache folder when the state directory is in
//! the workspace), so the next base run on that base starts warm instead of
//! from a cold build.
//!
//! An entry is taken after the checks a base run needs (run on the base's
//! code and the change's dependency manifests) and before anything of the
//! change's exam is copied in, and is keyed on everything that went into
//! it: the base commit, the checks' definitions and the manifests' content.
//! A run starts from a copy of it (the file system shares the blocks where
//! it can), so code the change wrote, which runs in that copy, can never
//! change what a later base run starts from. Files are copied with their
//! times, so a build tool that judges freshness by them finds its output
//! fresh; the tracked files are checked against the commit after a copy.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::folder::remove;

/// How many entries are kept; the one used longest ago goes first.
pub(crate) const KEEP: usize = 3;

/// How old a half-made copy is before it counts as left by a killed run.
const STALE: std::time::Duration = std::time::Duration::from_secs(3600);

/// The file in an entry whose time says when it was last used.
const USED: &str = "used";

/// The cache in one folder.
pub(super) struct Cache {
    dir: PathBuf,
}

/// What an entry is keyed on.
pub(super) struct Key<'a> {
    /// The base commit.
    pub commit: &'a str,
    /// Where the base's checkout is shown to what runs there.
    pub shown_at: &'a Path,
    /// The checks run before the entry is taken: id and definition.
    pub checks: Vec<(&'a str, Vec<u8>)>,
    /// The change's files copied in before them: path and content digest.
    pub manifests: Vec<(&'a str, String)>,
}

impl Key<'_> {
    /// The entry's name: a digest of everything it is keyed on.
    fn name(&self) -> String {
        let mut h = blake3::Hasher::new();
        h.update(b"gate base cache 1\0");
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        h.update(b"\0");
        h.update(self.commit.as_bytes());
        h.update(b"\0");
        h.update(self.shown_at.as_os_str().as_encoded_bytes());
        let mut checks = self.checks.clone();
        checks.sort();
        for (id, definition) in &checks {
            h.update(b"\0check\0");
            h.update(id.as_bytes());
            h.update(b"\0");
            h.update(definition);
        }
        let mut manifests = self.manifests.clone();
        manifests.sort();
        for (path, digest) in &manifests {
            h.update(format!("\0file\0{path}\0{digest}").as_bytes());
        }
        h.finalize().to_hex()[..32].to_owned()
    }
}

impl Cache {
    /// The cache in `dir`.
    pub(super) fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
        }
    }

    /// Copies the entry for `key` into `tree` (an empty folder). False when
    /// there is none or it could not be copied whole; `tree` is then
    /// emptied again, for a cold checkout.
    pub(super) fn restore(&self, key: &Key<'_>, tree: &Path) -> bool {
        let entry = self.dir.join(key.name());
        let from = entry.join("tree");
        if !from.is_dir() {
            return false;
        }
        match copy_tree(&from, tree) {
            Ok(()) => {
                // Marks it used, for eviction.
                let _ = std::fs::write(entry.join(USED), b"");
                true
            }
            Err(e) => {
                tracing::warn!(entry = %entry.display(), error = %e, "cannot copy a base cache entry");
                empty(tree);
                false
            }
        }
    }

    /// Keeps a copy of `tree` as the entry for `key`, unless one is there,
    /// and removes the entries used longest ago beyond [`KEEP`].
    pub(super) fn keep(&self, key: &Key<'_>, tree: &Path) {
        let entry = self.dir.join(key.name());
        if entry.exists() {
            return;
        }
        if let Err(e) = std::fs::create_dir_all(&self.dir) {
            tracing::warn!(error = %e, "cannot create the base cache");
            return;
        }
        // Copied aside and renamed into place: a reader never sees half.
        let incoming = match tempfile::Builder::new()
            .prefix(".incoming-")
            .tempdir_in(&self.dir)
        {
            Ok(dir) => dir,
            Err(e) => {
                tracing::warn!(error = %e, "cannot keep a base cache entry");
                return;
            }
        };
        let copied = copy_tree(tree, &incoming.path().join("tree"))
            .and_then(|()| std::fs::write(incoming.path().join(USED), b""));
        match copied {
            Ok(()) => {
                let path = incoming.keep();
                if std::fs::rename(&path, &entry).is_err() {
                    // Another run kept the same entry meanwhile.
                    remove(&path);
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot keep a base cache entry"),
        }
        self.evict();
    }

    /// Removes entries beyond the [`KEEP`] used most recently.
    fn evict(&self) {
        let Ok(listing) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let mut entries: Vec<(SystemTime, PathBuf)> = listing
            .flatten()
            .filter(|e| {
                if !e.file_name().to_string_lossy().starts_with('.') {
                    return true;
                }
                // A copy a killed run left half made.
                let stale = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| now.duration_since(t).unwrap_or_default() > STALE);
                if stale {
                    remove(&e.path());
                }
                false
            })
            .map(|e| {
                let used = std::fs::metadata(e.path().join(USED))
                    .and_then(|m| m.modified())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                (used, e.path())
            })
            .collect();
        entries.sort_by_key(|e| std::cmp::Reverse(e.0));
        for (_, path) in entries.into_iter().skip(KEEP) {
            remove(&path);
        }
    }
}

/// Copies the folder `from` to `to` (created if missing): files with their
/// mode and times, links as links (never followed), folders with their
/// mode and times once filled. Anything else (a socket, a pipe) is left out.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(from)?;
    if !to.exists() {
        std::fs::create_dir(to)?;
    }
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&source, &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source)?, &target)?;
        } else if kind.is_file() {
            let meta = entry.metadata()?;
            // `copy` shares the blocks where the file system can.
            std::fs::copy(&source, &target)?;
            set_times(&target, &meta)?;
        }
    }
    std::fs::set_permissions(
        to,
        std::fs::Permissions::from_mode(meta.permissions().mode()),
    )?;
    set_times(to, &meta)
}

/// Gives `path` the access and modification times in `meta`.
fn set_times(path: &Path, meta: &std::fs::Metadata) -> std::io::Result<()> {
    let times = std::fs::FileTimes::new()
        .set_accessed(meta.accessed()?)
        .set_modified(meta.modified()?);
    // `futimens` asks ownership, not write access: opened to read.
    match std::fs::File::open(path) {
        Ok(file) => file.set_times(times),
        // A file its owner may not read: times are kept where they can be.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Ok(()),
        Err(e) => Err(e),
    }
}

/// Empties a folder.
pub(super) fn empty(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                remove(&path);
            } else {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key<'a>(commit: &'a str, manifest: &'a str) -> Key<'a> {
        Key {
            commit,
            shown_at: Path::new("/w"),
            checks: vec![("build", b"make".to_vec())],
            manifests: vec![("Cargo.toml", manifest.to_owned())],
        }
    }

    /// What an entry is keyed on: each part changes the name.
    #[test]
    fn every_input_changes_the_key() {
        let base = key("c1", "m1").name();
        assert_eq!(base, key("c1", "m1").name());
        assert_ne!(base, key("c2", "m1").name());
        assert_ne!(base, key("c1", "m2").name());
        let mut other = key("c1", "m1");
        other.checks[0].1 = b"make all".to_vec();
        assert_ne!(base, other.name());
        let mut other = key("c1", "m1");
        other.shown_at = Path::new("/v");
        assert_ne!(base, other.name());
    }

    /// A kept tree comes back with its files, links, modes and times; what
    /// is done to the copy does not reach the entry.
    #[test]
    fn a_restored_tree_is_a_copy_with_its_times() {
        let state = tempfile::tempdir().unwrap();
        let tree = tempfile::tempdir().unwrap();
        let t = tree.path();
        std::fs::create_dir_all(t.join("target/debug")).unwrap();
        std::fs::write(t.join("target/debug/app"), b"binary").unwrap();
        std::fs::set_permissions(
            t.join("target/debug/app"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        std::os::unix::fs::symlink("debug/app", t.join("target/app")).unwrap();
        let old = SystemTime::UNIX_EPOCH + std::time::Duration::new(1_000_000_000, 123_456_789);
        std::fs::File::options()
            .write(true)
            .open(t.join("target/debug/app"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let cache = Cache::new(state.path());
        let k = key("c1", "m1");
        cache.keep(&k, t);

        let into = tempfile::tempdir().unwrap();
        assert!(cache.restore(&k, into.path()));
        let app = into.path().join("target/debug/app");
        assert_eq!(std::fs::read(&app).unwrap(), b"binary");
        let meta = std::fs::metadata(&app).unwrap();
        assert_eq!(meta.modified().unwrap(), old);
        assert_eq!(meta.permissions().mode() & 0o777, 0o755);
        assert_eq!(
            std::fs::read_link(into.path().join("target/app")).unwrap(),
            Path::new("debug/app")
        );
        // The copy is written over; the next restore is as kept.
        std::fs::write(&app, b"planted").unwrap();
        let again = tempfile::tempdir().unwrap();
        assert!(cache.restore(&k, again.path()));
        assert_eq!(
            std::fs::read(again.path().join("target/debug/app")).unwrap(),
            b"binary"
        );
        assert!(!cache.restore(&key("c2", "m1"), again.path()));
    }

    /// Only the entries used most recently are kept, and a half-made copy
    /// only while it may still be being made.
    #[test]
    fn the_least_recently_used_entries_go() {
        let state = tempfile::tempdir().unwrap();
        let tree = tempfile::tempdir().unwrap();
        std::fs::write(tree.path().join("f"), b"x").unwrap();
        let cache = Cache::new(state.path());
        let commits: Vec<String> = (0..=KEEP).map(|i| format!("c{i}")).collect();
        for (i, commit) in commits.iter().enumerate() {
            let k = key(commit, "m");
            cache.keep(&k, tree.path());
            // Distinct use times, oldest first.
            let used = cache.dir.join(k.name()).join(USED);
            std::fs::File::options()
                .write(true)
                .open(&used)
                .unwrap()
                .set_modified(
                    SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000 + i as u64),
                )
                .unwrap();
        }
        // Half-made copies: one a killed run left long ago, one being made.
        for name in [".incoming-old", ".incoming-new"] {
            std::fs::create_dir(cache.dir.join(name)).unwrap();
        }
        std::fs::File::open(cache.dir.join(".incoming-old"))
            .unwrap()
            .set_modified(SystemTime::now() - 2 * STALE)
            .unwrap();
        cache.evict();
        let into = tempfile::tempdir().unwrap();
        assert!(!cache.restore(&key(&commits[0], "m"), into.path()));
        assert!(cache.restore(&key(&commits[KEEP], "m"), into.path()));
        assert!(!cache.dir.join(".incoming-old").exists());
        assert!(cache.dir.join(".incoming-new").exists());
    }
}
