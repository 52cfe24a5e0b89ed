//! in-toto Statement v1: what a bundle's payload says, and about which files.
//!
//! The gate supplies the predicate; this module supplies the statement
//! around it, the subjects (workspace files with sha256 and blake3 digests),
//! and the check of subjects against a workspace on disk.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// The `_type` of an in-toto Statement v1.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The DSSE `payloadType` of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";

/// A statement or subject could not be built or parsed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatementError {
    /// A subject name that is not a plain workspace-relative path.
    #[error("subject name {name:?} is not allowed: {reason}")]
    InvalidName {
        /// The name.
        name: String,
        /// Why (absolute, `..`, leaves the workspace through a link, …).
        reason: &'static str,
    },
    /// A subject file could not be read.
    #[error("cannot read subject {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The payload is not an in-toto statement.
    #[error("payload is not an in-toto statement: {0}")]
    Json(String),
    /// The payload is a statement of another type.
    #[error("payload _type is {found:?}, expected {STATEMENT_TYPE:?}")]
    WrongType {
        /// The `_type` found.
        found: String,
    },
}

/// The digests of one subject, lowercase hex.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DigestSet {
    /// sha256, what third-party tools recognise.
    pub sha256: String,
    /// blake3, what the gate fingerprints the workspace with.
    pub blake3: String,
}

/// One file the statement is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    /// Workspace-relative `/`-separated path.
    pub name: String,
    /// Its digests.
    pub digest: DigestSet,
}

/// An in-toto Statement v1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    /// Always [`STATEMENT_TYPE`].
    #[serde(rename = "_type")]
    pub statement_type: String,
    /// The files the predicate is about.
    pub subject: Vec<Subject>,
    /// The predicate's type URI.
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    /// The predicate, supplied by the gate.
    pub predicate: serde_json::Value,
}

impl Statement {
    /// A v1 statement about `subject`.
    pub fn new(
        subject: Vec<Subject>,
        predicate_type: impl Into<String>,
        predicate: serde_json::Value,
    ) -> Self {
        Self {
            statement_type: STATEMENT_TYPE.to_owned(),
            subject,
            predicate_type: predicate_type.into(),
            predicate,
        }
    }

    /// The payload bytes to sign (compact JSON).
    pub fn to_payload(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a statement of JSON values always serialises")
    }

    /// Parses a (verified) payload back into a statement, checking `_type`.
    pub fn from_payload(payload: &[u8]) -> Result<Self, StatementError> {
        let statement: Self =
            serde_json::from_slice(payload).map_err(|e| StatementError::Json(e.to_string()))?;
        if statement.statement_type != STATEMENT_TYPE {
            return Err(StatementError::WrongType {
                found: statement.statement_type,
            });
        }
        Ok(statement)
    }

    /// Compares every subject's digests with the file of that name under
    /// `root`; an empty list means the workspace matches. Names that would
    /// leave the workspace are reported, never read.
    pub fn check_workspace(&self, root: &Path) -> Vec<SubjectProblem> {
        let mut problems: Vec<SubjectProblem> = self
            .subject
            .par_iter()
            .filter_map(|s| check_subject(root, s))
            .collect();
        problems.sort_by(|a, b| a.name().cmp(b.name()));
        problems
    }
}

/// A subject that does not match the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SubjectProblem {
    /// The file is gone.
    Missing {
        /// The subject name.
        name: String,
    },
    /// The file's contents changed.
    Mismatch {
        /// The subject name.
        name: String,
        /// `sha256` or `blake3`.
        algorithm: &'static str,
        /// The digest in the statement.
        expected: String,
        /// The digest of the file now.
        actual: String,
    },
    /// The name is absolute, contains `..`, or leads out of the workspace.
    InvalidName {
        /// The subject name.
        name: String,
        /// Why.
        reason: &'static str,
    },
    /// The file exists but could not be read: nothing can be said about it.
    Unreadable {
        /// The subject name.
        name: String,
        /// The error.
        error: String,
    },
}

impl SubjectProblem {
    /// The subject the problem is about.
    pub fn name(&self) -> &str {
        match self {
            Self::Missing { name }
            | Self::Mismatch { name, .. }
            | Self::InvalidName { name, .. }
            | Self::Unreadable { name, .. } => name,
        }
    }

    /// True when the problem is evidence of change (exit 1), false when the
    /// file could not be checked (exit 4).
    pub fn is_mismatch(&self) -> bool {
        !matches!(self, Self::Unreadable { .. })
    }
}

