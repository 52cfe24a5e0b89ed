//! Why a bundle could not be stored or fetched.

/// A bundle could not be stored or fetched.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Nothing is where the bundle should be: evidence lost.
    #[error("bundle {at} is missing")]
    Missing {
        /// Where it should be.
        at: String,
    },
    /// The bytes there do not hash to the sha256 recorded for them (in the
    /// object's name, or in the ledger row).
    #[error("bundle {at} was altered: its bytes hash to {actual}, not {expected}")]
    Tampered {
        /// Where it is.
        at: String,
        /// The sha256 recorded.
        expected: String,
        /// The sha256 of the bytes found.
        actual: String,
    },
    /// Another bundle already holds this run's name (the directory store).
    #[error("bundle {at} already exists with other bytes; not replacing it")]
    Exists {
        /// Where it is.
        at: String,
    },
    /// The store could not be reached or used (network, credentials, disk).
    #[error("cannot reach bundle store at {at}: {reason}")]
    Unavailable {
        /// The store or object.
        at: String,
        /// Why.
        reason: String,
    },
    /// A store name, object URL or run id that cannot be used.
    #[error("{0}")]
    Invalid(String),
}

impl StoreError {
    /// True when the evidence is lost or altered (exit 1).
    pub fn is_bad_evidence(&self) -> bool {
        matches!(self, Self::Missing { .. } | Self::Tampered { .. })
    }

    /// True when the store could not be reached (exit 4, never 1).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }
}
