//! Runs items in `after` order with bounded concurrency.
//!
//! One coordinator owns all state: it starts an item once everything it
//! names in `after` has passed (or is a ready service), skips it once one of
//! them failed or was skipped, and stops a service once every item naming
//! it has finished. Items run as tasks that hold a semaphore permit while
//! they work; a service gives its permit back once ready, so services cannot
//! starve the items that need them. Every task ends before [`run`] returns,
//! and a task's process group is stopped before its task ends, so no
//! service outlives the run; if the run itself is dropped, the tasks are
//! aborted and each process group is killed as its handle drops.
//!
//! Events: `Started` when an item gets its permit; `Ready` when a service
//! is ready; `Stopped` when a service's group has been stopped; `Finished`
//! once per item with its final result (for a service, after `Stopped`, so
//! its output is complete).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gate_specs::Starts;
use tokio::sync::mpsc::{self, UnboundedSender};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot, watch};
use tokio::task::{Id, JoinSet};

use crate::process::{self, Captured, Ending, ProcessGroup};
use crate::secrets::Redactor;
use crate::{
    Action, Builtin, Event, HarnessError, Item, ItemResult, Location, Output, RunOptions, Status,
    builtin, junit, probe,
};

/// Runs `items`, reporting progress on `events`; `cancel` resolving stops
/// everything (process groups killed, unfinished items skipped). Results come
/// back in the order of `items`.
pub async fn run(
    items: Vec<Item>,
    opts: RunOptions,
    events: Option<UnboundedSender<Event>>,
    cancel: impl Future<Output = ()> + Send,
) -> Result<Vec<ItemResult>, HarnessError> {
    let plan = Plan::new(&items, &opts.satisfied)?;
    let (cancel_tx, cancel_rx) = watch::channel(false);
    let ctx = Arc::new(Ctx {
        semaphore: Arc::new(Semaphore::new(opts.concurrency.max(1))),
        redactor: Redactor::new(&opts.redact),
        workspace: opts.workspace.clone(),
        opts,
        events,
        cancel_rx,
    });
    let coordinator = Coordinator::new(items, plan, ctx, cancel_tx);
    Ok(coordinator.run(cancel).await)
}

/// The dependency structure, checked.
#[derive(Debug)]
struct Plan {
    /// For each item, the items it waits for (ids in `satisfied` dropped).
    deps: Vec<Vec<usize>>,
    /// For each item, the items that wait for it.
    dependents: Vec<Vec<usize>>,
    /// Every item after everything it waits for.
    order: Vec<usize>,
}

impl Plan {
    fn new(items: &[Item], satisfied: &HashSet<String>) -> Result<Self, HarnessError> {
        let mut index = HashMap::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            if index.insert(item.id.as_str(), i).is_some() {
                return Err(HarnessError::Plan(format!(
                    "two items have the id `{}`",
                    item.id
                )));
            }
        }
        let mut deps = vec![Vec::new(); items.len()];
        let mut dependents = vec![Vec::new(); items.len()];
        for (i, item) in items.iter().enumerate() {
            for name in &item.after {
                match index.get(name.as_str()) {
                    Some(&d) if !deps[i].contains(&d) => {
                        deps[i].push(d);
                        dependents[d].push(i);
                    }
                    Some(_) => {}
                    None if satisfied.contains(name) => {}
                    None => {
                        return Err(HarnessError::Plan(format!(
                            "`{}` is after `{name}`, which is not an item of this run",
                            item.id
                        )));
                    }
                }
            }
        }
        let order = topological(&deps, &dependents).map_err(|stuck| {
            let ids: Vec<&str> = stuck.iter().map(|&i| items[i].id.as_str()).collect();
            HarnessError::Plan(format!("`after` forms a cycle among {}", ids.join(", ")))
        })?;
        Ok(Self {
            deps,
            dependents,
            order,
        })
    }
}

