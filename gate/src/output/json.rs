//! `--format json`: one object, `format_version` first. What an agent
//! harness hands its agent: every failed item carries its own words (the
//! redacted output tail the bundle keeps), a criterion its text and task,
//! and the verdict its reasons as data (its fields are listed in
//! `docs/output-formats.md`).

use gate_review::findings::Finding;
use gate_review::record::ReviewRecord;
use gate_review::routing::patch::OverrideStatus;
use gate_review::tier::Tier;
use serde::Serialize;

use crate::doom::DoomLoop;
use crate::record::{
    BaseRunsRecord, BaseStatus, CheckRecord, CriterionRecord, DecidedBy, ItemStatus, Qualifier,
    Reason, RunIsolation, RunRecord, SelfGuard, Verdict, verdict_line,
};
use gate_harness::{ItemKind, Location};

/// Version of the `--format json` document and of every `jsonl` event.
/// Fields are only ever added within a version.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// The `--format json` document: the one type that defines it, in the
/// order its fields are written (the `jsonl` verdict event and `gate
/// evidence show --format json` write the same).
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(title = "gate verify --format json")]
pub(crate) struct Document<'a> {
    format_version: u32,
    run_id: &'a str,
    spec_id: &'a str,
    attempt: u32,
    /// The series the attempt belongs to and where its key came from;
    /// null for the spec's own series.
    series: &'a Option<crate::record::Series>,
    verdict: Verdict,
    verdict_line: String,
    qualifier: &'a Option<Qualifier>,
    overridden: bool,
    /// Run from inside an agent's session: not the decision of record.
    advisory: bool,
    recorded: bool,
    tier: Tier,
    tier_reason: &'a str,
    changed_files: &'a [String],
    base: &'a Option<String>,
    base_commit: &'a Option<String>,
    /// The commit and branch the workspace was at, and how many of its
    /// files differed from that commit.
    verified: &'a Option<crate::record::Verified>,
    isolation: &'a RunIsolation,
    base_runs: &'a Option<BaseRunsRecord>,
    /// The criteria's mutation scoring (`[policy] mutants`), when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    mutants: Option<&'a gate_mutants::report::Document>,
    self_guard: &'a SelfGuard,
    verdict_reasons: &'a [Reason],
    checks: Vec<CheckEntry<'a>>,
    criteria: Vec<CriterionEntry<'a>>,
    review: &'a ReviewRecord,
    findings: &'a [Finding],
    dropped_findings: &'a [Finding],
    doom_loop: &'a Option<DoomLoop>,
    bundle: &'a Option<String>,
    /// Only when `GATE_ROUTING_URL` was set.
    #[serde(skip_serializing_if = "Option::is_none")]
    routing_override: Option<&'a OverrideStatus>,
}

/// A check as the document shows it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct CheckEntry<'a> {
    id: &'a str,
    kind: ItemKind,
    task: &'a Option<String>,
    status: ItemStatus,
    exit_code: Option<i32>,
    duration_ms: u64,
    inputs_digest: &'a str,
    carried_from: &'a Option<String>,
    reason: &'a Option<String>,
    output_tail: Option<&'a str>,
    locations: &'a [Location],
    /// How many files its command read beyond its declared inputs, when
    /// it was traced (`gate evidence show` names them).
    #[serde(skip_serializing_if = "Option::is_none")]
    read_beyond_inputs: Option<usize>,
}

/// A criterion as the document shows it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct CriterionEntry<'a> {
    id: &'a str,
    task: &'a str,
    text: &'a str,
    decided_by: DecidedBy,
    status: ItemStatus,
    met: Option<f64>,
    threshold: Option<f64>,
    exit_code: Option<i32>,
    duration_ms: u64,
    inputs_digest: &'a str,
    carried_from: &'a Option<String>,
    reason: &'a Option<String>,
    output_tail: Option<&'a str>,
    expect: gate_specs::Expect,
    base_status: &'a Option<BaseStatus>,
    /// How many files its command read beyond its declared inputs, when
    /// it was traced (`gate evidence show` names them).
    #[serde(skip_serializing_if = "Option::is_none")]
    read_beyond_inputs: Option<usize>,
}

