//! The facts reports group runs by. [`RowFacts`] is their one owner: the
//! gate writes it into a run's `extra` object, and each store reads it back
//! once, when the row is appended, into plain columns, so a report never
//! parses JSON per run. Renaming a field renames it for both sides.
//!
//! Reading is lenient field by field: a missing or mistyped field (in a row
//! written by hand, say) reads as nothing (no agent, zero findings), never
//! as an error, since the run itself is already decided and signed.
//! Migration 3 derives the same facts in SQL for rows written before it,
//! from the same names; a test holds the two to the same answers.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
#[cfg(feature = "stores")]
use serde_json::Value;

use chrono::{DateTime, NaiveDate, Utc};

use super::entries::{Dismissal, OutcomeEntry};

/// What a run keeps in its ledger row's `extra` for reports. The gate adds
/// fields of its own beside these (flattened into the same object).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RowFacts {
    /// The coding agent that made the change, when the spec names one.
    #[serde(default, deserialize_with = "lenient")]
    pub agent: Option<String>,
    /// `ran` or `did_not_run`.
    #[serde(default, deserialize_with = "lenient")]
    pub review: Option<String>,
    /// Every model asked, distinct.
    #[serde(default, deserialize_with = "lenient_items")]
    pub models: Vec<String>,
    /// One entry per reviewer.
    #[serde(default, deserialize_with = "lenient_items")]
    pub roles: Vec<RowRole>,
    /// The findings the run reported.
    #[serde(default, deserialize_with = "lenient_items")]
    pub findings: Vec<RowFinding>,
    /// Findings merged away as duplicates of another.
    #[serde(default, deserialize_with = "lenient")]
    pub duplicates: u64,
    /// Earlier findings this run found resolved or superseded.
    #[serde(default, deserialize_with = "lenient")]
    pub dispositions: RowDispositions,
    /// What isolated the processes the run started.
    #[serde(default, deserialize_with = "lenient")]
    pub isolation: RunIsolation,
    /// Code-decided criteria that passed (ran or carried).
    #[serde(default, deserialize_with = "lenient")]
    pub criteria_passed: u64,
    /// Of those, the ones whose base run failed: fail-to-pass evidence.
    #[serde(default, deserialize_with = "lenient")]
    pub fail_to_pass: u64,
}

/// One reviewer of a run, as its row keeps it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RowRole {
    /// The role (`quality`, `security`…).
    pub role: String,
    /// The model that answered for it (empty when none was named).
    #[serde(default, deserialize_with = "lenient")]
    pub model: String,
    /// `ok` or `did_not_run`.
    #[serde(default, deserialize_with = "lenient")]
    pub status: String,
    /// Input tokens, when reported.
    #[serde(default, deserialize_with = "lenient")]
    pub input_tokens: Option<u64>,
    /// Of those, served from a prompt cache.
    #[serde(default, deserialize_with = "lenient")]
    pub cached_input_tokens: Option<u64>,
    /// Output tokens, when reported.
    #[serde(default, deserialize_with = "lenient")]
    pub output_tokens: Option<u64>,
    /// Cost in US dollars, when known.
    #[serde(default, deserialize_with = "lenient")]
    pub cost_usd: Option<f64>,
}

/// One finding of a run, as its row keeps it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RowFinding {
    /// Its stable id.
    #[serde(default, deserialize_with = "lenient")]
    pub id: String,
    /// `blocker`, `major`, `minor` or `info`.
    #[serde(default, deserialize_with = "lenient")]
    pub severity: String,
    /// The reviewer that raised it.
    #[serde(default, deserialize_with = "lenient")]
    pub role: String,
    /// The file it is about (empty when none).
    #[serde(default, deserialize_with = "lenient")]
    pub file: String,
    /// Its line, when it names one.
    #[serde(default, deserialize_with = "lenient")]
    pub line: Option<u32>,
}

/// Ids of earlier findings, by what became of them in this run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RowDispositions {
    /// Found resolved.
    #[serde(default, deserialize_with = "lenient_items")]
    pub resolved: Vec<String>,
    /// Found superseded by a finding of this run.
    #[serde(default, deserialize_with = "lenient_items")]
    pub superseded: Vec<String>,
}

