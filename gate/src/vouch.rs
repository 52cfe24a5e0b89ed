//! What the ledger stores, checked against what the gate signed: a run's
//! row against its bundle, an override against its own bundle, a
//! dismissal or an outcome against the envelope it carries. The readers
//! that decide (the attempt series, the doom loop, dismissals, overrides,
//! the scorecard) use only what passes, and `gate ledger verify` names
//! every column that does not.

use std::collections::HashSet;

use gate_evidence::ledger::{self, Disagreement, OverrideEntry, RowStamp, Unvouched};
use gate_evidence::store::{BundleRef, BundleStore};
use gate_evidence::{LedgerRow, PublicKey, bundle, dsse};
use serde_json::Value;

use crate::attest;
use crate::predicate::{OVERRIDE_PREDICATE_TYPE, PREDICATE_TYPE, Predicate};
use crate::record::RunRecord;
use crate::row::RowExtra;
use gate_scorecard::scorecard::Vouched;

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
/// its digest the row's, signed under `trusted`, and every column a reader
/// takes from it (run, spec, content, reason, author and when it was
/// recorded, which orders it against the run's outcomes) the signed one.
pub(crate) fn override_vouched(
    o: &OverrideEntry,
    store: &BundleStore,
    trusted: &[PublicKey],
) -> Result<(), Unvouched> {
    let unreadable = Unvouched::Bundle;
    let at = BundleRef::parse(&o.bundle_path)
        .map_err(|e| unreadable(format!("its bundle path does not parse: {e}")))?;
    let bytes = store
        .get(&at)
        .map_err(|e| unreadable(format!("its bundle cannot be had: {e}")))?;
    let actual = bundle::digest(&bytes);
    if actual != o.bundle_sha256 {
        return Err(unreadable(format!(
            "its bundle's bytes hash to {actual}, the row says {}",
            o.bundle_sha256
        )));
    }
    let opened = bundle::open(&bytes, trusted)
        .map_err(|e| unreadable(format!("its bundle does not verify: {e}")))?;
    if opened.statement.predicate_type != OVERRIDE_PREDICATE_TYPE {
        return Err(unreadable(format!(
            "its bundle is a {} statement",
            opened.statement.predicate_type
        )));
    }
    let p = &opened.statement.predicate;
    // Both stores keep microseconds: the signed time is compared at theirs.
    let signed_at = p["at"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| micros(t.with_timezone(&chrono::Utc)));
    let stored = serde_json::json!({
        "run_id": o.run_id,
        "spec_id": o.spec_id,
        "content_digest": o.content_digest,
        "reason": o.reason,
        "by": o.by,
        "recorded_at": micros(o.recorded_at),
    });
    let signed = serde_json::json!({
        "run_id": p["run_id"],
        "spec_id": p["spec_id"],
        "content_digest": p["content_digest"],
        "reason": p["reason"],
        "by": p["by"],
        "recorded_at": signed_at,
    });
    let found = ledger::diff(&stored, &signed, "");
    if found.is_empty() {
        Ok(())
    } else {
        Err(Unvouched::Disagrees(found))
    }
}

/// Rows read and checked at once by [`for_report`] and [`moved_away`].
const REPORT_PAGE: u32 = 2_000;

/// Row stamps read at once by [`for_report`].
const STAMP_PAGE: u32 = 20_000;

