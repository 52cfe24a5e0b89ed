//! The false-pass eval: how often the gate approved something that later
//! broke, what it cost, and where — from the ledger alone.
//!
//! [`scorecard`] builds every figure from the ledger ([`stats`] holds the
//! arithmetic); [`json`], [`text`], [`html`] and [`prometheus`] are views of
//! one [`Scorecard`] and compute nothing of their own.

pub(crate) mod html;
pub(crate) mod json;
pub(crate) mod prometheus;
pub(crate) mod scorecard;
pub(crate) mod stats;
mod svg;
pub(crate) mod text;

pub(crate) use scorecard::Scorecard;
