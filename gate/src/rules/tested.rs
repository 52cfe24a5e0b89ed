//! Writing a rule test's result back into the rule's `tested` table, with
//! `toml_edit` so that the file's comments and layout stay as they were
//! outside that table.

use std::path::Path;

use toml_edit::{DocumentMut, InlineTable, Item, Value};

use crate::rules::errors::RulesError;
use crate::rules::model::Tested;

/// Sets the `tested` table of the rule `id` (the `index`-th `[[rule]]`) in
/// the rules file at `path`, replacing the file atomically.
pub fn write_back(path: &Path, index: usize, id: &str, tested: &Tested) -> Result<(), RulesError> {
    let fail = |reason: String| RulesError::Write {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
    let updated = update(&text, index, id, tested).map_err(fail)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("rules")
    ));
    std::fs::write(&tmp, updated)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            fail(e.to_string())
        })
}

/// The text with the rule's `tested` set: an existing `tested` (inline or
/// a table) is updated key by key, keeping its layout; otherwise an inline
/// table is added after the rule's last key.
pub fn update(text: &str, index: usize, id: &str, tested: &Tested) -> Result<String, String> {
    let mut doc: DocumentMut = text.parse().map_err(|e| format!("does not parse: {e}"))?;
    let rules = doc
        .get_mut("rule")
        .and_then(Item::as_array_of_tables_mut)
        .ok_or("holds no [[rule]] tables")?;
    let found = rules
        .iter()
        .position(|t| t.get("id").and_then(Item::as_str) == Some(id));
    // The index found when the file was read, unless the file moved on since.
    let at = match rules.get(index) {
        Some(t) if t.get("id").and_then(Item::as_str) == Some(id) => index,
        _ => found.ok_or_else(|| format!("holds no rule `{id}` any more"))?,
    };
    let rule = rules
        .get_mut(at)
        .ok_or_else(|| format!("holds no rule `{id}` any more"))?;
    let values: [(&str, Value); 4] = [
        ("margin", Value::from(tested.margin)),
        ("model", Value::from(tested.model.as_str())),
        ("hash", Value::from(tested.hash.as_str())),
        ("when", Value::from(tested.when.as_str())),
    ];
    match rule.get_mut("tested") {
        Some(Item::Value(Value::InlineTable(t))) => {
            for (k, v) in values {
                match t.get_mut(k) {
                    Some(slot) => replace_keeping_decor(slot, v),
                    None => {
                        t.insert(k, v);
                    }
                }
            }
        }
        Some(Item::Table(t)) => {
            for (k, v) in values {
                match t.get_mut(k).and_then(Item::as_value_mut) {
                    Some(slot) => replace_keeping_decor(slot, v),
                    None => {
                        t.insert(k, Item::Value(v));
                    }
                }
            }
        }
        Some(_) => return Err(format!("`tested` of rule `{id}` is not a table")),
        None => {
            let mut t = InlineTable::new();
            for (k, v) in values {
                t.insert(k, v);
            }
            t.fmt();
            rule.insert("tested", Item::Value(Value::InlineTable(t)));
        }
    }
    Ok(doc.to_string())
}

/// Replaces `slot`'s value, keeping the spaces and comments around it.
fn replace_keeping_decor(slot: &mut Value, mut value: Value) {
    *value.decor_mut() = slot.decor().clone();
    *slot = value;
}
