//! What a run keeps in its ledger row's `extra`, beside the columns: the
//! facts reports group by ([`RowFacts`], owned by the ledger that reads
//! them) and what the next attempt of the series reads back (its failure
//! fingerprints, the doom-loop detector's conclusion, the base runs).

use gate_evidence::ledger::{RowDispositions, RowFacts, RowFinding, RowRole, lenient};
use serde::{Deserialize, Serialize};

use crate::doom::{DoomLoop, Failure};
use crate::memory::Disposition;
use crate::record::{BaseRunsRecord, BaseState, DecidedBy, ItemStatus, RunRecord};

/// A run's `extra` object, whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct RowExtra {
    /// What reports read.
    #[serde(flatten)]
    pub facts: RowFacts,
    /// Whether a human overrode the verdict.
    #[serde(default, deserialize_with = "lenient")]
    pub overridden: bool,
    /// Findings published (after the coordinator).
    #[serde(default, deserialize_with = "lenient")]
    pub published: usize,
    /// The failure fingerprints the doom-loop detector compares.
    #[serde(default, deserialize_with = "lenient")]
    pub failures: Vec<Failure>,
    /// The doom-loop detector's conclusion, when it escalated.
    #[serde(default, deserialize_with = "lenient")]
    pub doom_loop: Option<DoomLoop>,
    /// What ran on the base, when a base was given.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub base_runs: Option<BaseRunsRecord>,
    /// The commit and branch the run verified.
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub verified: Option<crate::record::Verified>,
}

impl RowExtra {
    /// The row's `extra` for `record`.
    pub(crate) fn of(record: &RunRecord) -> Self {
        // Distinct and sorted. A model skipped by its open breaker, or for
        // the budget, was never asked.
        let models: std::collections::BTreeSet<&str> = record
            .review
            .specialists
            .iter()
            .flat_map(|s| s.attempts.iter())
            .filter(|a| a.outcome.asked())
            .map(|a| a.model.as_str())
            .collect();
        // Passed code-decided criteria, and which of them failed on the base:
        // the report's share of passes with fail-to-pass evidence.
        let passed: Vec<_> = record
            .criteria
            .iter()
            .filter(|c| c.decided_by == DecidedBy::Code)
            .filter(|c| matches!(c.status, ItemStatus::Passed | ItemStatus::Carried))
            .collect();
        let fail_to_pass = passed
            .iter()
            .filter(|c| {
                c.base_status
                    .as_ref()
                    .is_some_and(|b| b.status == BaseState::Failed)
            })
            .count();
        let facts = RowFacts {
            agent: record.agent.clone(),
            review: Some(record.review.status.as_str().to_owned()),
            models: models.into_iter().map(str::to_owned).collect(),
            roles: record.review.specialists.iter().map(role).collect(),
            findings: record.findings.iter().map(finding).collect(),
            duplicates: record.duplicates as u64,
            dispositions: dispositions(record),
            isolation: record.isolation.clone(),
            criteria_passed: passed.len() as u64,
            fail_to_pass: fail_to_pass as u64,
        };
        Self {
            facts,
            overridden: record.overridden,
            published: record.findings.len(),
            failures: record.failures.clone(),
            doom_loop: record.doom_loop.clone(),
            base_runs: record.base_runs.clone(),
            verified: record.verified.clone(),
        }
    }

    /// Reads a row's `extra` back, field by field: a field of the wrong
    /// shape reads as nothing, as [`RowFacts::read`] does; anything but an
    /// object reads as nothing at all.
    pub(crate) fn read(extra: &serde_json::Value) -> Self {
        Self::deserialize(extra).unwrap_or_default()
    }

    /// The object as stored.
    pub(crate) fn to_value(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::to_value(self)
    }
}

fn role(s: &gate_review::record::SpecialistRecord) -> RowRole {
    RowRole {
        role: s.role.clone(),
        model: s.model.clone(),
        status: s.status.clone(),
        input_tokens: s.input_tokens,
        cached_input_tokens: s.cached_input_tokens,
        output_tokens: s.output_tokens,
        cost_usd: s.cost_usd,
    }
}

fn finding(f: &gate_review::findings::Finding) -> RowFinding {
    RowFinding {
        id: f.id.clone(),
        severity: f.severity.clone(),
        role: f.role.clone(),
        file: f.file.clone(),
        line: f.line,
    }
}

/// Ids of the previous attempt's findings, by what this run found of them.
fn dispositions(record: &RunRecord) -> RowDispositions {
    let of = |d: Disposition| -> Vec<String> {
        record
            .finding_fates
            .iter()
            .filter(|f| f.disposition == d)
            .map(|f| f.id.clone())
            .collect()
    };
    RowDispositions {
        resolved: of(Disposition::Resolved),
        superseded: of(Disposition::Superseded),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::output::fixture;

    #[test]
    fn a_row_reads_back_as_written() {
        let record = fixture::record();
        let written = RowExtra::of(&record);
        let stored = written.to_value().unwrap();
        assert_eq!(RowExtra::read(&stored), written);
        // The ledger reads its facts out of the very same object.
        assert_eq!(RowFacts::read(&stored), written.facts);
        assert_eq!(
            stored["findings"].as_array().unwrap().len(),
            record.findings.len()
        );
    }

    #[test]
    fn a_field_gone_wrong_costs_only_itself() {
        let mut record = fixture::record();
        record.failures = vec![Failure {
            item: "build".into(),
            fingerprint: "abc".into(),
        }];
        let mut stored = RowExtra::of(&record).to_value().unwrap();
        stored["doom_loop"] = json!("not a conclusion");
        stored["agent"] = json!(7);
        let read = RowExtra::read(&stored);
        assert_eq!(read.failures, record.failures);
        assert_eq!(read.doom_loop, None);
        assert_eq!(read.facts.agent, None);
        assert_eq!(RowExtra::read(&json!("not an object")), RowExtra::default());
    }
}
