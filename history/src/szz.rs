//! SZZ: the lines a fix deleted or modified, blamed on the fix's parent,
//! name the commits that introduced what it fixed.
//!
//! Lines are left out as AG-SZZ leaves them out: blank lines, comment-only
//! lines (the markers PyDriller's `get_commits_last_modified_lines` knows:
//! `//`, `#`, `/*`, `*`, `'''`, `"""`), and lines whose only change is
//! whitespace (a removed line whose text, spaces aside, the same hunk adds
//! back). Blame itself runs with `-w`. A fix that only adds lines blames
//! nothing.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use gate_evidence::ledger::BlamedLine;

use crate::blame_walk::{self, Lines};
use crate::error::BlameError;
use crate::git::RunGit;
use crate::git_blame::line_ranges;
use crate::patch::{FileChange, Patch, squeezed};

/// Comment markers a line may begin with and still say nothing.
const COMMENT_MARKERS: [&str; 6] = ["//", "#", "/*", "'''", "\"\"\"", "*"];

/// Whether a removed line is noise SZZ must not blame: blank or a comment.
pub fn useless(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || COMMENT_MARKERS.iter().any(|m| t.starts_with(m))
}

/// The old file's lines to blame for one file of a fix, as inclusive
/// ranges (for `-L`): its removed lines that are neither noise nor a
/// whitespace-only change. Empty for a created file or one only added to.
pub fn ranges(file: &FileChange) -> Vec<(u32, u32)> {
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
    line_ranges(lines)
}

/// One blame call: a fix (by the caller's key), its parent, a file as the
/// parent names it, and the line ranges to blame.
#[derive(Debug, Clone)]
pub struct BlameCall {
    /// The caller's key for the fix.
    pub fix: usize,
    /// The fix's first parent (a full id).
    pub parent: String,
    /// The file, as the parent names it.
    pub file: String,
    /// Inclusive line ranges.
    pub ranges: Vec<(u32, u32)>,
}

/// The blame calls a fix's patch needs: one per file with lines to blame.
pub fn calls(fix: usize, parent: &str, patch: &Patch) -> Vec<BlameCall> {
    patch
        .files
        .iter()
        .filter_map(|file| {
            let old = file.old.as_deref()?;
            let ranges = ranges(file);
            (!ranges.is_empty()).then(|| BlameCall {
                fix,
                parent: parent.to_owned(),
                file: old.to_owned(),
                ranges,
            })
        })
        .collect()
}

/// Blames the calls' lines as `git blame --porcelain -w <parent> -- <file>`
/// on their ranges does, with one history walk for all of them
/// (the crate's blame walk): fix key → every blamed line, sorted by file and line;
/// fixes that blame nothing are left out.
pub async fn blame(
    git: &impl RunGit,
    dir: &Path,
    calls: Vec<BlameCall>,
    jobs: usize,
) -> Result<Vec<(usize, Vec<BlamedLine>)>, BlameError> {
    let requests: Vec<Lines> = calls
        .iter()
        .map(|call| Lines {
            commit: call.parent.clone(),
            file: call.file.clone(),
            numbers: call.ranges.iter().flat_map(|&(a, b)| a..=b).collect(),
        })
        .collect();
    let found = blame_walk::blame(git, dir, &requests, jobs).await?;
    let mut by_fix: HashMap<usize, Vec<BlamedLine>> = HashMap::new();
    for (call, lines) in calls.into_iter().zip(found) {
        by_fix
            .entry(call.fix)
            .or_default()
            .extend(lines.into_iter().map(|(line, commit)| BlamedLine {
                file: call.file.clone(),
                line,
                commit,
            }));
    }
    let mut out: Vec<(usize, Vec<BlamedLine>)> =
        by_fix.into_iter().filter(|(_, l)| !l.is_empty()).collect();
    for (_, lines) in &mut out {
        lines.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    }
    out.sort_by_key(|(x, _)| *x);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::parse;

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
}
