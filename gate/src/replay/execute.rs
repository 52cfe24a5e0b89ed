//! One replay: the candidate loaded, the selected runs' kept requests read
//! from the bundle store and reviewed again, the result scored and sealed
//! into a signed bundle of its own. No check or criterion runs, nothing of
//! the workspace is read, and no run's record, outcome or finding memory
//! changes.

use std::path::Path;
use std::time::{Duration, Instant};

use gate_evidence::ledger::ReplayEntry;
use gate_evidence::store::{BundleRef, BundleStore, Target};
use gate_evidence::{PublicKey, Statement, Subject, bundle};
use gate_review::events::EventSink;
use gate_review::record::millis;
use gate_review::replay::request::KeptRequest;
use gate_review::replay::score::{self, Case, Label, Reviewed};
use gate_review::replay::{self, Candidate};
use gate_review::review::breaker::{BreakerPolicy, Breakers};
use gate_review::review::prompts::{Prompt, Prompts};
use gate_review::review::slots::Slots;
use gate_review::routing::Routing;
use gate_scorecard::replays::ReplaySummary;

use super::keep;
use super::report::{
    FORMAT_VERSION, PromptDigest, REPLAY_PREDICATE_TYPE, ReplayReport, ReplayedRun, Routed,
    SkippedRun,
};
use super::select;
use crate::attest;
use crate::cli::{ReplayCandidate, ReplayLimits, ReplaySelection};
use crate::config::{self, Context, from_cwd};
use crate::errors::GateError;
use crate::output;
use crate::record::RunRecord;

/// The candidate's routing table and prompts: `--routing` (required), its
/// `[prompts]`, and each `<key>.md` in `--prompts` over them.
pub(crate) fn candidate(
    ctx: &Context,
    c: &ReplayCandidate,
) -> Result<(Routing, Prompts), GateError> {
    let Some(routing) = &c.routing else {
        return Err(GateError::Usage(
            "gate replay needs --routing FILE: the candidate routing table".to_owned(),
        ));
    };
    let routing = Routing::resolve(Some(&from_cwd(routing)), &ctx.workspace)?;
    let base = match &routing.origin {
        gate_review::routing::Origin::File(p) => p.parent().map(Path::to_path_buf),
        gate_review::routing::Origin::Builtin => None,
    }
    .unwrap_or_else(|| ctx.workspace.clone());
    let mut overrides = routing.table.prompts.clone();
    if let Some(dir) = &c.prompts {
        let dir = from_cwd(dir);
        if !dir.is_dir() {
            return Err(GateError::Usage(format!(
                "--prompts {}: not a folder",
                dir.display()
            )));
        }
        for prompt in Prompt::all() {
            let file = dir.join(format!("{}.md", prompt.key()));
            if file.is_file() {
                overrides.insert(prompt.key().to_owned(), file.display().to_string());
            }
        }
    }
    let prompts = Prompts::load(&overrides, &base).map_err(|e| GateError::Usage(e.to_string()))?;
    Ok((routing, prompts))
}

/// The table and prompts as a report names them.
pub(crate) fn digests(routing: &Routing, prompts: &Prompts) -> (Routed, Vec<PromptDigest>) {
    (
        Routed {
            origin: routing.origin.to_string(),
            blake3: routing.digest().to_hex(),
        },
        prompts
            .digests()
            .into_iter()
            .map(|(prompt, digest, _)| PromptDigest {
                prompt,
                blake3: digest.to_hex(),
            })
            .collect(),
    )
}

/// A run ready to replay.
struct Prepared {
    record: RunRecord,
    request: KeptRequest,
    bytes: Vec<u8>,
}

/// The run `row` records and its kept request, or why it cannot be replayed.
fn prepare(
    row: &gate_evidence::LedgerRow,
    store: &BundleStore,
    trusted: &[PublicKey],
) -> Result<Prepared, String> {
    let record = crate::vouch::row_run(row, store, trusted)
        .map_err(|e| format!("its bundle cannot be used: {e}"))?;
    let (request, bytes) =
        keep::read(store, record.review.request.as_ref()).map_err(|e| e.to_string())?;
    Ok(Prepared {
        record,
        request,
        bytes,
    })
}

/// What a replay may spend and how many runs it reviews at once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// US dollars the candidate may spend; a run whose estimate would pass
    /// it is not started.
    pub budget: Option<f64>,
    /// Runs reviewed at once.
    pub jobs: usize,
}

impl Limits {
    /// `--budget` and `--jobs` checked.
    pub(crate) fn checked(l: ReplayLimits) -> Result<Self, GateError> {
        if l.budget.is_some_and(|b| !(b.is_finite() && b >= 0.0)) {
            return Err(GateError::Usage(
                "--budget: give US dollars, 0 or more".to_owned(),
            ));
        }
        if l.jobs == 0 {
            return Err(GateError::Usage("--jobs: give 1 or more".to_owned()));
        }
        Ok(Self {
            budget: l.budget,
            jobs: l.jobs,
        })
    }
}

