//! The run record: one gate run as one versioned value.
//!
//! Every renderer and the evidence bundle are views of a [`RunRecord`]; none
//! of them recomputes a verdict or a status.

use std::collections::BTreeMap;
use std::fmt;

use gate_harness::{Location, Output};

use serde::{Deserialize, Serialize};

/// A duration as the record keeps it: whole milliseconds, saturating.
pub(crate) fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Version of the run record, as the bundle's predicate keeps it. Version
/// 2 made `verdict_reasons` data objects (version 1 kept one line of text
/// each; such records still read, see [`Reason`]).
pub(crate) const FORMAT_VERSION: u32 = 2;

/// The decision.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Everything code and review could decide holds.
    Pass,
    /// The gate could not decide.
    Incomplete,
    /// Something definite failed.
    Fail,
    /// Hand to a human: a doom loop or the attempt budget.
    Escalate,
}

impl Verdict {
    /// The word used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::Escalate => "escalate",
            Self::Incomplete => "incomplete",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a verdict reason is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReasonKind {
    /// A cross-check (a `[[check]]`, a task's tests, a built-in, a page).
    Check,
    /// An acceptance criterion.
    Criterion,
    /// A review finding.
    Finding,
    /// The review itself: a reviewer that did not run, the budget, coverage.
    Review,
    /// The doom-loop detector or the attempt budget.
    DoomLoop,
    /// The gate's guard over its own inputs (a loosening at the base).
    Guard,
    /// A human's override.
    Override,
}

impl ReasonKind {
    /// The word used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Check => "check",
            Self::Criterion => "criterion",
            Self::Finding => "finding",
            Self::Review => "review",
            Self::DoomLoop => "doom_loop",
            Self::Guard => "guard",
            Self::Override => "override",
        }
    }
}

/// One reason for a verdict, as data: what it is about and why, in a
/// sentence that stands on its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Reason {
    /// What it is about.
    pub kind: ReasonKind,
    /// The item, finding, role or run it names.
    pub id: String,
    /// The sentence every format shows.
    pub why: String,
    /// The verdict this reason alone calls for.
    pub verdict: Verdict,
}

impl Reason {
    /// A reason about `id` calling for `verdict`.
    pub fn new(
        kind: ReasonKind,
        id: impl Into<String>,
        verdict: Verdict,
        why: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            id: id.into(),
            why: why.into(),
            verdict,
        }
    }

    /// A reason as a record of version 1 kept it (one line of text):
    /// what it is about read back from its words.
    fn from_line(line: String) -> Self {
        let id = line
            .split('`')
            .nth(1)
            .map(str::to_owned)
            .unwrap_or_default();
        let (kind, verdict) = if line.starts_with("check ") {
            (ReasonKind::Check, Verdict::Fail)
        } else if line.starts_with("criterion ") {
            (ReasonKind::Criterion, Verdict::Fail)
        } else if line.starts_with("critical finding") {
            (ReasonKind::Finding, Verdict::Fail)
        } else if line.starts_with("overridden by") {
            (ReasonKind::Override, Verdict::Pass)
        } else if line.starts_with("the series of") || line.contains("attempt") {
            (ReasonKind::DoomLoop, Verdict::Escalate)
        } else {
            (ReasonKind::Review, Verdict::Incomplete)
        };
        let verdict = if line.contains("could not be judged") || line.contains("was not decided") {
            Verdict::Incomplete
        } else {
            verdict
        };
        Self {
            kind,
            id,
            why: line,
            verdict,
        }
    }
}

impl<'de> Deserialize<'de> for Reason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// A reason as either version of the record wrote it.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Data {
                kind: ReasonKind,
                id: String,
                why: String,
                verdict: Verdict,
            },
            Line(String),
        }
        Ok(match Either::deserialize(d)? {
            Either::Data {
                kind,
                id,
                why,
                verdict,
            } => Reason {
                kind,
                id,
                why,
                verdict,
            },
            Either::Line(line) => Reason::from_line(line),
        })
    }
}

/// What a pass leaves unsaid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QualifierKind {
    /// No reviewer looked at the change.
    Unreviewed,
    /// More than half of the planned reviewers did not run.
    UnderReviewed,
}

impl QualifierKind {
    /// The words on the verdict line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unreviewed => "unreviewed",
            Self::UnderReviewed => "under-reviewed",
        }
    }
}

