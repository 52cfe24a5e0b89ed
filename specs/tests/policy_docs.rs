//! The policy as the user's documentation states it, against the code:
//! every `[policy]` key has a row in `docs/configuration.md`, every default
//! written there (or in any other page, as "`key` (default N)") is the
//! code's, and every bound stated is the one the spec check enforces.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use gate_specs::{Format, Policy, parse_str};
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// One row of the policy table: key, default as written, unit and bounds.
struct Row {
    key: String,
    default: String,
    bounds: String,
}

fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split(" | ").map(|c| c.trim().to_owned()).collect()
}

fn unquote(cell: &str) -> &str {
    cell.strip_prefix('`')
        .and_then(|c| c.strip_suffix('`'))
        .unwrap_or(cell)
}

/// The rows of the table whose header is `header`, in the section `section`.
fn table(page: &str, section: &str, header: &str) -> Vec<Vec<String>> {
    let text = read(page);
    let from = text
        .find(section)
        .unwrap_or_else(|| panic!("{page} has no {section:?}"));
    let rest = &text[from..];
    let start = rest
        .find(header)
        .unwrap_or_else(|| panic!("{page} {section}: no table {header:?}"));
    rest[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(cells)
        .collect()
}

fn policy_rows() -> Vec<Row> {
    table(
        "docs/configuration.md",
        "## Policy",
        "| key | default | unit, bounds | meaning |",
    )
    .into_iter()
    .map(|c| {
        assert_eq!(c.len(), 4, "a row of four cells: {c:?}");
        Row {
            key: unquote(&c[0]).to_owned(),
            default: unquote(&c[1]).to_owned(),
            bounds: c[2].clone(),
        }
    })
    .collect()
}

/// The default cell of a table that is off unless the spec sets it.
const OFF: &str = "none (off)";

fn defaults() -> serde_json::Map<String, Value> {
    match serde_json::to_value(Policy::default()).expect("the policy serialises") {
        Value::Object(m) => m,
        other => panic!("the policy is not a table: {other}"),
    }
}

/// The spec `[policy] key = value` read as a user's file is, or its errors.
fn with(key: &str, value: &str) -> Result<Policy, String> {
    let text = format!("[spec]\nid = \"s\"\n[policy]\n{key} = {value}\n");
    parse_str(&text, Path::new("gate.toml"), Format::Toml)
        .map(|spec| spec.policy)
        .map_err(|e| e.to_string())
}

fn field(policy: &Policy, key: &str) -> Value {
    serde_json::to_value(policy).expect("the policy serialises")[key].clone()
}

#[test]
fn every_policy_key_has_one_row() {
    let documented: Vec<String> = policy_rows().into_iter().map(|r| r.key).collect();
    let unique: BTreeSet<&String> = documented.iter().collect();
    assert_eq!(
        unique.len(),
        documented.len(),
        "a key twice: {documented:?}"
    );
    let documented: BTreeSet<String> = documented.into_iter().collect();
    // The keys the spec takes (one off by default is not in the defaults).
    let schema = serde_json::to_value(schemars::schema_for!(Policy)).expect("the schema");
    let code: BTreeSet<String> = schema["properties"]
        .as_object()
        .expect("the policy's properties")
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        documented, code,
        "docs/configuration.md's policy table and the code's Policy"
    );
}

#[test]
fn policy_defaults_match_the_code() {
    let code = Policy::default();
    for row in policy_rows() {
        // A table that is off unless set has no value to write.
        if row.default == OFF {
            assert!(
                field(&code, &row.key).is_null(),
                "`{}` is on by default",
                row.key
            );
            continue;
        }
        let read = with(&row.key, &row.default)
            .unwrap_or_else(|e| panic!("`{}` = {} is not a value: {e}", row.key, row.default));
        assert_eq!(
            field(&read, &row.key),
            field(&code, &row.key),
            "the documented default of `{}`",
            row.key
        );
    }
}

