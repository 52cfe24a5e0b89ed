//! The envelope tamper matrix: every change an attacker or an accident can
//! make is rejected with an error that says what is wrong, and what the DSSE
//! spec lets other writers do is accepted.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use gate_evidence::bundle;
use gate_evidence::dsse::{self, DsseError};
use gate_evidence::keys::SigningKey;
use gate_evidence::statement::PAYLOAD_TYPE;
use serde_json::{Value, json};

use crate::common;

fn envelope() -> (Vec<u8>, SigningKey) {
    let dir = tempfile::tempdir().unwrap();
    let names = common::workspace(dir.path());
    let key = common::fixed_key();
    (
        bundle::seal(&common::statement(dir.path(), &names, 3), &key),
        key,
    )
}

fn edit(envelope: &[u8], f: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(envelope).unwrap();
    f(&mut v);
    serde_json::to_vec(&v).unwrap()
}

fn edit_bytes(v: &mut Value, field: &str, f: impl FnOnce(&mut Vec<u8>)) {
    let pointer = if field == "payload" {
        "/payload"
    } else {
        "/signatures/0/sig"
    };
    let slot = v.pointer_mut(pointer).unwrap();
    let mut bytes = STANDARD.decode(slot.as_str().unwrap()).unwrap();
    f(&mut bytes);
    *slot = Value::String(STANDARD.encode(bytes));
}

