//! Circuit breakers, one per model (`provider/name`), shared through the
//! ledger so that concurrent and later runs skip a model that is down.
//!
//! Hystrix's state machine, sized for a gate's low call volume:
//!
//! ```text
//! closed ──(3 retryable failures in a row, or ≥ 50% of the last 10 calls with at least 4)──► open
//! open ──(cooldown passed: the longer of [policy] breaker_cooldown_s and the provider's Retry-After)──► half-open
//! half-open ──(exactly one caller wins the probe)──► closed on success · open again, timer reset, on failure
//! ```
//!
//! Only retryable failures count. A fatal error (a bad request, a refusal, a
//! malformed reply) says nothing about the model's health and is neutral; an
//! auth error marks the model misconfigured for the rest of the run, and a
//! quota, credit or budget error its provider account (endpoint and key),
//! both in memory only (a key fixed or credits bought between runs must not
//! stay punished).
//!
//! The state machine is pure functions over [`BreakerRecord`] and a clock
//! ([`admit`], [`report`]); [`Breakers`] runs them inside the ledger's
//! read-modify-write transaction, so two processes never both win a probe.
//! A probe is held until an expiry (the prober's own deadline): a run killed
//! mid-probe does not wedge the breaker half-open.
//!
//! Kept in the ledger, a breaker's state is signed by the run that wrote
//! it. State the gate cannot vouch for (no seal, a seal from an untrusted
//! key, columns edited after it was signed) is refused: read as a closed
//! breaker, so the model is called, and named in the run's record
//! ([`Breakers::refused`]), so an open breaker planted in the database
//! never turns a review into "unreviewed" unsaid.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use gate_evidence::SigningKey;
use gate_evidence::ledger::{self, BreakerRecord};

/// The longest error a breaker keeps, in characters: a provider's message
/// and its code, not a whole HTML error page.
const LAST_ERROR_CHARS: usize = 300;

/// `state` of a closed breaker.
pub const CLOSED: &str = "closed";
/// `state` of an open breaker.
pub const OPEN: &str = "open";
/// `state` of a half-open breaker.
pub const HALF_OPEN: &str = "half_open";

/// The breaker's thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerPolicy {
    /// Retryable failures in a row that open it.
    pub consecutive: u32,
    /// How many recent calls the failure share looks at.
    pub window: usize,
    /// The failure share needs at least this many calls in the window.
    pub min_calls: usize,
    /// How long it stays open before its probe, unless a Retry-After is longer.
    pub cooldown: Duration,
    /// A closed breaker's history older than this is forgotten: two failures
    /// last week and two this morning are not an outage.
    pub forget_after: Duration,
}

impl BreakerPolicy {
    /// The defaults, with `[policy] breaker_cooldown_s`.
    pub fn with_cooldown(cooldown_s: u64) -> Self {
        Self {
            consecutive: 3,
            window: 10,
            min_calls: 4,
            cooldown: Duration::from_secs(cooldown_s),
            forget_after: Duration::from_secs(3600),
        }
    }
}

/// What a caller may do with a model now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Closed: call it.
    Call,
    /// Half-open, and this caller holds the one probe: call it.
    Probe,
    /// Open, or another caller holds the probe: skip it without a request.
    Skip {
        /// When it may be tried again (the cooldown's end or the probe's expiry).
        until: DateTime<Utc>,
        /// Why, for the attempt record.
        why: String,
    },
}

/// How a call ended, as the breaker counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// A usable answer.
    Success,
    /// A retryable failure, with the provider's Retry-After when it sent one.
    Failure {
        /// How long the provider asked us to wait.
        retry_after: Option<Duration>,
        /// What the failure said (kept on the breaker: an open one names it).
        error: String,
    },
    /// A fatal or auth error: says nothing about the model's health.
    Neutral,
}

/// Decides whether `owner` may call the model now. Returns the record to
/// write (`None`: unchanged) and the decision. `probe_until` is when a probe
/// won now expires if its owner never reports.
pub fn admit(
    current: Option<BreakerRecord>,
    key: &str,
    owner: &str,
    probe_until: DateTime<Utc>,
    now: DateTime<Utc>,
) -> (Option<BreakerRecord>, Admission) {
    let Some(mut rec) = current else {
        return (None, Admission::Call);
    };
    match rec.state.as_str() {
        OPEN => {
            let reopen = reopens_at(&rec);
            if now < reopen {
                // What opened it first: a one-line view keeps the start.
                let opened_by = rec
                    .last_error
                    .as_deref()
                    .map_or_else(|| " (".to_owned(), |e| format!(" on: {e} ("));
                let why = format!(
                    "circuit breaker open{opened_by}{}; until {})",
                    failures_text(&rec),
                    reopen.format("%H:%M:%S UTC")
                );
                return (None, Admission::Skip { until: reopen, why });
            }
            claim(&mut rec, key, owner, probe_until, now);
            (Some(rec), Admission::Probe)
        }
        HALF_OPEN => match &rec.probe {
            Some((holder, _)) if holder == owner => (None, Admission::Probe),
            Some((_, until)) if *until > now => {
                let until = *until;
                let why =
                    "circuit breaker half-open: another caller holds its one probe".to_owned();
                (None, Admission::Skip { until, why })
            }
            // No probe out, or its holder never reported before it expired.
            _ => {
                claim(&mut rec, key, owner, probe_until, now);
                (Some(rec), Admission::Probe)
            }
        },
        _ => (None, Admission::Call),
    }
}