/// What `gate report` and `gate metrics` may count: every run row checked
/// against its bundle (in parallel, a page at a time), every override
/// against its own. A row that does not vouch is left out, and counted
/// against `scope` when its stored or its signed columns fall in it. A row
/// whose stamp `cache` holds (every column as it is now, raw) was vouched
/// for by its bundle before: it is neither parsed nor fetched again. The
/// rows of a page that miss are read whole, each with its stamp in the
/// same read, and checked; a row that vouches now is added to `cache`.
pub(crate) fn for_report(
    ledger: &gate_evidence::Ledger,
    store: &BundleStore,
    trusted: &[PublicKey],
    scope: &ledger::ReportScope,
    mut cache: Option<&mut crate::vouch_cache::VouchCache>,
) -> Result<Vouched, gate_evidence::ledger::LedgerError> {
    let mut out = Vouched::default();
    let mut after = 0;
    loop {
        let stamps = ledger.stamps_after(after, STAMP_PAGE)?;
        let Some(last) = stamps.last() else { break };
        let known = cache.as_deref();
        let missed: HashSet<u64> = stamps
            .iter()
            .filter(|s| !known.is_some_and(|c| c.vouched(s)))
            .map(|s| s.seq)
            .collect();
        if !missed.is_empty() {
            check_rows(
                ledger,
                store,
                trusted,
                scope,
                (after, last.seq),
                &missed,
                cache.as_deref_mut(),
                &mut out,
            )?;
        }
        after = last.seq;
    }
    for o in ledger.overrides(None)? {
        match override_vouched(&o, store, trusted) {
            Ok(()) => {
                out.overrides.insert(o.run_id, o.recorded_at);
            }
            Err(why) => {
                tracing::warn!(run = %o.run_id, %why, "an override not as signed is not counted");
                out.overrides_left_out += 1;
            }
        }
    }
    Ok(out)
}

/// Checks the rows `missed` of seqs `from` (exclusive) to `to` (inclusive)
/// against their bundles, in parallel, a page at a time: a row that
/// vouches goes into `cache` with the stamp read with it; one that does
/// not is left out in `out`, and counted when in `scope` as stored or as
/// signed. A row read now that was not missed (it changed since its stamp
/// was read) is checked too.
#[allow(clippy::too_many_arguments, reason = "one pass's inputs and outputs")]
fn check_rows(
    ledger: &gate_evidence::Ledger,
    store: &BundleStore,
    trusted: &[PublicKey],
    scope: &ledger::ReportScope,
    (from, to): (u64, u64),
    missed: &HashSet<u64>,
    mut cache: Option<&mut crate::vouch_cache::VouchCache>,
    out: &mut Vouched,
) -> Result<(), gate_evidence::ledger::LedgerError> {
    use rayon::prelude::*;
    let in_scope = |spec: &str, started: chrono::DateTime<chrono::Utc>| {
        scope.spec_id.as_deref().is_none_or(|s| s == spec)
            && scope.since.is_none_or(|since| started >= since)
    };
    let mut after = from;
    while after < to {
        let page = ledger.stamped_rows_after(after, REPORT_PAGE)?;
        let Some((last, _)) = page.last() else { break };
        after = last.seq;
        let page: Vec<_> = page
            .into_iter()
            .filter(|(row, stamp)| {
                row.seq <= to
                    && (missed.contains(&row.seq)
                        || !cache.as_deref().is_some_and(|c| c.vouched(stamp)))
            })
            .collect();
        // Per row: whether its bundle vouches (`Ok`) or, when not, whether
        // it counts in scope.
        let checked: Vec<Result<(), bool>> = page
            .par_iter()
            .map(|(row, stamp)| {
                match row_run(row, store, trusted).and_then(|_| report_rows_as_derived(row, stamp))
                {
                    Ok(()) => Ok(()),
                    Err(why) => {
                        tracing::warn!(seq = row.seq, run = %row.entry.run_id, %why,
                        "a run not as signed is left out of the report");
                        let signed = signed_columns(row, store, trusted);
                        Err(in_scope(&row.entry.spec_id, row.entry.started_at)
                            || signed.is_some_and(|(spec, started)| in_scope(&spec, started)))
                    }
                }
            })
            .collect();
        for ((row, stamp), checked) in page.iter().zip(checked) {
            match checked {
                Ok(()) => {
                    if let Some(cache) = cache.as_deref_mut() {
                        cache.remember(stamp);
                    }
                }
                Err(counted) => {
                    out.runs_left_out.insert(row.seq);
                    out.runs_left_out_in_scope += u64::from(counted);
                }
            }
        }
    }
    Ok(())
}

