//! One suite over both stores: every case runs against a SQLite file and
//! against a fresh PostgreSQL database (`GATE_TEST_POSTGRES`; without it the
//! PostgreSQL half fails and says how to start a server).

use std::collections::BTreeSet;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};

use super::testdb::{self, TestDb};
use super::*;
use crate::merkle;

/// A database for one test, and handles on it.
enum Store {
    Sqlite(tempfile::TempDir),
    Postgres(TestDb),
}

impl Store {
    fn sqlite() -> Self {
        Self::Sqlite(tempfile::tempdir().unwrap())
    }

    fn postgres() -> Self {
        Self::Postgres(testdb::fresh())
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
            Self::Postgres(db) => testdb::execute(&db.url, sql),
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
    batches_are_all_or_nothing,
    concurrent_appends_stay_one_chain,
    series_lock_excludes_other_runs_of_the_spec,
    outcomes_keep_history_latest_counts,
    breaker_updates_are_read_modify_write,
    concurrent_breaker_updates_lose_nothing,
    dismissals_and_overrides_by_spec,
    copy_refuses_a_non_empty_target,
);

fn entry(run_id: &str, spec: &str, verdict: &str, day: u32) -> RunEntry {
    RunEntry {
        run_id: run_id.into(),
        spec_id: spec.into(),
        attempt: 1,
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
    assert!(matches!(ledger.resolve(""), Err(LedgerError::NotFound(_))));
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

fn batches_are_all_or_nothing(store: &Store) {
    let mut ledger = store.open();
    ledger.append(&entry("r0", "s", "pass", 1), b"e0").unwrap();
    let (a, b, c) = (
        entry("r1", "s", "pass", 1),
        entry("r2", "s", "pass", 1),
        entry("r0", "s", "pass", 1),
    );
    let err = ledger
        .append_batch(&[(&a, b"e1"), (&b, b"e2"), (&c, b"e3")])
        .unwrap_err();
    assert!(matches!(err, LedgerError::AlreadyRecorded { .. }), "{err}");
    assert_eq!(ledger.len().unwrap(), 1);
    let rows = ledger.append_batch(&[(&a, b"e1"), (&b, b"e2")]).unwrap();
    assert_eq!(rows.iter().map(|r| r.seq).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(ledger.rows().unwrap()[1..], rows[..]);
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
    }
}

fn bump(b: Option<BreakerRecord>) -> (Option<BreakerRecord>, u32) {
    let mut b = b.unwrap_or_else(|| closed("m"));
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

/// A SQLite ledger with everything in it, for the copy tests.
fn full_sqlite(dir: &std::path::Path, runs: usize) -> Ledger {
    let mut l = Ledger::open(dir.join("ledger.db")).unwrap();
    let made: Vec<(RunEntry, Vec<u8>)> = (0..runs)
        .map(|i| {
            let mut e = entry(&format!("run-{i:05}"), &format!("spec{}", i % 3), "fail", 1);
            e.attempt = u32::try_from(i / 3 + 1).unwrap();
            e.cost_usd = (i % 2 == 0).then_some(0.001 * i as f64);
            (e, format!("envelope {i}").into_bytes())
        })
        .collect();
    let batch: Vec<(&RunEntry, &[u8])> = made.iter().map(|(e, b)| (e, b.as_slice())).collect();
    l.append_batch(&batch).unwrap();
    for (i, broken) in [(0, false), (3, true), (0, true)] {
        l.add_outcome(&OutcomeEntry {
            run_id: format!("run-{i:05}"),
            broken,
            reason: Some(format!("why {i}")),
            source: Some("ci".into()),
            recorded_at: now(),
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
    })
    .unwrap();
    l.add_override(&OverrideEntry {
        run_id: "run-00002".into(),
        spec_id: "spec2".into(),
        reason: "hotfix".into(),
        by: "ana".into(),
        content_digest: "d".into(),
        bundle_path: "p".into(),
        bundle_sha256: "s".into(),
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
            report.breakers
        ),
        (3, 1, 1, 1)
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
    let db = testdb::fresh();
    let mut to = Ledger::open(Location::Postgres(db.url.clone())).unwrap();
    check_copy(&from, &mut to, 2_345);
}

/// One schema: every table has the same columns, in the same order, in
/// both stores (a migration added to one list only is caught here).
#[test]
fn both_stores_have_one_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    drop(Ledger::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    let db = testdb::fresh();
    drop(Ledger::open(Location::Postgres(db.url.clone())).unwrap());
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let pg_tables = testdb::column(
        &db.url,
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
        let pg_cols = testdb::column(
            &db.url,
            &format!(
                "SELECT column_name FROM information_schema.columns \
                 WHERE table_schema = 'public' AND table_name = '{table}' ORDER BY ordinal_position"
            ),
        );
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
    let db = testdb::fresh();
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
