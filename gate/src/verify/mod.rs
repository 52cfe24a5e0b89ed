//! `gate verify`: one gate run, as the stages it goes through.
//!
//! [`run_with`] reads like the list: set-up (`setup`: spec, table, prompts,
//! store, key, isolation) → trust (`trust`: the base resolved, the
//! self-guard) → series (here: the lock and the history; `escalated` when
//! the series decides nothing) → survey (`survey`: fingerprint, change,
//! house rules, verifiers, glob coverage) → plan (`planning`) → runs
//! (`exercise`: the base's, then the change's, in `harness`) → mutation
//! scoring under `[policy] mutants` (`mutation`) → tier →
//! review (`review`) → decision (`decide`: records, memory, findings, the
//! verdict with its doom loop and override from `crate::verdict`) → seal
//! (`seal`: bundle and ledger row). `start` holds what each stage reads;
//! `tested` what the changed files held before the items ran, for review
//! and the seal; `planted` the set-up's refusal of state git tracks;
//! `caches` how `records` values the regenerable caches an item read.

mod caches;
mod decide;
mod escalated;
mod exercise;
mod harness;
mod mutation;
mod planning;
mod planted;
mod records;
mod review;
mod seal;
mod setup;
mod stage;
mod start;
mod survey;
mod tested;
mod trust;

use gate_evidence::store::BundleStore;
use gate_review::record::millis;
use gate_review::tier::TierDecision;
use gate_specs::{InputGlobs, Spec};

use crate::attest;
use crate::config::Context;
use crate::errors::GateError;
use crate::events::{EventSink, Note, RunEvent};
use crate::interrupt::Interrupt;
use crate::record::RunRecord;
use crate::retry::{self, History};

use setup::Setup;
pub(crate) use setup::{isolate, load_prompts, never_env};
use stage::Stage;
use start::Start;
pub(crate) use start::{VerifyRequest, load_spec};
use trust::Trust;

/// Runs the gate once, reporting what happens to `events`, and returns the
/// whole record of the run: the stages in their order.
pub(crate) async fn run_with(
    ctx: &Context,
    req: &VerifyRequest,
    events: &EventSink,
) -> Result<RunRecord, GateError> {
    let mut start = Start::now();
    let interrupt = Interrupt::listen();
    // Everything that can make this a usage or configuration error comes
    // first: nothing runs when the spec, the table or the key is wrong.
    let setup = setup::load(ctx, req, &mut start).await?;
    let trust = trust::resolve(ctx, req, &setup).await?;
    let key = retry::series::choose(
        req.series.as_deref(),
        &ctx.env,
        trust.head.branch.as_deref(),
    )?;
    announce(events, &start, &setup, &trust);
    // Held until the run is recorded: runs of one spec take their attempt
    // numbers one after another, on this machine or across runners.
    let (_series_lock, history) = series(
        ctx,
        &setup.store,
        &setup.spec,
        req,
        retry::Scope {
            spec_id: &setup.spec.spec.id,
            series: key.as_ref(),
            base: trust.base.as_deref(),
        },
        setup.key.public_key(),
        events,
    )?;
    let run = Stage {
        ctx,
        req,
        events,
        start: &start,
        setup: &setup,
        trust: &trust,
        history: &history,
    };
    if let Some(record) = escalated::short_circuit(&run)? {
        return Ok(record);
    }
    say_attempt(events, &history);
    let (survey, launcher) = survey::survey(&run).await?;
    let mut planned = planning::plan(&run, &survey);
    let mut exercised =
        exercise::exercise(&run, &survey, &mut planned, launcher, &interrupt).await?;
    // Boxed: the scoring's future is large, and only some runs await it.
    exercised.mutants = Box::pin(mutation::score(
        &run, &survey, &planned, &exercised, &interrupt,
    ))
    .await;
    let tier = tier_of(&setup.spec, &survey.changed)?;
    let review =
        review::review_or_skip(&run, &survey, &planned, &exercised, &tier, &interrupt).await?;
    let tested = std::mem::take(&mut exercised.tested);
    let mut record = decide::decide(&run, &survey, &planned, exercised, tier, review);
    record.duration_ms = millis(start.clock.elapsed());
    seal::seal(&run, &survey, &planned, &tested, &mut record)?;
    Ok(record)
}

