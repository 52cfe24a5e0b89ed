//! Maps a key path in the spec to its line and column.
//!
//! Both spellings are indexed the same way: one entry per key, array
//! element and table, with the byte spans of the key and of the value. TOML
//! spans come from `toml_edit`; JSON spans from a small scanner here, which
//! keeps what it read before a syntax error so that even a broken file can
//! be pointed into.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

use toml_edit::{Document, Item, Table, Value};

use crate::Format;

/// One step of a key path: a table key or an array index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Seg {
    /// A key of a table (or JSON object).
    Key(String),
    /// An index into an array (or array of tables).
    Index(usize),
}

impl From<&str> for Seg {
    fn from(key: &str) -> Self {
        Self::Key(key.to_owned())
    }
}

impl From<&String> for Seg {
    fn from(key: &String) -> Self {
        Self::Key(key.clone())
    }
}

impl From<usize> for Seg {
    fn from(index: usize) -> Self {
        Self::Index(index)
    }
}

/// Builds a key path (an array of [`Seg`]):
/// `key_path!["task", 2, "criterion", 0, "after", 1]`.
#[macro_export]
macro_rules! key_path {
    ($($seg:expr),* $(,)?) => {
        [$($crate::locate::Seg::from($seg)),*]
    };
}

/// Writes a key path the way a user reads it: `task[2].criterion[0].after[1]`.
pub fn display_path(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
    out
}

/// A 1-based line and column; the column counts characters, not bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl Position {
    /// The first character of the file.
    pub const START: Self = Self { line: 1, column: 1 };
    /// No place in the file: the parser did not say where (shown as the
    /// file alone, never as a line it would be wrong to point at).
    pub const WHOLE_FILE: Self = Self { line: 0, column: 0 };
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// One key, array element or table of the document.
#[derive(Debug, Clone)]
struct Entry {
    path: Vec<Seg>,
    key: Option<Range<usize>>,
    value: Option<Range<usize>>,
}

/// An index of a spec text: where every key and value is.
#[derive(Debug, Clone)]
pub struct Locator {
    line_starts: Vec<usize>,
    text: String,
    entries: Vec<Entry>,
    /// Path to its first entry (JSON may repeat a key; `serde_json` rejects it).
    by_path: HashMap<Vec<Seg>, usize>,
}

