//! Which lines of a file a commit changed, read from a `git log -p -U0 -w`
//! pass made with the diff options `git blame -w` uses, and where the
//! lines it did not change were in the commit's parent.

use std::collections::HashMap;

use crate::commits::is_full_id;

/// The options of the line-diff pass: the diff `git blame -w` computes
/// between a commit and its parent (no context, whitespace ignored, every
/// file as text, the repository's diff drivers and renames off), printed
/// with fixed prefixes whatever the repository configures.
pub(crate) const DIFF_OPTIONS: [&str; 12] = [
    "-p",
    "-U0",
    "-w",
    "--text",
    "--no-renames",
    "--no-follow",
    "--no-ext-diff",
    "--no-textconv",
    "--no-color",
    "--diff-merges=off",
    "--src-prefix=a/",
    "--dst-prefix=b/",
];

/// One change of a diff: `old_count` lines of the parent at `old_start`
/// became `new_count` lines of the commit at `new_start` (0-based; a count
/// of 0 puts the change between two lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Change {
    /// First line of the parent's side.
    pub old_start: u32,
    /// Lines of the parent's side.
    pub old_count: u32,
    /// First line of the commit's side.
    pub new_start: u32,
    /// Lines of the commit's side.
    pub new_count: u32,
}

/// Where a line of the commit's file came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The commit changed or added it.
    Changed,
    /// It is this line (1-based) of the parent's file.
    Parent(u32),
}

/// Where line `line` (1-based) of the commit's file was in its parent,
/// given the diff's changes in order: as `git blame` passes the lines
/// outside every change to the parent, shifted by the changes before them.
pub(crate) fn origin(changes: &[Change], line: u32) -> Origin {
    let at = line.saturating_sub(1);
    let mut shift: i64 = 0;
    for c in changes {
        if at < c.new_start {
            break;
        }
        if at < c.new_start + c.new_count {
            return Origin::Changed;
        }
        shift = i64::from(c.old_start + c.old_count) - i64::from(c.new_start + c.new_count);
    }
    let parent = i64::from(at) + shift + 1;
    u32::try_from(parent).map_or(Origin::Changed, Origin::Parent)
}

/// Commit → path → its changes, in order.
type Sections = HashMap<String, HashMap<String, Vec<Change>>>;

/// The line diffs known so far, by commit and file.
#[derive(Debug, Default)]
pub(crate) struct LineDiffs {
    known: Sections,
}

impl LineDiffs {
    /// `path`'s changes in `commit`; `None` when no pass asked for them.
    pub(crate) fn changes(&self, commit: &str, path: &str) -> Option<&[Change]> {
        Some(self.known.get(commit)?.get(path)?.as_slice())
    }

    /// Reads a pass of `--format=<delimiter>%H` records that asked for the
    /// files `asked` names of each commit: each printed commit's asked
    /// files are then known, a file without a section as one the commit
    /// changed no line of (whitespace aside: `-w` drops such a section).
    /// `None`, and nothing learnt, when something in the pass does not read
    /// as expected.
    pub(crate) fn read(
        &mut self,
        out: &[u8],
        delimiter: &[u8],
        asked: &[(&str, &[String])],
    ) -> Option<()> {
        let mut printed = sections(out, delimiter)?;
        for (commit, paths) in asked {
            let Some(mut files) = printed.remove(*commit) else {
                continue;
            };
            let known = self.known.entry((*commit).to_owned()).or_default();
            for path in *paths {
                known.insert(path.clone(), files.remove(path).unwrap_or_default());
            }
        }
        Some(())
    }
}

/// The sections of a pass of `--format=<delimiter>%H` records: every
/// commit it printed, with the files it printed a section for.
fn sections(out: &[u8], delimiter: &[u8]) -> Option<Sections> {
    let mut printed = Sections::new();
    let mut lines = out.split(|b| *b == b'\n').peekable();
    let mut commit: Option<String> = None;
    let mut file: Option<String> = None;
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix(delimiter) {
            let id = std::str::from_utf8(rest).ok()?;
            if !is_full_id(id) {
                return None;
            }
            printed.entry(id.to_owned()).or_default();
            commit = Some(id.to_owned());
            file = None;
        } else if let Some(rest) = line.strip_prefix(b"diff --git ") {
            // A path git quotes is not one the pass was asked about.
            file = rest
                .strip_prefix(b"a/")
                .and_then(|r| std::str::from_utf8(r).ok())
                .and_then(header_path);
            if let Some(path) = &file {
                let files = printed.get_mut(commit.as_deref()?)?;
                files.entry(path.clone()).or_default();
            }
        } else if let Some(rest) = line.strip_prefix(b"@@ -") {
            let (old_start, old_count, new_start, new_count) = hunk_header(rest)?;
            let mut elsewhere = Vec::new();
            let changes = match &file {
                Some(path) => printed
                    .get_mut(commit.as_deref()?)?
                    .entry(path.clone())
                    .or_default(),
                None => &mut elsewhere,
            };
            read_hunk(
                &mut lines,
                changes,
                (old_start, old_count),
                (new_start, new_count),
            )?;
        }
    }
    Some(printed)
}

/// `F b/F` (the rest of a `diff --git a/` line, no rename) → `F`.
fn header_path(rest: &str) -> Option<String> {
    let half = rest.len().checked_sub(3)? / 2;
    let (a, b) = (rest.get(..half)?, rest.get(half..)?);
    (b.strip_prefix(" b/")? == a).then(|| a.to_owned())
}