/// What isolated the processes a run started for the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunIsolation {
    /// `bwrap` (each process in a bubblewrap sandbox) or `none`.
    pub kind: String,
    /// `host` or `loopback`.
    pub network: String,
    /// Why the run was not isolated, or had the host's network when the
    /// spec asked for a private one.
    pub reason: Option<String>,
    /// Who the items ran as on the host; absent in records made before it
    /// was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<RunIdentity>,
    /// The gate's own tools the run used, where they were found and their
    /// digests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<RunTool>,
    /// What recorded the files the items read: `strace`, `ebpf`, or `none`
    /// (nothing is carried on a retry); absent in records made before it
    /// was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracer: Option<String>,
    /// The identity of the host toolchain the items ran (blake3 over the
    /// folders of their `PATH` and the `[sandbox] readable` paths, each
    /// with the inode and times of every entry directly in it): a retry
    /// under another carries nothing; absent in records made before it
    /// was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolchain: Option<String>,
}

/// Who the items of a run ran as, on the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunIdentity {
    /// The host uid: never 0.
    pub uid: u32,
    /// The host gid.
    pub gid: u32,
    /// `per_run` (a uid of the run's own, the gate running as root) or
    /// `gate_user` (the gate's own unprivileged uid, in a user namespace
    /// of the item's own when sandboxed).
    pub kind: String,
}

/// One of the gate's own tools, as a run found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunTool {
    /// Its name (`bwrap`, `nsenter`, `setpriv`, `git`, `sh`, `strace`, `clang`, `gate-drop`).
    pub name: String,
    /// Where it was found, links resolved.
    pub path: String,
    /// The SHA-256 of the file.
    pub sha256: String,
}

impl RunIsolation {
    /// Whether the run's processes ran unisolated.
    pub fn unisolated(&self) -> bool {
        self.kind != "bwrap"
    }
}

impl Default for RunIsolation {
    /// What a record from before isolation was recorded reads as.
    fn default() -> Self {
        Self {
            kind: "none".to_owned(),
            network: "host".to_owned(),
            reason: Some("not recorded".to_owned()),
            identity: None,
            tools: Vec::new(),
            tracer: None,
            toolchain: None,
        }
    }
}

/// A value of the wrong shape reads as the type's default: for a field of
/// a row's `extra` (`#[serde(deserialize_with = …)]`), so one field gone
/// wrong costs only itself.
pub fn lenient<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let v = serde_json::Value::deserialize(d)?;
    Ok(T::deserialize(v).unwrap_or_default())
}

/// An array whose items of the wrong shape are left out; anything but an
/// array reads as empty.
fn lenient_items<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::Array(items) => items
            .into_iter()
            .filter_map(|v| T::deserialize(v).ok())
            .collect(),
        _ => Vec::new(),
    })
}

impl RowFacts {
    /// Reads the facts out of a run's `extra` (anything but an object reads
    /// as no facts).
    pub fn read(extra: &serde_json::Value) -> Self {
        Self::deserialize(extra).unwrap_or_default()
    }
}

/// Which runs a report covers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReportScope {
    /// Only this spec.
    pub spec_id: Option<String>,
    /// Only runs started at or after this instant.
    pub since: Option<DateTime<Utc>>,
}

impl ReportScope {
    /// True when every run is in scope.
    pub fn is_all(&self) -> bool {
        self.spec_id.is_none() && self.since.is_none()
    }
}

