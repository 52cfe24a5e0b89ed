//! Finding identity: the id of a finding, and when two findings are the same.
//!
//! A finding's id is the first 12 hex digits of blake3 over its role, file
//! and normalised title (lower-cased, letters and spaces only, stop words
//! dropped, the remaining words sorted and de-duplicated, the first eight
//! kept). Two findings are the same defect when they are in the same file,
//! on overlapping lines, and their titles share at least half their
//! normalised words.

use std::collections::BTreeSet;

/// Lines apart that still count as the same place (a fix shifts lines a little).
pub(crate) const LINE_SLACK: u32 = 3;

const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "being", "but", "by", "can", "could", "does", "doesn", "for", "from", "has", "have",
    "if", "in", "into", "is", "it", "its", "may", "might", "more", "must", "no", "not", "of", "on",
    "or", "should", "so", "such", "than", "that", "the", "their", "then", "there", "these", "this",
    "those", "to", "too", "under", "up", "via", "was", "were", "when", "where", "which", "while",
    "will", "with", "would",
];

/// The normalised words of a title, sorted and unique, at most eight.
pub(crate) fn normalised_words(title: &str) -> Vec<String> {
    let lowered: String = title
        .chars()
        .map(|c| {
            if c.is_alphabetic() {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                ' '
            }
        })
        .collect();
    let words: BTreeSet<&str> = lowered
        .split_whitespace()
        .filter(|w| !STOP_WORDS.contains(w))
        .collect();
    words.into_iter().take(8).map(str::to_owned).collect()
}

/// The normalised title: its normalised words joined by single spaces.
pub(crate) fn normalised_title(title: &str) -> String {
    normalised_words(title).join(" ")
}

/// A finding's id.
pub(crate) fn finding_id(role: &str, file: &str, title: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(role.as_bytes());
    h.update(&[0]);
    h.update(file.as_bytes());
    h.update(&[0]);
    h.update(normalised_title(title).as_bytes());
    h.finalize().to_hex()[..12].to_owned()
}

/// Whether two titles share at least half their normalised words (half of
/// the longer one's).
pub(crate) fn titles_match(a: &str, b: &str) -> bool {
    let (a, b) = (normalised_words(a), normalised_words(b));
    if a.is_empty() || b.is_empty() {
        return a == b;
    }
    let shared = a.iter().filter(|w| b.contains(w)).count();
    2 * shared >= a.len().max(b.len())
}

/// Whether two lines are the same place; an unknown line matches any.
pub(crate) fn lines_overlap(a: Option<u32>, b: Option<u32>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.abs_diff(b) <= LINE_SLACK,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation() {
        let cases = [
            ("The error is swallowed in parse()", "error parse swallowed"),
            (
                "Error swallowed; PARSE returns None",
                "error none parse returns swallowed",
            ),
            (
                "SQL injection via `name` — 2 places",
                "injection name places sql",
            ),
            ("", ""),
            (
                "one two three four five six seven eight nine ten",
                "eight five four nine one seven six ten",
            ),
            ("Größe überschritten", "größe überschritten"),
        ];
        for (title, want) in cases {
            assert_eq!(normalised_title(title), want, "{title}");
        }
    }

    #[test]
    fn ids_ignore_wording_noise() {
        let a = finding_id("quality", "src/a.rs", "The error is swallowed in parse()");
        let b = finding_id("quality", "src/a.rs", "error swallowed in PARSE");
        assert_eq!(a, b);
        assert_eq!(a.len(), 12);
        assert_ne!(
            a,
            finding_id("security", "src/a.rs", "error swallowed in parse")
        );
        assert_ne!(
            a,
            finding_id("quality", "src/b.rs", "error swallowed in parse")
        );
    }

    #[test]
    fn matching() {
        assert!(titles_match(
            "Order total ignores quantity",
            "total ignores the quantity of lines"
        ));
        assert!(!titles_match(
            "Order total ignores quantity",
            "SQL injection in search"
        ));
        assert!(lines_overlap(Some(10), Some(13)));
        assert!(!lines_overlap(Some(10), Some(14)));
        assert!(lines_overlap(None, Some(14)));
    }
}