/// A pass with something left unsaid, and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Qualifier {
    /// Which.
    pub kind: QualifierKind,
    /// Why, in a few words ("no provider configured").
    pub why: String,
    /// The models an open circuit breaker skipped, when that is what kept
    /// a reviewer from running (sorted, each once).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breakers_open: Vec<String>,
}

/// The verdict as every format words it: `PASS`, `PASS (overridden)`,
/// `PASS (unreviewed: no provider configured)`, `FAIL`, …
pub(crate) fn verdict_line(record: &RunRecord) -> String {
    let line = match (record.verdict, &record.qualifier) {
        (Verdict::Pass, _) if record.overridden => "PASS (overridden)".to_owned(),
        (Verdict::Pass, Some(q)) if q.breakers_open.is_empty() => {
            format!("PASS ({}: {})", q.kind.as_str(), q.why)
        }
        // An open breaker kept the review from running: the line says so.
        (Verdict::Pass, Some(q)) => format!(
            "PASS ({}: {}; circuit breaker open: {})",
            q.kind.as_str(),
            q.why,
            q.breakers_open.join(", ")
        ),
        (v, _) => v.as_str().to_uppercase(),
    };
    // State planted in the ledger was not obeyed, and the line says so.
    let refused = &record.review.breakers_refused;
    if refused.is_empty() {
        return line;
    }
    let models: Vec<&str> = refused.iter().map(|r| r.model.as_str()).collect();
    format!(
        "{line} [circuit breaker state refused, read as closed: {}]",
        models.join(", ")
    )
}

/// Whether the gate guarded its own inputs in a run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SelfGuard {
    /// `on`: the spec, routing table, prompts and house rules were compared with the base's.
    pub status: GuardStatus,
    /// Why it was off.
    pub reason: Option<String>,
}

impl SelfGuard {
    /// The guard compared the gate's inputs with the base.
    pub fn on() -> Self {
        Self {
            status: GuardStatus::On,
            reason: None,
        }
    }

    /// The guard could not compare, and why.
    pub fn off(reason: impl Into<String>) -> Self {
        Self {
            status: GuardStatus::Off,
            reason: Some(reason.into()),
        }
    }
}

/// On or off.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum GuardStatus {
    /// Compared with the base.
    On,
    /// Not compared (records from before the guard was recorded read as off).
    #[default]
    Off,
}

/// The risk tier.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// One generalist reviewer, cheap model.
    Trivial,
    /// Three specialists, standard model.
    Light,
    /// All specialists on the strong model, an integration reviewer, a model coordinator.
    Full,
}

impl Tier {
    /// The word used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Trivial => "trivial",
            Self::Light => "light",
            Self::Full => "full",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// State of a check (or a code-decided criterion) at the end of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    /// Ran (or was judged) and holds.
    Passed,
    /// Ran (or was judged) and does not hold.
    Failed,
    /// Verified in an earlier attempt; none of its inputs changed.
    Carried,
    /// Not run: something it depends on failed.
    Skipped,
    /// Could not be decided (a model-judged criterion with no review).
    Unverified,
}

impl ItemStatus {
    /// The word used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Carried => "carried",
            Self::Skipped => "skipped",
            Self::Unverified => "unverified",
        }
    }
}

/// What a check stands for.
pub(crate) use gate_harness::ItemKind as CheckKind;

/// One cross-check's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckRecord {
    /// Its id.
    pub id: String,
    /// A `[[check]]`, a task's tests, or a built-in.
    pub kind: CheckKind,
    /// The task that owns it (a task's `tests` item), if any.
    #[serde(default)]
    pub task: Option<String>,
    /// The command line, or what a built-in or report check looked at.
    pub command: String,
    /// Final state.
    pub status: ItemStatus,
    /// Exit code, when a command exited on its own.
    pub exit_code: Option<i32>,
    /// Wall time.
    pub duration_ms: u64,
    /// When it started, in milliseconds after the run started (items that
    /// did not run this attempt have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<u64>,
    /// blake3 of the check's definition and input files.
    pub inputs_digest: String,
    /// The run that verified it, when carried.
    pub carried_from: Option<String>,
    /// That run's bundle (sha256 of its bytes), when carried.
    #[serde(default)]
    pub carried_bundle: Option<String>,
    /// Why it failed or was skipped.
    pub reason: Option<String>,
    /// Captured output (bounded, redacted tail).
    pub output: Output,
    /// Places a built-in or report check pointed at.
    pub locations: Vec<Location>,
    /// What its processes were seen to read, when they were traced (kept
    /// from the run that verified it, when carried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<crate::observed::Observed>,
}

