//! One suite over both stores: every case runs against a SQLite file and
//! against a fresh PostgreSQL database (`GATE_TEST_POSTGRES`; without it the
//! PostgreSQL half fails and says how to start a server).

use std::collections::BTreeSet;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};

use gate_tests::postgres::{Database, execute as pg_execute};

use super::append::{check_continues, now};
use super::*;
use crate::merkle;

/// A database for one test, and handles on it.
enum Store {
    Sqlite(tempfile::TempDir),
    Postgres(Database),
}

impl Store {
    fn sqlite() -> Self {
        Self::Sqlite(tempfile::tempdir().unwrap())
    }

    fn postgres() -> Self {
        Self::Postgres(Database::fresh())
    }

    fn location(&self) -> Location {
        match self {
            Self::Sqlite(dir) => Location::Sqlite(dir.path().join("state/ledger.db")),
            Self::Postgres(db) => Location::Postgres(db.url.clone()),
        }
    }

    /// A new handle (its own connection), as another process would have.
    fn open(&self) -> Ledger {
        Ledger::open(self.location()).unwrap()
    }

    /// A fresh, empty database of the same kind.
    fn same_kind(other: &Self) -> Self {
        match other {
            Self::Sqlite(_) => Self::sqlite(),
            Self::Postgres(_) => Self::postgres(),
        }
    }

    /// Runs SQL on the database behind the gate's back.
    fn execute(&self, sql: &str) {
        match self {
            Self::Sqlite(_) => {
                let Location::Sqlite(path) = self.location() else {
                    unreachable!()
                };
                rusqlite::Connection::open(path)
                    .unwrap()
                    .execute_batch(sql)
                    .unwrap();
            }
            Self::Postgres(db) => pg_execute(&db.url, sql),
        }
    }
}

/// Generates each case once per store.
macro_rules! both_stores {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(#[test] fn $case() { super::$case(&super::Store::sqlite()); })*
        }
        mod postgres {
            $(#[test] fn $case() { super::$case(&super::Store::postgres()); })*
        }
    };
}

both_stores!(
    append_chains_rows_and_round_trips,
    duplicates_are_refused,
    queries,
    checkpoint_covers_all_rows,
    newer_schema_is_refused,
    live_appends_continue_the_series,
    series_keep_their_own_attempts,
    rows_from_before_series_keys_are_the_specs_own_series,
    append_all_is_all_or_nothing,
    concurrent_appends_stay_one_chain,
    series_lock_excludes_other_runs_of_the_spec,
    outcomes_keep_history_latest_counts,
    breaker_updates_are_read_modify_write,
    concurrent_breaker_updates_lose_nothing,
    breaker_generations_are_kept_and_signed,
    override_columns_read_back_as_stored,
    dismissals_and_overrides_by_spec,
    copy_refuses_a_non_empty_target,
    scans_honour_the_scope,
    outcome_states_and_dismissals,
    harvest_states_keep_the_latest_finding,
    migration_3_backfills_what_append_writes,
    a_cut_ledger_keeps_no_stale_report_rows,
    bundles_kept_in_the_ledger,
    opened_as_is_nothing_is_created_or_migrated,
    base_results_are_kept_once_per_key,
    report_facts_count_fail_to_pass_evidence,
    a_rows_stamp_changes_with_any_column,
    report_rows_are_stamped_against_what_the_row_derives,
    replays_read_back_newest_first,
);

fn replays_read_back_newest_first(store: &Store) {
    let mut ledger = store.open();
    assert!(ledger.replays().unwrap().is_empty());
    let replay = |id: &str, day: u32| crate::ledger::ReplayEntry {
        replay_id: id.into(),
        recorded_at: Utc.with_ymd_and_hms(2025, 3, day, 10, 0, 0).unwrap(),
        routing: "/w/candidate.toml".into(),
        routing_blake3: "b".repeat(64),
        bundle_path: format!("bundles/{id}.dsse.json"),
        envelope_sha256: "e".repeat(64),
        summary: serde_json::json!({"runs": day, "candidate": {"cost_usd": 0.5}}),
    };
    ledger.add_replay(&replay("replay-a", 1)).unwrap();
    ledger.add_replay(&replay("replay-b", 2)).unwrap();
    // A replay is recorded once.
    assert!(ledger.add_replay(&replay("replay-a", 3)).is_err());
    assert_eq!(
        ledger.replays().unwrap(),
        [replay("replay-b", 2), replay("replay-a", 1)]
    );
    // It is no run: the chain is as it was.
    assert!(ledger.is_empty().unwrap());
}

fn entry(run_id: &str, spec: &str, verdict: &str, day: u32) -> RunEntry {
    RunEntry {
        run_id: run_id.into(),
        spec_id: spec.into(),
        attempt: 1,
        series: None,
        verdict: verdict.into(),
        tier: "light".into(),
        started_at: Utc.with_ymd_and_hms(2025, 3, day, 10, 0, 0).unwrap(),
        finished_at: Utc.with_ymd_and_hms(2025, 3, day, 10, 1, 0).unwrap(),
        input_tokens: 1200,
        cached_input_tokens: 300,
        output_tokens: 90,
        cost_usd: Some(0.012),
        bundle_path: format!("bundles/{run_id}.dsse.json"),
        extra: serde_json::json!({"agent": "a", "models": ["m/x"], "n": 1.5}),
    }
}

/// A run for the report tests: figures that grow with `day`.
pub(crate) fn report_entry(
    run_id: &str,
    spec: &str,
    verdict: &str,
    day: u32,
    extra: serde_json::Value,
) -> RunEntry {
    RunEntry {
        run_id: run_id.into(),
        spec_id: spec.into(),
        attempt: 1,
        series: None,
        verdict: verdict.into(),
        tier: "light".into(),
        started_at: Utc.with_ymd_and_hms(2025, 3, day, 10, 0, 0).unwrap(),
        finished_at: Utc.with_ymd_and_hms(2025, 3, day, 10, 1, 0).unwrap(),
        input_tokens: 100 * u64::from(day),
        cached_input_tokens: 10 * u64::from(day),
        output_tokens: 5,
        cost_usd: Some(0.01 * f64::from(day)),
        bundle_path: format!("bundles/{run_id}.dsse.json"),
        extra,
    }
}

/// Extras as the gate writes them, and odd ones.
pub(crate) fn extras() -> Vec<serde_json::Value> {
    vec![
        serde_json::json!({"agent": "claude-code", "review": "ran", "models": ["m1", "m2"],
               "roles": [
                   {"role": "quality", "model": "m1", "status": "ok", "input_tokens": 70,
                    "cached_input_tokens": 7, "output_tokens": 3, "cost_usd": 0.25},
                   {"role": "security", "model": "m2", "status": "did_not_run",
                    "input_tokens": null, "cached_input_tokens": null, "output_tokens": null,
                    "cost_usd": null}],
               "findings": [{"id": "f1"}, {"id": "f2"}], "overridden": false,
               "dispositions": {"resolved": ["a"], "superseded": ["b", "c"]}, "duplicates": 4,
               "isolation": {"kind": "bwrap", "network": "host", "reason": null}}),
        serde_json::json!({"agent": null, "review": "did_not_run", "models": [], "roles": [], "findings": [],
               "isolation": {"kind": "none", "network": "host", "reason": "off"}}),
        serde_json::json!({}),
        serde_json::json!({"agent": 3, "models": ["m1", "m1", 2, "m3"], "roles": [
                   {"role": "docs", "model": "m3", "input_tokens": -4, "cost_usd": 2},
                   {"role": "docs", "model": "other"}, 7, {"model": "x"}],
               "findings": {"id": "f"}, "duplicates": -2,
               "dispositions": {"resolved": "a", "superseded": []}}),
    ]
}

fn attempt(run_id: &str, spec: &str, n: u32) -> RunEntry {
    RunEntry {
        attempt: n,
        ..entry(run_id, spec, "fail", 1)
    }
}

