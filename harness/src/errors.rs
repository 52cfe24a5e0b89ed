//! Errors of the harness itself (not of the checks it runs: those are results).

/// The harness could not do what it was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// Two items share an id, or `after` names an unknown item.
    #[error("invalid plan: {0}")]
    Plan(String),
    /// A subprocess could not be started.
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Reading the workspace failed.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}