/// Who decided a criterion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// A command.
    Code,
    /// A model, as a yes/no question.
    Model,
}

/// One acceptance criterion's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CriterionRecord {
    /// Its id.
    pub id: String,
    /// The task it belongs to.
    pub task: String,
    /// What must hold.
    pub text: String,
    /// Code or model.
    pub decided_by: DecidedBy,
    /// The command, for a code-decided criterion.
    pub command: Option<String>,
    /// Final state.
    pub status: ItemStatus,
    /// For a model-judged criterion: the probability it holds.
    pub met: Option<f64>,
    /// For a model-judged criterion: the probability it needs.
    pub threshold: Option<f64>,
    /// Exit code of the command.
    pub exit_code: Option<i32>,
    /// Wall time.
    pub duration_ms: u64,
    /// When it started, in milliseconds after the run started (items that
    /// did not run this attempt have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<u64>,
    /// blake3 of the criterion's definition and input files.
    pub inputs_digest: String,
    /// The run that verified it, when carried.
    pub carried_from: Option<String>,
    /// That run's bundle (sha256 of its bytes), when carried.
    #[serde(default)]
    pub carried_bundle: Option<String>,
    /// Why it failed, was skipped or is unverified.
    pub reason: Option<String>,
    /// Captured output of the command.
    pub output: Output,
    /// What its result on the base must be for a pass to count.
    #[serde(default)]
    pub expect: gate_specs::Expect,
    /// Its result on the base commit, when it was run there or was to be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_status: Option<BaseStatus>,
    /// What its command's processes were seen to read, when they were
    /// traced (kept from the run that verified it, when carried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<crate::observed::Observed>,
}

/// A criterion's result on the base commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BaseStatus {
    /// Passed, failed, or could not run.
    pub status: BaseState,
    /// Why it failed or could not run, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// blake3 of its captured output on the base, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_digest: Option<String>,
    /// The run that ran it on the base, when it is this run's or an
    /// earlier run's result kept in the ledger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_run: Option<String>,
    /// The bounded, redacted tail of its output on the base, when this
    /// run ran it there (a result kept from an earlier run has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tail: Option<String>,
}

/// What became of a criterion on the base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BaseState {
    /// Its command exited 0 on the base.
    Passed,
    /// Its command exited non-zero on the base.
    Failed,
    /// It did not run to an exit of its own: a check it needs failed, it
    /// timed out, there is no base, or base runs were off.
    CouldNotRun,
}

impl BaseState {
    /// The word used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::CouldNotRun => "could_not_run",
        }
    }
}

impl CriterionRecord {
    /// "fail→pass" and the like: the base's result, then the change's;
    /// `None` when nothing was asked of the base.
    pub fn base_transition(&self) -> Option<String> {
        let base = self.base_status.as_ref()?;
        let now = match self.status {
            ItemStatus::Passed | ItemStatus::Carried => "pass",
            ItemStatus::Failed => "fail",
            ItemStatus::Skipped | ItemStatus::Unverified => "?",
        };
        Some(match base.status {
            BaseState::Passed => format!("pass→{now}"),
            BaseState::Failed => format!("fail→{now}"),
            BaseState::CouldNotRun => "base could not run".to_owned(),
        })
    }
}

/// How the run treated base runs: the policy, whether `--no-base-runs`
/// turned them off, and how many criteria ran on the base or were known.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BaseRunsRecord {
    /// `[policy] base_runs`.
    pub policy: String,
    /// Whether `gate verify --no-base-runs` turned them off.
    pub turned_off: bool,
    /// Criteria this run ran on the base.
    pub ran: usize,
    /// Criteria whose base result an earlier run left in the ledger.
    pub reused: usize,
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

/// A circuit breaker's stored state the run refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BreakerRefusal {
    /// The model (`provider/name`).
    pub model: String,
    /// Why the state was not the gate's.
    pub why: String,
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
        }
    }
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

/// A finding of the review, after the coordinator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    /// First 12 hex digits of blake3 over role, file and normalised title.
    pub id: String,
    /// critical, warning or suggestion.
    pub severity: String,
    /// The role that raised it.
    pub role: String,
    /// Workspace-relative file.
    pub file: String,
    /// 1-based line.
    pub line: Option<u32>,
    /// One line.
    pub title: String,
    /// Why it matters.
    pub detail: String,
    /// 0–1.
    pub confidence: f64,
    /// Who raised it and what became of it.
    #[serde(default)]
    pub lineage: Lineage,
}

