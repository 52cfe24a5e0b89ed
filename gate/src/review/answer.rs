//! The one answer every reviewer gives: its JSON schema (sent with every
//! request) and its validation (a reply is accepted only if it validates).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The schema's name in requests.
pub const SCHEMA_NAME: &str = "gate_review";

/// A reviewer's answer, validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// Findings.
    pub findings: Vec<RawFinding>,
    /// Probabilities that model-judged criteria hold.
    pub criteria: Vec<CriterionAnswer>,
    /// Probabilities that house rules' claims are true.
    pub rules: Vec<RuleAnswer>,
}

/// A finding as a reviewer states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFinding {
    /// critical, warning or suggestion.
    pub severity: String,
    /// Workspace-relative file.
    pub file: String,
    /// 1-based line, when it has one.
    pub line: Option<u32>,
    /// One line.
    pub title: String,
    /// Why it matters.
    pub detail: String,
    /// 0–1.
    pub confidence: f64,
}

/// A judged criterion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CriterionAnswer {
    /// The criterion's id.
    pub id: String,
    /// Probability it holds.
    pub met: f64,
    /// One or two sentences.
    pub why: String,
}

/// A judged house rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleAnswer {
    /// The rule's id.
    pub id: String,
    /// Probability the rule's claim is true.
    pub p: f64,
    /// One or two sentences.
    pub why: String,
}

/// The JSON schema of [`Answer`], in the strict form structured-output APIs
/// accept: every property required, no additional properties.
pub fn schema() -> Value {
    let probability = json!({"type": "number", "minimum": 0, "maximum": 1});
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["findings", "criteria", "rules"],
        "properties": {
            "findings": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["severity", "file", "line", "title", "detail", "confidence"],
                    "properties": {
                        "severity": {"type": "string", "enum": ["critical", "warning", "suggestion"]},
                        "file": {"type": "string"},
                        "line": {"type": ["integer", "null"]},
                        "title": {"type": "string"},
                        "detail": {"type": "string"},
                        "confidence": probability.clone(),
                    }
                }
            },
            "criteria": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["id", "met", "why"],
                    "properties": {
                        "id": {"type": "string"},
                        "met": probability.clone(),
                        "why": {"type": "string"},
                    }
                }
            },
            "rules": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["id", "p", "why"],
                    "properties": {
                        "id": {"type": "string"},
                        "p": probability,
                        "why": {"type": "string"},
                    }
                }
            }
        }
    })
}

/// Validates a reply's JSON against the schema; the error lists what is
/// wrong, in words fit to feed back to the model for its one repair.
pub fn validate(value: &Value) -> Result<Answer, String> {
    let answer: Answer = serde_json::from_value(value.clone())
        .map_err(|e| format!("does not match the schema: {e}"))?;
    let mut problems = Vec::new();
    for (i, f) in answer.findings.iter().enumerate() {
        if !matches!(f.severity.as_str(), "critical" | "warning" | "suggestion") {
            problems.push(format!(
                "findings[{i}].severity is \"{}\"; use critical, warning or suggestion",
                f.severity
            ));
        }
        if f.title.trim().is_empty() {
            problems.push(format!("findings[{i}].title is empty"));
        }
        if f.file.trim().is_empty() {
            problems.push(format!("findings[{i}].file is empty"));
        }
        if !(0.0..=1.0).contains(&f.confidence) {
            problems.push(format!(
                "findings[{i}].confidence {} is not within 0..1",
                f.confidence
            ));
        }
    }
    for (i, c) in answer.criteria.iter().enumerate() {
        if !(0.0..=1.0).contains(&c.met) {
            problems.push(format!("criteria[{i}].met {} is not within 0..1", c.met));
        }
    }
    for (i, r) in answer.rules.iter().enumerate() {
        if !(0.0..=1.0).contains(&r.p) {
            problems.push(format!("rules[{i}].p {} is not within 0..1", r.p));
        }
    }
    if problems.is_empty() {
        Ok(answer)
    } else {
        Err(problems.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation() {
        let ok = json!({"findings": [{"severity": "warning", "file": "a.rs", "line": 3,
            "title": "t", "detail": "d", "confidence": 0.9}], "criteria": [], "rules": []});
        assert!(validate(&ok).is_ok());
        let cases = [
            (json!({"findings": []}), "missing field `criteria`"),
            (
                json!({"findings": [], "criteria": [], "rules": [], "extra": 1}),
                "unknown field `extra`",
            ),
            (
                json!({"findings": [{"severity": "blocker", "file": "a", "line": null,
                    "title": "t", "detail": "", "confidence": 0.5}], "criteria": [], "rules": []}),
                "findings[0].severity is \"blocker\"",
            ),
            (
                json!({"findings": [], "criteria": [{"id": "c", "met": 1.5, "why": ""}], "rules": []}),
                "criteria[0].met 1.5 is not within 0..1",
            ),
            (json!("just text"), "does not match the schema"),
        ];
        for (value, want) in cases {
            let err = validate(&value).unwrap_err();
            assert!(err.contains(want), "{err} lacks {want}");
        }
    }

    #[test]
    fn schema_is_strict() {
        fn walk(v: &Value) {
            if v.get("type") == Some(&json!("object")) {
                let props: Vec<&String> = v["properties"].as_object().unwrap().keys().collect();
                let required: Vec<&str> = v["required"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r.as_str().unwrap())
                    .collect();
                assert_eq!(props.len(), required.len());
                assert_eq!(v["additionalProperties"], json!(false));
                for p in v["properties"].as_object().unwrap().values() {
                    walk(p);
                }
            }
            if let Some(items) = v.get("items") {
                walk(items);
            }
        }
        walk(&schema());
    }
}
