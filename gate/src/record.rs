//! The run record: one gate run as one versioned value.
//!
//! Every renderer and the evidence bundle are views of a [`RunRecord`]; none
//! of them recomputes a verdict or a status.

use std::collections::BTreeMap;
use std::fmt;

use gate_harness::{Location, Output};
use gate_review::findings::Finding;
use gate_review::record::ReviewRecord;
use gate_review::routing::patch::OverrideStatus;
use gate_review::tier::Tier;

use serde::{Deserialize, Serialize};

use crate::doom::{DoomLoop, Failure};
use crate::memory::EarlierFate;

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
    /// The criteria's mutation scoring, when `[policy] mutants` asked for
    /// it and they passed: each mutant of the change's own lines, what the
    /// criteria that read its file made of it, the scores, the tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutants: Option<Box<gate_mutants::report::Document>>,
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
