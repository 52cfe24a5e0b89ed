//! Why lines could not be blamed.

/// Why lines could not be blamed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlameError {
    /// A git call failed: git's own message.
    #[error("{0}")]
    Git(String),
}
