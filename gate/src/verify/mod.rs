//! `gate verify`: one gate run, stage by stage.
//!
//! load & validate → series → fingerprint → plan → cross-checks and
//! plain-code criteria → tier → review → memory → verdict → doom loop →
//! record.
//!
//! - `harness`: fingerprinting and the plain-code checks.
//! - `review`: the model review stage.
//! - `records`: results into records; what the bundle names.

mod harness;
mod records;
mod review;

use std::path::{Path, PathBuf};
use std::time::Instant;

use gate_evidence::Digest;
use gate_evidence::store::BundleStore;
use gate_harness::Status;
use gate_specs::{InputGlobs, Spec};

use crate::config::{self, Context};
use crate::errors::GateError;
use crate::events::{EventSink, PlannedEvent, RunEvent};
use crate::interrupt::Interrupt;
use crate::output;
use crate::plan;
use crate::record::{FORMAT_VERSION, Finding, ReviewRecord, RunRecord, Tier, Verdict};
use crate::retry::doom::{self, FailingAttempt, Thresholds};
use crate::retry::memory::{self, Disposition};
use crate::retry::{self, History};
use crate::review::ReviewOutput;
use crate::review::coordinator::sort_worst_first;
use crate::review::prompts::Prompts;
use crate::routing::Routing;
use crate::routing::patch::{self, OverrideStatus};
use crate::rules::RuleSet;
use crate::{attest, change, guard, pages, rules, tier, verdict};

/// What `gate verify` was asked to do, resolved.
#[derive(Debug, Clone)]
pub struct VerifyRequest {
    /// The spec file.
    pub spec_path: PathBuf,
    /// `--base`, which wins over the spec's `base`.
    pub base: Option<String>,
    /// `--full`.
    pub full: bool,
    /// `--new-series`.
    pub new_series: bool,
    /// `--offline`.
    pub offline: bool,
    /// `--routing`.
    pub routing: Option<PathBuf>,
    /// The files this run writes its results to (see
    /// [`crate::output::own_files`]): left out of the workspace it verifies.
    pub own_files: Vec<PathBuf>,
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
    let bytes = gate_specs::read_bounded(path, gate_specs::TEXT_MAX_BYTES).map_err(|e| {
        GateError::Workspace {
            path: path.to_path_buf(),
            reason: format!("cannot read the spec: {e}"),
        }
    })?;
    let text = gate_specs::text_of(&bytes, path).map_err(gate_specs::SpecErrors::from)?;
    let spec = gate_specs::parse_str(text, path, gate_specs::Format::from_path(path))?;
    Ok(LoadedSpec {
        spec,
        digest: Digest::of(&bytes),
    })
}

/// The parts of a run every record needs, fixed at its start.
struct Start {
    run_id: String,
    clock: Instant,
    started_at: String,
    spec_digest: String,
}

impl Start {
    fn now() -> Self {
        Self {
            run_id: uuid::Uuid::now_v7().to_string(),
            clock: Instant::now(),
            started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            spec_digest: String::new(),
        }
    }

    /// A record of a run that decided nothing of its own (an escalated series).
    fn bare(&self, spec: &Spec, attempt: u32, verdict: Verdict, reasons: Vec<String>) -> RunRecord {
        RunRecord {
            format_version: FORMAT_VERSION,
            run_id: self.run_id.clone(),
            spec_id: spec.spec.id.clone(),
            summary: spec.spec.summary.clone(),
            agent: spec.spec.agent.clone(),
            attempt,
            started_at: self.started_at.clone(),
            duration_ms: millis(self.clock.elapsed()),
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            spec_digest: self.spec_digest.clone(),
            base: None,
            verdict,
            verdict_reasons: reasons,
            overridden: false,
            recorded: false,
            tier: Tier::Trivial,
            tier_reason: "nothing ran".to_owned(),
            changed_files: Vec::new(),
            files_fingerprinted: 0,
            checks: Vec::new(),
            criteria: Vec::new(),
            review: ReviewRecord::did_not_run("the series is escalated"),
            findings: Vec::new(),
            doom_loop: None,
            content_digest: String::new(),
            previous_bundle: None,
            finding_fates: Vec::new(),
            suppressed_findings: Vec::new(),
            duplicates: 0,
            failures: Vec::new(),
            override_note: None,
            pages: Vec::new(),
            bundle: None,
            routing_override: None,
        }
    }
}