impl<'a> Document<'a> {
    /// The document of `record`.
    pub(crate) fn of(record: &'a RunRecord) -> Self {
        Self {
            format_version: FORMAT_VERSION,
            run_id: &record.run_id,
            spec_id: &record.spec_id,
            attempt: record.attempt,
            series: &record.series,
            verdict: record.verdict,
            verdict_line: verdict_line(record),
            qualifier: &record.qualifier,
            overridden: record.overridden,
            advisory: record.advisory,
            recorded: record.recorded,
            tier: record.tier,
            tier_reason: &record.tier_reason,
            changed_files: &record.changed_files,
            base: &record.base,
            base_commit: &record.base_commit,
            verified: &record.verified,
            isolation: &record.isolation,
            base_runs: &record.base_runs,
            mutants: record.mutants.as_deref(),
            self_guard: &record.self_guard,
            verdict_reasons: &record.verdict_reasons,
            checks: record.checks.iter().map(check).collect(),
            criteria: record.criteria.iter().map(criterion).collect(),
            review: &record.review,
            findings: &record.findings,
            dropped_findings: &record.dropped_findings,
            doom_loop: &record.doom_loop,
            bundle: &record.bundle,
            routing_override: record.routing_override.as_ref(),
        }
    }
}

/// A failed item's output as the bundle keeps it (bounded, redacted); none
/// for an item that did not fail.
fn tail(status: ItemStatus, text: &str) -> Option<&str> {
    (status == ItemStatus::Failed).then_some(text)
}

fn check(c: &CheckRecord) -> CheckEntry<'_> {
    CheckEntry {
        id: &c.id,
        kind: c.kind,
        task: &c.task,
        status: c.status,
        exit_code: c.exit_code,
        duration_ms: c.duration_ms,
        inputs_digest: &c.inputs_digest,
        carried_from: &c.carried_from,
        reason: &c.reason,
        output_tail: tail(c.status, &c.output.tail),
        locations: if c.status == ItemStatus::Failed {
            &c.locations
        } else {
            &[]
        },
        read_beyond_inputs: c.observed.as_ref().map(|o| o.outside_inputs.len()),
    }
}

fn criterion(c: &CriterionRecord) -> CriterionEntry<'_> {
    CriterionEntry {
        id: &c.id,
        task: &c.task,
        text: &c.text,
        decided_by: c.decided_by,
        status: c.status,
        met: c.met,
        threshold: c.threshold,
        exit_code: c.exit_code,
        duration_ms: c.duration_ms,
        inputs_digest: &c.inputs_digest,
        carried_from: &c.carried_from,
        reason: &c.reason,
        output_tail: tail(c.status, &c.output.tail),
        expect: c.expect,
        base_status: &c.base_status,
        read_beyond_inputs: c.observed.as_ref().map(|o| o.outside_inputs.len()),
    }
}

