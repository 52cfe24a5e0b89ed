//! What the ledger stores, checked against what the gate signed: a run's
//! row against its bundle, an override against its own bundle, a
//! dismissal or an outcome against the envelope it carries. The readers
//! that decide (the attempt series, the doom loop, dismissals, overrides,
//! the scorecard) use only what passes, and `gate ledger verify` names
//! every column that does not.

use gate_evidence::ledger::{self, Disagreement, OverrideEntry};
use gate_evidence::store::{BundleRef, BundleStore};
use gate_evidence::{LedgerRow, PublicKey, bundle, dsse};
use serde_json::Value;

use crate::attest;
use crate::predicate::{OVERRIDE_PREDICATE_TYPE, PREDICATE_TYPE, Predicate};
use crate::record::RunRecord;
use crate::row::RowExtra;

/// The columns of a run's row a reader takes a decision from, as they
/// would be written for `record`, beside the row as stored: every column
/// but where the bundle is and the chain's own, and `extra` read as the
/// readers read it.
fn columns(row: &LedgerRow, record: &RunRecord) -> (Value, Value) {
    let signed = attest::entry_for(record, &row.entry.bundle_path, Value::Null);
    let stored = &row.entry;
    let pick = |e: &gate_evidence::RunEntry, extra: &RowExtra| {
        serde_json::json!({
            "run_id": e.run_id,
            "spec_id": e.spec_id,
            "attempt": e.attempt,
            "series": e.series,
            "verdict": e.verdict,
            "tier": e.tier,
            "started_at": e.started_at,
            "finished_at": e.finished_at,
            "input_tokens": e.input_tokens,
            "cached_input_tokens": e.cached_input_tokens,
            "output_tokens": e.output_tokens,
            "cost_usd": e.cost_usd,
            "extra": extra.to_value().unwrap_or(Value::Null),
        })
    };
    (
        pick(stored, &RowExtra::read(&stored.extra)),
        pick(&signed, &RowExtra::of(record)),
    )
}

/// Every column of `row` that is not what `record`, the run its bundle
/// signed, says it is.
pub(crate) fn row_disagreements(row: &LedgerRow, record: &RunRecord) -> Vec<Disagreement> {
    let (stored, signed) = columns(row, record);
    ledger::diff(&stored, &signed, "")
}

/// The judge `gate ledger verify` compares each row with: the run its
/// verified envelope holds, column by column.
pub(crate) fn judge(row: &LedgerRow, verified: &dsse::Verified) -> Vec<Disagreement> {
    match signed_run(&verified.payload) {
        Ok(record) => row_disagreements(row, &record),
        Err(why) => vec![Disagreement {
            column: "bundle".to_owned(),
            stored: format!("row of run {}", row.entry.run_id),
            signed: why,
        }],
    }
}

/// The run a verified statement's payload holds.
fn signed_run(payload: &[u8]) -> Result<RunRecord, String> {
    let statement: gate_evidence::Statement =
        serde_json::from_slice(payload).map_err(|e| format!("no statement ({e})"))?;
    if statement.predicate_type != PREDICATE_TYPE {
        return Err(format!("a {} statement", statement.predicate_type));
    }
    Predicate::read(&statement.predicate)
        .map(|p| p.run)
        .map_err(|e| format!("no readable run ({e})"))
}

/// The run `row` records, read from its bundle (fetched, checked against
/// the row's digest and verified under `trusted`), when every column the
/// readers use agrees with it; else why not.
pub(crate) fn row_run(
    row: &LedgerRow,
    store: &BundleStore,
    trusted: &[PublicKey],
) -> Result<RunRecord, String> {
    let bytes = attest::row_bundle(store, row).map_err(|e| e.to_string())?;
    let opened = bundle::open(&bytes, trusted).map_err(|e| e.to_string())?;
    let record = Predicate::read(&opened.statement.predicate)
        .map_err(|e| format!("its bundle holds no readable run: {e}"))?
        .run;
    let found = row_disagreements(row, &record);
    if !found.is_empty() {
        let all: Vec<String> = found.iter().map(ToString::to_string).collect();
        return Err(format!("edited: {}", all.join("; ")));
    }
    Ok(record)
}

