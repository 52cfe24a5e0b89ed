//! `gate verify`: one gate run, stage by stage.
//!
//! load & validate → fingerprint → plan → cross-checks and plain-code
//! criteria → tier → review → verdict → record.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use gate_evidence::{Digest, Snapshot, WalkOptions};
use gate_harness::{ItemKind, ItemResult, RunOptions, Status};
use gate_specs::{Decider, InputGlobs, Spec};

use crate::config::{self, Context};
use crate::errors::GateError;
use crate::events::{EventSink, PlannedEvent, RunEvent};
use crate::output;
use crate::plan::{self, Plan};
use crate::record::{
    CheckRecord, CriterionRecord, DecidedBy, FORMAT_VERSION, ItemStatus, ReviewRecord, RunRecord,
};
use crate::review::context::{self, Fence};
use crate::review::prompts::Prompts;
use crate::review::{self, JudgedCriterion, ReviewInput, ReviewOutput};
use crate::routing::Routing;
use crate::{attest, change, tier, verdict};

/// What `gate verify` was asked to do, resolved.
#[derive(Debug, Clone)]
pub struct VerifyRequest {
    /// The spec file.
    pub spec_path: PathBuf,
    /// `--base`, which wins over the spec's `base`.
    pub base: Option<String>,
    /// `--full`.
    pub full: bool,
    /// `--offline`.
    pub offline: bool,
    /// `--routing`.
    pub routing: Option<PathBuf>,
}

/// A spec, loaded: its parsed form and the bytes it was parsed from.
#[derive(Debug, Clone)]
pub struct LoadedSpec {
    /// The parsed, validated spec.
    pub spec: Spec,
    /// blake3 of the file's bytes.
    pub digest: Digest,
}

