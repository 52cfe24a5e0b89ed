//! The false-pass eval: how often the gate approved something that later
//! broke, what it cost, and where — from the ledger alone.
//!
//! [`scorecard`] builds every figure from the ledger ([`stats`] holds the
//! arithmetic); [`json`], [`text`], [`html`] and [`prometheus`] are views of
//! one [`Scorecard`] and compute nothing of their own.

pub mod html;
pub mod json;
pub mod prometheus;
pub mod scorecard;
pub mod stats;
mod svg;
pub mod text;

pub use scorecard::Scorecard;