impl Finding {
    /// A finding as `role` raised it, before anything decided its fate.
    pub fn raised(
        role: &str,
        severity: &str,
        file: String,
        line: Option<u32>,
        title: String,
        detail: String,
        confidence: f64,
    ) -> Self {
        Self {
            id: crate::findings::finding_id(role, &file, &title),
            severity: severity.to_owned(),
            role: role.to_owned(),
            file,
            line,
            title,
            detail,
            confidence,
            lineage: Lineage::raised(role, severity),
        }
    }

    /// This finding, dropped or merged away by `by`, with why.
    #[must_use]
    pub fn dropped(mut self, by: FateBy, why: impl Into<String>) -> Self {
        self.lineage.fate = Fate::Dropped;
        self.lineage.by = Some(by);
        self.lineage.why = Some(why.into());
        self
    }

    /// This finding, merged by `by` into `into` (the finding that stands for it).
    #[must_use]
    pub fn merged(mut self, by: FateBy, into: &Finding, why: impl Into<String>) -> Self {
        self.lineage.fate = Fate::Merged;
        self.lineage.by = Some(by);
        self.lineage.why = Some(why.into());
        self.lineage.merged_into = Some(into.id.clone());
        self
    }
}

/// What became of a raised finding.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Fate {
    /// It stands as raised (perhaps rephrased).
    #[default]
    Kept,
    /// It stands at a lower severity than raised.
    Downgraded,
    /// It stands at a higher severity than raised.
    Upgraded,
    /// Another finding stands for it (`merged_into`).
    Merged,
    /// It does not stand.
    Dropped,
}

/// Who decided a finding's fate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FateBy {
    /// The reply's validation: the finding broke the answer's schema.
    Validation,
    /// The change's bounds: it cites a file outside the change.
    OutsideChange,
    /// `[policy] confidence_floor`.
    ConfidenceFloor,
    /// The deterministic fusion of duplicates across roles.
    Dedupe,
    /// The model coordinator.
    Coordinator,
    /// A dismissal (`gate dismiss`) of the same finding on the same code.
    Dismissal,
}

/// A finding's lineage: who raised it and what became of it, by whom and why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Lineage {
    /// The roles that raised this defect: its own first, then those whose
    /// duplicates were merged into it.
    pub raised_by: Vec<String>,
    /// Its severity as raised.
    pub raised_severity: String,
    /// Its title as raised, when the coordinator rephrased it.
    pub raised_title: Option<String>,
    /// Its detail as raised, when the coordinator rephrased it.
    pub raised_detail: Option<String>,
    /// What became of it.
    pub fate: Fate,
    /// Who decided, when something other than keeping it as raised happened.
    pub by: Option<FateBy>,
    /// Why, in the decider's words.
    pub why: Option<String>,
    /// The finding that stands for it, when merged.
    pub merged_into: Option<String>,
    /// What the coordinator asked of it that did not hold, and why not.
    pub overruled: Option<String>,
}

impl Lineage {
    /// The lineage of a finding just raised by `role`.
    pub fn raised(role: &str, severity: &str) -> Self {
        Self {
            raised_by: vec![role.to_owned()],
            raised_severity: severity.to_owned(),
            ..Self::default()
        }
    }
}

/// A page the change touched, as captured in this run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PageRecord {
    /// The page's id.
    pub id: String,
    /// Its URL.
    pub url: String,
    /// The changed files that made it worth looking at.
    pub files: Vec<String>,
    /// Its screenshots, desktop then phone (none when it did not load).
    pub shots: Vec<ShotRecord>,
}

/// One screenshot: the PNG kept in the state directory, as a model was shown it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShotRecord {
    /// `desktop` or `phone`.
    pub viewport: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The size the browser captured, when it was downscaled to the providers' limits.
    pub captured: Option<(u32, u32)>,
    /// Where the PNG is kept.
    pub file: String,
    /// Its length in bytes.
    pub bytes: u64,
    /// sha256 and blake3 of its bytes.
    pub digest: gate_evidence::statement::DigestSet,
}

/// What isolated the processes a run started for the workspace (kept in
/// the ledger row too, so the type is the ledger's).
pub(crate) use gate_evidence::ledger::RunIsolation;

