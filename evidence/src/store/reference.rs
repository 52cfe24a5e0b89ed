//! Where one bundle is: the reference a ledger row's `bundle_path` holds.

use std::fmt;
use std::path::PathBuf;

use super::error::StoreError;
use crate::bundle::SUFFIX;
use crate::ledger::BUNDLE_IN_LEDGER;

/// Where one bundle is: what a ledger row's `bundle_path` holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BundleRef {
    /// A file on this machine.
    File(PathBuf),
    /// An object in an S3-compatible bucket.
    Object {
        /// The bucket.
        bucket: String,
        /// The object's key, `<prefix>/<sha256>.dsse.json`.
        key: String,
    },
    /// Kept in the ledger with its row.
    Ledger {
        /// Lowercase hex sha256 of the envelope bytes.
        sha256: String,
    },
}

impl BundleRef {
    /// Parses a row's `bundle_path`: an `s3://bucket/key` URL, a
    /// `ledger:sha256:<hex>` reference, else a path.
    pub fn parse(text: &str) -> Result<Self, StoreError> {
        if let Some(sha) = text.strip_prefix(BUNDLE_IN_LEDGER) {
            if !is_sha256(sha) {
                return Err(StoreError::Invalid(format!(
                    "{text} names no bundle: expected {BUNDLE_IN_LEDGER} and 64 lowercase hex digits"
                )));
            }
            return Ok(Self::Ledger {
                sha256: sha.to_owned(),
            });
        }
        let Some(rest) = text.strip_prefix(S3_SCHEME) else {
            return Ok(Self::File(PathBuf::from(text)));
        };
        match rest.split_once('/') {
            Some((bucket, key)) if !bucket.is_empty() && !key.is_empty() => Ok(Self::Object {
                bucket: bucket.to_owned(),
                key: key.to_owned(),
            }),
            _ => Err(StoreError::Invalid(format!(
                "{text} names no object: expected s3://bucket/key"
            ))),
        }
    }

    /// The sha256 a reference names: an object's (`…/<sha256>.dsse.json`)
    /// or a kept bundle's; `None` for a file, which is named for its run.
    pub fn named_sha256(&self) -> Option<&str> {
        match self {
            Self::File(_) => None,
            Self::Ledger { sha256 } => Some(sha256),
            Self::Object { key, .. } => {
                let name = key.rsplit('/').next()?.strip_suffix(SUFFIX)?;
                is_sha256(name).then_some(name)
            }
        }
    }

    /// True for an object in a bucket.
    pub fn is_object(&self) -> bool {
        matches!(self, Self::Object { .. })
    }
}

impl fmt::Display for BundleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Object { bucket, key } => write!(f, "{S3_SCHEME}{bucket}/{key}"),
            Self::Ledger { sha256 } => write!(f, "{BUNDLE_IN_LEDGER}{sha256}"),
        }
    }
}

pub(super) const S3_SCHEME: &str = "s3://";

/// 64 lowercase hex digits.
fn is_sha256(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}
