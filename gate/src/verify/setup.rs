//! The run's set-up: the spec, the routing table, the prompts, the bundle
//! store and the signing key loaded (everything that makes a usage error
//! comes first, before anything runs), and the run's isolation prepared.

use std::path::{Path, PathBuf};

use gate_evidence::SigningKey;
use gate_evidence::store::BundleStore;
use gate_review::review::prompts::Prompts;
use gate_review::routing::Routing;
use gate_review::routing::patch::{self, OverrideStatus};
use gate_specs::Spec;

use crate::config::Context;
use crate::errors::GateError;
use crate::events::{EventSink, Note, RunEvent};
use crate::git::{Git, Repository};
use crate::isolation::{self, Isolation};
use crate::{attest, pages};

use super::start::{LoadedSpec, Start, VerifyRequest};

/// What the run is configured with, and where what it starts runs.
pub(super) struct Setup {
    /// The spec.
    pub spec: Spec,
    /// Its text, for the places findings name.
    pub spec_text: String,
    /// Its path as findings name it (workspace-relative).
    pub spec_file: String,
    /// The routing table in effect (the operator's override applied).
    pub routing: Routing,
    /// The table the workspace holds, which the self-guard compares.
    pub local_routing: Routing,
    /// What became of `GATE_ROUTING_URL`, when set.
    pub routing_override: Option<OverrideStatus>,
    /// The prompts in effect.
    pub prompts: Prompts,
    /// Where bundles go.
    pub store: BundleStore,
    /// The signing key.
    pub key: SigningKey,
    /// Where the key was created, when this run created it.
    pub created_key: Option<PathBuf>,
    /// The run's sandbox and environment.
    pub isolation: Isolation,
    /// The gate's own git, run through the isolation.
    pub git: Git,
}

/// Loads what the run is configured with and prepares its isolation; the
/// state directory exists first, so it is hidden from the start.
pub(super) async fn load(
    ctx: &Context,
    req: &VerifyRequest,
    start: &mut Start,
) -> Result<Setup, GateError> {
    // Before anything of the state directory is created or opened.
    attest::refuse_linked_state(ctx)?;
    let LoadedSpec {
        spec,
        digest,
        text: spec_text,
    } = super::start::load_spec(&req.spec_path)?;
    start.spec_digest = digest.to_hex();
    let spec_dir = req.spec_path.parent().unwrap_or(&ctx.workspace);
    // An advisory run reviews only with the table the user chose for
    // advisory runs (`--routing`, which the hook passes), never the
    // workspace's or the built-in one; the self-guard still reads the
    // workspace's.
    let (mut routing, local_routing) = if ctx.env.advisory() {
        let local = Routing::resolve(None, spec_dir)?;
        match req.routing.as_deref() {
            Some(path) => (Routing::load(path)?, local),
            None => (Routing::none(), local),
        }
    } else {
        let routing = Routing::resolve(req.routing.as_deref(), spec_dir)?;
        // The self-guard compares the table the workspace holds with the
        // base's: an operator's override is not part of the change.
        (routing.clone(), routing)
    };
    let routing_override = routing_override(&mut routing, ctx, req.offline).await;
    let prompts = load_prompts(ctx, &routing)?;
    let store = attest::bundle_store(ctx)?;
    let (key, created_key) = attest::signing_key(ctx)?;
    attest::keep_state_out_of_git(ctx);
    std::fs::create_dir_all(&ctx.state_dir).map_err(|e| GateError::Workspace {
        path: ctx.state_dir.clone(),
        reason: format!("cannot create the state directory: {e}"),
    })?;
    let (isolation, git) = isolate(ctx, &spec, (&routing, &store), req.sandbox.clone()).await?;
    super::planted::refuse_tracked(&git, &attest::record_paths(ctx, &store)).await?;
    let spec_file =
        crate::change::relative_to(&ctx.workspace, std::slice::from_ref(&req.spec_path))
            .pop()
            .unwrap_or_else(|| req.spec_path.display().to_string());
    Ok(Setup {
        spec,
        spec_text,
        spec_file,
        routing,
        local_routing,
        routing_override,
        prompts,
        store,
        key,
        created_key,
        isolation,
        git,
    })
}

