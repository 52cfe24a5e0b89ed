//! The files a Rust test target pulls in: `mod x;` (with `#[path]`) and
//! `include!`, `include_str!`, `include_bytes!`, read from the source's
//! tokens (comments and strings skipped), followed transitively.

use std::collections::BTreeSet;

use super::path::{extension, in_dir, is_glob, looks_like_path, parent, resolve, test_side};
use super::walk::Ctx;

/// The most files one target's module tree is followed into.
const MAX_FILES: usize = 2_000;

/// A token of Rust source, as far as modules and includes need.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Str(String),
    Punct(char),
}

/// A file of the module tree, and how its `mod x;` resolve.
struct Source {
    path: String,
    /// A crate root, a `mod.rs`, or a file loaded by `#[path]`: its
    /// modules are its siblings, not in a directory named after it.
    mod_rs: bool,
}

/// What a target's module tree pulls in besides its root: `(path, why)`,
/// and sentences for what could not be resolved. Besides modules and
/// includes, that is the data its string literals name on the tests' side
/// (`"tests/fixtures/golden.json"`, from the package directory `cargo test`
/// runs in, or from the file's own) and insta's `snapshots/` beside it.
pub(super) fn pulled_in(
    ctx: &Ctx<'_>,
    root: &str,
    package_dir: &str,
) -> (Vec<(String, String)>, Vec<String>) {
    let mut seen: BTreeSet<String> = BTreeSet::from([root.to_owned()]);
    let mut queue = vec![Source {
        path: root.to_owned(),
        mod_rs: true,
    }];
    let mut out = Vec::new();
    let mut unresolved = Vec::new();
    while let Some(source) = queue.pop() {
        if seen.len() > MAX_FILES {
            unresolved.push(format!(
                "`{root}` pulls in more than {MAX_FILES} files: the rest were not followed"
            ));
            break;
        }
        let Some(text) = ctx.read_text(&source.path) else {
            continue;
        };
        let toks = tokens(&text);
        for found in references(&toks, &source, &mut unresolved) {
            let Some((path, mod_rs, why)) = found.resolve(ctx, &source) else {
                continue;
            };
            if seen.insert(path.clone()) {
                out.push((path.clone(), why));
                if extension(&path) == Some("rs") && found.kind != Kind::Bytes {
                    queue.push(Source { path, mod_rs });
                }
            }
        }
        // After the modules, so a source a literal also names is followed.
        for path in data_files(ctx, &toks, &source.path, package_dir) {
            if seen.insert(path.clone()) {
                out.push((path, format!("`{}` names it", source.path)));
            }
        }
    }
    (out, unresolved)
}

