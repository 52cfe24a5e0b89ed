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
use crate::git::Git;
use crate::interrupt::Interrupt;
use crate::isolation::{self, Isolation};
use crate::output;
use crate::plan;
use crate::record::{
    FORMAT_VERSION, Finding, IsolationRecord, Reason, ReasonKind, ReviewRecord, RunRecord,
    SelfGuard, Tier, Verdict, millis,
};
use crate::retry::doom::{self, FailingAttempt, Thresholds};
use crate::retry::memory;
use crate::retry::{self, History};
use crate::review::ReviewOutput;
use crate::review::coordinator::sort_worst_first;
use crate::review::prompts::Prompts;
use crate::routing::Routing;
use crate::routing::patch::{self, OverrideStatus};
use crate::rules::RuleSet;
use crate::{attest, base_runs, change, coverage, guard, pages, rules, tier, verdict, verifiers};

/// What `gate verify` was asked to do, resolved.
#[derive(Debug, Clone)]
pub(crate) struct VerifyRequest {
    /// The spec file.
    pub spec_path: PathBuf,
    /// `--base`, which wins over the spec's `base`.
    pub base: Option<String>,
    /// `--full`.
    pub full: bool,
    /// `--new-series`.
    pub new_series: bool,
    /// `--no-base-runs`.
    pub no_base_runs: bool,
    /// `--offline`.
    pub offline: bool,
    /// `--routing`.
    pub routing: Option<PathBuf>,
    /// The files this run writes its results to (see
    /// [`crate::output::own_files`]): left out of the workspace it verifies.
    pub own_files: Vec<PathBuf>,
    /// The operator's sandbox floor, and where it came from.
    pub sandbox: (gate_specs::SandboxMode, config::Source),
}

/// A spec, loaded: its parsed form and the bytes it was parsed from.
#[derive(Debug, Clone)]
pub(crate) struct LoadedSpec {
    /// The parsed, validated spec.
    pub spec: Spec,
    /// blake3 of the file's bytes.
    pub digest: Digest,
    /// The text it was parsed from (findings about the spec point into it).
    pub text: String,
}

/// Reads and validates the spec.
pub(crate) fn load_spec(path: &Path) -> Result<LoadedSpec, GateError> {
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
        text: text.to_owned(),
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
    fn bare(&self, spec: &Spec, attempt: u32, verdict: Verdict, reasons: Vec<Reason>) -> RunRecord {
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
            base_commit: None,
            isolation: IsolationRecord::default(),
            base_runs: None,
            verdict,
            verdict_reasons: reasons,
            qualifier: None,
            // Nothing of the workspace was looked at: no guard to speak of.
            self_guard: SelfGuard::default(),
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
            dropped_findings: Vec::new(),
            doom_loop: None,
            content_digest: String::new(),
            previous_bundle: None,
            finding_fates: Vec::new(),
            duplicates: 0,
            failures: Vec::new(),
            override_note: None,
            pages: Vec::new(),
            bundle: None,
            routing_override: None,
            protected_reference: std::collections::BTreeMap::new(),
        }
    }
}

