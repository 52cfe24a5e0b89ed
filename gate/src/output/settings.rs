//! `gate verify --print-config`: the effective configuration, each value
//! with where it came from.

use std::fmt::Write;

use serde_json::{Map, Value, json};

/// One setting.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    /// Its name.
    pub name: String,
    /// Its value (`null` when unset).
    pub value: Value,
    /// Where it came from: a flag, `env VAR`, `gate.toml:12`, `default`.
    pub source: String,
}

/// The effective configuration of `gate verify`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Effective {
    /// Where and how the gate runs.
    pub entries: Vec<Entry>,
    /// The spec's `[policy]`, every key.
    pub policy: Vec<Entry>,
}

/// As aligned text.
pub(crate) fn render_human(e: &Effective) -> String {
    let mut out = String::new();
    let width = e
        .entries
        .iter()
        .chain(&e.policy)
        .map(|x| x.name.len())
        .max()
        .unwrap_or(0);
    let vwidth = e
        .entries
        .iter()
        .chain(&e.policy)
        .map(|x| value_text(&x.value).chars().count())
        .max()
        .unwrap_or(0)
        .min(32);
    for x in &e.entries {
        let _ = writeln!(
            out,
            "{:<width$}  {:<vwidth$}  ({})",
            x.name,
            value_text(&x.value),
            x.source
        );
    }
    let _ = writeln!(out, "\n[policy]");
    for x in &e.policy {
        let _ = writeln!(
            out,
            "{:<width$}  {:<vwidth$}  ({})",
            x.name,
            value_text(&x.value),
            x.source
        );
    }
    out
}

/// As one JSON document: `{"format_version": 1, "<name>": {"value", "source"}, …, "policy": {…}}`.
pub(crate) fn render_json(e: &Effective) -> Value {
    let pairs = |entries: &[Entry]| {
        let mut m = Map::new();
        for x in entries {
            m.insert(
                x.name.clone(),
                json!({"value": x.value, "source": x.source}),
            );
        }
        m
    };
    let mut doc = Map::new();
    doc.insert("format_version".into(), super::json::FORMAT_VERSION.into());
    doc.extend(pairs(&e.entries));
    doc.insert("policy".into(), Value::Object(pairs(&e.policy)));
    Value::Object(doc)
}

fn value_text(v: &Value) -> String {
    match v {
        Value::Null => "none".to_owned(),
        Value::Array(a) if a.is_empty() => "none".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_json_carry_the_same_values_and_sources() {
        let e = Effective {
            entries: vec![
                Entry {
                    name: "format".into(),
                    value: json!("sarif"),
                    source: "env GATE_FORMAT".into(),
                },
                Entry {
                    name: "base".into(),
                    value: Value::Null,
                    source: "default".into(),
                },
            ],
            policy: vec![Entry {
                name: "max_attempts".into(),
                value: json!(3),
                source: "gate.toml:7".into(),
            }],
        };
        let text = render_human(&e);
        assert!(
            text.contains("format        sarif  (env GATE_FORMAT)"),
            "{text}"
        );
        assert!(text.contains("base          none   (default)"), "{text}");
        assert!(
            text.contains("max_attempts  3      (gate.toml:7)"),
            "{text}"
        );
        let doc = render_json(&e);
        assert_eq!(doc["format"]["source"], "env GATE_FORMAT");
        assert_eq!(doc["policy"]["max_attempts"]["value"], 3);
    }
}
