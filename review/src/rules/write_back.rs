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

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"# Conventions of the api service.
# Keep them short.

[[rule]]
id   = "errors-bubble-up"      # the one we repeat most
applies = [ "**/*.rs" ]
mistake = """
The change catches an error and returns None
"""
fix = "Let the error propagate"

  [[rule.cases.violating]]   # indented on purpose
  file = "src/lookup.rs"
  diff = "+    Err(_) => return None,"

  [[rule.cases.compliant]]
  file = "src/lookup.rs"
  diff = "+    Err(e) => return Err(e.into()),"

[[rule]]
id = "second"
statement = "s"
fix = "f"   # trailing
tested = { margin = 0.1, model = "old", hash = "0", when = "2020-01-01T00:00:00Z" } # kept comment
[[rule.cases.violating]]
file = "a"
diff = "b"
[[rule.cases.compliant]]
file = "a"
diff = "c"

[[rule]]
id = "third"
statement = "t"
fix = "f"
cases.violating = [{ file = "a", diff = "b" }]
cases.compliant = [{ file = "a", diff = "c" }]

[rule.tested]
margin = 0.2    # aligned
model  = "old"
hash   = "0"
when   = "2020-01-01T00:00:00Z"
"#;

    fn result(margin: f64) -> Tested {
        Tested {
            margin,
            model: "gpt-test".into(),
            hash: "ab".repeat(32),
            when: "2025-06-01T12:00:00Z".into(),
        }
    }

    /// The file with the lines holding `tested` data taken out.
    fn without_tested(text: &str) -> Vec<&str> {
        let mut in_table = false;
        text.lines()
            .filter(|l| {
                if l.starts_with('[') {
                    in_table = l.trim() == "[rule.tested]";
                }
                !in_table && !l.starts_with("tested = ")
            })
            .collect()
    }

    #[test]
    fn layout_outside_the_tested_table_is_kept_byte_for_byte() {
        // A rule without `tested` gets an inline table after its last key.
        let first = update(FILE, 0, "errors-bubble-up", &result(0.85)).unwrap();
        assert!(first.contains(&format!(
            "fix = \"Let the error propagate\"\ntested = {{ margin = 0.85, model = \"gpt-test\", hash = \"{}\", when = \"2025-06-01T12:00:00Z\" }}\n\n  [[rule.cases.violating]]   # indented on purpose",
            "ab".repeat(32)
        )), "{first}");
        assert_eq!(without_tested(&first), without_tested(FILE));
        // An inline `tested` is updated in place, its comment kept.
        let second = update(&first, 1, "second", &result(0.7)).unwrap();
        assert!(second.contains("tested = { margin = 0.7, model = \"gpt-test\", hash = \""));
        assert!(second.contains("\" } # kept comment\n"));
        assert_eq!(without_tested(&second), without_tested(FILE));
        // A `[rule.tested]` table is updated key by key, alignment and comments kept.
        let third = update(&second, 2, "third", &result(0.6)).unwrap();
        assert!(
            third.contains("margin = 0.6    # aligned\nmodel  = \"gpt-test\"\n"),
            "{third}"
        );
        assert_eq!(without_tested(&third), without_tested(FILE));
        // The result reads back as what was written.
        let rules = crate::rules::model::parse(&third, "docs/review/rules.toml").unwrap();
        assert_eq!(rules[0].tested, Some(result(0.85)));
        assert_eq!(rules[2].tested, Some(result(0.6)));
    }

    #[test]
    fn a_rule_that_moved_is_found_by_id_and_a_gone_one_is_an_error() {
        let moved = update(FILE, 0, "third", &result(0.9)).unwrap();
        let rules = crate::rules::model::parse(&moved, "docs/review/rules.toml").unwrap();
        assert_eq!(rules[2].tested, Some(result(0.9)));
        assert!(update(FILE, 0, "gone", &result(0.9)).is_err());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rules.toml");
        std::fs::write(&path, FILE).unwrap();
        write_back(&path, 1, "second", &result(0.75)).unwrap();
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("margin = 0.75")
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp file left"
        );
    }
}
