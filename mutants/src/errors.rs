//! What can go wrong while making mutants.

/// An error of the mutant engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MutantsError {
    /// The grammar could not be loaded into the parser (a version mismatch
    /// between tree-sitter and a grammar crate).
    #[error("the {language} grammar cannot be loaded: {reason}")]
    Grammar {
        /// The language.
        language: &'static str,
        /// The parser's reason.
        reason: String,
    },
    /// The parser gave no tree (it was cancelled or timed out).
    #[error("{file}: the {language} parser gave no syntax tree")]
    Unparsed {
        /// The file.
        file: String,
        /// The language.
        language: &'static str,
    },
}