/// Kahn's algorithm, stable in item order; the error lists the items on or
/// behind a cycle.
fn topological(deps: &[Vec<usize>], dependents: &[Vec<usize>]) -> Result<Vec<usize>, Vec<usize>> {
    let mut waiting: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut ready: std::collections::VecDeque<usize> =
        (0..deps.len()).filter(|&i| waiting[i] == 0).collect();
    let mut order = Vec::with_capacity(deps.len());
    while let Some(i) = ready.pop_front() {
        order.push(i);
        for &d in &dependents[i] {
            waiting[d] -= 1;
            if waiting[d] == 0 {
                ready.push_back(d);
            }
        }
    }
    if order.len() == deps.len() {
        Ok(order)
    } else {
        Err((0..deps.len()).filter(|&i| waiting[i] > 0).collect())
    }
}

/// What every item task shares.
#[derive(Debug)]
struct Ctx {
    opts: RunOptions,
    workspace: PathBuf,
    semaphore: Arc<Semaphore>,
    redactor: Redactor,
    events: Option<UnboundedSender<Event>>,
    cancel_rx: watch::Receiver<bool>,
}

impl Ctx {
    fn emit(&self, event: Event) {
        if let Some(events) = &self.events {
            // A listener that went away does not stop the run.
            let _ = events.send(event);
        }
    }

    /// Resolves once the run is cancelled (or the coordinator is gone).
    fn cancelled(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.cancel_rx.clone();
        async move {
            let _ = rx.wait_for(|&cancelled| cancelled).await;
        }
    }

    /// A concurrency permit, or `None` if the run is cancelled first.
    async fn permit(&self) -> Option<OwnedSemaphorePermit> {
        tokio::select! {
            permit = Arc::clone(&self.semaphore).acquire_owned() => permit.ok(),
            () = self.cancelled() => None,
        }
    }

    fn output(&self, captured: Captured) -> Output {
        Output {
            tail: self.redactor.redact(&decode_tail(&captured)),
            total_bytes: captured.total_bytes,
            dropped_bytes: captured.dropped_bytes,
            digest: captured.digest,
        }
    }

    /// How the processes of the item `id` start: with its own private
    /// folders when it has them.
    fn launcher(&self, id: &str) -> &crate::Launcher {
        self.opts.launchers.get(id).unwrap_or(&self.opts.launcher)
    }

    /// A folder of the gate's for the trace of the item `id`, and the
    /// launcher that traces into it; no folder when items are not traced
    /// (the launcher has no tracer, or the folder cannot be made).
    fn traced(
        &self,
        id: &str,
    ) -> (
        Option<tempfile::TempDir>,
        std::borrow::Cow<'_, crate::Launcher>,
    ) {
        let launcher = self.launcher(id);
        if launcher.tracer().is_none() {
            return (None, std::borrow::Cow::Borrowed(launcher));
        }
        // The gate's alone: a tracer inside the sandbox shows it there.
        let private = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o700);
        match tempfile::Builder::new()
            .prefix("gate-trace-")
            .permissions(private)
            .tempdir()
        {
            Ok(dir) => {
                let traced = launcher.traced_into(dir.path());
                (Some(dir), std::borrow::Cow::Owned(traced))
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot make a folder for a trace; the item is not traced");
                (None, std::borrow::Cow::Borrowed(launcher))
            }
        }
    }

    /// What a traced item touched, as `launcher` (the one [`Ctx::traced`]
    /// gave) traced it into `dir`.
    fn observed(
        &self,
        dir: Option<tempfile::TempDir>,
        launcher: &crate::Launcher,
    ) -> Option<Box<crate::trace::Accesses>> {
        dir.map(|d| Box::new(launcher.observed(d.path(), &self.workspace)))
    }

    /// Redacts the free text of a result.
    fn redact(&self, mut result: ItemResult) -> ItemResult {
        result.reason = result.reason.map(|r| self.redactor.redact(&r));
        for location in &mut result.locations {
            location.message = self.redactor.redact(&location.message);
        }
        result
    }
}

/// Kept bytes as text; a tail cut inside a UTF-8 sequence starts after it.
fn decode_tail(captured: &Captured) -> String {
    let mut bytes = captured.bytes.as_slice();
    if captured.dropped_bytes > 0 {
        let skip = bytes
            .iter()
            .take(3)
            .take_while(|&&b| b & 0xC0 == 0x80)
            .count();
        bytes = &bytes[skip..];
    }
    String::from_utf8_lossy(bytes).into_owned()
}

/// Where an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    Running,
    /// A service that is ready and still up.
    Up,
    Done(Status),
}

