//! Where bundles live: a local directory (the default), S3-compatible
//! object storage, or the ledger itself, behind one boundary.
//!
//! A ledger row's `bundle_path` is a [`BundleRef`]: a file path
//! (`<dir>/<run-id>.dsse.json`, named for the humans who look in the
//! directory), an object URL (`s3://bucket/prefix/<sha256>.dsse.json`,
//! named by its content), or `ledger:sha256:<hex>` (kept in the ledger with
//! its row, the default when the ledger is PostgreSQL). A bundle is read
//! wherever its row says it is, whichever store new bundles go to, so a
//! ledger that moved to another store keeps its older rows readable.
//!
//! A bundle kept in the ledger is written by the ledger's append, in the
//! row's own transaction (so it is durable exactly when its row is):
//! [`BundleStore::put`] only names it. It is read through the ledger the
//! store was given ([`BundleStore::with_ledger`]), opened on first use.
//!
//! [`BundleStore::put`] is put-if-absent: a bundle is never replaced, and
//! putting the same bytes again is a success (an import after a run killed
//! between its upload and its row). [`BundleStore::get`] reports an object
//! whose bytes no longer hash to its name as [`StoreError::Tampered`].
//!
//! Errors say which of three things happened, because the gate's exit
//! codes differ: the bundle is missing or altered (bad evidence, exit 1),
//! or the store could not be reached (not checked, exit 4).

mod error;
mod reference;
mod s3;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::bundle::{self, BundleError, SUFFIX};
use crate::ledger::{Ledger, Location, SharedLedger};

pub use error::StoreError;
pub use reference::BundleRef;
pub use s3::AwsSettings;

use self::reference::S3_SCHEME;

/// Where new bundles go (`GATE_BUNDLE_STORE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A local directory; bundles named `<run-id>.dsse.json`.
    Dir(PathBuf),
    /// A bucket, under a key prefix; objects named `<sha256>.dsse.json`.
    S3 {
        /// The bucket.
        bucket: String,
        /// The key prefix, without leading or trailing slashes (may be empty).
        prefix: String,
    },
    /// The ledger itself: the envelope goes in with its row.
    Ledger,
}

impl Target {
    /// Parses a store's name: `s3://bucket[/prefix]`, else a directory
    /// (made absolute against `base`).
    pub fn parse(text: &str, base: &Path) -> Result<Self, StoreError> {
        let text = text.trim();
        if let Some(rest) = text.strip_prefix(S3_SCHEME) {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(StoreError::Invalid(format!(
                    "{text} names no bucket: expected s3://bucket/prefix"
                )));
            }
            return Ok(Self::S3 {
                bucket: bucket.to_owned(),
                prefix: prefix.trim_matches('/').to_owned(),
            });
        }
        if let Some((scheme, _)) = text.split_once("://") {
            return Err(StoreError::Invalid(format!(
                "{text}: the bundle store is s3://bucket/prefix or a directory, not {scheme}://"
            )));
        }
        if text.is_empty() {
            return Err(StoreError::Invalid(
                "the bundle store is empty: give s3://bucket/prefix or a directory".to_owned(),
            ));
        }
        Ok(Self::Dir(base.join(text)))
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Dir(dir) => write!(f, "{}", dir.display()),
            Self::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "{S3_SCHEME}{bucket}"),
            Self::S3 { bucket, prefix } => write!(f, "{S3_SCHEME}{bucket}/{prefix}"),
            Self::Ledger => write!(f, "the ledger"),
        }
    }
}

/// Where bundles are put, and how every kind of [`BundleRef`] is read.
#[derive(Debug)]
pub struct BundleStore {
    target: Target,
    /// The folder a directory target is trusted from (see [`crate::place`]).
    anchor: Option<PathBuf>,
    objects: s3::Objects,
    ledger: Option<LedgerSource>,
}

/// The ledger kept bundles are read from, opened on first use.
#[derive(Debug)]
struct LedgerSource {
    location: Location,
    opened: OnceLock<Result<SharedLedger, String>>,
}

impl BundleStore {
    /// A store putting bundles at `target`; `aws` configures access to any
    /// bucket (the target's, and those older rows name).
    pub fn new(target: Target, aws: AwsSettings) -> Self {
        Self {
            target,
            anchor: None,
            objects: s3::Objects::new(aws),
            ledger: None,
        }
    }

