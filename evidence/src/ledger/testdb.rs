//! Test support: a fresh PostgreSQL database per test on the server that
//! `GATE_TEST_POSTGRES` names, dropped when the test ends.

/// How to get a server, for the message of a test that has none.
pub(crate) const SETUP: &str = "GATE_TEST_POSTGRES is not set, so the PostgreSQL tests cannot run. \
     Start a private server with `scripts/peer-postgres.sh start target/pg` and \
     `export GATE_TEST_POSTGRES=$(cat target/pg/url)` (scripts/test does both, and stops it after)";

/// A database of its own for one test.
pub(crate) struct TestDb {
    /// Its URL.
    pub(crate) url: String,
    admin: String,
    name: String,
}

/// The server's URL; panics with [`SETUP`] when it is not set.
pub(crate) fn server() -> String {
    std::env::var("GATE_TEST_POSTGRES")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| panic!("{SETUP}"))
}

/// Creates a new, empty database.
pub(crate) fn fresh() -> TestDb {
    let admin = server();
    let mut raw = [0u8; 8];
    getrandom::fill(&mut raw).expect("random bytes");
    let name = format!("gate_t_{}", hex::encode(raw));
    execute(&admin, &format!("CREATE DATABASE {name}"));
    TestDb {
        url: with_dbname(&admin, &name),
        admin,
        name,
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        let _ = std::panic::catch_unwind(|| execute(&self.admin, &sql));
    }
}

/// Runs SQL on the database at `url` (an independent client, as an
/// operator or an attacker would).
pub(crate) fn execute(url: &str, sql: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("connect to {}: {e}", super::redact(url)));
        let conn = tokio::spawn(connection);
        client
            .batch_execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        drop(client);
        let _ = conn.await;
    });
}

/// Runs a query on the database at `url` and returns the first column of
/// every row as text.
pub(crate) fn column(url: &str, sql: &str) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .expect("connect");
        let conn = tokio::spawn(connection);
        let rows = client.simple_query(sql).await.expect("query");
        drop(client);
        let _ = conn.await;
        rows.into_iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                _ => None,
            })
            .collect()
    })
}

/// `url` with its database name replaced by `db`.
pub(crate) fn with_dbname(url: &str, db: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (url, None),
    };
    let (scheme, rest) = head.split_once("://").expect("a URL");
    let authority = rest.split('/').next().unwrap_or(rest);
    let mut out = format!("{scheme}://{authority}/{db}");
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

#[test]
fn dbname_is_replaced() {
    let cases = [
        ("postgres://u@h:1/postgres", "postgres://u@h:1/x"),
        ("postgres://u@h:1", "postgres://u@h:1/x"),
        (
            "postgres://u@h/postgres?connect_timeout=2",
            "postgres://u@h/x?connect_timeout=2",
        ),
    ];
    for (url, want) in cases {
        assert_eq!(with_dbname(url, "x"), want);
    }
}