/// Owns the state of one run.
struct Coordinator {
    items: Vec<Item>,
    plan: Plan,
    ctx: Arc<Ctx>,
    state: Vec<State>,
    results: Vec<Option<ItemResult>>,
    /// For a skipped item, the failed item that caused it (for its dependents' reason).
    root_failure: Vec<Option<String>>,
    stop: Vec<Option<oneshot::Sender<()>>>,
    tasks: JoinSet<ItemResult>,
    task_items: HashMap<Id, usize>,
    ready_tx: UnboundedSender<usize>,
    ready_rx: mpsc::UnboundedReceiver<usize>,
    cancel_tx: watch::Sender<bool>,
}

impl Coordinator {
    fn new(items: Vec<Item>, plan: Plan, ctx: Arc<Ctx>, cancel_tx: watch::Sender<bool>) -> Self {
        let n = items.len();
        let (ready_tx, ready_rx) = mpsc::unbounded_channel();
        Self {
            items,
            plan,
            ctx,
            state: vec![State::Waiting; n],
            results: vec![None; n],
            root_failure: vec![None; n],
            stop: (0..n).map(|_| None).collect(),
            tasks: JoinSet::new(),
            task_items: HashMap::new(),
            ready_tx,
            ready_rx,
            cancel_tx,
        }
    }

    async fn run(mut self, cancel: impl Future<Output = ()> + Send) -> Vec<ItemResult> {
        let mut cancel = std::pin::pin!(cancel);
        let mut cancelled = false;
        loop {
            self.advance();
            if self.state.iter().all(|s| matches!(s, State::Done(_))) {
                break;
            }
            if self.tasks.is_empty() {
                // Cannot happen with an acyclic plan; never wait forever on it.
                tracing::error!("items left with nothing running");
                break;
            }
            tokio::select! {
                biased;
                Some(i) = self.ready_rx.recv() => {
                    if self.state[i] == State::Running {
                        self.state[i] = State::Up;
                    }
                }
                Some(joined) = self.tasks.join_next_with_id() => self.joined(joined),
                () = &mut cancel, if !cancelled => {
                    cancelled = true;
                    tracing::debug!("run cancelled");
                    self.cancel_tx.send_replace(true);
                    for i in 0..self.items.len() {
                        if self.state[i] == State::Waiting {
                            self.finish(i, skipped(&self.items[i], "cancelled".to_owned()));
                        }
                    }
                }
            }
        }
        let Self { items, results, .. } = self;
        results
            .into_iter()
            .zip(&items)
            .map(|(result, item)| result.unwrap_or_else(|| skipped(item, "not run".to_owned())))
            .collect()
    }

    /// Starts what can start, skips what cannot run, stops idle services.
    fn advance(&mut self) {
        for k in 0..self.plan.order.len() {
            let i = self.plan.order[k];
            if self.state[i] != State::Waiting {
                continue;
            }
            let mut blocked = None;
            let mut ready = true;
            for &d in &self.plan.deps[i] {
                match self.state[d] {
                    State::Done(Status::Passed) | State::Up => {}
                    State::Done(Status::Failed) => {
                        blocked.get_or_insert_with(|| (self.items[d].id.clone(), None));
                    }
                    State::Done(Status::Skipped) => {
                        let via = self.items[d].id.clone();
                        let root = self.root_failure[d].clone().unwrap_or_else(|| via.clone());
                        blocked.get_or_insert((root, Some(via)));
                    }
                    State::Waiting | State::Running => ready = false,
                }
            }
            if let Some((root, via)) = blocked {
                let reason = match via {
                    Some(via) if via != root => format!("dependency `{root}` failed (via `{via}`)"),
                    _ => format!("dependency `{root}` failed"),
                };
                self.root_failure[i] = Some(root);
                self.finish(i, skipped(&self.items[i], reason));
            } else if ready {
                self.start(i);
            }
        }
        for i in 0..self.items.len() {
            let idle = self.state[i] == State::Up
                && self.plan.dependents[i]
                    .iter()
                    .all(|&d| matches!(self.state[d], State::Done(_)));
            if idle && let Some(stop) = self.stop[i].take() {
                tracing::debug!(id = %self.items[i].id, "no dependent left; stopping");
                let _ = stop.send(());
            }
        }
    }

