//! Built-in checks over the workspace's files.
//!
//! Each check reads the snapshot's regular files (skipping those over
//! [`MAX_FILE_BYTES`]) and returns a [`Location`] per problem found; the
//! item fails if there is any. The conflict and secrets checks skip binary
//! files (a NUL in the first [`BINARY_SNIFF_BYTES`]); the parse check reads
//! every file named as one of its formats, since a NUL makes such a file
//! invalid, not binary.

use std::io::Read;
use std::path::Path;

use crate::{Builtin, Location, secrets};

/// Files larger than this are not read.
pub const MAX_FILE_BYTES: u64 = 5 * 1024 * 1024;

/// A NUL within this many leading bytes marks a file as binary.
pub const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// Runs `builtin` over the workspace-relative `files` under `workspace`.
pub fn check(builtin: Builtin, workspace: &Path, files: &[String]) -> Vec<Location> {
    let mut found = Vec::new();
    for file in files {
        let kind = parse_kind(file);
        if builtin == Builtin::Parse && kind.is_none() {
            continue;
        }
        let bytes = match read_bytes(&workspace.join(file)) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                found.push(Location {
                    file: file.clone(),
                    line: None,
                    message: format!("cannot read: {e}"),
                });
                continue;
            }
        };
        match (builtin, kind) {
            // A file named as a structured format is read whatever its bytes:
            // a NUL in a `.json` file makes it invalid, not binary.
            (Builtin::Parse, Some(kind)) => match decode(&bytes, kind) {
                Ok(text) => found.extend(parse(file, &text, kind)),
                Err(why) => found.push(Location {
                    file: file.clone(),
                    line: None,
                    message: why.to_owned(),
                }),
            },
            (Builtin::Parse, None) => {}
            (Builtin::Conflicts | Builtin::Secrets, _) => {
                if bytes.iter().take(BINARY_SNIFF_BYTES).any(|&b| b == 0) {
                    continue;
                }
                let text = String::from_utf8_lossy(&bytes);
                if builtin == Builtin::Conflicts {
                    conflicts(file, &text, &mut found);
                } else {
                    secret_shapes(file, &text, &mut found);
                }
            }
        }
    }
    found
}

/// The file's bytes, or `None` when it is too large or not a regular file.
fn read_bytes(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return Ok(None);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    std::fs::File::open(path)?
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= MAX_FILE_BYTES).then_some(bytes))
}

/// A structured file's text: UTF-8, or for YAML also UTF-16 or UTF-32
/// with a byte-order mark (YAML 1.2 reads all three; JSON and TOML are
/// UTF-8 only).
fn decode(bytes: &[u8], kind: ParseKind) -> Result<String, &'static str> {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return Ok(text.to_owned());
    }
    let (width, big) = match bytes {
        [0x00, 0x00, 0xFE, 0xFF, ..] => (4, true),
        [0xFF, 0xFE, 0x00, 0x00, ..] => (4, false),
        [0xFE, 0xFF, ..] => (2, true),
        [0xFF, 0xFE, ..] => (2, false),
        _ => return Err("not valid UTF-8"),
    };
    if kind != ParseKind::Yaml || !bytes.len().is_multiple_of(width) {
        return Err("not valid UTF-8");
    }
    // The units after the byte-order mark.
    let units = bytes[width..].chunks(width).map(|c| {
        let n = |b: &u8| u32::from(*b);
        if big {
            c.iter().fold(0, |acc, b| (acc << 8) | n(b))
        } else {
            c.iter().rev().fold(0, |acc, b| (acc << 8) | n(b))
        }
    });
    if width == 4 {
        units
            .map(|u| char::from_u32(u).ok_or("not valid UTF-32"))
            .collect()
    } else {
        let utf16: Vec<u16> = units.map(|u| u as u16).collect();
        String::from_utf16(&utf16).map_err(|_| "not valid UTF-16")
    }
}

