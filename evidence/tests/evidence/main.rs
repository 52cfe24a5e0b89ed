//! Evidence end to end: independent tools verify what we sign, every
//! tampering is rejected, and the ledger holds up on a real SQLite file.

#![allow(clippy::unwrap_used, reason = "test fixtures panic on a failed setup")]

mod common;
mod ledger;
mod openssl;
mod peer;
mod tamper;
