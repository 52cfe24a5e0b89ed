//! The rows and records a ledger holds, and how their hashes are read back.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::merkle::Hash;

/// How a row's `bundle_path` begins when its bundle is kept in the ledger
/// itself, with the row: `ledger:sha256:<hex>`.
pub const BUNDLE_IN_LEDGER: &str = "ledger:sha256:";

/// What the gate records about a run (the ledger adds the chain fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEntry {
    /// The run's unique id (also the bundle's file stem).
    pub run_id: String,
    /// The spec's stable id.
    pub spec_id: String,
    /// Attempt number within the spec's series, from 1.
    pub attempt: u32,
    /// `pass`, `fail`, `escalate` or `incomplete`.
    pub verdict: String,
    /// `trivial`, `light` or `full`.
    pub tier: String,
    /// When the run started.
    pub started_at: DateTime<Utc>,
    /// When the run finished.
    pub finished_at: DateTime<Utc>,
    /// Model input tokens over all specialists.
    pub input_tokens: u64,
    /// Of those, tokens served from a prompt cache.
    pub cached_input_tokens: u64,
    /// Model output tokens.
    pub output_tokens: u64,
    /// Cost in US dollars, when every model used has a known price.
    pub cost_usd: Option<f64>,
    /// Where the bundle is, as the gate will look for it again.
    pub bundle_path: String,
    /// Further facts reports group by (agent, models, roles…), a JSON object.
    pub extra: serde_json::Value,
}

/// A run as stored: the entry and its place in the chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerRow {
    /// Position in the ledger, from 1, without gaps.
    pub seq: u64,
    /// What the gate recorded.
    #[serde(flatten)]
    pub entry: RunEntry,
    /// Lowercase hex sha256 of the stored envelope bytes.
    pub envelope_sha256: String,
    /// The previous row's `envelope_sha256`; `None` for row 1.
    pub prev_sha256: Option<String>,
    /// Lowercase hex RFC 6962 leaf hash of the envelope bytes.
    pub leaf_hash: String,
    /// When the row was appended (later than `finished_at` for an import).
    pub recorded_at: DateTime<Utc>,
}

/// What happened after a decision: the run later broke, or it was fine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeEntry {
    /// The run it is about.
    pub run_id: String,
    /// True when what the run decided on later broke.
    pub broken: bool,
    /// Why (a CI failure, a revert, an incident, a human's check).
    pub reason: Option<String>,
    /// Where the news came from.
    pub source: Option<String>,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
    /// The DSSE envelope (JSON text) signing the fields above; `None` for
    /// an outcome recorded before outcomes were signed, or planted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope: Option<String>,
}

/// A human's dismissal of a finding: not raised again unless its code changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dismissal {
    /// The run that raised it.
    pub run_id: String,
    /// That run's spec.
    pub spec_id: String,
    /// The finding's id.
    pub finding_id: String,
    /// Why it is not worth acting on.
    pub reason: String,
    /// blake3 of the code under the finding when dismissed (its file's digest).
    pub code_digest: Option<String>,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
    /// The DSSE envelope (JSON text) signing the fields above; `None` for
    /// a dismissal recorded before dismissals were signed, or planted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope: Option<String>,
    /// Who made it: `agent` for a dismissal made from inside an agent's
    /// session (it never quiets a critical or warning finding); `None`
    /// for a person's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// A criterion's result on a base commit, kept so a series of attempts runs
/// the base once: found again only for the same commit, the same item
/// definition and the same verifiers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseResult {
    /// The base commit (full id).
    pub base_commit: String,
    /// The criterion's id.
    pub item_id: String,
    /// blake3 of the criterion's definition and of the checks it runs after.
    pub definition_digest: String,
    /// blake3 of the verifier files it ran on the base.
    pub verifier_digest: String,
    /// `passed` or `failed` (a base run that could not run is not kept).
    pub status: String,
    /// Why it failed, in one line.
    pub reason: Option<String>,
    /// blake3 of its captured output.
    pub output_digest: String,
    /// The run that ran it.
    pub run_id: String,
    /// When it was kept.
    pub recorded_at: DateTime<Utc>,
}

/// A break-glass override of a run's verdict, signed into its own bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverrideEntry {
    /// The run overridden.
    pub run_id: String,
    /// Its spec.
    pub spec_id: String,
    /// Why.
    pub reason: String,
    /// Who.
    pub by: String,
    /// The digest of the content the run decided on: the next run of the
    /// spec passes only on the same content.
    pub content_digest: String,
    /// The override's own signed bundle.
    pub bundle_path: String,
    /// Lowercase hex sha256 of that bundle's bytes.
    pub bundle_sha256: String,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
}

/// A model's circuit breaker, shared by every run that uses the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerRecord {
    /// The model (`provider/name`).
    pub model: String,
    /// `closed`, `open` or `half_open`.
    pub state: String,
    /// Retryable failures in a row.
    pub consecutive_failures: u32,
    /// The last calls' outcomes, oldest first: `s` success, `f` retryable failure.
    pub recent: String,
    /// When it last opened.
    pub opened_at: Option<DateTime<Utc>>,
    /// Seconds it stays open before one probe.
    pub cooldown_s: u64,
    /// While a half-open probe is out: who holds it, and until when.
    pub probe: Option<(String, DateTime<Utc>)>,
    /// When it was last written.
    pub updated_at: DateTime<Utc>,
    /// The DSSE envelope (JSON text) signing the fields above, written by
    /// the gate that wrote them; a state without one is not the gate's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
    /// The error of the last retryable failure counted (for an open
    /// breaker, the one that opened it); cleared by a success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// Which runs [`Ledger::list`](super::Ledger::list) returns, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// Only this spec.
    pub spec_id: Option<String>,
    /// Only this verdict.
    pub verdict: Option<String>,
    /// Only runs started at or after this instant.
    pub since: Option<DateTime<Utc>>,
    /// At most this many rows.
    pub limit: Option<u32>,
}

/// Lowercase hex of a 32-byte hash, parsed.
pub(crate) fn parse_hash(text: &str) -> Option<Hash> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}