/// Merge-conflict markers: `<<<<<<< ` and `>>>>>>> ` anywhere at a line
/// start; `=======` alone on a line only inside an open `<<<<<<<` block (so
/// a setext heading or a ruler is not one).
fn conflicts(file: &str, text: &str, found: &mut Vec<Location>) {
    let mut open = false;
    for (n, line) in text.lines().enumerate() {
        let line_no = u32::try_from(n + 1).unwrap_or(u32::MAX);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let marker = if line.starts_with("<<<<<<< ") || line == "<<<<<<<" {
            open = true;
            Some("<<<<<<<")
        } else if line.starts_with(">>>>>>> ") || line == ">>>>>>>" {
            open = false;
            Some(">>>>>>>")
        } else if open && line == "=======" {
            Some("=======")
        } else {
            None
        };
        if let Some(marker) = marker {
            found.push(Location {
                file: file.to_owned(),
                line: Some(line_no),
                message: format!("merge conflict marker `{marker}`"),
            });
        }
    }
}

/// Secret-shaped strings, by line; the secret itself is never repeated.
fn secret_shapes(file: &str, text: &str, found: &mut Vec<Location>) {
    let matches = secrets::find(text);
    if matches.is_empty() {
        return;
    }
    let lines = LineStarts::new(text);
    for m in matches {
        found.push(Location {
            file: file.to_owned(),
            line: Some(lines.line_of(m.start)),
            message: format!("looks like {}", m.what),
        });
    }
}

/// The structured formats the parse check knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ParseKind {
    Json,
    /// JSON with comments and trailing commas, as editors and TypeScript read it.
    Jsonc,
    /// JSON Lines (`.jsonl`, `.ndjson`): one JSON value per line; blank lines
    /// are allowed.
    JsonLines,
    Toml,
    Yaml,
}

fn parse_kind(file: &str) -> Option<ParseKind> {
    let name = file.rsplit('/').next().unwrap_or(file);
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    match ext.as_str() {
        "json" if is_jsonc(file, name) => Some(ParseKind::Jsonc),
        "json" => Some(ParseKind::Json),
        "jsonl" | "ndjson" => Some(ParseKind::JsonLines),
        "toml" => Some(ParseKind::Toml),
        "yaml" | "yml" => Some(ParseKind::Yaml),
        _ => None,
    }
}

/// `.json` files that their tools read as JSON with comments.
fn is_jsonc(path: &str, name: &str) -> bool {
    path.starts_with(".vscode/")
        || path.contains("/.vscode/")
        || path.starts_with(".devcontainer/")
        || path.contains("/.devcontainer/")
        || name.starts_with("tsconfig")
        || name.starts_with("jsconfig")
        || matches!(
            name,
            ".devcontainer.json" | ".eslintrc.json" | "devcontainer.json"
        )
}

/// The parse error of `text` as `kind`, if any.
fn parse(file: &str, text: &str, kind: ParseKind) -> Option<Location> {
    let at = |line: usize, message: String| Location {
        file: file.to_owned(),
        line: Some(u32::try_from(line).unwrap_or(u32::MAX)),
        message,
    };
    // A byte-order mark is no part of the document: the JSON RFC lets a
    // reader ignore it, and editors on Windows write one.
    let json = || text.strip_prefix('\u{feff}').unwrap_or(text);
    match kind {
        ParseKind::Json => serde_json::from_str::<serde::de::IgnoredAny>(json())
            .err()
            .map(|e| at(e.line(), format!("invalid JSON: {}", json_message(&e)))),
        ParseKind::Jsonc => serde_json::from_str::<serde::de::IgnoredAny>(&strip_jsonc(json()))
            .err()
            .map(|e| at(e.line(), format!("invalid JSON: {}", json_message(&e)))),
        ParseKind::JsonLines => json().lines().enumerate().find_map(|(n, line)| {
            if line.trim().is_empty() {
                return None;
            }
            serde_json::from_str::<serde::de::IgnoredAny>(line)
                .err()
                .map(|e| at(n + 1, format!("invalid JSON line: {}", json_message(&e))))
        }),
        ParseKind::Toml => text.parse::<toml::Table>().err().map(|e| {
            let line = e
                .span()
                .map_or(1, |span| LineStarts::new(text).line_of(span.start) as usize);
            at(line, format!("invalid TOML: {}", e.message().trim()))
        }),
        ParseKind::Yaml => match yaml_error(text) {
            None => None,
            // Templated YAML (Helm, Jinja) is only YAML after rendering.
            Some(_) if text.contains("{{") || text.contains("{%") => None,
            Some(e) => Some(at(e.marker().line(), yaml_message(&e))),
        },
    }
}