/// A protected verifier file as the series' first attempt found it (what a
/// retry without a base compares with).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProtectedState {
    /// blake3 of its content (of its target, for a link).
    pub digest: String,
    /// Whether it was executable.
    pub executable: bool,
    /// Whether it was a symbolic link.
    pub link: bool,
}

/// What a run verified: the commit the workspace was at, its branch, and
/// whether its files were that commit's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verified {
    /// The commit `HEAD` was at; none outside a repository or before its
    /// first commit.
    pub commit: Option<String>,
    /// `HEAD`'s branch; on a detached checkout, the branch the CI names
    /// (`GITHUB_HEAD_REF`, `GITHUB_REF_NAME`,
    /// `CI_MERGE_REQUEST_SOURCE_BRANCH_NAME`, `CI_COMMIT_REF_NAME`,
    /// `BUILDKITE_BRANCH`, `CIRCLE_BRANCH`, `BRANCH_NAME`, `GIT_BRANCH`);
    /// else none.
    pub branch: Option<String>,
    /// How many of the workspace's files differed from that commit
    /// (changed, added, removed, untracked and not ignored): 0 when the
    /// run verified exactly the commit.
    pub uncommitted: usize,
    /// The repository's identity: its root commits (those without a
    /// parent) reachable from `commit`, sorted. What `gate outcome harvest`
    /// matches a repository by, so a shared ledger's runs of other
    /// repositories are left alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub root_commits: Vec<String>,
}

/// The attempt series a run belongs to: one line of work on a spec, as
/// the pipeline names it (a pull or merge request, a branch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Series {
    /// The key: `--series` as given, `pr:N` or `mr:N` for a pull or merge
    /// request, `branch:NAME` for a branch.
    pub key: String,
    /// Where it came from: `--series`, the CI variable it was read from,
    /// or `branch` (what the run verified: `HEAD`'s branch, else the CI's
    /// name for it).
    pub from: String,
}

/// One gate run, whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunRecord {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Unique id of this run.
    pub run_id: String,
    /// The spec's stable id.
    pub spec_id: String,
    /// The spec's summary.
    pub summary: String,
    /// The coding agent that made the change, when the spec names it.
    pub agent: Option<String>,
    /// Attempt number in the run's series (1 for the first).
    pub attempt: u32,
    /// The series the attempt belongs to: the spec's line of work the
    /// pipeline named, and where the key came from. None for the spec's own
    /// series (no key could be found, and every run from before keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<Series>,
    /// When the run started (RFC 3339, UTC).
    pub started_at: String,
    /// Wall time of the whole run.
    pub duration_ms: u64,
    /// The gate's version.
    pub tool_version: String,
    /// blake3 of the spec file's bytes.
    pub spec_digest: String,
    /// The base revision the change was measured from, if any.
    pub base: Option<String>,
    /// The commit `base` resolved to before anything of the workspace ran:
    /// what the change, the self-guard and the verifiers were compared with.
    #[serde(default)]
    pub base_commit: Option<String>,
    /// The commit and branch the workspace was at, and how far its files
    /// were from that commit, when the run began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<Verified>,
    /// What isolated the processes the run started.
    #[serde(default)]
    pub isolation: RunIsolation,
    /// How the run treated base runs (none without a criterion that asks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_runs: Option<BaseRunsRecord>,
    /// The decision.
    pub verdict: Verdict,
    /// Why, strongest first: each names what it is about.
    pub verdict_reasons: Vec<Reason>,
    /// What a pass leaves unsaid (review did not run, or most of it did
    /// not): decided once here, shown by every format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qualifier: Option<Qualifier>,
    /// Whether the gate compared its own inputs with the base (and why not).
    #[serde(default)]
    pub self_guard: SelfGuard,
    /// Whether a human override made this pass.
    pub overridden: bool,
    /// Run from inside an agent's session (`gate hook`, `gate mcp`): signed
    /// with a key of the user's own, never the pipeline's, and never the
    /// decision of record.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub advisory: bool,
    /// Whether the run's row reached the ledger (not in the bundle: known only after it).
    #[serde(default)]
    pub recorded: bool,
    /// Risk tier.
    pub tier: Tier,
    /// Why that tier ("5 tasks × 25 criteria").
    pub tier_reason: String,
    /// Files in the change (what review looks at and sensitive paths lift on).
    pub changed_files: Vec<String>,
    /// Number of files fingerprinted.
    pub files_fingerprinted: usize,
    /// Cross-checks, in spec order, then task tests, then built-ins.
    pub checks: Vec<CheckRecord>,
    /// Acceptance criteria, in spec order.
    pub criteria: Vec<CriterionRecord>,
    /// The model review.
    pub review: ReviewRecord,
    /// Findings that stand: kept by the coordinator, not dismissed.
    pub findings: Vec<Finding>,
    /// Every other finding raised, each with what became of it and why
    /// (`lineage`): invalid, outside the change, below the confidence
    /// floor, merged as a duplicate, dropped by the coordinator, dismissed.
    #[serde(default)]
    pub dropped_findings: Vec<Finding>,
    /// The doom-loop detector's conclusion, when it escalated.
    pub doom_loop: Option<DoomLoop>,
    /// blake3 over every fingerprinted file and its digest: the content an
    /// override of this run applies to.
    #[serde(default)]
    pub content_digest: String,
    /// sha256 of the previous attempt's bundle, on a retry.
    #[serde(default)]
    pub previous_bundle: Option<String>,
    /// What became of the previous attempt's open findings.
    #[serde(default)]
    pub finding_fates: Vec<EarlierFate>,
    /// Findings the coordinator dropped as duplicates of others.
    #[serde(default)]
    pub duplicates: usize,
    /// The failure fingerprints the doom-loop detector reads.
    #[serde(default)]
    pub failures: Vec<Failure>,
    /// Who overrode the verdict and why, when `overridden`.
    #[serde(default)]
    pub override_note: Option<String>,
    /// Pages the change touched, with their screenshots' digests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pages: Vec<PageRecord>,
    /// The protected verifiers as the series' first attempt found them:
    /// what an attempt without a base compares with.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub protected_reference: BTreeMap<String, ProtectedState>,
    /// Path of the evidence bundle, when one was written (not in the bundle itself).
    #[serde(default)]
    pub bundle: Option<String>,
    /// What became of the routing override (`GATE_ROUTING_URL`), when one was named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing_override: Option<OverrideStatus>,
    /// The tasks' JUnit reports accepted for the spec on its base so far, in
    /// any series (the newest 200), each with the fingerprint of the task's
    /// files it was accepted over: what tells a stale report from a fresh
    /// one by content.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_reports: Vec<AcceptedReport>,
}

