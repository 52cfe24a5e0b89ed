//! What a checkout of a commit does to a file's bytes, as the commit's own
//! `.gitattributes` files ask: line endings and `ident`. Read from the
//! commit, never from the working tree (a change could add a line there),
//! and with no filter driver: the gate runs none.

use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// One line of a `.gitattributes` file: where it applies and what it sets.
struct Rule {
    /// The folder of its file: it applies only under it.
    base: PathBuf,
    matcher: Gitignore,
    sets: Vec<(String, Value)>,
}

/// An attribute's state on a line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Set,
    Unset,
    Unspecified,
    Is(String),
}

/// The commit's attribute rules, outermost file first, each file's lines in
/// order: the last rule that matches a path and names an attribute wins.
pub(crate) struct Attributes {
    rules: Vec<Rule>,
}

impl Attributes {
    /// The rules of `files`: (the workspace-relative folder a
    /// `.gitattributes` file is in, its text), given outermost first.
    pub(crate) fn new(root: &Path, files: &[(String, String)]) -> Self {
        let mut rules = Vec::new();
        for (dir, text) in files {
            let base = root.join(dir);
            for line in text.lines() {
                let line = line.trim();
                let mut words = line.split_whitespace();
                let Some(pattern) = words.next() else {
                    continue;
                };
                // Comments, negated and quoted patterns: git skips them too
                // (the last two it warns about or reads rarely).
                if pattern.starts_with('#') || pattern.starts_with('!') || pattern.starts_with('"')
                {
                    continue;
                }
                let mut builder = GitignoreBuilder::new(&base);
                if builder.add_line(None, pattern).is_err() {
                    continue;
                }
                let Ok(matcher) = builder.build() else {
                    continue;
                };
                let sets = words.flat_map(expand).collect();
                rules.push(Rule {
                    base: base.clone(),
                    matcher,
                    sets,
                });
            }
        }
        Self { rules }
    }

    /// `name`'s value for the file at `path` (under `root`).
    fn value(&self, path: &Path, name: &str) -> Value {
        self.rules
            .iter()
            .rev()
            .filter(|r| path.starts_with(&r.base) && r.matcher.matched(path, false).is_ignore())
            .find_map(|r| {
                r.sets
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.clone())
            })
            .unwrap_or(Value::Unspecified)
    }

    /// `disk` as `git add` would store it at `path` (under `root`), when a
    /// checkout converts that file: CRLF line endings back to LF, `$Id…$`
    /// back to `$Id$`. `None` when a checkout writes the file as it is.
    pub(crate) fn cleaned(&self, path: &Path, disk: &[u8]) -> Option<Vec<u8>> {
        let text = match self.value(path, "text") {
            Value::Set => true,
            Value::Unset => false,
            Value::Is(v) if v == "auto" => !disk.contains(&0),
            // `eol` (or the older `crlf`) without `text` makes a file text.
            _ => {
                !matches!(self.value(path, "eol"), Value::Unspecified | Value::Unset)
                    || matches!(self.value(path, "crlf"), Value::Set | Value::Is(_))
            }
        };
        let ident = self.value(path, "ident") == Value::Set;
        if !text && !ident {
            return None;
        }
        let mut out = if text {
            crlf_to_lf(disk)
        } else {
            disk.to_vec()
        };
        if ident {
            out = collapse_ident(&out);
        }
        Some(out)
    }
}

/// An attribute word as the states it sets (`binary` is `-text -diff -merge`).
fn expand(word: &str) -> Vec<(String, Value)> {
    let (name, value) = if let Some(n) = word.strip_prefix('-') {
        (n, Value::Unset)
    } else if let Some(n) = word.strip_prefix('!') {
        (n, Value::Unspecified)
    } else if let Some((n, v)) = word.split_once('=') {
        (n, Value::Is(v.to_owned()))
    } else {
        (word, Value::Set)
    };
    if name == "binary" && value == Value::Set {
        return ["text", "diff", "merge"]
            .iter()
            .map(|n| ((*n).to_owned(), Value::Unset))
            .collect();
    }
    vec![(name.to_owned(), value)]
}

fn crlf_to_lf(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut it = bytes.iter().peekable();
    while let Some(&b) = it.next() {
        if b == b'\r' && it.peek() == Some(&&b'\n') {
            continue;
        }
        out.push(b);
    }
    out
}

/// `$Id: …$` → `$Id$`, as git's `ident` clean does.
fn collapse_ident(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut k = 0;
    while k < bytes.len() {
        if bytes[k..].starts_with(b"$Id:") {
            let rest = &bytes[k + 4..];
            if let Some(end) = rest.iter().position(|&b| b == b'$' || b == b'\n')
                && rest[end] == b'$'
            {
                out.extend_from_slice(b"$Id$");
                k += 4 + end + 1;
                continue;
            }
        }
        out.push(bytes[k]);
        k += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commits_attributes_say_which_files_checkout_converts() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        let attributes = Attributes::new(
            root,
            &[
                (
                    String::new(),
                    "# notes\nNOTES.txt text eol=crlf\n*.bin binary\n*.c ident\n*.auto text=auto\n"
                        .to_owned(),
                ),
                ("sub".to_owned(), "*.txt -text\n".to_owned()),
            ],
        );
        let at = |p: &str| root.join(p);
        // (path, bytes on disk, what `git add` stores, if converted)
        type Case = (&'static str, &'static [u8], Option<&'static [u8]>);
        let cases: Vec<Case> = vec![
            ("NOTES.txt", b"a\r\nb\r\n", Some(b"a\nb\n")),
            ("deep/NOTES.txt", b"a\r\n", Some(b"a\n")),
            ("sub/NOTES.txt", b"a\r\n", None),
            ("other.txt", b"a\r\n", None),
            ("x.bin", b"a\r\n", None),
            ("x.c", b"/* $Id: 1234 $ */\r\n", Some(b"/* $Id$ */\r\n")),
            ("x.auto", b"a\r\n", Some(b"a\n")),
            ("y.auto", b"a\0\r\n", None),
        ];
        for (path, disk, want) in cases {
            assert_eq!(
                attributes.cleaned(&at(path), disk).as_deref(),
                want,
                "{path}"
            );
        }
    }
}