    /// Reads bundles kept in a ledger from the ledger at `location` (the
    /// one their rows are in), opened when one is first read.
    #[must_use]
    pub fn with_ledger(mut self, location: Location) -> Self {
        self.ledger = Some(LedgerSource {
            location,
            opened: OnceLock::new(),
        });
        self
    }

    /// Writes into a directory target following no symbolic link below
    /// `root` (by default the target's own folder is trusted as given).
    #[must_use]
    pub fn anchored(mut self, root: impl Into<PathBuf>) -> Self {
        self.anchor = Some(root.into());
        self
    }

    /// A directory store with no object access configured beyond defaults.
    pub fn dir(dir: impl Into<PathBuf>) -> Self {
        Self::new(Target::Dir(dir.into()), AwsSettings::default())
    }

    /// Where new bundles go.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// True when new bundles go to this machine's disk (nothing to spool).
    /// A bundle kept in the ledger is durable only once its row is, so it
    /// waits in the spool like one bound for a bucket.
    pub fn is_local(&self) -> bool {
        matches!(self.target, Target::Dir(_))
    }

    /// Stores `envelope`, the bundle of `run_id`, unless it is there
    /// already, and returns where it is. Returns only once the bundle is
    /// durable (fsynced, or acknowledged by the object store). Never
    /// replaces a bundle: the same bytes again are a success, other bytes
    /// under the same name an error. For the ledger target nothing is
    /// written here: the returned reference, as the row's `bundle_path`,
    /// makes the ledger's append keep the envelope with the row.
    pub fn put(&self, run_id: &str, envelope: &[u8]) -> Result<BundleRef, StoreError> {
        match &self.target {
            Target::Dir(dir) => {
                put_file(dir, self.anchor.as_deref().unwrap_or(dir), run_id, envelope)
            }
            Target::Ledger => Ok(BundleRef::Ledger {
                sha256: bundle::digest(envelope),
            }),
            Target::S3 { bucket, prefix } => {
                let name = format!("{}{SUFFIX}", bundle::digest(envelope));
                self.put_object(bucket, prefix, &name, envelope)
            }
        }
    }

    /// The bytes at `at`, exactly as stored, checked against the sha256
    /// its name records (an object's); a file is checked by its caller
    /// against the ledger row.
    pub fn get(&self, at: &BundleRef) -> Result<Vec<u8>, StoreError> {
        let bytes = self.fetch(at)?;
        check_named(at, &bytes)?;
        Ok(bytes)
    }

    /// The bytes at `at`, exactly as stored, unchecked (a verifier that
    /// compares them with the ledger row itself).
    pub fn fetch(&self, at: &BundleRef) -> Result<Vec<u8>, StoreError> {
        match at {
            BundleRef::File(path) => read_file(path),
            BundleRef::Object { .. } => self.objects.get(at),
            BundleRef::Ledger { sha256 } => self.read_from_ledger(at, sha256),
        }
    }

