//! The false-pass scorecard: how often the gate approved something that
//! later broke, what it cost, and where — from the ledger alone.
//!
//! [`scorecard`] builds every figure from the ledger ([`stats`] holds the
//! arithmetic); [`json`], [`text`], [`html`] and [`prometheus`] are views of
//! one [`scorecard::Scorecard`] and compute nothing of their own.
//!
//! It reads a `gate_evidence::Ledger` and knows nothing of the gate that
//! writes it: which rows the gate's bundles vouch for is decided by the
//! caller and passed in ([`scorecard::Vouched`]).

// Test code may run long: a scenario reads best whole.
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod html;
pub mod json;
pub mod prometheus;
pub mod replays;
pub mod scorecard;
pub mod stats;
mod svg;
pub mod text;
