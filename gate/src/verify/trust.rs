//! The order of trust: `--base` resolved to a commit, and the gate's own
//! inputs compared with it, before anything of the workspace runs; what an
//! item later does to the repository's refs changes nothing.

use gate_review::findings::Finding;
use gate_specs::Spec;

use crate::change;
use crate::config::Context;
use crate::errors::GateError;
use crate::guard;
use crate::record::SelfGuard;

use super::setup::Setup;
use super::start::VerifyRequest;

/// The base the run is measured against, and what the self-guard found.
pub(super) struct Trust {
    /// The base as given (`--base` or the spec's).
    pub base: Option<String>,
    /// The commit it resolved to, before anything ran.
    pub base_commit: Option<String>,
    /// Whether the gate's own inputs were compared with the base's.
    pub self_guard: SelfGuard,
    /// The spec at the base, when it has one that parses.
    pub base_spec: Option<Spec>,
    /// Loosenings of the gate's own inputs.
    pub findings: Vec<Finding>,
    /// Where `HEAD` was before anything ran: its commit and branch.
    pub head: change::Head,
}

/// Resolves the base and runs the self-guard.
pub(super) async fn resolve(
    ctx: &Context,
    req: &VerifyRequest,
    setup: &Setup,
) -> Result<Trust, GateError> {
    let (git, spec, spec_file) = (&setup.git, &setup.spec, &setup.spec_file);
    let head = change::head(git, &ctx.workspace, &ctx.env).await;
    let base = req.base.clone().or_else(|| spec.spec.base.clone());
    let base_commit = match &base {
        Some(rev) => Some(change::resolve_base(git, &ctx.workspace, rev).await?),
        None => None,
    };
    let spec_then = match &base_commit {
        Some(commit) => Some(guard::spec_at_base(git, commit, &req.spec_path).await),
        None => None,
    };
    if let (Some(rev), Some(Err(guard::NoBaseSpec::Unreadable(why)))) = (&base, &spec_then) {
        return Err(GateError::Base {
            base: rev.clone(),
            reason: format!("cannot read {spec_file} at the base: {why}"),
        });
    }
    let self_guard = match (&base, &spec_then) {
        (_, Some(Ok(_))) => SelfGuard::on(),
        (Some(rev), Some(Err(guard::NoBaseSpec::Missing))) => SelfGuard::off(format!(
            "base `{rev}` has no {spec_file}, so the spec's checks and criteria were not \
             compared with it"
        )),
        (Some(rev), Some(Err(guard::NoBaseSpec::Unparsable))) => SelfGuard::off(format!(
            "{spec_file} at base `{rev}` does not parse, so nothing was compared with it"
        )),
        _ => SelfGuard::off(
            "no base given: pass `--base REV` to compare the spec, routing table, prompts \
             and house rules with the base's",
        ),
    };
    let base_spec = spec_then.and_then(Result::ok);
    let findings = match &base_commit {
        Some(commit) => {
            guard::check(
                git,
                &ctx.workspace,
                commit,
                &req.spec_path,
                (spec, base_spec.as_ref()),
                &setup.local_routing,
            )
            .await
        }
        None => Vec::new(),
    };
    Ok(Trust {
        base,
        base_commit,
        self_guard,
        base_spec,
        findings,
        head,
    })
}