/// What the candidate has spent and has reserved for runs in flight.
#[derive(Debug, Default)]
struct Spend {
    spent: f64,
    reserved: f64,
}

/// A run replayed: its row, what it was rebuilt from, the candidate's review.
struct Replayed<'a> {
    row: &'a gate_evidence::LedgerRow,
    prepared: Prepared,
    out: gate_review::review::ReviewOutput,
}

/// Where prepared runs read their bundles and requests from, shared with
/// the blocking threads that read them.
struct Sources {
    store: BundleStore,
    trusted: Vec<PublicKey>,
}

/// Prepares and reviews each run with `with`, `limits.jobs` at a time (a
/// run's bundle and request are read on a blocking thread while earlier
/// runs' calls are in flight), each started only when its estimate fits
/// what is left of the budget; the results in the order of `rows`.
async fn review_all<'a>(
    rows: &'a [gate_evidence::LedgerRow],
    sources: &std::sync::Arc<Sources>,
    with: &Candidate<'_>,
    replay_id: &str,
    limits: Limits,
) -> Vec<Result<Replayed<'a>, SkippedRun>> {
    use futures::StreamExt as _;
    let spend = std::sync::Mutex::new(Spend::default());
    let total = rows.len();
    // Bundles and requests are read ahead of the calls (twice as many runs
    // as are reviewed at once), so a freed slot never waits on a read.
    let ready = futures::stream::iter(rows.iter().enumerate())
        .map(|(i, row)| {
            let sources = std::sync::Arc::clone(sources);
            let owned = row.clone();
            async move {
                let prepared = tokio::task::spawn_blocking(move || {
                    prepare(&owned, &sources.store, &sources.trusted)
                })
                .await
                .unwrap_or_else(|e| Err(format!("reading it stopped: {e}")));
                (i, row, prepared)
            }
        })
        .buffered(limits.jobs.max(1) * 2);
    let mut done: Vec<(usize, Result<Replayed<'a>, SkippedRun>)> = ready
        .map(|(i, row, prepared)| {
            let spend = &spend;
            async move {
                let skipped = |why: String| SkippedRun {
                    run_id: row.entry.run_id.clone(),
                    why,
                };
                let prepared = match prepared {
                    Ok(p) => p,
                    Err(why) => return (i, Err(skipped(why))),
                };
                let rebuilt = prepared.request.rebuild();
                let estimate = replay::estimated_usd(&rebuilt, with);
                if let Some(limit) = limits.budget {
                    let mut s = spend
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    if s.spent + s.reserved + estimate > limit {
                        let why = format!(
                            "--budget {limit}: its estimate, about ${estimate:.4}, would pass \
                             what is left (${:.4} spent, ${:.4} held by runs in flight)",
                            s.spent, s.reserved
                        );
                        return (i, Err(skipped(why)));
                    }
                    s.reserved += estimate;
                }
                output::stderr(&format!(
                    "replay: run {} ({} of {total})",
                    row.entry.run_id,
                    i + 1
                ));
                let out = replay::review(&rebuilt, with, replay_id, &EventSink::discard()).await;
                let cost = Reviewed::of(&out.record, &out.findings).cost_usd;
                let mut s = spend
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                s.reserved -= estimate.min(s.reserved);
                s.spent += cost;
                (i, Ok(Replayed { row, prepared, out }))
            }
        })
        .buffer_unordered(limits.jobs.max(1))
        .collect()
        .await;
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// Runs a replay of `selection` with `candidate`: its report (not yet
/// sealed) and the subjects its bundle names (each run's kept request).
pub(crate) async fn execute(
    ctx: &Context,
    selection: &ReplaySelection,
    candidate_args: &ReplayCandidate,
    limits: Limits,
    minimum: u64,
    plan_sha256: Option<String>,
) -> Result<(ReplayReport, Vec<Subject>), GateError> {
    let started = Instant::now();
    let started_at = chrono::Utc::now();
    let (routing, prompts) = candidate(ctx, candidate_args)?;
    let keys = config::provider_keys(&routing, &ctx.env);
    if keys.is_empty() {
        return Err(GateError::Usage(
            "the candidate routing table configures no provider whose key is set".to_owned(),
        ));
    }
    let defaults = gate_specs::Policy::default();
    let clients = gate_review::review::call::clients(
        &routing,
        &keys,
        Duration::from_secs(defaults.connect_timeout_s),
    )
    .map_err(|e| GateError::Usage(format!("cannot set up the model client: {e}")))?;
    // A replay's failures are its own: the shared breakers are neither read nor moved.
    let breakers = Breakers::in_memory(BreakerPolicy::with_cooldown(defaults.breaker_cooldown_s));
    let slots = Slots::new(&routing);
    let ledger = attest::open_existing_ledger(ctx)?;
    let store = attest::bundle_store(ctx)?;
    let trusted = attest::trusted_keys(ctx, &[])?;
    let outcomes = select::latest_outcomes(&ledger)?;
    let rows = select::rows(&ledger, selection, &outcomes)?;
    drop(ledger);
    let replay_id = format!("replay-{}", uuid::Uuid::now_v7());
    let with = Candidate {
        routing: &routing,
        prompts: &prompts,
        clients: &clients,
        breakers: &breakers,
        slots: &slots,
    };
    let mut skipped = Vec::new();
    let sources = std::sync::Arc::new(Sources { store, trusted });
    let (mut cases, mut runs, mut subjects) = (Vec::new(), Vec::new(), Vec::new());
    for replayed in review_all(&rows, &sources, &with, &replay_id, limits).await {
        let Replayed { row, prepared, out } = match replayed {
            Ok(r) => r,
            Err(skip) => {
                skipped.push(skip);
                continue;
            }
        };
        let run_id = row.entry.run_id.clone();
        let label = outcomes.get(&run_id).map(select::label);
        let case = Case {
            run_id: run_id.clone(),
            label: label.clone(),
            changed: prepared.request.changed_paths(),
            tier: prepared.request.tier.as_str().to_owned(),
            tasks: prepared.request.task_count(),
            baseline: Reviewed::of(&prepared.record.review, &prepared.record.findings),
            candidate: Reviewed::of(&out.record, &out.findings),
        };
        runs.push(ReplayedRun {
            run_id: run_id.clone(),
            spec_id: prepared.record.spec_id.clone(),
            tier: case.tier.clone(),
            outcome: label.as_ref().map(|l| match l {
                Label::Broken { .. } => "broken".to_owned(),
                Label::Fine => "fine".to_owned(),
            }),
            broken_files: match &label {
                Some(Label::Broken { files }) => files.clone(),
                _ => Vec::new(),
            },
            bundle_sha256: row.envelope_sha256.clone(),
            request_sha256: bundle::digest(&prepared.bytes),
            baseline: case.figures(|c| &c.baseline),
            candidate: case.figures(|c| &c.candidate),
        });
        subjects.push(Subject::from_bytes(
            format!("request/{run_id}"),
            &prepared.bytes,
        ));
        cases.push(case);
    }
    let (overall, strata) = score::score(&cases, minimum);
    let (routed, prompt_digests) = digests(&routing, &prompts);
    let report = ReplayReport {
        format_version: FORMAT_VERSION,
        replay_id,
        started_at: started_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        elapsed_ms: millis(started.elapsed()),
        routing: routed,
        prompts: prompt_digests,
        selection: selection.clone(),
        minimum_sample: minimum,
        budget_usd: limits.budget,
        plan_sha256,
        runs,
        skipped,
        baseline: overall.baseline,
        candidate: overall.candidate,
        agreement: overall.agreement,
        strata,
        targets: Vec::new(),
        bundle: None,
    };
    Ok((report, subjects))
}

/// Signs `report` (its `bundle` unset) into the replay's bundle, puts it in
/// the bundle store (into the ledger's kept bundles when that is the
/// store), sets `bundle` to where it went, and records the replay and its
/// scores' summary in the ledger (no run row: outside the chain).
pub(crate) fn seal(
    ctx: &Context,
    subjects: Vec<Subject>,
    report: &mut ReplayReport,
) -> Result<(), GateError> {
    report.bundle = None;
    let store = attest::bundle_store(ctx)?;
    let (key, _) = attest::signing_key(ctx)?;
    let predicate = serde_json::to_value(&*report).map_err(GateError::encode("replay"))?;
    let envelope = bundle::seal(
        &Statement::new(subjects, REPLAY_PREDICATE_TYPE, predicate),
        &key,
    );
    attest::refuse_linked_state(ctx)?;
    let at = tokio::task::block_in_place(|| -> Result<BundleRef, GateError> {
        let at = store.put(&report.replay_id, &envelope)?;
        if matches!(store.target(), Target::Ledger) {
            attest::open_ledger(ctx)?.put_bundle(&envelope)?;
        }
        Ok(at)
    })?;
    report.bundle = Some(match &at {
        BundleRef::File(path) => attest::display_path(ctx, path),
        other => other.to_string(),
    });
    let summary = summary_of(report);
    let entry = ReplayEntry {
        replay_id: report.replay_id.clone(),
        recorded_at: chrono::Utc::now(),
        routing: report.routing.origin.clone(),
        routing_blake3: report.routing.blake3.clone(),
        bundle_path: at.to_string(),
        envelope_sha256: bundle::digest(&envelope),
        summary: serde_json::to_value(&summary).map_err(GateError::encode("replay summary"))?,
    };
    tokio::task::block_in_place(|| {
        attest::open_ledger(ctx)?
            .add_replay(&entry)
            .map_err(GateError::from)
    })
}

/// The scores of `report` a ledger row keeps for `gate report`.
pub(crate) fn summary_of(report: &ReplayReport) -> ReplaySummary {
    ReplaySummary {
        runs: report.runs.len() as u64,
        skipped: report.skipped.len() as u64,
        baseline: report.baseline.clone(),
        candidate: report.candidate.clone(),
        agreement: report.agreement,
        strata: report.strata.clone(),
        plan_sha256: report.plan_sha256.clone(),
    }
}
