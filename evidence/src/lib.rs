//! Evidence: what the gate saw and decided, in a form anyone can check later.
//!
//! # Layout
//! - [`digest`]: the blake3 digest type and its hex form.
//! - [`snapshot`]: the workspace walk and a blake3 digest of every file;
//!   per-item input digests over it.
//!
//! Verifying evidence touches no network and no database.

pub mod digest;
pub mod snapshot;

pub use digest::Digest;
pub use snapshot::{Snapshot, SnapshotError, WalkOptions};