/// Reads and validates the spec.
pub fn load_spec(path: &Path) -> Result<LoadedSpec, GateError> {
    let bytes = std::fs::read(path).map_err(|e| GateError::Workspace {
        path: path.to_path_buf(),
        reason: format!("cannot read the spec: {e}"),
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let spec = gate_specs::parse_str(&text, path, gate_specs::Format::from_path(path))?;
    Ok(LoadedSpec {
        spec,
        digest: Digest::of(&bytes),
    })
}

/// Runs the gate once, progress on stderr, and returns the whole record of the run.
pub async fn run(ctx: &Context, req: &VerifyRequest) -> Result<RunRecord, GateError> {
    let progress = output::progress::Progress::stderr(
        ctx.verbosity,
        output::style::Style {
            color: ctx.colors.stderr,
        },
    );
    let (events, dispatcher) =
        output::stream::start(vec![Box::new(progress)], output::stream::HEARTBEAT);
    let result = run_with(ctx, req, &events).await;
    dispatcher.finish(events).await;
    result
}

/// Runs the gate once, reporting what happens to `events`, and returns the
/// whole record of the run.
pub async fn run_with(
    ctx: &Context,
    req: &VerifyRequest,
    events: &EventSink,
) -> Result<RunRecord, GateError> {
    let clock = Instant::now();
    let started_at = chrono::Utc::now();
    let run_id = uuid::Uuid::now_v7().to_string();

    // Everything that can make this a usage or configuration error comes
    // first: nothing runs when the spec, the table or the key is wrong.
    let LoadedSpec { spec, digest } = load_spec(&req.spec_path)?;
    let policy = &spec.policy;
    let routing = Routing::resolve(
        req.routing.as_deref(),
        req.spec_path.parent().unwrap_or(&ctx.workspace),
    )?;
    let prompts = load_prompts(ctx, &routing)?;
    let (key, created_key) = attest::signing_key(ctx)?;
    events.emit(RunEvent::RunStarted {
        run_id: run_id.clone(),
        spec_id: spec.spec.id.clone(),
        started_at: started_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    });
    if let Some(path) = created_key {
        events.emit(RunEvent::Notice(format!(
            "gate: created a signing key at {}",
            path.display()
        )));
    }

    let snapshot = fingerprint(ctx, &spec).await?;
    let base = req.base.clone().or_else(|| spec.spec.base.clone());
    let task_paths = InputGlobs::new(
        &spec
            .tasks
            .iter()
            .flat_map(|t| t.paths.iter())
            .collect::<Vec<_>>(),
    )
    .map_err(|e| GateError::Usage(e.to_string()))?;
    let changed = match &base {
        Some(base) => change::with_base(&ctx.workspace, base).await?,
        None => change::by_paths(&snapshot, &task_paths),
    };

    let plan = plan::first_attempt(&spec, &snapshot);
    events.emit(RunEvent::Planned(planned_events(&plan)));
    let redact = config::secret_env_values(&routing.key_variables());
    let Harnessed {
        results,
        interrupted,
    } = run_harness(
        ctx,
        events,
        &spec,
        &plan,
        &snapshot,
        base.is_some(),
        &changed,
        redact,
    )
    .await?;

    let sensitive =
        InputGlobs::new(&policy.sensitive_paths).map_err(|e| GateError::Usage(e.to_string()))?;
    let tier = tier::decide(
        spec.tasks.len(),
        spec.criteria_count(),
        policy,
        &sensitive,
        &changed,
    );

    let cross_checks_failed = results.values().any(|r| r.status == Status::Failed);
    let review = if interrupted {
        ReviewOutput::skipped("the run was interrupted")
    } else if cross_checks_failed {
        ReviewOutput::skipped("a cross-check failed; no model is asked until they pass")
    } else if req.offline {
        ReviewOutput::skipped("offline (--offline)")
    } else {
        let stage = ReviewStage {
            ctx,
            spec: &spec,
            snapshot: &snapshot,
            changed: &changed,
            tier: &tier,
            routing: &routing,
            prompts: &prompts,
            results: &results,
            run_id: &run_id,
            events,
        };
        stage.run().await?
    };
    if let Some(reason) = &review.record.reason {
        events.emit(RunEvent::ReviewSkipped {
            reason: reason.clone(),
        });
    }

    let (checks, mut criteria) = records(&spec, &plan, &results, &review.record, interrupted);
    apply_judgements(&mut criteria, &review.judgements);
    let findings = review.findings;
    let (verdict, verdict_reasons) = verdict::decide(&verdict::Inputs {
        checks: &checks,
        criteria: &criteria,
        review: &review.record,
        findings: &findings,
        on_review_unavailable: policy.on_review_unavailable,
        review_incomplete: &review.incomplete,
    });
    let review = review.record;

    let mut record = RunRecord {
        format_version: FORMAT_VERSION,
        run_id,
        spec_id: spec.spec.id.clone(),
        summary: spec.spec.summary.clone(),
        agent: spec.spec.agent.clone(),
        attempt: 1,
        started_at: started_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        duration_ms: millis(clock.elapsed()),
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        spec_digest: digest.to_hex(),
        base,
        verdict,
        verdict_reasons,
        overridden: false,
        recorded: false,
        tier: tier.tier,
        tier_reason: tier.reason,
        changed_files: changed,
        files_fingerprinted: snapshot.len(),
        checks,
        criteria,
        review,
        findings,
        doom_loop: None,
        bundle: None,
    };

    let names = subject_names(ctx, req, &spec, &snapshot, &routing, &prompts, &record);
    let extra = attest::PredicateExtra {
        policy: serde_json::to_value(policy).unwrap_or_default(),
        routing_origin: routing.origin.to_string(),
        routing_digest: routing.digest().to_hex(),
        prompts: serde_json::Value::Array(
            prompts
                .digests()
                .into_iter()
                .map(|(key, d, path)| {
                    serde_json::json!({"prompt": key, "blake3": d.to_hex(),
                        "file": path.map(|p| p.display().to_string())})
                })
                .collect(),
        ),
        plan: plan_json(&plan),
        previous_bundle: None,
    };
    let entry_extra = attest::ledger_extra(&record);
    let workspace = ctx.workspace.clone();
    let subjects = tokio::task::spawn_blocking(move || attest::subjects(&workspace, &names))
        .await
        .unwrap_or_default();
    if let Some(why) = attest::record_run(ctx, &mut record, &key, subjects, &extra, entry_extra)? {
        events.emit(RunEvent::Warning(format!(
            "gate: the ledger did not take this run ({why}); the bundle is kept for `gate ledger import`"
        )));
    }
    Ok(record)
}

/// The prompts in effect: built in, or as the routing table's `[prompts]` names them.
fn load_prompts(ctx: &Context, routing: &Routing) -> Result<Prompts, GateError> {
    let base = match &routing.origin {
        crate::routing::Origin::File(p) => p.parent().map(Path::to_path_buf),
        crate::routing::Origin::Builtin => None,
    };
    Prompts::load(
        &routing.table.prompts,
        base.as_deref().unwrap_or(&ctx.workspace),
    )
    .map_err(|e| GateError::Usage(e.to_string()))
}

/// Files a bundle names as subjects: the spec, the routing table and prompt
/// files, every file an item's inputs or a task's paths match, and every
/// file shown to a model — those inside the workspace.
fn subject_names(
    ctx: &Context,
    req: &VerifyRequest,
    spec: &Spec,
    snapshot: &Snapshot,
    routing: &Routing,
    prompts: &Prompts,
    record: &RunRecord,
) -> Vec<String> {
    let mut names = std::collections::BTreeSet::new();
    let mut add_path = |p: &Path| {
        if let Ok(rel) = p.strip_prefix(&ctx.workspace) {
            names.insert(rel.to_string_lossy().replace('\\', "/"));
        }
    };
    add_path(&req.spec_path);
    if let crate::routing::Origin::File(p) = &routing.origin {
        add_path(p);
    }
    for (_, _, path) in prompts.digests() {
        if let Some(p) = path {
            add_path(&p);
        }
    }
    let globs: Vec<&String> = spec
        .checks
        .iter()
        .flat_map(|c| c.inputs.iter())
        .chain(spec.tasks.iter().flat_map(|t| t.paths.iter()))
        .chain(spec.criteria().flat_map(|(_, c)| c.inputs.iter()))
        .collect();
    if let Ok(globs) = InputGlobs::new(&globs)
        && !globs.is_empty()
    {
        names.extend(
            snapshot
                .regular_files()
                .filter(|p| globs.is_match(p))
                .map(str::to_owned),
        );
    }
    for s in &record.review.specialists {
        names.extend(s.coverage.files.iter().cloned());
    }
    names.into_iter().collect()
}

/// The plan as events report it.
fn planned_events(plan: &Plan) -> Vec<PlannedEvent> {
    plan.items
        .iter()
        .map(|i| PlannedEvent {
            id: i.id.clone(),
            kind: i.kind,
            judged: i.work.is_none(),
            decision: serde_json::to_value(&i.decision).unwrap_or_default(),
        })
        .collect()
}

/// The plan as the bundle records it.
fn plan_json(plan: &Plan) -> serde_json::Value {
    serde_json::Value::Array(
        plan.items
            .iter()
            .map(|i| {
                let mut v = serde_json::to_value(&i.decision).unwrap_or_default();
                if let Some(obj) = v.as_object_mut() {
                    obj.insert("id".into(), i.id.clone().into());
                    obj.insert("inputs_digest".into(), i.inputs_digest.to_hex().into());
                }
                v
            })
            .collect(),
    )
}

/// The model review's inputs.
struct ReviewStage<'a> {
    ctx: &'a Context,
    spec: &'a Spec,
    snapshot: &'a Snapshot,
    changed: &'a [String],
    tier: &'a tier::TierDecision,
    routing: &'a Routing,
    prompts: &'a Prompts,
    results: &'a HashMap<String, ItemResult>,
    run_id: &'a str,
    events: &'a EventSink,
}

impl ReviewStage<'_> {
    /// The model review, when a provider is configured.
    async fn run(&self) -> Result<ReviewOutput, GateError> {
        let Self {
            ctx,
            spec,
            snapshot,
            changed,
            tier,
            routing,
            prompts,
            results,
            run_id,
            events,
        } = *self;
        let keys = config::provider_keys(routing);
        if keys.is_empty() {
            return Ok(ReviewOutput::skipped("no provider configured"));
        }
        let clients = review::call::clients(
            routing,
            &keys,
            Duration::from_secs(spec.policy.connect_timeout_s),
        )
        .map_err(|e| GateError::Usage(format!("cannot set up the model client: {e}")))?;
        let workspace = ctx.workspace.clone();
        let changed_owned = changed.to_vec();
        let judged: Vec<JudgedCriterion> = spec
            .criteria()
            .filter(|(_, c)| c.decider() == Decider::Model)
            .map(|(t, c)| JudgedCriterion {
                id: c.id.clone(),
                task: t.id.clone(),
                text: c.text.clone(),
            })
            .collect();
        let judge_paths = judge_inputs(spec, snapshot);
        let (change, judge_files) = tokio::task::spawn_blocking(move || {
            (
                context::read_change(&workspace, &changed_owned),
                context::read_change(&workspace, &judge_paths),
            )
        })
        .await
        .map_err(|e| GateError::Workspace {
            path: ctx.workspace.clone(),
            reason: format!("reading the change stopped: {e}"),
        })?;
        let code_criteria: Vec<(String, String)> = spec
            .criteria()
            .filter_map(|(_, c)| {
                let r = results.get(&c.id)?;
                Some((c.id.clone(), format!("{:?}", r.status).to_lowercase()))
            })
            .collect();
        let fence = Fence::new();
        let out = review::run(&ReviewInput {
            run_id,
            spec,
            tier,
            change: &change,
            judged: &judged,
            judge_files: &judge_files,
            code_criteria: &code_criteria,
            routing,
            prompts,
            clients: &clients,
            policy: &spec.policy,
            fence: &fence,
            events,
        })
        .await;
        Ok(out)
    }
}

