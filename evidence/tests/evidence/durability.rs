//! A PostgreSQL append that returned is durable: the server crashing right
//! after it loses nothing. The server is the test's own, since it is
//! killed mid-test, with its WAL writer and background writer held back,
//! so only the append itself can have flushed its row.

use std::path::Path;

use gate_evidence::ledger::{Ledger, Location};
use gate_tests::postgres::execute;
use gate_tests::private_postgres::PrivateServer;

use crate::ledger::entry;

/// Nothing flushes WAL behind an append's back for 10 s.
const SETTINGS: &str = "wal_writer_delay=10s bgwriter_lru_maxpages=0 checkpoint_timeout=1h";

#[test]
fn appends_that_returned_survive_a_server_crash() {
    let server = PrivateServer::start(|_| SETTINGS.to_owned());
    execute(server.url(), "CREATE ROLE plain LOGIN");
    execute(server.url(), "CREATE DATABASE plain OWNER plain");
    execute(
        &server.url_as("postgres", "127.0.0.1", "plain"),
        "REVOKE EXECUTE ON FUNCTION pg_logical_emit_message(boolean, text, text) FROM PUBLIC",
    );
    // Both ways an append waits for its flush: a superuser, and a role the
    // operator denied pg_logical_emit_message.
    for (user, db) in [("postgres", "postgres"), ("plain", "plain")] {
        let url = server.url_as(user, "127.0.0.1", db);
        let mut ledger = Ledger::open(Location::Postgres(url.clone())).unwrap();
        let mut appended = Vec::new();
        for i in 0..3 {
            let run_id = format!("{user}-{i}");
            let envelope = format!("envelope of {run_id}");
            ledger
                .append(
                    &entry(&run_id, "shop", Path::new("/bundles/x")),
                    envelope.as_bytes(),
                )
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
