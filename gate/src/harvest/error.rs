//! Why outcomes could not be harvested.

/// Why outcomes could not be harvested.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum HarvestError {
    /// The workspace is not in a git repository.
    #[error("cannot harvest outcomes: {0}")]
    NoRepository(String),
    /// A shallow clone has not the history the labels need.
    #[error(
        "cannot harvest outcomes from a shallow clone: runs are matched by the repository's \
         root commit and labelled from the history after them; fetch all of it (`git fetch \
         --unshallow`, or `fetch-depth: 0` with actions/checkout, `GIT_DEPTH: 0` in GitLab CI)"
    )]
    Shallow,
    /// The branch does not resolve.
    #[error("cannot harvest outcomes: the branch {branch:?} {reason}")]
    Branch {
        /// The branch as given.
        branch: String,
        /// Why.
        reason: String,
    },
    /// `[eval] fix_pattern` does not compile.
    #[error("{0}")]
    FixPattern(String),
    /// A git call failed.
    #[error("cannot harvest outcomes: {0}")]
    Git(String),
    /// Blaming a fix's lines failed.
    #[error("cannot harvest outcomes: {0}")]
    Blame(#[from] gate_history::BlameError),
    /// A fix to blame does not name a commit.
    #[error("{0}")]
    NoCommit(String),
}
