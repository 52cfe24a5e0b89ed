//! Bundle files: one signed envelope per run, `<dir>/<run-id>.dsse.json`.
//!
//! A bundle is written atomically and durably before its ledger row, so a
//! crash leaves either the whole file under its final name or nothing there.
//! Its digest is the sha256 of the stored bytes, never of re-serialised JSON.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use crate::dsse::{self, DsseError};
use crate::keys::{KeyId, PublicKey, SigningKey};
use crate::place::{self, Existing};
use crate::statement::{PAYLOAD_TYPE, Statement, StatementError};

/// The file name suffix of a bundle.
pub const SUFFIX: &str = ".dsse.json";

/// A bundle could not be written, read or opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// A run id that cannot be a file name.
    #[error("run id {0:?} cannot name a bundle file")]
    InvalidRunId(String),
    /// A bundle for this run already exists.
    #[error("bundle {} already exists", path.display())]
    Exists {
        /// The existing file.
        path: PathBuf,
    },
    /// Writing failed.
    #[error("cannot write bundle {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Reading failed.
    #[error("cannot read bundle {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The envelope does not verify.
    #[error(transparent)]
    Envelope(#[from] DsseError),
    /// The verified payload is not an in-toto statement.
    #[error(transparent)]
    Statement(#[from] StatementError),
}

impl BundleError {
    /// True when the bundle is bad (exit 1); false when it could not be
    /// checked or written (exit 4 or 2, the caller's call).
    pub fn is_bad_evidence(&self) -> bool {
        matches!(self, Self::Envelope(_) | Self::Statement(_))
    }
}

/// A bundle on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBundle {
    /// Where it is.
    pub path: PathBuf,
    /// Lowercase hex sha256 of the exact stored bytes.
    pub sha256: String,
}

/// A bundle whose signature verified and whose payload parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenedBundle {
    /// The statement inside.
    pub statement: Statement,
    /// The trusted key that signed it.
    pub keyid: KeyId,
    /// Lowercase hex sha256 of the envelope bytes.
    pub sha256: String,
}

/// Lowercase hex sha256 of bundle bytes: the bundle's digest.
pub fn digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `<dir>/<run-id>.dsse.json`; fails for a run id with a path separator,
/// a leading dot, or characters outside `[A-Za-z0-9._-]`.
pub fn path_for(dir: &Path, run_id: &str) -> Result<PathBuf, BundleError> {
    let ok = !run_id.is_empty()
        && !run_id.starts_with('.')
        && run_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !ok {
        return Err(BundleError::InvalidRunId(run_id.to_owned()));
    }
    Ok(dir.join(format!("{run_id}{SUFFIX}")))
}

/// Signs a statement: the envelope bytes to store.
pub fn seal(statement: &Statement, key: &SigningKey) -> Vec<u8> {
    dsse::sign(PAYLOAD_TYPE, &statement.to_payload(), key)
}

/// Verifies envelope bytes against `trusted` and parses the statement inside.
pub fn open(envelope: &[u8], trusted: &[PublicKey]) -> Result<OpenedBundle, BundleError> {
    let verified = dsse::verify(envelope, PAYLOAD_TYPE, trusted)?;
    let statement = Statement::from_payload(&verified.payload)?;
    Ok(OpenedBundle {
        statement,
        keyid: verified.keyid,
        sha256: digest(envelope),
    })
}

/// Writes `envelope` to `<dir>/<run-id>.dsse.json` durably (temporary file
/// in `dir`, fsync, link into place, fsync `dir`); never replaces an
/// existing bundle. Creates `dir` if needed, following no symbolic link
/// below `anchor` (see [`crate::place`]).
pub fn write(
    dir: &Path,
    anchor: &Path,
    run_id: &str,
    envelope: &[u8],
) -> Result<StoredBundle, BundleError> {
    let path = path_for(dir, run_id)?;
    let write_err = |source| BundleError::Write {
        path: path.clone(),
        source,
    };
    place::write(anchor, &path, envelope, 0o644, Existing::Keep).map_err(|source| {
        if source.kind() == io::ErrorKind::AlreadyExists {
            BundleError::Exists { path: path.clone() }
        } else {
            write_err(source)
        }
    })?;
    Ok(StoredBundle {
        sha256: digest(envelope),
        path,
    })
}

/// Reads a bundle's exact bytes.
pub fn read(path: &Path) -> Result<Vec<u8>, BundleError> {
    fs::read(path).map_err(|source| BundleError::Read {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statement::Subject;

    fn statement() -> Statement {
        Statement::new(
            vec![Subject::from_bytes("a.txt", b"a")],
            "https://example.com/run/v1",
            serde_json::json!({"n": 1}),
        )
    }

    #[test]
    fn write_read_open_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let bundles = dir.path().join("bundles");
        let key = SigningKey::from_seed(&[5; 32]);
        let envelope = seal(&statement(), &key);
        let stored = write(&bundles, &bundles, "0190-abc", &envelope).unwrap();
        assert_eq!(stored.path, bundles.join("0190-abc.dsse.json"));
        let bytes = read(&stored.path).unwrap();
        assert_eq!(bytes, envelope);
        assert_eq!(stored.sha256, hex::encode(Sha256::digest(&bytes)));
        let opened = open(&bytes, &[key.public_key().clone()]).unwrap();
        assert_eq!(opened.statement, statement());
        assert_eq!(&opened.keyid, key.keyid());
        assert_eq!(opened.sha256, stored.sha256);
        assert_eq!(
            fs::read_dir(&bundles).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[test]
    fn never_replaces_a_bundle() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), dir.path(), "r1", b"first").unwrap();
        let err = write(dir.path(), dir.path(), "r1", b"second").unwrap_err();
        assert!(matches!(err, BundleError::Exists { .. }), "{err}");
        assert_eq!(read(&dir.path().join("r1.dsse.json")).unwrap(), b"first");
    }

    #[test]
    fn digest_is_of_stored_bytes_not_reserialised_json() {
        let key = SigningKey::from_seed(&[5; 32]);
        let envelope = seal(&statement(), &key);
        let value: serde_json::Value = serde_json::from_slice(&envelope).unwrap();
        let pretty = serde_json::to_vec_pretty(&value).unwrap();
        let a = open(&envelope, &[key.public_key().clone()]).unwrap();
        let b = open(&pretty, &[key.public_key().clone()]).unwrap();
        assert_eq!(a.statement, b.statement);
        assert_ne!(a.sha256, b.sha256);
        assert_eq!(b.sha256, digest(&pretty));
    }

    #[test]
    fn run_ids_that_are_not_file_names_are_refused() {
        let dir = Path::new("/tmp");
        for bad in ["", "../x", "a/b", ".hidden", "a b", "a\0b"] {
            assert!(
                matches!(path_for(dir, bad), Err(BundleError::InvalidRunId(_))),
                "{bad:?}"
            );
        }
        assert!(path_for(dir, "01970a3c-7e1f-7b6c-9f00-1a2b3c4d5e6f").is_ok());
    }

    #[test]
    fn classification() {
        let key = SigningKey::from_seed(&[5; 32]);
        let other = SigningKey::from_seed(&[6; 32]);
        let err = open(&seal(&statement(), &key), &[other.public_key().clone()]).unwrap_err();
        assert!(err.is_bad_evidence());
        let err = read(Path::new("/nonexistent/x.dsse.json")).unwrap_err();
        assert!(!err.is_bad_evidence());
    }
}