/// The run's isolation for `spec` under the operator's `floor`, the
/// workspace handed over to it, and the gate's own git running through it.
pub(crate) async fn isolate(
    ctx: &Context,
    spec: &Spec,
    (routing, store): (&Routing, &BundleStore),
    floor: (gate_specs::SandboxMode, crate::config::Source),
) -> Result<(Isolation, Git), GateError> {
    let mut isolation = Isolation::prepare(isolation::Setup {
        floor,
        section: &spec.sandbox,
        workspace: &ctx.workspace,
        secret_paths: attest::secret_paths(ctx, store),
        never_env: never_env(ctx, spec, routing, store),
        host_env: ctx.env.pairs(),
    })
    .await?;
    isolation.hand_over_workspace(&ctx.workspace)?;
    let repository = Repository::find(&ctx.workspace);
    let top = repository
        .as_ref()
        .ok()
        .map(|r| r.work_tree().to_path_buf());
    let git = Git::new(isolation.tools(top.as_deref()), repository);
    Ok((isolation, git))
}

/// Variables no process of the run may see, even when `[sandbox] pass_env`
/// names them: the providers' keys, page credentials, and the ledger's and
/// bundle store's credentials.
pub(crate) fn never_env(
    ctx: &Context,
    spec: &Spec,
    routing: &Routing,
    store: &BundleStore,
) -> std::collections::BTreeSet<String> {
    let mut never: std::collections::BTreeSet<String> =
        routing.key_variables().into_iter().collect();
    never.extend(pages::credential_variables(spec));
    if attest::ledger_location(ctx).is_ok_and(|l| l.is_postgres()) {
        never.extend(["PGPASSWORD", "PGPASSFILE"].map(str::to_owned));
    }
    if matches!(store.target(), gate_evidence::store::Target::S3 { .. }) {
        never.extend(
            [
                "AWS_ACCESS_KEY_ID",
                "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN",
            ]
            .map(str::to_owned),
        );
    }
    never
}

/// The gate's own configuration files, which the bundle names as subjects.
pub(super) fn config_files<'a>(
    req: &'a VerifyRequest,
    routing: &'a Routing,
    prompts: &'a Prompts,
) -> Vec<&'a Path> {
    let mut files: Vec<&Path> = vec![req.spec_path.as_path()];
    if let gate_review::routing::Origin::File(p) = &routing.origin {
        files.push(p);
    }
    files.extend(prompts.files());
    files
}

/// Applies `GATE_ROUTING_URL`'s patch over the local table (unless offline)
/// and says what became of it.
pub(super) async fn routing_override(
    routing: &mut Routing,
    ctx: &Context,
    offline: bool,
) -> Option<OverrideStatus> {
    let url = ctx.env.routing_url()?;
    Some(patch::apply_override(routing, &url, offline).await)
}

/// Says what became of the routing override: a warning when it failed (the
/// run uses the local table), a notice when it applied.
pub(super) fn report_override(events: &EventSink, status: &OverrideStatus) {
    match (status.status.as_str(), &status.error) {
        ("failed", Some(why)) => events.emit(RunEvent::Note(Note::RoutingOverrideFailed {
            url: status.url.clone(),
            error: why.clone(),
        })),
        ("applied", _) => events.emit(RunEvent::Note(Note::RoutingOverrideApplied {
            url: status.url.clone(),
            changed: status.changed.clone(),
        })),
        _ => {}
    }
}

/// The prompts in effect: built in, or as the routing table's `[prompts]` names them.
pub(crate) fn load_prompts(ctx: &Context, routing: &Routing) -> Result<Prompts, GateError> {
    let base = match &routing.origin {
        gate_review::routing::Origin::File(p) => p.parent().map(Path::to_path_buf),
        gate_review::routing::Origin::Builtin => None,
    };
    Prompts::load(
        &routing.table.prompts,
        base.as_deref().unwrap_or(&ctx.workspace),
    )
    .map_err(|e| GateError::Usage(e.to_string()))
}