/// The run's start, and what it should know of its set-up: a self-guard
/// that is off, a run that is not isolated, a key just made, an override.
fn announce(events: &EventSink, start: &Start, setup: &Setup, trust: &Trust) {
    events.emit(RunEvent::RunStarted {
        run_id: start.run_id.clone(),
        spec_id: setup.spec.spec.id.clone(),
        started_at: start.started_at.clone(),
    });
    if let (Some(_), Some(why)) = (&trust.base, &trust.self_guard.reason) {
        events.emit(RunEvent::Note(Note::SelfGuardOff {
            reason: why.clone(),
        }));
    }
    let isolation = &setup.isolation;
    if let Some(why) = &isolation.record.reason {
        let reason = why.clone();
        events.emit(RunEvent::Note(if isolation.record.unisolated() {
            Note::Unisolated { reason }
        } else {
            Note::IsolationCaveat { reason }
        }));
    }
    for why in &isolation.warnings {
        events.emit(RunEvent::Note(Note::IsolationCaveat {
            reason: why.clone(),
        }));
    }
    if let Some(path) = &setup.created_key {
        events.emit(RunEvent::Note(Note::KeyCreated {
            path: path.display().to_string(),
        }));
    }
    if let Some(status) = &setup.routing_override {
        setup::report_override(events, status);
    }
}

/// Which attempt this is, and whether the previous one can be used.
fn say_attempt(events: &EventSink, history: &History) {
    if history.attempt > 1 {
        // The run's start already said "verifying": this says which attempt.
        events.emit(RunEvent::Note(Note::Attempt {
            attempt: history.attempt,
        }));
    }
    if let Some(why) = &history.previous_unusable {
        events.emit(RunEvent::Note(Note::PreviousUnusable {
            reason: why.clone(),
        }));
    }
}

/// The risk tier: tasks × criteria, lifted by sensitive paths.
fn tier_of(spec: &Spec, changed: &[String]) -> Result<TierDecision, GateError> {
    let sensitive = InputGlobs::new(&spec.policy.sensitive_paths)
        .map_err(|e| GateError::Usage(e.to_string()))?;
    Ok(gate_review::tier::decide(
        spec.tasks.len(),
        spec.criteria_count(),
        &spec.policy,
        &sensitive,
        changed,
    ))
}

/// How long a run waits for another run of its spec to finish.
const SERIES_WAIT: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// Chooses the run's series (its key), takes the spec's series lock
/// (waiting for a run of the same spec, in any series, that holds it: an
/// escalation is the spec's) and reads the series so far. An unreachable
/// ledger means a first attempt without a lock (and the run will say it
/// was not recorded).
fn series(
    ctx: &Context,
    store: &BundleStore,
    spec: &Spec,
    req: &VerifyRequest,
    scope: retry::Scope<'_>,
    public: &gate_evidence::PublicKey,
    events: &EventSink,
) -> Result<(Option<gate_evidence::ledger::SeriesLock>, History), GateError> {
    let fresh = History {
        series: scope.series.cloned(),
        attempt: 1,
        ..History::default()
    };
    // Opening creates a missing SQLite ledger: the lock needs it, and so
    // does the run's row a moment later.
    let mut ledger = match attest::open_ledger(ctx) {
        Ok(ledger) => ledger,
        Err(e) if e.exit_code() == crate::exit::USAGE => return Err(e),
        Err(e) => {
            events.emit(RunEvent::Note(Note::HistoryUnreadable {
                reason: e.to_string(),
            }));
            return Ok((None, fresh));
        }
    };
    let lock = lock_series(&ledger, &spec.spec.id, events).or_else(|e| match e {
        GateError::Ledger(e) => {
            events.emit(RunEvent::Note(Note::SeriesUnlocked {
                reason: e.to_string(),
            }));
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
        scope,
        req.new_series,
        spec.policy.max_attempts,
        std::slice::from_ref(public),
    );
    let mut history = found.unwrap_or_else(|e| {
        events.emit(RunEvent::Note(Note::HistoryUnreadable {
            reason: e.to_string(),
        }));
        fresh
    });
    // The reports accepted before are the spec's on its base, whatever the
    // series (and however `--new-series` starts one).
    history.accepted_reports = crate::task_reports::remembered(
        &ledger,
        store,
        (scope.spec_id, scope.base),
        std::slice::from_ref(public),
        history.previous.as_ref(),
    )
    .unwrap_or_else(|e| {
        tracing::warn!(error = %e, "the spec's earlier runs are unreadable: only the series' \
            previous attempt tells a stale report");
        history
            .previous
            .as_ref()
            .map(|p| p.record.accepted_reports.clone())
            .unwrap_or_default()
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
    events.emit(RunEvent::Note(Note::SeriesBusy {
        spec_id: spec_id.to_owned(),
    }));
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
