//! `--format json`: one object, `format_version` first (its fields are
//! listed in `docs/output-formats.md`).

use serde_json::{Value, json};

use crate::record::RunRecord;

/// The JSON document of a run.
pub fn render(record: &RunRecord) -> Value {
    let checks: Vec<Value> = record
        .checks
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "kind": c.kind,
                "status": c.status.as_str(),
                "exit_code": c.exit_code,
                "duration_ms": c.duration_ms,
                "inputs_digest": c.inputs_digest,
                "carried_from": c.carried_from,
                "reason": c.reason,
            })
        })
        .collect();
    let criteria: Vec<Value> = record
        .criteria
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "decided_by": c.decided_by,
                "status": c.status.as_str(),
                "met": c.met,
                "inputs_digest": c.inputs_digest,
                "carried_from": c.carried_from,
                "reason": c.reason,
            })
        })
        .collect();
    let mut doc = json!({
        "format_version": record.format_version,
        "run_id": record.run_id,
        "spec_id": record.spec_id,
        "attempt": record.attempt,
        "verdict": record.verdict,
        "overridden": record.overridden,
        "recorded": record.recorded,
        "tier": record.tier,
        "tier_reason": record.tier_reason,
        "base": record.base,
        "base_commit": record.base_commit,
        "isolation": record.isolation,
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
