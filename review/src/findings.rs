//! Finding identity: the id of a finding, and when two findings are the same.
//!
//! A finding's id is the first 12 hex digits of blake3 over its role, file
//! and normalised title (lower-cased, letters and spaces only, stop words
//! dropped, the remaining words sorted and de-duplicated, the first eight
//! kept). Two findings are the same defect when they are in the same file,
//! on overlapping lines, and their titles share at least half their
//! normalised words.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// Lines apart that still count as the same place (a fix shifts lines a little).
pub const LINE_SLACK: u32 = 3;

const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "being", "but", "by", "can", "could", "does", "doesn", "for", "from", "has", "have",
    "if", "in", "into", "is", "it", "its", "may", "might", "more", "must", "no", "not", "of", "on",
    "or", "should", "so", "such", "than", "that", "the", "their", "then", "there", "these", "this",
    "those", "to", "too", "under", "up", "via", "was", "were", "when", "where", "which", "while",
    "will", "with", "would",
];

/// The normalised words of a title, sorted and unique, at most eight.
pub fn normalised_words(title: &str) -> Vec<String> {
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
pub fn normalised_title(title: &str) -> String {
    normalised_words(title).join(" ")
}

/// A finding's id.
pub fn finding_id(role: &str, file: &str, title: &str) -> String {
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
pub fn titles_match(a: &str, b: &str) -> bool {
    let (a, b) = (normalised_words(a), normalised_words(b));
    if a.is_empty() || b.is_empty() {
        return a == b;
    }
    let shared = a.iter().filter(|w| b.contains(w)).count();
    2 * shared >= a.len().max(b.len())
}

/// Whether two lines are the same place; an unknown line matches any.
pub fn lines_overlap(a: Option<u32>, b: Option<u32>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.abs_diff(b) <= LINE_SLACK,
        _ => true,
    }
}

/// A finding of the review, after the coordinator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    /// First 12 hex digits of blake3 over role, file and normalised title.
    pub id: String,
    /// critical, warning or suggestion.
    pub severity: String,
    /// The role that raised it.
    pub role: String,
    /// Workspace-relative file.
    pub file: String,
    /// 1-based line.
    pub line: Option<u32>,
    /// One line.
    pub title: String,
    /// Why it matters.
    pub detail: String,
    /// 0–1.
    pub confidence: f64,
    /// Who raised it and what became of it.
    #[serde(default)]
    pub lineage: Lineage,
}

impl Finding {
    /// A finding as `role` raised it, before anything decided its fate.
    pub fn raised(
        role: &str,
        severity: &str,
        file: String,
        line: Option<u32>,
        title: String,
        detail: String,
        confidence: f64,
    ) -> Self {
        Self {
            id: finding_id(role, &file, &title),
            severity: severity.to_owned(),
            role: role.to_owned(),
            file,
            line,
            title,
            detail,
            confidence,
            lineage: Lineage::raised(role, severity),
        }
    }

    /// This finding, dropped or merged away by `by`, with why.
    #[must_use]
    pub fn dropped(mut self, by: FateBy, why: impl Into<String>) -> Self {
        self.lineage.fate = Fate::Dropped;
        self.lineage.by = Some(by);
        self.lineage.why = Some(why.into());
        self
    }

    /// This finding, merged by `by` into `into` (the finding that stands for it).
    #[must_use]
    pub fn merged(mut self, by: FateBy, into: &Finding, why: impl Into<String>) -> Self {
        self.lineage.fate = Fate::Merged;
        self.lineage.by = Some(by);
        self.lineage.why = Some(why.into());
        self.lineage.merged_into = Some(into.id.clone());
        self
    }
}

/// What became of a raised finding.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Fate {
    /// It stands as raised (perhaps rephrased).
    #[default]
    Kept,
    /// It stands at a lower severity than raised.
    Downgraded,
    /// It stands at a higher severity than raised.
    Upgraded,
    /// Another finding stands for it (`merged_into`).
    Merged,
    /// It does not stand.
    Dropped,
}

/// Who decided a finding's fate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FateBy {
    /// The reply's validation: the finding broke the answer's schema.
    Validation,
    /// The change's bounds: it cites a file outside the change.
    OutsideChange,
    /// `[policy] confidence_floor`.
    ConfidenceFloor,
    /// The deterministic fusion of duplicates across roles.
    Dedupe,
    /// The model coordinator.
    Coordinator,
    /// A dismissal (`gate dismiss`) of the same finding on the same code.
    Dismissal,
}

/// A finding's lineage: who raised it and what became of it, by whom and why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Lineage {
    /// The roles that raised this defect: its own first, then those whose
    /// duplicates were merged into it.
    pub raised_by: Vec<String>,
    /// Its severity as raised.
    pub raised_severity: String,
    /// Its title as raised, when the coordinator rephrased it.
    pub raised_title: Option<String>,
    /// Its detail as raised, when the coordinator rephrased it.
    pub raised_detail: Option<String>,
    /// What became of it.
    pub fate: Fate,
    /// Who decided, when something other than keeping it as raised happened.
    pub by: Option<FateBy>,
    /// Why, in the decider's words.
    pub why: Option<String>,
    /// The finding that stands for it, when merged.
    pub merged_into: Option<String>,
    /// What the coordinator asked of it that did not hold, and why not.
    pub overruled: Option<String>,
}

impl Lineage {
    /// The lineage of a finding just raised by `role`.
    pub fn raised(role: &str, severity: &str) -> Self {
        Self {
            raised_by: vec![role.to_owned()],
            raised_severity: severity.to_owned(),
            ..Self::default()
        }
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
