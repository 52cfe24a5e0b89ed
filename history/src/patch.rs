//! Patches read from `git log -p -U0` / `git diff -U0`, and their ids.
//!
//! A patch id follows `git patch-id --stable`'s rules: whitespace and line
//! numbers do not count, and neither does the order of the files; context
//! lines do not count either (the diffs are read without context), so a
//! change squashed onto a branch that moved around it keeps its id. The
//! inverse id is the id the exact revert of the patch has.

use std::collections::HashMap;

/// One hunk, lines without their `-`/`+`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hunk {
    /// Where the removed lines began in the old file (1-based).
    pub old_start: u32,
    /// The lines removed, in order.
    pub removed: Vec<String>,
    /// The lines added, in order.
    pub added: Vec<String>,
}

/// One file's change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileChange {
    /// Its path before (`None` when created).
    pub old: Option<String>,
    /// Its path after (`None` when deleted).
    pub new: Option<String>,
    /// Its hunks.
    pub hunks: Vec<Hunk>,
    /// A binary file's `Binary files … differ` line.
    pub binary: Option<String>,
}

/// A commit's (or a change's) patch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Patch {
    /// The files it changes.
    pub files: Vec<FileChange>,
}

/// A patch id.
pub type PatchId = [u8; 32];

impl Patch {
    /// Its id; `None` for a patch that changes no line (a mode change, an
    /// empty commit).
    pub fn id(&self) -> Option<PatchId> {
        self.digest(false)
    }

    /// The id of its exact inverse (what `git revert` of it would have).
    pub fn inverse_id(&self) -> Option<PatchId> {
        self.digest(true)
    }

    fn digest(&self, inverse: bool) -> Option<PatchId> {
        let mut files: Vec<[u8; 32]> = self
            .files
            .iter()
            .filter(|f| !f.hunks.is_empty() || f.binary.is_some())
            .map(|f| file_digest(f, inverse))
            .collect();
        if files.is_empty() {
            return None;
        }
        files.sort_unstable();
        let mut all = blake3::Hasher::new();
        for f in &files {
            all.update(f);
        }
        Some(*all.finalize().as_bytes())
    }
}

fn file_digest(f: &FileChange, inverse: bool) -> [u8; 32] {
    let (from, to) = if inverse {
        (&f.new, &f.old)
    } else {
        (&f.old, &f.new)
    };
    let mut h = blake3::Hasher::new();
    for path in [from, to] {
        h.update(path.as_deref().unwrap_or("/dev/null").as_bytes());
        h.update(b"\0");
    }
    if let Some(binary) = &f.binary {
        h.update(b"binary\0");
        h.update(&[u8::from(inverse)]);
        h.update(binary.as_bytes());
    }
    for hunk in &f.hunks {
        let (minus, plus) = if inverse {
            (&hunk.added, &hunk.removed)
        } else {
            (&hunk.removed, &hunk.added)
        };
        for (sign, lines) in [(b"-", minus), (b"+", plus)] {
            for line in lines {
                h.update(sign);
                h.update(squeezed(line).as_bytes());
                h.update(b"\n");
            }
        }
    }
    *h.finalize().as_bytes()
}