    fn start(&mut self, i: usize) {
        let item = self.items[i].clone();
        let stop_rx = if is_service(&item) {
            let (tx, rx) = oneshot::channel();
            self.stop[i] = Some(tx);
            Some(rx)
        } else {
            None
        };
        let task = run_item(
            Arc::clone(&self.ctx),
            i,
            item,
            stop_rx,
            self.ready_tx.clone(),
        );
        let handle = self.tasks.spawn(task);
        self.task_items.insert(handle.id(), i);
        self.state[i] = State::Running;
    }

    fn joined(&mut self, joined: Result<(Id, ItemResult), tokio::task::JoinError>) {
        let (id, result) = match joined {
            Ok((id, result)) => (id, Ok(result)),
            Err(e) => (e.id(), Err(e)),
        };
        let Some(i) = self.task_items.remove(&id) else {
            return;
        };
        let result = result.unwrap_or_else(|e| {
            let mut result = skipped(&self.items[i], format!("internal error: {e}"));
            result.status = Status::Failed;
            result
        });
        self.finish(i, result);
    }

    fn finish(&mut self, i: usize, result: ItemResult) {
        let result = self.ctx.redact(result);
        self.state[i] = State::Done(result.status);
        self.stop[i] = None;
        self.ctx.emit(Event::Finished(result.clone()));
        self.results[i] = Some(result);
    }
}

fn is_service(item: &Item) -> bool {
    matches!(
        item.action,
        Action::Command {
            starts: Some(_),
            ..
        }
    )
}

fn result(item: &Item, status: Status, duration: Duration) -> ItemResult {
    ItemResult {
        id: item.id.clone(),
        kind: item.kind,
        status,
        exit_code: None,
        duration,
        reason: None,
        output: Output::default(),
        locations: Vec::new(),
        spec_error: None,
        observed: None,
    }
}

/// Why `item` cannot start: a path its command names is missing, or is run
/// directly and is not executable.
fn missing_verifier(ctx: &Ctx, item: &Item) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let overlays = ctx
        .launcher(&item.id)
        .sandbox()
        .map(|s| s.overlays.as_slice())
        .unwrap_or_default();
    for req in ctx.opts.requires.get(&item.id)? {
        let mut path = ctx.workspace.join(&req.path);
        // What the sandbox shows there is what runs.
        if let Some(o) = overlays.iter().find(|o| o.target == path) {
            path.clone_from(&o.source);
        }
        match std::fs::metadata(&path) {
            Err(_) if !req.must_exist => {}
            Err(_) => {
                return Some(format!(
                    "`{}` runs `{}`, which is not in the workspace and was not before the \
                     change: a verifier must exist before the change it judges (add it to the \
                     base, or fix the path in `run`)",
                    item.id, req.path
                ));
            }
            Ok(meta) if req.direct && meta.is_file() && meta.permissions().mode() & 0o111 == 0 => {
                return Some(format!(
                    "`{}` runs `{}` directly, but it is not executable (`chmod +x {}` in the \
                     base, or run it through its interpreter)",
                    item.id, req.path, req.path
                ));
            }
            Ok(_) => {}
        }
    }
    None
}

fn skipped(item: &Item, reason: String) -> ItemResult {
    ItemResult {
        reason: Some(reason),
        ..result(item, Status::Skipped, Duration::ZERO)
    }
}

