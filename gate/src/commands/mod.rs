//! The commands other than `verify`, one module each.

pub mod evidence;
pub mod keys;
pub mod ledger;
pub mod metrics;
pub mod outcome;
pub mod report;
pub mod routing;
pub mod runs;
