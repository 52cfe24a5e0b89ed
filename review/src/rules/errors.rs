//! What can go wrong with house rules: a file that cannot be read or
//! written, and problems located at a line and column.

use std::fmt;
use std::path::PathBuf;

/// One problem in a rules file, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleProblem {
    /// The rules file, workspace-relative.
    pub file: String,
    /// 1-based line (0: the file as a whole).
    pub line: usize,
    /// 1-based column (0: the file as a whole).
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl RuleProblem {
    /// A located problem.
    pub fn new(file: &str, line: usize, column: usize, message: String) -> Self {
        Self {
            file: file.to_owned(),
            line,
            column,
            message,
        }
    }
}

impl fmt::Display for RuleProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.column, self.message
        )
    }
}

/// House rules that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RulesError {
    /// A rules file cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Rules files hold problems, each located.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Invalid(Vec<RuleProblem>),
    /// A rules file cannot be written back.
    #[error("cannot write {}: {reason}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The rule asked for does not exist.
    #[error("no rule `{0}` in the workspace's rules files")]
    NoSuchRule(String),
}