/// Runs the gate once, progress on stderr, and returns the whole record of the run.
pub async fn run(ctx: &Context, req: &VerifyRequest) -> Result<RunRecord, GateError> {
    let progress = output::progress::Progress::stderr(
        ctx.verbosity,
        output::style::Style {
            color: ctx.colors.stderr,
        },
    );
    let (events, dispatcher) = output::stream::start(
        vec![Box::new(progress)],
        config::heartbeat_override().unwrap_or(output::stream::HEARTBEAT),
    );
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
    let mut start = Start::now();
    let interrupt = Interrupt::listen();

    // Everything that can make this a usage or configuration error comes
    // first: nothing runs when the spec, the table or the key is wrong.
    let LoadedSpec { spec, digest } = load_spec(&req.spec_path)?;
    start.spec_digest = digest.to_hex();
    let policy = &spec.policy;
    let mut routing = Routing::resolve(
        req.routing.as_deref(),
        req.spec_path.parent().unwrap_or(&ctx.workspace),
    )?;
    // The self-guard compares the table the workspace holds with the base's:
    // an operator's override is not part of the change.
    let local_routing = routing.clone();
    let routing_override = routing_override(&mut routing, req.offline).await;
    let prompts = load_prompts(ctx, &routing)?;
    let store = attest::bundle_store(ctx)?;
    let (key, created_key) = attest::signing_key(ctx)?;
    attest::keep_state_out_of_git(ctx);
    events.emit(RunEvent::RunStarted {
        run_id: start.run_id.clone(),
        spec_id: spec.spec.id.clone(),
        started_at: start.started_at.clone(),
    });
    if let Some(path) = created_key {
        events.emit(RunEvent::Notice(format!(
            "gate: created a signing key at {}",
            path.display()
        )));
    }
    if let Some(status) = &routing_override {
        report_override(events, status);
    }

    // Held until the run is recorded: runs of one spec take their attempt
    // numbers one after another, on this machine or across runners.
    let (_series_lock, history) = series(ctx, &store, &spec, req, key.public_key(), events)?;
    let thresholds = Thresholds::from(policy);
    if let Some((run, doom)) = &history.escalated {
        // Nothing runs until a human starts a new series or overrides.
        let mut reasons = vec![format!(
            "the series of `{}` is escalated since run {run}; start a new series with \
             `gate verify --new-series` or let it through with `gate override {run}`",
            spec.spec.id
        )];
        if let Some(d) = doom {
            reasons.push(d.message.clone());
        }
        let mut record = start.bare(&spec, history.attempt, Verdict::Escalate, reasons);
        record.doom_loop.clone_from(doom);
        record.routing_override = routing_override;
        return Ok(record);
    }
    if let Some(d) = doom::over_budget(history.attempt, &history.failing, thresholds) {
        // The budget escalation is recorded, so the series stays escalated.
        let mut record = start.bare(
            &spec,
            history.attempt,
            Verdict::Escalate,
            vec![d.message.clone()],
        );
        record.doom_loop = Some(d);
        record.previous_bundle = history.previous.as_ref().map(|p| p.bundle_sha256.clone());
        record.routing_override = routing_override;
        if let Some(w) = finish(
            ctx,
            &store,
            &mut record,
            &key,
            &[],
            &routing,
            &prompts,
            policy,
            serde_json::json!([]),
            serde_json::json!([]),
        )? {
            events.emit(RunEvent::Warning(w));
        }
        return Ok(record);
    }
    if history.attempt > 1 {
        notice(
            events,
            &format!(
                "gate: verifying `{}`, attempt {} (run {})",
                spec.spec.id, history.attempt, start.run_id
            ),
        );
    }
    if let Some(why) = &history.previous_unusable {
        notice(
            events,
            &format!("gate: the previous attempt cannot be used ({why}); re-running everything"),
        );
    }

    let snapshot = harness::fingerprint(ctx, &spec, &req.own_files).await?;
    let base = req.base.clone().or_else(|| spec.spec.base.clone());
    let task_paths = InputGlobs::new(
        &spec
            .tasks
            .iter()
            .flat_map(|t| t.paths.iter())
            .collect::<Vec<_>>(),
    )
    .map_err(|e| GateError::Usage(e.to_string()))?;
    let mut changed = match &base {
        Some(base) => change::with_base(&ctx.workspace, base).await?,
        None => change::by_paths(&snapshot, &task_paths),
    };
    // The gate's own files are never the change, though git lists them as
    // untracked when nothing ignores them: the state directory (the signing
    // key, the ledger, bundles) and what this run writes its results to.
    let own_paths: Vec<PathBuf> = req
        .own_files
        .iter()
        .cloned()
        .chain(ctx.state_inside_workspace())
        .collect();
    change::leave_out(
        &mut changed,
        &change::relative_to(&ctx.workspace, &own_paths),
    );

    // House rules are configuration: a broken rules file stops the run
    // before anything runs.
    let rule_files: Vec<String> = snapshot
        .regular_files()
        .filter(|p| rules::discover::is_rules_file(p))
        .map(str::to_owned)
        .collect();
    let rule_set = RuleSet::load(&ctx.workspace, &rule_files)?;

    let mut plan = plan::first_attempt(&spec, &snapshot);
    // The pages the change touches are looked at in a browser, as checks.
    let shots_dir = pages::shots_dir(&ctx.state_dir, &start.run_id);
    plan.items.extend(pages::plan_items(
        &spec,
        &snapshot,
        &changed,
        &pages::Surroundings {
            out_dir: shots_dir.clone(),
            browser: config::chromium(),
            axe: config::axe_core(&ctx.workspace),
            env: &config::env_value,
        },
    ));
    retry::delta::apply(&mut plan, &spec, history.previous.as_ref(), req.full);
    events.emit(RunEvent::Planned(planned_events(&plan)));
    let reruns = plan.items.iter().filter(|i| i.decision.runs()).count();
    if history.previous.is_some() && !req.full {
        notice(
            events,
            &format!(
                "gate: re-running {reruns} of {} items; carrying {} forward",
                plan.items.len(),
                plan.items.len() - reruns
            ),
        );
    }
    let mut secret_names = routing.key_variables();
    secret_names.extend(pages::credential_variables(&spec));
    let redact = config::secret_env_values(&secret_names);
    let redactor = gate_harness::secrets::Redactor::new(&redact);
    let harness::Harnessed {
        results,
        interrupted,
    } = harness::run(harness::HarnessInput {
        ctx,
        events,
        spec: &spec,
        plan: &plan,
        snapshot: &snapshot,
        has_base: base.is_some(),
        changed: &changed,
        redact,
        interrupt: &interrupt,
    })
    .await?;

    let (page_records, page_shots) = pages::collect(&spec, &changed, &results, &shots_dir);

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
        let stage = review::ReviewStage {
            ctx,
            spec: &spec,
            snapshot: &snapshot,
            changed: &changed,
            tier: &tier,
            routing: &routing,
            prompts: &prompts,
            results: &results,
            plan: &plan,
            run_id: &start.run_id,
            previous: history.previous.as_ref(),
            full: req.full,
            rule_set: &rule_set,
            events,
            pages: &page_shots,
            redactor: &redactor,
        };
        tokio::select! {
            review = stage.run() => review?,
            () = interrupt.wait() => ReviewOutput::interrupted(),
        }
    };
    if let Some(reason) = &review.record.reason {
        events.emit(RunEvent::ReviewSkipped {
            reason: reason.clone(),
        });
    }

    let guard_findings = match &base {
        Some(base) => {
            guard::check(&ctx.workspace, base, &req.spec_path, &spec, &local_routing).await
        }
        None => Vec::new(),
    };

    let (mut checks, mut criteria) = records::records(
        &spec,
        &plan,
        &results,
        &review.record,
        interrupted,
        history.previous.as_ref(),
    );
    // Commands and texts come from the spec: a key pasted into one must not
    // reach the bundle either (captured output is redacted by the harness).
    for c in &mut checks {
        c.command = redactor.redact(&c.command);
    }
    for c in &mut criteria {
        c.command = c.command.as_deref().map(|t| redactor.redact(t));
        c.text = redactor.redact(&c.text);
    }
    records::apply_judgements(&mut criteria, &review.judgements);

    // Finding memory: ids kept across attempts, dismissals, resolutions.
    let earlier: Vec<Finding> = history
        .previous
        .as_ref()
        .map(|p| p.record.findings.clone())
        .unwrap_or_default();
    let earlier_digests = history
        .previous
        .as_ref()
        .map(|p| p.subjects.clone())
        .unwrap_or_default();
    let file_digest = |f: &str| snapshot.get(f).map(|e| e.digest.to_hex());
    let remembered = memory::remember(
        review.findings,
        &earlier,
        &history.dismissed,
        &earlier_digests,
        &file_digest,
    );
    let mut findings = remembered.findings;
    findings.extend(guard_findings);
    sort_worst_first(&mut findings);

    let (mut verdict, mut verdict_reasons) = verdict::decide(&verdict::Inputs {
        checks: &checks,
        criteria: &criteria,
        review: &review.record,
        findings: &findings,
        on_review_unavailable: policy.on_review_unavailable,
        review_incomplete: &review.incomplete,
    });

    let mut record = start.bare(&spec, history.attempt, verdict, Vec::new());
    record.base = base;
    record.tier = tier.tier;
    record.tier_reason = tier.reason;
    record.changed_files = changed;
    record.files_fingerprinted = snapshot.len();
    record.checks = checks;
    record.criteria = criteria;
    record.review = review.record;
    record.findings = findings;
    record.content_digest = snapshot.digest_of(None).to_hex();
    record.previous_bundle = history.previous.as_ref().map(|p| p.bundle_sha256.clone());
    record.finding_fates = remembered.fates;
    record.suppressed_findings = remembered.suppressed;
    record.duplicates = review.duplicates;
    record.failures = retry::failures(&record);
    record.routing_override = routing_override;
    record.pages = page_records;

    // The doom-loop detector reads this failing attempt with the series'.
    if verdict == Verdict::Fail {
        let mut failing = history.failing.clone();
        failing.push(FailingAttempt {
            attempt: history.attempt,
            failures: record.failures.iter().cloned().collect(),
        });
        if let Some(d) = doom::detect(&failing, thresholds) {
            verdict = Verdict::Escalate;
            verdict_reasons.insert(0, d.message.clone());
            record.doom_loop = Some(d);
        }
    }
    // Break glass: a human's override of this spec on this very content.
    if verdict != Verdict::Pass
        && let Some(o) = history
            .overrides
            .iter()
            .find(|o| o.content_digest == record.content_digest)
    {
        verdict_reasons.insert(
            0,
            format!("overridden by {} (run {}): {}", o.by, o.run_id, o.reason),
        );
        record.override_note = Some(format!("{}: {}", o.by, o.reason));
        record.overridden = true;
        verdict = Verdict::Pass;
    }
    record.verdict = verdict;
    record.verdict_reasons = verdict_reasons;
    record.duration_ms = millis(start.clock.elapsed());

    let evidence_started = Instant::now();
    let mut names = records::subject_names(
        ctx,
        &config_files(req, &routing, &prompts),
        &spec,
        &snapshot,
        &record,
    );
    names.extend(rule_set.files.iter().map(|(path, _)| path.clone()));
    names.sort();
    names.dedup();
    let rules_digests = serde_json::Value::Array(
        rule_set
            .files
            .iter()
            .map(|(path, bytes)| serde_json::json!({"file": path, "blake3": Digest::of(bytes).to_hex()}))
            .collect(),
    );
    if let Some(w) = finish(
        ctx,
        &store,
        &mut record,
        &key,
        &names,
        &routing,
        &prompts,
        policy,
        records::plan_json(&plan),
        rules_digests,
    )? {
        events.emit(RunEvent::Warning(w));
    }
    // What the evidence step adds to a run (bench/evidence.sh reads this).
    tracing::info!(
        target: "gate::timings",
        run_ms = millis(start.clock.elapsed()),
        evidence_ms = millis(evidence_started.elapsed()),
        "run timings"
    );
    Ok(record)
}