/// One run as a report reads it, borrowed from the database row.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFacts<'a> {
    /// The run's ledger position.
    pub seq: u64,
    /// Its spec.
    pub spec_id: &'a str,
    /// `pass`, `fail`, `escalate` or `incomplete`.
    pub verdict: &'a str,
    /// `trivial`, `light` or `full`.
    pub tier: &'a str,
    /// The day (UTC) the run started.
    pub started_on: NaiveDate,
    /// The coding agent that made the change, when the spec names one.
    pub agent: Option<&'a str>,
    /// `ran` or `did_not_run`.
    pub review: Option<&'a str>,
    /// Model input tokens.
    pub input_tokens: u64,
    /// Of those, served from a prompt cache.
    pub cached_input_tokens: u64,
    /// Model output tokens.
    pub output_tokens: u64,
    /// Cost in US dollars, when known.
    pub cost_usd: Option<f64>,
    /// Findings the run reported.
    pub findings: u64,
    /// Findings merged away as duplicates of another.
    pub duplicates: u64,
    /// Earlier findings this run found resolved.
    pub resolved: u64,
    /// Earlier findings this run found superseded.
    pub superseded: u64,
    /// Whether the processes it started ran without a sandbox (a run
    /// recorded before isolation was recorded ran without one).
    pub unisolated: bool,
    /// Code-decided criteria that passed (ran or carried).
    pub criteria_passed: u64,
    /// Of those, the ones whose base run failed: fail-to-pass evidence.
    pub fail_to_pass: u64,
}

/// One specialist of one run, as a report reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleFacts<'a> {
    /// The run's ledger position.
    pub seq: u64,
    /// The role (`quality`, `security`…).
    pub role: &'a str,
    /// The model that answered for it (empty when none was named).
    pub model: &'a str,
    /// `ok` or `did_not_run` (empty when not recorded).
    pub status: &'a str,
    /// Input tokens.
    pub input_tokens: u64,
    /// Of those, served from a prompt cache.
    pub cached_input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cost in US dollars, when known.
    pub cost_usd: Option<f64>,
}

/// What is known after a run's decision: its latest outcome and its latest
/// override, each with when it was recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutcomeState {
    /// The run's ledger position.
    pub seq: u64,
    /// The run's id.
    pub run_id: String,
    /// Every outcome of the run as stored, oldest first (for the reader to
    /// vouch for: an unsigned one is not the gate's).
    pub outcomes: Vec<OutcomeEntry>,
    /// The latest outcome (by the order they were recorded): broken or not, and when.
    pub latest: Option<(bool, DateTime<Utc>)>,
    /// When the run was last overridden.
    pub overridden_at: Option<DateTime<Utc>>,
}

/// A dismissed finding and the run that raised it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DismissalRef {
    /// The ledger position of the run that raised it.
    pub seq: u64,
    /// The finding's id.
    pub finding_id: String,
    /// The dismissal as stored (for the reader to vouch for).
    pub dismissal: Dismissal,
}

#[cfg(feature = "stores")]
/// A specialist's figures as stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StoredRole {
    pub(crate) role: String,
    pub(crate) model: String,
    pub(crate) status: String,
    pub(crate) input_tokens: u64,
    pub(crate) cached_input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub(crate) cost_usd: Option<f64>,
}

#[cfg(feature = "stores")]
/// The facts of one run's `extra`, as stored beside its row.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct StoredFacts {
    pub(crate) agent: Option<String>,
    pub(crate) review: Option<String>,
    pub(crate) findings: u64,
    pub(crate) duplicates: u64,
    pub(crate) resolved: u64,
    pub(crate) superseded: u64,
    pub(crate) unisolated: bool,
    pub(crate) criteria_passed: u64,
    pub(crate) fail_to_pass: u64,
    /// Distinct, in first-seen order.
    pub(crate) models: Vec<String>,
    /// One per role, the first entry of a role kept.
    pub(crate) roles: Vec<StoredRole>,
}

