//! What a harvest is given: the runs, as read from the ledger, and the
//! options.

use chrono::{DateTime, Utc};

/// What the harvest is asked to do.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// The integration branch (default: the remote's default branch, else
    /// the checked-out one).
    pub branch: Option<String>,
    /// Days after landing a fix may come (SZZ) and a change must survive.
    pub window_days: u32,
    /// Later commits a change must survive.
    pub min_commits: u32,
    /// Only runs started on or after this.
    pub since: Option<DateTime<Utc>>,
    /// The fix pattern.
    pub fix_pattern: regex::Regex,
    /// How many blame calls at once.
    pub jobs: usize,
}

/// A run as the harvester reads it from the ledger.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    /// Its id.
    pub id: String,
    /// Its spec.
    pub spec_id: String,
    /// Its series (a pull request, a branch); `None` for the spec's own.
    pub series: Option<String>,
    /// `pass` or `fail`.
    pub verdict: String,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// The head it verified.
    pub head: String,
    /// The repository's root commits it recorded.
    pub roots: Vec<String>,
    /// How many of the workspace's files differed from `head` when the
    /// run verified it: what such a run decided on is not a commit.
    pub uncommitted: usize,
    /// The outcomes it has that the gate vouches for, oldest first.
    pub outcomes: Vec<gate_evidence::ledger::OutcomeEntry>,
}