/// What a case must produce: accepted, or the error's variant and words its message must hold.
enum Want {
    Accepted,
    Rejected(fn(&DsseError) -> bool, &'static str),
}

#[test]
fn envelope_tamper_matrix() {
    let (original, key) = envelope();
    let foreign = SigningKey::from_seed(&[0xee; 32]);
    let ours = key.keyid().to_string();
    let payload = dsse::Envelope::parse(&original).unwrap().payload;

    let cases: Vec<(&str, Vec<u8>, Want)> = vec![
        ("untouched", original.clone(), Want::Accepted),
        (
            "payload bit flip",
            edit(&original, |v| edit_bytes(v, "payload", |b| b[40] ^= 0x04)),
            Want::Rejected(
                |e| matches!(e, DsseError::BadSignature { .. }),
                "does not verify",
            ),
        ),
        (
            "signature bit flip",
            edit(&original, |v| edit_bytes(v, "sig", |b| b[5] ^= 0x80)),
            Want::Rejected(
                |e| matches!(e, DsseError::BadSignature { .. }),
                "does not verify",
            ),
        ),
        (
            "signature truncated",
            edit(&original, |v| edit_bytes(v, "sig", |b| b.truncate(63))),
            Want::Rejected(
                |e| matches!(e, DsseError::SignatureLength { len: 63, .. }),
                "63 bytes",
            ),
        ),
        (
            "payloadType changed",
            edit(&original, |v| v["payloadType"] = json!("application/json")),
            Want::Rejected(
                |e| matches!(e, DsseError::PayloadType { .. }),
                "payloadType is \"application/json\"",
            ),
        ),
        (
            "signatures emptied",
            edit(&original, |v| v["signatures"] = json!([])),
            Want::Rejected(|e| matches!(e, DsseError::NoSignatures), "no signatures"),
        ),
        (
            "signatures removed",
            edit(&original, |v| {
                v.as_object_mut().unwrap().remove("signatures");
            }),
            Want::Rejected(
                |e| matches!(e, DsseError::MissingField("signatures")),
                "no `signatures` field",
            ),
        ),
        (
            "payload removed",
            edit(&original, |v| {
                v.as_object_mut().unwrap().remove("payload");
            }),
            Want::Rejected(
                |e| matches!(e, DsseError::MissingField("payload")),
                "no `payload` field",
            ),
        ),
        (
            "foreign key claiming our key id",
            {
                let forged = dsse::sign(PAYLOAD_TYPE, &payload, &foreign);
                let ours = ours.clone();
                edit(&forged, move |v| v["signatures"][0]["keyid"] = json!(ours))
            },
            Want::Rejected(
                |e| matches!(e, DsseError::BadSignature { .. }),
                "another key signed it under this key id",
            ),
        ),
        (
            "foreign key under its own key id",
            dsse::sign(PAYLOAD_TYPE, &payload, &foreign),
            Want::Rejected(
                |e| matches!(e, DsseError::UntrustedSigner { .. }),
                "no signature is by a trusted key",
            ),
        ),
        (
            "payload re-serialised with the same meaning",
            edit(&original, |v| {
                let statement: Value = serde_json::from_slice(&payload).unwrap();
                v["payload"] =
                    json!(STANDARD.encode(serde_json::to_vec_pretty(&statement).unwrap()));
            }),
            Want::Rejected(|e| matches!(e, DsseError::BadSignature { .. }), "payload"),
        ),
        (
            "not JSON",
            original[..original.len() / 2].to_vec(),
            Want::Rejected(|e| matches!(e, DsseError::Json(_)), "not valid JSON"),
        ),
        (
            "payload not base64",
            edit(&original, |v| v["payload"] = json!("%%%")),
            Want::Rejected(
                |e| matches!(e, DsseError::Base64 { .. }),
                "not valid base64",
            ),
        ),
        (
            "URL-safe unpadded base64",
            edit(&original, |v| {
                let p = STANDARD.decode(v["payload"].as_str().unwrap()).unwrap();
                let s = STANDARD
                    .decode(v["signatures"][0]["sig"].as_str().unwrap())
                    .unwrap();
                v["payload"] = json!(URL_SAFE_NO_PAD.encode(p));
                v["signatures"][0]["sig"] = json!(URL_SAFE_NO_PAD.encode(s));
            }),
            Want::Accepted,
        ),
        (
            "unknown top-level fields",
            edit(&original, |v| {
                v["x-annotation"] = json!({"by": "someone"});
                v["signatures"][0]["extra"] = json!(1);
            }),
            Want::Accepted,
        ),
        (
            "our signature plus a foreign one",
            edit(&original, |v| {
                let sig = v["signatures"][0].clone();
                v["signatures"] =
                    json!([{"keyid": "unknown", "sig": STANDARD.encode([0u8; 64])}, sig]);
            }),
            Want::Accepted,
        ),
    ];

    let trusted = [key.public_key().clone()];
    let mut failures = Vec::new();
    for (name, bytes, want) in &cases {
        let got = dsse::verify(bytes, PAYLOAD_TYPE, &trusted);
        match (want, &got) {
            (Want::Accepted, Ok(v)) => {
                assert_eq!(v.payload, payload, "{name}");
                assert_eq!(&v.keyid, key.keyid(), "{name}");
            }
            (Want::Rejected(is, words), Err(e)) if is(e) && e.to_string().contains(words) => {
                // The same bytes are refused by the statement layer as well.
                assert!(bundle::open(bytes, &trusted).is_err(), "{name}");
            }
            _ => failures.push(format!("{name}: got {got:?}")),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn rewrapped_envelope_keeps_its_statement_but_not_its_digest() {
    let (original, key) = envelope();
    let rewrapped = edit(&original, |v| v["x"] = json!(1));
    let a = bundle::open(&original, &[key.public_key().clone()]).unwrap();
    let b = bundle::open(&rewrapped, &[key.public_key().clone()]).unwrap();
    assert_eq!(a.statement, b.statement);
    assert_ne!(a.sha256, b.sha256, "the digest is of the stored bytes");
}

#[test]
fn edited_workspace_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let names = common::workspace(dir.path());
    let key = common::fixed_key();
    let opened = bundle::open(
        &bundle::seal(&common::statement(dir.path(), &names, 4), &key),
        &[key.public_key().clone()],
    )
    .unwrap();
    assert!(opened.statement.check_workspace(dir.path()).is_empty());
    std::fs::write(
        dir.path().join("src/api/orders.rs"),
        "pub fn create() -> u16 { 200 }\n",
    )
    .unwrap();
    std::fs::remove_file(dir.path().join("empty.txt")).unwrap();
    let problems: Vec<String> = opened
        .statement
        .check_workspace(dir.path())
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert_eq!(problems[0], "empty.txt: file is missing");
    assert!(
        problems[1].starts_with("src/api/orders.rs: sha256 is "),
        "{problems:?}"
    );
}
