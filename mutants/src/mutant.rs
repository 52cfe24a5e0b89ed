//! One mutant: a small edit to one changed line, and what running the
//! checks against it made of it.

use serde::{Deserialize, Serialize};

/// What a mutation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    /// A comparison moved across its boundary or flipped (`>=`→`>`, `==`→`!=`).
    Comparison,
    /// `&&`↔`||`, `and`↔`or`.
    Logical,
    /// An arithmetic operator swapped (`+`↔`-`, `*`↔`/`).
    Arithmetic,
    /// A negation removed (`not x`→`x`, `!x`→`x`) or a boolean constant flipped.
    Negation,
    /// An integer constant moved by one.
    Constant,
    /// A returned value replaced by the language's default.
    Return,
    /// A statement that only calls something, deleted.
    Statement,
}

/// Why a mutant is set apart and never scored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SetApart {
    /// `unviable` or `equivalent`.
    pub status: Status,
    /// Why, in a sentence.
    pub why: String,
}

/// A mutant of one changed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutant {
    /// The file, workspace-relative.
    pub file: String,
    /// The 1-based line the edit starts on.
    pub line: u32,
    /// What kind of edit.
    pub operator: Operator,
    /// The byte range of the file the edit replaces.
    pub range: std::ops::Range<usize>,
    /// What replaces it.
    pub with: String,
    /// The line as the change wrote it (trimmed).
    pub original: String,
    /// The line as the mutant has it (trimmed).
    pub replacement: String,
    /// Set apart before anything runs (it does not parse, or looks
    /// equivalent to the original): never run, never scored.
    pub set_apart: Option<SetApart>,
}

impl Mutant {
    /// The file's text with this mutant applied.
    pub fn apply(&self, source: &str) -> String {
        let mut out = String::with_capacity(source.len() + self.with.len());
        out.push_str(&source[..self.range.start]);
        out.push_str(&self.with);
        out.push_str(&source[self.range.end..]);
        out
    }

    /// A stable id: file, line and the edit, short enough to name.
    pub fn id(&self) -> String {
        format!(
            "{}:{}:{}:{}",
            self.file, self.line, self.range.start, self.with
        )
    }

    /// The one-line diff a finding shows: "`age >= 18` becomes `age > 18`".
    pub fn describe(&self) -> String {
        format!(
            "`{}` becomes `{}` at {}:{}",
            self.original, self.replacement, self.file, self.line
        )
    }
}

/// What became of a mutant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// A criterion that ran against it failed: it was noticed.
    Killed,
    /// Every criterion that ran against it passed: nothing noticed it.
    Survived,
    /// A criterion ran out of time against it (not scored).
    Timeout,
    /// It does not parse or does not build (not scored).
    Unviable,
    /// It looks equivalent to the original (`x + 0`→`x - 0`; not scored).
    Equivalent,
    /// No criterion read its file, so none ran against it (not scored).
    NotRun,
}

impl Status {
    /// Whether it counts towards a score.
    pub fn scored(self) -> bool {
        matches!(self, Self::Killed | Self::Survived)
    }

    /// Its name, as the outputs write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Killed => "killed",
            Self::Survived => "survived",
            Self::Timeout => "timeout",
            Self::Unviable => "unviable",
            Self::Equivalent => "equivalent",
            Self::NotRun => "not_run",
        }
    }
}

/// The 1-based line holding byte `at` of `source`, trimmed.
pub(crate) fn line_at(source: &str, at: usize) -> &str {
    let start = source[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = source[at..].find('\n').map_or(source.len(), |i| at + i);
    source[start..end].trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mutant(range: std::ops::Range<usize>, with: &str) -> Mutant {
        Mutant {
            file: "src/rules.py".to_owned(),
            line: 2,
            operator: Operator::Comparison,
            range,
            with: with.to_owned(),
            original: "return age >= 18".to_owned(),
            replacement: "return age > 18".to_owned(),
            set_apart: None,
        }
    }

    #[test]
    fn applying_replaces_the_range_only() {
        let source = "def is_adult(age):\n    return age >= 18\n";
        let at = source.find(">=").unwrap();
        let m = mutant(at..at + 2, ">");
        assert_eq!(m.apply(source), "def is_adult(age):\n    return age > 18\n");
        assert_eq!(line_at(source, at), "return age >= 18");
        assert_eq!(
            m.describe(),
            "`return age >= 18` becomes `return age > 18` at src/rules.py:2"
        );
    }

    #[test]
    fn only_killed_and_survived_are_scored() {
        let scored: Vec<Status> = [
            Status::Killed,
            Status::Survived,
            Status::Timeout,
            Status::Unviable,
            Status::Equivalent,
            Status::NotRun,
        ]
        .into_iter()
        .filter(|s| s.scored())
        .collect();
        assert_eq!(scored, [Status::Killed, Status::Survived]);
    }
}
