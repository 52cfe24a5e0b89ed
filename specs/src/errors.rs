//! Everything that can be wrong with a spec, located in its file.

use std::fmt;
use std::path::{Path, PathBuf};

/// Problems shown at once; one more line says how many were left out.
pub const MAX_ERRORS: usize = 20;

/// One problem in a spec, with where it is.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {kind}", self.place())]
pub struct SpecError {
    /// The spec file.
    pub file: PathBuf,
    /// 1-based line; 0 when the problem is the file as a whole.
    pub line: usize,
    /// 1-based column; 0 when the problem is the file as a whole.
    pub column: usize,
    /// What is wrong.
    pub kind: SpecErrorKind,
}

impl SpecError {
    /// A located error.
    pub fn new(file: &Path, line: usize, column: usize, kind: SpecErrorKind) -> Self {
        Self {
            file: file.to_path_buf(),
            line,
            column,
            kind,
        }
    }

    /// `file:line:column`, or the file alone for a problem with the whole
    /// file (line 0), which has no place in it to point at.
    fn place(&self) -> String {
        if self.line == 0 {
            self.file.display().to_string()
        } else {
            format!("{}:{}:{}", self.file.display(), self.line, self.column)
        }
    }
}

/// What is wrong with a spec.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecErrorKind {
    /// The file could not be read.
    #[error("cannot read the spec: {0}")]
    Read(String),
    /// Not UTF-8, which TOML and JSON both require; the position is the
    /// first byte that is not.
    #[error("not UTF-8 (byte 0x{byte:02X}): TOML and JSON files must be UTF-8 text")]
    NotUtf8 {
        /// The first byte that is not UTF-8.
        byte: u8,
    },
    /// Not valid TOML or JSON, or a value of the wrong type.
    #[error("{0}")]
    Syntax(String),
    /// A key the schema does not have.
    #[error("unknown key `{key}`{}", mean(suggestion.as_deref()))]
    UnknownKey {
        /// The key as written.
        key: String,
        /// A key of the schema spelled much like it.
        suggestion: Option<String>,
    },
    /// A required key is absent.
    #[error("missing key `{0}`")]
    MissingKey(String),
    /// Two items share an id.
    #[error("duplicate id `{0}`")]
    DuplicateId(String),
    /// An id that is empty or holds characters outside `[A-Za-z0-9._-]`.
    #[error("invalid id `{0}`: use letters, digits, `.`, `_` and `-`")]
    InvalidId(String),
    /// `after` names nothing that exists (or the wrong kind of thing).
    #[error("`after` names `{name}`, which is not {expected}{}", mean(suggestion.as_deref()))]
    UnknownAfter {
        /// The name as written.
        name: String,
        /// "a check" or "a task".
        expected: &'static str,
        /// An id of that kind spelled much like it.
        suggestion: Option<String>,
    },
    /// The task graph or the check graph has a cycle; the path closes on itself.
    #[error("{graph} graph has a cycle: {}", path.join(" -> "))]
    Cycle {
        /// "task" or "check".
        graph: &'static str,
        /// e.g. `["cart", "prices", "cart"]`.
        path: Vec<String>,
    },
    /// A glob that does not compile.
    #[error("glob `{glob}` does not compile: {reason}")]
    BadGlob {
        /// The glob as written.
        glob: String,
        /// Why.
        reason: String,
    },
    /// A path or glob that could reach outside the workspace.
    #[error("`{0}` reaches outside the workspace")]
    PathEscape(String),
    /// A criterion with both `run` and `judge`.
    #[error("criterion `{0}` has both `run` and `judge`; give exactly one")]
    RunAndJudge(String),
    /// A criterion with neither `run` nor `judge`.
    #[error("criterion `{0}` has neither `run` nor `judge`; give exactly one")]
    NoDecider(String),
    /// `judge` set to something other than `"model"`.
    #[error("`judge` must be \"model\", not \"{0}\"")]
    BadJudge(String),
    /// `expect` other than `any` on a criterion a model judges.
    #[error(
        "criterion `{0}` is judged by a model, so nothing runs on the base: `expect` needs a \
         code-decided criterion (`run`)"
    )]
    ExpectNeedsRun(String),
    /// `tests` with both or neither of `report` and `run`.
    #[error("`tests` of task `{0}` needs exactly one of `report` or `run`")]
    BadTests(String),
    /// `starts` with more than one readiness probe.
    #[error("`starts` of check `{0}` names more than one readiness probe")]
    ManyProbes(String),
    /// A value outside its allowed range.
    #[error("`{key}` {reason}")]
    OutOfRange {
        /// The key.
        key: String,
        /// e.g. "must be between 0 and 1".
        reason: String,
    },
    /// A command that is empty.
    #[error("`run` of `{0}` is empty")]
    EmptyCommand(String),
    /// An id in the namespace the gate keeps for itself (`builtin.*`).
    #[error("id `{0}` is reserved: `builtin.*` names the gate's built-in checks")]
    ReservedId(String),
    /// A readiness probe that cannot work as written.
    #[error("`{key}` {reason}")]
    BadProbe {
        /// `ready_tcp`, `ready_http` or `ready_log`.
        key: String,
        /// e.g. "must be `host:port` with a port from 1 to 65535, not `localhost`".
        reason: String,
    },
    /// A key of `[policy.role_timeout_s]` that names no role.
    #[error(
        "`role_timeout_s` names `{role}`, which is not a role (quality, security, performance, docs, integration, judge, coordinator, rules){}",
        mean(suggestion.as_deref())
    )]
    UnknownRole {
        /// The name as written.
        role: String,
        /// The role spelled much like it.
        suggestion: Option<String>,
    },
    /// More problems than are shown at once.
    #[error("{0} more problem(s) not shown: fix these and run again")]
    More(usize),
    /// A value that must not be empty, such as a `tests.report` path.
    #[error("`{0}` is empty")]
    EmptyValue(String),
    /// A page URL that is not on the workspace's own server.
    #[error(
        "`url` must be an `http://` or `https://` URL on the workspace's own server \
         (127.0.0.1, localhost or [::1]), not `{0}`"
    )]
    PageUrl(String),
    /// A page with no `files` or no `after`.
    #[error("page `{page}` has an empty `{key}`: {hint}")]
    PageNeeds {
        /// The page's id.
        page: String,
        /// `files` or `after`.
        key: &'static str,
        /// What to put there.
        hint: &'static str,
    },
    /// A header or cookie name that cannot be sent.
    #[error("`{table}` names `{name}`, which is not a valid {what} name")]
    BadName {
        /// `headers` or `cookies`.
        table: &'static str,
        /// The name as written.
        name: String,
        /// `header` or `cookie`.
        what: &'static str,
    },
    /// A value meant to name an environment variable that cannot be one.
    #[error(
        "`{key}` must name the environment variable holding the value (letters, digits and \
         `_`, not starting with a digit), not `{name}`"
    )]
    BadEnvName {
        /// e.g. `headers.Authorization`.
        key: String,
        /// The value as written.
        name: String,
    },
}

