//! The plain-code stages: fingerprinting the workspace and running the
//! planned cross-checks and criteria in the harness.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use gate_evidence::snapshot::EntryKind;
use gate_evidence::{Snapshot, WalkOptions};
use gate_harness::{ItemResult, RunOptions, Status};
use gate_specs::Spec;

use crate::config::Context;
use crate::errors::GateError;
use crate::events::EventSink;
use crate::interrupt::Interrupt;
use crate::plan::{self, Plan};

/// Hashes every workspace file but the run's own outputs.
pub(super) async fn fingerprint(
    ctx: &Context,
    spec: &Spec,
    own_files: &[PathBuf],
) -> Result<Snapshot, GateError> {
    let opts = WalkOptions {
        state_dir: ctx.state_inside_workspace(),
        own_files: own_files.to_vec(),
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
        ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "fingerprinted the workspace"
    );
    Ok(snapshot)
}

/// The harness's results, and whether an interruption cut them short.
pub(super) struct Harnessed {
    /// Results by item id (only items this attempt ran).
    pub results: HashMap<String, ItemResult>,
    /// Whether an interruption (Ctrl-C, SIGTERM, SIGHUP) stopped the run.
    pub interrupted: bool,
    /// When each item that ran started, in milliseconds after the run started.
    pub started_ms: HashMap<String, u64>,
}

/// What the harness stage needs besides the plan.
pub(super) struct HarnessInput<'a> {
    pub ctx: &'a Context,
    pub events: &'a EventSink,
    pub spec: &'a Spec,
    pub snapshot: &'a Snapshot,
    pub has_base: bool,
    pub changed: &'a [String],
    pub redact: Vec<String>,
    pub interrupt: &'a Interrupt,
    pub required: &'a std::collections::BTreeMap<String, Vec<gate_harness::Requirement>>,
    /// When the run started: item start times are kept relative to it.
    pub run_clock: Instant,
}

/// A later round of the harness: the items to run now, and what the
/// rounds before gave (what passed there counts as passed for `after`).
pub(super) type Again<'a> = Option<(&'a BTreeSet<String>, &'a HashMap<String, ItemResult>)>;

/// Each item's launcher with its own private folders, by item id.
pub(super) type Launchers = HashMap<String, Arc<gate_harness::Launcher>>;

/// Makes the private folders of each item `running` says runs now that
/// starts a process and has none yet, into `made`: an item's folders are
/// made once per attempt (a carried item re-checked in a later round gets
/// its own then, and starts from what the items it runs after left); a
/// built-in check or a report read runs inside the gate and gets none.
pub(super) fn make_folders(
    plan: &Plan,
    isolation: &crate::isolation::Isolation,
    launcher: &gate_harness::Launcher,
    running: impl Fn(&str) -> bool,
    made: &mut Launchers,
) -> Result<(), GateError> {
    let items = crate::isolation::lineage::new_items(plan, running, |id| made.contains_key(id));
    let new = isolation
        .private_folders(launcher, &items, None, made)
        .map_err(GateError::Usage)?;
    made.extend(new);
    Ok(())
}

