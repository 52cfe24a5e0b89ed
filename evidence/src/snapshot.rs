//! The workspace walk: a blake3 digest of every file the gate may look at.
//!
//! The walk includes hidden files, skips `.git/` and the state directory,
//! honours `.gitignore`, and never follows a symlink (a link is recorded by
//! the digest of its target's path, and what it points at is never read). A
//! file matched by a forced-include glob (an item's `inputs`) is hashed even
//! when ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gate_specs::InputGlobs;
use serde::{Deserialize, Serialize};

use crate::Digest;

/// What to walk and what to leave out.
#[derive(Debug, Clone, Default)]
pub struct WalkOptions {
    /// The state directory, when it lies inside the workspace: skipped.
    pub state_dir: Option<PathBuf>,
    /// Globs whose files are hashed even when `.gitignore` ignores them.
    pub force_include: Option<InputGlobs>,
}

/// What kind of entry a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A regular file; the digest is over its bytes.
    File,
    /// A symbolic link; the digest is over the link's target path, never its content.
    Symlink,
}

/// One file of the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// blake3 of the contents (of the target path for a symlink).
    pub digest: Digest,
    /// Bytes.
    pub size: u64,
    /// File or symlink.
    pub kind: EntryKind,
}

/// Every file of the workspace with its digest, keyed by workspace-relative
/// `/`-separated path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    files: BTreeMap<String, FileEntry>,
}

/// The walk failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The workspace itself cannot be read.
    #[error("cannot read workspace {}: {source}", path.display())]
    Root {
        /// The workspace.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl Snapshot {
    /// Walks `root` and hashes every file, in parallel.
    pub fn take(root: &Path, opts: &WalkOptions) -> Result<Self, SnapshotError> {
        let _ = (root, opts);
        todo!("snapshot walk")
    }

    /// Builds a snapshot from entries (tests and re-loading).
    pub fn from_entries(files: BTreeMap<String, FileEntry>) -> Self {
        Self { files }
    }

    /// Every entry in path order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &FileEntry)> {
        self.files.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Regular files only (what checks may read), in path order.
    pub fn regular_files(&self) -> impl Iterator<Item = &str> {
        self.files
            .iter()
            .filter(|(_, e)| e.kind == EntryKind::File)
            .map(|(k, _)| k.as_str())
    }

    /// One entry.
    pub fn get(&self, rel_path: &str) -> Option<&FileEntry> {
        self.files.get(rel_path)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether the snapshot is empty.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Entries whose path matches `globs`, in path order.
    pub fn matching<'a>(
        &'a self,
        globs: &'a InputGlobs,
    ) -> impl Iterator<Item = (&'a str, &'a FileEntry)> + 'a {
        self.entries().filter(move |(p, _)| globs.is_match(p))
    }

    /// Digest over the (path, digest) pairs matching `globs`, or over every
    /// entry when `globs` is `None` (the whole workspace).
    pub fn digest_of(&self, globs: Option<&InputGlobs>) -> Digest {
        let mut h = blake3::Hasher::new();
        for (path, entry) in self.entries() {
            if globs.is_none_or(|g| g.is_match(path)) {
                h.update(path.as_bytes());
                h.update(&[0]);
                h.update(&entry.digest.0);
            }
        }
        h.finalize().into()
    }
}

/// The input fingerprint of one check or criterion: blake3 over its canonical
/// definition and the digests of the files its inputs match (the whole
/// workspace when it has none).
pub fn item_digest(definition: &[u8], inputs: Option<&InputGlobs>, snapshot: &Snapshot) -> Digest {
    let mut h = blake3::Hasher::new();
    h.update(b"gate.item.v1\0");
    h.update(&(definition.len() as u64).to_le_bytes());
    h.update(definition);
    h.update(&snapshot.digest_of(inputs).0);
    h.finalize().into()
}