/// "5 s", "0.5 s".
fn secs(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// One item, from its permit to its final result.
#[tracing::instrument(skip_all, fields(id = %item.id))]
async fn run_item(
    ctx: Arc<Ctx>,
    index: usize,
    item: Item,
    stop: Option<oneshot::Receiver<()>>,
    ready_tx: UnboundedSender<usize>,
) -> ItemResult {
    let Some(permit) = ctx.permit().await else {
        return skipped(&item, "cancelled".to_owned());
    };
    if let Some(why) = missing_verifier(&ctx, &item) {
        drop(permit);
        return ItemResult {
            reason: Some(why.clone()),
            spec_error: Some(why),
            ..result(&item, Status::Failed, Duration::ZERO)
        };
    }
    if let Some(launcher) = ctx.opts.launchers.get(&item.id).cloned() {
        // What the items it runs after left in their private folders, copied
        // into its own before anything of it starts.
        let seeded = tokio::task::spawn_blocking(move || launcher.seed())
            .await
            .unwrap_or_else(|_| Err("the copy of its private folders panicked".to_owned()));
        if let Err(why) = seeded {
            drop(permit);
            return ItemResult {
                reason: Some(why),
                ..result(&item, Status::Failed, Duration::ZERO)
            };
        }
    }
    tracing::debug!(id = %item.id, "started");
    ctx.emit(Event::Started {
        id: item.id.clone(),
    });
    match (&item.action, stop) {
        (
            Action::Command {
                run,
                starts: Some(starts),
            },
            Some(stop),
        ) => {
            let service = Service {
                ctx: &ctx,
                item: &item,
                index,
            };
            service.run(run, starts, permit, stop, ready_tx).await
        }
        (Action::Command { run, .. }, _) => command(&ctx, &item, run, permit).await,
        (Action::Page(capture), _) => page_item(&ctx, &item, capture, permit).await,
        (Action::JunitReport { .. } | Action::Builtin { .. }, _) => {
            in_process(&ctx, &item, permit).await
        }
    }
}

/// A plain command: passes on exit 0.
async fn command(ctx: &Ctx, item: &Item, run: &str, permit: OwnedSemaphorePermit) -> ItemResult {
    let started = Instant::now();
    let (trace_dir, launcher) = ctx.traced(&item.id);
    let shell = process::run_shell(
        run,
        &ctx.workspace,
        item.timeout,
        ctx.opts.output_cap,
        ctx.cancelled(),
        &launcher,
    )
    .await;
    drop(permit);
    let observed = ctx.observed(trace_dir, &launcher);
    let shell = match shell {
        Ok(shell) => shell,
        Err(e) => {
            return ItemResult {
                reason: Some(e.to_string()),
                ..result(item, Status::Failed, started.elapsed())
            };
        }
    };
    let (status, exit_code, reason) = match shell.ending {
        Ending::Exited(status) if status.success() => (Status::Passed, status.code(), None),
        Ending::Exited(status) => (
            Status::Failed,
            status.code(),
            Some(process::describe_status(status)),
        ),
        Ending::TimedOut => (
            Status::Failed,
            None,
            Some(format!("timed out after {}", secs(item.timeout))),
        ),
        Ending::Cancelled => (Status::Skipped, None, Some("cancelled".to_owned())),
    };
    ItemResult {
        exit_code,
        reason,
        output: ctx.output(shell.output),
        observed,
        ..result(item, status, shell.duration)
    }
}

/// A service check and what it needs to report.
struct Service<'a> {
    ctx: &'a Ctx,
    item: &'a Item,
    index: usize,
}

impl Service<'_> {
    /// Starts the service, waits for it to be ready, keeps it up until told
    /// to stop (or cancelled, or it exits), then stops its group.
    async fn run(
        &self,
        run: &str,
        starts: &Starts,
        permit: OwnedSemaphorePermit,
        stop: oneshot::Receiver<()>,
        ready_tx: UnboundedSender<usize>,
    ) -> ItemResult {
        let started = Instant::now();
        let (trace_dir, launcher) = self.ctx.traced(&self.item.id);
        let spawned = ProcessGroup::spawn_shell(
            run,
            &self.ctx.workspace,
            self.ctx.opts.output_cap,
            starts.ready_log.as_deref(),
            &launcher,
        );
        let mut group = match spawned {
            Ok(group) => group,
            Err(e) => {
                return ItemResult {
                    reason: Some(e.to_string()),
                    ..result(self.item, Status::Failed, started.elapsed())
                };
            }
        };
        let readiness = tokio::select! {
            ready = probe::await_ready(
                &mut group,
                starts,
                self.ctx.launcher(&self.item.id),
                &self.ctx.workspace,
            ) => Some(ready),
            () = self.ctx.cancelled() => None,
        };
        drop(permit);
        let ready_in = started.elapsed();
        let (status, reason, exit_code) = match readiness {
            None => (Status::Skipped, Some("cancelled".to_owned()), None),
            Some(Err(reason)) => (
                Status::Failed,
                Some(reason),
                group.try_status().and_then(|s| s.code()),
            ),
            Some(Ok(())) => {
                tracing::debug!(id = %self.item.id, ?ready_in, "ready");
                self.ctx.emit(Event::Ready {
                    id: self.item.id.clone(),
                });
                let _ = ready_tx.send(self.index);
                let exited = tokio::select! {
                    _ = stop => None,
                    () = self.ctx.cancelled() => None,
                    status = group.wait() => status.ok(),
                };
                if let Some(status) = exited {
                    tracing::warn!(
                        id = %self.item.id,
                        "service {} while its dependents ran",
                        process::describe_status(status)
                    );
                }
                (Status::Passed, None, exited.and_then(|s| s.code()))
            }
        };
        group.stop().await;
        self.ctx.emit(Event::Stopped {
            id: self.item.id.clone(),
        });
        ItemResult {
            exit_code,
            reason,
            output: self.ctx.output(group.output()),
            observed: self.ctx.observed(trace_dir, &launcher),
            ..result(self.item, status, ready_in)
        }
    }
}

