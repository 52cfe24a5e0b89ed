//! A PostgreSQL server of one test's own, for what the suite's shared
//! server cannot take: being crashed, settings of its own, TLS only.
//! `scripts/peer-postgres.sh` runs it, as the suite's server.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::postgres::execute;
use crate::tls::Ca;

/// A private server in a temporary folder, stopped and removed on drop.
pub struct PrivateServer {
    dir: tempfile::TempDir,
    url: String,
}

impl PrivateServer {
    /// Starts a server; `prepare` writes any files it needs into the
    /// server's folder and returns server settings (`name=value`,
    /// space-separated, no spaces inside).
    pub fn start(prepare: impl FnOnce(&Path) -> String) -> Self {
        let dir = tempfile::tempdir().expect("a folder for the server");
        let settings = prepare(dir.path());
        let url = script("start", dir.path(), &settings);
        Self { dir, url }
    }

    /// The superuser's URL of database `postgres`, without TLS.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL of database `db` as `user` on `host` (the server listens on
    /// 127.0.0.1, which `localhost` also reaches).
    pub fn url_as(&self, user: &str, host: &str, db: &str) -> String {
        let port = crate::postgres::port_of(&self.url);
        format!("postgres://{user}@{host}:{port}/{db}")
    }

    /// Kills the server at once (WAL it had not written out is lost) and
    /// starts it again on its data, on the same port.
    pub fn crash_and_restart(&self) {
        script("crash", self.dir.path(), "");
        script("restart", self.dir.path(), "");
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(|| script("stop", self.dir.path(), ""));
    }
}

#[allow(
    clippy::disallowed_methods,
    reason = "test fixtures run the repository's scripts directly"
)]
fn script(cmd: &str, dir: &Path, settings: &str) -> String {
    let out = Command::new(crate::repo_root().join("scripts/peer-postgres.sh"))
        .args([cmd, &dir.to_string_lossy()])
        .env("PEER_POSTGRES_SETTINGS", settings)
        .output()
        .unwrap_or_else(|e| panic!("peer-postgres.sh {cmd}: {e}"));
    assert!(
        out.status.success(),
        "peer-postgres.sh {cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A server that takes TCP clients over TLS only (the superuser may also
/// connect in plain text, to set things up), with a certificate for
/// `localhost` from a CA of the test's own, and the client-side files.
///
/// Roles: `ledger` (password-less over TLS, owns database `ledger`),
/// `certuser` (only with a client certificate, owns database `certdb`) and
/// `scram` (password `hunter2`, SCRAM-SHA-256, owns database `scramdb`).
pub struct TlsServer {
    /// The server.
    pub server: PrivateServer,
    files: tempfile::TempDir,
}

impl TlsServer {
    /// Makes the certificates and starts the server.
    pub fn start() -> Self {
        let files = tempfile::tempdir().expect("a folder for the client's files");
        let ca = Ca::new("gate test CA");
        let other = Ca::new("some other CA");
        let (server_cert, server_key) = ca.issue("localhost", &["localhost"]);
        let (client_cert, client_key) = ca.issue("certuser", &[]);
        write(&files.path().join("ca.pem"), &ca.cert_pem);
        write(&files.path().join("other-ca.pem"), &other.cert_pem);
        write(&files.path().join("client.pem"), &client_cert);
        write(&files.path().join("client.key"), &client_key);
        let server = PrivateServer::start(|dir| {
            write(&dir.join("server.crt"), &server_cert);
            write(&dir.join("server.key"), &server_key);
            write(&dir.join("ca.crt"), &ca.cert_pem);
            write(
                &dir.join("hba.conf"),
                "local   all all                      trust\n\
                 hostssl all certuser 127.0.0.1/32    cert\n\
                 hostssl all scram    127.0.0.1/32    scram-sha-256\n\
                 hostssl all all      127.0.0.1/32    trust\n\
                 host    all postgres 127.0.0.1/32    trust\n\
                 host    all all      127.0.0.1/32    reject\n",
            );
            let d = dir.display();
            format!(
                "ssl=on ssl_cert_file={d}/server.crt ssl_key_file={d}/server.key \
                 ssl_ca_file={d}/ca.crt hba_file={d}/hba.conf"
            )
        });
        for sql in [
            "CREATE ROLE ledger LOGIN",
            "CREATE DATABASE ledger OWNER ledger",
            "CREATE ROLE certuser LOGIN",
            "CREATE DATABASE certdb OWNER certuser",
            "CREATE ROLE scram LOGIN PASSWORD 'hunter2'",
            "CREATE DATABASE scramdb OWNER scram",
        ] {
            execute(server.url(), sql);
        }
        Self { server, files }
    }

    /// A client-side file: `ca.pem` (the server's CA), `other-ca.pem`,
    /// `client.pem` and `client.key` (certuser's certificate and key).
    pub fn file(&self, name: &str) -> PathBuf {
        self.files.path().join(name)
    }
}

/// Writes a file only its owner may read (the server refuses a key
/// others can read).
fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
}
