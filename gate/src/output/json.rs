//! `--format json`: one object, `format_version` first. What an agent
//! harness hands its agent: every failed item carries its own words (the
//! redacted output tail the bundle keeps), a criterion its text and task,
//! and the verdict its reasons as data (its fields are listed in
//! `docs/output-formats.md`).

use serde_json::{Value, json};

use crate::record::{CheckRecord, CriterionRecord, ItemStatus, RunRecord, verdict_line};

/// Version of the `--format json` document and of every `jsonl` event.
/// Fields are only ever added within a version.
pub const FORMAT_VERSION: u32 = 1;

/// The JSON document of a run.
pub fn render(record: &RunRecord) -> Value {
    let checks: Vec<Value> = record.checks.iter().map(check).collect();
    let criteria: Vec<Value> = record.criteria.iter().map(criterion).collect();
    let mut doc = json!({
        "format_version": FORMAT_VERSION,
        "run_id": record.run_id,
        "spec_id": record.spec_id,
        "attempt": record.attempt,
        "verdict": record.verdict,
        "verdict_line": verdict_line(record),
        "qualifier": record.qualifier,
        "overridden": record.overridden,
        "recorded": record.recorded,
        "tier": record.tier,
        "tier_reason": record.tier_reason,
        "base": record.base,
        "base_commit": record.base_commit,
        "isolation": record.isolation,
        "self_guard": record.self_guard,
        "verdict_reasons": record.verdict_reasons,
        "checks": checks,
        "criteria": criteria,
        "review": record.review,
        "findings": record.findings,
        "dropped_findings": record.dropped_findings,
        "doom_loop": record.doom_loop,
        "bundle": record.bundle,
    });
    if let (Some(status), Some(obj)) = (&record.routing_override, doc.as_object_mut()) {
        obj.insert(
            "routing_override".to_owned(),
            serde_json::to_value(status).unwrap_or(Value::Null),
        );
    }
    doc
}

/// A failed item's output as the bundle keeps it (bounded, redacted); none
/// for an item that did not fail.
fn tail(status: ItemStatus, text: &str) -> Option<&str> {
    (status == ItemStatus::Failed).then_some(text)
}

fn check(c: &CheckRecord) -> Value {
    json!({
        "id": c.id,
        "kind": super::jsonl::kind_str(c.kind),
        "task": c.task,
        "status": c.status.as_str(),
        "exit_code": c.exit_code,
        "duration_ms": c.duration_ms,
        "inputs_digest": c.inputs_digest,
        "carried_from": c.carried_from,
        "reason": c.reason,
        "output_tail": tail(c.status, &c.output.tail),
        "locations": if c.status == ItemStatus::Failed { json!(c.locations) } else { json!([]) },
    })
}

fn criterion(c: &CriterionRecord) -> Value {
    json!({
        "id": c.id,
        "task": c.task,
        "text": c.text,
        "decided_by": c.decided_by,
        "status": c.status.as_str(),
        "met": c.met,
        "threshold": c.threshold,
        "exit_code": c.exit_code,
        "duration_ms": c.duration_ms,
        "inputs_digest": c.inputs_digest,
        "carried_from": c.carried_from,
        "reason": c.reason,
        "output_tail": tail(c.status, &c.output.tail),
    })
}

#[cfg(test)]
mod tests {
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
}
