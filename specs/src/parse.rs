//! Text to [`Spec`], with parse errors located.
//!
//! `toml` and `serde_json` stop at the first problem; this module turns it
//! into a [`SpecError`] at the right place: an unknown key at the key, a
//! missing key at the table that lacks it, a wrong type at the value, named
//! by its key path.

use std::path::Path;

use crate::locate::{Locator, Position, display_path};
use crate::{Format, Spec, SpecError, SpecErrorKind, SpecErrors};

pub(crate) fn parse(text: &str, file: &Path, format: Format) -> Result<Spec, SpecErrors> {
    match format {
        Format::Toml => parse_toml(text, file),
        Format::Json => parse_json(text, file),
    }
}

fn parse_toml(text: &str, file: &Path) -> Result<Spec, SpecErrors> {
    from_toml_str(text, file).map_err(SpecErrors::from)
}

/// Deserialises any TOML file of the gate's (a routing table, a rules file)
/// with the spec's located errors: an unknown key at the key, a missing key
/// at its table, a wrong type at the value.
pub fn from_toml_str<T: serde::de::DeserializeOwned>(
    text: &str,
    file: &Path,
) -> Result<T, SpecError> {
    toml::from_str(text).map_err(|e| {
        let locator = Locator::new(text, Format::Toml);
        let offset = e.span().map(|r| r.start);
        let (kind, at) = classify(e.message(), offset, &locator, Anchor::Toml);
        SpecError::new(file, at.line, at.column, kind)
    })
}

fn parse_json(text: &str, file: &Path) -> Result<Spec, SpecErrors> {
    serde_json::from_str(text).map_err(|e| {
        let locator = Locator::new(text, Format::Json);
        let message = e.to_string();
        // `Display` appends " at line L column C"; the location goes elsewhere.
        let message = message
            .rsplit_once(" at line ")
            .map_or(message.as_str(), |(m, _)| m);
        let offset = (e.line() > 0).then(|| locator.offset_of_byte_column(e.line(), e.column()));
        let (kind, at) = if e.is_data() {
            classify(message, offset, &locator, Anchor::Json)
        } else {
            let at = offset.map_or(Position::START, |o| locator.position(o));
            (SpecErrorKind::Syntax(message.to_owned()), at)
        };
        SpecError::new(file, at.line, at.column, kind).into()
    })
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
/// is best shown.
fn classify(
    message: &str,
    offset: Option<usize>,
    locator: &Locator,
    anchor: Anchor,
) -> (SpecErrorKind, Position) {
    let at = |o: usize| locator.position(o);
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
        return (SpecErrorKind::Syntax(format!("duplicate key `{key}`")), pos);
    }
    if let Some(key) = quoted_after(message, "unknown field `") {
        let pos = match (anchor, offset) {
            (_, None) => Position::START,
            (Anchor::Toml, Some(o)) => at(o),
            (Anchor::Json, Some(o)) => at(locator.innermost_at(o).map_or(o, |(_, start)| start)),
        };
        return (SpecErrorKind::UnknownKey { key }, pos);
    }
    if let Some(key) = quoted_after(message, "missing field `") {
        let pos = match (anchor, offset) {
            (_, None) => Position::START,
            (Anchor::Toml, Some(o)) => at(o),
            (Anchor::Json, Some(o)) => {
                at(locator.innermost_value_at(o).map_or(o, |(_, start)| start))
            }
        };
        return (SpecErrorKind::MissingKey(key), pos);
    }
    let Some(o) = offset else {
        return (
            SpecErrorKind::Syntax(plain_words(message)),
            Position::WHOLE_FILE,
        );
    };
    // A type error: name the key whose value is wrong.
    match locator.innermost_value_at(o) {
        Some((path, start)) if !path.is_empty() => (
            SpecErrorKind::Syntax(format!(
                "`{}`: {}",
                display_path(path),
                plain_types(message)
            )),
            at(start),
        ),
        _ => (SpecErrorKind::Syntax(plain_types(message)), at(o)),
    }
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
