//! The lines a change added or modified, from `git diff -U0`'s hunks.

use std::collections::{BTreeMap, BTreeSet};

/// Lines (1-based) that a change added or modified, by file path as the
/// diff names it (without git's `b/` prefix).
pub type ChangedLines = BTreeMap<String, BTreeSet<u32>>;

/// Reads the added and modified lines out of a unified diff made with no
/// context (`git diff -U0`): each hunk `@@ -a,b +c,d @@` names lines
/// `c..c+d` of the new file. A deleted file (`+++ /dev/null`) has none;
/// a hunk that only removes lines (`d` = 0) adds none.
pub fn changed_lines(diff: &str) -> ChangedLines {
    let mut out = ChangedLines::new();
    let mut file: Option<String> = None;
    for line in diff.lines() {
        if let Some(path) = line.strip_prefix("+++ ") {
            file = path.strip_prefix("b/").map(unquoted);
            continue;
        }
        let Some(file) = &file else { continue };
        let Some((_, new)) = line.strip_prefix("@@ -").and_then(|l| l.split_once(" +")) else {
            continue;
        };
        let range = new.split(' ').next().unwrap_or_default();
        let (first, count) = range.split_once(',').unwrap_or((range, "1"));
        let (Ok(first), Ok(count)) = (first.parse::<u32>(), count.parse::<u32>()) else {
            continue;
        };
        out.entry(file.clone())
            .or_default()
            .extend(first..first.saturating_add(count));
    }
    out
}

/// A path as git writes it: a name with a tab or a newline ends in a tab
/// (`+++ b/a b\t`); a quoted name is left out (`core.quotePath` off keeps
/// most names unquoted, and a name git must quote is mutated by no one).
fn unquoted(path: &str) -> String {
    path.trim_end_matches('\t').to_owned()
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
    fn hunks_name_the_added_and_modified_lines_of_each_file() {
        let diff = "diff --git a/src/rules.py b/src/rules.py\n\
            index 1..2 100644\n\
            --- a/src/rules.py\n\
            +++ b/src/rules.py\n\
            @@ -5,0 +6,2 @@ def other():\n\
            +def is_adult(age):\n\
            +    return age >= 18\n\
            @@ -10 +12 @@\n\
            -x = 1\n\
            +x = 2\n\
            @@ -20,3 +21,0 @@\n\
            diff --git a/gone.py b/gone.py\n\
            --- a/gone.py\n\
            +++ /dev/null\n\
            @@ -1,2 +0,0 @@\n";
        let lines = changed_lines(diff);
        assert_eq!(
            lines.get("src/rules.py").unwrap(),
            &BTreeSet::from([6, 7, 12]),
            "a removal-only hunk adds nothing"
        );
        assert!(!lines.contains_key("gone.py"), "{lines:?}");
    }

    #[test]
    fn a_new_file_is_all_changed() {
        assert_eq!(all_lines("a\nb\n"), BTreeSet::from([1, 2]));
        assert!(all_lines("").is_empty());
    }
}