#[test]
fn policy_bounds_are_the_ones_enforced() {
    let code = Policy::default();
    let mut checked = 0;
    for row in policy_rows() {
        let key = row.key.as_str();
        // A table's bounds are its keys' (`spec_errors` checks them).
        if row.default == OFF {
            continue;
        }
        let accepts = |value: &str| {
            if let Err(e) = with(key, value) {
                panic!("`{key}` = {value} is within its documented bounds, yet: {e}");
            }
        };
        let refuses = |value: &str| match with(key, value) {
            Ok(_) => panic!("`{key}` = {value} is outside its documented bounds, yet accepted"),
            Err(e) => assert!(e.contains(key), "`{key}` = {value}: {e}"),
        };
        // A table of seconds by role: the bound holds for each entry.
        let value = |n: &str| {
            if key == "role_timeout_s" {
                format!("{{ quality = {n} }}")
            } else {
                n.to_owned()
            }
        };
        if let Some(at) = row.bounds.find("≥ ") {
            let min: u64 = row.bounds[at + "≥ ".len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap_or_else(|e| panic!("`{key}`: {:?}: {e}", row.bounds));
            accepts(&value(&min.to_string()));
            if min > 0 {
                refuses(&value(&(min - 1).to_string()));
            }
            checked += 1;
        }
        if row.bounds.contains("0 to 1") {
            accepts("0.0");
            accepts("1.0");
            refuses("-0.01");
            refuses("1.01");
            checked += 1;
        }
        // Bounded by another key, at its default.
        for (words, past) in [("at most `", 1_i64), ("at least `", -1)] {
            let Some(at) = row.bounds.find(words) else {
                continue;
            };
            let other: String = row.bounds[at + words.len()..]
                .chars()
                .take_while(|c| *c != '`')
                .collect();
            let limit = field(&code, &other)
                .as_i64()
                .unwrap_or_else(|| panic!("`{other}` is not a count"));
            accepts(&limit.to_string());
            refuses(&(limit + past).to_string());
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} bounds found in the table");
}

/// "`[policy] key` (default N)" and "`key` (N)" in any page: N is the code's.
#[test]
fn defaults_stated_in_prose_match_the_code() {
    let code = defaults();
    let mut pages = vec![repo().join("README.md")];
    for entry in std::fs::read_dir(repo().join("docs")).expect("docs/") {
        let path = entry.expect("a docs entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    let mut seen = 0;
    for page in pages {
        let text = std::fs::read_to_string(&page).expect("a page");
        // Prose wraps: read it as one line, spaces collapsed.
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        for (key, default) in &code {
            for quoted in [format!("`[policy] {key}` ("), format!("`{key}` (")] {
                for (at, _) in text.match_indices(&quoted) {
                    let after = &text[at + quoted.len()..];
                    let after = after.strip_prefix("default ").unwrap_or(after);
                    let raw: String = after
                        .chars()
                        .take_while(|c| c.is_ascii_digit() || matches!(c, ',' | '.'))
                        .collect();
                    let raw = raw.trim_end_matches(['.', ',']);
                    let unit = after[raw.len()..]
                        .strip_prefix(" s")
                        .unwrap_or(&after[raw.len()..]);
                    if raw.is_empty() || !unit.starts_with(')') {
                        continue;
                    }
                    let number = raw.replace(',', "");
                    let Ok(stated) = number.parse::<f64>() else {
                        continue;
                    };
                    let actual = default.as_f64().unwrap_or(f64::NAN);
                    assert!(
                        (stated - actual).abs() < 1e-9,
                        "{}: `{key}` is said to default to {number}; the code says {default}",
                        page.display()
                    );
                    seen += 1;
                }
            }
        }
    }
    assert!(seen >= 5, "only {seen} defaults found in prose");
}

/// docs/resilience.md's time-bounds table states defaults too.
#[test]
fn the_time_bounds_table_matches_the_code() {
    let code = defaults();
    let rows = table(
        "docs/resilience.md",
        "## Time bounds",
        "| `[policy]` key | default | bounds |",
    );
    assert!(!rows.is_empty());
    for c in rows {
        let key = unquote(&c[0]);
        let default = code
            .get(key)
            .unwrap_or_else(|| panic!("docs/resilience.md names `{key}`, no policy key"));
        assert_eq!(
            c[1].parse::<u64>().ok(),
            default.as_u64(),
            "docs/resilience.md: the default of `{key}`"
        );
    }
}
