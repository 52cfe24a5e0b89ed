//! `gate mutants`: the change's criteria scored by the mutants of its own
//! lines they notice, printed as text or JSON.

use std::time::Duration;

use gate_evidence::{Snapshot, WalkOptions};
use gate_mutants::report;
use gate_specs::Spec;

use crate::cli::{MutantsArgs, ShowFormat};
use crate::config::Context;
use crate::errors::GateError;
use crate::git::Git;
use crate::interrupt::Interrupt;
use crate::isolation::Isolation;
use crate::{attest, change, exit, mutants, output, plan};

/// `gate mutants`: prepares what a run prepares, scores, prints.
pub(crate) async fn command(ctx: &Context, args: &MutantsArgs) -> Result<u8, GateError> {
    let spec_path = ctx.spec_path(args.spec.as_deref())?;
    let spec = crate::verify::load_spec(&spec_path)?.spec;
    if let Some(task) = &args.task
        && !spec.tasks.iter().any(|t| t.id == *task)
    {
        return Err(GateError::Usage(format!("the spec has no task `{task}`")));
    }
    let base = args
        .base
        .clone()
        .or_else(|| spec.spec.base.clone())
        .ok_or_else(|| {
            GateError::Usage(
                "gate mutants mutates the lines a change wrote: pass --base REV or set \
                 [spec] base"
                    .to_owned(),
            )
        })?;
    let (isolation, git) = prepare(ctx, &spec, &spec_path, args).await?;
    let commit = change::resolve_base(&git, &ctx.workspace, &base).await?;
    let snapshot = Snapshot::take(
        &ctx.workspace,
        &WalkOptions {
            state_dir: ctx.state_inside_workspace(),
            own_files: Vec::new(),
            force_include: plan::forced_inputs(&spec),
        },
    )?;
    let changed = change::with_base(&git, &ctx.workspace, &snapshot, &base, &commit).await?;
    let merge_base = change::merge_base(&git, &ctx.workspace, &base, &commit).await?;
    let interrupt = Interrupt::listen();
    let doc = mutants::score(mutants::Inputs {
        ctx,
        spec: &spec,
        isolation: &isolation,
        git: &git,
        snapshot: &snapshot,
        base_commit: &merge_base,
        changed: &changed,
        task: args.task.as_deref(),
        max: args.max,
        timeout: args.timeout_s.map(Duration::from_secs),
        unscoped: args.unscoped,
        progress: &|line| output::stderr(&format!("gate: {line}")),
        interrupt: &interrupt,
        unmutated: None,
    })
    .await?;
    let text = match args.format {
        ShowFormat::Human => report::text(&doc),
        ShowFormat::Json => {
            let mut json =
                serde_json::to_string_pretty(&doc).map_err(GateError::encode("mutants"))?;
            json.push('\n');
            json
        }
    };
    output::stdout(&text).map_err(GateError::stdout)?;
    Ok(exit::PASS)
}

/// The run's isolation and the gate's git, prepared as `gate verify`
/// prepares them.
async fn prepare(
    ctx: &Context,
    spec: &Spec,
    spec_path: &std::path::Path,
    args: &MutantsArgs,
) -> Result<(Isolation, Git), GateError> {
    attest::refuse_linked_state(ctx)?;
    let spec_dir = spec_path.parent().unwrap_or(&ctx.workspace);
    let routing = gate_review::routing::Routing::resolve(None, spec_dir)?;
    let store = attest::bundle_store(ctx)?;
    std::fs::create_dir_all(&ctx.state_dir).map_err(|e| GateError::Workspace {
        path: ctx.state_dir.clone(),
        reason: format!("cannot create the state directory: {e}"),
    })?;
    let floor = crate::config::sandbox_floor(args.sandbox, &ctx.env)?;
    crate::verify::isolate(ctx, spec, (&routing, &store), floor).await
}
