//! The ledger over TLS, set in its URL as for libpq, against a server that
//! refuses plain-text clients: each `sslmode` connects, or is refused for
//! the reason it should be.

use std::path::Path;

use gate_evidence::ledger::{Ledger, LedgerError, Location};
use gate_tests::private_postgres::TlsServer;

/// Opens the ledger at `url`, appends a run and reads it back.
fn use_ledger(url: &str) -> Result<(), LedgerError> {
    let mut ledger = Ledger::open(Location::parse(url)?)?;
    let run_id = format!("run-{}", ledger.len()?);
    let bundle = format!("/bundles/{run_id}.dsse.json");
    let entry = crate::ledger::entry(&run_id, "shop", Path::new(&bundle));
    ledger.append(&entry, run_id.as_bytes())?;
    assert_eq!(ledger.get(&run_id)?.map(|r| r.entry.run_id), Some(run_id));
    Ok(())
}

#[test]
fn sslmodes_connect_or_say_why_not() {
    let tls = TlsServer::start();
    // Parameters name the client-side files as {ca}, {other} and {client}.
    let files = |params: &str| {
        params
            .replace("{ca}", &tls.file("ca.pem").display().to_string())
            .replace("{other}", &tls.file("other-ca.pem").display().to_string())
            .replace(
                "{client}",
                &format!(
                    "sslcert={}&sslkey={}",
                    tls.file("client.pem").display(),
                    tls.file("client.key").display()
                ),
            )
    };
    let full = "sslmode=verify-full&sslrootcert={ca}";
    // (user, host, parameters, Ok or a piece of the error)
    let cases: [(&str, &str, &str, Result<(), &str>); 14] = [
        // libpq's default, prefer: TLS when the server offers it.
        ("ledger", "localhost", "", Ok(())),
        ("ledger", "127.0.0.1", "sslmode=require", Ok(())),
        (
            "ledger",
            "localhost",
            "sslmode=disable",
            Err("pg_hba.conf rejects"),
        ),
        ("ledger", "localhost", full, Ok(())),
        // The certificate names localhost, not the address.
        (
            "ledger",
            "127.0.0.1",
            full,
            Err("certificate not valid for name \"127.0.0.1\""),
        ),
        (
            "ledger",
            "127.0.0.1",
            "sslmode=verify-ca&sslrootcert={ca}",
            Ok(()),
        ),
        (
            "ledger",
            "localhost",
            "sslmode=verify-full&sslrootcert={other}",
            Err("UnknownIssuer"),
        ),
        // A root given to require checks the chain, as libpq does.
        (
            "ledger",
            "localhost",
            "sslmode=require&sslrootcert={other}",
            Err("UnknownIssuer"),
        ),
        (
            "ledger",
            "localhost",
            "sslmode=verify-full&sslrootcert=/nowhere/ca.pem",
            Err("sslrootcert /nowhere/ca.pem"),
        ),
        (
            "certuser",
            "localhost",
            "sslmode=verify-full&sslrootcert={ca}&{client}",
            Ok(()),
        ),
        (
            "certuser",
            "localhost",
            full,
            Err("connection requires a valid client certificate"),
        ),
        // A password over TLS, bound to the TLS channel (SCRAM-SHA-256-PLUS).
        (
            "scram:hunter2",
            "localhost",
            "sslmode=verify-full&sslrootcert={ca}&channel_binding=require",
            Ok(()),
        ),
        (
            "scram:wrong",
            "localhost",
            "sslmode=require",
            Err("password authentication failed"),
        ),
        (
            "scram:hunter2",
            "localhost",
            "sslmode=disable",
            Err("pg_hba.conf rejects"),
        ),
    ];
    for (user, host, params, want) in cases {
        let db = match user.split(':').next() {
            Some("certuser") => "certdb",
            Some("scram") => "scramdb",
            _ => "ledger",
        };
        let mut url = tls.server.url_as(user, host, db);
        if !params.is_empty() {
            url = format!("{url}?{}", files(params));
        }
        match (use_ledger(&url), want) {
            (Ok(()), Ok(())) => {}
            (Err(e), Err(piece)) => {
                let text = format!("{e}");
                assert!(text.contains(piece), "{url}: {text}");
                // The URL is named without its password.
                assert!(
                    !text.contains(":wrong@") && !text.contains("hunter2"),
                    "{text}"
                );
            }
            (got, want) => panic!("{url}: got {got:?}, want {want:?}"),
        }
    }
}