/// Whether the report rows stored for `row` (what a report counts) are
/// what the row derives: the row vouches for nothing a report reads when
/// they were edited apart from it.
fn report_rows_as_derived(row: &LedgerRow, stamp: &RowStamp) -> Result<(), String> {
    if stamp.derived == ledger::expected_report_rows(row.seq, &row.entry) {
        Ok(())
    } else {
        Err(
            "its report rows (run_facts, run_models, run_roles) are not what the row derives: \
             edited apart from it"
                .to_owned(),
        )
    }
}

/// The spec and start a row's bundle signed, when it verifies at all.
fn signed_columns(
    row: &LedgerRow,
    store: &BundleStore,
    trusted: &[PublicKey],
) -> Option<(String, chrono::DateTime<chrono::Utc>)> {
    let run = signed_run_of(row, store, trusted)?;
    let started = attest::entry_for(&run, &row.entry.bundle_path, Value::Null).started_at;
    Some((run.spec_id, started))
}

/// The run a row's bundle signed, whatever its columns say: the bundle
/// fetched, its digest the row's, verified under `trusted`.
pub(crate) fn signed_run_of(
    row: &LedgerRow,
    store: &BundleStore,
    trusted: &[PublicKey],
) -> Option<RunRecord> {
    let bytes = attest::row_bundle(store, row).ok()?;
    let opened = bundle::open(&bytes, trusted).ok()?;
    Predicate::read(&opened.statement.predicate)
        .ok()
        .map(|p| p.run)
}

/// Rows after seq `after` whose spec column is not `spec_id` but whose
/// bundle signed a run of it: moved away from their series by an edit.
/// Every such row's bundle is read, in parallel, a page at a time.
pub(crate) fn moved_away(
    ledger: &gate_evidence::Ledger,
    store: &BundleStore,
    trusted: &[PublicKey],
    spec_id: &str,
    series: Option<&str>,
    after: u64,
) -> Result<Vec<LedgerRow>, gate_evidence::ledger::LedgerError> {
    use rayon::prelude::*;
    let mut out = Vec::new();
    let mut after = after;
    loop {
        let page = ledger.rows_after(after, REPORT_PAGE)?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        out.extend(
            page.into_par_iter()
                .filter(|row| {
                    (row.entry.spec_id != spec_id || row.entry.series.as_deref() != series)
                        && signed_run_of(row, store, trusted).is_some_and(|r| {
                            r.spec_id == spec_id
                                && r.series.as_ref().map(|s| s.key.as_str()) == series
                        })
                })
                .collect::<Vec<_>>(),
        );
    }
    for row in &out {
        tracing::warn!(seq = row.seq, run = %row.entry.run_id, stored_spec = %row.entry.spec_id,
            "a run of the series was moved to another spec in the ledger: counted where it was signed");
    }
    Ok(out)
}

