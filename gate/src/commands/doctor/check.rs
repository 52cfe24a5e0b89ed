//! One line of `gate doctor`'s diagnosis: what was checked, how it came
//! out, and the fix.

use serde::Serialize;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Level {
    /// Works, or is not needed here.
    Ok,
    /// A run works, with less than it could (no review, no isolation, a
    /// pending migration).
    Warning,
    /// A run would fail or not do what is configured.
    Error,
}

impl Level {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warning => "warning",
            Self::Error => "error",
        }
    }
}

/// One line of the diagnosis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Check {
    /// What was checked: `spec`, `routing`, `provider.<name>`, `ledger`, …
    #[serde(rename = "check")]
    pub name: String,
    /// How it came out.
    pub level: Level,
    /// What was found.
    pub message: String,
    /// How to fix it (warnings and errors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    pub(super) fn ok(check: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            name: check.into(),
            level: Level::Ok,
            message: message.into(),
            fix: None,
        }
    }

    pub(super) fn warning(
        check: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self {
            name: check.into(),
            level: Level::Warning,
            message: message.into(),
            fix: Some(fix.into()),
        }
    }

    pub(super) fn error(
        check: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self {
            name: check.into(),
            level: Level::Error,
            message: message.into(),
            fix: Some(fix.into()),
        }
    }
}
