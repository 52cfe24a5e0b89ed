//! One file of a snapshot: its digest, size and kind.

use serde::{Deserialize, Serialize};

use crate::Digest;

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
    /// Bytes hashed (the target path's length for a symlink).
    pub size: u64,
    /// File or symlink.
    pub kind: EntryKind,
}