/// The test-side files a source's string literals name, and its
/// `snapshots/` directory's files.
fn data_files(ctx: &Ctx<'_>, toks: &[Tok], path: &str, package_dir: &str) -> Vec<String> {
    let dir = parent(path);
    let mut out: Vec<String> = ctx.files_under(&in_dir(dir, "snapshots"));
    for tok in toks {
        let Tok::Str(s) = tok else { continue };
        if !looks_like_path(s) || is_glob(s) || s.contains('\n') {
            continue;
        }
        let candidates = [
            resolve(package_dir, s.trim_start_matches('/')),
            resolve(dir, s),
        ];
        for c in candidates.into_iter().flatten() {
            if c != path && test_side(&c) && ctx.exists(&c) && !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `mod name;`.
    Module,
    /// `include!`: Rust pasted in.
    Include,
    /// `include_str!` or `include_bytes!`: data.
    Bytes,
}

/// A file a source refers to, before it is looked up.
struct Reference {
    kind: Kind,
    /// The module's name, or the include's literal path.
    name: String,
    /// `#[path = "…"]` on the module.
    path_attr: Option<String>,
    /// The inline modules (`mod a { … }`) it is declared in.
    inline: Vec<String>,
}

impl Reference {
    /// The file it names, whether that is a mod-rs file, and why it counts.
    fn resolve(&self, ctx: &Ctx<'_>, from: &Source) -> Option<(String, bool, String)> {
        let dir = parent(&from.path);
        let stem = from
            .path
            .rsplit('/')
            .next()
            .and_then(|f| f.strip_suffix(".rs"))
            .unwrap_or_default();
        // Where the modules declared in this file live.
        let mut base = dir.to_owned();
        if !from.mod_rs && (self.path_attr.is_none() || !self.inline.is_empty()) {
            base = in_dir(&base, stem);
        }
        for m in &self.inline {
            base = in_dir(&base, m);
        }
        match (self.kind, &self.path_attr) {
            (Kind::Module, Some(p)) => {
                let start = if self.inline.is_empty() { dir } else { &base };
                let path = resolve(start, p)?;
                let why = format!("`{}` loads it with `#[path]`", from.path);
                Some((path, true, why))
            }
            (Kind::Module, None) => {
                let file = in_dir(&base, &format!("{}.rs", self.name));
                let dir_mod = in_dir(&base, &format!("{}/mod.rs", self.name));
                let why = format!("`{}` declares `mod {};`", from.path, self.name);
                if ctx.exists(&file) {
                    Some((file, false, why))
                } else if ctx.exists(&dir_mod) {
                    Some((dir_mod, true, why))
                } else {
                    None
                }
            }
            (kind, _) => {
                let path = resolve(dir, &self.name)?;
                let mac = if kind == Kind::Include {
                    "include!"
                } else {
                    "include_str!/include_bytes!"
                };
                let why = format!("`{}` pulls it in with `{mac}`", from.path);
                Some((path, from.mod_rs, why))
            }
        }
    }
}

/// The modules and includes of one file's tokens.
fn references(toks: &[Tok], source: &Source, unresolved: &mut Vec<String>) -> Vec<Reference> {
    let mut out = Vec::new();
    let mut path_attr: Option<String> = None;
    // Inline modules open, with the brace depth each opened at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        match (&toks[i], toks.get(i + 1), toks.get(i + 2)) {
            (Tok::Punct('#'), ..) => {
                let (next, attr) = attribute(toks, i);
                if attr.is_some() {
                    path_attr = attr;
                }
                i = next;
                continue;
            }
            (Tok::Ident(m), Some(Tok::Ident(name)), Some(Tok::Punct(p))) if m == "mod" => {
                if *p == ';' {
                    out.push(Reference {
                        kind: Kind::Module,
                        name: name.clone(),
                        path_attr: path_attr.take(),
                        inline: inline.iter().map(|(n, _)| n.clone()).collect(),
                    });
                } else if *p == '{' {
                    depth += 1;
                    inline.push((name.clone(), depth));
                    path_attr = None;
                }
                i += 3;
                continue;
            }
            (Tok::Ident(mac), Some(Tok::Punct('!')), Some(Tok::Punct('(' | '{' | '['))) => {
                let kind = match mac.as_str() {
                    "include" => Some(Kind::Include),
                    "include_str" | "include_bytes" => Some(Kind::Bytes),
                    _ => None,
                };
                if let Some(kind) = kind {
                    match toks.get(i + 3) {
                        Some(Tok::Str(s)) if matches!(toks.get(i + 4), Some(Tok::Punct(')' | '}' | ']'))) => {
                            out.push(Reference {
                                kind,
                                name: s.clone(),
                                path_attr: None,
                                inline: Vec::new(),
                            });
                        }
                        _ => unresolved.push(format!(
                            "`{}` has a `{mac}!` whose path is not a literal: what it pulls in is not known",
                            source.path
                        )),
                    }
                }
            }
            (Tok::Punct('{'), ..) => depth += 1,
            (Tok::Punct('}'), ..) => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                path_attr = None;
            }
            (Tok::Punct(';'), ..) => path_attr = None,
            _ => {}
        }
        i += 1;
    }
    out
}

/// Skips the attribute at `toks[i]` (`#[…]` or `#![…]`): where it ends,
/// and its value when it is `#[path = "…"]`.
fn attribute(toks: &[Tok], i: usize) -> (usize, Option<String>) {
    let mut j = i + 1;
    if toks.get(j) == Some(&Tok::Punct('!')) {
        j += 1;
    }
    if toks.get(j) != Some(&Tok::Punct('[')) {
        return (i + 1, None);
    }
    let path = match (
        toks.get(j + 1),
        toks.get(j + 2),
        toks.get(j + 3),
        toks.get(j + 4),
    ) {
        (Some(Tok::Ident(p)), Some(Tok::Punct('=')), Some(Tok::Str(s)), Some(Tok::Punct(']')))
            if p == "path" =>
        {
            Some(s.clone())
        }
        _ => None,
    };
    let mut nesting = 0usize;
    while j < toks.len() {
        match toks[j] {
            Tok::Punct('[') => nesting += 1,
            Tok::Punct(']') => {
                nesting -= 1;
                if nesting == 0 {
                    return (j + 1, path);
                }
            }
            _ => {}
        }
        j += 1;
    }
    (j, path)
}

/// The identifiers, string literals and punctuation of Rust source;
/// comments, char literals, lifetimes and numbers are dropped.
fn tokens(text: &str) -> Vec<Tok> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i = block_comment_end(&chars, i);
        } else if c == '"' {
            let (end, s) = string(&chars, i + 1);
            out.push(Tok::Str(s));
            i = end;
            continue;
        } else if c == 'r' && matches!(next, Some('"' | '#')) && raw_string_start(&chars, i + 1) {
            let (end, s) = raw_string(&chars, i + 1);
            out.push(Tok::Str(s));
            i = end;
            continue;
        } else if c == 'b' && next == Some('"') {
            let (end, _) = string(&chars, i + 2);
            i = end;
            continue;
        } else if c == '\'' {
            i = char_literal_end(&chars, i);
            continue;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(chars[start..i].iter().collect()));
            continue;
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            continue;
        } else if !c.is_whitespace() {
            out.push(Tok::Punct(c));
        }
        i += 1;
    }
    out
}

