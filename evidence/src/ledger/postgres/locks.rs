//! The PostgreSQL store's advisory lock keys.

/// Advisory lock keys: (`LOCK_CLASS`, object) pairs, so they cannot meet a
/// single-key advisory lock another application takes in the same database.
pub(super) const LOCK_CLASS: i32 = 0x6761_7465; // "gate"
pub(super) const CHAIN_LOCK: i32 = 1;
pub(super) const MIGRATION_LOCK: i32 = 2;
/// Breakers and series lock on (class + 1 | + 2, a hash of the name).
pub(super) const BREAKER_CLASS: i32 = LOCK_CLASS + 1;
pub(super) const SERIES_CLASS: i32 = LOCK_CLASS + 2;

/// A 32-bit lock key for a name.
pub(super) fn lock_key(name: &str) -> i32 {
    let h = blake3::hash(name.as_bytes());
    let b = h.as_bytes();
    i32::from_le_bytes([b[0], b[1], b[2], b[3]])
}
