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

use std::path::Path;

use crate::cli::RoutingArgs;
use crate::config::{Context, from_cwd};
use crate::errors::GateError;
use crate::routing::Routing;

/// Loads the table the way `gate verify` would.
pub fn routing_table(ctx: &Context, args: &RoutingArgs) -> Result<Routing, GateError> {
    let spec_dir = match &args.spec {
        Some(spec) => ctx
            .spec_path(Some(spec))?
            .parent()
            .map_or_else(|| ctx.workspace.clone(), Path::to_path_buf),
        None => ctx.workspace.clone(),
    };
    let routing = args.routing.as_deref().map(from_cwd);
    Routing::resolve(routing.as_deref(), &spec_dir).map_err(GateError::from)
}
