//! The answers reviewers give: their JSON schemas (sent with every request)
//! and their validation.
//!
//! A reply whose shape is broken (not one object, a key missing or unknown,
//! a list that is not a list, a criterion or rule answered twice or out of
//! range) is invalid whole: the call asks for its one repair. A finding
//! that breaks the schema within a well-shaped reply is left out with why
//! ([`Answer::invalid`]), and the reply's other findings stand.
//!
//! Every string a model wrote is made plain here, at the source
//! (`output::text::plain`): nothing downstream (outputs, reports,
//! the bundle, the ledger) ever holds a terminal escape or a control
//! character a model sent.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::text::plain;

/// The reviewers' schema's name in requests.
pub const SCHEMA_NAME: &str = "gate_review";
/// The model coordinator's schema's name in requests.
pub const COORDINATION_SCHEMA_NAME: &str = "gate_coordination";

/// Which answer a call expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// A reviewer's: findings, criteria, rules.
    Review,
    /// The model coordinator's: which findings stand, as what, and why.
    Coordination,
}

impl Expect {
    /// The schema's name in requests.
    pub fn name(self) -> &'static str {
        match self {
            Self::Review => SCHEMA_NAME,
            Self::Coordination => COORDINATION_SCHEMA_NAME,
        }
    }

    /// The JSON schema.
    pub fn schema(self) -> Value {
        match self {
            Self::Review => schema(),
            Self::Coordination => coordination_schema(),
        }
    }

    /// Validates a reply's JSON; the error says what is wrong, in words
    /// fit to feed back to the model for its one repair.
    pub fn validate(self, value: &Value) -> Result<Answer, String> {
        match self {
            Self::Review => validate(value),
            Self::Coordination => validate_coordination(value),
        }
    }
}

/// An answer, validated, its text made plain.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Answer {
    /// Findings.
    pub findings: Vec<RawFinding>,
    /// Probabilities that model-judged criteria hold.
    pub criteria: Vec<CriterionAnswer>,
    /// Probabilities that house rules' claims are true.
    pub rules: Vec<RuleAnswer>,
    /// Findings that broke the schema, left out, each with why.
    pub invalid: Vec<InvalidFinding>,
    /// The model coordinator's decisions (its answers only).
    pub coordination: Option<Coordination>,
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

/// A finding left out of an answer because it broke the schema: what could
/// be read of it, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidFinding {
    /// Its fields as far as they could be read (empty or zero otherwise).
    pub finding: RawFinding,
    /// What is wrong with it.
    pub why: String,
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

/// The model coordinator's decisions over the findings it was shown.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Coordination {
    /// Findings that stand, each as the coordinator restates it.
    pub keep: Vec<Keep>,
    /// Findings it drops, each with its reason.
    pub drop: Vec<Drop>,
}

/// A finding the coordinator keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keep {
    /// The id of the finding shown.
    pub id: String,
    /// Ids of shown findings that are the same defect, merged into this one.
    pub merges: Vec<String>,
    /// Its severity now.
    pub severity: String,
    /// Its title (the shown one, or clearer).
    pub title: String,
    /// Its detail (the shown one, or clearer).
    pub detail: String,
    /// Why it changed severity, wording or absorbed others (empty when kept as shown).
    pub why: String,
}

/// A finding the coordinator drops.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Drop {
    /// The id of the finding shown.
    pub id: String,
    /// Why it does not stand.
    pub why: String,
}

const SEVERITIES: [&str; 3] = ["critical", "warning", "suggestion"];

fn probability() -> Value {
    json!({"type": "number", "minimum": 0, "maximum": 1})
}

fn severity() -> Value {
    json!({"type": "string", "enum": SEVERITIES})
}

/// The reviewers' JSON schema, in the strict form structured-output APIs
/// accept: every property required, no additional properties.
pub fn schema() -> Value {
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
                        "severity": severity(),
                        "file": {"type": "string"},
                        "line": {"type": ["integer", "null"]},
                        "title": {"type": "string"},
                        "detail": {"type": "string"},
                        "confidence": probability(),
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
                        "met": probability(),
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
                        "p": probability(),
                        "why": {"type": "string"},
                    }
                }
            }
        }
    })
}

