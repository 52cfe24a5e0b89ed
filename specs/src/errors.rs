//! Everything that can be wrong with a spec, located in its file.

use std::fmt;
use std::path::{Path, PathBuf};

/// One problem in a spec, with where it is.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {kind}", self.place())]
pub struct SpecError {
    /// The spec file.
    pub file: PathBuf,
    /// 1-based line; 0 when the problem is the file as a whole.
    pub line: usize,
    /// 1-based column; 0 when the problem is the file as a whole.
    pub column: usize,
    /// What is wrong.
    pub kind: SpecErrorKind,
}

impl SpecError {
    /// A located error.
    pub fn new(file: &Path, line: usize, column: usize, kind: SpecErrorKind) -> Self {
        Self {
            file: file.to_path_buf(),
            line,
            column,
            kind,
        }
    }

    /// `file:line:column`, or the file alone for a problem with the whole
    /// file (line 0), which has no place in it to point at.
    fn place(&self) -> String {
        if self.line == 0 {
            self.file.display().to_string()
        } else {
            format!("{}:{}:{}", self.file.display(), self.line, self.column)
        }
    }
}

/// What is wrong with a spec.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecErrorKind {
    /// The file could not be read.
    #[error("cannot read the spec: {0}")]
    Read(String),
    /// Not UTF-8, which TOML and JSON both require; the position is the
    /// first byte that is not.
    #[error("not UTF-8 (byte 0x{byte:02X}): TOML and JSON files must be UTF-8 text")]
    NotUtf8 {
        /// The first byte that is not UTF-8.
        byte: u8,
    },
    /// Not valid TOML or JSON, or a value of the wrong type.
    #[error("{0}")]
    Syntax(String),
    /// A key the schema does not have.
    #[error("unknown key `{key}`")]
    UnknownKey {
        /// The key as written.
        key: String,
    },
    /// A required key is absent.
    #[error("missing key `{0}`")]
    MissingKey(String),
    /// Two items share an id.
    #[error("duplicate id `{0}`")]
    DuplicateId(String),
    /// An id that is empty or holds characters outside `[A-Za-z0-9._-]`.
    #[error("invalid id `{0}`: use letters, digits, `.`, `_` and `-`")]
    InvalidId(String),
    /// `after` names nothing that exists (or the wrong kind of thing).
    #[error("`after` names `{name}`, which is not {expected}")]
    UnknownAfter {
        /// The name as written.
        name: String,
        /// "a check" or "a task".
        expected: &'static str,
    },
    /// The task graph or the check graph has a cycle; the path closes on itself.
    #[error("{graph} graph has a cycle: {}", path.join(" -> "))]
    Cycle {
        /// "task" or "check".
        graph: &'static str,
        /// e.g. `["cart", "prices", "cart"]`.
        path: Vec<String>,
    },
    /// A glob that does not compile.
    #[error("glob `{glob}` does not compile: {reason}")]
    BadGlob {
        /// The glob as written.
        glob: String,
        /// Why.
        reason: String,
    },
    /// A path or glob that could reach outside the workspace.
    #[error("`{0}` reaches outside the workspace")]
    PathEscape(String),
    /// A criterion with both `run` and `judge`.
    #[error("criterion `{0}` has both `run` and `judge`; give exactly one")]
    RunAndJudge(String),
    /// A criterion with neither `run` nor `judge`.
    #[error("criterion `{0}` has neither `run` nor `judge`; give exactly one")]
    NoDecider(String),
    /// `judge` set to something other than `"model"`.
    #[error("`judge` must be \"model\", not \"{0}\"")]
    BadJudge(String),
    /// `tests` with both or neither of `report` and `run`.
    #[error("`tests` of task `{0}` needs exactly one of `report` or `run`")]
    BadTests(String),
    /// `starts` with more than one readiness probe.
    #[error("`starts` of check `{0}` names more than one readiness probe")]
    ManyProbes(String),
    /// A value outside its allowed range.
    #[error("`{key}` {reason}")]
    OutOfRange {
        /// The key.
        key: String,
        /// e.g. "must be between 0 and 1".
        reason: String,
    },
    /// A command that is empty.
    #[error("`run` of `{0}` is empty")]
    EmptyCommand(String),
    /// An id in the namespace the gate keeps for itself (`builtin.*`).
    #[error("id `{0}` is reserved: `builtin.*` names the gate's built-in checks")]
    ReservedId(String),
    /// A readiness probe that cannot work as written.
    #[error("`{key}` {reason}")]
    BadProbe {
        /// `ready_tcp`, `ready_http` or `ready_log`.
        key: String,
        /// e.g. "must be `host:port` with a port from 1 to 65535, not `localhost`".
        reason: String,
    },
    /// A key of `[policy.role_timeout_s]` that names no role.
    #[error(
        "`role_timeout_s` names `{0}`, which is not a role (quality, security, performance, docs, integration, judge, coordinator, rules)"
    )]
    UnknownRole(String),
    /// A value that must not be empty, such as a `tests.report` path.
    #[error("`{0}` is empty")]
    EmptyValue(String),
    /// A page URL that is not on the workspace's own server.
    #[error(
        "`url` must be an `http://` or `https://` URL on the workspace's own server \
         (127.0.0.1, localhost or [::1]), not `{0}`"
    )]
    PageUrl(String),
    /// A page with no `files` or no `after`.
    #[error("page `{page}` has an empty `{key}`: {hint}")]
    PageNeeds {
        /// The page's id.
        page: String,
        /// `files` or `after`.
        key: &'static str,
        /// What to put there.
        hint: &'static str,
    },
    /// A header or cookie name that cannot be sent.
    #[error("`{table}` names `{name}`, which is not a valid {what} name")]
    BadName {
        /// `headers` or `cookies`.
        table: &'static str,
        /// The name as written.
        name: String,
        /// `header` or `cookie`.
        what: &'static str,
    },
    /// A value meant to name an environment variable that cannot be one.
    #[error(
        "`{key}` must name the environment variable holding the value (letters, digits and \
         `_`, not starting with a digit), not `{name}`"
    )]
    BadEnvName {
        /// e.g. `headers.Authorization`.
        key: String,
        /// The value as written.
        name: String,
    },
}

/// All problems found in one spec, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecErrors(pub Vec<SpecError>);

impl SpecErrors {
    /// The problems, in file order.
    pub fn iter(&self) -> impl Iterator<Item = &SpecError> {
        self.0.iter()
    }
}

impl From<SpecError> for SpecErrors {
    fn from(e: SpecError) -> Self {
        Self(vec![e])
    }
}

impl fmt::Display for SpecErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SpecErrors {}