fn append_chains_rows_and_round_trips(store: &Store) {
    let mut ledger = store.open();
    assert_eq!(ledger.schema_version().unwrap(), SCHEMA_VERSION);
    assert!(ledger.is_empty().unwrap());
    assert_eq!(ledger.tip().unwrap(), None);
    let r1 = ledger
        .append(&entry("r1", "s", "pass", 1), b"env one")
        .unwrap();
    let r2 = ledger
        .append(&entry("r2", "s", "fail", 2), b"env two")
        .unwrap();
    assert_eq!((r1.seq, r2.seq), (1, 2));
    assert_eq!(r1.prev_sha256, None);
    assert_eq!(r2.prev_sha256.as_deref(), Some(r1.envelope_sha256.as_str()));
    assert_eq!(r1.envelope_sha256, crate::bundle::digest(b"env one"));
    assert_eq!(r1.leaf_hash, hex::encode(merkle::leaf_hash(b"env one")));
    assert_eq!(ledger.tip().unwrap(), Some((2, r2.envelope_sha256.clone())));
    // What an append returns is exactly what is stored.
    assert_eq!(ledger.get("r2").unwrap().unwrap(), r2);
    assert_eq!(ledger.rows().unwrap(), vec![r1.clone(), r2.clone()]);
    assert_eq!(ledger.rows_after(1, 10).unwrap(), vec![r2.clone()]);
    assert_eq!(ledger.rows_after(0, 1).unwrap(), vec![r1]);
    // Reopening applies no migration twice and keeps the rows.
    drop(ledger);
    let ledger = store.open();
    assert_eq!(ledger.len().unwrap(), 2);
    assert_eq!(ledger.schema_version().unwrap(), SCHEMA_VERSION);
}

fn duplicates_are_refused(store: &Store) {
    let mut ledger = store.open();
    ledger.append(&entry("r1", "s", "pass", 1), b"env").unwrap();
    let err = ledger
        .append(&entry("r1", "s", "pass", 1), b"other")
        .unwrap_err();
    assert!(
        matches!(err, LedgerError::AlreadyRecorded { seq: 1, .. }),
        "{err}"
    );
    let err = ledger
        .append(&entry("r2", "s", "pass", 1), b"env")
        .unwrap_err();
    assert!(
        matches!(err, LedgerError::EnvelopeRecorded { seq: 1, .. }),
        "{err}"
    );
    assert!(!err.is_unavailable());
    assert_eq!(ledger.len().unwrap(), 1);
    // A refused append leaves the ledger usable.
    ledger
        .append(&entry("r2", "s", "pass", 1), b"env 2")
        .unwrap();
    assert_eq!(ledger.len().unwrap(), 2);
}

fn queries(store: &Store) {
    let mut ledger = store.open();
    let runs = [
        ("0197aa-1", "shop", "pass", 1),
        ("0197ab-2", "shop", "fail", 2),
        ("0197bb-3", "blog", "pass", 3),
        ("0198cc-4", "shop", "pass", 4),
    ];
    for (id, spec, verdict, day) in runs {
        ledger
            .append(&entry(id, spec, verdict, day), id.as_bytes())
            .unwrap();
    }
    let ids = |rows: Vec<LedgerRow>| rows.into_iter().map(|r| r.entry.run_id).collect::<Vec<_>>();
    let cases: Vec<(RunFilter, Vec<&str>)> = vec![
        (
            RunFilter::default(),
            vec!["0198cc-4", "0197bb-3", "0197ab-2", "0197aa-1"],
        ),
        (
            RunFilter {
                spec_id: Some("shop".into()),
                ..RunFilter::default()
            },
            vec!["0198cc-4", "0197ab-2", "0197aa-1"],
        ),
        (
            RunFilter {
                verdict: Some("pass".into()),
                limit: Some(2),
                ..RunFilter::default()
            },
            vec!["0198cc-4", "0197bb-3"],
        ),
        (
            RunFilter {
                since: Some(Utc.with_ymd_and_hms(2025, 3, 3, 0, 0, 0).unwrap()),
                ..RunFilter::default()
            },
            vec!["0198cc-4", "0197bb-3"],
        ),
        (
            RunFilter {
                spec_id: Some("shop".into()),
                verdict: Some("fail".into()),
                since: Some(Utc.with_ymd_and_hms(2025, 3, 2, 10, 0, 0).unwrap()),
                limit: Some(10),
                series: None,
            },
            vec!["0197ab-2"],
        ),
        (
            RunFilter {
                spec_id: Some("none".into()),
                ..RunFilter::default()
            },
            vec![],
        ),
    ];
    for (filter, want) in cases {
        assert_eq!(ids(ledger.list(&filter).unwrap()), want, "{filter:?}");
    }
    assert_eq!(
        ledger.last_for_spec("shop").unwrap().unwrap().entry.run_id,
        "0198cc-4"
    );
    assert!(ledger.last_for_spec("none").unwrap().is_none());
    assert_eq!(ledger.resolve("0197bb-3").unwrap().seq, 3);
    assert_eq!(ledger.resolve("0198").unwrap().seq, 4);
    assert!(
        matches!(ledger.resolve("0197a"), Err(LedgerError::Ambiguous { ref matches, .. }) if matches.len() == 2)
    );
    assert!(matches!(
        ledger.resolve("0199"),
        Err(LedgerError::NotFound(_))
    ));
    let empty = ledger.resolve("").unwrap_err();
    assert!(matches!(empty, LedgerError::NotFound(_)));
    assert_eq!(empty.to_string(), "an empty run id names no run");
    // A LIKE wildcard in a prefix is not a wildcard.
    assert!(matches!(
        ledger.resolve("0197_"),
        Err(LedgerError::NotFound(_))
    ));
}

fn checkpoint_covers_all_rows(store: &Store) {
    let mut ledger = store.open();
    assert_eq!(ledger.checkpoint("o").unwrap().root, merkle::empty_root());
    let envs: Vec<Vec<u8>> = (0..5).map(|i| format!("env {i}").into_bytes()).collect();
    for (i, e) in envs.iter().enumerate() {
        ledger
            .append(&entry(&format!("r{i}"), "s", "pass", 1), e)
            .unwrap();
    }
    let cp = ledger.checkpoint("o").unwrap();
    let leaves: Vec<merkle::Hash> = envs.iter().map(|e| merkle::leaf_hash(e)).collect();
    assert_eq!((cp.size, cp.root), (5, merkle::root(&leaves)));
}

fn newer_schema_is_refused(store: &Store) {
    drop(store.open());
    store.execute(&format!(
        "INSERT INTO schema_version (version, applied_at) VALUES ({}, '2099-01-01T00:00:00Z')",
        SCHEMA_VERSION + 1
    ));
    let err = Ledger::open(store.location()).unwrap_err();
    assert!(
        matches!(err, LedgerError::SchemaTooNew { found, .. } if found == SCHEMA_VERSION + 1),
        "{err}"
    );
}

fn opened_as_is_nothing_is_created_or_migrated(store: &Store) {
    // Nothing there yet: a SQLite file is not created, a database gets no schema.
    match store {
        Store::Sqlite(_) => {
            assert!(Ledger::open_as_is(store.location()).is_err());
            let Location::Sqlite(path) = store.location() else {
                unreachable!()
            };
            assert!(!path.exists(), "an as-is open created the file");
        }
        Store::Postgres(_) => {
            for _ in 0..2 {
                let l = Ledger::open_as_is(store.location()).unwrap();
                assert_eq!(l.schema_version_as_is().unwrap(), 0);
            }
        }
    }
    // One schema version behind: read as it is, left as it is.
    drop(store.open());
    store.execute(&format!(
        "DELETE FROM schema_version WHERE version = {SCHEMA_VERSION}"
    ));
    for _ in 0..2 {
        let l = Ledger::open_as_is(store.location()).unwrap();
        assert_eq!(l.schema_version_as_is().unwrap(), SCHEMA_VERSION - 1);
    }
}

fn live_appends_continue_the_series(store: &Store) {
    let mut ledger = store.open();
    let mut env = 0;
    let mut live = |ledger: &mut Ledger, id: &str, spec: &str, n: u32| {
        env += 1;
        ledger.append_attempt(&attempt(id, spec, n), format!("e{env}").as_bytes())
    };
    // (run, spec, attempt, accepted?, the latest attempt a refusal names)
    let cases: &[(&str, &str, u32, bool, Option<u32>)] = &[
        ("a1", "s", 1, true, None),
        ("a2", "s", 2, true, None),
        ("a2-again", "s", 2, false, Some(2)),
        ("a4", "s", 4, false, Some(2)),
        ("a3", "s", 3, true, None),
        ("b2", "t", 2, false, None),
        ("b1", "t", 1, true, None),
        // A new series may start at any time (after a pass, --new-series).
        ("a1-new", "s", 1, true, None),
        ("a2-new", "s", 2, true, None),
    ];
    for &(id, spec, n, ok, latest) in cases {
        match live(&mut ledger, id, spec, n) {
            Ok(row) => assert!(ok, "{id} was accepted as row {}", row.seq),
            Err(LedgerError::AttemptOutOfSeries {
                latest: found,
                attempt,
                ..
            }) => {
                assert!(!ok, "{id} was refused");
                assert_eq!((found, attempt), (latest, n), "{id}");
            }
            Err(e) => panic!("{id}: {e}"),
        }
    }
    // A refused live append leaves nothing, and an import records as it was.
    assert_eq!(ledger.len().unwrap(), 6);
    ledger.append(&attempt("imported", "s", 2), b"old").unwrap();
    let attempts: Vec<u32> = ledger
        .list(&RunFilter {
            spec_id: Some("s".into()),
            ..RunFilter::default()
        })
        .unwrap()
        .iter()
        .map(|r| r.entry.attempt)
        .collect();
    assert_eq!(attempts, [2, 2, 1, 3, 2, 1]);
}