/// The model coordinator's JSON schema, strict as [`schema`].
pub fn coordination_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["findings", "dropped"],
        "properties": {
            "findings": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["id", "merges", "severity", "title", "detail", "why"],
                    "properties": {
                        "id": {"type": "string"},
                        "merges": {"type": "array", "items": {"type": "string"}},
                        "severity": severity(),
                        "title": {"type": "string"},
                        "detail": {"type": "string"},
                        "why": {"type": "string"},
                    }
                }
            },
            "dropped": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["id", "why"],
                    "properties": {
                        "id": {"type": "string"},
                        "why": {"type": "string"},
                    }
                }
            }
        }
    })
}

/// The reply as an object with exactly `keys`, each a list.
fn lists<'a, const N: usize>(
    value: &'a Value,
    keys: [&str; N],
) -> Result<[&'a [Value]; N], String> {
    let Value::Object(map) = value else {
        return Err(format!(
            "does not match the schema: expected one JSON object with {}",
            keys.join(", ")
        ));
    };
    if let Some(unknown) = map.keys().find(|k| !keys.contains(&k.as_str())) {
        return Err(format!(
            "does not match the schema: unknown field `{unknown}`, expected {}",
            keys.join(", ")
        ));
    }
    let mut out: [&[Value]; N] = [&[]; N];
    for (slot, k) in out.iter_mut().zip(keys) {
        *slot = match map.get(k) {
            None => return Err(format!("does not match the schema: missing field `{k}`")),
            Some(Value::Array(items)) => items.as_slice(),
            Some(_) => return Err(format!("does not match the schema: `{k}` is not a list")),
        };
    }
    Ok(out)
}

fn item<T: for<'de> Deserialize<'de>>(list: &str, i: usize, v: &Value) -> Result<T, String> {
    serde_json::from_value(v.clone())
        .map_err(|e| format!("{list}[{i}] does not match the schema: {e}"))
}

fn in_range(list: &str, i: usize, key: &str, p: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(format!("{list}[{i}].{key} {p} is not within 0..1"))
    }
}

/// Validates a reviewer's reply; see the module's documentation for what
/// voids it whole and what leaves one finding out.
pub fn validate(value: &Value) -> Result<Answer, String> {
    let [findings, criteria, rules] = lists(value, ["findings", "criteria", "rules"])?;
    let mut answer = Answer::default();
    for (i, v) in findings.iter().enumerate() {
        match finding(i, v) {
            Ok(f) => answer.findings.push(f),
            Err(why) => answer.invalid.push(InvalidFinding {
                finding: salvage(v),
                why,
            }),
        }
    }
    let mut seen = BTreeSet::new();
    for (i, v) in criteria.iter().enumerate() {
        let c: CriterionAnswer = item("criteria", i, v)?;
        in_range("criteria", i, "met", c.met)?;
        let id = plain(&c.id);
        if !seen.insert(id.clone()) {
            return Err(format!("criterion `{id}` is answered more than once"));
        }
        answer.criteria.push(CriterionAnswer {
            id,
            met: c.met,
            why: plain(&c.why),
        });
    }
    let mut seen = BTreeSet::new();
    for (i, v) in rules.iter().enumerate() {
        let r: RuleAnswer = item("rules", i, v)?;
        in_range("rules", i, "p", r.p)?;
        let id = plain(&r.id);
        if !seen.insert(id.clone()) {
            return Err(format!("rule `{id}` is answered more than once"));
        }
        answer.rules.push(RuleAnswer {
            id,
            p: r.p,
            why: plain(&r.why),
        });
    }
    Ok(answer)
}