impl Locator {
    /// Indexes `text`. Text that does not parse gives an index of what could
    /// be read (JSON) or an empty one (TOML): lookups then return `None`.
    pub fn new(text: &str, format: Format) -> Self {
        let entries = match format {
            Format::Toml => toml_entries(text),
            Format::Json => json_entries(text),
        };
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        let mut by_path = HashMap::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            by_path.entry(e.path.clone()).or_insert(i);
        }
        Self {
            line_starts,
            text: text.to_owned(),
            entries,
            by_path,
        }
    }

    /// Where the value at `path` starts (for a table of TOML, its header).
    pub fn value(&self, path: &[Seg]) -> Option<Position> {
        let entry = self.entry(path)?;
        let offset = entry.value.as_ref().or(entry.key.as_ref())?.start;
        Some(self.position(offset))
    }

    /// Where the key that ends `path` is written; for an array element, the
    /// element itself.
    pub fn key(&self, path: &[Seg]) -> Option<Position> {
        let entry = self.entry(path)?;
        let offset = entry.key.as_ref().or(entry.value.as_ref())?.start;
        Some(self.position(offset))
    }

    /// Whether `path` is written in the file (rather than defaulted).
    pub fn contains(&self, path: &[Seg]) -> bool {
        self.entry(path).is_some()
    }

    /// The value at `path` or, if it is absent, its nearest written ancestor;
    /// the file's start if none is.
    pub fn value_or_ancestor(&self, path: &[Seg]) -> Position {
        (0..=path.len())
            .rev()
            .find_map(|n| self.value(&path[..n]))
            .unwrap_or(Position::START)
    }

    /// Like [`Locator::value_or_ancestor`], but at the key.
    pub fn key_or_ancestor(&self, path: &[Seg]) -> Position {
        (0..=path.len())
            .rev()
            .find_map(|n| self.key(&path[..n]))
            .unwrap_or(Position::START)
    }

    /// The line and column of a byte offset (clamped to the text).
    pub fn position(&self, offset: usize) -> Position {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.line_starts.partition_point(|&s| s <= offset);
        let start = self.line_starts[line - 1];
        let column = self.text[start..offset].chars().count() + 1;
        Position { line, column }
    }

    /// The byte offset of a 1-based line and a 1-based *byte* column, as
    /// `serde_json` reports them.
    pub(crate) fn offset_of_byte_column(&self, line: usize, column: usize) -> usize {
        let Some(start) = line.checked_sub(1).and_then(|l| self.line_starts.get(l)) else {
            return self.text.len();
        };
        (start + column.saturating_sub(1)).min(self.text.len())
    }

    /// The first offset at or after `offset` that is not a blank, `:` or `,`.
    pub(crate) fn next_token(&self, offset: usize) -> usize {
        let bytes = self.text.as_bytes();
        let mut o = offset;
        while bytes
            .get(o)
            .is_some_and(|b| b.is_ascii_whitespace() || matches!(b, b':' | b','))
        {
            o += 1;
        }
        if o < bytes.len() { o } else { offset }
    }

    /// The innermost entry whose key or value holds `offset`: its path and
    /// where it starts.
    pub(crate) fn innermost_at(&self, offset: usize) -> Option<(&[Seg], usize)> {
        let holds = |r: &Option<Range<usize>>| {
            r.as_ref().is_some_and(|r| {
                r.start <= offset && (offset < r.end || r.is_empty() && offset == r.start)
            })
        };
        self.entries
            .iter()
            .filter(|e| holds(&e.key) || holds(&e.value))
            .max_by_key(|e| e.path.len())
            .map(|e| {
                let start = if holds(&e.key) { &e.key } else { &e.value };
                (
                    e.path.as_slice(),
                    start.as_ref().map_or(offset, |r| r.start),
                )
            })
    }

    /// The innermost value (table, array, scalar) that holds `offset`.
    pub(crate) fn innermost_value_at(&self, offset: usize) -> Option<(&[Seg], usize)> {
        self.entries
            .iter()
            .filter(|e| {
                e.value
                    .as_ref()
                    .is_some_and(|r| r.start <= offset && offset < r.end)
            })
            .max_by_key(|e| e.path.len())
            .and_then(|e| Some((e.path.as_slice(), e.value.as_ref()?.start)))
    }

    fn entry(&self, path: &[Seg]) -> Option<&Entry> {
        self.by_path.get(path).map(|&i| &self.entries[i])
    }
}

fn push(path: &[Seg], seg: Seg) -> Vec<Seg> {
    let mut p = path.to_vec();
    p.push(seg);
    p
}

fn toml_entries(text: &str) -> Vec<Entry> {
    let Ok(doc) = Document::parse(text) else {
        return Vec::new();
    };
    let mut out = vec![Entry {
        path: Vec::new(),
        key: None,
        value: Some(0..0),
    }];
    toml_table(doc.as_table(), &[], &mut out);
    out
}

fn toml_table(table: &Table, path: &[Seg], out: &mut Vec<Entry>) {
    for (k, item) in table {
        let key = table.key(k).and_then(toml_edit::Key::span);
        toml_item(item, key, &push(path, Seg::from(k)), out);
    }
}

