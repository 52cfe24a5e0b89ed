//! The replays `gate report` shows: only those whose ledger row is what
//! their signed bundle says, as a run's row is checked against its bundle.

use gate_evidence::ledger::ReplayEntry;
use gate_evidence::store::{BundleRef, BundleStore};
use gate_evidence::{PublicKey, bundle};

use super::execute::summary_of;
use super::report::{REPLAY_PREDICATE_TYPE, ReplayReport};

/// Newest first, the newest replay of each candidate table whose bundle is
/// where the row says, has the row's digest, is signed under `trusted`,
/// and holds the row's replay, table and scores; and, for each one read
/// and left out, its id and why. Only a replay that could be shown is
/// read: none older than its table's newest that vouches.
pub(crate) fn vouched(
    mut entries: Vec<ReplayEntry>,
    store: &BundleStore,
    trusted: &[PublicKey],
) -> (Vec<ReplayEntry>, Vec<(String, String)>) {
    entries.sort_by_key(|e| std::cmp::Reverse(e.recorded_at));
    let mut kept: Vec<ReplayEntry> = Vec::new();
    let mut left_out = Vec::new();
    for entry in entries {
        if kept
            .iter()
            .any(|k| k.routing_blake3 == entry.routing_blake3)
        {
            continue;
        }
        match check(&entry, store, trusted) {
            Ok(()) => kept.push(entry),
            Err(why) => left_out.push((entry.replay_id.clone(), why)),
        }
    }
    (kept, left_out)
}

/// Why `entry` is not what its bundle signed, if it is not.
fn check(entry: &ReplayEntry, store: &BundleStore, trusted: &[PublicKey]) -> Result<(), String> {
    let at = BundleRef::parse(&entry.bundle_path).map_err(|e| e.to_string())?;
    let bytes = store.get(&at).map_err(|e| e.to_string())?;
    if bundle::digest(&bytes) != entry.envelope_sha256 {
        return Err(format!("its bundle at {at} is not the one recorded"));
    }
    let opened = bundle::open(&bytes, trusted).map_err(|e| e.to_string())?;
    if opened.statement.predicate_type != REPLAY_PREDICATE_TYPE {
        return Err(format!(
            "its bundle is a {}",
            opened.statement.predicate_type
        ));
    }
    let report: ReplayReport = serde_json::from_value(opened.statement.predicate)
        .map_err(|e| format!("its bundle holds no readable replay ({e})"))?;
    let signed = serde_json::to_value(summary_of(&report)).map_err(|e| e.to_string())?;
    let agrees = report.replay_id == entry.replay_id
        && report.routing.origin == entry.routing
        && report.routing.blake3 == entry.routing_blake3
        && signed == entry.summary;
    if agrees {
        Ok(())
    } else {
        Err("edited: its row is not what its bundle signed".to_owned())
    }
}