/// Checks an override against its own bundle: fetched from the store,
/// its digest the row's, signed under `trusted`, and its run, spec,
/// content, reason and author the row's.
pub(crate) fn override_vouched(
    o: &OverrideEntry,
    store: &BundleStore,
    trusted: &[PublicKey],
) -> Result<(), String> {
    let at = BundleRef::parse(&o.bundle_path).map_err(|e| e.to_string())?;
    let bytes = store.get(&at).map_err(|e| e.to_string())?;
    let actual = bundle::digest(&bytes);
    if actual != o.bundle_sha256 {
        return Err(format!(
            "its bundle's bytes hash to {actual}, the row says {}",
            o.bundle_sha256
        ));
    }
    let opened = bundle::open(&bytes, trusted).map_err(|e| e.to_string())?;
    if opened.statement.predicate_type != OVERRIDE_PREDICATE_TYPE {
        return Err(format!(
            "its bundle is a {} statement",
            opened.statement.predicate_type
        ));
    }
    let p = &opened.statement.predicate;
    let stored = serde_json::json!({
        "run_id": o.run_id,
        "spec_id": o.spec_id,
        "content_digest": o.content_digest,
        "reason": o.reason,
        "by": o.by,
    });
    let signed = serde_json::json!({
        "run_id": p["run_id"],
        "spec_id": p["spec_id"],
        "content_digest": p["content_digest"],
        "reason": p["reason"],
        "by": p["by"],
    });
    let found = ledger::diff(&stored, &signed, "");
    if found.is_empty() {
        return Ok(());
    }
    let all: Vec<String> = found.iter().map(ToString::to_string).collect();
    Err(format!("edited: {}", all.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixture;

    fn row_for(record: &RunRecord) -> LedgerRow {
        let extra = RowExtra::of(record).to_value().unwrap();
        LedgerRow {
            seq: 3,
            entry: attest::entry_for(record, "b/r.dsse.json", extra),
            envelope_sha256: "0".repeat(64),
            prev_sha256: None,
            leaf_hash: "0".repeat(64),
            recorded_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn each_column_a_decision_reads_is_compared_with_the_signed_run() {
        let mut record = fixture::record();
        record.failures = vec![crate::record::Failure {
            item: "build".into(),
            fingerprint: "abc".into(),
        }];
        // (what the database edit did, the columns named)
        type Edit = fn(&mut LedgerRow);
        let cases: [(&str, Edit, &[&str]); 10] = [
            (
                "moved to another series",
                |r| r.entry.series = Some("branch:elsewhere".into()),
                &["series"],
            ),
            (
                "taken out of its series",
                |r| r.entry.series = None,
                &["series"],
            ),
            ("nothing", |_| {}, &[]),
            (
                "a failed run flipped to pass",
                |r| r.entry.verdict = "pass".into(),
                &["verdict"],
            ),
            ("the attempt reset", |r| r.entry.attempt = 1, &["attempt"]),
            (
                "another spec",
                |r| r.entry.spec_id = "other".into(),
                &["spec_id"],
            ),
            (
                "the tier lowered",
                |r| r.entry.tier = "trivial".into(),
                &["tier"],
            ),
            (
                "the failures wiped",
                |r| r.entry.extra["failures"] = serde_json::json!([]),
                &["extra.failures"],
            ),
            (
                "findings removed",
                |r| r.entry.extra["findings"] = serde_json::json!([]),
                &["extra.findings"],
            ),
            (
                "a doom loop planted",
                |r| {
                    r.entry.extra["doom_loop"] = serde_json::json!({"pattern": "repeat", "attempts": [1], "failing": ["build"], "message": "x"});
                },
                &["extra.doom_loop"],
            ),
        ];
        for (what, edit, want) in cases {
            let mut row = row_for(&record);
            edit(&mut row);
            let got: Vec<String> = row_disagreements(&row, &record)
                .into_iter()
                .map(|d| d.column)
                .collect();
            assert_eq!(got, want, "{what}");
        }
        // The bundle's place is not a decision's: a moved bundle is the
        // chain's business, not a disagreement.
        let mut row = row_for(&record);
        row.entry.bundle_path = "elsewhere".into();
        assert!(row_disagreements(&row, &record).is_empty());
    }
}