/// Folds one call's outcome into the breaker. Returns the record to write
/// (`None`: unchanged).
pub fn report(
    current: Option<BreakerRecord>,
    key: &str,
    owner: &str,
    outcome: Report,
    now: DateTime<Utc>,
    policy: &BreakerPolicy,
) -> Option<BreakerRecord> {
    let mut rec = current.unwrap_or_else(|| fresh(key, now));
    if rec.state == CLOSED && age(&rec, now) > policy.forget_after {
        rec.consecutive_failures = 0;
        rec.recent.clear();
    }
    match (rec.state.as_str(), outcome) {
        (HALF_OPEN, Report::Neutral) => {
            // The probe got an answer that says nothing about health: let
            // the next caller probe.
            if rec.probe.as_ref().is_none_or(|(holder, _)| holder != owner) {
                return None;
            }
            rec.probe = None;
        }
        // A late report from a call admitted before the breaker opened
        // changes nothing (the probe decides); a neutral one never does.
        (OPEN, _) | (_, Report::Neutral) => return None,
        (HALF_OPEN, Report::Success) => {
            // Closed afresh: the outage's failures no longer count.
            CLOSED.clone_into(&mut rec.state);
            rec.consecutive_failures = 0;
            "s".clone_into(&mut rec.recent);
            rec.opened_at = None;
            rec.probe = None;
            rec.last_error = None;
        }
        (_, Report::Success) => {
            rec.consecutive_failures = 0;
            push(&mut rec.recent, 's', policy.window);
        }
        (state, Report::Failure { retry_after, error }) => {
            rec.consecutive_failures = rec.consecutive_failures.saturating_add(1);
            push(&mut rec.recent, 'f', policy.window);
            rec.last_error = Some(error.chars().take(LAST_ERROR_CHARS).collect());
            if state == HALF_OPEN || trips(&rec, policy) {
                OPEN.clone_into(&mut rec.state);
                rec.opened_at = Some(now);
                rec.probe = None;
                rec.cooldown_s = cooldown_s(policy.cooldown, retry_after);
            }
        }
    }
    rec.updated_at = now;
    Some(rec)
}

/// When an open breaker lets its probe through.
pub fn reopens_at(rec: &BreakerRecord) -> DateTime<Utc> {
    let opened = rec.opened_at.unwrap_or(rec.updated_at);
    let cooldown = i64::try_from(rec.cooldown_s).unwrap_or(i64::MAX / 1000);
    opened + chrono::Duration::seconds(cooldown)
}

fn claim(
    rec: &mut BreakerRecord,
    key: &str,
    owner: &str,
    until: DateTime<Utc>,
    now: DateTime<Utc>,
) {
    tracing::info!(model = key, owner, "circuit breaker half-open: probing");
    HALF_OPEN.clone_into(&mut rec.state);
    rec.probe = Some((owner.to_owned(), until));
    rec.updated_at = now;
}

fn trips(rec: &BreakerRecord, policy: &BreakerPolicy) -> bool {
    let calls = rec.recent.len();
    let failures = rec.recent.chars().filter(|c| *c == 'f').count();
    rec.consecutive_failures >= policy.consecutive
        || (calls >= policy.min_calls && failures * 2 >= calls)
}

fn push(recent: &mut String, outcome: char, window: usize) {
    recent.push(outcome);
    let extra = recent.len().saturating_sub(window);
    recent.drain(..extra);
}

fn cooldown_s(cooldown: Duration, retry_after: Option<Duration>) -> u64 {
    let longest = retry_after.map_or(cooldown, |ra| ra.max(cooldown));
    // Whole seconds, rounded up: a Retry-After of 1.5 s is not over after 1 s.
    longest.as_secs() + u64::from(longest.subsec_nanos() > 0)
}

fn age(rec: &BreakerRecord, now: DateTime<Utc>) -> Duration {
    (now - rec.updated_at).to_std().unwrap_or(Duration::ZERO)
}

fn failures_text(rec: &BreakerRecord) -> String {
    let failures = rec.recent.chars().filter(|c| *c == 'f').count();
    format!(
        "{failures} of its last {} calls failed, {} in a row",
        rec.recent.len(),
        rec.consecutive_failures
    )
}

fn fresh(key: &str, now: DateTime<Utc>) -> BreakerRecord {
    BreakerRecord {
        model: key.to_owned(),
        state: CLOSED.to_owned(),
        consecutive_failures: 0,
        recent: String::new(),
        opened_at: None,
        cooldown_s: 0,
        probe: None,
        updated_at: now,
        seal: None,
        last_error: None,
        generation: 0,
    }
}

