//! A pre-registered replay: `gate replay plan` signs the selection (its
//! seed drawn then), the candidate's digests, the minimum sample and the
//! targets before any request is sent; `gate replay run PLAN` checks the
//! plan's signature and that the candidate is still the one planned, runs
//! it and judges the targets. A plan is never rewritten: a changed plan is
//! a new file and a new digest, and every plan is also kept in the bundle
//! store.

use std::path::Path;

use gate_evidence::{Statement, bundle};
use gate_review::replay::target::Target;
use serde::{Deserialize, Serialize};

use super::execute::{self, candidate, digests};
use super::report::{PromptDigest, ReplayReport, Routed, TargetResult};
use super::select;
use crate::attest;
use crate::cli::{ReplayCandidate, ReplayLimits, ReplayPlanArgs, ReplaySelection};
use crate::config::{Context, from_cwd};
use crate::errors::GateError;

/// The predicate type of a replay plan, versioned.
pub(crate) const PLAN_PREDICATE_TYPE: &str = "https://gate.dev/attestation/replay-plan/v1";

/// What a plan fixes before the replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct ReplayPlan {
    /// When it was written (RFC 3339, UTC).
    pub created_at: String,
    /// The runs (with the seed `--sample` draws with).
    pub selection: ReplaySelection,
    /// The candidate's files, as absolute paths.
    pub candidate: ReplayCandidate,
    /// The candidate's routing table as planned.
    pub routing: Routed,
    /// The candidate's prompts as planned.
    pub prompts: Vec<PromptDigest>,
    /// What it may spend, how many runs at once.
    pub limits: ReplayLimits,
    /// Runs a stratum needs before it is given a rate.
    pub minimum_sample: u64,
    /// The targets, as written.
    pub targets: Vec<String>,
}

/// `gate replay plan`: writes the signed plan to `args.output` (never over
/// a file there) and keeps a copy in the bundle store; returns its sha256.
pub(crate) fn write(ctx: &Context, args: &ReplayPlanArgs) -> Result<String, GateError> {
    execute::Limits::checked(args.replay.limits)?;
    for t in &args.targets {
        Target::parse(t).map_err(|e| GateError::Usage(e.to_string()))?;
    }
    let selection = select::settled(args.replay.selection.clone())?;
    let absolute = ReplayCandidate {
        routing: args.replay.candidate.routing.as_deref().map(from_cwd),
        prompts: args.replay.candidate.prompts.as_deref().map(from_cwd),
    };
    let (routing, prompts) = candidate(ctx, &absolute)?;
    let (routed, prompt_digests) = digests(&routing, &prompts);
    let plan = ReplayPlan {
        created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        selection,
        candidate: absolute,
        routing: routed,
        prompts: prompt_digests,
        limits: args.replay.limits,
        minimum_sample: args.replay.min_sample,
        targets: args.targets.clone(),
    };
    let (key, _) = attest::signing_key(ctx)?;
    let predicate = serde_json::to_value(&plan).map_err(GateError::encode("replay plan"))?;
    let envelope = bundle::seal(
        &Statement::new(Vec::new(), PLAN_PREDICATE_TYPE, predicate),
        &key,
    );
    let sha = bundle::digest(&envelope);
    let path = from_cwd(&args.output);
    let anchor = path.parent().unwrap_or(Path::new("."));
    gate_evidence::place::create_file(anchor, &path, &envelope).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            GateError::Usage(format!(
                "{} exists: a plan is never rewritten; write a changed plan to a new file",
                path.display()
            ))
        } else {
            GateError::Write {
                path: path.clone(),
                source: e,
            }
        }
    })?;
    let store = attest::bundle_store(ctx)?;
    tokio::task::block_in_place(|| store.put(&format!("replay-plan-{sha}"), &envelope))?;
    Ok(sha)
}

/// `gate replay run PLAN`: the plan verified under `keys`, its candidate
/// checked against the digests it fixed, run, and its targets judged.
pub(crate) async fn run(
    ctx: &Context,
    plan_path: &Path,
    keys: &[std::path::PathBuf],
) -> Result<ReplayReport, GateError> {
    let path = from_cwd(plan_path);
    let bytes = bundle::read(&path)?;
    let trusted = attest::trusted_keys(ctx, keys)?;
    let opened = bundle::open(&bytes, &trusted)
        .map_err(|e| GateError::BadEvidence(format!("{} does not verify: {e}", path.display())))?;
    if opened.statement.predicate_type != PLAN_PREDICATE_TYPE {
        return Err(GateError::BadEvidence(format!(
            "{} is signed, but it is not a replay plan (predicateType {})",
            path.display(),
            opened.statement.predicate_type
        )));
    }
    let plan = ReplayPlan::deserialize(&opened.statement.predicate).map_err(|e| {
        GateError::BadEvidence(format!(
            "{} verifies, but does not parse: {e}",
            path.display()
        ))
    })?;
    let (routing, prompts) = candidate(ctx, &plan.candidate)?;
    if digests(&routing, &prompts) != (plan.routing.clone(), plan.prompts.clone()) {
        return Err(GateError::Usage(format!(
            "the candidate's routing table or prompts changed since plan {}: \
             write a new plan for the changed candidate",
            opened.sha256
        )));
    }
    let (mut report, subjects) = execute::execute(
        ctx,
        &plan.selection,
        &plan.candidate,
        execute::Limits::checked(plan.limits)?,
        plan.minimum_sample,
        Some(opened.sha256.clone()),
    )
    .await?;
    report.targets = judged(&plan.targets, &report);
    execute::seal(ctx, subjects, &mut report)?;
    Ok(report)
}

fn judged(targets: &[String], report: &ReplayReport) -> Vec<TargetResult> {
    targets
        .iter()
        .map(|text| {
            let value = Target::parse(text)
                .ok()
                .and_then(|t| Some((t, t.measure(&report.baseline, &report.candidate)?)));
            TargetResult {
                target: text.clone(),
                value: value.map(|(_, v)| v),
                met: value.is_some_and(|(t, v)| t.holds(v)),
            }
        })
        .collect()
}