/// The kind as the JSON output spells it.
pub(crate) fn kind_str(kind: gate_harness::ItemKind) -> &'static str {
    match kind {
        gate_harness::ItemKind::Check => "check",
        gate_harness::ItemKind::TaskTests => "task_tests",
        gate_harness::ItemKind::Criterion => "criterion",
        gate_harness::ItemKind::Builtin => "builtin",
        gate_harness::ItemKind::Page => "page",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// The document as its readers get it.
    fn render(record: &RunRecord) -> Value {
        serde_json::to_value(Document::of(record)).unwrap()
    }

    use serde_json::json;

    use super::*;
    use crate::output::fixture;

    /// Every field the document promises, for checks and criteria alike: a
    /// failed item's own words travel with it.
    #[test]
    fn a_failed_item_carries_its_words() {
        let doc = render(&fixture::record());
        assert_eq!(doc["format_version"], 1);
        let build = &doc["checks"][0];
        assert_eq!(build["id"], "build");
        assert_eq!(build["status"], "failed");
        assert!(
            build["output_tail"]
                .as_str()
                .unwrap()
                .contains("error: boom"),
            "{build}"
        );
        assert_eq!(doc["checks"][1]["task"], "orders", "a task's tests item");
        assert_eq!(doc["checks"][1]["output_tail"], Value::Null, "passed");
        assert_eq!(doc["checks"][2]["locations"][0]["line"], 3);
        let orders = &doc["criteria"][0];
        assert_eq!(
            (&orders["task"], &orders["text"], &orders["output_tail"]),
            (
                &json!("orders"),
                &json!("orders-201 holds"),
                &json!("expected 201, got 500\n")
            )
        );
        assert_eq!(
            doc["verdict_reasons"][0],
            json!({"kind": "check", "id": "build", "verdict": "fail",
                   "why": "check `build` failed: exited with status 3"})
        );
        assert_eq!(doc["verdict_line"], "FAIL");
        for key in [
            "run_id",
            "spec_id",
            "attempt",
            "verdict",
            "qualifier",
            "overridden",
            "recorded",
            "tier",
            "tier_reason",
            "self_guard",
            "checks",
            "criteria",
            "review",
            "findings",
            "doom_loop",
            "bundle",
        ] {
            assert!(doc.get(key).is_some(), "{key} missing");
        }
    }

    /// Every key, at every depth, of a document with every optional part
    /// filled.
    fn full_document() -> Value {
        use gate_review::record::BudgetRecord;
        use gate_review::routing::patch::OverrideStatus;

        use crate::doom::{DoomLoop, Pattern};
        use crate::record::{Qualifier, QualifierKind};
        let mut record = fixture::record();
        record.qualifier = Some(Qualifier {
            kind: QualifierKind::UnderReviewed,
            why: "2 of 4 reviewers did not run".into(),
            breakers_open: Vec::new(),
        });
        record.doom_loop = Some(DoomLoop {
            pattern: Pattern::Repeat,
            attempts: vec![1, 2, 3],
            failing: vec!["build".into()],
            message: "the same failure three times".into(),
        });
        record.routing_override = Some(OverrideStatus {
            url: "https://ops.example/routing.json".into(),
            status: "failed".into(),
            error: Some("HTTP 404".into()),
            changed: vec!["model.cheap.disabled: true".into()],
        });
        record.review.budget = Some(BudgetRecord {
            max_input_tokens: 5_000_000,
            estimated: 120_000,
            sent: 80_000,
        });
        record.base_runs = Some(crate::record::BaseRunsRecord {
            policy: "expected".into(),
            turned_off: false,
            ran: 1,
            reused: 0,
        });
        record.criteria[0].expect = gate_specs::Expect::FailToPass;
        record.criteria[0].base_status = Some(crate::record::BaseStatus {
            status: crate::record::BaseState::Failed,
            reason: Some("exited with status 1".into()),
            output_digest: Some("d".repeat(64)),
            from_run: Some("run".into()),
            output_tail: None,
        });
        render(&record)
    }

    fn keys(value: &Value, out: &mut std::collections::BTreeSet<String>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    out.insert(k.clone());
                    keys(v, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| keys(v, out)),
            _ => {}
        }
    }

    /// `docs/output-formats.md` describes the document field by field: no
    /// key the gate writes may be missing from it.
    #[test]
    fn every_key_of_the_document_is_documented() {
        let page = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/output-formats.md"),
        )
        .expect("docs/output-formats.md");
        let from = page.find("## The JSON document").expect("its section");
        let to = page[from..]
            .find("## `jsonl` events")
            .map_or(page.len(), |n| from + n);
        let section = &page[from..to];
        let mut all = std::collections::BTreeSet::new();
        keys(&full_document(), &mut all);
        assert!(
            all.len() > 60,
            "only {} keys: the fixture lost parts",
            all.len()
        );
        let missing: Vec<&String> = all
            .iter()
            .filter(|k| {
                ![format!("`{k}`"), format!("`{k}[]`"), format!("\"{k}\"")]
                    .iter()
                    .any(|form| section.contains(form.as_str()))
            })
            .collect();
        assert!(
            missing.is_empty(),
            "docs/output-formats.md does not describe {missing:?}"
        );
    }
}
