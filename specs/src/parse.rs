//! Text to [`Spec`], with parse errors located — all of them at once.
//!
//! `toml` and `serde_json` stop at the first problem; this module turns it
//! into a [`SpecError`] at the right place: an unknown key at the key, a
//! missing key at the table that lacks it, a wrong type at the value, named
//! by its key path. Then it sets the problem aside (an unknown key taken
//! out, a value of the wrong type too) and parses again, so one run names
//! every problem of the file: up to [`MAX_ERRORS`], in file order, each
//! unknown key with the key it was probably meant to be, each value of the
//! wrong type with the form it needs.

use std::path::Path;

use crate::errors::{MAX_ERRORS, did_you_mean};
use crate::locate::{Locator, Position, Seg, display_path};
use crate::{Format, Spec, SpecError, SpecErrorKind, SpecErrors};

/// Parses a spec; on a problem, keeps going past it and reports every
/// problem the file has (the validator's too, when the rest parses).
pub(crate) fn parse(text: &str, file: &Path, format: Format) -> Result<Spec, SpecErrors> {
    let first = match deserialize::<Spec>(text, format) {
        Ok(spec) => return Ok(spec),
        Err(problem) => *problem,
    };
    let original = Locator::new(text, format);
    let Some(mut tree) = Tree::parse(text, format) else {
        // Not even a document: nothing to go on from.
        return Err(SpecError::new(file, first.at.line, first.at.column, first.kind).into());
    };
    let mut found: Vec<(Position, SpecErrorKind)> = Vec::new();
    let mut set_aside: Vec<SetAside> = Vec::new();
    let mut problem = first;
    let mut spec = None;
    // Each round sets one problem aside; a file has only so many keys.
    for _ in 0..MAX_ERRORS * 4 {
        let Some(path) = problem.path.clone() else {
            found.push((problem.at, problem.kind));
            break;
        };
        let fix = match &problem.kind {
            SpecErrorKind::UnknownKey { .. } => Fix::TakeOut {
                meant: problem.meant.clone(),
            },
            SpecErrorKind::Syntax(_) if matches!(path.last(), Some(Seg::Key(_))) => {
                Fix::TakeOut { meant: None }
            }
            SpecErrorKind::MissingKey(key) => {
                let (table, key) = (path[..path.len().saturating_sub(1)].to_vec(), key.clone());
                match set_aside.iter().position(|a| {
                    a.table == table && (a.meant.as_deref() == Some(key.as_str()) || a.key == key)
                }) {
                    // The key is the one a typo took out: put it back under its name.
                    Some(i) if set_aside[i].key != key => Fix::PutBack(i),
                    // Its value had the wrong type, which is already said.
                    Some(_) => break,
                    None => Fix::Stop,
                }
            }
            _ => Fix::Stop,
        };
        match fix {
            Fix::TakeOut { meant } => {
                let at = match problem.kind {
                    SpecErrorKind::UnknownKey { .. } => original.key_or_ancestor(&path),
                    _ => original.value_or_ancestor(&path),
                };
                found.push((at, problem.kind));
                let Some(value) = tree.take(&path) else { break };
                let Some(Seg::Key(key)) = path.last() else {
                    break;
                };
                set_aside.push(SetAside {
                    table: path[..path.len() - 1].to_vec(),
                    key: key.clone(),
                    meant,
                    value,
                });
            }
            Fix::PutBack(i) => {
                let a = set_aside.remove(i);
                let Some(meant) = a.meant.clone() else { break };
                if !tree.put(&a.table, &meant, a.value) {
                    break;
                }
            }
            Fix::Stop => {
                found.push((problem.at, problem.kind));
                break;
            }
        }
        match deserialize::<Spec>(&tree.text(), format) {
            Ok(parsed) => {
                spec = Some(parsed);
                break;
            }
            Err(next) => {
                let next = *next;
                // Where it is in the file as written: by its key path.
                problem = Problem {
                    at: next.path.as_deref().map_or(next.at, |p| match next.kind {
                        SpecErrorKind::UnknownKey { .. } => original.key_or_ancestor(p),
                        _ => original.value_or_ancestor(p),
                    }),
                    ..next
                };
            }
        }
    }
    let mut errors: Vec<SpecError> = found
        .into_iter()
        .map(|(at, kind)| SpecError::new(file, at.line, at.column, kind))
        .collect();
    if let Some(spec) = spec
        && let Err(more) = crate::validate::validate(&spec, text, file, format)
    {
        errors.extend(more.0);
    }
    Err(SpecErrors::capped(errors))
}

