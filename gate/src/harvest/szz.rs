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

use futures::StreamExt as _;
use gate_evidence::ledger::BlamedLine;

use super::error::HarvestError;
use super::patch::{FileChange, Patch, squeezed};
use crate::git::Git;

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

/// One blame call: a fix (by the caller's key), its parent, a file as the
/// parent names it, and the line ranges to blame.
#[derive(Debug, Clone)]
pub(crate) struct BlameCall {
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
pub(crate) fn calls(fix: usize, parent: &str, patch: &Patch) -> Vec<BlameCall> {
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

/// Runs the blame calls, `jobs` at a time (`git blame --porcelain -w` on
/// the parent, the ranges as `-L`): fix key → every blamed line, sorted by
/// file and line; fixes that blame nothing are left out.
pub(crate) async fn blame(
    git: &Git,
    dir: &Path,
    calls: Vec<BlameCall>,
    jobs: usize,
) -> Result<Vec<(usize, Vec<BlamedLine>)>, HarvestError> {
    let results: Vec<Result<(usize, Vec<BlamedLine>), HarvestError>> = futures::stream::iter(calls)
        .map(|call| async move {
            let spans: Vec<String> = call
                .ranges
                .iter()
                .map(|(a, b)| format!("-L{a},{b}"))
                .collect();
            let mut args = vec!["blame", "--porcelain", "-w", "--no-textconv"];
            args.extend(spans.iter().map(String::as_str));
            args.extend([call.parent.as_str(), "--", call.file.as_str()]);
            let out = git.run(dir, &args).await.map_err(HarvestError::Git)?;
            let lines = parse_porcelain(&out)
                .into_iter()
                .map(|(line, commit)| BlamedLine {
                    file: call.file.clone(),
                    line,
                    commit,
                })
                .collect();
            Ok((call.fix, lines))
        })
        .buffer_unordered(jobs.max(1))
        .collect()
        .await;
    let mut by_fix: HashMap<usize, Vec<BlamedLine>> = HashMap::new();
    for r in results {
        let (x, lines) = r?;
        by_fix.entry(x).or_default().extend(lines);
    }
    let mut out: Vec<(usize, Vec<BlamedLine>)> =
        by_fix.into_iter().filter(|(_, l)| !l.is_empty()).collect();
    for (_, lines) in &mut out {
        lines.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    }
    out.sort_by_key(|(x, _)| *x);
    Ok(out)
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
