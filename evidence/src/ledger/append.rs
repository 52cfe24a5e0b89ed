//! What both stores do alike when they append: the row's timestamp and
//! seal, and the checks of a kept bundle, an attempt series and copied rows.

use chrono::{DateTime, Utc};

use super::entries::{BUNDLE_IN_LEDGER, LedgerRow, RunEntry};
use super::error::LedgerError;

/// Now, at the microsecond precision both stores keep, so a returned row
/// equals the stored one.
pub(crate) fn now() -> DateTime<Utc> {
    use chrono::SubsecRound as _;
    Utc::now().trunc_subsecs(6)
}

/// What an append stores besides the entry, computed the same way by both
/// stores from the exact envelope bytes.
#[derive(Debug, Clone)]
pub(crate) struct Sealed {
    /// Lowercase hex sha256 of the bytes.
    pub(crate) envelope_sha256: String,
    /// Lowercase hex RFC 6962 leaf hash of the bytes.
    pub(crate) leaf_hash: String,
}

impl Sealed {
    pub(crate) fn of(envelope: &[u8]) -> Self {
        Self {
            envelope_sha256: crate::bundle::digest(envelope),
            leaf_hash: hex::encode(crate::merkle::leaf_hash(envelope)),
        }
    }
}

/// True when `entry`'s bundle is kept in the ledger with its row (its
/// `bundle_path` is `ledger:sha256:<hex>`); an error when that names other
/// bytes than the envelope's.
pub(crate) fn kept_in_ledger(entry: &RunEntry, envelope_sha256: &str) -> Result<bool, LedgerError> {
    let Some(named) = entry.bundle_path.strip_prefix(BUNDLE_IN_LEDGER) else {
        return Ok(false);
    };
    if named != envelope_sha256 {
        return Err(LedgerError::BundleMismatch {
            run_id: entry.run_id.clone(),
            named: named.to_owned(),
            actual: envelope_sha256.to_owned(),
        });
    }
    Ok(true)
}

/// Whether an append checks the run's attempt against its spec's series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SeriesCheck {
    /// A live run: its attempt is 1 (a new series) or one more than the
    /// spec's latest recorded attempt.
    Live,
    /// An import or a copy: recorded as it was.
    AsIs,
}

/// Checks rows to be copied continue a ledger whose tip is `tip`
/// (`(seq, envelope_sha256)`), and each other.
pub(crate) fn check_continues(
    ledger: &str,
    tip: Option<(u64, String)>,
    rows: &[LedgerRow],
) -> Result<(), LedgerError> {
    let mut tip = tip;
    for row in rows {
        let (want_seq, want_prev) = match &tip {
            Some((seq, sha)) => (seq + 1, Some(sha.as_str())),
            None => (1, None),
        };
        let reason = if row.seq != want_seq {
            Some(format!("its seq is {}, the next is {want_seq}", row.seq))
        } else if row.prev_sha256.as_deref() != want_prev {
            Some(format!(
                "its prev_sha256 is {}, the tip's envelope is {}",
                row.prev_sha256.as_deref().unwrap_or("empty"),
                want_prev.unwrap_or("nothing")
            ))
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(LedgerError::NotContinuing {
                ledger: ledger.to_owned(),
                seq: row.seq,
                reason,
            });
        }
        tip = Some((row.seq, row.envelope_sha256.clone()));
    }
    Ok(())
}
