//! The commands other than `verify`, one module each.

pub mod routing;