/// A page check: the browser is stopped (its group killed) when the item's
/// timeout or a cancellation cuts it short, as its handle drops.
async fn page_item(
    ctx: &Ctx,
    item: &Item,
    capture: &crate::page::PageCapture,
    permit: OwnedSemaphorePermit,
) -> ItemResult {
    let started = Instant::now();
    let work = crate::page::check(
        &item.id,
        capture,
        &ctx.workspace,
        ctx.opts.output_cap,
        ctx.launcher(&item.id),
    );
    let done = tokio::select! {
        done = tokio::time::timeout(item.timeout, work) => Some(done),
        () = ctx.cancelled() => None,
    };
    drop(permit);
    let duration = started.elapsed();
    let outcome = match done {
        None => return skipped(item, "cancelled".to_owned()),
        Some(Err(_)) => {
            return ItemResult {
                reason: Some(format!(
                    "timed out after {} capturing {}",
                    secs(item.timeout),
                    capture.url
                )),
                ..result(item, Status::Failed, duration)
            };
        }
        Some(Ok(outcome)) => outcome,
    };
    let mut text = String::new();
    for note in &outcome.notes {
        text.push_str(note);
        text.push('\n');
    }
    for shot in &outcome.shots {
        use std::fmt::Write as _;
        // Writing to a String cannot fail.
        let _ = writeln!(
            text,
            "{}: {}×{} {}",
            shot.viewport.name,
            shot.size.0,
            shot.size.1,
            shot.path.display()
        );
    }
    let reason = (!outcome.passed()).then(|| outcome.problems.join("; "));
    text.push_str(&render(
        reason.as_deref().unwrap_or("no problems found"),
        &outcome.locations,
    ));
    let bytes = text.into_bytes();
    let captured = Captured {
        total_bytes: bytes.len() as u64,
        dropped_bytes: 0,
        digest: blake3::hash(&bytes).to_hex().to_string(),
        bytes,
    };
    ItemResult {
        reason,
        locations: outcome.locations.clone(),
        output: ctx.output(captured),
        ..result(
            item,
            if outcome.passed() {
                Status::Passed
            } else {
                Status::Failed
            },
            duration,
        )
    }
}

/// What an in-process check decided.
struct CheckAnswer {
    passed: bool,
    reason: Option<String>,
    locations: Vec<Location>,
    /// What it "printed": a summary and one line per location.
    text: String,
}

/// A JUnit report or built-in check, on a blocking thread, with the item's timeout.
async fn in_process(ctx: &Ctx, item: &Item, permit: OwnedSemaphorePermit) -> ItemResult {
    let started = Instant::now();
    let action = item.action.clone();
    let workspace = ctx.workspace.clone();
    let files = Arc::clone(&ctx.opts.files);
    let work = tokio::task::spawn_blocking(move || decide(&action, &workspace, &files));
    // On timeout or cancellation the thread is left to finish on its own:
    // it only reads files.
    let decided = tokio::select! {
        joined = tokio::time::timeout(item.timeout, work) => Some(joined),
        () = ctx.cancelled() => None,
    };
    drop(permit);
    let duration = started.elapsed();
    let verdict = match decided {
        None => return skipped(item, "cancelled".to_owned()),
        Some(Err(_)) => {
            return ItemResult {
                reason: Some(format!("timed out after {}", secs(item.timeout))),
                ..result(item, Status::Failed, duration)
            };
        }
        Some(Ok(Err(e))) => {
            return ItemResult {
                reason: Some(format!("internal error: {e}")),
                ..result(item, Status::Failed, duration)
            };
        }
        Some(Ok(Ok(verdict))) => verdict,
    };
    let bytes = verdict.text.into_bytes();
    let captured = Captured {
        total_bytes: bytes.len() as u64,
        dropped_bytes: 0,
        digest: blake3::hash(&bytes).to_hex().to_string(),
        bytes,
    };
    ItemResult {
        reason: verdict.reason,
        locations: verdict.locations,
        output: ctx.output(captured),
        ..result(
            item,
            if verdict.passed {
                Status::Passed
            } else {
                Status::Failed
            },
            duration,
        )
    }
}

