//! `gate report --format json`: one object of documented keys, in a fixed order.

use std::collections::BTreeMap;

use chrono::SecondsFormat;
use serde_json::{Map, Value, json};

use super::scorecard::{Group, OutcomeRate, Scorecard};
use super::stats::Spread;

/// The version of this document's shape.
pub const FORMAT_VERSION: u32 = 1;

fn rate_with_interval(r: &OutcomeRate) -> (Value, Value, Value) {
    let i = r.interval();
    (
        json!(r.rate()),
        json!(i.map(|i| i.low)),
        json!(i.map(|i| i.high)),
    )
}

/// Each group's runs and false-pass rate; and, for groups of whole runs
/// (not models or roles, which share a run), the share of passed criteria
/// with fail-to-pass evidence.
fn breakdown(groups: &BTreeMap<String, Group>, whole_runs: bool) -> Value {
    let mut out = Map::new();
    for (key, g) in groups {
        let (rate, low, high) = rate_with_interval(&g.false_pass());
        let mut group =
            json!({"runs": g.runs, "false_pass": {"rate": rate, "low": low, "high": high}});
        if let (true, Some(obj)) = (whole_runs, group.as_object_mut()) {
            obj.insert(
                "fail_to_pass_share".to_owned(),
                json!(g.fail_to_pass_share()),
            );
        }
        out.insert(key.clone(), group);
    }
    Value::Object(out)
}

/// Each source's runs, false-pass and false-fail rate (runs with an
/// outcome only, so nothing is unknown).
fn sources(groups: &BTreeMap<String, Group>) -> Value {
    let mut out = Map::new();
    for (key, g) in groups {
        let (fp, ff) = (g.false_pass(), g.false_fail());
        out.insert(
            key.clone(),
            json!({"runs": g.approved + g.failed,
                   "false_pass": {"rate": fp.rate(), "broken": fp.hits, "with_outcome": fp.with_outcome},
                   "false_fail": {"rate": ff.rate(), "fine": ff.hits, "with_outcome": ff.with_outcome}}),
        );
    }
    Value::Object(out)
}

fn spread<T: serde::Serialize + Copy>(s: &Spread<T>) -> Value {
    json!({"median": s.median, "p90": s.p90, "total": s.total})
}

/// The report as one JSON object.
pub fn render(card: &Scorecard) -> Value {
    let t = &card.total;
    let fp = t.false_pass();
    let ff = t.false_fail();
    let (fp_rate, fp_low, fp_high) = rate_with_interval(&fp);
    let (ff_rate, ff_low, ff_high) = rate_with_interval(&ff);
    let f = &card.findings;
    let (without, decided) = card.without_outcome();
    json!({
        "format_version": FORMAT_VERSION,
        "since": card.scope.since.map(|s| s.to_rfc3339_opts(SecondsFormat::Secs, true)),
        "runs": t.runs,
        "false_pass": {"rate": fp_rate, "low": fp_low, "high": fp_high,
                       "broken": fp.hits, "with_outcome": fp.with_outcome, "unknown": fp.unknown},
        "false_fail": {"rate": ff_rate, "low": ff_low, "high": ff_high,
                       "fine": ff.hits, "with_outcome": ff.with_outcome, "unknown": ff.unknown},
        "without_outcome": {"share": super::stats::ratio(without, decided), "runs": without,
                            "decided": decided},
        "not_integrated": card.not_integrated,
        "min_confidence": f64::from(card.min_confidence) / 100.0,
        "left_out": {"runs": card.left_out.runs, "outcomes": card.left_out.outcomes,
                     "overrides": card.left_out.overrides, "replays": card.left_out.replays},
        "override_rate": t.override_rate(),
        "escalation_rate": t.escalation_rate(),
        "did_not_run_rate": t.did_not_run_rate(),
        "unisolated_rate": t.unisolated_rate(),
        "fail_to_pass": {"share": t.fail_to_pass_share(), "evidenced": t.fail_to_pass,
                         "passed": t.criteria_passed},
        "findings": {"acceptance_rate": f.acceptance_rate(), "noise_rate": f.noise_rate(),
                     "resolved": f.resolved, "dismissed": f.dismissed,
                     "superseded": f.superseded, "open": f.open},
        "cost_usd": spread(&card.cost_usd),
        "input_tokens": spread(&card.input_tokens),
        "cached_input_share": t.cached_input_share(),
        "by": {
            "tier": breakdown(&card.by.tier, true),
            "model": breakdown(&card.by.model, false),
            "role": breakdown(&card.by.role, false),
            "spec": breakdown(&card.by.spec, true),
            "agent": breakdown(&card.by.agent, true),
            "week": breakdown(&card.by.week, true),
            "source": sources(&card.by.source),
        },
        "replays": serde_json::to_value(&card.replays).unwrap_or_default(),
    })
}
