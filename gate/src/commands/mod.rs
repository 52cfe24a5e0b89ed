//! The commands other than `verify`, one module each (and `verify
//! --print-config`, in [`config`]).

pub(crate) mod completions;
pub(crate) mod config;
pub(crate) mod doctor;
pub(crate) mod evidence;
pub(crate) mod hook;
pub(crate) mod keys;
pub(crate) mod ledger;
pub(crate) mod man;
pub(crate) mod mcp;
pub(crate) mod metrics;
pub(crate) mod mutants;
pub(crate) mod outcome;
pub(crate) mod replay;
pub(crate) mod report;
pub(crate) mod review_memory;
pub(crate) mod routing;
pub(crate) mod rules;
pub(crate) mod runs;
pub(crate) mod schema;

use std::path::Path;

use gate_review::routing::Routing;

use crate::cli::RoutingArgs;
use crate::config::{Context, from_cwd};
use crate::errors::GateError;

/// Loads the table the way `gate verify` would.
pub(crate) fn routing_table(ctx: &Context, args: &RoutingArgs) -> Result<Routing, GateError> {
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