/// The files model-judged criteria name as inputs (their task's paths when
/// they name none), sorted and unique.
fn judge_inputs(spec: &Spec, snapshot: &Snapshot) -> Vec<String> {
    let mut globs = Vec::new();
    for (task, c) in spec.criteria() {
        if c.decider() != Decider::Model {
            continue;
        }
        if c.inputs.is_empty() {
            globs.extend(task.paths.iter().cloned());
        } else {
            globs.extend(c.inputs.iter().cloned());
        }
    }
    let Ok(globs) = InputGlobs::new(&globs) else {
        return Vec::new();
    };
    if globs.is_empty() {
        return Vec::new();
    }
    snapshot
        .regular_files()
        .filter(|p| globs.is_match(p))
        .map(str::to_owned)
        .collect()
}

/// Decides model-judged criteria from the judge's answers.
fn apply_judgements(
    criteria: &mut [CriterionRecord],
    judgements: &std::collections::BTreeMap<String, review::Judgement>,
) {
    for c in criteria
        .iter_mut()
        .filter(|c| c.decided_by == DecidedBy::Model)
    {
        let Some(j) = judgements.get(&c.id) else {
            continue;
        };
        let threshold = c.threshold.unwrap_or(0.8);
        if let Some(met) = j.met {
            c.met = Some(met);
            c.status = if met >= threshold {
                ItemStatus::Passed
            } else {
                ItemStatus::Failed
            };
        } else {
            c.status = ItemStatus::Unverified;
        }
        c.reason = Some(j.why.clone());
    }
}