impl fmt::Display for SubjectProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing { name } => write!(f, "{name}: file is missing"),
            Self::Mismatch {
                name,
                algorithm,
                expected,
                actual,
            } => write!(
                f,
                "{name}: {algorithm} is {actual}, the bundle says {expected}"
            ),
            Self::InvalidName { name, reason } => {
                write!(f, "{name}: subject name not allowed: {reason}")
            }
            Self::Unreadable { name, error } => write!(f, "{name}: cannot read: {error}"),
        }
    }
}

fn check_subject(root: &Path, subject: &Subject) -> Option<SubjectProblem> {
    let name = subject.name.clone();
    let digest = match digest_file(root, &subject.name) {
        Ok(d) => d,
        Err(StatementError::InvalidName { reason, .. }) => {
            return Some(SubjectProblem::InvalidName { name, reason });
        }
        Err(StatementError::Read { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Some(SubjectProblem::Missing { name });
        }
        Err(e) => {
            return Some(SubjectProblem::Unreadable {
                name,
                error: e.to_string(),
            });
        }
    };
    let pairs = [
        ("sha256", &subject.digest.sha256, digest.sha256),
        ("blake3", &subject.digest.blake3, digest.blake3),
    ];
    pairs.into_iter().find_map(|(algorithm, expected, actual)| {
        (!expected.eq_ignore_ascii_case(&actual)).then(|| SubjectProblem::Mismatch {
            name: name.clone(),
            algorithm,
            expected: expected.clone(),
            actual,
        })
    })
}

impl Subject {
    /// The subject for `name` (workspace-relative, `/`-separated) under
    /// `root`, hashing the file once, streamed, for both digests.
    pub fn from_file(root: &Path, name: &str) -> Result<Self, StatementError> {
        Ok(Self {
            name: name.to_owned(),
            digest: digest_file(root, name)?,
        })
    }

    /// Subjects for many files, hashed in parallel, in the order given.
    pub fn from_files<S: AsRef<str> + Sync>(
        root: &Path,
        names: &[S],
    ) -> Result<Vec<Self>, StatementError> {
        names
            .par_iter()
            .map(|n| Self::from_file(root, n.as_ref()))
            .collect()
    }

    /// The subject for bytes held in memory (e.g. text shown to a model).
    pub fn from_bytes(name: impl Into<String>, bytes: &[u8]) -> Self {
        Self {
            name: name.into(),
            digest: DigestSet {
                sha256: hex::encode(Sha256::digest(bytes)),
                blake3: blake3::hash(bytes).to_hex().to_string(),
            },
        }
    }
}

/// Resolves a subject name inside `root`, refusing anything that could leave it.
fn resolve(root: &Path, name: &str) -> Result<PathBuf, StatementError> {
    let invalid = |reason| StatementError::InvalidName {
        name: name.to_owned(),
        reason,
    };
    if name.is_empty() {
        return Err(invalid("empty"));
    }
    let rel = Path::new(name);
    for c in rel.components() {
        match c {
            Component::Normal(_) => {}
            Component::ParentDir => return Err(invalid("contains `..`")),
            Component::RootDir | Component::Prefix(_) => return Err(invalid("absolute path")),
            Component::CurDir => return Err(invalid("contains `.`")),
        }
    }
    // A link inside the workspace may point anywhere: follow it only if the
    // file it reaches is still inside.
    gate_specs::within(root, name).map_err(|source| {
        // `within`'s own refusal carries its message; the system's EACCES
        // (same kind) carries none and is a read error like any other.
        if source.kind() == std::io::ErrorKind::PermissionDenied && source.get_ref().is_some() {
            invalid("leads outside the workspace through a symbolic link")
        } else {
            StatementError::Read {
                path: root.join(rel),
                source,
            }
        }
    })
}

fn digest_file(root: &Path, name: &str) -> Result<DigestSet, StatementError> {
    let path = resolve(root, name)?;
    let read_err = |source| StatementError::Read {
        path: path.clone(),
        source,
    };
    let mut file = File::open(&path).map_err(read_err)?;
    let mut sha = Sha256::new();
    let mut b3 = blake3::Hasher::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_err(e)),
        };
        sha.update(&buf[..n]);
        b3.update(&buf[..n]);
    }
    Ok(DigestSet {
        sha256: hex::encode(sha.finalize()),
        blake3: b3.finalize().to_hex().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("src")).unwrap();
        fs::write(dir.path().join("src/a.rs"), b"fn a() {}\n").unwrap();
        fs::write(dir.path().join("b.txt"), b"").unwrap();
        dir
    }

    #[test]
    fn digests_match_one_shot_hashes_across_buffer_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        for len in [0usize, 1, 65_535, 65_536, 65_537, 200_000] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            fs::write(dir.path().join("f"), &bytes).unwrap();
            let s = Subject::from_file(dir.path(), "f").unwrap();
            assert_eq!(s, Subject::from_bytes("f", &bytes), "len {len}");
            assert_eq!(s.digest.sha256, hex::encode(Sha256::digest(&bytes)));
            assert_eq!(s.digest.blake3, blake3::hash(&bytes).to_hex().as_str());
        }
    }

    #[test]
    fn known_digests_of_empty_file() {
        let ws = workspace();
        let s = Subject::from_file(ws.path(), "b.txt").unwrap();
        assert_eq!(
            s.digest.sha256,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            s.digest.blake3,
            "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        );
    }

    #[test]
    fn names_that_escape_are_rejected_without_reading() {
        let ws = workspace();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), b"x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), ws.path().join("link")).unwrap();
        std::os::unix::fs::symlink("src/a.rs", ws.path().join("inner")).unwrap();
        for name in ["../x", "src/../../x", "/etc/passwd", "", "./b.txt", "link"] {
            let err = Subject::from_file(ws.path(), name).unwrap_err();
            assert!(
                matches!(err, StatementError::InvalidName { .. }),
                "{name}: {err}"
            );
        }
        // A link that stays inside is followed, as sha256sum would.
        let inner = Subject::from_file(ws.path(), "inner").unwrap();
        assert_eq!(
            inner.digest,
            Subject::from_file(ws.path(), "src/a.rs").unwrap().digest
        );
    }

    #[test]
    fn statement_round_trips_and_checks_type() {
        let ws = workspace();
        let subjects = Subject::from_files(ws.path(), &["src/a.rs", "b.txt"]).unwrap();
        assert_eq!(subjects[0].name, "src/a.rs");
        let st = Statement::new(
            subjects,
            "https://example.com/run/v1",
            serde_json::json!({"verdict": "pass"}),
        );
        let payload = st.to_payload();
        assert!(
            payload.starts_with(b"{\"_type\":\"https://in-toto.io/Statement/v1\",\"subject\":[")
        );
        assert_eq!(Statement::from_payload(&payload).unwrap(), st);
        let other = String::from_utf8(payload)
            .unwrap()
            .replace("Statement/v1", "Statement/v0.1");
        assert!(matches!(
            Statement::from_payload(other.as_bytes()),
            Err(StatementError::WrongType { .. })
        ));
        assert!(matches!(
            Statement::from_payload(b"{}"),
            Err(StatementError::Json(_))
        ));
    }

    #[test]
    fn check_workspace_reports_each_problem_by_name() {
        let ws = workspace();
        let mut subjects = Subject::from_files(ws.path(), &["src/a.rs", "b.txt"]).unwrap();
        subjects.push(Subject::from_bytes("../escape", b""));
        subjects.push(Subject::from_bytes("gone.txt", b""));
        let st = Statement::new(subjects, "t", serde_json::Value::Null);
        fs::write(ws.path().join("src/a.rs"), b"fn a() { changed }\n").unwrap();
        let problems = st.check_workspace(ws.path());
        let names: Vec<_> = problems.iter().map(SubjectProblem::name).collect();
        assert_eq!(names, ["../escape", "gone.txt", "src/a.rs"]);
        assert!(matches!(problems[0], SubjectProblem::InvalidName { .. }));
        assert!(matches!(problems[1], SubjectProblem::Missing { .. }));
        assert!(matches!(
            problems[2],
            SubjectProblem::Mismatch {
                algorithm: "sha256",
                ..
            }
        ));
        assert!(problems.iter().all(SubjectProblem::is_mismatch));
        assert!(problems[2].to_string().starts_with("src/a.rs: sha256 is "));
        fs::write(ws.path().join("src/a.rs"), b"fn a() {}\n").unwrap();
        fs::write(ws.path().join("gone.txt"), b"").unwrap();
        assert_eq!(
            st.check_workspace(ws.path()).len(),
            1,
            "only the bad name is left"
        );
    }
}