/// One finding, made plain and checked; the error says what is wrong with it.
fn finding(i: usize, v: &Value) -> Result<RawFinding, String> {
    let raw: RawFinding = item("findings", i, v)?;
    let f = RawFinding {
        file: plain(&raw.file).trim().to_owned(),
        title: plain(&raw.title).trim().to_owned(),
        detail: plain(&raw.detail).trim().to_owned(),
        ..raw
    };
    let mut problems = Vec::new();
    if !SEVERITIES.contains(&f.severity.as_str()) {
        problems.push(format!(
            "severity \"{}\" is not critical, warning or suggestion",
            plain(&f.severity)
        ));
    }
    if f.title.is_empty() {
        problems.push("its title is empty".to_owned());
    }
    if f.file.is_empty() {
        problems.push("its file is empty".to_owned());
    }
    if !(0.0..=1.0).contains(&f.confidence) {
        problems.push(format!("confidence {} is not within 0..1", f.confidence));
    }
    if problems.is_empty() {
        Ok(f)
    } else {
        Err(format!("findings[{i}]: {}", problems.join("; ")))
    }
}

/// What can be read of a finding that broke the schema, made plain.
fn salvage(v: &Value) -> RawFinding {
    let empty = Map::new();
    let map = v.as_object().unwrap_or(&empty);
    let text = |k: &str| {
        map.get(k)
            .and_then(Value::as_str)
            .map(|s| plain(s).trim().to_owned())
            .unwrap_or_default()
    };
    RawFinding {
        severity: text("severity"),
        file: text("file"),
        line: map
            .get("line")
            .and_then(Value::as_u64)
            .and_then(|l| u32::try_from(l).ok()),
        title: text("title"),
        detail: text("detail"),
        confidence: map.get("confidence").and_then(Value::as_f64).unwrap_or(0.0),
    }
}

