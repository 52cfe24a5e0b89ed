//! A PostgreSQL append that returned is durable: the server crashing right
//! after it loses nothing. Each case runs a private server of its own
//! (`scripts/peer-postgres.sh`), since it is killed mid-test, with its WAL
//! writer and background writer held back, so only the append itself can
//! have flushed its row.

use std::path::{Path, PathBuf};
use std::process::Command;

use chrono::{TimeZone, Utc};
use gate_evidence::ledger::{Ledger, Location, RunEntry};

/// A server that nothing flushes behind an append's back for 10 s.
const SETTINGS: &str = "wal_writer_delay=10s bgwriter_lru_maxpages=0 checkpoint_timeout=1h";

struct Server {
    dir: tempfile::TempDir,
    url: String,
}

impl Server {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = script("start", dir.path(), SETTINGS);
        Self { dir, url }
    }

    fn crash_and_restart(&self) {
        script("crash", self.dir.path(), "");
        script("restart", self.dir.path(), "");
    }

    /// The URL of database `db` as `user`.
    fn url_as(&self, user: &str, db: &str) -> String {
        let (_, rest) = self.url.split_once('@').unwrap();
        let (authority, _) = rest.split_once('/').unwrap();
        format!("postgres://{user}@{authority}/{db}")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(|| script("stop", self.dir.path(), ""));
    }
}

fn script_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/peer-postgres.sh")
}

#[allow(
    clippy::disallowed_methods,
    reason = "tests run independent tools directly"
)]
fn script(cmd: &str, dir: &Path, settings: &str) -> String {
    let out = Command::new(script_path())
        .args([cmd, &dir.to_string_lossy()])
        .env("PEER_POSTGRES_SETTINGS", settings)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "peer-postgres.sh {cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Runs SQL as an operator would, with a client of its own.
fn execute(url: &str, sql: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        let conn = tokio::spawn(connection);
        client.batch_execute(sql).await.unwrap();
        drop(client);
        let _ = conn.await;
    });
}

fn entry(run_id: &str) -> RunEntry {
    RunEntry {
        run_id: run_id.to_owned(),
        spec_id: "shop".to_owned(),
        attempt: 1,
        verdict: "pass".into(),
        tier: "light".into(),
        started_at: Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).unwrap(),
        finished_at: Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 9).unwrap(),
        input_tokens: 10,
        cached_input_tokens: 0,
        output_tokens: 2,
        cost_usd: None,
        bundle_path: format!("/bundles/{run_id}.dsse.json"),
        extra: serde_json::json!({"models": ["p/m"]}),
    }
}

#[test]
fn appends_that_returned_survive_a_server_crash() {
    // Both ways an append waits for its flush: a superuser, and a role the
    // operator denied pg_logical_emit_message.
    let cases = [("postgres", ""), ("plain", "plain")];
    let server = Server::start();
    execute(&server.url, "CREATE ROLE plain LOGIN");
    execute(&server.url, "CREATE DATABASE plain OWNER plain");
    execute(
        &server.url_as("postgres", "plain"),
        "REVOKE EXECUTE ON FUNCTION pg_logical_emit_message(boolean, text, text) FROM PUBLIC",
    );
    for (user, db) in cases {
        let url = server.url_as(user, if db.is_empty() { "postgres" } else { db });
        let mut ledger = Ledger::open(Location::Postgres(url.clone())).unwrap();
        let mut appended = Vec::new();
        for i in 0..3 {
            let run_id = format!("{user}-{i}");
            let envelope = format!("envelope of {run_id}");
            ledger
                .append(&entry(&run_id), envelope.as_bytes())
                .unwrap_or_else(|e| panic!("{user}: {e}"));
            appended.push(run_id);
        }
        server.crash_and_restart();
        drop(ledger);
        let ledger = Ledger::open(Location::Postgres(url)).unwrap();
        let kept: Vec<String> = ledger
            .rows()
            .unwrap()
            .into_iter()
            .map(|row| row.entry.run_id)
            .collect();
        assert_eq!(kept, appended, "{user}: rows lost in the crash");
    }
}