/// Where the breakers' states are kept between runs (the gate's ledger,
/// shared with every other run on it): the review knows it only by this.
pub trait BreakerStore: Send + 'static {
    /// Reads model `model`'s record, lets `update` decide its next state,
    /// and writes that, in one transaction no other runner interleaves
    /// with; why not, when it could not.
    fn update(
        &mut self,
        model: &str,
        update: &mut dyn FnMut(Option<BreakerRecord>) -> Option<BreakerRecord>,
    ) -> Result<(), String>;
}

/// The breakers of a run: kept in a [`BreakerStore`] when the gate has one
/// (shared with every other run on it), else in memory for this run; plus the models an
/// auth error marked misconfigured and the provider accounts (endpoint and
/// key) whose quota or budget ran out, both in memory.
pub struct Breakers {
    store: Option<Arc<Mutex<dyn BreakerStore>>>,
    /// Signs what this run writes to the store and vouches for what it reads.
    key: Option<Arc<SigningKey>>,
    /// Models whose stored state was refused, and why.
    refused: Arc<Mutex<BTreeMap<String, String>>>,
    /// The newest generation of each model's state this gate has read or
    /// written: a signed state older than it was copied back, and is refused.
    seen: Arc<Mutex<BTreeMap<String, u64>>>,
    /// Where `seen` is kept between runs (the workspace the write is
    /// anchored at, and the file), when it is.
    remember: Option<(PathBuf, PathBuf)>,
    /// What the file holds now.
    kept: Mutex<BTreeMap<String, u64>>,
    memory: Mutex<BTreeMap<String, BreakerRecord>>,
    misconfigured: Mutex<BTreeMap<String, String>>,
    unfit: Mutex<BTreeMap<String, String>>,
    exhausted: Mutex<BTreeMap<String, String>>,
    policy: BreakerPolicy,
}

impl Breakers {
    /// Breakers kept only for this run (no ledger).
    pub fn in_memory(policy: BreakerPolicy) -> Self {
        Self {
            store: None,
            key: None,
            refused: Arc::new(Mutex::new(BTreeMap::new())),
            seen: Arc::new(Mutex::new(BTreeMap::new())),
            remember: None,
            kept: Mutex::new(BTreeMap::new()),
            memory: Mutex::new(BTreeMap::new()),
            misconfigured: Mutex::new(BTreeMap::new()),
            unfit: Mutex::new(BTreeMap::new()),
            exhausted: Mutex::new(BTreeMap::new()),
            policy,
        }
    }

    /// Breakers kept in `store`, their state signed by `key` and read
    /// only when `key` vouches for it.
    pub fn kept_in(store: impl BreakerStore, policy: BreakerPolicy, key: &SigningKey) -> Self {
        // The key's own copy for the store's thread; a copy that fails
        // leaves every stored state refused (read as closed), never obeyed.
        let key = SigningKey::from_pkcs8_pem(&key.to_pkcs8_pem())
            .inspect_err(|e| tracing::warn!(error = %e, "the signing key could not be copied"))
            .ok();
        Self {
            store: Some(Arc::new(Mutex::new(store))),
            key: key.map(Arc::new),
            ..Self::in_memory(policy)
        }
    }

    /// Keeps the newest generation seen of each model's state in `file`
    /// (written below `anchor` without following links), read now: a state
    /// older than one an earlier run saw is refused too.
    #[must_use]
    pub fn remembering(mut self, anchor: &Path, file: &Path) -> Self {
        let seen: BTreeMap<String, u64> = std::fs::read(file)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        lock(&self.seen).clone_from(&seen);
        *lock(&self.kept) = seen;
        self.remember = Some((anchor.to_path_buf(), file.to_path_buf()));
        self
    }

    /// The models whose stored state this run refused (not signed by the
    /// gate, edited since, or older than one seen), each with why: read as
    /// closed breakers.
    pub fn refused(&self) -> Vec<(String, String)> {
        lock(&self.refused)
            .iter()
            .map(|(m, why)| (m.clone(), why.clone()))
            .collect()
    }

    /// The thresholds.
    pub fn policy(&self) -> &BreakerPolicy {
        &self.policy
    }

    /// Whether `owner` may call model `key` now; a half-open breaker's one
    /// probe goes to exactly one caller across every process on the ledger.
    pub async fn admit(&self, key: &str, owner: &str, probe_until: DateTime<Utc>) -> Admission {
        let (key_, owner_) = (key.to_owned(), owner.to_owned());
        let decided = self
            .update(key, move |current| {
                admit(current, &key_, &owner_, probe_until, Utc::now())
            })
            .await;
        // A ledger that cannot answer must not stop the review: call.
        decided.unwrap_or(Admission::Call)
    }