/// How long a run waits for another run of its spec to finish.
const SERIES_WAIT: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// Takes the spec's series lock (waiting for a run of the same spec that
/// holds it) and reads the series so far. An unreachable ledger means a
/// first attempt without a lock (and the run will say it was not recorded).
fn series(
    ctx: &Context,
    store: &BundleStore,
    spec: &Spec,
    req: &VerifyRequest,
    public: &gate_evidence::PublicKey,
    events: &EventSink,
) -> Result<(Option<gate_evidence::ledger::SeriesLock>, History), GateError> {
    let fresh = History {
        attempt: 1,
        ..History::default()
    };
    // Opening creates a missing SQLite ledger: the lock needs it, and so
    // does the run's row a moment later.
    let mut ledger = match attest::open_ledger(ctx) {
        Ok(ledger) => ledger,
        Err(e) if e.exit_code() == crate::exit::USAGE => return Err(e),
        Err(e) => {
            output::stderr(&format!(
                "gate: cannot read the attempt history ({e}); treating this as a first attempt"
            ));
            return Ok((None, fresh));
        }
    };
    let lock = lock_series(&ledger, &spec.spec.id, events).or_else(|e| match e {
        GateError::Ledger(e) => {
            notice(
                events,
                &format!("gate: cannot lock the attempt series ({e})"),
            );
            Ok(None)
        }
        other => Err(other),
    })?;
    // What earlier runs on this machine left unrecorded goes in first, so
    // their attempts count in the series this run continues.
    attest::import_spooled(ctx, store, &mut ledger, public, None);
    let found = retry::history(
        &ledger,
        store,
        &spec.spec.id,
        req.new_series,
        spec.policy.max_attempts,
        std::slice::from_ref(public),
    );
    let history = found.unwrap_or_else(|e| {
        output::stderr(&format!(
            "gate: cannot read the attempt history ({e}); treating this as a first attempt"
        ));
        fresh
    });
    Ok((lock, history))
}