/// Past a `/* … */` comment starting at `i`, which may nest.
fn block_comment_end(chars: &[char], mut i: usize) -> usize {
    let mut nesting = 0usize;
    while i < chars.len() {
        if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
            nesting += 1;
            i += 2;
        } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
            nesting -= 1;
            i += 2;
            if nesting == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// A string's contents from `i` (after its `"`), and where it ends.
fn string(chars: &[char], mut i: usize) -> (usize, String) {
    let mut s = String::new();
    while i < chars.len() {
        match chars[i] {
            '"' => return (i + 1, s),
            '\\' => {
                if let Some(&n) = chars.get(i + 1) {
                    s.push(match n {
                        'n' => '\n',
                        't' => '\t',
                        other => other,
                    });
                }
                i += 2;
            }
            c => {
                s.push(c);
                i += 1;
            }
        }
    }
    (i, s)
}

/// Whether `r` at `i - 1` opens a raw string (`r"`, `r#"`), not an
/// identifier such as `r#type`.
fn raw_string_start(chars: &[char], mut i: usize) -> bool {
    while chars.get(i) == Some(&'#') {
        i += 1;
    }
    chars.get(i) == Some(&'"')
}

/// A raw string from `i` (its first `#` or `"`), and where it ends.
fn raw_string(chars: &[char], mut i: usize) -> (usize, String) {
    let mut hashes = 0;
    while chars.get(i) == Some(&'#') {
        hashes += 1;
        i += 1;
    }
    i += 1;
    let start = i;
    while i < chars.len() {
        if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
            return (i + 1 + hashes, chars[start..i].iter().collect());
        }
        i += 1;
    }
    (i, chars[start..].iter().collect())
}

/// Past a char literal (`'a'`, `'\n'`) or a lifetime (`'a`) at `i`.
fn char_literal_end(chars: &[char], i: usize) -> usize {
    match (chars.get(i + 1), chars.get(i + 2)) {
        (Some('\\'), _) => {
            let mut j = i + 2;
            while j < chars.len() && chars[j] != '\'' {
                j += 1;
            }
            j + 1
        }
        (Some(_), Some('\'')) => i + 3,
        _ => i + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::Mem;
    use super::super::walk::Ctx;
    use super::*;

    fn pulled(files: &[(&str, &str)], root: &str) -> (Vec<String>, usize) {
        let tree = Mem::new(files);
        let ctx = Ctx::new(&tree);
        let (found, unresolved) = pulled_in(&ctx, root, "");
        let mut paths: Vec<String> = found.into_iter().map(|(p, _)| p).collect();
        paths.sort();
        (paths, unresolved.len())
    }

    #[test]
    fn modules_and_includes() {
        let s = |v: &[&str]| v.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>();
        /// (files, target root, what it pulls in, unresolved count)
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a [&'a str], usize);
        let cases: &[Case<'_>] = &[
            (
                &[
                    (
                        "tests/server.rs",
                        "mod common;\n// mod commented;\n#[test] fn t() {}",
                    ),
                    ("tests/common/mod.rs", "pub mod util;\npub fn x() {}"),
                    ("tests/common/util.rs", "mod deeper;"),
                    ("tests/common/util/deeper.rs", ""),
                    ("tests/commented.rs", ""),
                ],
                "tests/server.rs",
                &[
                    "tests/common/mod.rs",
                    "tests/common/util.rs",
                    "tests/common/util/deeper.rs",
                ],
                0,
            ),
            (
                &[
                    (
                        "tests/a.rs",
                        "#[path = \"../support/h.rs\"]\nmod helpers;\nconst S: &str = include_str!(\"data/x.txt\");\ninclude!(\"gen.rs\");",
                    ),
                    ("support/h.rs", "mod near;"),
                    ("support/near.rs", ""),
                    ("tests/data/x.txt", "mod nope;"),
                    ("tests/gen.rs", "mod common;"),
                    ("tests/common.rs", ""),
                ],
                "tests/a.rs",
                &[
                    "support/h.rs",
                    "support/near.rs",
                    "tests/common.rs",
                    "tests/data/x.txt",
                    "tests/gen.rs",
                ],
                0,
            ),
            (
                &[
                    (
                        "tests/it/main.rs",
                        "mod inner { mod deep; }\nlet s = \"mod fake;\"; let c = '\"'; mod sib;",
                    ),
                    ("tests/it/inner/deep.rs", ""),
                    ("tests/it/sib.rs", ""),
                    ("tests/it/fake.rs", ""),
                ],
                "tests/it/main.rs",
                &["tests/it/inner/deep.rs", "tests/it/sib.rs"],
                0,
            ),
            (
                &[(
                    "tests/x.rs",
                    "include!(concat!(env!(\"OUT_DIR\"), \"/g.rs\"));",
                )],
                "tests/x.rs",
                &[],
                1,
            ),
        ];
        for (files, root, want, unresolved) in cases {
            assert_eq!(pulled(files, root), (s(want), *unresolved), "{root}");
        }
    }
}