/// `; did you mean `x`?`, or nothing.
fn mean(suggestion: Option<&str>) -> String {
    suggestion.map_or_else(String::new, |s| format!("; did you mean `{s}`?"))
}

/// The candidate spelled most like `word` (a typo's edit distance: at most
/// one edit per three characters, at least one), if any.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let budget = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != word)
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, _)| *d <= budget)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.to_owned())
}

/// Levenshtein distance over characters, a swap of neighbours counting one.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows: two back for a swap (optimal string alignment).
    let mut before = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                cur[j] = cur[j].min(before[j - 2] + 1);
            }
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// All problems found in one spec, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecErrors(pub Vec<SpecError>);

impl SpecErrors {
    /// `errors` in file order (a problem with the whole file first), at most
    /// [`MAX_ERRORS`] of them, then a note of how many more.
    pub fn capped(mut errors: Vec<SpecError>) -> Self {
        errors.sort_by_key(|e| (e.line, e.column));
        errors.dedup();
        let max = MAX_ERRORS;
        if errors.len() > max {
            let more = errors.len() - max;
            let file = errors[0].file.clone();
            errors.truncate(max);
            errors.push(SpecError::new(&file, 0, 0, SpecErrorKind::More(more)));
        }
        Self(errors)
    }

    /// The problems, in file order.
    pub fn iter(&self) -> impl Iterator<Item = &SpecError> {
        self.0.iter()
    }
}

impl From<SpecError> for SpecErrors {
    fn from(e: SpecError) -> Self {
        Self(vec![e])
    }
}

impl fmt::Display for SpecErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SpecErrors {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_what_was_meant() {
        let keys = ["id", "title", "paths", "after", "tests", "criterion"];
        // (typed, suggested)
        let cases = [
            ("tittle", Some("title")),
            ("afer", Some("after")),
            ("aftre", Some("after")),
            ("test", Some("tests")),
            ("weight", None),
            ("bad", None),
            ("title", None),
        ];
        for (typed, want) in cases {
            assert_eq!(
                did_you_mean(typed, keys),
                want.map(str::to_owned),
                "{typed}"
            );
        }
        assert_eq!(edit_distance("ready_tpc", "ready_tcp"), 1);
    }
}