    /// A bundle kept in the ledger: none there is missing, a ledger that
    /// cannot be read is unavailable.
    fn read_from_ledger(&self, at: &BundleRef, sha256: &str) -> Result<Vec<u8>, StoreError> {
        let unavailable = |reason: String| StoreError::Unavailable {
            at: at.to_string(),
            reason,
        };
        let source = self
            .ledger
            .as_ref()
            .ok_or_else(|| unavailable("no ledger to read it from".to_owned()))?;
        let ledger = source
            .opened
            .get_or_init(|| {
                Ledger::open(source.location.clone())
                    .map(Ledger::into_shared)
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| unavailable(e.clone()))?;
        match ledger.bundle(sha256) {
            Ok(Some(bytes)) => Ok(bytes),
            Ok(None) => Err(StoreError::Missing { at: at.to_string() }),
            Err(e) => Err(unavailable(e.to_string())),
        }
    }
}

/// The folder (of a directory store) and the key prefix (below a bucket's)
/// that kept review requests go in.
pub const REQUESTS: &str = "requests";

/// The file name suffix of a kept review request.
pub const REQUEST_SUFFIX: &str = ".request.json";

impl BundleStore {
    /// Keeps `bytes`, a run's review request as sent, beside the bundles
    /// and named by their sha256: `<dir>/requests/<sha256>.request.json`,
    /// `s3://bucket/prefix/requests/<sha256>.request.json`, or in the ledger
    /// (`ledger:sha256:<hex>`, in its table of kept bundles). Put-if-absent
    /// like a bundle; durable when this returns.
    pub fn put_request(&self, bytes: &[u8]) -> Result<BundleRef, StoreError> {
        let sha = bundle::digest(bytes);
        let name = format!("{sha}{REQUEST_SUFFIX}");
        match &self.target {
            Target::Dir(dir) => {
                let path = dir.join(REQUESTS).join(&name);
                let anchor = self.anchor.as_deref().unwrap_or(dir);
                match crate::place::create_file(anchor, &path, bytes) {
                    Ok(()) => Ok(BundleRef::File(path)),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        already_there(path, bytes)
                    }
                    Err(e) => Err(StoreError::Unavailable {
                        at: path.display().to_string(),
                        reason: e.to_string(),
                    }),
                }
            }
            Target::S3 { bucket, prefix } => {
                self.put_object(bucket, prefix, &format!("{REQUESTS}/{name}"), bytes)
            }
            Target::Ledger => {
                let at = BundleRef::Ledger { sha256: sha };
                let unavailable = |reason: String| StoreError::Unavailable {
                    at: at.to_string(),
                    reason,
                };
                let source = self
                    .ledger
                    .as_ref()
                    .ok_or_else(|| unavailable("no ledger to keep it in".to_owned()))?;
                Ledger::open(source.location.clone())
                    .and_then(|mut ledger| ledger.put_bundle(bytes))
                    .map_err(|e| unavailable(e.to_string()))?;
                Ok(at)
            }
        }
    }

    /// Puts `bytes` as `<prefix>/<name>` in `bucket`, unless they are there.
    fn put_object(
        &self,
        bucket: &str,
        prefix: &str,
        name: &str,
        bytes: &[u8],
    ) -> Result<BundleRef, StoreError> {
        let key = if prefix.is_empty() {
            name.to_owned()
        } else {
            format!("{prefix}/{name}")
        };
        let at = BundleRef::Object {
            bucket: bucket.to_owned(),
            key,
        };
        self.objects.put_if_absent(&at, bytes)?;
        Ok(at)
    }

    /// Removes the review requests a directory store kept that were last
    /// written before `before`, and returns how many; a bucket or the
    /// ledger is left as it is (a bucket's lifecycle rule keeps its own).
    pub fn sweep_requests(&self, before: std::time::SystemTime) -> Result<usize, StoreError> {
        let Target::Dir(dir) = &self.target else {
            return Ok(0);
        };
        let folder = dir.join(REQUESTS);
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => {
                return Err(StoreError::Unavailable {
                    at: folder.display().to_string(),
                    reason: e.to_string(),
                });
            }
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let is_request = name.to_str().is_some_and(|n| n.ends_with(REQUEST_SUFFIX));
            // Only plain files of ours: a link or a folder planted here is left alone.
            let old = entry
                .metadata()
                .is_ok_and(|m| m.file_type().is_file() && m.modified().is_ok_and(|t| t < before));
            if is_request && old && std::fs::remove_file(entry.path()).is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
    }
}

/// [`StoreError::Tampered`] when `bytes` do not hash to the sha256 `at`'s name records.
pub fn check_named(at: &BundleRef, bytes: &[u8]) -> Result<(), StoreError> {
    match at.named_sha256() {
        Some(named) => {
            let actual = bundle::digest(bytes);
            if actual == named {
                Ok(())
            } else {
                Err(StoreError::Tampered {
                    at: at.to_string(),
                    expected: named.to_owned(),
                    actual,
                })
            }
        }
        None => Ok(()),
    }
}

fn put_file(
    dir: &Path,
    anchor: &Path,
    run_id: &str,
    envelope: &[u8],
) -> Result<BundleRef, StoreError> {
    match bundle::write(dir, anchor, run_id, envelope) {
        Ok(stored) => Ok(BundleRef::File(stored.path)),
        Err(BundleError::Exists { path }) => already_there(path, envelope),
        Err(BundleError::InvalidRunId(run)) => Err(StoreError::Invalid(format!(
            "run id {run:?} cannot name a bundle file"
        ))),
        Err(e) => Err(StoreError::Unavailable {
            at: dir.display().to_string(),
            reason: e.to_string(),
        }),
    }
}