#[cfg(feature = "stores")]
impl StoredFacts {
    /// Reads the facts out of a run's `extra` object.
    pub(crate) fn from_extra(extra: &Value) -> Self {
        let facts = RowFacts::read(extra);
        let mut models: Vec<String> = Vec::new();
        for m in facts.models {
            if !models.contains(&m) {
                models.push(m);
            }
        }
        let mut roles: Vec<StoredRole> = Vec::new();
        for r in facts.roles {
            if roles.iter().any(|seen| seen.role == r.role) {
                continue;
            }
            roles.push(StoredRole {
                role: r.role,
                model: r.model,
                status: r.status,
                input_tokens: r.input_tokens.unwrap_or(0),
                cached_input_tokens: r.cached_input_tokens.unwrap_or(0),
                output_tokens: r.output_tokens.unwrap_or(0),
                cost_usd: r.cost_usd,
            });
        }
        Self {
            agent: facts.agent,
            review: facts.review,
            findings: facts.findings.len() as u64,
            duplicates: facts.duplicates,
            resolved: facts.dispositions.resolved.len() as u64,
            superseded: facts.dispositions.superseded.len() as u64,
            unisolated: facts.isolation.unisolated(),
            criteria_passed: facts.criteria_passed,
            fail_to_pass: facts.fail_to_pass,
            models,
            roles,
        }
    }
}

#[cfg(feature = "stores")]
/// The day of a stored timestamp (`YYYY-MM-DDT…`), read without a full parse.
pub(crate) fn day_of(stored: &str) -> Option<NaiveDate> {
    let b = stored.as_bytes();
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        b[range].iter().try_fold(0u32, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
        })
    };
    NaiveDate::from_ymd_opt(i32::try_from(num(0..4)?).ok()?, num(5..7)?, num(8..10)?)
}

#[cfg(test)]
#[cfg(feature = "stores")]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn facts_from_extra() {
        let unisolated = StoredFacts {
            unisolated: true,
            ..StoredFacts::default()
        };
        let cases = [
            (json!({}), unisolated.clone()),
            (
                json!({"isolation": {"kind": "none", "network": "host"}}),
                unisolated.clone(),
            ),
            (
                json!({"agent": "claude-code", "review": "ran", "models": ["a", "b", "a", 3],
                       "roles": [
                           {"role": "quality", "model": "a", "status": "ok", "input_tokens": 10,
                            "cached_input_tokens": 4, "output_tokens": 2, "cost_usd": 0.5},
                           {"role": "quality", "model": "b"},
                           {"model": "no role"},
                           {"role": "security", "input_tokens": -1, "cost_usd": null}],
                       "findings": [{}, {}, {}], "duplicates": 2,
                       "dispositions": {"resolved": ["x", "y"], "superseded": ["z"]},
                       "isolation": {"kind": "bwrap", "network": "host", "reason": null},
                       "criteria_passed": 4, "fail_to_pass": 3}),
                StoredFacts {
                    agent: Some("claude-code".into()),
                    review: Some("ran".into()),
                    findings: 3,
                    duplicates: 2,
                    resolved: 2,
                    superseded: 1,
                    unisolated: false,
                    criteria_passed: 4,
                    fail_to_pass: 3,
                    models: vec!["a".into(), "b".into()],
                    roles: vec![
                        StoredRole {
                            role: "quality".into(),
                            model: "a".into(),
                            status: "ok".into(),
                            input_tokens: 10,
                            cached_input_tokens: 4,
                            output_tokens: 2,
                            cost_usd: Some(0.5),
                        },
                        StoredRole {
                            role: "security".into(),
                            model: String::new(),
                            status: String::new(),
                            input_tokens: 0,
                            cached_input_tokens: 0,
                            output_tokens: 0,
                            cost_usd: None,
                        },
                    ],
                },
            ),
            (
                json!({"agent": 7, "models": "a", "findings": 3, "duplicates": 1.5,
                       "dispositions": {"resolved": "x"}, "isolation": "bwrap"}),
                unisolated,
            ),
        ];
        for (extra, want) in cases {
            assert_eq!(StoredFacts::from_extra(&extra), want, "{extra}");
        }
    }

    #[test]
    fn days() {
        assert_eq!(
            day_of("2025-03-01T10:00:00.000000Z"),
            NaiveDate::from_ymd_opt(2025, 3, 1)
        );
        for bad in ["", "2025-3-01", "2025-13-01T", "20x5-03-01T", "2025-02-30"] {
            assert_eq!(day_of(bad), None, "{bad}");
        }
    }
}