/// `a[,b] +c[,d] @@…` → (a, b, c, d), a count left out meaning 1.
fn hunk_header(rest: &[u8]) -> Option<(u32, u32, u32, u32)> {
    let rest = std::str::from_utf8(rest.split(|b| *b == b'@').next()?).ok()?;
    let mut sides = rest.split_whitespace();
    let side = |s: Option<&str>, sign: char| -> Option<(u32, u32)> {
        let s = s?.strip_prefix(sign).unwrap_or(s?);
        match s.split_once(',') {
            Some((start, count)) => Some((start.parse().ok()?, count.parse().ok()?)),
            None => Some((s.parse().ok()?, 1)),
        }
    };
    let (a, b) = side(sides.next(), '-')?;
    let (c, d) = side(sides.next(), '+')?;
    Some((a, b, c, d))
}

/// Reads one hunk's body (its header's counts say how long it is; context
/// lines, which a configured inter-hunk context adds, split it into several
/// changes) into `changes`.
fn read_hunk<'a>(
    lines: &mut std::iter::Peekable<impl Iterator<Item = &'a [u8]>>,
    changes: &mut Vec<Change>,
    (old_start, old_count): (u32, u32),
    (new_start, new_count): (u32, u32),
) -> Option<()> {
    // A side of 0 lines names the line before it (1-based): its 0-based
    // position is the same number.
    let mut old = if old_count == 0 {
        old_start
    } else {
        old_start.checked_sub(1)?
    };
    let mut new = if new_count == 0 {
        new_start
    } else {
        new_start.checked_sub(1)?
    };
    let (old_end, new_end) = (old + old_count, new + new_count);
    let mut open: Option<Change> = None;
    let close = |open: &mut Option<Change>, changes: &mut Vec<Change>| {
        changes.extend(open.take());
    };
    while old < old_end || new < new_end {
        let line = lines.next()?;
        let start = || Change {
            old_start: old,
            old_count: 0,
            new_start: new,
            new_count: 0,
        };
        match line.first() {
            Some(b'-') if old < old_end => {
                open.get_or_insert_with(start).old_count += 1;
                old += 1;
            }
            Some(b'+') if new < new_end => {
                open.get_or_insert_with(start).new_count += 1;
                new += 1;
            }
            Some(b' ') | None if old < old_end && new < new_end => {
                close(&mut open, changes);
                old += 1;
                new += 1;
            }
            Some(b'\\') => {}
            _ => return None,
        }
    }
    close(&mut open, changes);
    // A "\ No newline at end of file" after the last line belongs to it.
    while lines.peek().is_some_and(|l| l.first() == Some(&b'\\')) {
        lines.next();
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_reads_into_changes_and_lines_map_back() {
        let (first, second) = ("a".repeat(40), "b".repeat(40));
        let out = format!(
            "##{first}\n\ndiff --git a/f.c b/f.c\nindex 1..2 100644\n--- a/f.c\n+++ b/f.c\n\
             @@ -2 +2 @@ int x;\n-  b\n+B\n@@ -3,0 +4,2 @@ c\n+d\n+e\n\
             @@ -9,2 +10,0 @@\n-x\n-y\n\\ No newline at end of file\n\
             diff --git a/g h.c b/g h.c\n--- a/g h.c\n+++ b/g h.c\n\
             @@ -1,3 +1,3 @@\n-p\n q\n+r\n+s\n-t\n\
             ##{second}\n\n"
        );
        let absent = "c".repeat(40);
        let (both, one) = (["f.c".to_owned(), "g h.c".to_owned()], ["f.c".to_owned()]);
        let mut diffs = LineDiffs::default();
        let asked: [(&str, &[String]); 3] = [(&first, &both), (&second, &one), (&absent, &one)];
        diffs.read(out.as_bytes(), b"##", &asked).unwrap();
        assert_eq!(
            diffs.changes(&second, "f.c"),
            Some(&[][..]),
            "printed, nothing changed"
        );
        assert_eq!(diffs.changes(&second, "g h.c"), None, "not asked");
        assert_eq!(diffs.changes(&absent, "f.c"), None, "not printed");
        // A later pass over the same commit for another file adds to it.
        let other = ["x.c".to_owned()];
        diffs
            .read(
                format!("##{first}\n").as_bytes(),
                b"##",
                &[(&first, &other)],
            )
            .unwrap();
        assert_eq!(diffs.changes(&first, "x.c"), Some(&[][..]));
        let in_f = diffs.changes(&first, "f.c").unwrap();
        let change = |old_start, old_count, new_start, new_count| Change {
            old_start,
            old_count,
            new_start,
            new_count,
        };
        assert_eq!(
            in_f,
            [change(1, 1, 1, 1), change(3, 0, 3, 2), change(8, 2, 10, 0)]
        );
        let in_g = diffs.changes(&first, "g h.c").unwrap();
        assert_eq!(in_g, [change(0, 1, 0, 0), change(2, 1, 1, 2)]);
        // Line by line: 1 kept, 2 changed, 3 kept, 4-5 added, then shifted
        // by the two added lines until the two removed ones.
        let got: Vec<Origin> = (1..=12).map(|n| origin(in_f, n)).collect();
        use Origin::{Changed, Parent};
        assert_eq!(
            got,
            [
                Parent(1),
                Changed,
                Parent(3),
                Changed,
                Changed,
                Parent(4),
                Parent(5),
                Parent(6),
                Parent(7),
                Parent(8),
                Parent(11),
                Parent(12)
            ]
        );
        for bad in ["##nothex\n", "##-\ndiff --git a/x b/y\n"] {
            assert!(sections(bad.as_bytes(), b"##").is_none(), "{bad}");
        }
    }
}