async fn fingerprint(ctx: &Context, spec: &Spec) -> Result<Snapshot, GateError> {
    let opts = WalkOptions {
        state_dir: ctx.state_inside_workspace(),
        force_include: plan::forced_inputs(spec),
    };
    let root = ctx.workspace.clone();
    let started = Instant::now();
    let snapshot = tokio::task::spawn_blocking(move || Snapshot::take(&root, &opts))
        .await
        .map_err(|e| GateError::Workspace {
            path: ctx.workspace.clone(),
            reason: format!("fingerprinting stopped: {e}"),
        })??;
    tracing::info!(
        files = snapshot.len(),
        ms = started.elapsed().as_millis() as u64,
        "fingerprinted the workspace"
    );
    Ok(snapshot)
}

#[allow(clippy::too_many_arguments)] // the stage's inputs, each used once
async fn run_harness(
    ctx: &Context,
    events: &EventSink,
    spec: &Spec,
    plan: &Plan,
    snapshot: &Snapshot,
    has_base: bool,
    changed: &[String],
    redact: Vec<String>,
) -> Result<Harnessed, GateError> {
    let items: Vec<_> = plan.items.iter().filter_map(|i| i.work.clone()).collect();
    // With a base the built-in checks look at what the change touched (old
    // problems are not this change's); without one, at the whole workspace.
    let files: Vec<String> = if has_base {
        changed
            .iter()
            .filter(|f| {
                snapshot
                    .get(f)
                    .is_some_and(|e| e.kind == gate_evidence::snapshot::EntryKind::File)
            })
            .cloned()
            .collect()
    } else {
        snapshot.regular_files().map(str::to_owned).collect()
    };
    let opts = RunOptions {
        workspace: ctx.workspace.clone(),
        concurrency: std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
        output_cap: usize::try_from(spec.policy.output_cap_bytes).unwrap_or(usize::MAX),
        files: Arc::new(files),
        satisfied: std::collections::HashSet::new(),
        redact: Arc::new(redact),
    };
    let (tx, forward) = events.harness();
    let interrupted = AtomicBool::new(false);
    let cancel = async {
        // Ctrl-C stops every process group instead of leaving them behind.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
        interrupted.store(true, Ordering::SeqCst);
    };
    let results = gate_harness::run(items, opts, Some(tx), cancel).await;
    let _ = forward.await;
    let mut results: HashMap<String, ItemResult> =
        results?.into_iter().map(|r| (r.id.clone(), r)).collect();
    if interrupted.load(Ordering::SeqCst) {
        // What an interruption left unfinished was not decided, not skipped.
        for r in results.values_mut().filter(|r| r.status == Status::Skipped) {
            r.reason = Some("the run was interrupted".to_owned());
        }
        return Ok(Harnessed {
            results,
            interrupted: true,
        });
    }
    Ok(Harnessed {
        results,
        interrupted: false,
    })
}

