//! The PostgreSQL store's attempt-series lock: a session advisory lock on
//! (series class, a hash of the spec id), held on a connection of its own
//! for as long as a run of the spec goes. The server drops it with the
//! session, so a killed runner never leaves a series locked. Two specs
//! whose hashes meet only wait for each other.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::exec::{Conn, Exec};
use super::handle::PgLedger;
use super::locks::{SERIES_CLASS, lock_key};
use crate::ledger::error::LedgerError;

/// A held series lock; dropping it releases the lock.
pub struct SeriesPg {
    conn: Option<Conn>,
    exec: Arc<Exec>,
    key: i32,
}

impl std::fmt::Debug for SeriesPg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeriesPg")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl SeriesPg {
    pub(super) fn lock(
        ledger: &PgLedger,
        spec_id: &str,
        wait: Duration,
    ) -> Result<Option<Self>, LedgerError> {
        let key = lock_key(spec_id);
        let conn = ledger.op(ledger.conn())?;
        let deadline = Instant::now() + wait;
        let mut pause = Duration::from_millis(10);
        loop {
            let got = ledger.op(async {
                conn.query_one(
                    "SELECT pg_try_advisory_lock($1, $2)",
                    &[&SERIES_CLASS, &key],
                )
                .await
                .and_then(|r| r.try_get::<_, bool>(0))
                .map_err(ledger.pg_err("locking the attempt series"))
            })?;
            if got {
                return Ok(Some(Self {
                    conn: Some(conn),
                    exec: Arc::clone(&ledger.exec),
                    key,
                }));
            }
            let now = Instant::now();
            if now >= deadline {
                conn.release();
                return Ok(None);
            }
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(Duration::from_millis(250));
        }
    }
}

impl Drop for SeriesPg {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        let key = self.key;
        let unlocked = self.exec.run(async {
            tokio::time::timeout(
                Duration::from_secs(5),
                conn.execute("SELECT pg_advisory_unlock($1, $2)", &[&SERIES_CLASS, &key]),
            )
            .await
        });
        if matches!(unlocked, Ok(Ok(_))) {
            conn.release();
        }
        // Otherwise the connection is closed with the lock's session.
    }
}
