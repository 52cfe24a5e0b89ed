//! The PostgreSQL ledger's handle: its pool, client runtime and name.

use std::sync::{Arc, OnceLock};

use super::exec::Exec;

/// How a server makes an append's commit durable, found at the first append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Durability {
    /// Commit without waiting under the chain lock, then commit
    /// [`DURABLE`](super::DURABLE).
    Wait,
    /// Commit synchronously under the lock: this role may not run
    /// [`DURABLE`](super::DURABLE).
    Commit,
}

/// The PostgreSQL ledger at one URL.
#[derive(Debug)]
pub struct PgLedger {
    // Declared before `exec`: the pool's connections close before their runtime.
    pub(super) pool: deadpool_postgres::Pool,
    pub(super) exec: Arc<Exec>,
    pub(super) name: String,
    /// Set by the first append.
    pub(super) durability: OnceLock<Durability>,
}
