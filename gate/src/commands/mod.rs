//! The commands other than `verify`, one module each (and `verify
//! --print-config`, in [`config`]).

pub mod completions;
pub mod config;
pub mod doctor;
pub mod evidence;
pub mod keys;
pub mod ledger;
pub mod man;
pub mod metrics;
pub mod outcome;
pub mod report;
pub mod review_memory;
pub mod routing;
pub mod rules;
pub mod runs;
