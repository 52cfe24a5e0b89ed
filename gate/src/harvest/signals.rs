//! What a later commit's message says about an earlier one: that it
//! reverts it, or that it fixes it; and whether it reads as a fix at all.

use std::sync::LazyLock;

use regex::Regex;

/// `[eval] fix_pattern`'s default: the words fix commits are found by (a
/// case-insensitive regular expression over the whole message).
pub(crate) const DEFAULT_FIX_PATTERN: &str =
    r"(?i)\b(fix(e[sd]|ing)?|bug(s|fix)?|hotfix|regressions?|broken|crash(es|ed)?|defects?)\b";

/// `git revert`'s line: `This reverts commit <id>.`
static REVERTS: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\bThis reverts commit ([0-9a-f]{7,64})\b").ok());

/// Messages and trailers that name the commit a change fixes.
static FIXES: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?im)(?:^\s*Fixes:\s*(?:commit\s+)?",
        r"|\bfix(?:es|ed)?\s+(?:commit\s+)?",
        r"|\bregression\s+(?:from|introduced\s+(?:in|by))\s+(?:commit\s+)?",
        r"|\bintroduced\s+(?:in|by)\s+(?:commit\s+)?)",
        r"([0-9a-f]{7,64})\b",
    ))
    .ok()
});

/// The ids (full or abbreviated, lowercase) a message says it reverts.
pub(crate) fn reverted(message: &str) -> Vec<String> {
    captures(REVERTS.as_ref(), message)
}

/// The ids (full or abbreviated, lowercase) a message says it fixes.
pub(crate) fn fixed(message: &str) -> Vec<String> {
    captures(FIXES.as_ref(), message)
}

fn captures(re: Option<&Regex>, message: &str) -> Vec<String> {
    let Some(re) = re else { return Vec::new() };
    let mut ids: Vec<String> = re
        .captures_iter(message)
        .filter_map(|c| c.get(1))
        .map(|m| m.as_str().to_ascii_lowercase())
        .collect();
    ids.dedup();
    ids
}

/// The fix pattern, compiled; a pattern that does not compile is an error
/// the caller reports with the key's name.
pub(crate) fn fix_pattern(pattern: Option<&str>) -> Result<Regex, String> {
    let pattern = pattern.unwrap_or(DEFAULT_FIX_PATTERN);
    Regex::new(pattern).map_err(|e| format!("[eval] fix_pattern {pattern:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_what_they_revert_and_fix() {
        let id = "0123456789abcdef0123456789abcdef01234567";
        // (message, reverted, fixed)
        let cases: Vec<(String, Vec<&str>, Vec<&str>)> = vec![
            (
                format!("Revert \"add x\"\n\nThis reverts commit {id}.\n"),
                vec![id],
                vec![],
            ),
            (
                format!(
                    "handle empty carts\n\nFixes: {} (\"add carts\")\n",
                    &id[..12]
                ),
                vec![],
                vec![&id[..12]],
            ),
            (format!("fixes {}", &id[..7]), vec![], vec![&id[..7]]),
            (
                format!("Correct totals: regression from {id}"),
                vec![],
                vec![id],
            ),
            (
                format!("off-by-one introduced in commit {}", &id[..9]),
                vec![],
                vec![&id[..9]],
            ),
            ("fixes 123456 (too short)".into(), vec![], vec![]),
            ("fix typo in the readme".into(), vec![], vec![]),
        ];
        for (message, want_reverted, want_fixed) in cases {
            assert_eq!(reverted(&message), want_reverted, "{message}");
            assert_eq!(fixed(&message), want_fixed, "{message}");
        }
    }

    #[test]
    fn the_default_fix_pattern_finds_fix_words_only() {
        let re = fix_pattern(None).unwrap_or_else(|e| panic!("{e}"));
        for yes in [
            "Fix the totals",
            "fixes rounding",
            "bugfix: empty cart",
            "Regression in checkout",
            "crash on start",
        ] {
            assert!(re.is_match(yes), "{yes}");
        }
        for no in ["prefix the names", "add a debugger page", "refactor"] {
            assert!(!re.is_match(no), "{no}");
        }
        assert!(fix_pattern(Some("(")).is_err());
    }
}