/// A task's JUnit report a run accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AcceptedReport {
    /// The task's id.
    pub task: String,
    /// blake3 of the report's bytes.
    pub report: String,
    /// The fingerprint of the task's files (its `paths`, the report left
    /// out) it was accepted over.
    pub files: String,
}

// What the stages produce and the record keeps: defined here, at the
// ground floor, so the record depends on no stage; each stage re-exports
// its own.

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

/// What became of an earlier finding in this attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    /// Raised again: still open.
    Open,
    /// Not raised again, and its file changed: the fix resolved it.
    Resolved,
    /// Its file was deleted: nothing can be inferred.
    Superseded,
    /// Not raised again, though its file did not change.
    NotRaised,
}

/// What became of an earlier attempt's finding, for the record (a
/// finding's own fate in this run is `Fate`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EarlierFate {
    /// The finding's id.
    pub id: String,
    /// What became of it.
    pub disposition: Disposition,
}

/// A failure fingerprint with the item it came from (for the hand-off message).
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Failure {
    /// The failed item's id.
    pub item: String,
    /// Its fingerprint.
    pub fingerprint: String,
}

/// Why a series was escalated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// The same failure set several attempts in a row.
    Repeat,
    /// Two failure sets taking turns.
    Oscillation,
    /// The number of failures is not going down.
    NoProgress,
    /// The attempt budget is spent.
    Budget,
}

impl Pattern {
    /// The word used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Repeat => "repeat",
            Self::Oscillation => "oscillation",
            Self::NoProgress => "no_progress",
            Self::Budget => "budget",
        }
    }
}

/// The detector's conclusion, recorded in the bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DoomLoop {
    /// Which pattern.
    pub pattern: Pattern,
    /// The attempts that show it.
    pub attempts: Vec<u32>,
    /// The items failing in the latest of them.
    pub failing: Vec<String>,
    /// The hand-off message.
    pub message: String,
}

/// What became of an override, for the run record and the bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OverrideStatus {
    /// Where it came from (without query or credentials).
    pub url: String,
    /// `applied`, `failed`, or `skipped` (`--offline`).
    pub status: String,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The rows it changed, as `row: change`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
}
