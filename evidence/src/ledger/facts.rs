//! The facts reports group runs by, read once from a run's `extra` object
//! when its row is appended, so a report reads plain columns and never
//! parses JSON per run.
//!
//! The keys read are the gate's (`gate::attest::ledger_extra`): `agent`,
//! `review`, `models`, `roles`, `findings`, `duplicates`,
//! `dispositions.{resolved,superseded}`, `isolation.kind`,
//! `criteria_passed` and `fail_to_pass`. A missing or mistyped key reads as
//! nothing (no agent, zero findings), never as an error: the run itself is
//! already decided and signed. Migration 3 derives the same facts in SQL
//! for rows written before it; a test holds the two to the same answers.

#[cfg(feature = "stores")]
use serde_json::Value;

use chrono::{DateTime, NaiveDate, Utc};

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
fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_owned)
}

#[cfg(feature = "stores")]
fn count(v: Option<&Value>) -> u64 {
    v.and_then(Value::as_u64).unwrap_or(0)
}

#[cfg(feature = "stores")]
fn array_len(v: Option<&Value>) -> u64 {
    v.and_then(Value::as_array).map_or(0, |a| a.len() as u64)
}

#[cfg(feature = "stores")]
impl StoredFacts {
    /// Reads the facts out of a run's `extra` object.
    pub(crate) fn from_extra(extra: &Value) -> Self {
        let mut models: Vec<String> = Vec::new();
        for m in extra
            .get("models")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !models.iter().any(|seen| seen == m) {
                models.push(m.to_owned());
            }
        }
        let mut roles: Vec<StoredRole> = Vec::new();
        for r in extra
            .get("roles")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(role) = r.get("role").and_then(Value::as_str) else {
                continue;
            };
            if roles.iter().any(|seen| seen.role == role) {
                continue;
            }
            roles.push(StoredRole {
                role: role.to_owned(),
                model: text(r.get("model")).unwrap_or_default(),
                status: text(r.get("status")).unwrap_or_default(),
                input_tokens: count(r.get("input_tokens")),
                cached_input_tokens: count(r.get("cached_input_tokens")),
                output_tokens: count(r.get("output_tokens")),
                cost_usd: r.get("cost_usd").and_then(Value::as_f64),
            });
        }
        let dispositions = extra.get("dispositions");
        Self {
            agent: text(extra.get("agent")),
            review: text(extra.get("review")),
            findings: array_len(extra.get("findings")),
            duplicates: count(extra.get("duplicates")),
            resolved: array_len(dispositions.and_then(|d| d.get("resolved"))),
            superseded: array_len(dispositions.and_then(|d| d.get("superseded"))),
            unisolated: extra
                .get("isolation")
                .and_then(|i| i.get("kind"))
                .and_then(Value::as_str)
                != Some("bwrap"),
            criteria_passed: count(extra.get("criteria_passed")),
            fail_to_pass: count(extra.get("fail_to_pass")),
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