/// Runs the gate once, reporting what happens to `events`, and returns the
/// whole record of the run.
pub(crate) async fn run_with(
    ctx: &Context,
    req: &VerifyRequest,
    events: &EventSink,
) -> Result<RunRecord, GateError> {
    let mut start = Start::now();
    let interrupt = Interrupt::listen();

    // Everything that can make this a usage or configuration error comes
    // first: nothing runs when the spec, the table or the key is wrong.
    let LoadedSpec {
        spec,
        digest,
        text: spec_text,
    } = load_spec(&req.spec_path)?;
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
    // Isolation before anything touches the workspace: the gate's own git
    // runs through it too. The state directory exists first, so it is
    // hidden from the start.
    attest::keep_state_out_of_git(ctx);
    std::fs::create_dir_all(&ctx.state_dir).map_err(|e| GateError::Workspace {
        path: ctx.state_dir.clone(),
        reason: format!("cannot create the state directory: {e}"),
    })?;
    let host_env = config::process_env();
    let isolation = Isolation::prepare(isolation::Setup {
        floor: req.sandbox.clone(),
        section: &spec.sandbox,
        workspace: &ctx.workspace,
        secret_paths: attest::secret_paths(ctx, &store),
        never_env: never_env(ctx, &spec, &routing, &store),
        host_env: &host_env,
    })
    .await?;
    let git = Git::new(isolation.tools());
    // Order of trust: the base is resolved to a commit, and the gate's own
    // inputs are compared with it, before anything of the workspace runs;
    // what an item later does to the repository's refs changes nothing.
    let base = req.base.clone().or_else(|| spec.spec.base.clone());
    let base_commit = match &base {
        Some(rev) => Some(change::resolve_base(&git, &ctx.workspace, rev).await?),
        None => None,
    };
    let spec_file = change::relative_to(&ctx.workspace, std::slice::from_ref(&req.spec_path))
        .pop()
        .unwrap_or_else(|| req.spec_path.display().to_string());
    let spec_then = match &base_commit {
        Some(commit) => Some(guard::spec_at_base(&git, commit, &req.spec_path).await),
        None => None,
    };
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
    let guard_findings = match &base_commit {
        Some(commit) => {
            guard::check(
                &git,
                &ctx.workspace,
                commit,
                &req.spec_path,
                (&spec, base_spec.as_ref()),
                &local_routing,
            )
            .await
        }
        None => Vec::new(),
    };
    events.emit(RunEvent::RunStarted {
        run_id: start.run_id.clone(),
        spec_id: spec.spec.id.clone(),
        started_at: start.started_at.clone(),
    });
    if let (Some(_), Some(why)) = (&base, &self_guard.reason) {
        events.emit(RunEvent::Warning(format!(
            "gate: the self-guard is off: {why}"
        )));
    }
    if let Some(why) = &isolation.record.reason {
        events.emit(RunEvent::Warning(if isolation.record.unisolated() {
            format!("gate: what this run starts for the workspace runs unisolated: {why}")
        } else {
            format!("gate: {why}")
        }));
    }
    for why in &isolation.warnings {
        events.emit(RunEvent::Warning(format!("gate: {why}")));
    }
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
        let mut reasons = vec![Reason::new(
            ReasonKind::DoomLoop,
            run,
            Verdict::Escalate,
            format!(
                "the series of `{}` is escalated since run {run}; start a new series with \
                 `gate verify --new-series` or let it through with `gate override {run}`",
                spec.spec.id
            ),
        )];
        if let Some(d) = doom {
            reasons.push(doom_reason(d));
        }
        let mut record = start.bare(&spec, history.attempt, Verdict::Escalate, reasons);
        (record.checks, record.criteria) = records::not_run(
            &spec,
            "not run: the series is escalated (start a new series or override)",
        );
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
            vec![doom_reason(&d)],
        );
        (record.checks, record.criteria) =
            records::not_run(&spec, "not run: the attempt budget is spent");
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
        // The run's start already said "verifying": this says which attempt.
        notice(
            events,
            &format!("gate: attempt {} of the series", history.attempt),
        );
    }
    if let Some(why) = &history.previous_unusable {
        notice(
            events,
            &format!("gate: the previous attempt cannot be used ({why}); re-running everything"),
        );
    }

    let snapshot = harness::fingerprint(ctx, &spec, &req.own_files).await?;
    let task_paths = InputGlobs::new(
        &spec
            .tasks
            .iter()
            .flat_map(|t| t.paths.iter())
            .collect::<Vec<_>>(),
    )
    .map_err(|e| GateError::Usage(e.to_string()))?;
    let mut changed = match (&base, &base_commit) {
        (Some(base), Some(commit)) => change::with_base(&git, &ctx.workspace, base, commit).await?,
        _ => change::by_paths(&snapshot, &task_paths),
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

    // The exam out of the examinee's reach: verifiers compared with the
    // base (or the series' first attempt), and everything the gate reads
    // read-only to what it runs.
    let protection = verifiers::protect(verifiers::Inputs {
        spec: &spec,
        base_spec: base_spec.as_ref(),
        workspace: &ctx.workspace,
        snapshot: &snapshot,
        base: base_commit.as_deref().map(|c| (&git, c)),
        previous: history
            .previous
            .as_ref()
            .map(|p| &p.record.protected_reference)
            .filter(|r| base_commit.is_none() && !r.is_empty()),
        base_dir: isolation.base_dir(),
    })
    .await?;
    let mut read_only: Vec<PathBuf> = config_files(req, &routing, &prompts)
        .into_iter()
        .map(Path::to_path_buf)
        .collect();
    read_only.extend(
        rule_set
            .files
            .iter()
            .map(|(path, _)| ctx.workspace.join(path)),
    );
    read_only.push(ctx.workspace.join(".git"));
    read_only.extend(protection.read_only.iter().cloned());
    let launcher = isolation.items(read_only, protection.overlays.clone());
    if !protection.unprotected.is_empty() {
        events.emit(RunEvent::Warning(format!(
            "gate: {} run{} no file of the workspace, so nothing protects what decides {}: \
             name the files in `[spec] protected`",
            list_ids(&protection.unprotected),
            if protection.unprotected.len() == 1 {
                "s"
            } else {
                ""
            },
            if protection.unprotected.len() == 1 {
                "it"
            } else {
                "them"
            },
        )));
    }

    // What the spec's globs cover: one that matches no file fails the run;
    // with a base, changed files nothing of the spec names are a warning.
    let mut coverage_findings = coverage::unmatched_globs(
        &spec,
        &coverage::SpecSource {
            file: &spec_file,
            text: &spec_text,
            format: gate_specs::Format::from_path(&req.spec_path),
        },
        &snapshot,
    );
    let globs_unmatched = !coverage_findings.is_empty();
    if base.is_some() {
        let mut own = change::relative_to(
            &ctx.workspace,
            &config_files(req, &routing, &prompts)
                .into_iter()
                .map(Path::to_path_buf)
                .collect::<Vec<_>>(),
        );
        own.extend(rule_files.iter().cloned());
        coverage_findings.extend(coverage::uncovered_changes(
            &spec, &spec_file, &changed, &own,
        ));
    }

    let mut plan = plan::first_attempt(&spec, &snapshot);
    // Every page is planned: those the change touches are looked at in a
    // browser, as checks; the others are skipped, with why.
    let shots_dir = pages::shots_dir(&ctx.state_dir, &start.run_id);
    plan.items.extend(pages::plan_items(
        &spec,
        &snapshot,
        &changed,
        &pages::Surroundings {
            has_base: base.is_some(),
            out_dir: shots_dir.clone(),
            browser: config::chromium(),
            axe: config::axe_core(&ctx.workspace),
            env: &config::env_value,
        },
    ));
    retry::delta::apply(&mut plan, &spec, history.previous.as_ref(), req.full);
    let mut secret_names = routing.key_variables();
    secret_names.extend(pages::credential_variables(&spec));
    let redact = config::secret_env_values(&secret_names);
    let redactor = gate_harness::secrets::Redactor::new(&redact);
    events.emit(RunEvent::Planned(planned_events(&plan, &spec, &redactor)));
    let reruns = plan.items.iter().filter(|i| i.decision.runs()).count();
    let carried = plan.items.iter().filter(|i| i.decision.carries()).count();
    if history.previous.is_some() && !req.full {
        notice(
            events,
            &format!(
                "gate: re-running {reruns} of {} items; carrying {carried} forward",
                reruns + carried
            ),
        );
    }
    // The base first: nothing of the change has run yet, and the base's
    // checkout is gone before anything of it does.
    let mut base_ledger = if base_commit.is_some() {
        attest::open_ledger(ctx).ok()
    } else {
        None
    };
    let base_results = base_runs::decide(base_runs::Inputs {
        spec: &spec,
        plan: &plan,
        workspace: &ctx.workspace,
        snapshot: &snapshot,
        base: base_commit.as_deref().map(|c| (&git, c)),
        turned_off: req.no_base_runs,
        isolation: &isolation,
        ledger: base_ledger.as_mut(),
        run_id: &start.run_id,
        redact: redact.clone(),
        interrupt: &interrupt,
        output_cap: usize::try_from(policy.output_cap_bytes).unwrap_or(usize::MAX),
        events,
    })
    .await?;
    drop(base_ledger);
    if let Some(commit) = &base_commit {
        let problems = base_results.spec_problems(&spec, commit);
        if !problems.is_empty() {
            return Err(GateError::Usage(format!(
                "{spec_file}: {}",
                problems.join("; ")
            )));
        }
    }
    let harnessed = harness::run(harness::HarnessInput {
        ctx,
        events,
        spec: &spec,
        plan: &plan,
        snapshot: &snapshot,
        has_base: base.is_some(),
        changed: &changed,
        redact,
        interrupt: &interrupt,
        launcher,
        required: &protection.required,
        run_clock: start.clock,
    })
    .await?;
    let (results, interrupted) = (&harnessed.results, harnessed.interrupted);
    // A verifier a `run` names that did not exist when its item was to
    // start is the spec's fault, not a failure to hand the agent.
    if let Some(why) = results.values().find_map(|r| r.spec_error.clone()) {
        return Err(GateError::Usage(format!("{spec_file}: {why}")));
    }
    // What the items changed of the fingerprinted workspace.
    let after = harness::fingerprint(ctx, &spec, &req.own_files).await?;
    let tampered = tamper_findings(&snapshot, &after, &spec_file, &protection, &rule_set);

    let (page_records, page_shots) = pages::collect(&spec, &changed, results, &shots_dir);

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
    } else if globs_unmatched {
        ReviewOutput::skipped("a glob of the spec matches no file; no model is asked until it does")
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
            results,
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

    let (mut checks, mut criteria) = records::records(
        &spec,
        &plan,
        &harnessed,
        &review.record,
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
    let base_findings = base_runs::apply(
        &mut criteria,
        &base_results,
        &spec_file,
        base_commit.as_deref(),
    );

    // Finding memory: ids kept across attempts, dismissals, resolutions.
    // The gate's own findings are decided afresh each run, never remembered.
    let earlier: Vec<Finding> = history
        .previous
        .as_ref()
        .map(|p| {
            p.record
                .findings
                .iter()
                .filter(|f| f.role != guard::GUARD_ROLE)
                .cloned()
                .collect()
        })
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
    findings.extend(protection.findings);
    findings.extend(tampered);
    findings.extend(coverage_findings);
    findings.extend(base_findings);
    sort_worst_first(&mut findings);

    let decision = verdict::decide(&verdict::Inputs {
        checks: &checks,
        criteria: &criteria,
        review: &review.record,
        findings: &findings,
        on_review_unavailable: policy.on_review_unavailable.for_tier(tier.tier.as_str()),
        review_incomplete: &review.incomplete,
    });
    let (mut verdict, mut verdict_reasons) = (decision.verdict, decision.reasons);

    let mut record = start.bare(&spec, history.attempt, verdict, Vec::new());
    record.base = base;
    record.base_commit = base_commit;
    record.isolation = isolation.record.clone();
    record.base_runs = base_results.record;
    record.protected_reference = protection.reference;
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
    let mut dropped = review.dropped;
    dropped.extend(remembered.suppressed);
    record.duplicates = dropped
        .iter()
        .filter(|f| f.lineage.by == Some(crate::record::FateBy::Dedupe))
        .count();
    record.dropped_findings = dropped;
    record.failures = retry::failures(&record);
    record.routing_override = routing_override;
    record.pages = page_records;
    record.qualifier = decision.qualifier;
    record.self_guard = self_guard;

    // The doom-loop detector reads this failing attempt with the series'.
    if verdict == Verdict::Fail {
        let mut failing = history.failing.clone();
        failing.push(FailingAttempt {
            attempt: history.attempt,
            failures: record.failures.iter().cloned().collect(),
        });
        if let Some(d) = doom::detect(&failing, thresholds) {
            verdict = Verdict::Escalate;
            verdict_reasons.insert(0, doom_reason(&d));
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
            Reason::new(
                ReasonKind::Override,
                &o.run_id,
                Verdict::Pass,
                format!("overridden by {} (run {}): {}", o.by, o.run_id, o.reason),
            ),
        );
        record.override_note = Some(format!("{}: {}", o.by, o.reason));
        record.overridden = true;
        record.qualifier = None;
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

/// Findings for fingerprinted files that changed while the items ran:
/// critical for the spec, the gate's other inputs and protected verifiers
/// (which the sandbox keeps read-only, so only an unisolated run can change
/// them), a warning for the rest.
fn tamper_findings(
    before: &gate_evidence::Snapshot,
    after: &gate_evidence::Snapshot,
    spec_file: &str,
    protection: &verifiers::Protection,
    rule_set: &RuleSet,
) -> Vec<Finding> {
    let guarded = |path: &str| {
        path == spec_file
            || path == ".git"
            || rule_set.files.iter().any(|(p, _)| p == path)
            || protection.paths.iter().any(|p| {
                path.strip_prefix(p.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
    };
    before
        .entries()
        .filter(|(path, entry)| after.get(path).is_none_or(|now| now.digest != entry.digest))
        .map(|(path, _)| {
            let critical = guarded(path);
            let title = format!("`{path}` changed while the checks ran");
            Finding {
                id: crate::findings::finding_id(guard::GUARD_ROLE, path, &title),
                severity: if critical { "critical" } else { "warning" }.to_owned(),
                role: guard::GUARD_ROLE.to_owned(),
                file: path.to_owned(),
                line: None,
                title,
                detail: if critical {
                    "It is part of the exam the change is judged by; what the gate runs must not \
                     change it."
                        .to_owned()
                } else {
                    "What the gate ran changed a file the change is made of, so the run looked \
                     at something other than the change."
                        .to_owned()
                },
                confidence: 1.0,
                lineage: crate::record::Lineage::raised(
                    guard::GUARD_ROLE,
                    if critical { "critical" } else { "warning" },
                ),
            }
        })
        .collect()
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

/// The doom-loop detector's conclusion as a verdict reason.
fn doom_reason(d: &doom::DoomLoop) -> Reason {
    Reason::new(
        ReasonKind::DoomLoop,
        d.pattern.as_str(),
        Verdict::Escalate,
        d.message.clone(),
    )
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

/// "criterion `a`", "criteria `a`, `b`".
fn list_ids(ids: &[String]) -> String {
    let names: Vec<String> = ids.iter().map(|i| format!("`{i}`")).collect();
    format!(
        "{} {}",
        if ids.len() == 1 {
            "criterion"
        } else {
            "criteria"
        },
        names.join(", ")
    )
}

fn notice(events: &EventSink, line: &str) {
    events.emit(RunEvent::Notice(line.to_owned()));
}

/// The plan as events report it, each item with its task and (a
/// criterion) its text.
fn planned_events(
    plan: &plan::Plan,
    spec: &Spec,
    redactor: &gate_harness::secrets::Redactor,
) -> Vec<PlannedEvent> {
    let mut owner: std::collections::HashMap<String, (String, Option<String>)> = spec
        .criteria()
        .map(|(t, c)| (c.id.clone(), (t.id.clone(), Some(redactor.redact(&c.text)))))
        .collect();
    owner.extend(
        spec.tasks
            .iter()
            .filter(|t| t.tests.is_some())
            .map(|t| (Spec::tests_check_id(t), (t.id.clone(), None))),
    );
    plan.items
        .iter()
        .map(|i| {
            let (task, text) = owner.get(&i.id).cloned().unzip();
            PlannedEvent {
                id: i.id.clone(),
                kind: i.kind,
                judged: i.work.is_none(),
                task,
                text: text.flatten(),
                decision: serde_json::to_value(&i.decision).unwrap_or_default(),
            }
        })
        .collect()
}