/// What the parse check says of a YAML error: a repeated key is named as
/// such (the text parses, but YAML requires a mapping's keys to be unique).
fn yaml_message(e: &saphyr::ScanError) -> String {
    if e.info().contains("duplicated key") {
        "invalid YAML: duplicate key in a mapping (YAML requires a mapping's keys to be unique)"
            .to_owned()
    } else {
        format!("invalid YAML: {}", e.info())
    }
}

/// Nodes a YAML stream may come to once its aliases are expanded for the
/// parse check to also build it (which finds duplicate keys). Aliases can
/// multiply a file of a few hundred bytes into billions of nodes ("billion
/// laughs"); above this it is checked as a stream of events only.
const YAML_EXPANDED_NODES: u64 = 1_000_000;

/// Why `text` is not YAML (1.2), if it is not: its events first (syntax,
/// unknown anchors), counting what the aliases expand to, then the built
/// document (duplicate keys) when that stays small. Text without a `*`
/// holds no alias, so nothing can expand and the document is built at once.
fn yaml_error(text: &str) -> Option<saphyr::ScanError> {
    if text.contains('*') {
        let mut size = ExpandedSize::default();
        if let Err(e) = saphyr_parser::Parser::new_from_str(text).load(&mut size, true) {
            return Some(e);
        }
        if size.total > YAML_EXPANDED_NODES {
            return None;
        }
    }
    let mut loader = saphyr::YamlLoader::<saphyr::Yaml>::default();
    // Counted above: what is built here stays within the bound.
    loader.alias_limit(usize::try_from(YAML_EXPANDED_NODES).unwrap_or(usize::MAX));
    if let Err(e) = saphyr_parser::Parser::new_from_str(text).load(&mut loader, true) {
        return Some(e);
    }
    loader.error().cloned()
}

/// The number of nodes a YAML stream holds with every alias expanded, as
/// a loader would build it, counted from its events without building it.
#[derive(Debug, Default)]
struct ExpandedSize {
    /// Each open collection's anchor id (0 for none) and nodes so far.
    open: Vec<(usize, u64)>,
    /// The size of each anchored node seen.
    anchored: std::collections::HashMap<usize, u64>,
    /// Nodes of the whole stream.
    total: u64,
}

impl saphyr_parser::EventReceiver<'_> for ExpandedSize {
    fn on_event(&mut self, event: saphyr_parser::Event<'_>) {
        use saphyr_parser::Event;
        let (anchor, nodes) = match event {
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                self.open.push((anchor, 1));
                return;
            }
            Event::SequenceEnd | Event::MappingEnd => match self.open.pop() {
                Some(done) => done,
                None => return,
            },
            Event::Scalar(_, _, anchor, _) => (anchor, 1),
            Event::Alias(id) => (0, self.anchored.get(&id).copied().unwrap_or(1)),
            _ => return,
        };
        if anchor > 0 {
            self.anchored.insert(anchor, nodes);
        }
        match self.open.last_mut() {
            Some((_, parent)) => *parent = parent.saturating_add(nodes),
            None => self.total = self.total.saturating_add(nodes),
        }
    }
}

/// serde_json's message without its " at line L column C" suffix.
fn json_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    match full.rfind(" at line ") {
        Some(i) => full[..i].to_owned(),
        None => full,
    }
}

/// JSON-with-comments to JSON: comments become spaces (newlines kept, so
/// lines still match) and trailing commas are dropped.
fn strip_jsonc(text: &str) -> String {
    #[derive(PartialEq)]
    enum State {
        Code,
        Str,
        StrEscape,
        LineComment,
        BlockComment,
    }
    let mut out = String::with_capacity(text.len());
    let mut state = State::Code;
    let mut chars = text.chars().peekable();
    // Index in `out` of a comma that may turn out to be trailing.
    let mut pending_comma: Option<usize> = None;
    while let Some(c) = chars.next() {
        match state {
            State::Code => match c {
                '"' => {
                    pending_comma = None;
                    state = State::Str;
                    out.push(c);
                }
                '/' if chars.peek() == Some(&'/') => {
                    chars.next();
                    state = State::LineComment;
                    out.push_str("  ");
                }
                '/' if chars.peek() == Some(&'*') => {
                    chars.next();
                    state = State::BlockComment;
                    out.push_str("  ");
                }
                ',' => {
                    pending_comma = Some(out.len());
                    out.push(c);
                }
                '}' | ']' => {
                    if let Some(i) = pending_comma.take() {
                        out.replace_range(i..=i, " ");
                    }
                    out.push(c);
                }
                c if c.is_whitespace() => out.push(c),
                c => {
                    pending_comma = None;
                    out.push(c);
                }
            },
            State::Str => {
                out.push(c);
                match c {
                    '\\' => state = State::StrEscape,
                    '"' => state = State::Code,
                    _ => {}
                }
            }
            State::StrEscape => {
                out.push(c);
                state = State::Str;
            }
            State::LineComment => {
                if c == '\n' {
                    out.push('\n');
                    state = State::Code;
                } else {
                    out.push(' ');
                }
            }
            State::BlockComment => {
                if c == '*' && chars.peek() == Some(&'/') {
                    chars.next();
                    out.push_str("  ");
                    state = State::Code;
                } else {
                    out.push(if c == '\n' { '\n' } else { ' ' });
                }
            }
        }
    }
    out
}

