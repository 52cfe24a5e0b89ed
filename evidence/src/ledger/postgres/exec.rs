//! How the PostgreSQL store's async client serves the ledger's sync
//! methods, and its connection pool.
//!
//! The ledger's callers are sync (the gate's commands, the retry history,
//! a breaker update inside a review), and the SQLite store is sync, so the
//! boundary is sync too. Each PostgreSQL ledger owns a small current-thread
//! runtime that drives its pool's connections, and [`Exec::run`] blocks on
//! it: inside the gate's multi-thread runtime through `block_in_place` (the
//! worker's other tasks move to another thread meanwhile), on a scoped
//! thread inside a current-thread runtime (which cannot block in place),
//! and directly when no runtime is running.

use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

use deadpool_postgres::{
    ClientWrapper, Hook, HookError, Manager, ManagerConfig, Object, Pool, RecyclingMethod,
};
use tokio::runtime::{Builder, Handle, Runtime, RuntimeFlavor};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::ledger::error::{LedgerError, reason};

/// How long connecting may take when the URL does not say
/// (`connect_timeout=` in the URL wins).
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one ledger operation may take in all (a server that stopped
/// answering must not hang a run).
pub(super) const OPERATION_TIMEOUT: Duration = Duration::from_secs(60);

/// Connections per ledger handle: the series lock holds one for a whole
/// run, the rest serve reads, appends and breaker updates.
const POOL_SIZE: usize = 4;

/// The runtime a PostgreSQL ledger's futures run on.
#[derive(Debug)]
pub(super) struct Exec {
    rt: Option<Runtime>,
}

impl Exec {
    pub(super) fn new() -> std::io::Result<Self> {
        let rt = Builder::new_current_thread().enable_all().build()?;
        Ok(Self { rt: Some(rt) })
    }

    /// Runs `fut` to completion from sync code, wherever that code runs.
    pub(super) fn run<F>(&self, fut: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        let rt = self
            .rt
            .as_ref()
            .expect("the runtime lives as long as its ledger");
        match Handle::try_current().map(|h| h.runtime_flavor()) {
            Err(_) => rt.block_on(fut),
            Ok(RuntimeFlavor::CurrentThread) => std::thread::scope(|s| {
                s.spawn(|| rt.block_on(fut))
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }),
            Ok(_) => tokio::task::block_in_place(|| rt.block_on(fut)),
        }
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which panics inside another runtime;
        // its connections need no orderly goodbye.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Run on every new connection: the server never ends the session for
/// idling. The series lock's session idles for a whole run, and the pool's
/// others between a run's reads and its append, so a server whose
/// `idle_session_timeout` (PostgreSQL 14 on) is shorter than a run would
/// void the lock and hand out closed connections. Older servers know no
/// such setting, and the `WHERE` keeps them from being asked.
const SESSION_SETUP: &str = "SELECT set_config('idle_session_timeout', '0', false) \
     WHERE current_setting('server_version_num')::int >= 140000";

/// The connection pool for `config`, connecting through `tls`, with short
/// connect timeouts and TCP keepalives so a vanished server is noticed
/// within a minute.
pub(super) fn pool(mut config: tokio_postgres::Config, tls: MakeRustlsConnect) -> Pool {
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("gate");
    }
    if config.get_keepalives_idle() >= Duration::from_secs(2 * 60 * 60) {
        config.keepalives_idle(Duration::from_secs(15));
        config.keepalives_interval(Duration::from_secs(5));
        config.keepalives_retries(3);
    }
    let connect = config
        .get_connect_timeout()
        .copied()
        .unwrap_or(CONNECT_TIMEOUT);
    let manager = Manager::from_config(
        config,
        tls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    // The whole login (TCP, startup, authentication) is bounded, not only
    // the socket connect that `connect_timeout` covers.
    Pool::builder(manager)
        .post_create(Hook::async_fn(|client, _| {
            Box::pin(async move {
                client
                    .batch_execute(SESSION_SETUP)
                    .await
                    .map_err(HookError::Backend)
            })
        }))
        .max_size(POOL_SIZE)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .create_timeout(Some(connect + Duration::from_secs(1)))
        .wait_timeout(Some(OPERATION_TIMEOUT))
        .recycle_timeout(Some(connect))
        .build()
        .expect("a pool with a runtime set builds")
}

/// Why the pool gave no connection, for a message.
pub(super) fn pool_error(ledger: &str, e: deadpool_postgres::PoolError) -> LedgerError {
    use deadpool_postgres::PoolError;
    let reason = match e {
        PoolError::Timeout(_) => {
            "no connection within the connect timeout (is the server up and reachable?)".to_owned()
        }
        PoolError::Backend(e) | PoolError::PostCreateHook(HookError::Backend(e)) => reason(&e),
        other => other.to_string(),
    };
    LedgerError::Unreachable {
        ledger: ledger.to_owned(),
        reason,
    }
}

/// A pooled connection. It goes back to the pool only through
/// [`Conn::release`], after work that left no transaction open; dropped
/// any other way (an error, a timeout) it is closed, so the next user never
/// inherits half a transaction.
pub(super) struct Conn {
    obj: Option<Object>,
}

impl Conn {
    pub(super) fn new(obj: Object) -> Self {
        Self { obj: Some(obj) }
    }

    /// Back to the pool.
    pub(super) fn release(mut self) {
        drop(self.obj.take());
    }
}

impl Deref for Conn {
    type Target = ClientWrapper;

    fn deref(&self) -> &ClientWrapper {
        self.obj.as_ref().expect("a connection until released")
    }
}

impl DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut ClientWrapper {
        self.obj.as_mut().expect("a connection until released")
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(obj) = self.obj.take() {
            drop(Object::take(obj));
        }
    }
}