fn toml_item(item: &Item, key: Option<Range<usize>>, path: &[Seg], out: &mut Vec<Entry>) {
    match item {
        Item::None => {}
        Item::Value(v) => toml_value(v, key, path, out),
        Item::Table(t) => {
            out.push(Entry {
                path: path.to_vec(),
                key,
                value: t.span(),
            });
            toml_table(t, path, out);
        }
        Item::ArrayOfTables(a) => {
            out.push(Entry {
                path: path.to_vec(),
                key,
                value: a.span(),
            });
            for (i, t) in a.iter().enumerate() {
                let elem = push(path, Seg::Index(i));
                out.push(Entry {
                    path: elem.clone(),
                    key: None,
                    value: t.span(),
                });
                toml_table(t, &elem, out);
            }
        }
    }
}

fn toml_value(value: &Value, key: Option<Range<usize>>, path: &[Seg], out: &mut Vec<Entry>) {
    out.push(Entry {
        path: path.to_vec(),
        key,
        value: value.span(),
    });
    match value {
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                toml_value(v, None, &push(path, Seg::Index(i)), out);
            }
        }
        Value::InlineTable(t) => {
            for (k, v) in t {
                let key = t.key(k).and_then(toml_edit::Key::span);
                toml_value(v, key, &push(path, Seg::from(k)), out);
            }
        }
        _ => {}
    }
}

/// Deeper nesting than this is not indexed (`serde_json` stops at 128 too).
const JSON_MAX_DEPTH: usize = 128;

fn json_entries(text: &str) -> Vec<Entry> {
    let mut scanner = JsonScanner {
        bytes: text.as_bytes(),
        pos: 0,
        out: Vec::new(),
    };
    // A syntax error ends the scan; what was read before it stays indexed.
    let _ = scanner.value(&[], None, 0);
    scanner.out
}

/// Marks a JSON syntax error; `serde_json` says what it is.
struct Malformed;

struct JsonScanner<'a> {
    bytes: &'a [u8],
    pos: usize,
    out: Vec<Entry>,
}