    /// Folds one call's outcome into model `key`'s breaker.
    pub async fn report(&self, key: &str, owner: &str, outcome: Report) {
        let (key_, owner_, policy) = (key.to_owned(), owner.to_owned(), self.policy);
        let _ = self
            .update(key, move |current| {
                let next = report(current, &key_, &owner_, outcome, Utc::now(), &policy);
                if let Some(rec) = &next
                    && rec.state == OPEN
                    && rec.opened_at == Some(rec.updated_at)
                {
                    // The run's record shows every skip; the log says why.
                    tracing::info!(
                        model = %key_,
                        cooldown_s = rec.cooldown_s,
                        "circuit breaker opened: {}",
                        failures_text(rec)
                    );
                }
                (next, ())
            })
            .await;
    }

    /// Whether model `key`'s breaker is open now (a look, claiming nothing).
    pub async fn is_open(&self, key: &str) -> bool {
        let now = Utc::now();
        self.update(key, move |current| {
            let open = current.is_some_and(|r| r.state == OPEN && now < reopens_at(&r));
            (None, open)
        })
        .await
        .unwrap_or(false)
    }

    /// The auth error that marked model `key` misconfigured in this run.
    pub fn misconfigured(&self, key: &str) -> Option<String> {
        lock(&self.misconfigured).get(key).cloned()
    }

    /// Marks model `key` misconfigured for the rest of the run.
    pub fn mark_misconfigured(&self, key: &str, why: &str) {
        lock(&self.misconfigured)
            .entry(key.to_owned())
            .or_insert_with(|| why.to_owned());
    }

    /// The error with which model `key` refused a part of this run's
    /// request shape (a parameter its server does not take).
    pub fn unfit(&self, key: &str) -> Option<String> {
        lock(&self.unfit).get(key).cloned()
    }

    /// Marks model `key` as refusing the run's request shape: in memory
    /// only, since a fixed routing table must count at once.
    pub fn mark_unfit(&self, key: &str, why: &str) {
        lock(&self.unfit)
            .entry(key.to_owned())
            .or_insert_with(|| why.to_owned());
    }

    /// The quota or budget error that exhausted `account` in this run.
    pub fn exhausted(&self, account: &str) -> Option<String> {
        lock(&self.exhausted).get(account).cloned()
    }

    /// Marks `account` (an endpoint and key) out of quota for the rest of
    /// the run: not in the ledger, since credits bought between runs must
    /// count at once, and not a breaker, since no model is unhealthy.
    pub fn mark_exhausted(&self, account: &str, why: &str) {
        lock(&self.exhausted)
            .entry(account.to_owned())
            .or_insert_with(|| why.to_owned());
    }

    /// Runs `f` over model `key`'s record in one transaction and writes what
    /// it returns. `None` when the store failed (logged).
    async fn update<T, F>(&self, key: &str, f: F) -> Option<T>
    where
        T: Send + 'static,
        F: FnOnce(Option<BreakerRecord>) -> (Option<BreakerRecord>, T) + Send + 'static,
    {
        let Some(store) = &self.store else {
            let mut memory = lock(&self.memory);
            let (next, out) = f(memory.get(key).cloned());
            if let Some(next) = next {
                memory.insert(key.to_owned(), next);
            }
            return Some(out);
        };
        let store = Arc::clone(store);
        let (signer, refused) = (self.key.clone(), Arc::clone(&self.refused));
        let seen = Arc::clone(&self.seen);
        let key = key.to_owned();
        // A store may block (a busy SQLite ledger waits for its lock): off
        // the runtime.
        let done = tokio::task::spawn_blocking(move || {
            let mut store = store.lock().unwrap_or_else(PoisonError::into_inner);
            let (mut f, mut out) = (Some(f), None);
            store
                .update(&key, &mut |current| {
                    let f = f.take()?;
                    let current = current
                        .and_then(|rec| vouched(&rec, signer.as_deref(), &refused))
                        .and_then(|rec| current_only(rec, &seen, &refused));
                    let newest = lock(&seen).get(&key).copied().unwrap_or(0);
                    let (next, done) = f(current);
                    out = Some(done);
                    match (next, signer.as_deref()) {
                        (Some(mut rec), Some(signer)) => {
                            rec.generation = newest.saturating_add(1);
                            lock(&seen).insert(key.clone(), rec.generation);
                            Some(ledger::seal(&rec, signer))
                        }
                        (next, _) => next,
                    }
                })
                .and_then(|()| out.ok_or_else(|| "the store did not run the update".to_owned()))
        })
        .await;
        self.keep_seen();
        match done {
            Ok(Ok(out)) => Some(out),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "the circuit breaker could not be read or written");
                None
            }
            Err(e) => {
                tracing::warn!(error = %e, "the circuit breaker update stopped");
                None
            }
        }
    }
}