/// One problem as the parser reported it, and the key path it is at.
struct Problem {
    kind: SpecErrorKind,
    at: Position,
    /// The key path of what is wrong (for a missing key: the table and the key).
    path: Option<Vec<Seg>>,
    /// For an unknown key, the key of the schema it was probably meant to be.
    meant: Option<String>,
}

/// What to do with a problem before parsing again.
enum Fix {
    /// Take the key out (remembering what it may have meant).
    TakeOut { meant: Option<String> },
    /// Put a key taken out back under the name it was meant to have.
    PutBack(usize),
    /// Nothing more can be learned.
    Stop,
}

/// A key taken out of the document, kept to put back if it was a typo of
/// a key the schema needs.
struct SetAside {
    table: Vec<Seg>,
    key: String,
    meant: Option<String>,
    value: Value,
}

/// A value of either spelling.
enum Value {
    Toml(toml::Value),
    Json(serde_json::Value),
}

/// The document as data, to take keys out of and put them back.
enum Tree {
    Toml(toml::Table),
    Json(serde_json::Value),
}

impl Tree {
    fn parse(text: &str, format: Format) -> Option<Self> {
        match format {
            Format::Toml => toml::from_str(text).ok().map(Self::Toml),
            Format::Json => serde_json::from_str(text).ok().map(Self::Json),
        }
    }

    fn text(&self) -> String {
        match self {
            Self::Toml(t) => toml::to_string(t).unwrap_or_default(),
            Self::Json(v) => serde_json::to_string_pretty(v).unwrap_or_default(),
        }
    }

    /// Takes the key that ends `path` out of its table.
    fn take(&mut self, path: &[Seg]) -> Option<Value> {
        let (Seg::Key(key), table) = path.split_last()? else {
            return None;
        };
        match self {
            Self::Toml(root) => toml_table(root, table)?.remove(key).map(Value::Toml),
            Self::Json(root) => json_at(root, table)?
                .as_object_mut()?
                .remove(key)
                .map(Value::Json),
        }
    }

    /// Puts `value` into the table at `table` under `key`.
    fn put(&mut self, table: &[Seg], key: &str, value: Value) -> bool {
        match (self, value) {
            (Self::Toml(root), Value::Toml(v)) => toml_table(root, table)
                .map(|t| t.insert(key.to_owned(), v))
                .is_some(),
            (Self::Json(root), Value::Json(v)) => json_at(root, table)
                .and_then(serde_json::Value::as_object_mut)
                .map(|t| t.insert(key.to_owned(), v))
                .is_some(),
            _ => false,
        }
    }

    /// The value at `path`, as a string when it is one.
    fn string_at(&self, path: &[Seg]) -> Option<String> {
        match self {
            Self::Toml(root) => {
                let (last, table) = path.split_last()?;
                let parent = toml_table_ref(root, table)?;
                match last {
                    Seg::Key(k) => parent.get(k)?.as_str().map(str::to_owned),
                    Seg::Index(_) => None,
                }
            }
            Self::Json(root) => {
                let mut v = root;
                for seg in path {
                    v = match seg {
                        Seg::Key(k) => v.get(k)?,
                        Seg::Index(i) => v.get(*i)?,
                    };
                }
                v.as_str().map(str::to_owned)
            }
        }
    }
}

