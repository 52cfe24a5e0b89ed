//! The ledger on a real SQLite file with real bundle files: verification
//! passes, and each way of rewriting history is reported where it happened.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{TimeZone, Utc};
use gate_evidence::bundle;
use gate_evidence::checkpoint::Checkpoint;
use gate_evidence::keys::SigningKey;
use gate_evidence::ledger::{
    self, Ledger, LedgerError, LedgerRow, LoadError, ProblemKind, RunEntry, VerifyReport,
};
use gate_evidence::statement::{Statement, Subject};
use rusqlite::Connection;

const ORIGIN: &str = "gate.example/ledger";

struct Fixture {
    _dir: tempfile::TempDir,
    state: PathBuf,
    key: SigningKey,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join(".gate");
        Self {
            _dir: dir,
            state,
            key: SigningKey::from_seed(&[9; 32]),
        }
    }

    fn db(&self) -> PathBuf {
        self.state.join("ledger.db")
    }

    fn bundles(&self) -> PathBuf {
        self.state.join("bundles")
    }

    /// Signs, stores durably, then appends: the order the gate follows.
    fn record(&self, ledger: &mut Ledger, run_id: &str, spec: &str) -> LedgerRow {
        let statement = Statement::new(
            vec![Subject::from_bytes("gate.toml", spec.as_bytes())],
            "https://gate.example/run/v1",
            serde_json::json!({"run_id": run_id, "spec": spec}),
        );
        let envelope = bundle::seal(&statement, &self.key);
        let stored = bundle::write(&self.bundles(), &self.bundles(), run_id, &envelope).unwrap();
        ledger
            .append(&entry(run_id, spec, &stored.path), &envelope)
            .unwrap()
    }

    fn verify(&self, since: Option<&Checkpoint>) -> VerifyReport {
        let rows = Ledger::open(self.db()).unwrap().rows().unwrap();
        ledger::verify(&rows, load_bundle, &[self.key.public_key().clone()], since)
    }

    fn sql(&self, sql: &str) {
        Connection::open(self.db())
            .unwrap()
            .execute_batch(sql)
            .unwrap();
    }
}

/// A run of `spec` whose bundle is at `bundle_path`.
pub(crate) fn entry(run_id: &str, spec: &str, bundle_path: &Path) -> RunEntry {
    RunEntry {
        run_id: run_id.to_owned(),
        spec_id: spec.to_owned(),
        attempt: 1,
        series: None,
        verdict: "pass".into(),
        tier: "light".into(),
        started_at: Utc.with_ymd_and_hms(2025, 6, 1, 12, 0, 0).unwrap(),
        finished_at: Utc.with_ymd_and_hms(2025, 6, 1, 12, 0, 9).unwrap(),
        input_tokens: 10,
        cached_input_tokens: 0,
        output_tokens: 2,
        cost_usd: None,
        bundle_path: bundle_path.to_string_lossy().into_owned(),
        extra: serde_json::json!({}),
    }
}

/// The loader the gate would pass: a missing file is lost evidence, any
/// other read error means the bundle could not be checked.
fn load_bundle(row: &LedgerRow) -> Result<Vec<u8>, LoadError> {
    fs::read(&row.entry.bundle_path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => LoadError::Missing(e.to_string()),
        _ => LoadError::Unavailable(e.to_string()),
    })
}

fn summary(report: &VerifyReport) -> Vec<(Option<u64>, &'static str)> {
    report
        .problems
        .iter()
        .map(|p| {
            let kind = match &p.kind {
                ProblemKind::SeqGap { .. } => "seq gap",
                ProblemKind::ChainBroken { .. } => "chain broken",
                ProblemKind::EnvelopeChanged { .. } => "envelope changed",
                ProblemKind::LeafHashWrong { .. } => "leaf hash wrong",
                ProblemKind::Signature(_) => "signature",
                ProblemKind::Replayed { .. } => "replayed",
                ProblemKind::BundleMissing { .. } => "bundle missing",
                ProblemKind::Truncated { .. } => "truncated",
                ProblemKind::Inconsistent { .. } => "inconsistent",
                other => panic!("unexpected {other}"),
            };
            (p.seq, kind)
        })
        .collect()
}

fn with_runs(n: usize) -> Fixture {
    let f = Fixture::new();
    let mut ledger = Ledger::open(f.db()).unwrap();
    for i in 1..=n {
        f.record(
            &mut ledger,
            &format!("run-{i}"),
            if i % 2 == 0 { "shop" } else { "blog" },
        );
    }
    f
}

#[test]
fn intact_ledger_verifies() {
    let f = with_runs(6);
    let report = f.verify(None);
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.rows, 6);
    let cp = Ledger::open(f.db()).unwrap().checkpoint(ORIGIN).unwrap();
    assert_eq!(report.root, cp.root);
}

#[test]
fn deleted_row_is_reported() {
    let f = with_runs(6);
    f.sql("DELETE FROM runs WHERE seq = 3");
    let report = f.verify(None);
    assert_eq!(
        summary(&report),
        [(Some(4), "seq gap"), (Some(4), "chain broken")]
    );
    assert_eq!(report.problems[0].run_id.as_deref(), Some("run-4"));
    assert!(report.is_tampered());
}

