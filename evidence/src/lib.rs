//! Evidence: what the gate saw and decided, in a form anyone can check later.
//!
//! # Layout
//! - [`digest`]: the blake3 digest type and its hex form.
//! - [`snapshot`]: the workspace walk and a blake3 digest of every file;
//!   per-item input digests over it.
//! - [`keys`]: ed25519 signing keys, their PEM files and securesystemslib key ids.
//! - [`dsse`]: DSSE v1 envelopes: PAE, signing, strict verification.
//! - [`statement`]: in-toto Statement v1, subjects with sha256 and blake3,
//!   the subject check against a workspace.
//! - [`bundle`]: one envelope per run on disk, written atomically; its digest.
//! - [`place`]: every file written atomically, following no symbolic link
//!   below the folder it is anchored at.
//! - [`store`]: where bundles live — a local directory or S3-compatible
//!   object storage — and how a ledger row's bundle is read back.
//! - [`merkle`]: RFC 6962 tree hashes, inclusion and consistency proofs.
//! - [`checkpoint`]: C2SP signed-note checkpoints of the ledger's tree.
//! - [`ledger`]: the SQLite ledger of runs (hash chain + Merkle leaves) and
//!   its verification.
//!
//! Verifying evidence touches no network and no database: [`store`] fetches
//! the bytes, and verification needs nothing but them and a key. Built
//! without its default `stores` feature the crate is that verifier alone —
//! digests, keys, DSSE, the statement, Merkle proofs, checkpoints, bundle
//! and ledger-row checks — with no database, object-store or HTTP client in
//! its dependency tree.

pub mod bundle;
pub mod checkpoint;
pub mod digest;
pub mod dsse;
pub mod keys;
pub mod ledger;
pub mod merkle;
pub mod place;
pub mod snapshot;
pub mod statement;
#[cfg(feature = "stores")]
pub mod store;

pub use digest::Digest;
pub use place::replace_file;
pub use snapshot::{Snapshot, SnapshotError, WalkOptions};

pub use keys::{KeyId, PublicKey, SigningKey};
#[cfg(feature = "stores")]
pub use ledger::Ledger;
pub use ledger::{LedgerRow, RunEntry};
pub use statement::{Statement, Subject};