/// Attempts are counted per spec and series key: a live append continues
/// the latest attempt of its own series, a run without a key is of the
/// spec's own series, and a list reads one series.
fn series_keep_their_own_attempts(store: &Store) {
    let mut ledger = store.open();
    let keyed = |id: &str, series: Option<&str>, n: u32| RunEntry {
        series: series.map(str::to_owned),
        ..attempt(id, "s", n)
    };
    // (run, series, attempt, accepted?, the latest attempt a refusal names)
    type Case<'a> = (&'a str, Option<&'a str>, u32, bool, Option<u32>);
    let cases: &[Case<'_>] = &[
        ("u1", None, 1, true, None),
        ("a1", Some("branch:a"), 1, true, None),
        ("b1", Some("pr:7"), 1, true, None),
        ("a2", Some("branch:a"), 2, true, None),
        // The unkeyed series goes on from its own attempt, not a's.
        ("u2", None, 2, true, None),
        ("u4", None, 4, false, Some(2)),
        ("b3", Some("pr:7"), 3, false, Some(1)),
        ("b2", Some("pr:7"), 2, true, None),
        ("c2", Some("branch:c"), 2, false, None),
        ("a3", Some("branch:a"), 3, true, None),
    ];
    for (i, &(id, series, n, ok, latest)) in cases.iter().enumerate() {
        let envelope = format!("e{i}");
        match ledger.append_attempt(&keyed(id, series, n), envelope.as_bytes()) {
            Ok(row) => {
                assert!(ok, "{id} was accepted as row {}", row.seq);
                assert_eq!(row.entry.series.as_deref(), series, "{id}");
            }
            Err(LedgerError::AttemptOutOfSeries {
                latest: found,
                attempt,
                series: refused_in,
                ..
            }) => {
                assert!(!ok, "{id} was refused");
                assert_eq!((found, attempt), (latest, n), "{id}");
                assert_eq!(refused_in.as_deref(), series, "{id}");
            }
            Err(e) => panic!("{id}: {e}"),
        }
    }
    let ids = |series: Option<SeriesFilter>| -> Vec<String> {
        ledger
            .list(&RunFilter {
                spec_id: Some("s".into()),
                series,
                ..RunFilter::default()
            })
            .unwrap()
            .into_iter()
            .map(|r| r.entry.run_id)
            .collect()
    };
    assert_eq!(
        ids(Some(SeriesFilter::of(Some("branch:a")))),
        ["a3", "a2", "a1"]
    );
    assert_eq!(ids(Some(SeriesFilter::Key("pr:7".into()))), ["b2", "b1"]);
    assert_eq!(ids(Some(SeriesFilter::of(None))), ["u2", "u1"]);
    assert!(ids(Some(SeriesFilter::Key("branch:c".into()))).is_empty());
    assert_eq!(ids(None).len(), 7);
    // The key is stored and read back as appended.
    let reopened = store.open();
    assert_eq!(
        reopened.get("b2").unwrap().unwrap().entry.series.as_deref(),
        Some("pr:7")
    );
    assert_eq!(reopened.get("u1").unwrap().unwrap().entry.series, None);
}

/// A ledger from before series keys: the migration adds the column empty,
/// and its runs are the spec's own series, which a run without a key
/// continues.
fn rows_from_before_series_keys_are_the_specs_own_series(store: &Store) {
    let mut ledger = store.open();
    ledger
        .append_attempt(&attempt("old1", "s", 1), b"o1")
        .unwrap();
    ledger
        .append_attempt(&attempt("old2", "s", 2), b"o2")
        .unwrap();
    drop(ledger);
    let added = super::sqlite::MIGRATIONS
        .iter()
        .position(|m| m.contains("ADD COLUMN series"))
        .unwrap()
        + 1;
    store.execute(&format!(
        "DROP INDEX runs_by_series; ALTER TABLE runs DROP COLUMN series; DROP TABLE replays; \
         DELETE FROM schema_version WHERE version >= {added}"
    ));
    let mut ledger = store.open();
    assert_eq!(ledger.schema_version().unwrap(), SCHEMA_VERSION);
    let old = ledger.get("old2").unwrap().unwrap();
    assert_eq!((old.entry.series, old.entry.attempt), (None, 2));
    let unkeyed = ledger
        .list(&RunFilter {
            series: Some(SeriesFilter::Unkeyed),
            ..RunFilter::default()
        })
        .unwrap();
    assert_eq!(unkeyed.len(), 2);
    // An unkeyed run continues them; a keyed one starts its own series.
    ledger
        .append_attempt(&attempt("new3", "s", 3), b"n3")
        .unwrap();
    let keyed = RunEntry {
        series: Some("branch:b".into()),
        ..attempt("keyed2", "s", 2)
    };
    assert!(matches!(
        ledger.append_attempt(&keyed, b"k2"),
        Err(LedgerError::AttemptOutOfSeries { latest: None, .. })
    ));
}

fn append_all_is_all_or_nothing(store: &Store) {
    let mut ledger = store.open();
    ledger.append(&entry("r0", "s", "pass", 1), b"e0").unwrap();
    let (a, b, c) = (
        entry("r1", "s", "pass", 1),
        report_entry("r2", "s", "pass", 2, serde_json::json!({"models": ["m"]})),
        entry("r0", "s", "pass", 1),
    );
    let refused: [&[(&RunEntry, &[u8])]; 2] = [
        &[(&a, b"e1"), (&b, b"e2"), (&c, b"e3")],
        &[(&a, b"e1"), (&b, b"e1")],
    ];
    for runs in refused {
        let err = ledger.append_all(runs.iter().copied()).unwrap_err();
        assert!(
            matches!(
                err,
                LedgerError::AlreadyRecorded { .. } | LedgerError::EnvelopeRecorded { .. }
            ),
            "{err:?}"
        );
        assert_eq!(ledger.len().unwrap(), 1);
        assert_eq!(ledger.max_seq().unwrap(), 1);
        // Nor are the refused runs' report rows left behind.
        let mut seen = Vec::new();
        ledger
            .scan_run_facts(&ReportScope::default(), |f| seen.push(f.seq))
            .unwrap();
        ledger
            .scan_run_models(&ReportScope::default(), |seq, _| seen.push(seq))
            .unwrap();
        assert_eq!(seen, [1, 1]);
    }
    let rows = ledger
        .append_all([(&a, b"e1".as_slice()), (&b, b"e2".as_slice())])
        .unwrap();
    assert_eq!(rows.iter().map(|r| r.seq).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(
        rows[1].prev_sha256.as_deref(),
        Some(rows[0].envelope_sha256.as_str())
    );
    assert_eq!(ledger.rows().unwrap()[1..], rows[..]);
    assert_eq!(ledger.row_at(3).unwrap().unwrap(), rows[1]);
    assert!(ledger.row_at(4).unwrap().is_none());
    assert_eq!(ledger.max_seq().unwrap(), 3);
}

/// Writers with their own connections, released together.
fn concurrent_appends_stay_one_chain(store: &Store) {
    const WRITERS: usize = 8;
    const EACH: usize = 25;
    drop(store.open());
    let start = Arc::new(Barrier::new(WRITERS));
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let start = Arc::clone(&start);
            s.spawn(move || {
                let mut ledger = store.open();
                start.wait();
                for i in 0..EACH {
                    let id = format!("w{w}-{i}");
                    ledger
                        .append(&entry(&id, &format!("spec{w}"), "pass", 1), id.as_bytes())
                        .unwrap();
                }
            });
        }
    });
    let rows = store.open().rows().unwrap();
    assert_eq!(rows.len(), WRITERS * EACH);
    check_continues("test", None, &rows).unwrap();
    let ids: BTreeSet<&str> = rows.iter().map(|r| r.entry.run_id.as_str()).collect();
    assert_eq!(ids.len(), WRITERS * EACH, "a run is missing or doubled");
    // Each writer's own appends are in its order.
    for w in 0..WRITERS {
        let mine: Vec<&str> = rows
            .iter()
            .map(|r| r.entry.run_id.as_str())
            .filter(|id| id.starts_with(&format!("w{w}-")))
            .collect();
        let want: Vec<String> = (0..EACH).map(|i| format!("w{w}-{i}")).collect();
        assert_eq!(mine, want);
    }
}