/// The harness's results, and whether an interruption cut them short.
struct Harnessed {
    results: HashMap<String, ItemResult>,
    interrupted: bool,
}

/// Turns the plan and the harness results into check and criterion records.
fn records(
    spec: &Spec,
    plan: &Plan,
    results: &HashMap<String, ItemResult>,
    review: &ReviewRecord,
    interrupted: bool,
) -> (Vec<CheckRecord>, Vec<CriterionRecord>) {
    let criteria_of: HashMap<&str, (&gate_specs::Task, &gate_specs::Criterion)> = spec
        .criteria()
        .map(|(t, c)| (c.id.as_str(), (t, c)))
        .collect();
    let mut checks = Vec::new();
    let mut criteria = Vec::new();
    for item in &plan.items {
        let result = results.get(&item.id);
        let status = result.map_or(ItemStatus::Unverified, |r| match r.status {
            Status::Passed => ItemStatus::Passed,
            Status::Failed => ItemStatus::Failed,
            Status::Skipped if interrupted => ItemStatus::Unverified,
            Status::Skipped => ItemStatus::Skipped,
        });
        let exit_code = result.and_then(|r| r.exit_code);
        let duration_ms = result.map_or(0, |r| millis(r.duration));
        let output = result.map(|r| r.output.clone()).unwrap_or_default();
        if item.kind == ItemKind::Criterion {
            let Some((task, c)) = criteria_of.get(item.id.as_str()) else {
                continue;
            };
            let model = item.work.is_none();
            let reason = if model {
                Some(match &review.reason {
                    Some(r) => format!("review did not run ({r})"),
                    None => "the judge gave no answer".to_owned(),
                })
            } else {
                result.and_then(|r| r.reason.clone())
            };
            criteria.push(CriterionRecord {
                id: item.id.clone(),
                task: task.id.clone(),
                text: c.text.clone(),
                decided_by: if model {
                    DecidedBy::Model
                } else {
                    DecidedBy::Code
                },
                command: (!model).then(|| item.command.clone()),
                status,
                met: None,
                threshold: model.then(|| c.threshold.unwrap_or(spec.policy.judge_threshold)),
                exit_code,
                duration_ms,
                inputs_digest: item.inputs_digest.to_hex(),
                carried_from: None,
                reason,
                output,
            });
        } else {
            checks.push(CheckRecord {
                id: item.id.clone(),
                kind: item.kind,
                command: item.command.clone(),
                status,
                exit_code,
                duration_ms,
                inputs_digest: item.inputs_digest.to_hex(),
                carried_from: None,
                reason: result.and_then(|r| r.reason.clone()),
                output,
                locations: result.map(|r| r.locations.clone()).unwrap_or_default(),
            });
        }
    }
    (checks, criteria)
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