/// Validates the model coordinator's reply: well shaped, severities known,
/// and no finding decided twice (kept, merged or dropped once at most).
pub fn validate_coordination(value: &Value) -> Result<Answer, String> {
    let [findings, dropped] = lists(value, ["findings", "dropped"])?;
    let mut c = Coordination::default();
    let mut decided = BTreeSet::new();
    let mut once = |id: &str| {
        if decided.insert(id.to_owned()) {
            Ok(())
        } else {
            Err(format!(
                "finding `{id}` is decided more than once (kept, merged or dropped)"
            ))
        }
    };
    for (i, v) in findings.iter().enumerate() {
        let k: Keep = item("findings", i, v)?;
        if !SEVERITIES.contains(&k.severity.as_str()) {
            return Err(format!(
                "findings[{i}].severity is \"{}\"; use critical, warning or suggestion",
                plain(&k.severity)
            ));
        }
        let k = Keep {
            id: plain(&k.id).trim().to_owned(),
            merges: k
                .merges
                .iter()
                .map(|m| plain(m).trim().to_owned())
                .collect(),
            severity: k.severity,
            title: plain(&k.title).trim().to_owned(),
            detail: plain(&k.detail).trim().to_owned(),
            why: plain(&k.why).trim().to_owned(),
        };
        once(&k.id)?;
        for m in &k.merges {
            once(m)?;
        }
        c.keep.push(k);
    }
    for (i, v) in dropped.iter().enumerate() {
        let d: Drop = item("dropped", i, v)?;
        let d = Drop {
            id: plain(&d.id).trim().to_owned(),
            why: plain(&d.why).trim().to_owned(),
        };
        once(&d.id)?;
        c.drop.push(d);
    }
    Ok(Answer {
        coordination: Some(c),
        ..Answer::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_shape_voids_the_reply() {
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
                json!({"findings": {}, "criteria": [], "rules": []}),
                "`findings` is not a list",
            ),
            (
                json!({"findings": [], "criteria": [{"id": "c", "met": 1.5, "why": ""}], "rules": []}),
                "criteria[0].met 1.5 is not within 0..1",
            ),
            (
                json!({"findings": [], "criteria": [{"id": "c", "met": 0.9, "why": "a"},
                    {"id": "c", "met": 0.1, "why": "b"}], "rules": []}),
                "criterion `c` is answered more than once",
            ),
            (
                json!({"findings": [], "criteria": [], "rules": [{"id": "r", "p": 1, "why": "",
                    "extra": true}]}),
                "rules[0] does not match the schema",
            ),
            (json!("just text"), "expected one JSON object"),
        ];
        for (value, want) in cases {
            let err = validate(&value).unwrap_err();
            assert!(err.contains(want), "{err} lacks {want}");
        }
    }

    #[test]
    fn an_invalid_finding_is_left_out_and_the_rest_stand() {
        let good = json!({"severity": "warning", "file": "a.rs", "line": 3,
            "title": "Real bug", "detail": "d", "confidence": 0.9});
        let reply = json!({"findings": [
            good,
            {"severity": "blocker", "file": "a.rs", "line": 4, "title": "Blocker",
             "detail": "", "confidence": 0.5},
            {"severity": "critical", "file": "a.rs", "line": 5, "title": "Sure",
             "detail": "", "confidence": 1.7},
            {"severity": "critical", "file": "a.rs", "line": 6, "title": "Odd",
             "detail": "", "confidence": 0.9, "cwe": "CWE-79"},
            {"severity": "warning", "file": " ", "line": null, "title": "\u{1b}[31m",
             "detail": "", "confidence": 0.9},
        ], "criteria": [], "rules": []});
        let answer = validate(&reply).unwrap();
        assert_eq!(answer.findings.len(), 1);
        assert_eq!(answer.findings[0].title, "Real bug");
        let whys: Vec<&str> = answer.invalid.iter().map(|i| i.why.as_str()).collect();
        assert!(whys[0].contains("severity \"blocker\""), "{whys:?}");
        assert!(whys[1].contains("confidence 1.7"), "{whys:?}");
        assert!(whys[2].contains("unknown field `cwe`"), "{whys:?}");
        assert!(
            whys[3].contains("title is empty") && whys[3].contains("file is empty"),
            "{whys:?}"
        );
        // What could be read of them is kept for the record.
        assert_eq!(answer.invalid[0].finding.title, "Blocker");
        assert!((answer.invalid[1].finding.confidence - 1.7).abs() < 1e-9);
    }

    #[test]
    fn model_text_is_made_plain_at_the_source() {
        let reply = json!({"findings": [{"severity": "critical", "file": "a.rs", "line": 1,
            "title": "\u{1b}[31mred\u{7}\r\n::error::x", "detail": "a\u{202e}b", "confidence": 0.9}],
            "criteria": [{"id": "c", "met": 0.5, "why": "\u{1b}]0;title\u{7}ok"}],
            "rules": [{"id": "r", "p": 0.5, "why": "\u{0}nul"}]});
        let answer = validate(&reply).unwrap();
        assert_eq!(answer.findings[0].title, "red  ::error::x");
        assert_eq!(answer.findings[0].detail, "ab");
        assert_eq!(answer.criteria[0].why, "ok");
        assert_eq!(answer.rules[0].why, "nul");
    }

    #[test]
    fn the_coordinator_decides_each_finding_once() {
        let ok = json!({"findings": [{"id": "a", "merges": ["b"], "severity": "warning",
            "title": "t", "detail": "d", "why": "narrower than said"}],
            "dropped": [{"id": "c", "why": "style"}]});
        let c = validate_coordination(&ok).unwrap().coordination.unwrap();
        assert_eq!((c.keep.len(), c.drop.len()), (1, 1));
        let twice = json!({"findings": [{"id": "a", "merges": [], "severity": "warning",
            "title": "t", "detail": "d", "why": ""}], "dropped": [{"id": "a", "why": "x"}]});
        let err = validate_coordination(&twice).unwrap_err();
        assert!(err.contains("`a` is decided more than once"), "{err}");
        let bad = json!({"findings": [{"id": "a", "merges": [], "severity": "nit",
            "title": "t", "detail": "d", "why": ""}], "dropped": []});
        assert!(validate_coordination(&bad).is_err());
    }

    #[test]
    fn schemas_are_strict() {
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
        walk(&coordination_schema());
    }
}