impl Breakers {
    /// Writes the newest generations seen to the file they are kept in.
    fn keep_seen(&self) {
        let Some((anchor, file)) = &self.remember else {
            return;
        };
        let seen = lock(&self.seen).clone();
        let mut kept = lock(&self.kept);
        if *kept == seen {
            return;
        }
        kept.clone_from(&seen);
        let written = serde_json::to_vec(&seen)
            .map_err(std::io::Error::other)
            .and_then(|bytes| gate_evidence::replace_file(anchor, file, &bytes));
        if let Err(e) = written {
            tracing::warn!(error = %e, file = %file.display(), "the breakers' generations could not be kept");
        }
    }
}

/// `rec` unless an older generation than the newest seen of its model (a
/// state copied back from earlier): then `None`, a closed breaker, the
/// refusal noted under its model. What it is becomes the newest seen.
fn current_only(
    rec: BreakerRecord,
    seen: &Mutex<BTreeMap<String, u64>>,
    refused: &Mutex<BTreeMap<String, String>>,
) -> Option<BreakerRecord> {
    let mut seen = lock(seen);
    let newest = seen.entry(rec.model.clone()).or_insert(0);
    if rec.generation < *newest {
        let why = format!(
            "its stored state ({}) is generation {}, older than generation {} already seen: \
             a state copied back from earlier",
            rec.state, rec.generation, newest
        );
        tracing::warn!(model = %rec.model, %why, "circuit breaker state refused: read as closed");
        lock(refused).entry(rec.model.clone()).or_insert(why);
        return None;
    }
    *newest = rec.generation;
    Some(rec)
}