fn series_lock_excludes_other_runs_of_the_spec(store: &Store) {
    let (a, b) = (store.open(), store.open());
    let held = a.lock_series("shop", Duration::ZERO).unwrap();
    assert!(held.is_some());
    // Another handle (another process) waits, then gives up.
    let started = Instant::now();
    assert!(
        b.lock_series("shop", Duration::from_millis(200))
            .unwrap()
            .is_none()
    );
    assert!(started.elapsed() >= Duration::from_millis(200));
    // Another spec is not held up.
    assert!(b.lock_series("blog", Duration::ZERO).unwrap().is_some());
    // Released on drop, and a waiter gets it as soon as it is.
    std::thread::scope(|s| {
        let waiter = s.spawn(move || {
            b.lock_series("shop", Duration::from_secs(10))
                .unwrap()
                .is_some()
        });
        std::thread::sleep(Duration::from_millis(100));
        drop(held);
        assert!(waiter.join().unwrap());
    });
}

#[test]
fn postgres_series_lock_outlives_the_servers_idle_session_timeout() {
    let store = Store::postgres();
    store.execute(
        "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET idle_session_timeout = %L', \
         current_database(), '1s'); END $$",
    );
    let (a, b) = (store.open(), store.open());
    let held = a.lock_series("shop", Duration::ZERO).unwrap();
    assert!(held.is_some());
    // Longer than the timeout: the holder's session is still there.
    std::thread::sleep(Duration::from_millis(2500));
    assert!(b.lock_series("shop", Duration::ZERO).unwrap().is_none());
    drop(held);
    assert!(
        b.lock_series("shop", Duration::from_secs(5))
            .unwrap()
            .is_some()
    );
}

#[test]
fn postgres_connections_the_server_ended_are_replaced() {
    let store = Store::postgres();
    let mut ledger = store.open();
    ledger.append(&entry("r1", "s", "pass", 1), b"one").unwrap();
    // An administrator ends the database's other sessions, as a failover
    // or a restart ends them all, while the pool holds them idle.
    store.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    );
    std::thread::sleep(Duration::from_millis(200));
    ledger.append(&entry("r2", "s", "pass", 2), b"two").unwrap();
    assert_eq!(ledger.len().unwrap(), 2);
}

fn run_with_outcomes(store: &Store) -> Ledger {
    let mut l = store.open();
    l.append(&entry("r1", "s", "pass", 1), b"envelope").unwrap();
    l
}

fn outcomes_keep_history_latest_counts(store: &Store) {
    let mut l = run_with_outcomes(store);
    for broken in [false, true] {
        l.add_outcome(&OutcomeEntry {
            run_id: "r1".into(),
            broken,
            reason: Some("ci".into()),
            source: None,
            recorded_at: now(),
            envelope: None,
            evidence: None,
        })
        .unwrap();
    }
    let all = l.outcomes("r1").unwrap();
    assert_eq!(
        all.iter().map(|o| o.broken).collect::<Vec<_>>(),
        [false, true]
    );
    assert_eq!(l.all_outcomes().unwrap(), all);
    let latest = l.latest_outcomes().unwrap();
    assert_eq!(latest.len(), 1);
    assert!(latest[0].broken);
    let missing = l.add_outcome(&OutcomeEntry {
        run_id: "nope".into(),
        broken: true,
        reason: None,
        source: None,
        recorded_at: now(),
        envelope: None,
        evidence: None,
    });
    assert!(matches!(missing, Err(LedgerError::NotFound(_))));
}

fn closed(model: &str) -> BreakerRecord {
    BreakerRecord {
        model: model.into(),
        state: "closed".into(),
        consecutive_failures: 0,
        recent: String::new(),
        opened_at: None,
        cooldown_s: 120,
        probe: None,
        updated_at: now(),
        seal: None,
        last_error: None,
        generation: 0,
    }
}

fn bump(b: Option<BreakerRecord>) -> (Option<BreakerRecord>, u32) {
    let mut b = b.unwrap_or_else(|| closed("m"));
    b.generation += 1;
    b.consecutive_failures += 1;
    b.recent.push('f');
    let n = b.consecutive_failures;
    (Some(b), n)
}

fn breaker_updates_are_read_modify_write(store: &Store) {
    let mut l = run_with_outcomes(store);
    assert_eq!(l.update_breaker("m", bump).unwrap(), 1);
    assert_eq!(l.update_breaker("m", bump).unwrap(), 2);
    let stored = l.breaker("m").unwrap().unwrap();
    assert_eq!(
        (stored.consecutive_failures, stored.recent.as_str()),
        (2, "ff")
    );
    assert!(l.breaker("other").unwrap().is_none());
    // A probe, its owner and times round-trip.
    let until = now() + chrono::Duration::seconds(30);
    let probe = l
        .update_breaker("p", |_| {
            let mut b = closed("p");
            b.state = "half_open".into();
            b.opened_at = Some(now());
            b.probe = Some(("run-1".into(), until));
            (Some(b.clone()), b)
        })
        .unwrap();
    assert_eq!(l.breaker("p").unwrap().unwrap(), probe);
    // `None` writes nothing.
    assert_eq!(l.update_breaker("q", |_| (None, 7)).unwrap(), 7);
    assert_eq!(
        l.breakers()
            .unwrap()
            .iter()
            .map(|b| b.model.as_str())
            .collect::<Vec<_>>(),
        ["m", "p"]
    );
}

fn concurrent_breaker_updates_lose_nothing(store: &Store) {
    const WRITERS: u32 = 6;
    const EACH: u32 = 10;
    drop(store.open());
    std::thread::scope(|s| {
        for _ in 0..WRITERS {
            s.spawn(|| {
                let mut l = store.open();
                for _ in 0..EACH {
                    l.update_breaker("shared", bump).unwrap();
                }
            });
        }
    });
    let b = store.open().breaker("shared").unwrap().unwrap();
    assert_eq!(b.consecutive_failures, WRITERS * EACH);
    assert_eq!(b.generation, u64::from(WRITERS * EACH));
}

/// A breaker state's generation is kept and signed: a state copied back
/// reads as the older generation it is, and a column edited under a
/// signed state (the generation raised to pass for the newest) disagrees.
fn breaker_generations_are_kept_and_signed(store: &Store) {
    let key = crate::keys::SigningKey::from_seed(&[5; 32]);
    let trusted = [key.public_key().clone()];
    let mut l = run_with_outcomes(store);
    let mut written = Vec::new();
    for state in ["closed", "open", "half_open", "closed"] {
        let rec = l
            .update_breaker("m", |current| {
                let mut b = current.unwrap_or_else(|| closed("m"));
                b.generation += 1;
                state.clone_into(&mut b.state);
                let sealed = seal(&b, &key);
                (Some(sealed.clone()), sealed)
            })
            .unwrap();
        written.push(rec);
    }
    let now_stored = l.breaker("m").unwrap().unwrap();
    assert_eq!(now_stored.generation, 4);
    assert!(vouch(&now_stored, &trusted).is_ok());
    // The open state, copied back whole: it still vouches, as generation 2.
    let old = written[1].clone();
    l.update_breaker("m", |_| (Some(old.clone()), ())).unwrap();
    let replayed = l.breaker("m").unwrap().unwrap();
    assert_eq!((replayed.generation, replayed.state.as_str()), (2, "open"));
    assert!(vouch(&replayed, &trusted).is_ok());
    // (the edit behind the gate's back, the column vouching names)
    let cases = [
        ("UPDATE breakers SET generation = 99", "generation"),
        ("UPDATE breakers SET state = 'closed'", "state"),
        ("UPDATE breakers SET cooldown_s = 999999", "cooldown_s"),
    ];
    for (sql, column) in cases {
        l.update_breaker("m", |_| (Some(old.clone()), ())).unwrap();
        store.execute(sql);
        let edited = store.open().breaker("m").unwrap().unwrap();
        let Err(Unvouched::Disagrees(d)) = vouch(&edited, &trusted) else {
            panic!("{sql}: still vouches");
        };
        assert_eq!(d[0].column, column, "{sql}");
    }
}

