//! A run's review request kept beside its bundle, for later replays: put
//! in the bundle store by its digest before any reviewer is asked, named
//! in the review's record (so the signed bundle carries the digest), and
//! dropped from a directory store after `GATE_REQUEST_RETENTION_DAYS`.

use std::time::{Duration, SystemTime};

use gate_evidence::store::{BundleRef, BundleStore};
use gate_review::record::RequestKept;
use gate_review::replay::request::{self, KeptRequest};

use crate::config::Context;
use crate::environment::names;

/// Days a kept request stays in a directory store unless
/// `GATE_REQUEST_RETENTION_DAYS` says otherwise.
pub(crate) const DEFAULT_RETENTION_DAYS: u64 = 90;

/// `GATE_REQUEST_RETENTION_DAYS`, else the default; `0` keeps none. A value
/// that is not a whole number of days is an error.
pub(crate) fn retention_days(ctx: &Context) -> Result<u64, String> {
    match ctx.env.request_retention_days() {
        None => Ok(DEFAULT_RETENTION_DAYS),
        Some(text) => text.trim().parse().map_err(|_| {
            format!(
                "{} is {text:?}: give a whole number of days (0 keeps no request)",
                names::REQUEST_RETENTION_DAYS
            )
        }),
    }
}

/// Keeps `request` in `store` and says where; a request that could not be
/// kept still has its digest recorded, with why. Older requests past the
/// retention are swept from a directory store afterwards.
pub(crate) fn keep(ctx: &Context, store: &BundleStore, request: &KeptRequest) -> RequestKept {
    let bytes = request.to_bytes();
    let sha256 = request::digest(&bytes);
    let days = match retention_days(ctx) {
        Ok(days) => days,
        Err(why) => {
            return RequestKept {
                sha256,
                at: None,
                not_kept: Some(why),
            };
        }
    };
    if days == 0 {
        return RequestKept {
            sha256,
            at: None,
            not_kept: Some(format!("{} is 0", names::REQUEST_RETENTION_DAYS)),
        };
    }
    let kept = match store.put_request(&bytes) {
        Ok(at) => RequestKept {
            sha256,
            at: Some(at.to_string()),
            not_kept: None,
        },
        Err(e) => {
            tracing::warn!(error = %e, "the review request was not kept");
            RequestKept {
                sha256,
                at: None,
                not_kept: Some(e.to_string()),
            }
        }
    };
    let before = SystemTime::now() - Duration::from_secs(days.saturating_mul(86_400));
    match store.sweep_requests(before) {
        Ok(0) => {}
        Ok(n) => tracing::info!(
            removed = n,
            days,
            "kept review requests past retention removed"
        ),
        Err(e) => tracing::warn!(error = %e, "kept review requests could not be swept"),
    }
    kept
}

/// Why a kept request cannot be read back.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unreadable {
    /// The record names no request (a review before requests were kept, or none asked).
    #[error(
        "the run's record names no kept review request (recorded before requests were kept, or no reviewer was asked)"
    )]
    NotRecorded,
    /// It was never stored.
    #[error("the review request was not kept: {0}")]
    NotKept(String),
    /// The store does not have it (swept, or lost).
    #[error("the kept review request {at} is gone: {why}")]
    Gone {
        /// Where it was.
        at: String,
        /// What the store said.
        why: String,
    },
    /// Its bytes are not the ones the bundle named.
    #[error(
        "the kept review request {at} was altered: sha256 {actual}, the bundle names {expected}"
    )]
    Altered {
        /// Where it is.
        at: String,
        /// The bundle's digest.
        expected: String,
        /// The bytes'.
        actual: String,
    },
    /// It does not parse as this gate's format.
    #[error(transparent)]
    Format(#[from] gate_review::replay::request::RequestError),
}

/// The kept request `kept` names, read from wherever it was put and checked
/// against its digest, with its bytes.
pub(crate) fn read(
    store: &BundleStore,
    kept: Option<&RequestKept>,
) -> Result<(KeptRequest, Vec<u8>), Unreadable> {
    let kept = kept.ok_or(Unreadable::NotRecorded)?;
    let Some(at_text) = &kept.at else {
        return Err(Unreadable::NotKept(
            kept.not_kept
                .clone()
                .unwrap_or_else(|| "no reason recorded".to_owned()),
        ));
    };
    let at = BundleRef::parse(at_text).map_err(|e| Unreadable::Gone {
        at: at_text.clone(),
        why: e.to_string(),
    })?;
    let bytes = store.fetch(&at).map_err(|e| Unreadable::Gone {
        at: at_text.clone(),
        why: e.to_string(),
    })?;
    let actual = request::digest(&bytes);
    if actual != kept.sha256 {
        return Err(Unreadable::Altered {
            at: at_text.clone(),
            expected: kept.sha256.clone(),
            actual,
        });
    }
    Ok((KeptRequest::from_bytes(&bytes)?, bytes))
}