#[test]
fn swapped_rows_are_reported() {
    let f = with_runs(6);
    f.sql(
        "UPDATE runs SET seq = 100 WHERE seq = 2;
         UPDATE runs SET seq = 2 WHERE seq = 3;
         UPDATE runs SET seq = 3 WHERE seq = 100;",
    );
    let report = f.verify(None);
    assert_eq!(
        summary(&report),
        [
            (Some(2), "chain broken"),
            (Some(3), "chain broken"),
            (Some(4), "chain broken")
        ]
    );
}

#[test]
fn replayed_envelope_is_reported() {
    let f = with_runs(4);
    let mut ledger = Ledger::open(f.db()).unwrap();
    let old = ledger.get("run-2").unwrap().unwrap();
    let old_bytes = fs::read(&old.entry.bundle_path).unwrap();

    // The same bytes again are refused at append time.
    let copy = f.bundles().join("replay-a.dsse.json");
    fs::write(&copy, &old_bytes).unwrap();
    let err = ledger
        .append(&entry("replay-a", "shop", &copy), &old_bytes)
        .unwrap_err();
    assert!(
        matches!(err, LedgerError::EnvelopeRecorded { seq: 2, .. }),
        "{err}"
    );

    // Re-wrapped in different bytes (DSSE allows unknown fields), the old
    // signed statement gets in, and verification names it.
    let mut value: serde_json::Value = serde_json::from_slice(&old_bytes).unwrap();
    value["replayed"] = serde_json::json!(true);
    let rewrapped = serde_json::to_vec(&value).unwrap();
    let stored = bundle::write(&f.bundles(), &f.bundles(), "replay-b", &rewrapped).unwrap();
    ledger
        .append(&entry("replay-b", "shop", &stored.path), &rewrapped)
        .unwrap();
    let report = f.verify(None);
    assert_eq!(summary(&report), [(Some(5), "replayed")]);
    assert!(
        report.problems[0].to_string().contains("row 2 (run run-2)"),
        "{}",
        report.problems[0]
    );
}

#[test]
fn edited_bundle_is_reported() {
    let f = with_runs(5);
    let path = f.bundles().join("run-3.dsse.json");
    let mut value: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    let payload = value["payload"].as_str().unwrap().replace('A', "B");
    value["payload"] = payload.into();
    fs::write(&path, serde_json::to_vec(&value).unwrap()).unwrap();
    let report = f.verify(None);
    assert_eq!(
        summary(&report),
        [
            (Some(3), "envelope changed"),
            (Some(3), "leaf hash wrong"),
            (Some(3), "signature")
        ]
    );

    fs::remove_file(&path).unwrap();
    assert_eq!(summary(&f.verify(None)), [(Some(3), "bundle missing")]);
}

#[test]
fn truncation_after_a_checkpoint_is_reported() {
    let f = with_runs(5);
    let note = {
        let ledger = Ledger::open(f.db()).unwrap();
        ledger
            .checkpoint(ORIGIN)
            .unwrap()
            .sign(ORIGIN, &f.key)
            .unwrap()
    };
    let cp = Checkpoint::open(&note, ORIGIN, f.key.public_key()).unwrap();
    assert_eq!(cp.size, 5);

    // Growth since the checkpoint is fine.
    let mut ledger = Ledger::open(f.db()).unwrap();
    for i in 6..=8 {
        f.record(&mut ledger, &format!("run-{i}"), "shop");
    }
    assert!(f.verify(Some(&cp)).is_ok());

    // Cutting the tail below the checkpoint leaves a clean chain, which
    // only the checkpoint catches.
    f.sql("DELETE FROM runs WHERE seq > 3");
    assert!(
        f.verify(None).is_ok(),
        "a hash chain alone cannot see a cut tail"
    );
    let report = f.verify(Some(&cp));
    assert_eq!(summary(&report), [(None, "truncated")]);
    assert!(report.is_tampered());

    // Cut and regrown to the same size with different runs: inconsistent.
    for i in 4..=5 {
        f.record(&mut ledger, &format!("other-{i}"), "shop");
    }
    assert_eq!(summary(&f.verify(Some(&cp))), [(None, "inconsistent")]);
}

#[test]
fn concurrent_appends_stay_ordered() {
    const THREADS: usize = 6;
    const PER_THREAD: usize = 15;
    let f = Arc::new(Fixture::new());
    // Every thread opens its own connection, on a file that may not exist yet.
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let f = Arc::clone(&f);
            std::thread::spawn(move || {
                let mut ledger = Ledger::open(f.db()).unwrap();
                for i in 0..PER_THREAD {
                    f.record(&mut ledger, &format!("t{t}-{i}"), "shop");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let rows = Ledger::open(f.db()).unwrap().rows().unwrap();
    assert_eq!(rows.len(), THREADS * PER_THREAD);
    assert!(rows.iter().enumerate().all(|(i, r)| r.seq == i as u64 + 1));
    let report = f.verify(None);
    assert!(report.is_ok(), "{:?}", report.problems);
}
