//! What a repository's history says, read from git's own output: the
//! commits of a branch ([`commits`]), their patches and patch ids
//! ([`patch`]), and which earlier commits last touched the lines a fix
//! removed or changed ([`szz`]), found by one walk over the history
//! rather than a `git blame` per file.
//!
//! Everything read here is the agent's text (messages, file names): records
//! are split on delimiters drawn per call and nothing goes back to git but
//! validated ids and file names after `--`. Git itself runs through the
//! caller ([`RunGit`]).

mod blame_walk;
pub mod commits;
pub mod error;
mod file_history;
pub mod git;
pub mod git_blame;
mod line_diff;
pub mod patch;
pub mod szz;

pub use self::error::BlameError;
pub use self::git::RunGit;