/// Runs what the plan runs; carried items count as passed for `after`
/// (skipped ones do not).
pub(super) async fn run(
    input: &HarnessInput<'_>,
    plan: &Plan,
    (launcher, launchers): (gate_harness::Launcher, &Launchers),
    again: Again<'_>,
) -> Result<Harnessed, GateError> {
    let HarnessInput {
        ctx,
        events,
        spec,
        snapshot,
        has_base,
        changed,
        ref redact,
        interrupt,
        required,
        run_clock,
    } = *input;
    let now = |id: &str| again.is_none_or(|(ids, _)| ids.contains(id));
    let items: Vec<_> = plan
        .items
        .iter()
        .filter(|i| i.decision.runs() && now(&i.id))
        .filter_map(|i| i.work.clone())
        .collect();
    let passed_before = |id: &str| {
        again.is_some_and(|(ids, earlier)| {
            !ids.contains(id) && earlier.get(id).is_some_and(|r| r.status == Status::Passed)
        })
    };
    let satisfied: HashSet<String> = plan
        .items
        .iter()
        .filter(|i| i.decision.carries() || passed_before(&i.id))
        .map(|i| i.id.clone())
        .collect();
    // With a base the built-in checks look at what the change touched (old
    // problems are not this change's); without one, at the whole workspace.
    let files: Vec<String> = if has_base {
        changed
            .iter()
            .filter(|f| snapshot.get(f).is_some_and(|e| e.kind == EntryKind::File))
            .cloned()
            .collect()
    } else {
        snapshot.regular_files().map(str::to_owned).collect()
    };
    let overlaid: Vec<std::path::PathBuf> = launcher
        .sandbox()
        .map(|s| s.overlays.iter().map(|o| o.target.clone()).collect())
        .unwrap_or_default();
    let opts = RunOptions {
        workspace: ctx.workspace.clone(),
        concurrency: std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
        output_cap: usize::try_from(spec.policy.output_cap_bytes).unwrap_or(usize::MAX),
        files: Arc::new(files),
        satisfied,
        redact: Arc::new(redact.clone()),
        launcher: Arc::new(launcher),
        launchers: Arc::new(launchers.clone()),
        requires: Arc::new(
            required
                .iter()
                .map(|(id, r)| (id.clone(), r.clone()))
                .collect(),
        ),
    };
    let (sink_tx, forward) = events.harness();
    // Start times are noted on the way to the sink (a report's suite time
    // is the wall time its items spanned, not the sum of theirs).
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<gate_harness::Event>();
    let note_starts = tokio::spawn(async move {
        let mut started = HashMap::new();
        while let Some(event) = rx.recv().await {
            if let gate_harness::Event::Started { id } = &event {
                started.insert(
                    id.clone(),
                    u64::try_from(run_clock.elapsed().as_millis()).unwrap_or(u64::MAX),
                );
            }
            let _ = sink_tx.send(event);
        }
        started
    });
    let interrupted = AtomicBool::new(false);
    let cancel = async {
        // An interruption stops every process group instead of leaving them behind.
        interrupt.wait().await;
        interrupted.store(true, Ordering::SeqCst);
    };
    let results = gate_harness::run(items, opts, Some(tx), cancel).await;
    touch(&overlaid);
    let started_ms = note_starts.await.unwrap_or_default();
    let _ = forward.await;
    let mut results: HashMap<String, ItemResult> =
        results?.into_iter().map(|r| (r.id.clone(), r)).collect();
    let interrupted = interrupted.load(Ordering::SeqCst);
    if interrupted {
        // What an interruption left unfinished was not decided, not skipped.
        for r in results.values_mut().filter(|r| r.status == Status::Skipped) {
            r.reason = Some("the run was interrupted".to_owned());
        }
    }
    Ok(Harnessed {
        results,
        interrupted,
        started_ms,
    })
}

/// Gives each file an overlay showed in place of the workspace's its time
/// now: a build tool that compiled the overlay (the base's test) while the
/// items ran would otherwise take the workspace's own file, older than
/// what it built, for built, and run the base's test for the user's
/// afterwards. A link an item left in its place is not followed.
fn touch(paths: &[std::path::PathBuf]) {
    use nix::sys::stat::{UtimensatFlags, utimensat};
    use nix::sys::time::TimeSpec;
    for path in paths {
        if let Err(e) = utimensat(
            nix::fcntl::AT_FDCWD,
            path.as_path(),
            &TimeSpec::UTIME_NOW,
            &TimeSpec::UTIME_NOW,
            UtimensatFlags::NoFollowSymlink,
        ) {
            tracing::debug!(path = %path.display(), error = %e, "cannot touch an overlaid file");
        }
    }
}
