//! securesystemslib, the reference DSSE implementation, verifies our
//! bundles and reproduces our subject digests (sha256 via hashlib, blake3
//! via the reference blake3 package).

use std::fs;
use std::path::Path;

use gate_evidence::bundle;
use gate_evidence::keys::SigningKey;

use crate::common::{self, run};

fn python() -> String {
    std::env::var("GATE_TEST_PYTHON").unwrap_or_else(|_| {
        panic!(
            "GATE_TEST_PYTHON is not set: run `scripts/peer-venv.sh DIR` from the repository root \
             and export GATE_TEST_PYTHON=DIR/bin/python (a venv with securesystemslib[crypto] and blake3)"
        )
    })
}

fn peer_verify(envelope: &Path, public: &Path, workspace: &Path) -> std::process::Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/evidence/peer_verify.py");
    run(
        &python(),
        &[
            script.to_str().unwrap(),
            envelope.to_str().unwrap(),
            public.to_str().unwrap(),
            workspace.to_str().unwrap(),
        ],
    )
}

#[test]
fn securesystemslib_verifies_our_bundle_and_digests() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let names = common::workspace(&ws);
    let key = SigningKey::generate().unwrap();
    let paths = key.write_pair(&dir.path().join("keys")).unwrap();
    let envelope = bundle::seal(&common::statement(&ws, &names, 7), &key);
    let stored =
        bundle::write(&dir.path().join("bundles"), dir.path(), "run-7", &envelope).unwrap();

    let out = peer_verify(&stored.path, &paths.public, &ws);
    assert!(
        out.status.success(),
        "securesystemslib rejected our bundle: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["keyid"],
        key.keyid().as_str(),
        "securesystemslib computes the same key id"
    );
    assert_eq!(
        report["accepted"],
        serde_json::json!([key.keyid().as_str()])
    );
    assert_eq!(report["payload_type"], "application/vnd.in-toto+json");
    assert_eq!(report["statement_type"], "https://in-toto.io/Statement/v1");
    let subjects = report["subjects"].as_array().unwrap();
    assert_eq!(subjects.len(), names.len());
    for s in subjects {
        assert_eq!(s["sha256"], true, "{s}");
        assert_eq!(s["blake3"], true, "{s}");
    }
}

#[test]
fn securesystemslib_rejects_a_tampered_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let names = common::workspace(&ws);
    let key = SigningKey::generate().unwrap();
    let paths = key.write_pair(&dir.path().join("keys")).unwrap();
    let envelope = bundle::seal(&common::statement(&ws, &names, 8), &key);
    let mut value: serde_json::Value = serde_json::from_slice(&envelope).unwrap();
    value["payloadType"] = "application/json".into();
    let tampered = dir.path().join("tampered.dsse.json");
    fs::write(&tampered, serde_json::to_vec(&value).unwrap()).unwrap();
    let out = peer_verify(&tampered, &paths.public, &ws);
    assert!(
        !out.status.success(),
        "securesystemslib accepted a changed payloadType"
    );
}
