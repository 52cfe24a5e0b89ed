//! What the review fills of a run's record: the review as a whole, each
//! reviewer's part, its attempts down the failback chain and what it was
//! shown. A finding and its lineage are in [`crate::findings`], the tier in
//! [`crate::tier`], the routing override's outcome in
//! [`crate::routing::patch`].

use serde::{Deserialize, Serialize};

/// A duration as the record keeps it: whole milliseconds, saturating.
pub fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Whether the model review ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReviewStatus {
    /// Reviewers were asked.
    Ran,
    /// No reviewer was asked.
    DidNotRun,
}

impl ReviewStatus {
    /// As the record writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ran => "ran",
            Self::DidNotRun => "did_not_run",
        }
    }
}

/// The model review of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReviewRecord {
    /// Ran or not.
    pub status: ReviewStatus,
    /// Why it did not run.
    pub reason: Option<String>,
    /// One entry per seat the tier plans (asked, skipped or not run), then
    /// the model coordinator when it was asked.
    pub specialists: Vec<SpecialistRecord>,
    /// The input-token budget: what the run planned and what it sent.
    #[serde(default)]
    pub budget: Option<BudgetRecord>,
    /// Circuit breakers whose state in the ledger the gate could not vouch
    /// for (unsigned, or edited since it was signed): read as closed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breakers_refused: Vec<BreakerRefusal>,
    /// Where the request the reviewers were sent is kept, for a replay
    /// (absent when no reviewer was asked, and in records made before
    /// requests were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<RequestKept>,
}

/// The kept review request of a run (what `gate replay` rebuilds from),
/// named by its digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RequestKept {
    /// Lowercase hex sha256 of the kept bytes.
    pub sha256: String,
    /// Where they were put: a file, an object URL or `ledger:sha256:<hex>`;
    /// `null` when they could not be.
    pub at: Option<String>,
    /// Why they were not kept, when they were not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_kept: Option<String>,
}

impl ReviewRecord {
    /// What reviewers that ran were not shown of their remit: each range
    /// once, sorted, with the reviewers it was kept from.
    pub fn unseen(&self) -> Vec<(ByteRange, Vec<String>)> {
        let mut unseen: Vec<(ByteRange, Vec<String>)> = Vec::new();
        for s in self.specialists.iter().filter(|s| s.status == "ok") {
            for r in &s.coverage.cut_ranges {
                match unseen.iter_mut().find(|(u, _)| u == r) {
                    Some((_, roles)) => roles.push(s.role.clone()),
                    None => unseen.push((r.clone(), vec![s.role.clone()])),
                }
            }
        }
        unseen.sort();
        unseen
    }
}

impl ReviewRecord {
    /// A review that did not run, with the reason.
    pub fn did_not_run(reason: impl Into<String>) -> Self {
        Self {
            status: ReviewStatus::DidNotRun,
            reason: Some(reason.into()),
            specialists: Vec::new(),
            budget: None,
            breakers_refused: Vec::new(),
            request: None,
        }
    }
}

/// A circuit breaker's stored state the run refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BreakerRefusal {
    /// The model (`provider/name`).
    pub model: String,
    /// Why the state was not the gate's.
    pub why: String,
}

/// `[policy] max_input_tokens` as a run spent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BudgetRecord {
    /// The budget.
    pub max_input_tokens: u64,
    /// The pre-flight estimate: every request the review may send (system
    /// prompt, schema, every role, one repair each, the coordinator).
    pub estimated: u64,
    /// Input tokens sent: as providers reported them, or as estimated for a
    /// request whose usage was not reported.
    pub sent: u64,
}

/// One specialist's part in a review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SpecialistRecord {
    /// quality, security, …
    pub role: String,
    /// The model that answered (or was tried last), as the routing table names it.
    pub model: String,
    /// `ok`, `skipped` (nothing in its remit: not asked) or `did_not_run`.
    pub status: String,
    /// Why it was skipped or did not run.
    pub reason: Option<String>,
    /// Input tokens as reported (cached included); `None` when not reported.
    pub input_tokens: Option<u64>,
    /// Cached input tokens as reported.
    pub cached_input_tokens: Option<u64>,
    /// Input tokens written to a provider cache, as reported.
    pub cache_write_tokens: Option<u64>,
    /// Output tokens as reported.
    pub output_tokens: Option<u64>,
    /// Cost in US dollars; `None` when it could not be priced.
    pub cost_usd: Option<f64>,
    /// Wall time.
    pub latency_ms: u64,
    /// Every attempt down the failback chain.
    pub attempts: Vec<Attempt>,
    /// What it was shown.
    pub coverage: Coverage,
    /// blake3 over its remit's files and their digests: an unchanged remit
    /// lets a retry carry this review forward.
    #[serde(default)]
    pub remit_digest: String,
    /// The run whose review of the same remit was carried forward, if any.
    #[serde(default)]
    pub carried_from: Option<String>,
}

/// How one attempt on one model ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    /// A valid answer.
    Ok,
    /// A transient failure: the chain moved on.
    Retryable,
    /// A failure another model would not fix: the chain stopped; or a
    /// quota, credit or budget error (or a model not asked because of one),
    /// after which only models of another provider account are tried.
    Fatal,
    /// The model's circuit breaker was open: skipped without a call.
    BreakerOpen,
    /// The reply was still invalid after its one repair: the chain moved on
    /// (the model is not unhealthy, so its breaker is not told).
    Malformed,
    /// The run's input-token budget could not hold the request: not sent,
    /// and the chain stopped.
    OverBudget,
}

impl AttemptOutcome {
    /// Whether the model was sent a request in this attempt.
    pub fn asked(self) -> bool {
        !matches!(self, Self::BreakerOpen | Self::OverBudget)
    }
}

/// One attempt, for the record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Attempt {
    /// The model, as the provider names it.
    pub model: String,
    /// How it ended.
    pub outcome: AttemptOutcome,
    /// Wall time of the attempt.
    pub latency_ms: u64,
    /// What went wrong, when something did.
    pub error: Option<String>,
}

/// What one specialist saw of its remit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Coverage {
    /// Files shown (wholly or in part).
    pub files: Vec<String>,
    /// Bytes of file content shown.
    pub bytes_shown: u64,
    /// Bytes of file content in its remit.
    pub bytes_total: u64,
    /// Files a cap cut, with the bytes cut.
    pub cut: Vec<(String, u64)>,
    /// What of those files was not shown, as byte ranges (of the file's
    /// text as read: its bytes, when it is UTF-8).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cut_ranges: Vec<ByteRange>,
}

/// A span of a file's bytes: from `start`, up to (not including) `end`.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct ByteRange {
    /// Workspace-relative path.
    pub file: String,
    /// The first byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

impl ByteRange {
    /// `src/app.py bytes 262144-307199` (the last byte inclusive).
    pub fn words(&self) -> String {
        format!(
            "{} bytes {}-{}",
            self.file,
            self.start,
            self.end.saturating_sub(1)
        )
    }
}
