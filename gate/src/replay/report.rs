//! A replay's report: the `--format json` document and, without where its
//! bundle went, the predicate of the replay's own signed bundle.

use gate_scorecard::replays::{Rate, RunFigures, Side, Stratum};
use serde::{Deserialize, Serialize};

use crate::cli::ReplaySelection;

/// The predicate type of a replay's bundle, versioned.
pub(crate) const REPLAY_PREDICATE_TYPE: &str = "https://gate.dev/attestation/replay/v1";

/// The report's format version.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// A replay of recorded runs, scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(title = "gate replay report (gate replay --format json)")]
pub(crate) struct ReplayReport {
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// This replay's id.
    pub replay_id: String,
    /// When it started (RFC 3339, UTC).
    pub started_at: String,
    /// Wall time of the whole replay.
    pub elapsed_ms: u64,
    /// The candidate's routing table.
    pub routing: Routed,
    /// The candidate's prompts, each by key with its digest.
    pub prompts: Vec<PromptDigest>,
    /// The runs asked for (the seed included when `--sample` drew them).
    pub selection: ReplaySelection,
    /// Runs a stratum needs before it is given a rate.
    pub minimum_sample: u64,
    /// `--budget`: US dollars the candidate could spend, when limited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
    /// The signed plan this replay executed (its sha256), when it ran one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_sha256: Option<String>,
    /// The runs replayed.
    pub runs: Vec<ReplayedRun>,
    /// The runs selected that could not be replayed, with why.
    pub skipped: Vec<SkippedRun>,
    /// The recorded reviews' figures.
    pub baseline: Side,
    /// The candidate's figures.
    pub candidate: Side,
    /// Findings both raised out of the distinct findings either raised.
    pub agreement: Rate,
    /// The same figures per stratum (tier, language, tasks, area).
    pub strata: Vec<Stratum>,
    /// The targets of the plan, each met or not (a plan's replay only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetResult>,
    /// Where this replay's signed bundle was put (not in the bundle itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
}

/// A routing table by origin and digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Routed {
    /// The file it was read from (`built-in` for the built-in table).
    pub origin: String,
    /// blake3 of the table as applied.
    pub blake3: String,
}

/// One prompt by key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct PromptDigest {
    /// Its key (`security`, `quality`…).
    pub prompt: String,
    /// blake3 of its text.
    pub blake3: String,
}

/// One replayed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct ReplayedRun {
    /// The run.
    pub run_id: String,
    /// Its spec.
    pub spec_id: String,
    /// Its tier.
    pub tier: String,
    /// `broken`, `fine`, or `null` without an outcome.
    pub outcome: Option<String>,
    /// For a broken run, the files the fix or revert touched (empty: none named).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broken_files: Vec<String>,
    /// sha256 of the run's bundle.
    pub bundle_sha256: String,
    /// sha256 of the kept request it was rebuilt from.
    pub request_sha256: String,
    /// The recorded review.
    pub baseline: RunFigures,
    /// The candidate's.
    pub candidate: RunFigures,
}

/// A run selected but not replayed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct SkippedRun {
    /// The run.
    pub run_id: String,
    /// Why.
    pub why: String,
}

/// A plan's target and whether the replay met it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct TargetResult {
    /// As written: `recall >= 0.8`.
    pub target: String,
    /// The figure measured; `null` when there was nothing to measure.
    pub value: Option<f64>,
    /// Whether it holds (`false` with nothing to measure).
    pub met: bool,
}