/// Byte offset → 1-based line.
struct LineStarts(Vec<usize>);

impl LineStarts {
    fn new(text: &str) -> Self {
        Self(
            std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .collect(),
        )
    }

    fn line_of(&self, offset: usize) -> u32 {
        let line = match self.0.binary_search(&offset) {
            Ok(i) => i + 1,
            Err(i) => i,
        };
        u32::try_from(line).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;
    use crate::testutil::{ago, fake, write_file};

    /// Writes `files` into a fresh workspace and runs `builtin` over them.
    fn run(builtin: Builtin, files: &[(&str, Vec<u8>)]) -> Vec<(String, Option<u32>, String)> {
        let ws = tempfile::tempdir().unwrap();
        for (name, body) in files {
            write_file(ws.path(), name, body, ago(0));
        }
        let names: Vec<String> = files.iter().map(|(n, _)| (*n).to_owned()).collect();
        check(builtin, ws.path(), &names)
            .into_iter()
            .map(|l| (l.file, l.line, l.message))
            .collect()
    }

    fn loc(file: &str, line: u32, message: &str) -> (String, Option<u32>, String) {
        (file.to_owned(), Some(line), message.to_owned())
    }

    #[test]
    fn conflict_markers() {
        let conflicted = b"a\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> branch\nb\n".to_vec();
        let crlf = b"<<<<<<< HEAD\r\nx\r\n=======\r\ny\r\n>>>>>>> b\r\n".to_vec();
        let heading = b"Title\n=======\n\ntext\n".to_vec();
        let quoted = b"see `<<<<<<< HEAD` in the docs\n  =======\n".to_vec();
        let found = run(
            Builtin::Conflicts,
            &[
                ("src/a.rs", conflicted),
                ("src/b.txt", crlf),
                ("README.md", heading),
                ("docs/git.md", quoted),
            ],
        );
        assert_eq!(
            found,
            vec![
                loc("src/a.rs", 2, "merge conflict marker `<<<<<<<`"),
                loc("src/a.rs", 4, "merge conflict marker `=======`"),
                loc("src/a.rs", 6, "merge conflict marker `>>>>>>>`"),
                loc("src/b.txt", 1, "merge conflict marker `<<<<<<<`"),
                loc("src/b.txt", 3, "merge conflict marker `=======`"),
                loc("src/b.txt", 5, "merge conflict marker `>>>>>>>`"),
            ]
        );
    }

    #[test]
    fn secret_shapes_by_line_without_the_secret() {
        let aws = fake("AKIA", "IOSFODNN7EXAMPLE");
        let pem = format!(
            "{}\nMIIEow\n{}\n",
            fake("-----BEGIN RSA ", "PRIVATE KEY-----"),
            fake("-----END RSA ", "PRIVATE KEY-----")
        );
        let mut binary = aws.clone().into_bytes();
        binary.push(0);
        let mut big = vec![b'x'; usize::try_from(MAX_FILE_BYTES).unwrap()];
        big.extend_from_slice(aws.as_bytes());
        let found = run(
            Builtin::Secrets,
            &[
                ("config/prod.env", format!("A=1\nKEY={aws}\n").into_bytes()),
                ("keys/id_rsa", pem.into_bytes()),
                ("clean.rs", b"let risk_level = \"sk-low\";\n".to_vec()),
                ("blob.bin", binary),
                ("huge.txt", big),
            ],
        );
        assert_eq!(
            found,
            vec![
                loc("config/prod.env", 2, "looks like an AWS access key id"),
                loc("keys/id_rsa", 1, "looks like a private key block"),
            ]
        );
        assert!(found.iter().all(|(_, _, m)| !m.contains(&aws)));
    }

    #[test]
    fn structured_files_that_do_not_parse() {
        let found = run(
            Builtin::Parse,
            &[
                ("ok.json", b"{\"a\": [1, 2]}\n".to_vec()),
                ("bad.json", b"{\n  \"a\": 1,\n  \"b\": \n}\n".to_vec()),
                ("ok.toml", b"[package]\nname = \"x\"\n".to_vec()),
                (
                    "bad.toml",
                    b"[package]\nname = \"x\"\nname = \"y\"\n".to_vec(),
                ),
                ("ok.yaml", b"a:\n  - 1\n  - 2\n".to_vec()),
                ("bad.yml", b"a: 1\nb: [1, 2\nc: 3\n".to_vec()),
                (
                    "tsconfig.json",
                    b"{\n  // comment\n  \"compilerOptions\": {\"strict\": true,},\n}\n".to_vec(),
                ),
                (".vscode/settings.json", b"{ /* x */ \"a\": 1 \n".to_vec()),
                (
                    "chart/templates/svc.yaml",
                    b"{{- if .Values.x }}\na: [\n{{- end }}\n".to_vec(),
                ),
                ("notes.txt", b"{ not json".to_vec()),
                ("latin1.json", b"{\"a\": \"caf\xe9\"}".to_vec()),
            ],
        );
        let files: Vec<(&str, Option<u32>)> =
            found.iter().map(|(f, l, _)| (f.as_str(), *l)).collect();
        assert_eq!(
            files,
            [
                ("bad.json", Some(4)),
                ("bad.toml", Some(3)),
                ("bad.yml", Some(3)),
                (".vscode/settings.json", Some(2)),
                ("latin1.json", None),
            ],
            "{found:#?}"
        );
        assert!(found[0].2.starts_with("invalid JSON: "), "{}", found[0].2);
        assert!(!found[0].2.contains(" at line "), "{}", found[0].2);
        assert!(found[1].2.starts_with("invalid TOML: "), "{}", found[1].2);
        assert!(found[2].2.starts_with("invalid YAML: "), "{}", found[2].2);
    }

    /// Regression: flow pairs whose value is a collection (ESLint's
    /// `no-console: [2, allow: [warn, error]]`) were refused by the YAML
    /// reader the parse check used before.
    #[test]
    fn what_the_formats_accept_is_accepted() {
        let utf16 = |big: bool, text: &str| -> Vec<u8> {
            let mut out = if big {
                vec![0xFE, 0xFF]
            } else {
                vec![0xFF, 0xFE]
            };
            for u in text.encode_utf16() {
                out.extend(if big {
                    u.to_be_bytes()
                } else {
                    u.to_le_bytes()
                });
            }
            out
        };
        // (file, bytes, what the check says: None = accepted)
        let cases: Vec<(&str, Vec<u8>, Option<&str>)> = vec![
            (
                ".eslintrc.yml",
                b"rules:\n  no-console: [2, allow: [warn, error]]\n".to_vec(),
                None,
            ),
            ("a.yaml", b"[a: [b]]\n".to_vec(), None),
            ("b.yaml", b"[a: {b: c}]\n".to_vec(), None),
            ("c.yaml", b"- [a: b, c: d]\n".to_vec(), None),
            ("le.yaml", utf16(false, "a: [1, 2]\n"), None),
            ("be.yaml", utf16(true, "a: 1\n"), None),
            (
                "dup.yaml",
                b"a: 1\na: 2\n".to_vec(),
                Some("invalid YAML: duplicate key in a mapping"),
            ),
            ("bom.json", b"\xEF\xBB\xBF{\"a\": 1}\n".to_vec(), None),
            ("utf16.json", utf16(false, "{}"), Some("not valid UTF-8")),
            (
                "nul.json",
                b"{\"a\": 1}\x00".to_vec(),
                Some("invalid JSON: "),
            ),
            (
                "events.jsonl",
                b"{\"a\": 1}\n\n[2]\r\n\"three\"\n".to_vec(),
                None,
            ),
            (
                "bad.ndjson",
                b"{\"a\": 1}\n{\"b\": }\n".to_vec(),
                Some("invalid JSON line: "),
            ),
            (
                "stream.json",
                b"{\"a\": 1}\n{\"b\": 2}\n".to_vec(),
                Some("invalid JSON: trailing characters"),
            ),
        ];
        let found = run(
            Builtin::Parse,
            &cases
                .iter()
                .map(|(f, b, _)| (*f, b.clone()))
                .collect::<Vec<_>>(),
        );
        for (file, _, want) in &cases {
            let got = found.iter().find(|(f, _, _)| f == file);
            match (want, got) {
                (None, None) => {}
                (Some(want), Some((_, _, message))) => {
                    assert!(message.starts_with(want), "{file}: {message}");
                }
                _ => panic!("{file}: wanted {want:?}, got {got:?}"),
            }
        }
        let bad = found.iter().find(|(f, _, _)| f == "bad.ndjson").unwrap();
        assert_eq!(bad.1, Some(2), "the line of the bad JSON line");
    }

    /// `levels` anchors, each a list of nine aliases of the one before:
    /// 9^levels leaves once expanded, from a few hundred bytes.
    fn laughs(levels: u32, first: &str) -> String {
        let mut text = format!("l0: &l0 {first}\n");
        for i in 1..=levels {
            let aliases = vec![format!("*l{}", i - 1); 9].join(", ");
            writeln!(text, "l{i}: &l{i} [{aliases}]").unwrap();
        }
        text
    }

    #[test]
    fn yaml_aliases_are_counted_not_expanded() {
        // Anchor l_k is a list of nine l_(k-1): 1 + 9 × size(l_(k-1)) nodes.
        let level = |k: u32, first: u64| 9u64.pow(k) * first + (9u64.pow(k) - 1) / 8;
        // (what, text, nodes once expanded when its events parse, why it is not YAML)
        let cases: Vec<(&str, String, Option<u64>, Option<&str>)> = vec![
            ("a scalar", "a".into(), Some(1), None),
            ("a mapping", "a: 1\nb: [1, 2]\n".into(), Some(7), None),
            (
                "an alias counts its node",
                "a: &x [1, 2]\nb: *x\n".into(),
                Some(9),
                None,
            ),
            ("two documents", "a\n---\nb\n".into(), Some(2), None),
            (
                "a duplicate key, found in the built document",
                "a: 1\na: 2\n".into(),
                Some(5),
                Some("duplicate key"),
            ),
            (
                "an unknown anchor",
                "a: *nope\n".into(),
                None,
                Some("unknown anchor"),
            ),
            (
                // First: were they built, this one would fail before the next blew up.
                "seven levels hide a duplicate key: the price of not building them",
                laughs(7, "{k: 1, k: 2}"),
                Some(9 + (0..=7).map(|k| level(k, 5)).sum::<u64>()),
                None,
            ),
            (
                // The mapping and its 10 keys, then each level's value.
                "nine levels of laughs: checked as events, never built",
                laughs(9, "lol"),
                Some(11 + (0..=9).map(|k| level(k, 1)).sum::<u64>()),
                None,
            ),
        ];
        for (what, text, nodes, error) in cases {
            let mut size = ExpandedSize::default();
            let events = saphyr_parser::Parser::new_from_str(&text).load(&mut size, true);
            assert_eq!(events.is_ok().then_some(size.total), nodes, "{what}");
            let got = yaml_error(&text).map(|e| yaml_message(&e));
            match error {
                None => assert_eq!(got, None, "{what}"),
                Some(want) => assert!(
                    got.as_deref().is_some_and(|g| g.contains(want)),
                    "{what}: {got:?}"
                ),
            }
        }
    }

    #[test]
    fn jsonc_is_stripped_keeping_lines() {
        let cases = [
            ("{\"a\": 1, // c\n}", "{\"a\": 1      \n}"),
            ("[1, /* x\n y */ 2,]", "[1,     \n      2 ]"),
            (
                "{\"u\": \"http://x\", \"q\": \"a\\\"//b\"}",
                "{\"u\": \"http://x\", \"q\": \"a\\\"//b\"}",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(strip_jsonc(input), want, "{input}");
        }
    }
}