fn decide(action: &Action, workspace: &std::path::Path, files: &[String]) -> CheckAnswer {
    match action {
        Action::JunitReport {
            report,
            stale,
            refused,
        } => match junit::check_report(workspace, report, stale.as_deref(), refused) {
            Ok(summary) => CheckAnswer {
                passed: true,
                reason: None,
                locations: Vec::new(),
                text: format!(
                    "{report}: {} tests passed, {} skipped\n",
                    summary.tests, summary.skipped
                ),
            },
            Err(failure) => CheckAnswer {
                passed: false,
                text: render(&failure.reason, &failure.locations),
                reason: Some(failure.reason),
                locations: failure.locations,
            },
        },
        Action::Builtin { check, exclude } => {
            let (looked_at, exempt): (Vec<String>, Vec<String>) = files
                .iter()
                .cloned()
                .partition(|f| exclude.as_ref().is_none_or(|g| !g.is_match(f)));
            let locations = builtin::check(*check, workspace, &looked_at);
            let reason = (!locations.is_empty()).then(|| builtin_reason(*check, &locations));
            let found = reason.as_deref().unwrap_or("no problems found");
            let summary = if exempt.is_empty() {
                found.to_owned()
            } else {
                format!(
                    "{found}\n{} exempt by [policy] builtin_exclude",
                    plural_files(exempt.len())
                )
            };
            CheckAnswer {
                passed: locations.is_empty(),
                text: render(&summary, &locations),
                reason,
                locations,
            }
        }
        Action::Command { .. } | Action::Page(_) => CheckAnswer {
            passed: false,
            reason: Some("internal error: not an in-process check".to_owned()),
            locations: Vec::new(),
            text: String::new(),
        },
    }
}

/// "3 merge conflict markers in 2 files".
fn builtin_reason(which: Builtin, locations: &[Location]) -> String {
    let (one, many) = match which {
        Builtin::Conflicts => ("merge conflict marker", "merge conflict markers"),
        Builtin::Secrets => ("possible secret", "possible secrets"),
        Builtin::Parse => ("file that does not parse", "files that do not parse"),
    };
    let n = locations.len();
    let files: HashSet<&str> = locations.iter().map(|l| l.file.as_str()).collect();
    let what = if n == 1 { one } else { many };
    let found = match (which, files.len()) {
        (Builtin::Parse, _) => format!("{n} {what}"),
        (_, 1) => format!("{n} {what} in 1 file"),
        (_, f) => format!("{n} {what} in {f} files"),
    };
    // The way out for a file that is meant to be so (a test fixture),
    // short of turning the check off.
    let meant = match which {
        Builtin::Secrets => "a fake key a test needs; a real one is revoked, not exempted",
        Builtin::Conflicts | Builtin::Parse => "a deliberate fixture",
    };
    format!(
        "{found} (exempt {meant} with [policy] builtin_exclude = {{ {} = [\"<glob>\"] }})",
        which.name()
    )
}

/// "1 file", "13 files".
fn plural_files(n: usize) -> String {
    if n == 1 {
        "1 file".to_owned()
    } else {
        format!("{n} files")
    }
}

/// A summary line, then `file:line: message` per location.
fn render(summary: &str, locations: &[Location]) -> String {
    use std::fmt::Write as _;
    let mut text = format!("{summary}\n");
    for l in locations {
        // Writing to a String cannot fail.
        let _ = match l.line {
            Some(line) => writeln!(text, "{}:{line}: {}", l.file, l.message),
            None => writeln!(text, "{}: {}", l.file, l.message),
        };
    }
    text
}

#[cfg(test)]
mod tests;