/// Every column of an override row reads back as the database holds it,
/// so an edit is seen by what compares it with the override's bundle.
fn override_columns_read_back_as_stored(store: &Store) {
    let at = Utc.with_ymd_and_hms(2025, 3, 4, 5, 6, 7).unwrap();
    let o = OverrideEntry {
        run_id: "r1".into(),
        spec_id: "s".into(),
        reason: "flaky".into(),
        by: "ann".into(),
        content_digest: "c".repeat(64),
        bundle_path: "bundles/r1.override.dsse.json".into(),
        bundle_sha256: "d".repeat(64),
        recorded_at: at,
    };
    // (the edit, what the row reads as after it)
    type Want = fn(&mut OverrideEntry);
    let cases: [(&str, Want); 6] = [
        ("", |_| {}),
        ("UPDATE overrides SET spec_id = 'other'", |o| {
            o.spec_id = "other".into();
        }),
        ("UPDATE overrides SET reason = 'ok'", |o| {
            o.reason = "ok".into();
        }),
        ("UPDATE overrides SET by_name = 'bob'", |o| {
            o.by = "bob".into();
        }),
        ("UPDATE overrides SET content_digest = 'e'", |o| {
            o.content_digest = "e".into();
        }),
        ("UPDATE overrides SET bundle_sha256 = 'f'", |o| {
            o.bundle_sha256 = "f".into();
        }),
    ];
    for (sql, want) in cases {
        let fresh = Store::same_kind(store);
        let mut l = run_with_outcomes(&fresh);
        l.add_override(&o).unwrap();
        if !sql.is_empty() {
            fresh.execute(sql);
        }
        let mut expected = o.clone();
        want(&mut expected);
        assert_eq!(fresh.open().overrides(None).unwrap(), [expected], "{sql}");
    }
}

fn dismissals_and_overrides_by_spec(store: &Store) {
    let mut l = run_with_outcomes(store);
    l.add_dismissal(&Dismissal {
        run_id: "r1".into(),
        spec_id: "s".into(),
        finding_id: "abc".into(),
        reason: "noise".into(),
        code_digest: None,
        recorded_at: now(),
        envelope: None,
        by: None,
    })
    .unwrap();
    assert_eq!(l.dismissals(Some("s")).unwrap().len(), 1);
    assert_eq!(l.dismissals(None).unwrap().len(), 1);
    assert!(l.dismissals(Some("t")).unwrap().is_empty());
    let o = OverrideEntry {
        run_id: "r1".into(),
        spec_id: "s".into(),
        reason: "hotfix".into(),
        by: "ana".into(),
        content_digest: "d".into(),
        bundle_path: "p".into(),
        bundle_sha256: "sha".into(),
        recorded_at: now(),
    };
    l.add_override(&o).unwrap();
    assert_eq!(l.overrides(None).unwrap(), vec![o.clone()]);
    assert_eq!(l.overrides(Some("s")).unwrap(), vec![o]);
    assert!(l.overrides(Some("t")).unwrap().is_empty());
}

fn copy_refuses_a_non_empty_target(store: &Store) {
    let mut target = run_with_outcomes(store);
    let source_dir = tempfile::tempdir().unwrap();
    let mut source = Ledger::open(source_dir.path().join("src.db")).unwrap();
    source.append(&entry("x", "s", "pass", 1), b"x").unwrap();
    let err = copy(&source, &mut target).unwrap_err();
    assert!(matches!(err, LedgerError::NotEmpty { .. }), "{err}");
    // Rows that do not continue a chain are refused, and leave nothing.
    let row = source.rows().unwrap().remove(0);
    let err = target.copy_rows(&[row]).unwrap_err();
    assert!(
        matches!(err, LedgerError::NotContinuing { seq: 1, .. }),
        "{err}"
    );
    assert_eq!(target.len().unwrap(), 1);
}

fn scans_honour_the_scope(store: &Store) {
    let mut l = store.open();
    let x = extras();
    let runs = [
        report_entry("r1", "shop", "pass", 1, x[0].clone()),
        report_entry("r2", "blog", "fail", 2, x[0].clone()),
        report_entry("r3", "shop", "escalate", 3, x[3].clone()),
    ];
    for (i, e) in runs.iter().enumerate() {
        l.append(e, format!("e{i}").as_bytes()).unwrap();
    }
    let since = |d| Some(Utc.with_ymd_and_hms(2025, 3, d, 0, 0, 0).unwrap());
    let cases = [
        (
            ReportScope::default(),
            vec![1, 2, 3],
            vec![1, 1, 2, 2, 3, 3],
            vec![1, 1, 2, 2, 3],
        ),
        (
            ReportScope {
                spec_id: Some("shop".into()),
                since: None,
            },
            vec![1, 3],
            vec![1, 1, 3, 3],
            vec![1, 1, 3],
        ),
        (
            ReportScope {
                spec_id: None,
                since: since(2),
            },
            vec![2, 3],
            vec![2, 2, 3, 3],
            vec![2, 2, 3],
        ),
        (
            ReportScope {
                spec_id: Some("blog".into()),
                since: since(3),
            },
            vec![],
            vec![],
            vec![],
        ),
    ];
    for (scope, runs, models, roles) in cases {
        let mut seen = Vec::new();
        l.scan_run_facts(&scope, |f| seen.push(f.seq)).unwrap();
        assert_eq!(seen, runs, "{scope:?}");
        let mut seen = Vec::new();
        l.scan_run_models(&scope, |seq, _| seen.push(seq)).unwrap();
        seen.sort_unstable();
        assert_eq!(seen, models, "{scope:?}");
        let mut seen = Vec::new();
        l.scan_run_roles(&scope, |r| seen.push(r.seq)).unwrap();
        seen.sort_unstable();
        assert_eq!(seen, roles, "{scope:?}");
    }
    let mut first = None;
    l.scan_run_facts(&ReportScope::default(), |f| {
        if f.seq == 1 {
            first = Some(format!(
                "{} {} {} {} {:?} {:?} {} {} {} {:?} {} {} {} {}",
                f.spec_id,
                f.verdict,
                f.tier,
                f.started_on,
                f.agent,
                f.review,
                f.input_tokens,
                f.cached_input_tokens,
                f.output_tokens,
                f.cost_usd,
                f.findings,
                f.duplicates,
                f.resolved,
                f.superseded
            ));
        }
    })
    .unwrap();
    assert_eq!(
        first.unwrap(),
        "shop pass light 2025-03-01 Some(\"claude-code\") Some(\"ran\") 100 10 5 Some(0.01) 2 4 1 2"
    );
    let mut roles = Vec::new();
    l.scan_run_roles(&ReportScope::default(), |r| {
        roles.push(format!(
            "{} {} {} {} {} {} {} {:?}",
            r.seq,
            r.role,
            r.model,
            r.status,
            r.input_tokens,
            r.cached_input_tokens,
            r.output_tokens,
            r.cost_usd
        ));
    })
    .unwrap();
    // Specialists come in no particular order.
    roles.sort();
    assert_eq!(
        roles,
        [
            "1 quality m1 ok 70 7 3 Some(0.25)",
            "1 security m2 did_not_run 0 0 0 None",
            "2 quality m1 ok 70 7 3 Some(0.25)",
            "2 security m2 did_not_run 0 0 0 None",
            "3 docs m3  0 0 0 Some(2.0)",
        ]
    );
}

fn harvest_states_keep_the_latest_finding(store: &Store) {
    let mut l = store.open();
    for (i, id) in ["r1", "r2"].iter().enumerate() {
        l.append(
            &report_entry(id, "s", "pass", i as u32 + 1, serde_json::json!({})),
            id.as_bytes(),
        )
        .unwrap();
    }
    let state = |r: &str, s: &str| (r.to_owned(), s.to_owned());
    l.set_harvest_states(
        &[state("r1", NOT_INTEGRATED), state("r2", "pending")],
        now(),
    )
    .unwrap();
    l.set_harvest_states(&[state("r1", "labelled")], now())
        .unwrap();
    assert_eq!(
        l.harvest_states().unwrap(),
        [(1, "labelled".to_owned()), (2, "pending".to_owned())]
    );
    // A run the ledger does not hold records nothing.
    assert!(
        l.set_harvest_states(&[state("nope", "pending")], now())
            .is_err()
    );
    assert_eq!(l.harvest_states().unwrap().len(), 2);
}

