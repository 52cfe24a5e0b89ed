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
    /// Attempt number within the run's series, from 1.
    pub attempt: u32,
    /// The series the attempt belongs to: the spec's line of work the
    /// pipeline named (a pull request, a branch). `None` for the spec's
    /// own series: a run with no key, and every run recorded before keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<String>,
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

/// A run row as a report checks it against what it vouched for before:
/// its seq, the envelope digest it names, and a digest of every column as
/// the store holds it (read raw: no column is parsed to make it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowStamp {
    /// Position in the ledger.
    pub seq: u64,
    /// The envelope digest the row names (its `envelope_sha256`), as
    /// bytes; `None` when that column is not 64 hex digits.
    pub envelope: Option<[u8; 32]>,
    /// blake3 over every column's stored value, each tagged and
    /// length-prefixed: any edit to the row changes it.
    pub columns: [u8; 32],
    /// The digest of the report rows stored for the run (`run_facts`,
    /// `run_models`, `run_roles`), to compare with what the row derives
    /// (`ledger::expected_report_rows`): an edit to them changes it.
    pub derived: [u8; 32],
}

impl RowStamp {
    /// The envelope digest of a row's `envelope_sha256` column.
    pub fn envelope_of(hex_digest: &str) -> Option<[u8; 32]> {
        hex::decode(hex_digest).ok()?.try_into().ok()
    }
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
    /// What the history showed, for an outcome harvested from git (`None`
    /// for one a person recorded). Signed with the rest; absent from the
    /// payload when `None`, so envelopes from before it still vouch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<OutcomeEvidence>,
    /// The DSSE envelope (JSON text) signing the fields above; `None` for
    /// an outcome recorded before outcomes were signed, or planted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope: Option<String>,
}

/// A harvest state: the run's change is not on the branch yet.
pub const NOT_INTEGRATED: &str = "not_integrated";

/// Where sources reserved to the harvester begin: a person's outcome may
/// not claim one.
pub const HARVESTED_SOURCE_PREFIX: &str = "git:";

/// What a harvested outcome rests on: the commits that landed the run's
/// change, the later commits that said something about them, the lines
/// blamed, and how far the label is to be trusted.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OutcomeEvidence {
    /// How far the label is trusted, in hundredths (0–100).
    pub confidence: u8,
    /// The commits on the integration branch that carry the run's change.
    pub landed: Vec<String>,
    /// How it landed: `merge` (the head is on the branch), `patch` (a
    /// commit with the same patch id) or `tree` (a commit with the same tree).
    pub landed_by: String,
    /// The later commits the label rests on (the revert, the fix).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commits: Vec<EvidenceCommit>,
    /// The lines a fix changed that blame to a landed commit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blamed: Vec<BlamedLine>,
    /// For a survival: how many later commits, over how many days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub survived: Option<Survival>,
}

/// A later commit a harvested label rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceCommit {
    /// Its full id.
    pub commit: String,
    /// The first line of its message, as written (untrusted text).
    pub summary: String,
    /// Its commit date.
    pub date: DateTime<Utc>,
}

/// A line a fix deleted or modified, and the landed commit it blamed to on
/// the fix's parent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlamedLine {
    /// The file, as named in the fix's parent.
    pub file: String,
    /// The line number in the fix's parent.
    pub line: u32,
    /// The commit that last changed it.
    pub commit: String,
}

/// How long a landed change lived with no sign of breaking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Survival {
    /// Commits on the branch after it landed.
    pub later_commits: u32,
    /// Whole days from landing to the newest commit looked at.
    pub days: u32,
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
    /// How many times the gate has written this model's state: one more at
    /// every write, signed with the rest, so an older state copied back
    /// reads as what it is. Absent from the payload when 0 (a state signed
    /// before it existed still vouches).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub generation: u64,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Which runs [`Ledger::list`](super::Ledger::list) returns, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// Only this spec.
    pub spec_id: Option<String>,
    /// Only this series.
    pub series: Option<SeriesFilter>,
    /// Only this verdict.
    pub verdict: Option<String>,
    /// Only runs started at or after this instant.
    pub since: Option<DateTime<Utc>>,
    /// At most this many rows.
    pub limit: Option<u32>,
}

/// Which series of runs a [`RunFilter`] keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeriesFilter {
    /// The runs recorded without a key: the spec's own series.
    Unkeyed,
    /// The runs of this key.
    Key(String),
}

impl SeriesFilter {
    /// The filter that keeps the runs of `key` (`None`: the unkeyed ones).
    pub fn of(key: Option<&str>) -> Self {
        key.map_or(Self::Unkeyed, |k| Self::Key(k.to_owned()))
    }

    /// The key it keeps, `None` for the unkeyed runs.
    pub fn key(&self) -> Option<&str> {
        match self {
            Self::Unkeyed => None,
            Self::Key(k) => Some(k),
        }
    }
}

/// Lowercase hex of a 32-byte hash, parsed.
pub(crate) fn parse_hash(text: &str) -> Option<Hash> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}

/// A replay of recorded reviews (`gate replay`): its signed bundle and a
/// summary of its scores for the report. It is no run: it has no seq and
/// is not in the chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayEntry {
    /// The replay's id.
    pub replay_id: String,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
    /// The candidate routing table's origin (its file).
    pub routing: String,
    /// blake3 of the candidate table as applied.
    pub routing_blake3: String,
    /// Where its bundle is (as a run's `bundle_path`).
    pub bundle_path: String,
    /// sha256 of the bundle's bytes.
    pub envelope_sha256: String,
    /// The scores, as the replay's report has them (runs, skipped,
    /// baseline, candidate, agreement, strata), JSON.
    pub summary: serde_json::Value,
}
