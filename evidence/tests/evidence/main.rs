//! Evidence end to end: independent tools verify what we sign, every
//! tampering is rejected, the ledger holds up on a real SQLite file, and a
//! PostgreSQL append that returned survives the server crashing.

#![allow(clippy::unwrap_used, reason = "test fixtures panic on a failed setup")]
#![allow(clippy::too_many_lines, reason = "a scenario reads best whole")]

mod common;
mod durability;
mod ledger;
mod openssl;
mod peer;
mod tamper;
mod tls;
