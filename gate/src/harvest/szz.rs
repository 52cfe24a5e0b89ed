//! SZZ: the lines a fix deleted or modified, blamed on the fix's parent,
//! name the commits that introduced what it fixed.
//!
//! Lines are left out as AG-SZZ leaves them out: blank lines, comment-only
//! lines (the markers PyDriller's `get_commits_last_modified_lines` knows:
//! `//`, `#`, `/*`, `*`, `'''`, `"""`), and lines whose only change is
//! whitespace (a removed line whose text, spaces aside, the same hunk adds
//! back). Blame itself runs with `-w`. A fix that only adds lines blames
//! nothing.

use std::collections::HashSet;

use super::patch::{FileChange, squeezed};

/// Comment markers a line may begin with and still say nothing.
const COMMENT_MARKERS: [&str; 6] = ["//", "#", "/*", "'''", "\"\"\"", "*"];

/// Whether a removed line is noise SZZ must not blame: blank or a comment.
pub(crate) fn useless(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || COMMENT_MARKERS.iter().any(|m| t.starts_with(m))
}

/// The old file's lines to blame for one file of a fix, as inclusive
/// ranges (for `-L`): its removed lines that are neither noise nor a
/// whitespace-only change. Empty for a created file or one only added to.
pub(crate) fn ranges(file: &FileChange) -> Vec<(u32, u32)> {
    if file.old.is_none() {
        return Vec::new();
    }
    let mut lines: Vec<u32> = Vec::new();
    for hunk in &file.hunks {
        let added: HashSet<String> = hunk.added.iter().map(|l| squeezed(l)).collect();
        for (k, removed) in hunk.removed.iter().enumerate() {
            if useless(removed) || added.contains(&squeezed(removed)) {
                continue;
            }
            lines.push(hunk.old_start + k as u32);
        }
    }
    let mut out: Vec<(u32, u32)> = Vec::new();
    for line in lines {
        match out.last_mut() {
            Some((_, end)) if *end + 1 == line => *end = line,
            _ => out.push((line, line)),
        }
    }
    out
}

/// `git blame --porcelain` output → (line in the blamed revision, commit)
/// for every line it covers.
pub(crate) fn parse_porcelain(out: &[u8]) -> Vec<(u32, String)> {
    let text = String::from_utf8_lossy(out);
    let mut found = Vec::new();
    for line in text.lines() {
        // Content lines begin with a tab; every other line is git's.
        if line.starts_with('\t') {
            continue;
        }
        let mut parts = line.split(' ');
        let (Some(id), Some(_orig), Some(fin)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if !super::history::is_full_id(id) {
            continue;
        }
        let Ok(fin) = fin.parse::<u32>() else {
            continue;
        };
        found.push((fin, id.to_owned()));
    }
    found.sort();
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::super::patch::parse;
    use super::*;

    #[test]
    fn only_meaningful_removed_lines_are_blamed() {
        let fix = parse(
            "diff --git a/a.py b/a.py
--- a/a.py
+++ b/a.py
@@ -2,5 +2,3 @@
-    total = price * qty
-    # old note
-
-    return  total
-    log(total)
+    total = price * qty + tax
+    return total
+    log(total)
@@ -20 +18,0 @@
-    \"\"\"doc\"\"\"
diff --git a/new.py b/new.py
--- /dev/null
+++ b/new.py
@@ -0,0 +1 @@
+x = 1
diff --git a/b.py b/b.py
--- a/b.py
+++ b/b.py
@@ -4,0 +5,2 @@
+if x is None:
+    return
",
        );
        // Line 2 changed; 3 is a comment, 4 blank, 5 and 6 whitespace or
        // unchanged; the docstring line is a comment marker.
        assert_eq!(ranges(&fix.files[0]), [(2, 2)]);
        assert!(ranges(&fix.files[1]).is_empty(), "a new file");
        assert!(ranges(&fix.files[2]).is_empty(), "only added lines");
    }

    #[test]
    fn porcelain_reads_every_line() {
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        let out = format!(
            "{a} 1 7 2\nauthor x\nsummary {b} 9 9 1\nfilename f\n\tline\n{a} 2 8\n\tline\n{b} 5 12 1\nfilename f\n\t{a} 1 1 1\n"
        );
        assert_eq!(
            parse_porcelain(out.as_bytes()),
            [(7, a.clone()), (8, a), (12, b)]
        );
    }
}