fn outcome_states_and_dismissals(store: &Store) {
    let mut l = store.open();
    for (i, id) in ["r1", "r2", "r3", "r4"].iter().enumerate() {
        l.append(
            &report_entry(id, "s", "fail", i as u32 + 1, serde_json::json!({})),
            id.as_bytes(),
        )
        .unwrap();
    }
    let at = |h| Utc.with_ymd_and_hms(2025, 4, 1, h, 0, 0).unwrap();
    let outcome = |run: &str, broken, h| OutcomeEntry {
        run_id: run.into(),
        broken,
        reason: None,
        source: None,
        recorded_at: at(h),
        envelope: Some(format!("signed {run} {h}")),
        // One harvested outcome: its evidence reads back whole.
        evidence: (run == "r1" && h == 8).then(|| crate::ledger::OutcomeEvidence {
            confidence: 95,
            landed: vec!["a".repeat(40)],
            landed_by: "patch".into(),
            commits: vec![crate::ledger::EvidenceCommit {
                commit: "b".repeat(40),
                summary: "Revert \"x\"".into(),
                date: at(7),
            }],
            blamed: vec![crate::ledger::BlamedLine {
                file: "src/x.rs".into(),
                line: 3,
                commit: "a".repeat(40),
            }],
            survived: None,
        }),
    };
    // Latest by the order recorded, not by the time given.
    l.add_outcomes(&[
        outcome("r3", false, 5),
        outcome("r1", false, 9),
        outcome("r1", true, 8),
    ])
    .unwrap();
    for (run, h) in [("r2", 3), ("r3", 4), ("r3", 6)] {
        l.add_override(&OverrideEntry {
            run_id: run.into(),
            spec_id: "s".into(),
            reason: "hotfix".into(),
            by: "ana".into(),
            content_digest: "d".into(),
            bundle_path: format!("o-{run}-{h}"),
            bundle_sha256: format!("sha-{run}-{h}"),
            recorded_at: at(h),
        })
        .unwrap();
    }
    let states = l.outcome_states().unwrap();
    let brief: Vec<_> = states
        .iter()
        .map(|s| (s.seq, s.run_id.as_str(), s.latest, s.overridden_at))
        .collect();
    assert_eq!(
        brief,
        [
            (1, "r1", Some((true, at(8))), None),
            (2, "r2", None, Some(at(3))),
            (3, "r3", Some((false, at(5))), Some(at(6))),
        ]
    );
    // Every outcome is there, oldest first, envelope and all, for the
    // reader to vouch for.
    assert_eq!(
        states[0].outcomes,
        [outcome("r1", false, 9), outcome("r1", true, 8)]
    );
    assert!(states[1].outcomes.is_empty());
    assert_eq!(states[2].outcomes, [outcome("r3", false, 5)]);
    // A batch naming an unknown run records nothing.
    let err = l.add_outcomes(&[outcome("r4", true, 1), outcome("nope", true, 1)]);
    assert!(matches!(err, Err(LedgerError::NotFound(ref r)) if r == "nope"));
    assert!(l.outcomes("r4").unwrap().is_empty());
    for (run, finding) in [("r2", "f1"), ("r4", "f2")] {
        l.add_dismissal(&Dismissal {
            run_id: run.into(),
            spec_id: "s".into(),
            finding_id: finding.into(),
            reason: "noise".into(),
            code_digest: None,
            recorded_at: at(1),
            envelope: Some(format!("signed {run}")),
            by: None,
        })
        .unwrap();
    }
    let refs: Vec<_> = l
        .dismissal_refs()
        .unwrap()
        .into_iter()
        .map(|d| {
            (
                d.seq,
                d.finding_id,
                d.dismissal.run_id,
                d.dismissal.envelope,
            )
        })
        .collect();
    assert_eq!(
        refs,
        [
            (2, "f1".into(), "r2".into(), Some("signed r2".into())),
            (4, "f2".into(), "r4".into(), Some("signed r4".into())),
        ]
    );
}

/// What the report tables hold, as text, in one order.
fn report_dump(l: &Ledger) -> Vec<String> {
    let all = ReportScope::default();
    let mut out = Vec::new();
    l.scan_run_facts(&all, |f| out.push(format!("{f:?}")))
        .unwrap();
    let mut more = Vec::new();
    l.scan_run_models(&all, |seq, m| more.push(format!("model {seq} {m}")))
        .unwrap();
    l.scan_run_roles(&all, |r| more.push(format!("{r:?}")))
        .unwrap();
    more.sort();
    out.extend(more);
    out
}