/// `rec` when `signer`'s key vouches for it; else `None` (a closed
/// breaker), the refusal noted under its model.
fn vouched(
    rec: &BreakerRecord,
    signer: Option<&SigningKey>,
    refused: &Mutex<BTreeMap<String, String>>,
) -> Option<BreakerRecord> {
    let trusted = signer.map(|k| k.public_key().clone());
    match ledger::vouch(rec, trusted.as_slice()) {
        Ok(signed) => Some(signed),
        Err(why) => {
            tracing::warn!(model = %rec.model, %why, "circuit breaker state refused: read as closed");
            lock(refused).entry(rec.model.clone()).or_insert_with(|| {
                format!("its stored state ({}) is not the gate's: {why}", rec.state)
            });
            None
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use gate_evidence::Ledger;

    use super::*;

    /// A ledger as the store, as the gate keeps the breakers in its own.
    struct Kept(Ledger);

    impl BreakerStore for Kept {
        fn update(
            &mut self,
            model: &str,
            update: &mut dyn FnMut(Option<BreakerRecord>) -> Option<BreakerRecord>,
        ) -> Result<(), String> {
            self.0
                .update_breaker(model, |current| (update(current), ()))
                .map_err(|e| e.to_string())
        }
    }

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + s, 0).unwrap()
    }

    /// One step of a breaker's life: at second `t`, `who` asks to call, or
    /// reports an outcome.
    #[derive(Debug, Clone)]
    enum Step {
        /// `who` asks; expect call (`'c'`), probe (`'p'`) or skip (`'s'`).
        Ask(i64, &'static str, char),
        /// `who` reports `outcome`.
        Tell(i64, &'static str, Report),
    }

    const FAIL: Report = Report::Failure {
        retry_after: None,
        error: String::new(),
    };
    const OK: Report = Report::Success;

    fn run(steps: &[Step]) -> Option<BreakerRecord> {
        let policy = BreakerPolicy::with_cooldown(120);
        let mut rec: Option<BreakerRecord> = None;
        for (i, step) in steps.iter().enumerate() {
            match step.clone() {
                Step::Ask(t, who, want) => {
                    let (next, got) = admit(rec.clone(), "p/m", who, at(t + 60), at(t));
                    let got = match got {
                        Admission::Call => 'c',
                        Admission::Probe => 'p',
                        Admission::Skip { .. } => 's',
                    };
                    assert_eq!(got, want, "step {i} {step:?} over {rec:?}");
                    if next.is_some() {
                        rec = next;
                    }
                }
                Step::Tell(t, who, outcome) => {
                    if let Some(next) = report(rec.clone(), "p/m", who, outcome, at(t), &policy) {
                        rec = Some(next);
                    }
                }
            }
        }
        rec
    }

    fn state(rec: Option<&BreakerRecord>) -> &str {
        rec.map_or(CLOSED, |r| r.state.as_str())
    }

    #[test]
    fn breaker_state_machine_over_outcomes_and_clock() {
        use Step::{Ask, Tell};
        let ra = |s| Report::Failure {
            retry_after: Some(Duration::from_secs(s)),
            error: String::new(),
        };
        let cases: Vec<(&str, Vec<Step>, &str)> = vec![
            ("a fresh model is called", vec![Ask(0, "a", 'c')], CLOSED),
            (
                "two failures in a row stay closed",
                vec![Tell(0, "a", FAIL), Tell(1, "a", FAIL), Ask(2, "a", 'c')],
                CLOSED,
            ),
            (
                "three in a row open it, and it skips at once",
                vec![
                    Tell(0, "a", FAIL),
                    Tell(1, "a", FAIL),
                    Tell(2, "a", FAIL),
                    Ask(3, "a", 's'),
                    Ask(121, "b", 's'),
                ],
                OPEN,
            ),
            (
                "a success breaks the run of failures",
                vec![
                    Tell(0, "a", OK),
                    Tell(1, "a", OK),
                    Tell(2, "a", OK),
                    Tell(3, "a", OK),
                    Tell(4, "a", OK),
                    Tell(5, "a", FAIL),
                    Tell(6, "a", FAIL),
                    Tell(7, "a", OK),
                    Tell(8, "a", FAIL),
                    Tell(9, "a", FAIL),
                    Ask(10, "a", 'c'),
                ],
                CLOSED,
            ),
            (
                "half of the last calls failing opens it (at least 4 calls)",
                vec![
                    Tell(0, "a", OK),
                    Tell(1, "a", FAIL),
                    Tell(2, "a", OK),
                    Tell(3, "a", FAIL),
                    Ask(4, "a", 's'),
                ],
                OPEN,
            ),
            (
                "two of three failing is too few calls to judge",
                vec![Tell(0, "a", FAIL), Tell(1, "a", OK), Tell(2, "a", FAIL)],
                CLOSED,
            ),
            (
                "four of the last ten is below half",
                vec![
                    Tell(0, "a", OK),
                    Tell(1, "a", OK),
                    Tell(2, "a", OK),
                    Tell(3, "a", OK),
                    Tell(4, "a", FAIL),
                    Tell(5, "a", OK),
                    Tell(6, "a", FAIL),
                    Tell(7, "a", OK),
                    Tell(8, "a", FAIL),
                    Tell(9, "a", FAIL),
                    Ask(10, "a", 'c'),
                ],
                CLOSED,
            ),
            (
                "fatal errors are neutral",
                vec![
                    Tell(0, "a", FAIL),
                    Tell(1, "a", FAIL),
                    Tell(2, "a", Report::Neutral),
                    Tell(3, "a", Report::Neutral),
                    Ask(4, "a", 'c'),
                ],
                CLOSED,
            ),
            (
                "after the cooldown exactly one caller probes; success closes",
                vec![
                    Tell(0, "a", FAIL),
                    Tell(1, "a", FAIL),
                    Tell(2, "a", FAIL),
                    Ask(121, "a", 's'),
                    Ask(122, "b", 'p'),
                    Ask(122, "c", 's'),
                    Ask(123, "b", 'p'),
                    Tell(130, "b", OK),
                    Ask(131, "c", 'c'),
                    // The outage's failures no longer count: one more is not three.
                    Tell(132, "c", FAIL),
                    Ask(133, "c", 'c'),
                ],
                CLOSED,
            ),
            (
                "a failed probe opens it again with the timer reset",
                vec![
                    Tell(0, "a", FAIL),
                    Tell(1, "a", FAIL),
                    Tell(2, "a", FAIL),
                    Ask(200, "b", 'p'),
                    Tell(205, "b", FAIL),
                    Ask(206, "c", 's'),
                    Ask(324, "c", 's'),
                    Ask(325, "c", 'p'),
                ],
                HALF_OPEN,
            ),
            (
                "a probe whose owner vanished expires and another caller takes it",
                vec![
                    Tell(0, "a", FAIL),
                    Tell(1, "a", FAIL),
                    Tell(2, "a", FAIL),
                    Ask(130, "b", 'p'),
                    Ask(189, "c", 's'),
                    Ask(191, "c", 'p'),
                ],
                HALF_OPEN,
            ),
            (
                "a neutral probe hands the probe on",
                vec![
                    Tell(0, "a", FAIL),
                    Tell(1, "a", FAIL),
                    Tell(2, "a", FAIL),
                    Ask(130, "b", 'p'),
                    Tell(131, "b", Report::Neutral),
                    Ask(132, "c", 'p'),
                ],
                HALF_OPEN,
            ),
            (
                "a Retry-After longer than the cooldown sets it",
                vec![
                    Tell(0, "a", FAIL),
                    Tell(1, "a", FAIL),
                    Tell(2, "a", ra(600)),
                    Ask(300, "b", 's'),
                    Ask(602, "b", 'p'),
                ],
                HALF_OPEN,
            ),
            (
                "a shorter Retry-After leaves the cooldown",
                vec![
                    Tell(0, "a", FAIL),
                    Tell(1, "a", FAIL),
                    Tell(2, "a", ra(5)),
                    Ask(100, "b", 's'),
                    Ask(122, "b", 'p'),
                ],
                HALF_OPEN,
            ),
            (
                "late reports while open change nothing",
                vec![
                    Tell(0, "a", FAIL),
                    Tell(1, "a", FAIL),
                    Tell(2, "a", FAIL),
                    Tell(50, "x", OK),
                    Tell(100, "y", FAIL),
                    Ask(121, "b", 's'),
                    Ask(122, "b", 'p'),
                ],
                HALF_OPEN,
            ),
            (
                "history older than an hour is forgotten",
                vec![
                    Tell(0, "a", FAIL),
                    Tell(1, "a", FAIL),
                    Tell(7200, "a", FAIL),
                    Tell(7201, "a", FAIL),
                    Ask(7202, "a", 'c'),
                ],
                CLOSED,
            ),
        ];
        for (what, steps, want) in cases {
            let rec = run(&steps);
            assert_eq!(state(rec.as_ref()), want, "{what}: {rec:?}");
        }
    }

    #[test]
    fn the_window_keeps_the_last_ten_calls() {
        let mut steps = Vec::new();
        for t in 0..25 {
            steps.push(Step::Tell(t, "a", OK));
        }
        let rec = run(&steps).unwrap();
        assert_eq!(rec.recent, "ssssssssss");
        assert_eq!(cooldown_s(Duration::from_secs(120), None), 120);
        assert_eq!(
            cooldown_s(
                Duration::from_secs(120),
                Some(Duration::from_millis(180_500))
            ),
            181
        );
    }

    fn open_record(now: DateTime<Utc>) -> BreakerRecord {
        BreakerRecord {
            model: "p/m".into(),
            state: OPEN.into(),
            consecutive_failures: 3,
            recent: "fff".into(),
            opened_at: Some(now - chrono::Duration::seconds(300)),
            cooldown_s: 120,
            probe: None,
            updated_at: now - chrono::Duration::seconds(300),
            seal: None,
            last_error: None,
            generation: 0,
        }
    }

    fn key() -> SigningKey {
        SigningKey::from_seed(&[3; 32])
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_probe_across_ledger_connections() {
        // Eight claimants, each on its own connection to the same ledger file
        // (as separate processes would be), race for an expired breaker's probe.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let mut seed = Ledger::open(&path).unwrap();
        let now = Utc::now();
        seed.update_breaker("p/m", |_| {
            (Some(ledger::seal(&open_record(now), &key())), ())
        })
        .unwrap();
        let policy = BreakerPolicy::with_cooldown(120);
        let mut tasks = Vec::new();
        for i in 0..8 {
            let breakers = Arc::new(Breakers::kept_in(
                Kept(Ledger::open(&path).unwrap()),
                policy,
                &key(),
            ));
            tasks.push(tokio::spawn(async move {
                let until = Utc::now() + chrono::Duration::seconds(60);
                breakers.admit("p/m", &format!("run-{i}"), until).await
            }));
        }
        let mut probes = 0;
        for t in tasks {
            match t.await.unwrap() {
                Admission::Probe => probes += 1,
                Admission::Skip { why, .. } => assert!(why.contains("probe"), "{why}"),
                Admission::Call => panic!("a half-open breaker let a caller through"),
            }
        }
        assert_eq!(probes, 1);
        let rec = seed.breaker("p/m").unwrap().unwrap();
        assert_eq!(rec.state, HALF_OPEN);
        assert!(rec.probe.is_some());
    }

    #[tokio::test]
    async fn breakers_persist_in_the_ledger_and_misconfiguration_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let policy = BreakerPolicy::with_cooldown(120);
        let first = Breakers::kept_in(Kept(Ledger::open(&path).unwrap()), policy, &key());
        let until = Utc::now() + chrono::Duration::seconds(60);
        for _ in 0..3 {
            assert_eq!(first.admit("p/m", "run-1", until).await, Admission::Call);
            first
                .report(
                    "p/m",
                    "run-1",
                    Report::Failure {
                        retry_after: None,
                        error: "HTTP 500 from the model provider: boom".to_owned(),
                    },
                )
                .await;
        }
        first.mark_misconfigured("p/other", "HTTP 401");
        assert!(first.is_open("p/m").await);
        drop(first);

        let second = Breakers::kept_in(Kept(Ledger::open(&path).unwrap()), policy, &key());
        assert!(second.is_open("p/m").await);
        // A later run that skips the model says what opened its breaker.
        match second.admit("p/m", "run-2", until).await {
            Admission::Skip { why, .. } => assert!(
                why.starts_with(
                    "circuit breaker open on: HTTP 500 from the model provider: boom (3 of its \
                     last 3 calls failed, 3 in a row; until "
                ),
                "{why}"
            ),
            other => panic!("an open breaker admitted a call: {other:?}"),
        }
        assert_eq!(second.admit("p/n", "run-2", until).await, Admission::Call);
        assert_eq!(second.misconfigured("p/other"), None);
    }

    /// State written into the ledger by anyone but the gate is refused:
    /// read as a closed breaker (the model is called), and named.
    #[tokio::test]
    async fn a_breaker_state_the_gate_did_not_sign_is_refused_and_named() {
        let now = Utc::now();
        let recent_open = BreakerRecord {
            opened_at: Some(now),
            updated_at: now,
            ..open_record(now)
        };
        let sealed = ledger::seal(&recent_open, &key());
        // (what is stored, whether it is obeyed)
        let cases: Vec<(&str, BreakerRecord, bool)> = vec![
            ("signed by the gate", sealed.clone(), true),
            ("planted, unsigned", recent_open.clone(), false),
            (
                "signed by another key",
                ledger::seal(&recent_open, &SigningKey::from_seed(&[9; 32])),
                false,
            ),
            (
                "signed closed, then edited open",
                BreakerRecord {
                    state: OPEN.into(),
                    ..ledger::seal(
                        &BreakerRecord {
                            state: CLOSED.into(),
                            ..recent_open.clone()
                        },
                        &key(),
                    )
                },
                false,
            ),
        ];
        for (what, stored, obeyed) in cases {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("ledger.db");
            let mut seed = Ledger::open(&path).unwrap();
            seed.update_breaker("p/m", |_| (Some(stored), ())).unwrap();
            let policy = BreakerPolicy::with_cooldown(120);
            let breakers = Breakers::kept_in(Kept(Ledger::open(&path).unwrap()), policy, &key());
            let until = now + chrono::Duration::seconds(60);
            let admitted = breakers.admit("p/m", "run-1", until).await;
            assert_eq!(
                matches!(admitted, Admission::Skip { .. }),
                obeyed,
                "{what}: {admitted:?}"
            );
            let refused = breakers.refused();
            assert_eq!(refused.is_empty(), obeyed, "{what}: {refused:?}");
            if !obeyed {
                assert_eq!(refused[0].0, "p/m", "{what}");
            }
        }
    }

    /// A signed state older than one the gate has seen (in this run, or in
    /// an earlier one that kept what it saw) was copied back: refused, read
    /// as closed, and named; the next state written is newer than both.
    #[tokio::test]
    async fn a_breaker_state_copied_back_from_earlier_is_refused() {
        let now = Utc::now();
        let open_at = |generation| {
            ledger::seal(
                &BreakerRecord {
                    opened_at: Some(now),
                    updated_at: now,
                    generation,
                    ..open_record(now)
                },
                &key(),
            )
        };
        // (what, the state stored, the newest generation an earlier run kept, obeyed)
        let cases = [
            ("the newest state", open_at(7), Some(7), true),
            ("nothing kept from earlier", open_at(3), None, true),
            ("older than one seen", open_at(3), Some(7), false),
            ("newer than one seen", open_at(8), Some(7), true),
        ];
        let policy = BreakerPolicy::with_cooldown(120);
        let until = now + chrono::Duration::seconds(60);
        for (what, stored, kept, obeyed) in cases {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("ledger.db");
            let seen = dir.path().join("breakers-seen.json");
            if let Some(g) = kept {
                std::fs::write(&seen, format!("{{\"p/m\": {g}}}")).unwrap();
            }
            let mut seed = Ledger::open(&path).unwrap();
            seed.update_breaker("p/m", |_| (Some(stored), ())).unwrap();
            let breakers = Breakers::kept_in(Kept(Ledger::open(&path).unwrap()), policy, &key())
                .remembering(dir.path(), &seen);
            let admitted = breakers.admit("p/m", "run-1", until).await;
            assert_eq!(
                matches!(admitted, Admission::Skip { .. }),
                obeyed,
                "{what}: {admitted:?}"
            );
            let refused = breakers.refused();
            assert_eq!(refused.is_empty(), obeyed, "{what}: {refused:?}");
            if !obeyed {
                assert!(refused[0].1.contains("copied back"), "{what}: {refused:?}");
            }
        }

        // Within one run: the newest state read, then an older one copied
        // back over it; what the run writes next is newer than both, and
        // the generation it saw is kept for the next run.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let seen = dir.path().join("breakers-seen.json");
        let mut seed = Ledger::open(&path).unwrap();
        let closed_7 = ledger::seal(
            &BreakerRecord {
                state: CLOSED.into(),
                opened_at: None,
                generation: 7,
                ..open_record(now)
            },
            &key(),
        );
        seed.update_breaker("p/m", |_| (Some(closed_7), ()))
            .unwrap();
        let breakers = Breakers::kept_in(Kept(Ledger::open(&path).unwrap()), policy, &key())
            .remembering(dir.path(), &seen);
        assert_eq!(breakers.admit("p/m", "run-1", until).await, Admission::Call);
        seed.update_breaker("p/m", |_| (Some(open_at(3)), ()))
            .unwrap();
        assert_eq!(breakers.admit("p/m", "run-1", until).await, Admission::Call);
        assert_eq!(breakers.refused().len(), 1);
        breakers
            .report(
                "p/m",
                "run-1",
                Report::Failure {
                    retry_after: None,
                    error: "boom".into(),
                },
            )
            .await;
        let written = seed.breaker("p/m").unwrap().unwrap();
        assert_eq!(written.generation, 8);
        assert!(ledger::vouch(&written, &[key().public_key().clone()]).is_ok());
        let kept: BTreeMap<String, u64> =
            serde_json::from_slice(&std::fs::read(&seen).unwrap()).unwrap();
        assert_eq!(kept["p/m"], 8);
    }
}
