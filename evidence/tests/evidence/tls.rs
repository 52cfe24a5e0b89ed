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
    let ca = tls.file("ca.pem");
    let other = tls.file("other-ca.pem");
    let client = format!(
        "sslcert={}&sslkey={}",
        tls.file("client.pem").display(),
        tls.file("client.key").display()
    );
    let (ca, other) = (ca.display(), other.display());
    // (user, host, parameters, Ok or a piece of the error)
    let cases: Vec<(&str, &str, String, Result<(), &str>)> = vec![
        // libpq's default, prefer: TLS when the server offers it.
        ("ledger", "localhost", String::new(), Ok(())),
        ("ledger", "127.0.0.1", "sslmode=require".into(), Ok(())),
        (
            "ledger",
            "localhost",
            "sslmode=disable".into(),
            Err("pg_hba.conf rejects"),
        ),
        (
            "ledger",
            "localhost",
            format!("sslmode=verify-full&sslrootcert={ca}"),
            Ok(()),
        ),
        // The certificate names localhost, not the address.
        (
            "ledger",
            "127.0.0.1",
            format!("sslmode=verify-full&sslrootcert={ca}"),
            Err("certificate not valid for name \"127.0.0.1\""),
        ),
        (
            "ledger",
            "127.0.0.1",
            format!("sslmode=verify-ca&sslrootcert={ca}"),
            Ok(()),
        ),
        (
            "ledger",
            "localhost",
            format!("sslmode=verify-full&sslrootcert={other}"),
            Err("UnknownIssuer"),
        ),
        // A root given to require checks the chain, as libpq does.
        (
            "ledger",
            "localhost",
            format!("sslmode=require&sslrootcert={other}"),
            Err("UnknownIssuer"),
        ),
        (
            "ledger",
            "localhost",
            "sslmode=verify-full&sslrootcert=/nowhere/ca.pem".into(),
            Err("sslrootcert /nowhere/ca.pem"),
        ),
        (
            "certuser",
            "localhost",
            format!("sslmode=verify-full&sslrootcert={ca}&{client}"),
            Ok(()),
        ),
        (
            "certuser",
            "localhost",
            format!("sslmode=verify-full&sslrootcert={ca}"),
            Err("connection requires a valid client certificate"),
        ),
    ];
    for (user, host, params, want) in cases {
        let db = if user == "certuser" {
            "certdb"
        } else {
            "ledger"
        };
        let mut url = tls.server.url_as(user, host, db);
        if !params.is_empty() {
            url = format!("{url}?{params}");
        }
        match (use_ledger(&url), want) {
            (Ok(()), Ok(())) => {}
            (Err(e), Err(piece)) => {
                let text = format!("{e}");
                assert!(text.contains(piece), "{url}: {text}");
            }
            (got, want) => panic!("{url}: got {got:?}, want {want:?}"),
        }
    }
}