/// The spec's series lock, after waiting (with a notice) for a run of the
/// same spec that holds it.
fn lock_series(
    ledger: &gate_evidence::Ledger,
    spec_id: &str,
    events: &EventSink,
) -> Result<Option<gate_evidence::ledger::SeriesLock>, GateError> {
    if let Some(lock) = ledger.lock_series(spec_id, std::time::Duration::ZERO)? {
        return Ok(Some(lock));
    }
    notice(
        events,
        &format!("gate: another run of `{spec_id}` is in progress; waiting for it to be recorded"),
    );
    ledger
        .lock_series(spec_id, SERIES_WAIT)?
        .map(Some)
        .ok_or_else(|| {
            GateError::Unavailable(format!(
                "another run of `{spec_id}` has held its attempt series for {} minutes; not starting",
                SERIES_WAIT.as_secs() / 60
            ))
        })
}

/// The gate's own configuration files, which the bundle names as subjects.
fn config_files<'a>(
    req: &'a VerifyRequest,
    routing: &'a Routing,
    prompts: &'a Prompts,
) -> Vec<&'a Path> {
    let mut files: Vec<&Path> = vec![req.spec_path.as_path()];
    if let crate::routing::Origin::File(p) = &routing.origin {
        files.push(p);
    }
    files.extend(prompts.files());
    files
}