/// Migrations 3 and 5 fill the report tables from the rows already there;
/// what they read out of each run's `extra` must be what an append reads.
fn migration_3_backfills_what_append_writes(store: &Store) {
    let mut l = store.open();
    for (i, x) in extras().into_iter().enumerate() {
        let day = u32::try_from(i).unwrap() + 1;
        l.append(
            &report_entry(&format!("r{i}"), "s", "pass", day, x),
            format!("envelope {i}").as_bytes(),
        )
        .unwrap();
    }
    let appended = report_dump(&l);
    assert!(appended.len() > 2 * extras().len(), "{appended:#?}");
    drop(l);
    // Back to schema 2 (the bundles of schema 4, the envelopes of schema 7
    // and the columns, tables and index of the later schemas go too), then
    // up again.
    store.execute(
        "DROP INDEX runs_by_series; ALTER TABLE runs DROP COLUMN series; DROP TABLE run_facts; DROP TABLE run_models; DROP TABLE run_roles; DROP TABLE bundles; \
         DROP TABLE base_results; ALTER TABLE outcomes DROP COLUMN envelope; \
         ALTER TABLE dismissals DROP COLUMN envelope; ALTER TABLE breakers DROP COLUMN seal; \
         ALTER TABLE breakers DROP COLUMN last_error; ALTER TABLE dismissals DROP COLUMN by_name; \
         ALTER TABLE outcomes DROP COLUMN evidence; DROP TABLE harvest_states; \
         ALTER TABLE breakers DROP COLUMN generation; DROP TABLE replays; \
         DELETE FROM schema_version WHERE version > 2;",
    );
    let l = store.open();
    assert_eq!(l.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(report_dump(&l), appended);
    // What the migrations wrote vouches as what an append writes does.
    for (row, stamp) in l.stamped_rows_after(0, 100).unwrap() {
        assert_eq!(
            stamp.derived,
            crate::ledger::expected_report_rows(row.seq, &row.entry),
            "{row:?}"
        );
    }
}

/// A ledger whose tail was cut by hand: the next append reuses the cut
/// seq, and the report tables hold the new run's rows, not the cut one's
/// (the same as a ledger that never had the cut run).
fn a_cut_ledger_keeps_no_stale_report_rows(store: &Store) {
    let x = extras();
    let kept = report_entry("r0", "s", "pass", 1, x[0].clone());
    let cut = report_entry("r1", "s", "fail", 2, x[0].clone());
    let next = report_entry("r2", "t", "pass", 3, x[1].clone());
    let mut l = store.open();
    l.append(&kept, b"e0").unwrap();
    l.append(&cut, b"e1").unwrap();
    drop(l);
    store.execute("DELETE FROM runs WHERE seq = 2");
    let mut l = store.open();
    assert_eq!(l.append(&next, b"e2").unwrap().seq, 2);

    let never = Store::sqlite();
    let mut never_cut = never.open();
    never_cut.append(&kept, b"e0").unwrap();
    never_cut.append(&next, b"e2").unwrap();
    assert_eq!(report_dump(&l), report_dump(&never_cut));
}

/// A base result is found again only under its whole key, and the first
/// one kept for a key stays.
fn base_results_are_kept_once_per_key(store: &Store) {
    let mut l = store.open();
    let kept = BaseResult {
        base_commit: "c0ffee".into(),
        item_id: "orders-201".into(),
        definition_digest: "def".into(),
        verifier_digest: "ver".into(),
        status: "failed".into(),
        reason: Some("exited with status 1".into()),
        output_digest: "out".into(),
        run_id: "r1".into(),
        recorded_at: now(),
    };
    assert_eq!(
        l.base_result("c0ffee", "orders-201", "def", "ver").unwrap(),
        None
    );
    l.put_base_result(&kept).unwrap();
    l.put_base_result(&BaseResult {
        status: "passed".into(),
        reason: None,
        run_id: "r2".into(),
        ..kept.clone()
    })
    .unwrap();
    let found = l
        .base_result("c0ffee", "orders-201", "def", "ver")
        .unwrap()
        .unwrap();
    assert_eq!(found.status, "failed");
    assert_eq!(found.run_id, "r1");
    assert_eq!(found.reason, kept.reason);
    assert_eq!(found.recorded_at.timestamp(), kept.recorded_at.timestamp());
    for (commit, item, def, ver) in [
        ("other", "orders-201", "def", "ver"),
        ("c0ffee", "orders-202", "def", "ver"),
        ("c0ffee", "orders-201", "changed", "ver"),
        ("c0ffee", "orders-201", "def", "changed"),
    ] {
        assert_eq!(
            l.base_result(commit, item, def, ver).unwrap(),
            None,
            "{commit} {item} {def} {ver}"
        );
    }
}

/// What a run's `extra` says of its criteria is what the report reads.
fn report_facts_count_fail_to_pass_evidence(store: &Store) {
    let mut l = store.open();
    let x = serde_json::json!({"criteria_passed": 5, "fail_to_pass": 3});
    l.append(&report_entry("r1", "s", "pass", 1, x), b"e1")
        .unwrap();
    l.append(
        &report_entry("r2", "s", "pass", 2, serde_json::json!({})),
        b"e2",
    )
    .unwrap();
    let mut seen = Vec::new();
    l.scan_run_facts(&ReportScope::default(), |f| {
        seen.push((f.criteria_passed, f.fail_to_pass));
    })
    .unwrap();
    assert_eq!(seen, vec![(5, 3), (0, 0)]);
}

/// A bundle kept in the ledger goes in with its row, or not at all.
fn bundles_kept_in_the_ledger(store: &Store) {
    let mut l = store.open();
    let kept = |id: &str, envelope: &[u8]| RunEntry {
        bundle_path: format!("{BUNDLE_IN_LEDGER}{}", crate::bundle::digest(envelope)),
        ..attempt(id, "s", 1)
    };
    l.append_attempt(&kept("r1", b"one"), b"one").unwrap();
    assert_eq!(
        l.bundle(&crate::bundle::digest(b"one")).unwrap().as_deref(),
        Some(b"one".as_slice())
    );
    // A row that points elsewhere keeps no bundle here.
    l.append(&entry("r2", "s", "pass", 1), b"two").unwrap();
    assert_eq!(l.bundle(&crate::bundle::digest(b"two")).unwrap(), None);
    // Refused appends keep nothing: a duplicate, an attempt out of series,
    // a path naming other bytes.
    let refused = [
        l.append(&kept("r1", b"three"), b"three").unwrap_err(),
        l.append_attempt(
            &RunEntry {
                attempt: 3,
                ..kept("r3", b"three")
            },
            b"three",
        )
        .unwrap_err(),
        l.append(&kept("r3", b"other"), b"three").unwrap_err(),
    ];
    assert!(matches!(refused[0], LedgerError::AlreadyRecorded { .. }));
    assert!(matches!(refused[1], LedgerError::AttemptOutOfSeries { .. }));
    assert!(
        matches!(refused[2], LedgerError::BundleMismatch { .. }),
        "{}",
        refused[2]
    );
    assert_eq!(l.bundle(&crate::bundle::digest(b"three")).unwrap(), None);
    assert_eq!(l.len().unwrap(), 2);
    // A bundle with no run of its own (an override's), and paging.
    let sha = l.put_bundle(b"override").unwrap();
    assert_eq!(l.put_bundle(b"override").unwrap(), sha);
    let mut all = vec![
        (crate::bundle::digest(b"one"), b"one".to_vec()),
        (sha, b"override".to_vec()),
    ];
    all.sort();
    assert_eq!(l.bundles_after("", 10).unwrap(), all);
    assert_eq!(l.bundles_after("", 1).unwrap(), all[..1]);
    assert_eq!(l.bundles_after(&all[0].0, 10).unwrap(), all[1..]);
}

/// A SQLite ledger with everything in it, for the copy tests.
fn full_sqlite(dir: &std::path::Path, runs: usize) -> Ledger {
    let mut l = Ledger::open(dir.join("ledger.db")).unwrap();
    let made: Vec<(RunEntry, Vec<u8>)> = (0..runs)
        .map(|i| {
            let mut e = entry(&format!("run-{i:05}"), &format!("spec{}", i % 3), "fail", 1);
            e.attempt = u32::try_from(i / 3 + 1).unwrap();
            e.series = (i % 5 == 0).then(|| format!("pr:{i}"));
            e.cost_usd = (i % 2 == 0).then_some(0.001 * i as f64);
            e.extra = extras()[i % 4].clone();
            let envelope = format!("envelope {i}").into_bytes();
            if i % 7 == 0 {
                e.bundle_path = format!("{BUNDLE_IN_LEDGER}{}", crate::bundle::digest(&envelope));
            }
            (e, envelope)
        })
        .collect();
    l.append_all(made.iter().map(|(e, b)| (e, b.as_slice())))
        .unwrap();
    let override_sha = l.put_bundle(b"override envelope").unwrap();
    for (i, broken) in [(0, false), (3, true), (0, true)] {
        l.add_outcome(&OutcomeEntry {
            run_id: format!("run-{i:05}"),
            broken,
            reason: Some(format!("why {i}")),
            source: Some("ci".into()),
            recorded_at: now(),
            envelope: None,
            evidence: None,
        })
        .unwrap();
    }
    l.add_dismissal(&Dismissal {
        run_id: "run-00001".into(),
        spec_id: "spec1".into(),
        finding_id: "f".into(),
        reason: "noise".into(),
        code_digest: Some("c".into()),
        recorded_at: now(),
        envelope: None,
        by: None,
    })
    .unwrap();
    l.add_override(&OverrideEntry {
        run_id: "run-00002".into(),
        spec_id: "spec2".into(),
        reason: "hotfix".into(),
        by: "ana".into(),
        content_digest: "d".into(),
        bundle_path: format!("{BUNDLE_IN_LEDGER}{override_sha}"),
        bundle_sha256: override_sha,
        recorded_at: now(),
    })
    .unwrap();
    l.update_breaker("m", bump).unwrap();
    l
}

fn check_copy(from: &Ledger, to: &mut Ledger, runs: usize) {
    let report = copy(from, to).unwrap();
    assert_eq!(report.runs, runs as u64);
    assert_eq!(
        (
            report.outcomes,
            report.dismissals,
            report.overrides,
            report.breakers,
            report.bundles,
        ),
        (3, 1, 1, 1, runs.div_ceil(7) + 1)
    );
    assert_eq!(to.rows().unwrap(), from.rows().unwrap());
    assert_eq!(to.checkpoint("o").unwrap(), from.checkpoint("o").unwrap());
    assert_eq!(to.all_outcomes().unwrap(), from.all_outcomes().unwrap());
    assert_eq!(
        to.latest_outcomes().unwrap(),
        from.latest_outcomes().unwrap()
    );
    assert_eq!(to.dismissals(None).unwrap(), from.dismissals(None).unwrap());
    assert_eq!(to.overrides(None).unwrap(), from.overrides(None).unwrap());
    assert_eq!(to.breakers().unwrap(), from.breakers().unwrap());
    assert_eq!(
        to.bundles_after("", 10_000).unwrap(),
        from.bundles_after("", 10_000).unwrap()
    );
    assert_eq!(report_dump(to), report_dump(from));
    // The copy goes on as a ledger of its own.
    let next = to
        .append(&entry("after", "s", "pass", 1), b"after")
        .unwrap();
    assert_eq!(next.seq, runs as u64 + 1);
    assert_eq!(
        next.prev_sha256.as_deref(),
        Some(from.tip().unwrap().unwrap().1.as_str())
    );
}

#[test]
fn copy_sqlite_to_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let from = full_sqlite(dir.path(), 2_345);
    let mut to = Ledger::open(dir.path().join("to.db")).unwrap();
    check_copy(&from, &mut to, 2_345);
}

#[test]
fn copy_sqlite_to_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let from = full_sqlite(dir.path(), 2_345);
    let db = Database::fresh();
    let mut to = Ledger::open(Location::Postgres(db.url.clone())).unwrap();
    check_copy(&from, &mut to, 2_345);
}

