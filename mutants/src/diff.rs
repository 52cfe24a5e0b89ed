//! The lines a change added or modified in a file, from the file's text at
//! the base and now.
//!
//! The two texts are compared here, not read from `git diff`: a diff
//! through the repository's index misses what its flags hide (a path
//! marked assume-unchanged or skip-worktree shows no change), and git
//! quotes names it must escape; neither may keep a changed line from
//! being mutated.

use std::collections::{BTreeMap, BTreeSet};

use similar::{Algorithm, DiffOp, TextDiff};

/// Lines (1-based) that a change added or modified, by workspace-relative
/// file path.
pub type ChangedLines = BTreeMap<String, BTreeSet<u32>>;

/// The lines of `now` (1-based) that are not lines of `base` kept in
/// place: inserted, or replacing others (a line diff, Myers' algorithm, as
/// `git diff` makes by default). Lines only removed add none.
pub fn changed_between(base: &str, now: &str) -> BTreeSet<u32> {
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .diff_lines(base, now);
    let mut out = BTreeSet::new();
    for op in diff.ops() {
        let (start, len) = match *op {
            DiffOp::Insert {
                new_index, new_len, ..
            }
            | DiffOp::Replace {
                new_index, new_len, ..
            } => (new_index, new_len),
            DiffOp::Equal { .. } | DiffOp::Delete { .. } => continue,
        };
        let first = u32::try_from(start).unwrap_or(u32::MAX).saturating_add(1);
        let count = u32::try_from(len).unwrap_or(u32::MAX);
        out.extend(first..first.saturating_add(count));
    }
    out
}

/// Every line of a text: what a file the base did not have adds.
pub fn all_lines(text: &str) -> BTreeSet<u32> {
    let count = u32::try_from(text.lines().count()).unwrap_or(u32::MAX);
    (1..=count).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserted_and_replaced_lines_are_changed_and_removed_ones_not() {
        let base = "a\nb\nc\nd\ne\nf\n";
        // b replaced, a line inserted after d, f removed.
        let now = "a\nB\nc\nd\nnew\ne\n";
        assert_eq!(changed_between(base, now), BTreeSet::from([2, 5]));
        assert!(changed_between(base, base).is_empty());
        assert!(
            changed_between(base, "a\nb\nc\n").is_empty(),
            "only removed"
        );
        // A last line that gained its newline is the same line.
        assert!(changed_between("a\nb", "a\nb\n").len() <= 1);
        assert_eq!(changed_between("", "x\ny\n"), BTreeSet::from([1, 2]));
    }

    #[test]
    fn a_new_file_is_all_changed() {
        assert_eq!(all_lines("a\nb\n"), BTreeSet::from([1, 2]));
        assert!(all_lines("").is_empty());
    }
}
