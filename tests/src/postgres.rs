//! PostgreSQL for the end-to-end tests: a fresh database per test on the
//! server `GATE_TEST_POSTGRES` names (`scripts/peer-postgres.sh` starts one),
//! and a loopback TCP proxy in front of it that a test can cut, so "the
//! server stopped" is seen by the gate without stopping the server other
//! tests use.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How to get a server, for the message of a test that has none.
pub const SETUP: &str = "GATE_TEST_POSTGRES is not set, so the PostgreSQL tests cannot run. \
     Start a private server with `scripts/peer-postgres.sh start target/pg` and \
     `export GATE_TEST_POSTGRES=$(cat target/pg/url)` (scripts/test does both, and stops it after)";

/// The server's URL; panics with [`SETUP`] when it is not set.
pub fn server() -> String {
    std::env::var("GATE_TEST_POSTGRES")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| panic!("{SETUP}"))
}

/// A database of one test's own, dropped when the test ends.
pub struct Database {
    /// Its URL.
    pub url: String,
    admin: String,
    name: String,
}

impl Database {
    /// A new, empty database on the test server.
    pub fn fresh() -> Self {
        let admin = server();
        let mut raw = [0u8; 8];
        getrandom::fill(&mut raw).expect("random bytes");
        let name = format!("gate_e2e_{}", hex::encode(raw));
        execute(&admin, &format!("CREATE DATABASE {name}"));
        Self {
            url: with_dbname(&admin, &name),
            admin,
            name,
        }
    }

    /// The first column of every row of `sql`, as text (NULL as "").
    pub fn column(&self, sql: &str) -> Vec<String> {
        query_column(&self.url, sql)
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        let _ = std::panic::catch_unwind(|| execute(&self.admin, &sql));
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Runs SQL statements on the database at `url`.
pub fn execute(url: &str, sql: &str) {
    runtime().block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("connect to the test server: {e}"));
        let conn = tokio::spawn(connection);
        client
            .batch_execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        drop(client);
        let _ = conn.await;
    });
}

fn query_column(url: &str, sql: &str) -> Vec<String> {
    runtime().block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("connect to the test server: {e}"));
        let conn = tokio::spawn(connection);
        let rows = client
            .simple_query(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        drop(client);
        let _ = conn.await;
        rows.into_iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => {
                    Some(r.get(0).unwrap_or_default().to_owned())
                }
                _ => None,
            })
            .collect()
    })
}

/// `url` with its database name replaced by `db`.
pub fn with_dbname(url: &str, db: &str) -> String {
    let (head, query) = split_query(url);
    let (scheme, rest) = head.split_once("://").expect("a URL");
    let authority = rest.split('/').next().unwrap_or(rest);
    join_query(format!("{scheme}://{authority}/{db}"), query)
}

/// `url` pointing at 127.0.0.1:`port` instead of its own host and port.
pub fn with_port(url: &str, port: u16) -> String {
    let (head, query) = split_query(url);
    let (scheme, rest) = head.split_once("://").expect("a URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let user = authority
        .rsplit_once('@')
        .map_or(String::new(), |(u, _)| format!("{u}@"));
    join_query(format!("{scheme}://{user}127.0.0.1:{port}{path}"), query)
}

fn split_query(url: &str) -> (&str, Option<&str>) {
    match url.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (url, None),
    }
}

fn join_query(mut out: String, query: Option<&str>) -> String {
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// The port in a `postgres://…@host:port/…` URL.
pub fn port_of(url: &str) -> u16 {
    let (head, _) = split_query(url);
    let rest = head.split_once("://").expect("a URL").1;
    let authority = rest.split('/').next().unwrap_or(rest);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    host.rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or(5432)
}

/// A TCP proxy on a loopback port, forwarding to `127.0.0.1:target`.
pub struct Proxy {
    /// The port it listens on.
    pub port: u16,
    stop: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
    acceptor: Option<std::thread::JoinHandle<()>>,
}

impl Proxy {
    /// Listens on `port` (0: any free one) and forwards every connection.
    pub fn start(target: u16, port: u16) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind the proxy");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let port = listener.local_addr().expect("the proxy's address").port();
        let stop = Arc::new(AtomicBool::new(false));
        let streams: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let acceptor = {
            let (stop, streams) = (Arc::clone(&stop), Arc::clone(&streams));
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((client, _)) => forward(client, target, &streams),
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        Err(_) => break,
                    }
                }
                // The listener closes here: new connections are refused.
            })
        };
        Self {
            port,
            stop,
            streams,
            acceptor: Some(acceptor),
        }
    }

    /// The server is gone, as far as its clients can tell: the port stops
    /// listening and every open connection is cut.
    pub fn cut(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        for s in self.streams.lock().expect("the stream list").drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
    }
}

fn forward(client: TcpStream, target: u16, streams: &Arc<Mutex<Vec<TcpStream>>>) {
    let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
        return;
    };
    let _ = client.set_nonblocking(false);
    let pipe = |mut from: TcpStream, mut to: TcpStream| {
        std::thread::spawn(move || {
            let mut buf = [0u8; 16 * 1024];
            loop {
                match from.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                }
            }
            let _ = to.shutdown(Shutdown::Write);
        });
    };
    let (Ok(c2), Ok(s2), Ok(c3), Ok(s3)) = (
        client.try_clone(),
        server.try_clone(),
        client.try_clone(),
        server.try_clone(),
    ) else {
        return;
    };
    streams.lock().expect("the stream list").extend([c3, s3]);
    pipe(client, s2);
    pipe(server, c2);
}