impl JsonScanner<'_> {
    fn value(
        &mut self,
        path: &[Seg],
        key: Option<Range<usize>>,
        depth: usize,
    ) -> Result<(), Malformed> {
        if depth > JSON_MAX_DEPTH {
            return Err(Malformed);
        }
        self.skip_ws();
        let start = self.pos;
        let slot = self.out.len();
        self.out.push(Entry {
            path: path.to_vec(),
            key,
            value: Some(start..start + 1),
        });
        let result = match self.peek() {
            Some(b'{') => self.object(path, depth),
            Some(b'[') => self.array(path, depth),
            Some(b'"') => self.string().map(|_| ()),
            Some(_) => self.literal(),
            None => Err(Malformed),
        };
        // Even a value cut short by an error keeps the span it had.
        self.out[slot].value = Some(start..self.pos.max(start + 1));
        result
    }

    fn object(&mut self, path: &[Seg], depth: usize) -> Result<(), Malformed> {
        self.pos += 1;
        self.skip_ws();
        if self.eat(b'}') {
            return Ok(());
        }
        loop {
            self.skip_ws();
            let key_start = self.pos;
            let name = self.string()?;
            let key = key_start..self.pos;
            self.skip_ws();
            if !self.eat(b':') {
                return Err(Malformed);
            }
            self.value(&push(path, Seg::Key(name)), Some(key), depth + 1)?;
            self.skip_ws();
            if self.eat(b',') {
                continue;
            }
            return if self.eat(b'}') {
                Ok(())
            } else {
                Err(Malformed)
            };
        }
    }

    fn array(&mut self, path: &[Seg], depth: usize) -> Result<(), Malformed> {
        self.pos += 1;
        self.skip_ws();
        if self.eat(b']') {
            return Ok(());
        }
        for i in 0.. {
            self.value(&push(path, Seg::Index(i)), None, depth + 1)?;
            self.skip_ws();
            if self.eat(b',') {
                continue;
            }
            return if self.eat(b']') {
                Ok(())
            } else {
                Err(Malformed)
            };
        }
        Ok(())
    }

    /// A string literal, decoded (keys are compared decoded).
    fn string(&mut self) -> Result<String, Malformed> {
        if !self.eat(b'"') {
            return Err(Malformed);
        }
        let mut out = String::new();
        loop {
            let run_start = self.pos;
            while self
                .peek()
                .is_some_and(|b| b != b'"' && b != b'\\' && b >= 0x20)
            {
                self.pos += 1;
            }
            // The input is a `&str` and the run stops only at ASCII bytes,
            // so it is whole characters.
            out.push_str(&String::from_utf8_lossy(&self.bytes[run_start..self.pos]));
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    self.escape(&mut out)?;
                }
                _ => return Err(Malformed),
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), Malformed> {
        let c = self.peek().ok_or(Malformed)?;
        self.pos += 1;
        let decoded = match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = self.hex4()?;
                let code = if (0xD800..0xDC00).contains(&hi) {
                    // A surrogate pair: `\uD83D\uDE00`.
                    if !(self.eat(b'\\') && self.eat(b'u')) {
                        return Err(Malformed);
                    }
                    let lo = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return Err(Malformed);
                    }
                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                } else {
                    hi
                };
                char::from_u32(code).ok_or(Malformed)?
            }
            _ => return Err(Malformed),
        };
        out.push(decoded);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, Malformed> {
        let digits = self.bytes.get(self.pos..self.pos + 4).ok_or(Malformed)?;
        let digits = std::str::from_utf8(digits).map_err(|_| Malformed)?;
        let value = u32::from_str_radix(digits, 16).map_err(|_| Malformed)?;
        self.pos += 4;
        Ok(value)
    }

    /// A number, `true`, `false` or `null`: `serde_json` judges its form.
    fn literal(&mut self) -> Result<(), Malformed> {
        let start = self.pos;
        while self.peek().is_some_and(|b| {
            !matches!(b, b',' | b']' | b'}' | b':' | b'"') && !b.is_ascii_whitespace()
        }) {
            self.pos += 1;
        }
        if self.pos == start {
            Err(Malformed)
        } else {
            Ok(())
        }
    }

    fn skip_ws(&mut self) {
        while self
            .peek()
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOML: &str = r#"[spec]
id = "shop"

[[check]]
id = "build"
run = "make"

[[check]]
id = "serve"
run = "./serve.sh"
after = ["build"]
starts = { within_s = 10, ready_tcp = "127.0.0.1:8080" }

[[task]]
id = "orders"
tests.report = "r.xml"

[[task.criterion]]
id = "c1"
text = "é é"
run = "x"

[[task.criterion]]
id = "c2"
text = "t"
after = [ "build", "serve" ]

[[task]]
id = "cart"
after = ["orders"]
"#;

    const JSON: &str = r#"{
  "spec": {"id": "shop"},
  "check": [
    {"id": "build", "run": "make"},
    {"id": "serve", "run": "./serve.sh", "after": ["build"],
     "starts": {"within_s": 10, "ready_tcp": "127.0.0.1:8080"}}
  ],
  "task": [
    {"id": "orders", "tests": {"report": "r.xml"}, "criterion": [
      {"id": "c1", "text": "\"é\" \u00e9", "run": "x"},
      {"id": "c2", "text": "t", "after": [ "build", "serve" ]}
    ]},
    {"id": "cart", "after": ["orders"]}
  ]
}"#;

    #[allow(clippy::unnecessary_wraps)] // Compared with `Option`s.
    fn pos(line: usize, column: usize) -> Option<Position> {
        Some(Position { line, column })
    }

    #[test]
    fn locates_values_and_keys() {
        let toml = Locator::new(TOML, Format::Toml);
        let json = Locator::new(JSON, Format::Json);
        let cases: [(&[Seg], Option<Position>, Option<Position>); 13] = [
            (&key_path!["spec", "id"], pos(2, 6), pos(2, 18)),
            (&key_path!["check", 1, "id"], pos(9, 6), pos(5, 12)),
            (&key_path!["check", 1, "after", 0], pos(11, 10), pos(5, 52)),
            (
                &key_path!["check", 1, "starts", "ready_tcp"],
                pos(12, 39),
                pos(6, 46),
            ),
            (&key_path!["task", 0, "tests"], pos(16, 1), pos(9, 31)),
            (
                &key_path!["task", 0, "tests", "report"],
                pos(16, 16),
                pos(9, 42),
            ),
            (
                &key_path!["task", 0, "criterion", 1, "after", 1],
                pos(26, 20),
                pos(11, 53),
            ),
            (
                &key_path!["task", 0, "criterion", 1],
                pos(23, 1),
                pos(11, 7),
            ),
            (
                &key_path!["task", 0, "criterion", 0, "run"],
                pos(21, 7),
                pos(10, 51),
            ),
            (&key_path!["task", 1, "after", 0], pos(30, 10), pos(13, 30)),
            (&key_path!["task", 1], pos(28, 1), pos(13, 5)),
            (&key_path!["task", 2], None, None),
            (&key_path!["check", 0, "starts"], None, None),
        ];
        for (path, want_toml, want_json) in cases {
            assert_eq!(toml.value(path), want_toml, "toml {}", display_path(path));
            assert_eq!(json.value(path), want_json, "json {}", display_path(path));
        }
    }

    #[test]
    fn keys_point_at_the_key() {
        let toml = Locator::new(TOML, Format::Toml);
        let json = Locator::new(JSON, Format::Json);
        let path = key_path!["check", 1, "starts", "within_s"];
        assert_eq!(toml.key(&path), pos(12, 12));
        assert_eq!(json.key(&path), pos(6, 17));
        let path = key_path!["task", 0, "criterion", 0, "text"];
        assert_eq!(toml.key(&path), pos(20, 1));
        assert_eq!(json.key(&path), pos(10, 20));
    }

    #[test]
    fn columns_count_characters() {
        let toml = Locator::new(TOML, Format::Toml);
        let json = Locator::new(JSON, Format::Json);
        // `run` follows a value with two two-byte characters.
        assert_eq!(
            json.key(&key_path!["task", 0, "criterion", 0, "run"]),
            pos(10, 44)
        );
        let offset = TOML.find("é é").unwrap() + "é é".len();
        assert_eq!(
            toml.position(offset),
            Position {
                line: 20,
                column: 12
            }
        );
    }

    #[test]
    fn ancestors_stand_in_for_absent_values() {
        let toml = Locator::new(TOML, Format::Toml);
        let path = key_path!["task", 1, "criterion", 0, "id"];
        assert_eq!(
            toml.value_or_ancestor(&path),
            Position {
                line: 28,
                column: 1
            }
        );
        let broken = Locator::new("[spec", Format::Toml);
        assert_eq!(broken.value_or_ancestor(&path), Position::START);
    }

    #[test]
    fn broken_json_keeps_what_was_read() {
        let text = "{\"spec\": {\"id\": \"a\"},\n \"check\": [{\"id\": \"b\",, }]}";
        let json = Locator::new(text, Format::Json);
        assert_eq!(json.value(&key_path!["spec", "id"]), pos(1, 17));
        assert_eq!(json.value(&key_path!["check", 0, "id"]), pos(2, 19));
        assert_eq!(json.value(&key_path!["check", 0, "run"]), None);
    }

    #[test]
    fn json_escapes_in_keys() {
        let text = r#"{"a\"b": {"\u00e9\ud83d\ude00": [1, {"k": true}]}}"#;
        let json = Locator::new(text, Format::Json);
        assert_eq!(json.value(&key_path!["a\"b", "é😀", 1, "k"]), pos(1, 43));
    }

    #[test]
    fn paths_display() {
        assert_eq!(
            display_path(&key_path!["task", 2, "criterion", 0, "after", 1]),
            "task[2].criterion[0].after[1]"
        );
    }
}