/// `line` without any whitespace.
pub fn squeezed(line: &str) -> String {
    line.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The options every patch pass gives git: no context, renames found
/// whatever the repository configures (so a fix that renames a file blames
/// the lines it changed, not every line of the old name), nothing of the
/// repository's diff drivers, no colour.
pub const DIFF_OPTIONS: [&str; 6] = [
    "-U0",
    "--find-renames",
    "--no-ext-diff",
    "--no-textconv",
    "--no-color",
    "--diff-algorithm=myers",
];

/// Parses a log pass of `--format=<delimiter>%H` records with their
/// patches: commit id → patch.
pub fn parse_log(out: &[u8], delimiter: &str) -> HashMap<String, Patch> {
    let text = String::from_utf8_lossy(out);
    text.split(delimiter)
        .filter_map(|record| {
            let (id, rest) = record.split_once('\n').unwrap_or((record, ""));
            let id = id.trim();
            crate::commits::is_full_id(id).then(|| (id.to_owned(), parse(rest)))
        })
        .collect()
}

/// Parses one patch (`diff --git` sections, without context).
pub fn parse(text: &str) -> Patch {
    let mut patch = Patch::default();
    let mut file: Option<FileChange> = None;
    let mut hunk: Option<Hunk> = None;
    for line in text.lines() {
        if line.starts_with("diff --git ") {
            close(&mut patch, &mut file, &mut hunk);
            file = Some(FileChange::default());
            continue;
        }
        let Some(f) = file.as_mut() else { continue };
        if let Some(rest) = line.strip_prefix("@@ ") {
            if let Some(h) = hunk.take() {
                f.hunks.push(h);
            }
            hunk = Some(Hunk {
                old_start: old_start(rest).unwrap_or(0),
                ..Hunk::default()
            });
        } else if let Some(h) = hunk.as_mut() {
            if let Some(removed) = line.strip_prefix('-') {
                h.removed.push(removed.to_owned());
            } else if let Some(added) = line.strip_prefix('+') {
                h.added.push(added.to_owned());
            }
        } else if let Some(path) = line.strip_prefix("--- ") {
            f.old = side(path, "a/");
        } else if let Some(path) = line.strip_prefix("+++ ") {
            f.new = side(path, "b/");
        } else if line.starts_with("Binary files ") {
            f.binary = Some(line.to_owned());
        }
    }
    close(&mut patch, &mut file, &mut hunk);
    patch
}

fn close(patch: &mut Patch, file: &mut Option<FileChange>, hunk: &mut Option<Hunk>) {
    if let Some(mut f) = file.take() {
        f.hunks.extend(hunk.take());
        patch.files.push(f);
    }
}

/// `-a,b +c,d @@…` → `a` (with `-a` alone meaning one line).
fn old_start(rest: &str) -> Option<u32> {
    let old = rest.split_whitespace().next()?.strip_prefix('-')?;
    old.split(',').next()?.parse().ok()
}

/// A `---`/`+++` path: `None` for `/dev/null`, else without its `a/`/`b/`
/// prefix, C-quoting undone.
fn side(path: &str, prefix: &str) -> Option<String> {
    let path = path.trim_end_matches('\t');
    if path == "/dev/null" {
        return None;
    }
    let path = if path.starts_with('"') {
        unquote(path)?
    } else {
        path.to_owned()
    };
    Some(path.strip_prefix(prefix).unwrap_or(&path).to_owned())
}

/// Undoes git's C-style quoting of a path (`"a/tab\there"`, octal bytes).
fn unquote(quoted: &str) -> Option<String> {
    let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
    let mut bytes = Vec::with_capacity(inner.len());
    let mut chars = inner.bytes();
    while let Some(b) = chars.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        let c = chars.next()?;
        bytes.push(match c {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'a' => 7,
            b'b' => 8,
            b'f' => 12,
            b'v' => 11,
            b'0'..=b'3' => {
                let d1 = chars.next()?;
                let d2 = chars.next()?;
                let digit = |d: u8| d.checked_sub(b'0').filter(|d| *d < 8);
                (c - b'0') * 64 + digit(d1)? * 8 + digit(d2)?
            }
            other => other,
        });
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHANGE: &str = "diff --git a/src/a.rs b/src/a.rs
index 1..2 100644
--- a/src/a.rs
+++ b/src/a.rs
@@ -3,2 +3 @@ fn x() {
-    let a = 1;
-    let b = 2;
+    let a = 3;
@@ -10,0 +10 @@
+// new
diff --git \"a/sp ace\\tx\" \"b/sp ace\\tx\"
new file mode 100644
--- /dev/null
+++ \"b/sp ace\\tx\"
@@ -0,0 +1 @@
+hello
";

    #[test]
    fn a_patch_reads_with_its_lines_and_paths() {
        let p = parse(CHANGE);
        assert_eq!(p.files.len(), 2);
        assert_eq!(p.files[0].old.as_deref(), Some("src/a.rs"));
        assert_eq!(p.files[0].hunks[0].old_start, 3);
        assert_eq!(p.files[0].hunks[0].removed.len(), 2);
        assert_eq!(p.files[0].hunks[1].added, ["// new"]);
        assert_eq!(p.files[1].old, None);
        assert_eq!(p.files[1].new.as_deref(), Some("sp ace\tx"));
    }

    #[test]
    fn ids_ignore_whitespace_line_numbers_and_file_order_and_invert() {
        let p = parse(CHANGE);
        let moved = CHANGE
            .replace("@@ -3,2 +3 @@", "@@ -30,2 +30 @@")
            .replace("let a = 3;", "let  a  =  3;");
        assert_eq!(parse(&moved).id(), p.id(), "line numbers and spaces");
        let mut reordered = p.clone();
        reordered.files.reverse();
        assert_eq!(reordered.id(), p.id(), "file order");
        let revert = "diff --git a/src/a.rs b/src/a.rs
--- a/src/a.rs
+++ b/src/a.rs
@@ -3 +3,2 @@
-    let a = 3;
+    let a = 1;
+    let b = 2;
@@ -11 +10,0 @@
-// new
diff --git \"a/sp ace\\tx\" \"b/sp ace\\tx\"
deleted file mode 100644
--- \"a/sp ace\\tx\"
+++ /dev/null
@@ -1 +0,0 @@
-hello
";
        assert_eq!(parse(revert).id(), p.inverse_id());
        assert_ne!(p.id(), p.inverse_id());
        let other = CHANGE.replace("let a = 3;", "let a = 4;");
        assert_ne!(parse(&other).id(), p.id());
        assert_eq!(parse("").id(), None);
    }

    #[test]
    fn log_records_split_by_commit() {
        let d = "\u{1e}x\u{1f}";
        let out = format!("{d}{}\n\n{CHANGE}{d}{}\n\n", "a".repeat(40), "b".repeat(40));
        let patches = parse_log(out.as_bytes(), d);
        assert_eq!(patches[&"a".repeat(40)].files.len(), 2);
        assert!(patches[&"b".repeat(40)].files.is_empty());
    }
}