/// Seals the run into its bundle and appends its ledger row.
#[allow(clippy::too_many_arguments)]
fn finish(
    ctx: &Context,
    store: &BundleStore,
    record: &mut RunRecord,
    key: &gate_evidence::SigningKey,
    subject_names: &[String],
    routing: &Routing,
    prompts: &Prompts,
    policy: &gate_specs::Policy,
    plan: serde_json::Value,
    rules: serde_json::Value,
) -> Result<Option<String>, GateError> {
    let extra = attest::PredicateExtra {
        policy: serde_json::to_value(policy).unwrap_or_default(),
        routing_origin: routing.origin.to_string(),
        routing_digest: routing.digest().to_hex(),
        routing_override: record.routing_override.clone(),
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
        rules,
        plan,
        previous_bundle: record.previous_bundle.clone(),
    };
    let entry_extra = attest::ledger_extra(record);
    let subjects = attest::subjects(&ctx.workspace, subject_names);
    Ok(
        attest::record_run(ctx, store, record, key, subjects, &extra, entry_extra)?.map(|why| {
            format!(
                "gate: this run was not recorded ({why}); the bundle is kept for `gate ledger import`"
            )
        }),
    )
}

/// Applies `GATE_ROUTING_URL`'s patch over the local table (unless offline)
/// and says what became of it.
async fn routing_override(routing: &mut Routing, offline: bool) -> Option<OverrideStatus> {
    let url = config::routing_url_env()?;
    Some(patch::apply_override(routing, &url, offline).await)
}

/// Says what became of the routing override: a warning when it failed (the
/// run uses the local table), a notice when it applied.
fn report_override(events: &EventSink, status: &OverrideStatus) {
    match (status.status.as_str(), &status.error) {
        ("failed", Some(why)) => events.emit(RunEvent::Warning(format!(
            "gate: routing override from {} not applied ({why}); using the local table",
            status.url
        ))),
        ("applied", _) => events.emit(RunEvent::Notice(format!(
            "gate: routing override from {} applied ({})",
            status.url,
            if status.changed.is_empty() {
                "no change".to_owned()
            } else {
                status.changed.join(", ")
            }
        ))),
        _ => {}
    }
}

/// The prompts in effect: built in, or as the routing table's `[prompts]` names them.
pub(crate) fn load_prompts(ctx: &Context, routing: &Routing) -> Result<Prompts, GateError> {
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

fn notice(events: &EventSink, line: &str) {
    events.emit(RunEvent::Notice(line.to_owned()));
}

/// The plan as events report it.
fn planned_events(plan: &plan::Plan) -> Vec<PlannedEvent> {
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

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What a run's dispositions add to its ledger row.
pub fn dispositions(record: &RunRecord) -> serde_json::Value {
    let of = |d: Disposition| -> Vec<&str> {
        record
            .finding_fates
            .iter()
            .filter(|f| f.disposition == d)
            .map(|f| f.id.as_str())
            .collect()
    };
    serde_json::json!({"resolved": of(Disposition::Resolved), "superseded": of(Disposition::Superseded)})
}