fn toml_table<'a>(root: &'a mut toml::Table, path: &[Seg]) -> Option<&'a mut toml::Table> {
    let mut table = root;
    let mut segs = path.iter().peekable();
    while let Some(seg) = segs.next() {
        let Seg::Key(k) = seg else { return None };
        let mut value = table.get_mut(k)?;
        while let Some(Seg::Index(i)) = segs.peek() {
            value = value.as_array_mut()?.get_mut(*i)?;
            segs.next();
        }
        table = value.as_table_mut()?;
    }
    Some(table)
}

fn toml_table_ref<'a>(root: &'a toml::Table, path: &[Seg]) -> Option<&'a toml::Table> {
    let mut table = root;
    let mut segs = path.iter().peekable();
    while let Some(seg) = segs.next() {
        let Seg::Key(k) = seg else { return None };
        let mut value = table.get(k)?;
        while let Some(Seg::Index(i)) = segs.peek() {
            value = value.as_array()?.get(*i)?;
            segs.next();
        }
        table = value.as_table()?;
    }
    Some(table)
}

fn json_at<'a>(root: &'a mut serde_json::Value, path: &[Seg]) -> Option<&'a mut serde_json::Value> {
    let mut v = root;
    for seg in path {
        v = match seg {
            Seg::Key(k) => v.get_mut(k)?,
            Seg::Index(i) => v.get_mut(*i)?,
        };
    }
    Some(v)
}

/// Parses `text` as a `T` of the gate's, the first problem located.
fn deserialize<T: serde::de::DeserializeOwned>(
    text: &str,
    format: Format,
) -> Result<T, Box<Problem>> {
    match format {
        Format::Toml => toml::from_str(text).map_err(|e| {
            let locator = Locator::new(text, Format::Toml);
            let offset = e.span().map(|r| r.start);
            let mut problem = classify(e.message(), offset, &locator, Anchor::Toml);
            if let SpecErrorKind::Syntax(m) = &mut problem.kind
                && let (Some(path), Some(tree)) = (&problem.path, Tree::parse(text, Format::Toml))
            {
                m.push_str(&expected_form(
                    path,
                    tree.string_at(path).as_deref(),
                    Format::Toml,
                ));
            }
            Box::new(problem)
        }),
        Format::Json => serde_json::from_str(text).map_err(|e| {
            let locator = Locator::new(text, Format::Json);
            let message = e.to_string();
            // `Display` appends " at line L column C"; the location goes elsewhere.
            let message = message
                .rsplit_once(" at line ")
                .map_or(message.as_str(), |(m, _)| m);
            let offset =
                (e.line() > 0).then(|| locator.offset_of_byte_column(e.line(), e.column()));
            if e.is_data() {
                let mut problem = classify(message, offset, &locator, Anchor::Json);
                if let SpecErrorKind::Syntax(m) = &mut problem.kind
                    && let (Some(path), Some(tree)) =
                        (&problem.path, Tree::parse(text, Format::Json))
                {
                    m.push_str(&expected_form(
                        path,
                        tree.string_at(path).as_deref(),
                        Format::Json,
                    ));
                }
                Box::new(problem)
            } else {
                let at = offset.map_or(Position::START, |o| locator.position(o));
                Box::new(Problem {
                    kind: SpecErrorKind::Syntax(message.to_owned()),
                    at,
                    path: None,
                    meant: None,
                })
            }
        }),
    }
}

/// Deserialises any TOML file of the gate's (a routing table, a rules file)
/// with the spec's located errors: an unknown key at the key (with the key
/// it was probably meant to be), a missing key at its table, a wrong type
/// at the value.
pub fn from_toml_str<T: serde::de::DeserializeOwned>(
    text: &str,
    file: &Path,
) -> Result<T, SpecError> {
    deserialize(text, Format::Toml)
        .map_err(|p| SpecError::new(file, p.at.line, p.at.column, p.kind))
}