fn micros(t: chrono::DateTime<chrono::Utc>) -> chrono::DateTime<chrono::Utc> {
    use chrono::SubsecRound as _;
    t.trunc_subsecs(6)
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
        record.failures = vec![crate::doom::Failure {
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

    /// A run whose costs have no short decimal form reads back from its
    /// bundle's JSON as the row recorded it: JSON numbers are parsed to the
    /// float they were written from, or the run would read as edited.
    #[test]
    fn costs_read_back_from_the_bundle_as_the_row_has_them() {
        let mut record = fixture::record();
        for (s, cost) in record
            .review
            .specialists
            .iter_mut()
            .zip([0.001_959_000_000_000_000_2, 9.299_999_999_999_999e-6])
        {
            s.cost_usd = Some(cost);
        }
        let row = row_for(&record);
        let signed: RunRecord =
            serde_json::from_slice(&serde_json::to_vec(&record).unwrap()).unwrap();
        assert_eq!(row_disagreements(&row, &signed), Vec::new());
    }

    /// An override kept in a bundle store, signed by `key`: the row as
    /// `gate override` writes it.
    fn override_in(
        store: &BundleStore,
        key: &gate_evidence::SigningKey,
        at: chrono::DateTime<chrono::Utc>,
    ) -> OverrideEntry {
        let predicate = serde_json::json!({
            "format_version": 1, "run_id": "r1", "spec_id": "s", "overridden_verdict": "fail",
            "content_digest": "c", "run_bundle_sha256": "0", "reason": "flaky", "by": "ann",
            "at": at.to_rfc3339(),
        });
        let subject = gate_evidence::Subject::from_bytes("r1.dsse.json", b"run");
        let statement =
            gate_evidence::Statement::new(vec![subject], OVERRIDE_PREDICATE_TYPE, predicate);
        let envelope = bundle::seal(&statement, key);
        let stored = store.put("r1.override", &envelope).unwrap();
        OverrideEntry {
            run_id: "r1".into(),
            spec_id: "s".into(),
            reason: "flaky".into(),
            by: "ann".into(),
            content_digest: "c".into(),
            bundle_path: stored.to_string(),
            bundle_sha256: bundle::digest(&envelope),
            recorded_at: at,
        }
    }

    #[test]
    fn each_column_of_an_override_a_reader_takes_is_compared_with_its_bundle() {
        use gate_evidence::store::{AwsSettings, Target};
        let dir = tempfile::tempdir().unwrap();
        let store = BundleStore::new(
            Target::Dir(dir.path().to_path_buf()),
            AwsSettings::default(),
        );
        let key = gate_evidence::SigningKey::from_seed(&[3; 32]);
        let trusted = [key.public_key().clone()];
        let at = chrono::Utc::now();
        let signed = override_in(&store, &key, at);
        // (what the database edit did, the columns named, or why not vouched)
        type Edit = fn(&mut OverrideEntry);
        let cases: [(&str, Edit, &str); 9] = [
            ("nothing", |_| {}, ""),
            ("moved to another run", |o| o.run_id = "r2".into(), "run_id"),
            (
                "moved to another spec",
                |o| o.spec_id = "t".into(),
                "spec_id",
            ),
            (
                "its content widened",
                |o| o.content_digest = "d".into(),
                "content_digest",
            ),
            ("its reason reworded", |o| o.reason = "ok".into(), "reason"),
            ("another author", |o| o.by = "bob".into(), "by"),
            (
                "recorded later, after a broken outcome",
                |o| o.recorded_at += chrono::Duration::days(3),
                "recorded_at",
            ),
            (
                "another bundle's digest",
                |o| o.bundle_sha256 = "0".repeat(64),
                "hash to",
            ),
            (
                "its bundle gone",
                |o| o.bundle_path = "missing.override.dsse.json".into(),
                "cannot be had",
            ),
        ];
        for (what, edit, want) in cases {
            let mut row = signed.clone();
            edit(&mut row);
            match (override_vouched(&row, &store, &trusted), want) {
                (Ok(()), "") => {}
                (Err(Unvouched::Disagrees(d)), column) => {
                    let named: Vec<&str> = d.iter().map(|d| d.column.as_str()).collect();
                    assert_eq!(named, [column], "{what}");
                }
                (Err(e), text) if !text.is_empty() => {
                    assert!(e.to_string().contains(text), "{what}: {e}");
                }
                (got, _) => panic!("{what}: {got:?}"),
            }
        }
        // Another signer's override is not the gate's.
        let other = [gate_evidence::SigningKey::from_seed(&[4; 32])
            .public_key()
            .clone()];
        assert!(override_vouched(&signed, &store, &other).is_err());
    }
}
