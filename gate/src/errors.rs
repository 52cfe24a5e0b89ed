//! The gate's errors, and the one map from error to exit code.

use std::path::PathBuf;

use crate::exit;

/// Something stopped a command before it could decide.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum GateError {
    /// The command line is wrong.
    #[error("{0}")]
    Usage(String),
    /// The spec does not parse or validate.
    #[error("{0}")]
    Spec(#[from] gate_specs::SpecErrors),
    /// The spec file is missing.
    #[error("{}", no_spec(path, searched.as_ref()))]
    NoSpec {
        /// Where it was looked for.
        path: PathBuf,
        /// The folders searched for a `gate.toml` when none was named: from
        /// the current directory up to this one.
        searched: Option<(PathBuf, PathBuf)>,
    },
    /// There is no ledger yet: nothing has been recorded where a command
    /// that reads the ledger looked.
    #[error(
        "no ledger yet at {at}: no run has been recorded here (`gate verify` records each run)"
    )]
    NoLedger {
        /// Where it would be.
        at: String,
    },
    /// The workspace cannot be used.
    #[error("workspace {}: {reason}", path.display())]
    Workspace {
        /// The workspace.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The base revision cannot be resolved.
    #[error("base `{base}`: {reason}")]
    Base {
        /// The revision.
        base: String,
        /// Why.
        reason: String,
    },
    /// Fingerprinting the workspace failed.
    #[error(transparent)]
    Snapshot(#[from] gate_evidence::SnapshotError),
    /// The harness could not run the plan.
    #[error(transparent)]
    Harness(#[from] gate_harness::HarnessError),
    /// A file the command writes could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The routing table cannot be read.
    #[error(transparent)]
    Routing(#[from] gate_review::routing::RoutingError),
    /// House rules cannot be read, are invalid, or cannot be written back.
    #[error(transparent)]
    Rules(#[from] gate_review::rules::RulesError),
    /// A signing or public key cannot be used.
    #[error(transparent)]
    Key(#[from] gate_evidence::keys::KeyError),
    /// A bundle cannot be written, read or opened.
    #[error(transparent)]
    Bundle(#[from] gate_evidence::bundle::BundleError),
    /// The ledger cannot be used.
    #[error(transparent)]
    Ledger(#[from] gate_evidence::ledger::LedgerError),
    /// A bundle store cannot be used, or what it holds is missing or altered.
    #[error(transparent)]
    Store(#[from] gate_evidence::store::StoreError),
    /// What was checked is bad: a bundle that does not verify, a cut ledger.
    #[error("{0}")]
    BadEvidence(String),

    /// Outcomes could not be harvested from git.
    #[error(transparent)]
    Harvest(#[from] crate::harvest::error::HarvestError),
    /// What was to be checked could not be reached.
    #[error("{0}")]
    Unavailable(String),
    /// What the gate was to sign or record could not be written as JSON.
    #[error("the {what} could not be written as JSON: {source}")]
    Encode {
        /// What it was.
        what: &'static str,
        /// Why.
        source: serde_json::Error,
    },
    /// A file to be created already exists.
    #[error("{} already exists; not overwriting it", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
}

/// Says where no spec was found, and what to do.
fn no_spec(path: &std::path::Path, searched: Option<&(PathBuf, PathBuf)>) -> String {
    match searched {
        Some((from, to)) if from != to => format!(
            "no spec: no gate.toml in {} or any folder above it up to {}: write one with \
             `gate init` (in the folder the workspace starts at), or pass --workspace DIR or \
             --spec FILE",
            from.display(),
            to.display()
        ),
        _ => format!(
            "no spec at {}: write one with `gate init` or pass --spec",
            path.display()
        ),
    }
}

impl GateError {
    /// What `what` could not be written as JSON, for `map_err`.
    pub(crate) fn encode(what: &'static str) -> impl FnOnce(serde_json::Error) -> Self {
        move |source| Self::Encode { what, source }
    }

    /// Writing a result to stdout failed.
    pub(crate) fn stdout(source: std::io::Error) -> Self {
        Self::Write {
            path: "stdout".into(),
            source,
        }
    }

    /// The documented exit code for this error.
    pub(crate) fn exit_code(&self) -> u8 {
        use gate_evidence::keys::KeyError;
        use gate_evidence::ledger::LedgerError;
        match self {
            Self::Key(KeyError::Write { .. } | KeyError::Random(_))
            | Self::Rules(gate_review::rules::RulesError::Write { .. }) => exit::INCOMPLETE,
            Self::Bundle(e) if e.is_bad_evidence() => exit::FAIL,
            Self::Store(e) if e.is_bad_evidence() => exit::FAIL,
            Self::Ledger(e) if e.is_unavailable() => exit::INCOMPLETE,
            Self::Ledger(LedgerError::Corrupt { .. } | LedgerError::NotContinuing { .. })
            | Self::BadEvidence(_) => exit::FAIL,
            Self::Usage(_)
            | Self::Spec(_)
            | Self::NoSpec { .. }
            | Self::NoLedger { .. }
            | Self::Workspace { .. }
            | Self::Base { .. }
            | Self::Harness(_)
            | Self::Routing(_)
            | Self::Rules(_)
            | Self::Exists { .. }
            | Self::Key(_)
            | Self::Ledger(_)
            | Self::Store(gate_evidence::store::StoreError::Invalid(_)) => exit::USAGE,
            Self::Bundle(_)
            | Self::Store(_)
            | Self::Snapshot(_)
            | Self::Write { .. }
            | Self::Encode { .. }
            | Self::Unavailable(_)
            | Self::Harvest(crate::harvest::error::HarvestError::Git(_)) => exit::INCOMPLETE,
            Self::Harvest(_) => exit::USAGE,
        }
    }
}