/// The form a value needs, when its key says it (`tests = "cmd"` is
/// `tests = { run = "cmd" }`): what follows a type error's message.
fn expected_form(path: &[Seg], found: Option<&str>, format: Format) -> String {
    let Some(Seg::Key(key)) = path.last() else {
        return String::new();
    };
    let text = found.unwrap_or("…");
    let code = |s: String| format!("`{s}`");
    let (toml, json) = match key.as_str() {
        "tests" => (
            format!(
                "{} (or `{{ report = \"reports/junit.xml\" }}`)",
                code(format!("tests = {{ run = \"{text}\" }}"))
            ),
            format!(
                "{} (or `{{\"report\": \"reports/junit.xml\"}}`)",
                code(format!("\"tests\": {{\"run\": \"{text}\"}}"))
            ),
        ),
        "starts" => (
            code("starts = { within_s = 10, ready_tcp = \"127.0.0.1:8080\" }".to_owned()),
            code("\"starts\": {\"within_s\": 10, \"ready_tcp\": \"127.0.0.1:8080\"}".to_owned()),
        ),
        "after" | "inputs" | "paths" | "files" | "sensitive_paths" => (
            code(format!("{key} = [\"{text}\"]")),
            code(format!("\"{key}\": [\"{text}\"]")),
        ),
        "role_timeout_s" => (
            code("role_timeout_s = { quality = 600 }".to_owned()),
            code("\"role_timeout_s\": {\"quality\": 600}".to_owned()),
        ),
        "run" | "report" | "text" | "id" | "title" | "summary" | "base" | "agent" | "url"
        | "judge" => (
            code(format!("{key} = \"…\"")),
            code(format!("\"{key}\": \"…\"")),
        ),
        _ => return String::new(),
    };
    let form = match format {
        Format::Toml => toml,
        Format::Json => json,
    };
    format!("; write {form}")
}

/// What the error offset points at.
#[derive(Clone, Copy)]
enum Anchor {
    /// `toml` points at the start of the key or value in question (a missing
    /// key: at the table's header).
    Toml,
    /// `serde_json` points at the last byte it read: a key's closing quote,
    /// a value's last byte, an object's closing brace.
    Json,
}

/// Turns a serde message into a kind, and the error offset into where it
/// is best shown and the key path it is at.
fn classify(message: &str, offset: Option<usize>, locator: &Locator, anchor: Anchor) -> Problem {
    let at = |o: usize| locator.position(o);
    let problem = |kind, at, path: Option<&[Seg]>| Problem {
        kind,
        at,
        path: path.map(<[Seg]>::to_vec),
        meant: None,
    };
    // `serde_json` may point at the blank or colon before a value.
    let offset = match anchor {
        Anchor::Json => offset.map(|o| locator.next_token(o)),
        Anchor::Toml => offset,
    };
    if let Some(key) = quoted_after(message, "duplicate field `") {
        // JSON only: TOML's parser rejects a repeated key itself.
        let pos = offset.map_or(Position::START, |o| {
            at(locator.innermost_at(o).map_or(o, |(_, start)| start))
        });
        return problem(
            SpecErrorKind::Syntax(format!("duplicate key `{key}`")),
            pos,
            None,
        );
    }
    if let Some(key) = quoted_after(message, "unknown field `") {
        let found = offset.and_then(|o| locator.innermost_at(o));
        let pos = match (anchor, offset) {
            (_, None) => Position::START,
            (Anchor::Toml, Some(o)) => at(o),
            (Anchor::Json, Some(o)) => at(found.map_or(o, |(_, start)| start)),
        };
        let suggestion = did_you_mean(&key, expected_keys(message));
        return Problem {
            meant: suggestion.clone(),
            kind: SpecErrorKind::UnknownKey { key, suggestion },
            at: pos,
            path: found.map(|(p, _)| p.to_vec()),
        };
    }
    if let Some(key) = quoted_after(message, "missing field `") {
        let table = offset.and_then(|o| match anchor {
            Anchor::Toml => locator.innermost_at(o),
            Anchor::Json => locator.innermost_value_at(o),
        });
        let pos = match (anchor, offset) {
            (_, None) => Position::START,
            (Anchor::Toml, Some(o)) => at(o),
            (Anchor::Json, Some(o)) => at(table.map_or(o, |(_, start)| start)),
        };
        let path = table.map(|(p, _)| {
            let mut p = p.to_vec();
            p.push(Seg::Key(key.clone()));
            p
        });
        return Problem {
            kind: SpecErrorKind::MissingKey(key),
            at: pos,
            path,
            meant: None,
        };
    }
    let Some(o) = offset else {
        return problem(
            SpecErrorKind::Syntax(plain_words(message)),
            Position::WHOLE_FILE,
            None,
        );
    };
    // A type error: name the key whose value is wrong.
    match locator.innermost_value_at(o) {
        Some((path, start)) if !path.is_empty() => problem(
            SpecErrorKind::Syntax(format!(
                "`{}`: {}",
                display_path(path),
                plain_types(message)
            )),
            at(start),
            Some(path),
        ),
        _ => problem(SpecErrorKind::Syntax(plain_types(message)), at(o), None),
    }
}