/// A put that found `path` taken: done when it holds exactly `bytes` (the
/// same put again), else refused, since nothing kept is overwritten.
fn already_there(path: PathBuf, bytes: &[u8]) -> Result<BundleRef, StoreError> {
    if read_file(&path)? == bytes {
        Ok(BundleRef::File(path))
    } else {
        Err(StoreError::Exists {
            at: path.display().to_string(),
        })
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, StoreError> {
    std::fs::read(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            StoreError::Missing {
                at: path.display().to_string(),
            }
        } else {
            StoreError::Unavailable {
                at: path.display().to_string(),
                reason: e.to_string(),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_kept_once_by_its_digest_and_swept_when_old() {
        let tmp = tempfile::tempdir().unwrap();
        let store = BundleStore::dir(tmp.path().join("bundles"));
        let at = store.put_request(b"{\"a\":1}").unwrap();
        let BundleRef::File(path) = &at else {
            panic!("{at:?}")
        };
        let sha = bundle::digest(b"{\"a\":1}");
        assert_eq!(
            path,
            &tmp.path()
                .join("bundles/requests")
                .join(format!("{sha}{REQUEST_SUFFIX}"))
        );
        // The same bytes again are the same request; it reads back as kept.
        assert_eq!(store.put_request(b"{\"a\":1}").unwrap(), at);
        assert_eq!(store.fetch(&at).unwrap(), b"{\"a\":1}");
        // Other bytes under that name are refused, never replaced.
        std::fs::write(path, b"edited").unwrap();
        assert!(matches!(
            store.put_request(b"{\"a\":1}"),
            Err(StoreError::Exists { .. })
        ));
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        assert_eq!(store.sweep_requests(past).unwrap(), 0);
        let future = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
        assert_eq!(store.sweep_requests(future).unwrap(), 1);
        assert!(matches!(store.fetch(&at), Err(StoreError::Missing { .. })));
    }

    #[test]
    fn refs_and_targets_parse_and_print() {
        let sha = "ab".repeat(32);
        let object = format!("s3://bkt/fleet/a/{sha}.dsse.json");
        let cases: Vec<(&str, BundleRef, Option<&str>)> = vec![
            (
                "/state/bundles/r1.dsse.json",
                BundleRef::File("/state/bundles/r1.dsse.json".into()),
                None,
            ),
            (
                "bundles/r1.dsse.json",
                BundleRef::File("bundles/r1.dsse.json".into()),
                None,
            ),
            (
                &object,
                BundleRef::Object {
                    bucket: "bkt".into(),
                    key: format!("fleet/a/{sha}.dsse.json"),
                },
                Some(&sha),
            ),
            (
                "s3://bkt/r1.dsse.json",
                BundleRef::Object {
                    bucket: "bkt".into(),
                    key: "r1.dsse.json".into(),
                },
                None,
            ),
        ];
        for (text, want, named) in cases {
            let got = BundleRef::parse(text).unwrap();
            assert_eq!(got, want, "{text}");
            assert_eq!(got.to_string(), text);
            assert_eq!(got.named_sha256(), named, "{text}");
        }
        let kept = format!("ledger:sha256:{sha}");
        let got = BundleRef::parse(&kept).unwrap();
        assert_eq!(
            got,
            BundleRef::Ledger {
                sha256: sha.clone()
            }
        );
        assert_eq!(got.to_string(), kept);
        assert_eq!(got.named_sha256(), Some(sha.as_str()));
        assert!(!got.is_object());
        for bad in [
            "s3://",
            "s3://bkt",
            "s3://bkt/",
            "s3:///key",
            "ledger:sha256:",
            "ledger:sha256:ABCD",
            &format!("ledger:sha256:{sha}0"),
        ] {
            assert!(
                matches!(BundleRef::parse(bad), Err(StoreError::Invalid(_))),
                "{bad}"
            );
        }

        let base = Path::new("/ws");
        let targets = [
            (
                "s3://bkt/fleet/",
                Target::S3 {
                    bucket: "bkt".into(),
                    prefix: "fleet".into(),
                },
                "s3://bkt/fleet",
            ),
            (
                "s3://bkt",
                Target::S3 {
                    bucket: "bkt".into(),
                    prefix: String::new(),
                },
                "s3://bkt",
            ),
            ("store", Target::Dir("/ws/store".into()), "/ws/store"),
            ("/abs", Target::Dir("/abs".into()), "/abs"),
        ];
        for (text, want, shown) in targets {
            let got = Target::parse(text, base).unwrap();
            assert_eq!(got, want, "{text}");
            assert_eq!(got.to_string(), shown);
        }
        for bad in ["", "s3:///x", "gs://bkt/x", "https://example.com/b"] {
            assert!(
                matches!(Target::parse(bad, base), Err(StoreError::Invalid(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_directory_store_never_replaces_and_reports_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let store = BundleStore::dir(dir.path().join("bundles"));
        assert!(store.is_local());
        let at = store.put("r1", b"first").unwrap();
        assert_eq!(at, BundleRef::File(dir.path().join("bundles/r1.dsse.json")));
        assert_eq!(store.get(&at).unwrap(), b"first");
        // The same bytes again: already stored, a success.
        assert_eq!(store.put("r1", b"first").unwrap(), at);
        let err = store.put("r1", b"second").unwrap_err();
        assert!(matches!(err, StoreError::Exists { .. }), "{err}");
        assert_eq!(store.get(&at).unwrap(), b"first");

        std::fs::remove_file(dir.path().join("bundles/r1.dsse.json")).unwrap();
        let err = store.get(&at).unwrap_err();
        assert!(err.is_bad_evidence() && !err.is_unavailable(), "{err}");
        assert!(err.to_string().contains("r1.dsse.json is missing"), "{err}");
        let err = store.put("../x", b"x").unwrap_err();
        assert!(matches!(err, StoreError::Invalid(_)), "{err}");
    }

    #[test]
    fn bundles_kept_in_the_ledger_go_in_with_their_rows_and_read_back_through_it() {
        use crate::ledger::{Ledger, RunEntry};
        let dir = tempfile::tempdir().unwrap();
        let location = Location::Sqlite(dir.path().join("ledger.db"));
        let store =
            BundleStore::new(Target::Ledger, AwsSettings::default()).with_ledger(location.clone());
        assert!(!store.is_local());
        let at = store.put("r1", b"envelope").unwrap();
        assert_eq!(
            at.to_string(),
            format!("ledger:sha256:{}", bundle::digest(b"envelope"))
        );
        // Nothing is kept until its row is appended.
        let err = store.get(&at).unwrap_err();
        assert!(err.is_bad_evidence(), "{err}");
        let mut ledger = Ledger::open(location).unwrap();
        let now = chrono::Utc::now();
        let entry = RunEntry {
            run_id: "r1".into(),
            spec_id: "s".into(),
            attempt: 1,
            series: None,
            verdict: "pass".into(),
            tier: "light".into(),
            started_at: now,
            finished_at: now,
            input_tokens: 0,
            cached_input_tokens: 0,
            output_tokens: 0,
            cost_usd: None,
            bundle_path: at.to_string(),
            extra: serde_json::json!({}),
        };
        ledger.append(&entry, b"envelope").unwrap();
        assert_eq!(store.get(&at).unwrap(), b"envelope");
        // Altered in the database: tampered, not another bundle.
        drop(ledger);
        rusqlite::Connection::open(dir.path().join("ledger.db"))
            .unwrap()
            .execute("UPDATE bundles SET envelope = X'00'", [])
            .unwrap();
        let err = store.get(&at).unwrap_err();
        assert!(matches!(err, StoreError::Tampered { .. }), "{err}");
        // A store with no ledger to read from cannot check it.
        let err = BundleStore::dir(dir.path()).get(&at).unwrap_err();
        assert!(err.is_unavailable(), "{err}");
    }

    #[test]
    fn a_named_object_must_hash_to_its_name() {
        let bytes = b"envelope bytes";
        let sha = bundle::digest(bytes);
        let at = BundleRef::parse(&format!("s3://bkt/p/{sha}.dsse.json")).unwrap();
        assert!(check_named(&at, bytes).is_ok());
        let err = check_named(&at, b"other bytes").unwrap_err();
        assert!(err.is_bad_evidence(), "{err}");
        assert!(
            err.to_string().contains(&bundle::digest(b"other bytes")),
            "{err}"
        );
        // A file is named for its run: its caller checks it against the row.
        assert!(check_named(&BundleRef::File("r.dsse.json".into()), b"x").is_ok());
    }
}