#[test]
fn copy_postgres_to_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::fresh();
    let mut pg = Ledger::open(Location::Postgres(db.url.clone())).unwrap();
    copy(&full_sqlite(dir.path(), 1_234), &mut pg).unwrap();
    let mut to = Ledger::open(dir.path().join("back.db")).unwrap();
    check_copy(&pg, &mut to, 1_234);
}

/// One schema: every table has the same columns, in the same order, in
/// both stores (a migration added to one list only is caught here).
#[test]
fn both_stores_have_one_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    drop(Ledger::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    let db = Database::fresh();
    drop(Ledger::open(Location::Postgres(db.url.clone())).unwrap());
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let pg_tables = db.column(
        "SELECT table_name FROM information_schema.tables \
         WHERE table_schema = 'public' ORDER BY table_name",
    );
    assert_eq!(tables, pg_tables);
    for table in &tables {
        let sqlite_cols: Vec<String> = conn
            .prepare(&format!(
                "SELECT name FROM pragma_table_info('{table}') ORDER BY cid"
            ))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let pg_cols = db.column(&format!(
            "SELECT column_name FROM information_schema.columns \
                 WHERE table_schema = 'public' AND table_name = '{table}' ORDER BY ordinal_position"
        ));
        assert_eq!(sqlite_cols, pg_cols, "table {table}");
    }
}

/// A server that is not there fails fast and reads as unreachable (exit
/// 4), never as a bad ledger; no server is needed for these.
#[test]
fn an_unreachable_server_fails_fast_and_clearly() {
    // Nothing listens on a port we just closed: refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // A listener that accepts and never answers: only the timeout ends it.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let cases = [
        (
            format!("postgres://gate:hunter2@127.0.0.1:{port}/gate"),
            Duration::from_secs(3),
        ),
        (
            format!("postgres://gate:hunter2@127.0.0.1:{silent_port}/gate?connect_timeout=1"),
            Duration::from_secs(4),
        ),
    ];
    for (url, within) in cases {
        let started = Instant::now();
        let err = Ledger::open(Location::parse(&url).unwrap()).unwrap_err();
        assert!(
            started.elapsed() < within,
            "{url}: took {:?}",
            started.elapsed()
        );
        assert!(err.is_unavailable(), "{err}");
        let msg = err.to_string();
        assert!(
            msg.starts_with("cannot reach ledger postgres://gate:***@127.0.0.1"),
            "{msg}"
        );
        assert!(!msg.contains("hunter2"), "{msg}");
    }
    drop(silent);
}

/// The ledger's blocking calls work from every kind of caller: plain
/// threads (above), the gate's multi-thread runtime, and a current-thread
/// runtime.
#[test]
fn postgres_calls_work_inside_any_runtime() {
    let db = Database::fresh();
    let location = Location::Postgres(db.url.clone());
    for flavor in ["multi", "current"] {
        let rt = match flavor {
            "multi" => tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build(),
            _ => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build(),
        }
        .unwrap();
        let location = location.clone();
        rt.block_on(async move {
            let mut l = Ledger::open(location).unwrap();
            let id = format!("run-{flavor}");
            l.append(&entry(&id, "s", "pass", 1), id.as_bytes())
                .unwrap();
            assert!(l.get(&id).unwrap().is_some());
            let lock = l.lock_series("s", Duration::ZERO).unwrap();
            drop(lock);
            drop(l);
        });
    }
}

/// A row's stamp is the same read alone or with the row, names the row's
/// envelope, and changes when any column is edited behind the gate's back.
fn a_rows_stamp_changes_with_any_column(store: &Store) {
    let mut ledger = store.open();
    let r1 = ledger
        .append(&entry("r1", "s", "pass", 1), b"env one")
        .unwrap();
    ledger
        .append(&entry("r2", "s", "fail", 2), b"env two")
        .unwrap();
    let stamps = ledger.stamps_after(0, 10).unwrap();
    let stamped = ledger.stamped_rows_after(0, 10).unwrap();
    assert_eq!(stamps.len(), 2);
    assert_eq!(stamps, stamped.iter().map(|(_, s)| *s).collect::<Vec<_>>());
    assert_eq!(stamped[0].0, r1);
    assert_eq!(
        stamps[0].envelope,
        RowStamp::envelope_of(&r1.envelope_sha256)
    );
    assert_ne!(stamps[0].columns, stamps[1].columns);
    assert_eq!(ledger.stamps_after(1, 10).unwrap(), stamps[1..]);
    for edit in [
        "UPDATE runs SET verdict = 'fail' WHERE seq = 1",
        "UPDATE runs SET cost_usd = NULL WHERE seq = 1",
        "UPDATE runs SET extra_json = '{\"agent\": \"b\"}' WHERE seq = 1",
        "UPDATE runs SET series = 'k' WHERE seq = 1",
    ] {
        store.execute(edit);
        let now = ledger.stamps_after(0, 10).unwrap();
        assert_ne!(now[0].columns, stamps[0].columns, "{edit}");
        assert_eq!(now[1], stamps[1], "{edit}: another row");
    }
}

/// The digest of a run's report rows is what its row derives, the same
/// read alone or with the row, and no longer after any edit to them (the
/// rows a report counts, not the row its bundle vouches for).
fn report_rows_are_stamped_against_what_the_row_derives(store: &Store) {
    report_rows_stamped(store, None);
    for edit in [
        "UPDATE run_facts SET verdict = 'pass' WHERE seq = 1",
        "UPDATE run_facts SET spec_id = 'other' WHERE seq = 1",
        "UPDATE run_facts SET findings = 0 WHERE seq = 1",
        "UPDATE run_facts SET cost_usd = 0.0125 WHERE seq = 1",
        "INSERT INTO run_models (seq, model) VALUES (1, 'm/w')",
        "DELETE FROM run_models WHERE seq = 1 AND model = 'm/x'",
        "UPDATE run_roles SET status = 'ok' WHERE seq = 1 AND role = 'quality'",
        "UPDATE run_roles SET cost_usd = NULL WHERE seq = 1",
        "DELETE FROM run_roles WHERE seq = 1 AND role = 'security'",
        "DELETE FROM run_facts WHERE seq = 1",
    ] {
        let fresh = match store {
            Store::Sqlite(_) => Store::sqlite(),
            Store::Postgres(_) => Store::postgres(),
        };
        report_rows_stamped(&fresh, Some(edit));
    }
}

/// Two runs, then `edit` (of the first run's report rows) when given.
fn report_rows_stamped(store: &Store, edit: Option<&str>) {
    let mut ledger = store.open();
    let mut e1 = entry("r1", "s", "fail", 1);
    e1.extra = serde_json::json!({
        "agent": "a",
        "review": "ran",
        "models": ["m/y", "m/x", "m/y", "M/z"],
        "roles": [
            {"role": "security", "model": "m/x", "status": "ok", "input_tokens": 10,
             "output_tokens": 3, "cost_usd": 0.25},
            {"role": "quality", "model": "m/y", "status": "did_not_run"},
            {"role": "security", "model": "m/z", "status": "ok"},
        ],
        "findings": [{"id": "f1"}],
        "isolation": {"kind": "bwrap"},
    });
    let mut e2 = entry("r2", "s", "pass", 2);
    e2.cost_usd = None;
    let rows = [
        ledger.append(&e1, b"env one").unwrap(),
        ledger.append(&e2, b"env two").unwrap(),
    ];
    let expected: Vec<[u8; 32]> = rows
        .iter()
        .map(|r| crate::ledger::expected_report_rows(r.seq, &r.entry))
        .collect();
    let stamps = ledger.stamps_after(0, 10).unwrap();
    let stamped = ledger.stamped_rows_after(0, 10).unwrap();
    assert_eq!(stamps, stamped.iter().map(|(_, s)| *s).collect::<Vec<_>>());
    assert_eq!(
        stamps.iter().map(|s| s.derived).collect::<Vec<_>>(),
        expected
    );
    assert_ne!(expected[0], expected[1]);
    let Some(edit) = edit else { return };
    store.execute(edit);
    let now = ledger.stamps_after(0, 10).unwrap();
    let with_rows = ledger.stamped_rows_after(0, 10).unwrap();
    assert_ne!(now[0].derived, expected[0], "{edit}");
    assert_eq!(with_rows[0].1.derived, now[0].derived, "{edit}");
    assert_eq!(now[0].columns, stamps[0].columns, "{edit}: the row itself");
    assert_eq!(now[1], stamps[1], "{edit}: another run");
}