/// The keys an "unknown field" message says were expected
/// (`…, expected one of `id`, `title``).
fn expected_keys(message: &str) -> Vec<&str> {
    let Some((_, expected)) = message.split_once("expected ") else {
        return Vec::new();
    };
    expected.split('`').skip(1).step_by(2).collect()
}

/// The text between `prefix` and the next backtick, if `message` starts so.
fn quoted_after(message: &str, prefix: &str) -> Option<String> {
    let rest = message.strip_prefix(prefix)?;
    rest.split_once('`').map(|(key, _)| key.to_owned())
}

/// Says Rust's type names in the file's terms.
/// A parser message without a place, in the words a spec's author uses.
fn plain_words(message: &str) -> String {
    // toml's own words for a dotted key (or nesting) past its depth limit.
    if message == "recursion limit" {
        return "keys or values nested deeper than the TOML parser allows".to_owned();
    }
    plain_types(message)
}

fn plain_types(message: &str) -> String {
    let Some((head, expected)) = message.rsplit_once(", expected ") else {
        return message.to_owned();
    };
    let plain = match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number of at least 0",
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "a sequence" => "an array",
        "a map" => "a table",
        e if e.starts_with("struct ") => "a table",
        e => e,
    };
    format!("{head}, expected {plain}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_type_names() {
        let cases = [
            (
                "invalid type: string \"ten\", expected u64",
                "invalid type: string \"ten\", expected a whole number of at least 0",
            ),
            (
                "invalid type: integer `1`, expected f64",
                "invalid type: integer `1`, expected a number",
            ),
            (
                "invalid type: string \"a\", expected a sequence",
                "invalid type: string \"a\", expected an array",
            ),
            (
                "invalid type: string \"a\", expected struct Starts",
                "invalid type: string \"a\", expected a table",
            ),
            (
                "unclosed table, expected `]`",
                "unclosed table, expected `]`",
            ),
            (
                "invalid type: string \"a\", expected a string",
                "invalid type: string \"a\", expected a string",
            ),
        ];
        for (raw, want) in cases {
            assert_eq!(plain_types(raw), want);
        }
    }
}

#[cfg(test)]
mod fuzz_regressions {
    use std::path::Path;

    use crate::Format;

    /// Inputs the fuzzers found that once panicked instead of erroring.
    #[test]
    fn malformed_inputs_are_errors_not_panics() {
        let cases: &[&[u8]] = &[
            // toml_edit's document parser panicked on a dotted key after a
            // stray `==` line.
            b"==\n.=",
            b"\n\n==?s\n.ko=",
        ];
        for case in cases {
            let text = String::from_utf8_lossy(case);
            let err = crate::parse_str(&text, Path::new("gate.toml"), Format::Toml)
                .expect_err("malformed input is an error");
            assert!(!err.to_string().is_empty());
        }
    }
}
